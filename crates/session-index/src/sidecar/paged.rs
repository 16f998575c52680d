//! A loaded sidecar's pages: records, id table columns and pool chunks, each read
//! and checked against its check in the (already checked) head when first used,
//! then kept. A page that fails its check, or whose contents name what the file
//! does not hold, was never trusted: the prefix the sidecar covers is rebuilt from
//! the journal at that point ([`Resident`]), and every later query answers from the
//! rebuild; [`Base::fault`] says why.

use std::sync::OnceLock;

use session_journal::vfs::VfsFile;

use super::{HASH_PAGE, ORDER_PAGE, POOL_CHUNK, REC_LEN, REC_PAGE, page_check};
use crate::marks::MarkInfo;
use crate::state::{LabelMaps, NO_POS, Rec};
use crate::store::PLACEHOLDER;

/// What a sidecar covers, re-derived from the journal (resolved parents, marks, the
/// id table's columns), for a base whose page failed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resident {
    pub(crate) labels: LabelMaps,
    pub(crate) recs: Vec<Rec>,
    pub(crate) marks: Vec<MarkInfo>,
    pub(crate) pool: Vec<u8>,
    pub(crate) hashes: Vec<u64>,
    pub(crate) order: Vec<u32>,
}

/// Rebuilds the prefix from the journal: its frames up to the covered length given.
pub(crate) type Rebuild = Box<dyn Fn(u64) -> Result<Resident, String> + Send + Sync>;

/// A decoded page of records and their marks.
#[derive(Debug)]
struct RecPage {
    recs: Box<[Rec]>,
    marks: Box<[MarkInfo]>,
}

/// Every record with its marks and the whole pool, as plain slices: read (or copied
/// from the pages already read) and checked at once for a query that reads the whole
/// session anyway ([`Base::load_whole`]), so that each of its reads is an index.
#[derive(Debug)]
struct Whole {
    recs: Box<[Rec]>,
    marks: Box<[MarkInfo]>,
    pool: Box<[u8]>,
}

/// Where each section starts and the checks of its pages, from the head.
pub(crate) struct Layout {
    /// The journal bytes the sidecar covers.
    pub(crate) covered_len: u64,
    pub(crate) rec_count: u32,
    pub(crate) recs_at: u64,
    pub(crate) rec_checks: Vec<u64>,
    pub(crate) ids_count: u32,
    pub(crate) hashes_at: u64,
    pub(crate) hash_fences: Vec<u64>,
    pub(crate) hash_checks: Vec<u64>,
    pub(crate) order_at: u64,
    pub(crate) order_checks: Vec<u64>,
    pub(crate) pool_at: u64,
    pub(crate) pool_len: u64,
    /// Chunk `k` is pool bytes `chunk_starts[k]..chunk_starts[k + 1]`.
    pub(crate) chunk_starts: Vec<u64>,
    pub(crate) chunk_checks: Vec<u64>,
    pub(crate) types_count: u32,
    pub(crate) roles_count: u32,
    pub(crate) labels_at: u64,
    pub(crate) labels_len: u64,
    pub(crate) labels_check: u64,
}

/// A loaded sidecar's pages, read on demand.
pub(crate) struct Base {
    file: Box<dyn VfsFile>,
    l: Layout,
    rec_pages: Vec<OnceLock<RecPage>>,
    hash_pages: Vec<OnceLock<Box<[u64]>>>,
    order_pages: Vec<OnceLock<Box<[u32]>>>,
    chunks: Vec<OnceLock<Box<[u8]>>>,
    whole: OnceLock<Whole>,
    rebuild: Rebuild,
    fallback: OnceLock<Resident>,
    fault: OnceLock<String>,
    /// The fault, then why the rebuild it started failed too (set once, after it).
    unrebuilt: OnceLock<String>,
}

impl std::fmt::Debug for Base {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Base")
            .field("rec_count", &self.l.rec_count)
            .field("ids_count", &self.l.ids_count)
            .field("pool_len", &self.l.pool_len)
            .field("fault", &self.fault.get())
            .finish_non_exhaustive()
    }
}

/// The chunk holding pool byte `at`, given the chunks' starts and the pool's end
/// (ascending: the decoder builds them from non-zero lengths). Every chunk but the
/// last the encoder writes holds at least [`POOL_CHUNK`] bytes, so the chunk of `at`
/// is at most `at / POOL_CHUNK` and, with short strings, that one or just below it:
/// those are tried first (a query reading every record asks this once per string), a
/// binary search otherwise (long strings, or a crafted sidecar's small chunks).
fn chunk_of(starts: &[u64], at: u64) -> usize {
    let holds = |c: usize| {
        starts.get(c).is_some_and(|s| *s <= at) && starts.get(c + 1).is_some_and(|e| at < *e)
    };
    let last = starts.len().saturating_sub(2);
    let guess = usize::try_from(at / POOL_CHUNK as u64).map_or(last, |g| g.min(last));
    if let Some(c) = (guess.saturating_sub(3)..=guess).rev().find(|c| holds(*c)) {
        return c;
    }
    starts.partition_point(|s| *s <= at).saturating_sub(1)
}

fn cells<T>(n: usize) -> Vec<OnceLock<T>> {
    (0..n).map(|_| OnceLock::new()).collect()
}

impl Base {
    pub(crate) fn new(file: Box<dyn VfsFile>, l: Layout, rebuild: Rebuild) -> Base {
        Base {
            file,
            rec_pages: cells(l.rec_checks.len()),
            hash_pages: cells(l.hash_checks.len()),
            order_pages: cells(l.order_checks.len()),
            chunks: cells(l.chunk_checks.len()),
            whole: OnceLock::new(),
            l,
            rebuild,
            fallback: OnceLock::new(),
            fault: OnceLock::new(),
            unrebuilt: OnceLock::new(),
        }
    }

    pub(crate) fn rec_count(&self) -> u32 {
        self.l.rec_count
    }

    pub(crate) fn ids_count(&self) -> u32 {
        self.l.ids_count
    }

    pub(crate) fn pool_len(&self) -> u64 {
        self.l.pool_len
    }

    /// Why the covered prefix was rebuilt from the journal, if it was.
    pub(crate) fn fault(&self) -> Option<&str> {
        self.unrebuilt
            .get()
            .or(self.fault.get())
            .map(String::as_str)
    }

    /// Reads and checks every page not read yet (what a verification does); why one
    /// failed, if one did (the prefix is then rebuilt, as on any failing read).
    pub(crate) fn check_all(&self) -> Option<&str> {
        for p in 0..self.rec_pages.len() {
            self.rec((p * REC_PAGE) as u32);
        }
        for p in 0..self.hash_pages.len() {
            self.hash((p * HASH_PAGE) as u32);
        }
        for p in 0..self.order_pages.len() {
            self.order((p * ORDER_PAGE) as u32);
        }
        for c in 0..self.chunks.len() {
            let (from, to) = (self.l.chunk_starts[c], self.l.chunk_starts[c + 1]);
            self.pool(from, u32::try_from(to - from).unwrap_or(u32::MAX));
        }
        if self.fallback.get().is_none() {
            self.label_maps();
        }
        self.fault()
    }

    /// Reads and checks every record and pool page not read yet and keeps records,
    /// marks and pool as plain slices (once), for a query that reads the whole
    /// session: its record and pool reads are then indexes, not page lookups. A page
    /// that fails rebuilds the prefix, as on any failing read.
    pub(crate) fn load_whole(&self) {
        if self.whole.get().is_some() || self.fallback.get().is_some() {
            return;
        }
        match self.read_whole() {
            Ok(w) => {
                let _ = self.whole.set(w);
            }
            Err(why) => {
                self.note(&why);
                self.resident();
            }
        }
    }

    fn read_whole(&self) -> Result<Whole, String> {
        let n = self.l.rec_count as usize;
        let mut recs = Vec::with_capacity(n);
        let mut marks = Vec::with_capacity(n);
        for (p, cell) in self.rec_pages.iter().enumerate() {
            let loaded;
            let page = match cell.get() {
                Some(page) => page,
                None => {
                    loaded = self.load_rec_page(p)?;
                    &loaded
                }
            };
            recs.extend_from_slice(&page.recs);
            marks.extend_from_slice(&page.marks);
        }
        let mut pool = Vec::with_capacity(usize::try_from(self.l.pool_len).unwrap_or(0));
        for (c, cell) in self.chunks.iter().enumerate() {
            match cell.get() {
                Some(chunk) => pool.extend_from_slice(chunk),
                None => pool.extend_from_slice(&self.load_chunk(c)?),
            }
        }
        Ok(Whole {
            recs: recs.into(),
            marks: marks.into(),
            pool: pool.into(),
        })
    }

    /// The rebuild of the covered prefix, made on first use (a page failed).
    fn resident(&self) -> &Resident {
        self.fallback.get_or_init(|| {
            let fit = |r: &Resident| {
                r.recs.len() == self.l.rec_count as usize
                    && r.marks.len() == r.recs.len()
                    && r.pool.len() as u64 == self.l.pool_len
            };
            match (self.rebuild)(self.l.covered_len) {
                Ok(r) if fit(&r) => r,
                Ok(_) => self.placeholder("the journal no longer derives what it covered"),
                Err(e) => self.placeholder(&e),
            }
        })
    }

    /// What answers when not even the journal could be read: no entries.
    fn placeholder(&self, why: &str) -> Resident {
        // The page's fault was noted first; say both.
        let failed = format!("rebuilding the index failed: {why}");
        let _ = self.unrebuilt.set(match self.fault.get() {
            Some(fault) => format!("{fault}; {failed}"),
            None => failed,
        });
        let n = self.l.rec_count as usize;
        Resident {
            recs: vec![PLACEHOLDER; n],
            marks: vec![MarkInfo::NONE; n],
            pool: vec![0; self.l.pool_len as usize],
            hashes: Vec::new(),
            order: Vec::new(),
            labels: LabelMaps::default(),
        }
    }

    /// The labels section, read and checked now (once: the caller keeps it).
    pub(crate) fn label_maps(&self) -> LabelMaps {
        if let Some(r) = self.fallback.get() {
            return r.labels.clone();
        }
        match self.load_labels() {
            Ok(m) => m,
            Err(why) => {
                self.note(&why);
                self.resident().labels.clone()
            }
        }
    }

    fn load_labels(&self) -> Result<LabelMaps, String> {
        let at = self.l.labels_at;
        let len = usize::try_from(self.l.labels_len).map_err(|e| e.to_string())?;
        let b = self.read_page(at, len, self.l.labels_check, "labels")?;
        let wire: super::wire::LabelsWire = serde_json::from_slice(&b)
            .map_err(|e| format!("the labels section at offset {at}: {e}"))?;
        if let Some(p) = wire.positions().find(|p| *p >= self.l.rec_count) {
            return Err(format!(
                "the labels section names record {p}, the sidecar has {}",
                self.l.rec_count
            ));
        }
        Ok(wire.into_maps())
    }

    fn note(&self, why: &str) {
        let _ = self.fault.set(why.to_owned());
    }

    /// A page of `len` bytes at `at`, checked against `check`.
    fn read_page(&self, at: u64, len: usize, check: u64, what: &str) -> Result<Vec<u8>, String> {
        let mut b = vec![0u8; len];
        self.file
            .read_exact_at(at, &mut b)
            .map_err(|e| format!("reading the {what} page at offset {at}: {e}"))?;
        if page_check(&b, at) != check {
            return Err(format!("the {what} page at offset {at} fails its check"));
        }
        Ok(b)
    }

    /// The page in `cell`, loaded by `load` on first use; `None` (and the fault
    /// noted) when it fails.
    fn page<'a, T>(
        &self,
        cell: &'a OnceLock<T>,
        load: impl FnOnce() -> Result<T, String>,
    ) -> Option<&'a T> {
        if let Some(v) = cell.get() {
            return Some(v);
        }
        match load() {
            Ok(v) => Some(cell.get_or_init(|| v)),
            Err(why) => {
                self.note(&why);
                None
            }
        }
    }

    /// The last record, its page read and checked now (an open checks it against
    /// the header).
    pub(crate) fn last_rec(&self) -> Result<Option<Rec>, String> {
        let Some(i) = self.l.rec_count.checked_sub(1) else {
            return Ok(None);
        };
        let p = i as usize / REC_PAGE;
        let loaded = self.load_rec_page(p)?;
        let page = self.rec_pages[p].get_or_init(|| loaded);
        Ok(page.recs.get(i as usize % REC_PAGE).copied())
    }

    /// Every record as one slice, when they are held so: rebuilt after a fault, or
    /// read whole ([`Base::load_whole`]).
    #[inline]
    pub(crate) fn recs_slice(&self) -> Option<&[Rec]> {
        match self.fallback.get() {
            Some(r) => Some(&r.recs),
            None => self.whole.get().map(|w| &*w.recs),
        }
    }

    /// The whole covered pool as one slice, when held so (as [`Base::recs_slice`]).
    #[inline]
    pub(crate) fn pool_slice(&self) -> Option<&[u8]> {
        match self.fallback.get() {
            Some(r) => Some(&r.pool),
            None => self.whole.get().map(|w| &*w.pool),
        }
    }

    /// Record `i` and its marks.
    pub(crate) fn rec(&self, i: u32) -> Option<(Rec, MarkInfo)> {
        if i >= self.l.rec_count {
            return None;
        }
        if let Some(r) = self.fallback.get() {
            return Some((*r.recs.get(i as usize)?, *r.marks.get(i as usize)?));
        }
        if let Some(w) = self.whole.get() {
            return Some((*w.recs.get(i as usize)?, *w.marks.get(i as usize)?));
        }
        let p = i as usize / REC_PAGE;
        let k = i as usize % REC_PAGE;
        match self.page(self.rec_pages.get(p)?, || self.load_rec_page(p)) {
            Some(page) => Some((*page.recs.get(k)?, *page.marks.get(k)?)),
            None => {
                let r = self.resident();
                Some((*r.recs.get(i as usize)?, *r.marks.get(i as usize)?))
            }
        }
    }

    fn load_rec_page(&self, p: usize) -> Result<RecPage, String> {
        let first = p * REC_PAGE;
        let n = (self.l.rec_count as usize - first).min(REC_PAGE);
        let at = self.l.recs_at + (first * REC_LEN) as u64;
        let b = self.read_page(at, n * REC_LEN, self.l.rec_checks[p], "record")?;
        let mut recs = Vec::with_capacity(n);
        let mut marks = Vec::with_capacity(n);
        for (k, chunk) in b.chunks_exact(REC_LEN).enumerate() {
            let (r, m) = super::decode::parse_rec(chunk);
            self.check_rec(first + k, &r, &m)?;
            recs.push(r);
            marks.push(m);
        }
        Ok(RecPage {
            recs: recs.into(),
            marks: marks.into(),
        })
    }

    /// Checks a record's spans, codes, parent and marks against the sections they
    /// name: a page whose check matches can still have been crafted.
    fn check_rec(&self, i: usize, r: &Rec, m: &MarkInfo) -> Result<(), String> {
        let bad = |what: &str| Err(format!("record {i} of the sidecar {what}"));
        for s in [r.id, r.parent] {
            if s.is_none() {
                continue;
            }
            let end = s.start.saturating_add(u64::from(s.len));
            if end > self.l.pool_len {
                return bad("points outside the pool");
            }
            if s.len > 0 && self.chunk_of(s.start) != self.chunk_of(end - 1) {
                return bad("names a string across two pool chunks");
            }
        }
        let known = |code: u16, count: u32| code == u16::MAX || u32::from(code) < count.max(1);
        if !known(r.type_code, self.l.types_count) || !known(r.role_code, self.l.roles_count) {
            return bad("has an unknown type or role code");
        }
        let n = self.l.rec_count;
        let pos = |p: u32| p == NO_POS || p < n;
        if !pos(r.parent_pos)
            || !pos(m.thinking)
            || !pos(m.service_tier)
            || !pos(m.model)
            || !pos(m.top)
        {
            return bad(&format!("names a record past its {n}"));
        }
        Ok(())
    }

    /// The chunk holding pool byte `at`.
    fn chunk_of(&self, at: u64) -> usize {
        chunk_of(&self.l.chunk_starts, at)
    }

    /// The pool bytes `start..start + len` (within the covered pool).
    pub(crate) fn pool(&self, start: u64, len: u32) -> Option<&[u8]> {
        let end = start.checked_add(u64::from(len))?;
        if end > self.l.pool_len {
            return None;
        }
        if let Some(r) = self.fallback.get() {
            return r.pool.get(start as usize..end as usize);
        }
        if let Some(w) = self.whole.get() {
            return w.pool.get(start as usize..end as usize);
        }
        let c = self.chunk_of(start);
        let from = *self.l.chunk_starts.get(c)?;
        let chunk = match self.page(self.chunks.get(c)?, || self.load_chunk(c)) {
            Some(chunk) => chunk,
            None => {
                return self.resident().pool.get(start as usize..end as usize);
            }
        };
        chunk.get((start - from) as usize..(end - from) as usize)
    }

    fn load_chunk(&self, c: usize) -> Result<Box<[u8]>, String> {
        let (from, to) = (self.l.chunk_starts[c], self.l.chunk_starts[c + 1]);
        let b = self.read_page(
            self.l.pool_at + from,
            (to - from) as usize,
            self.l.chunk_checks[c],
            "pool",
        )?;
        Ok(b.into())
    }

    /// The whole covered pool, chunk by chunk (for a save).
    pub(crate) fn pool_pieces(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let chunks = self.l.chunk_checks.len();
        (0..chunks).filter_map(move |c| {
            let (from, to) = (self.l.chunk_starts[c], self.l.chunk_starts[c + 1]);
            self.pool(from, u32::try_from(to - from).ok()?)
        })
    }

    /// The id hash at table position `k`.
    pub(crate) fn hash(&self, k: u32) -> Option<u64> {
        if k >= self.l.ids_count {
            return None;
        }
        if let Some(r) = self.fallback.get() {
            return r.hashes.get(k as usize).copied();
        }
        let p = k as usize / HASH_PAGE;
        match self.page(self.hash_pages.get(p)?, || self.load_hash_page(p)) {
            Some(page) => page.get(k as usize % HASH_PAGE).copied(),
            None => self.resident().hashes.get(k as usize).copied(),
        }
    }

    fn load_hash_page(&self, p: usize) -> Result<Box<[u64]>, String> {
        let first = p * HASH_PAGE;
        let n = (self.l.ids_count as usize - first).min(HASH_PAGE);
        let at = self.l.hashes_at + (first * 8) as u64;
        let b = self.read_page(at, n * 8, self.l.hash_checks[p], "id hash")?;
        let page: Box<[u64]> = b
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        if page.first() != self.l.hash_fences.get(p) {
            return Err(format!(
                "the id hash page at offset {at} does not start with its head's hash"
            ));
        }
        Ok(page)
    }

    /// The id hashes at table positions `lo..hi`, which lie in one page (as
    /// [`hash_range`](Self::hash_range) gives them): a slice of that page, read and
    /// checked now if it was not. `None` when they do not lie in one page or the page
    /// cannot be read (position by position, [`hash`](Self::hash) then answers).
    pub(crate) fn hash_slice(&self, lo: u32, hi: u32) -> Option<&[u64]> {
        let (lo, hi) = (lo as usize, hi.min(self.l.ids_count) as usize);
        if lo >= hi {
            return Some(&[]);
        }
        if let Some(r) = self.fallback.get() {
            return r.hashes.get(lo..hi);
        }
        let p = lo / HASH_PAGE;
        if (hi - 1) / HASH_PAGE != p {
            return None;
        }
        let page = self.page(self.hash_pages.get(p)?, || self.load_hash_page(p))?;
        page.get(lo % HASH_PAGE..lo % HASH_PAGE + (hi - lo))
    }

    /// The table positions among which the first hash not below `h` is (or its
    /// end): within one page, by the pages' first hashes.
    pub(crate) fn hash_range(&self, h: u64) -> (u32, u32) {
        if self.fallback.get().is_some() {
            return (0, self.l.ids_count);
        }
        // Pages before `p` start below `h`: the first position not below it is in
        // page `p - 1` or starts page `p`.
        let p = self.l.hash_fences.partition_point(|x| *x < h);
        let lo = p.saturating_sub(1) * HASH_PAGE;
        let hi = (p * HASH_PAGE).min(self.l.ids_count as usize);
        (lo as u32, hi as u32)
    }

    /// The record at table position `k`.
    pub(crate) fn order(&self, k: u32) -> Option<u32> {
        if k >= self.l.ids_count {
            return None;
        }
        if let Some(r) = self.fallback.get() {
            return r.order.get(k as usize).copied();
        }
        let p = k as usize / ORDER_PAGE;
        match self.page(self.order_pages.get(p)?, || self.load_order_page(p)) {
            Some(page) => page.get(k as usize % ORDER_PAGE).copied(),
            None => self.resident().order.get(k as usize).copied(),
        }
    }

    fn load_order_page(&self, p: usize) -> Result<Box<[u32]>, String> {
        let first = p * ORDER_PAGE;
        let n = (self.l.ids_count as usize - first).min(ORDER_PAGE);
        let at = self.l.order_at + (first * 4) as u64;
        let b = self.read_page(at, n * 4, self.l.order_checks[p], "id record")?;
        let page: Box<[u32]> = b
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        if let Some(bad) = page.iter().find(|i| **i >= self.l.rec_count) {
            return Err(format!(
                "the id table page at offset {at} names record {bad}, the sidecar has {}",
                self.l.rec_count
            ));
        }
        Ok(page)
    }
}

#[cfg(test)]
mod tests {
    use super::{POOL_CHUNK, chunk_of};

    /// The guess-first lookup answers what a binary search of the starts answers,
    /// for chunks as the encoder cuts them (at least `POOL_CHUNK` bytes, some much
    /// longer: a long string) and as a crafted sidecar may have them (tiny).
    #[test]
    fn chunk_of_agrees_with_a_binary_search() {
        let c = POOL_CHUNK as u64;
        let layouts: [&[u64]; 4] = [
            &[c + 3, c + 40, c, 7 * c + 1, c + 1, 5],
            &[1, 1, 2, 3, 5, 8, 13],
            &[c * 100],
            &[c, c, c, c, c, c, c, c, 1],
        ];
        for lens in layouts {
            let mut starts = vec![0u64];
            for l in lens {
                starts.push(starts.last().copied().unwrap_or(0) + l);
            }
            let end = *starts.last().unwrap_or(&0);
            for at in (0..end).step_by(1 + (end as usize / 5000)).chain([end - 1]) {
                let expected = starts.partition_point(|s| *s <= at).saturating_sub(1);
                assert_eq!(chunk_of(&starts, at), expected, "byte {at} of {lens:?}");
            }
        }
    }
}
