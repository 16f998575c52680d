//! Entry ids to records: the reference's `byId` map (the last entry with an id wins),
//! in parts whose cost follows what was appended, not the session.
//!
//! - [`IdTable`]: the covered prefix's ids, sorted, as the sidecar stores them
//!   (`docs/format.md` §3): loaded with the sidecar and searched by binary search, so
//!   a resume builds no map.
//! - a map ([`IdMap`]) of the records indexed since the table was saved (all of them
//!   when there is no table: a rebuild, or a state fed without a journal).
//! - a map of every record, built on the first query that reads them all (the tree,
//!   `children`, paths to the root, parents once duplicate ids made them stale),
//!   where one O(n) build is cheaper than n binary searches.
//!
//! [`Ids`] puts them together; the first append after a resume searches the table
//! and maps one id, its own, at any session size.

use std::cmp::Ordering;
use std::sync::OnceLock;

use crate::kinds::ENTRY_KIND;
use crate::sidecar::Base;
use crate::state::{Key, NO_POS, id_key};
use crate::store::{Pool, Recs};

/// The id map: an open-addressing table of record indices whose keys are the ids in
/// the string pool, so loading an index allocates nothing per entry. Each slot keeps,
/// beside its record, 32 bits of its id's hash: a probe compares those and reads a
/// record and its id from the pool only when they match (the one it looks for, but
/// for a 2⁻³² chance), and a lookup of a record's own id ([`IdMap::find_own`]) reads
/// nothing when the slot holds that record. Keys are the reference's ([`Key`]):
/// string and non-string ids are apart, the last entry without an id is the
/// `undefined` key, and object ids are not in the table.
///
/// Hashing is foldhash (hashbrown's default), seeded at random per map. Ids come
/// from files (anyone can write one, choosing every id), so a hash whose collisions
/// can be computed offline would let a crafted session make every probe walk one
/// long run (quadratic time). foldhash mixes secret random values into every step,
/// so no list of ids collides for every seed: a collision set would have to be
/// derived from this map's seed, which exists only after the file was written and
/// is never shown (foldhash does not claim to resist an attacker who watches its
/// hashes or their timings interactively; a file's author does not). At several
/// times SipHash's speed on ids of 8–40 bytes: looking up every entry's id was most
/// of a tree query.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdMap {
    slots: Vec<Slot>,
    len: usize,
    hasher: foldhash::fast::RandomState,
    /// The last entry keyed `undefined`.
    undefined: Option<u32>,
    /// Ids inserted so far (a proxy of the CPU the map cost).
    pub(crate) inserted: u64,
}

/// A slot of an [`IdMap`]: a record (`EMPTY_SLOT`: none) and the high half of its
/// id's hash.
#[derive(Debug, Clone, Copy)]
struct Slot {
    tag: u32,
    rec: u32,
}

const EMPTY_SLOT: u32 = u32::MAX;

const EMPTY: Slot = Slot {
    tag: 0,
    rec: EMPTY_SLOT,
};

impl IdMap {
    fn with_capacity(n: usize) -> Self {
        let size = (n.max(4) * 2).next_power_of_two();
        Self {
            slots: vec![EMPTY; size],
            len: 0,
            hasher: foldhash::fast::RandomState::default(),
            undefined: None,
            inserted: 0,
        }
    }

    /// The home slot and the tag of `id`.
    fn home(&self, id: Key<'_>) -> (usize, u32) {
        use std::hash::BuildHasher;
        let h = self.hasher.hash_one(id);
        ((h as usize) & (self.slots.len() - 1), (h >> 32) as u32)
    }

    /// Every entry record's id, last one winning.
    pub(crate) fn build(recs: &Recs, pool: &Pool) -> Self {
        recs.read_whole();
        let mut m = IdMap::with_capacity(recs.len());
        for i in 0..recs.len() as u32 {
            if recs.at(i).kind == ENTRY_KIND {
                m.insert(recs, pool, i);
            }
        }
        m
    }

    /// The records the map holds (one per key, the last with it), `undefined` aside.
    fn records(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .map(|s| s.rec)
            .filter(|s| *s != EMPTY_SLOT)
    }

    pub(crate) fn find(&self, recs: &Recs, pool: &Pool, id: Key<'_>) -> Option<u32> {
        self.probe(recs, pool, id, NO_POS)
    }

    /// The record that owns record `i`'s id (the last entry with it): `find` of its
    /// key, where a slot holding `i` itself answers without reading its id again.
    pub(crate) fn find_own(&self, recs: &Recs, pool: &Pool, i: u32) -> Option<u32> {
        self.probe(recs, pool, id_key(recs, pool, i)?, i)
    }

    /// The record of `id`, which is record `own`'s id (or `own` is [`NO_POS`]).
    fn probe(&self, recs: &Recs, pool: &Pool, id: Key<'_>, own: u32) -> Option<u32> {
        match id {
            Key::Undefined => return self.undefined,
            // An object is only itself (`NO_POS`: one no record holds).
            Key::Unique(i) => return (i != NO_POS).then_some(i),
            Key::Str(_) | Key::Json(_) => {}
        }
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let (mut at, tag) = self.home(id);
        loop {
            let s = self.slots[at];
            if s.rec == EMPTY_SLOT {
                return None;
            }
            if s.tag == tag && (s.rec == own || id_key(recs, pool, s.rec) == Some(id)) {
                return Some(s.rec);
            }
            at = (at + 1) & mask;
        }
    }

    /// Room for `more` ids without growing (a hint: rehashes now if it must).
    fn reserve(&mut self, recs: &Recs, pool: &Pool, more: usize) {
        let want = self.len.saturating_add(more);
        if want.saturating_mul(2) <= self.slots.len() {
            return;
        }
        self.rehash(recs, pool, want);
    }

    /// Moves every record into a table sized for `want` ids (same hasher).
    fn rehash(&mut self, recs: &Recs, pool: &Pool, want: usize) {
        let old = std::mem::take(&mut self.slots);
        let hasher = std::mem::take(&mut self.hasher);
        let (undefined, inserted) = (self.undefined, self.inserted);
        *self = IdMap::with_capacity(want);
        self.hasher = hasher;
        self.undefined = undefined;
        self.inserted = inserted;
        for s in old.into_iter().filter(|s| s.rec != EMPTY_SLOT) {
            self.place(recs, pool, s.rec);
        }
    }

    /// Maps the id of record `index` to it; `true` if an earlier record had that id.
    pub(crate) fn insert(&mut self, recs: &Recs, pool: &Pool, index: u32) -> bool {
        self.inserted += 1;
        if (self.len + 1) * 2 > self.slots.len() {
            let want = self.slots.len().max(8);
            self.rehash(recs, pool, want);
        }
        self.place(recs, pool, index)
    }

    fn place(&mut self, recs: &Recs, pool: &Pool, index: u32) -> bool {
        let id = match id_key(recs, pool, index) {
            None | Some(Key::Unique(_)) => return false,
            Some(Key::Undefined) => {
                // Not a duplicate id: nothing resolves a parent through `undefined`
                // but the tree, which reads the map afresh.
                self.undefined = Some(index);
                return false;
            }
            Some(id) => id,
        };
        let mask = self.slots.len() - 1;
        let (mut at, tag) = self.home(id);
        loop {
            let s = self.slots[at];
            if s.rec == EMPTY_SLOT {
                self.slots[at] = Slot { tag, rec: index };
                self.len += 1;
                return false;
            }
            if s.tag == tag && (s.rec == index || id_key(recs, pool, s.rec) == Some(id)) {
                // `s.rec == index` when a lazily built map already holds this record.
                self.slots[at].rec = index;
                return s.rec != index;
            }
            at = (at + 1) & mask;
        }
    }
}

/// Where a key sorts in an [`IdTable`]: string ids, then other ids by their canonical
/// JSON text, each by bytes. `None` for keys a table never holds.
fn rank(key: Key<'_>) -> Option<(u8, &[u8])> {
    match key {
        Key::Str(b) => Some((0, b)),
        Key::Json(b) => Some((1, b)),
        Key::Undefined | Key::Unique(_) => None,
    }
}

/// The hash an id is sorted by in an [`IdTable`] (`docs/format.md` §3): XXH3-64 of
/// its bytes, seeded with its class (0: a string, 1: another value's canonical JSON
/// text). Not keyed: equal hashes (crafted or not) only make a run of entries that a
/// binary search by the ids themselves settles, so a lookup stays O(log n).
pub(crate) fn id_hash((class, bytes): (u8, &[u8])) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bytes, u64::from(class))
}

/// The ids of records `0..covers`, sorted: for every string or other scalar id, the
/// last record with it, ordered by (hash, class, bytes); and the last record keyed
/// `undefined`. Lookups search the hashes (8 bytes each, contiguous), and read the
/// records and the pool only to settle the (rare) entries of an equal hash.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdTable {
    /// The two columns.
    pub(crate) cols: Cols,
    /// How many records (from the first) the table covers.
    pub(crate) covers: u32,
    /// The last record of those keyed `undefined`.
    pub(crate) undefined: Option<u32>,
}

/// An [`IdTable`]'s columns: [`id_hash`] of each id, ascending, and the record of
/// each id in the same order; in memory, or in a loaded sidecar's pages.
#[derive(Debug, Clone)]
pub(crate) enum Cols {
    Mem { hashes: Vec<u64>, order: Vec<u32> },
    Paged(std::sync::Arc<Base>),
}

impl Default for Cols {
    fn default() -> Self {
        Cols::Mem {
            hashes: Vec::new(),
            order: Vec::new(),
        }
    }
}

impl Cols {
    pub(crate) fn len(&self) -> u32 {
        match self {
            Cols::Mem { hashes, order } => hashes.len().min(order.len()) as u32,
            Cols::Paged(b) => b.ids_count(),
        }
    }

    pub(crate) fn hash(&self, k: u32) -> Option<u64> {
        match self {
            Cols::Mem { hashes, .. } => hashes.get(k as usize).copied(),
            Cols::Paged(b) => b.hash(k),
        }
    }

    pub(crate) fn order(&self, k: u32) -> Option<u32> {
        match self {
            Cols::Mem { order, .. } => order.get(k as usize).copied(),
            Cols::Paged(b) => b.order(k),
        }
    }

    /// The first position whose hash is not below `h`.
    fn lower_bound(&self, h: u64) -> u32 {
        let (mut lo, mut hi) = match self {
            Cols::Mem { .. } => (0, self.len()),
            // The page the hash is in, by the pages' first hashes (kept in the
            // sidecar's head): one page read.
            Cols::Paged(b) => b.hash_range(h),
        };
        // One slice searched (a page at most): no page lookup per probe.
        let slice = match self {
            Cols::Mem { hashes, .. } => hashes.get(lo as usize..hi as usize),
            Cols::Paged(b) => b.hash_slice(lo, hi),
        };
        if let Some(s) = slice {
            return lo + s.partition_point(|x| *x < h) as u32;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.hash(mid).is_some_and(|x| x < h) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

impl IdTable {
    /// The record of `key` among the covered ones: O(log n).
    fn find(&self, recs: &Recs, pool: &Pool, key: Key<'_>) -> Option<u32> {
        if self.cols.len() == 0 {
            // No table (a new session, a rebuild): nothing to hash the key for; an
            // append's id check and insert ask twice.
            return None;
        }
        let want = rank(key)?;
        let h = id_hash(want);
        let c = &self.cols;
        let lo = c.lower_bound(h);
        // The run of equal hashes (one entry but for crafted ones), settled by the
        // ids themselves.
        let mut hi = lo;
        while c.hash(hi) == Some(h) {
            hi += 1;
        }
        let (mut a, mut b) = (lo, hi);
        while a < b {
            let mid = a + (b - a) / 2;
            let i = c.order(mid)?;
            match id_key(recs, pool, i).and_then(rank) {
                Some(have) => match have.cmp(&want) {
                    Ordering::Equal => return Some(i),
                    Ordering::Less => a = mid + 1,
                    Ordering::Greater => b = mid,
                },
                None => a = mid + 1,
            }
        }
        None
    }
}

/// Entry ids to records: the saved [`IdTable`] for the covered prefix, a map of the
/// records since, and a map of every record once a query needs them all.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ids {
    table: IdTable,
    /// Records `table.covers..`.
    since: IdMap,
    /// Every record (only when `table.covers > 0`: otherwise `since` is all of them).
    all: OnceLock<IdMap>,
}

impl Ids {
    /// Lookups through a table loaded with the sidecar.
    pub(crate) fn with_table(table: IdTable) -> Self {
        Self {
            table,
            ..Self::default()
        }
    }

    /// Room in the map of new records for `more` ids (a hint).
    pub(crate) fn reserve(&mut self, recs: &Recs, pool: &Pool, more: usize) {
        self.since.reserve(recs, pool, more);
    }

    /// The last record whose id is `key` (`byId.get(key)`): a map lookup, else a
    /// binary search of the table.
    pub(crate) fn find(&self, recs: &Recs, pool: &Pool, key: Key<'_>) -> Option<u32> {
        if let Some(all) = self.all.get() {
            return all.find(recs, pool, key);
        }
        if let Some(i) = self.since.find(recs, pool, key) {
            return Some(i);
        }
        match key {
            Key::Undefined => self.table.undefined,
            Key::Unique(_) => None,
            Key::Str(_) | Key::Json(_) => self.table.find(recs, pool, key),
        }
    }

    /// The record that owns record `i`'s id (`byId.get(entry.id)`), through the
    /// map of every record (queries that look up every entry).
    pub(crate) fn find_own_bulk(&self, recs: &Recs, pool: &Pool, i: u32) -> Option<u32> {
        self.all(recs, pool).find_own(recs, pool, i)
    }

    /// A map of every record, for queries that look up every entry (built on first
    /// use when a table answers for the prefix: O(n) once, O(1) a lookup).
    pub(crate) fn all(&self, recs: &Recs, pool: &Pool) -> &IdMap {
        if self.table.covers == 0 {
            return &self.since;
        }
        self.all.get_or_init(|| IdMap::build(recs, pool))
    }

    /// Maps the id of record `index` (already pushed) to it; `true` if an earlier
    /// record had that id.
    pub(crate) fn insert(&mut self, recs: &Recs, pool: &Pool, index: u32) -> bool {
        let again = self.since.insert(recs, pool, index);
        if let Some(all) = self.all.get_mut() {
            all.insert(recs, pool, index);
        }
        again
            || match id_key(recs, pool, index) {
                Some(key @ (Key::Str(_) | Key::Json(_))) => {
                    self.table.find(recs, pool, key).is_some()
                }
                _ => false,
            }
    }

    /// The table of every record, as a save writes it: the loaded table and the
    /// records since merged (O(n), comparing hashes, plus sorting what was indexed
    /// since the load).
    pub(crate) fn table(&self, recs: &Recs, pool: &Pool) -> IdTable {
        let key = |i: u32| id_key(recs, pool, i).and_then(rank);
        // (hash, key, record), the key taken once: the sort compares hashes, then
        // slices. The map holds only keys a table holds.
        let mut since: Vec<_> = self
            .since
            .records()
            .filter_map(|i| key(i).map(|k| (id_hash(k), k, i)))
            .collect();
        since.sort_unstable();
        let c = &self.table.cols;
        let n = c.len() as usize;
        let old_h = |i: usize| c.hash(i as u32).unwrap_or(u64::MAX);
        let old = |i: usize| c.order(i as u32).unwrap_or(NO_POS);
        let mut hashes = Vec::with_capacity(n + since.len());
        let mut order = Vec::with_capacity(n + since.len());
        let (mut i, mut j) = (0, 0);
        while i < n && j < since.len() {
            let (h, k, r) = since[j];
            let next = old_h(i).cmp(&h).then_with(|| match key(old(i)) {
                Some(have) => have.cmp(&k),
                None => Ordering::Less,
            });
            match next {
                Ordering::Less => {
                    hashes.push(old_h(i));
                    order.push(old(i));
                    i += 1;
                }
                Ordering::Greater => {
                    hashes.push(h);
                    order.push(r);
                    j += 1;
                }
                // The later record has the id now.
                Ordering::Equal => {
                    hashes.push(h);
                    order.push(r);
                    i += 1;
                    j += 1;
                }
            }
        }
        hashes.extend((i..n).map(old_h));
        order.extend((i..n).map(old));
        for (h, _, r) in &since[j..] {
            hashes.push(*h);
            order.push(*r);
        }
        IdTable {
            cols: Cols::Mem { hashes, order },
            covers: u32::try_from(recs.len()).unwrap_or(u32::MAX),
            undefined: self.since.undefined.or(self.table.undefined),
        }
    }

    /// Ids inserted into maps since the table was loaded (or the state began).
    #[cfg(feature = "testing")]
    pub(crate) fn mapped(&self) -> u64 {
        self.since.inserted + self.all.get().map_or(0, |m| m.inserted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::derived::Derived;
    use crate::kinds;

    /// Ids whose hashes are equal (as crafted ones could be) form one run, which a
    /// binary search by the ids themselves settles.
    #[test]
    fn a_run_of_equal_hashes_is_settled_by_the_ids() {
        let mut d = Derived::new();
        d.push_payload(kinds::SESSION_HEADER, br#"{"type":"session","id":"s"}"#);
        for id in [r#""b""#, r#""a""#, r#""d""#, "5", r#""c""#, r#""5""#] {
            let line = format!(r#"{{"type":"custom","id":{id}}}"#);
            d.push_payload(kinds::ENTRY, line.as_bytes());
        }
        let s = &d.state;
        let mut order: Vec<u32> = (1..=6).collect();
        order.sort_by_key(|i| id_key(&s.recs, &s.pool, *i).and_then(rank));
        for i in 1..=6 {
            let key = id_key(&s.recs, &s.pool, i).expect("an entry");
            let table = IdTable {
                cols: Cols::Mem {
                    hashes: vec![id_hash(rank(key).expect("a scalar id")); 6],
                    order: order.clone(),
                },
                covers: 7,
                undefined: None,
            };
            assert_eq!(table.find(&s.recs, &s.pool, key), Some(i));
            assert_eq!(table.find(&s.recs, &s.pool, Key::Str(b"e")), None);
        }
    }
}
