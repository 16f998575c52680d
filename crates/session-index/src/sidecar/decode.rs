//! Opening a sidecar: its head is read and checked as one (nothing in it is trusted
//! before its check matches, and every check of the contents runs after); the pages
//! are left to [`Base`], which reads each on first use.

use std::sync::Arc;

use session_journal::JournalId;
use session_journal::vfs::VfsFile;

use super::paged::{Layout, Rebuild};
use super::wire::AggregatesWire;
use super::{
    Base, Checkpoint, DecodeFault, Field, HASH_PAGE, HEADER_LEN, ID_LEN, MAGIC, NONE, ORDER_PAGE,
    REC_LEN, REC_PAGE, ReadFault, TRAILER_LEN, VERSION, head, rec,
};
use crate::ids::{Cols, IdTable, Ids};
use crate::marks::MarkInfo;
use crate::state::{Aggregates, LazyMaps, Rec, Span, State};
use crate::store::{Pool, Recs};

/// Room for what the appends after a load add before a save rewrites the sidecar
/// (the manager saves every 1,024 appends or an eighth of the session, whichever is
/// more), capped: the loaded prefix stays in the sidecar's pages, so only the
/// records since are held in a vector.
fn headroom(n: usize) -> usize {
    (n / 8).clamp(1024, 1 << 16)
}

/// A field's bytes; `b` holds the whole header or record (the callers read fixed-size
/// buffers), so the conversions cannot fail.
fn get<const N: usize>(b: &[u8], f: Field) -> [u8; N] {
    debug_assert_eq!(f.len, N);
    b[f.range()]
        .try_into()
        .expect("a field of a fixed-size buffer")
}
fn get_u16(b: &[u8], f: Field) -> u16 {
    u16::from_le_bytes(get(b, f))
}
fn get_u32(b: &[u8], f: Field) -> u32 {
    u32::from_le_bytes(get(b, f))
}
fn get_u64(b: &[u8], f: Field) -> u64 {
    u64::from_le_bytes(get(b, f))
}

/// The fixed header's fields after magic and version.
struct Header {
    checkpoint: Checkpoint,
    head_len: u64,
    rec_count: u64,
    ids_count: u64,
    pool_len: u64,
    pool_chunks: u32,
    ids_undefined: u32,
    types_count: u32,
    roles_count: u32,
    orphan_count: u32,
    agg_len: u32,
    labels_len: u64,
}

impl Header {
    fn parse(h: &[u8; HEADER_LEN]) -> Header {
        Header {
            checkpoint: Checkpoint {
                journal_id: JournalId(get(h, head::JOURNAL_ID)),
                covered_len: get_u64(h, head::COVERED_LEN),
                covered_seq: get_u64(h, head::COVERED_SEQ),
                last_offset: get_u64(h, head::LAST_OFFSET),
                last_body_check: get(h, head::LAST_BODY_CHECK),
                data_start: get_u64(h, head::DATA_START),
            },
            head_len: get_u64(h, head::HEAD_LEN),
            rec_count: get_u64(h, head::REC_COUNT),
            ids_count: get_u64(h, head::IDS_COUNT),
            pool_len: get_u64(h, head::POOL_LEN),
            pool_chunks: get_u32(h, head::POOL_CHUNKS),
            ids_undefined: get_u32(h, head::IDS_UNDEFINED),
            types_count: get_u32(h, head::TYPES_COUNT),
            roles_count: get_u32(h, head::ROLES_COUNT),
            orphan_count: get_u32(h, head::ORPHAN_COUNT),
            agg_len: get_u32(h, head::AGG_LEN),
            labels_len: get_u64(h, head::LABELS_LEN),
        }
    }
}

/// One record's fields and marks at their offsets; `b` is [`REC_LEN`] bytes.
pub(super) fn parse_rec(b: &[u8]) -> (Rec, MarkInfo) {
    let r = Rec {
        offset: get_u64(b, rec::OFFSET),
        seq: get_u64(b, rec::SEQ),
        body_check: get(b, rec::BODY_CHECK),
        ts: f64::from_le_bytes(get(b, rec::TIMESTAMP_MS)),
        id: Span {
            start: get_u64(b, rec::ID_START),
            len: get_u32(b, rec::ID_LEN),
        },
        parent: Span {
            start: get_u64(b, rec::PARENT_START),
            len: get_u32(b, rec::PARENT_LEN),
        },
        payload_len: get_u32(b, rec::PAYLOAD_LEN),
        type_code: get_u16(b, rec::TYPE_CODE),
        role_code: get_u16(b, rec::ROLE_CODE),
        kind: get::<1>(b, rec::KIND)[0],
        flags: get::<1>(b, rec::FLAGS)[0],
        parent_pos: get_u32(b, rec::PARENT),
    };
    let m = MarkInfo {
        thinking: get_u32(b, rec::MARK_THINKING),
        service_tier: get_u32(b, rec::MARK_SERVICE_TIER),
        model: get_u32(b, rec::MARK_MODEL),
        top: get_u32(b, rec::MARK_TOP),
    };
    (r, m)
}

/// A bounded reader of the head's sections.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeFault> {
        let end = self
            .at
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or_else(|| {
                DecodeFault::Corrupt(format!(
                    "needs {n} bytes at offset {} of the head, it has {}",
                    self.at + HEADER_LEN,
                    self.b.len() + HEADER_LEN
                ))
            })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, DecodeFault> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, DecodeFault> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }
    /// `n` items read by `f` (`n` is bounded by the head's length: each item takes
    /// at least a byte).
    fn items<T>(
        &mut self,
        n: usize,
        mut f: impl FnMut(&mut Self) -> Result<T, DecodeFault>,
    ) -> Result<Vec<T>, DecodeFault> {
        if n > self.b.len() - self.at {
            return Err(DecodeFault::Corrupt(format!(
                "{n} items do not fit in the head"
            )));
        }
        (0..n).map(|_| f(self)).collect()
    }
}

/// Opens the sidecar `file` of `len` bytes; `expected` is the journal it must belong
/// to, `rebuild` re-derives its prefix from the journal should a page fail later.
/// Reads the head (header, page checks, string tables, orphans, aggregates) and the
/// last record's page, nothing else.
pub(crate) fn open(
    file: Box<dyn VfsFile>,
    len: u64,
    expected: JournalId,
    rebuild: Rebuild,
) -> Result<(Checkpoint, State), ReadFault> {
    let corrupt = |s: String| ReadFault::Decode(DecodeFault::Corrupt(s));
    let version_end = head::VERSION.at + head::VERSION.len;
    if len < version_end as u64 {
        return Err(corrupt(format!(
            "file is {len} bytes, shorter than a header"
        )));
    }
    let mut h = [0u8; HEADER_LEN];
    let head_len = HEADER_LEN.min(len as usize);
    file.read_exact_at(0, &mut h[..head_len])
        .map_err(ReadFault::Io)?;
    if get::<8>(&h, head::MAGIC) != MAGIC {
        return Err(corrupt("bad magic".to_owned()));
    }
    let version = get_u32(&h, head::VERSION);
    if version != VERSION {
        return Err(ReadFault::Decode(DecodeFault::Version(version)));
    }
    if len < (HEADER_LEN + TRAILER_LEN) as u64 {
        return Err(corrupt(format!(
            "file is {len} bytes, shorter than header and head check"
        )));
    }
    let hd = Header::parse(&h);
    // The head and the sections' lengths must add up to the file's: this bounds
    // every allocation below by the file's size.
    let fits = hd.head_len >= (HEADER_LEN + TRAILER_LEN) as u64
        && hd.rec_count <= u64::from(u32::MAX - 1)
        && hd.ids_count <= hd.rec_count
        && [
            hd.head_len,
            hd.rec_count.saturating_mul(REC_LEN as u64),
            hd.ids_count.saturating_mul(ID_LEN as u64),
            hd.pool_len,
            hd.labels_len,
        ]
        .into_iter()
        .try_fold(0u64, u64::checked_add)
            == Some(len);
    if !fits {
        return Err(corrupt(format!(
            "a {}-byte head, {} records, {} ids, a {}-byte pool and {} bytes of labels do not make {len} bytes",
            hd.head_len, hd.rec_count, hd.ids_count, hd.pool_len, hd.labels_len
        )));
    }
    let mut rest = vec![0u8; hd.head_len as usize - HEADER_LEN];
    file.read_exact_at(HEADER_LEN as u64, &mut rest)
        .map_err(ReadFault::Io)?;
    let body_len = rest.len() - TRAILER_LEN;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&h);
    hasher.update(&rest[..body_len]);
    if hasher.digest128().to_le_bytes()[..] != rest[body_len..] {
        return Err(corrupt("head checksum mismatch".to_owned()));
    }
    rest.truncate(body_len);
    let cp = hd.checkpoint;
    if cp.journal_id != expected {
        return Err(ReadFault::Decode(DecodeFault::Foreign(cp.journal_id)));
    }
    let (l, tables, orphans, agg) = parse_head(&hd, &rest)?;
    let n = l.rec_count;
    let undefined = (hd.ids_undefined != NONE).then_some(hd.ids_undefined);
    if let Some(p) = undefined.filter(|p| *p >= n) {
        return Err(corrupt(format!(
            "the id table names record {p}, the sidecar has {n}"
        )));
    }
    if let Some(p) = agg.positions().find(|p| *p >= n) {
        return Err(corrupt(format!(
            "aggregates name record {p}, the sidecar has {n}"
        )));
    }
    let base = Arc::new(Base::new(file, l, rebuild));
    // The last record is the last frame, or an earlier one when frames of other
    // kinds (counted, not recorded) or the journal's seal (which repeats the last
    // entry's seq) follow it.
    if let Some(last) = base.last_rec().map_err(corrupt)?
        && (last.seq > cp.covered_seq
            || last.offset > cp.last_offset
            || (last.offset == cp.last_offset && last.seq != cp.covered_seq))
    {
        return Err(corrupt("checkpoint disagrees with the last record".into()));
    }
    let [types, roles] = tables;
    let table = IdTable {
        cols: Cols::Paged(base.clone()),
        covers: n,
        undefined,
    };
    let spare = headroom(n as usize);
    let pool_spare = spare
        .saturating_mul((hd.pool_len / u64::from(n.max(1))) as usize)
        .min(64 << 10);
    let mut state = State {
        recs: Recs::paged(base.clone(), spare),
        pool: Pool::paged(base.clone(), pool_spare),
        types,
        roles,
        ids: Ids::with_table(table),
        agg: Aggregates {
            maps: LazyMaps::paged(base.clone()),
            ..agg.into_aggregates()
        },
        covered_len: cp.covered_len,
        covered_seq: cp.covered_seq,
        last_frame: (cp.covered_seq > 0).then_some((cp.last_offset, cp.last_body_check)),
        parents_exact: true,
        unresolved_parents: orphans.into_iter().collect(),
        base: Some(base),
        ..State::default()
    };
    state.rebuild_lookups();
    Ok((cp, state))
}

/// The head's sections after the header: where the pages are and their checks, the
/// type and role names, the orphans and the aggregates.
#[allow(clippy::type_complexity)]
fn parse_head(
    h: &Header,
    rest: &[u8],
) -> Result<
    (
        Layout,
        [Vec<Box<str>>; 2],
        Vec<(bool, Box<[u8]>)>,
        AggregatesWire,
    ),
    DecodeFault,
> {
    let corrupt = |s: String| DecodeFault::Corrupt(s);
    let mut c = Cursor { b: rest, at: 0 };
    let n = h.rec_count as usize;
    let ids = h.ids_count as usize;
    let rec_checks = c.items(n.div_ceil(REC_PAGE), Cursor::u64)?;
    let hash_pairs = c.items(ids.div_ceil(HASH_PAGE), |c| Ok((c.u64()?, c.u64()?)))?;
    let order_checks = c.items(ids.div_ceil(ORDER_PAGE), Cursor::u64)?;
    let chunks = c.items(h.pool_chunks as usize, |c| Ok((c.u32()?, c.u64()?)))?;
    let labels_check = c.u64()?;
    let mut chunk_starts = Vec::with_capacity(chunks.len() + 1);
    let mut at = 0u64;
    chunk_starts.push(0);
    for (len, _) in &chunks {
        if *len == 0 {
            return Err(corrupt("an empty pool chunk".into()));
        }
        at += u64::from(*len);
        chunk_starts.push(at);
    }
    if at != h.pool_len {
        return Err(corrupt(format!(
            "pool chunks of {at} bytes, the pool has {}",
            h.pool_len
        )));
    }
    let mut tables: [Vec<Box<str>>; 2] = [Vec::new(), Vec::new()];
    for (t, count) in tables.iter_mut().zip([h.types_count, h.roles_count]) {
        *t = c.items(count as usize, |c| {
            let len = c.u32()? as usize;
            let s = std::str::from_utf8(c.take(len)?)
                .map_err(|_| corrupt("a type or role name is not UTF-8".into()))?;
            Ok(s.into())
        })?;
        if t.is_empty() {
            t.push("".into());
        }
    }
    let orphans = c.items(h.orphan_count as usize, |c| {
        let json = c.take(1)?[0] != 0;
        let len = c.u32()? as usize;
        Ok((json, Box::from(c.take(len)?)))
    })?;
    let agg_bytes = c.take(h.agg_len as usize)?;
    if c.at != rest.len() {
        return Err(corrupt(format!(
            "{} trailing bytes before the head check",
            rest.len() - c.at
        )));
    }
    let agg: AggregatesWire =
        serde_json::from_slice(agg_bytes).map_err(|e| corrupt(format!("aggregates: {e}")))?;
    let recs_at = h.head_len;
    let hashes_at = recs_at + h.rec_count * REC_LEN as u64;
    let order_at = hashes_at + h.ids_count * 8;
    let pool_at = order_at + h.ids_count * 4;
    let (hash_fences, hash_checks) = hash_pairs.into_iter().unzip();
    let l = Layout {
        covered_len: h.checkpoint.covered_len,
        rec_count: h.rec_count as u32,
        recs_at,
        rec_checks,
        ids_count: h.ids_count as u32,
        hashes_at,
        hash_fences,
        hash_checks,
        order_at,
        order_checks,
        pool_at,
        pool_len: h.pool_len,
        chunk_starts,
        chunk_checks: chunks.into_iter().map(|(_, c)| c).collect(),
        types_count: h.types_count,
        roles_count: h.roles_count,
        labels_at: pool_at + h.pool_len,
        labels_len: h.labels_len,
        labels_check,
    };
    Ok((l, tables, orphans, agg))
}
