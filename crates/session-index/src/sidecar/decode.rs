//! Reading a sidecar: one pass over the file, hashed as it goes; nothing read is
//! trusted before the trailer matches, and every check of the contents runs after.

use session_journal::JournalId;
use session_journal::vfs::VfsFile;

use super::wire::AggregatesWire;
use super::{
    Checkpoint, DecodeFault, Field, HEADER_LEN, ID_LEN, MAGIC, NONE, REC_LEN, ReadFault,
    TRAILER_LEN, VERSION, head, rec,
};
use crate::ids::{IdTable, Ids};
use crate::state::{NO_POS, Rec, Span, State};

/// Room for what the appends after a load add before a save rewrites the sidecar
/// (the manager saves every 1,024 appends or an eighth of the session, whichever is
/// more): growing a loaded vector copies all of it, which the first append after a
/// resume would otherwise pay.
fn headroom(n: usize) -> usize {
    (n / 8).max(1024)
}

/// Records (and id table entries) are read and hashed this many bytes at a time.
const READ_CHUNK: usize = 910 * REC_LEN; // 64 KiB

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
    rec_count: u64,
    pool_len: u64,
    types_count: u32,
    roles_count: u32,
    agg_len: u64,
    ids_count: u64,
    ids_undefined: u32,
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
            rec_count: get_u64(h, head::REC_COUNT),
            pool_len: get_u64(h, head::POOL_LEN),
            types_count: get_u32(h, head::TYPES_COUNT),
            roles_count: get_u32(h, head::ROLES_COUNT),
            agg_len: get_u64(h, head::AGG_LEN),
            ids_count: get_u64(h, head::IDS_COUNT),
            ids_undefined: get_u32(h, head::IDS_UNDEFINED),
        }
    }
}

/// One record's fields at their offsets; `b` is [`REC_LEN`] bytes.
fn parse_rec(b: &[u8]) -> Rec {
    Rec {
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
    }
}

/// A sequential reader of the file that hashes what it reads.
struct Hashed<'a> {
    file: &'a dyn VfsFile,
    at: u64,
    hasher: xxhash_rust::xxh3::Xxh3,
}

impl Hashed<'_> {
    fn read(&mut self, buf: &mut [u8]) -> Result<(), ReadFault> {
        self.file
            .read_exact_at(self.at, buf)
            .map_err(ReadFault::Io)?;
        self.hasher.update(buf);
        self.at += buf.len() as u64;
        Ok(())
    }

    /// `count` items of `size` bytes, read in 64 KiB pieces from a reused buffer,
    /// into a vector with room for `spare` more.
    fn items<T>(
        &mut self,
        count: usize,
        spare: usize,
        size: usize,
        parse: impl Fn(&[u8]) -> T,
    ) -> Result<Vec<T>, ReadFault> {
        let per_read = READ_CHUNK / size;
        let mut out = Vec::with_capacity(count + spare);
        let mut buf = vec![0u8; per_read.min(count.max(1)) * size];
        while out.len() < count {
            let n = (count - out.len()).min(per_read) * size;
            self.read(&mut buf[..n])?;
            out.extend(buf[..n].chunks_exact(size).map(&parse));
        }
        Ok(out)
    }
}

/// Reads and decodes the sidecar `file` of `len` bytes; `expected` is the journal it
/// must belong to. The file is read once, in pieces, hashed as it goes: records and
/// the id table are decoded from a reused 64 KiB buffer and the id pool is read
/// straight into its place, so nothing is held twice.
pub(crate) fn read(
    file: &dyn VfsFile,
    len: u64,
    expected: JournalId,
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
            "file is {len} bytes, shorter than header and trailer"
        )));
    }
    let hd = Header::parse(&h);
    // The sections' lengths must add up to the file's (the string tables take the
    // rest): this bounds every allocation below by the file's size.
    [
        (HEADER_LEN + TRAILER_LEN) as u64,
        hd.rec_count.saturating_mul(REC_LEN as u64),
        hd.ids_count.saturating_mul(ID_LEN as u64),
        hd.pool_len,
        hd.agg_len,
    ]
    .into_iter()
    .try_fold(0u64, u64::checked_add)
    .filter(|n| *n <= len)
    .ok_or_else(|| {
        corrupt(format!(
            "{} records, {} ids, a {}-byte pool and {} bytes of aggregates do not fit in {len} bytes",
            hd.rec_count, hd.ids_count, hd.pool_len, hd.agg_len
        ))
    })?;
    let mut r = Hashed {
        file,
        at: 0,
        hasher: xxhash_rust::xxh3::Xxh3::new(),
    };
    r.hasher.update(&h);
    r.at = HEADER_LEN as u64;
    // Bounded by `len` above.
    let n = hd.rec_count as usize;
    let recs = r.items(n, headroom(n), REC_LEN, parse_rec)?;
    let hashes = r.items(hd.ids_count as usize, 0, 8, |b| {
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    })?;
    let order = r.items(hd.ids_count as usize, 0, 4, |b| {
        u32::from_le_bytes([b[0], b[1], b[2], b[3]])
    })?;
    // The pool, straight into place, with room for the ids of as many appends (at
    // their average length; never more than an eighth of the pool and 64 KiB, so a
    // crafted pool of few long ids cannot make it large).
    let pool_len = hd.pool_len as usize;
    let spare = headroom(n)
        .saturating_mul(pool_len / n.max(1))
        .min(pool_len / 8 + (64 << 10));
    let mut pool = Vec::with_capacity(pool_len + spare);
    pool.resize(pool_len, 0);
    r.read(&mut pool)?;
    let mut rest = vec![0u8; (len - TRAILER_LEN as u64 - r.at) as usize];
    r.read(&mut rest)?;
    let mut stored = [0u8; TRAILER_LEN];
    file.read_exact_at(r.at, &mut stored)
        .map_err(ReadFault::Io)?;
    // Hashing on a second thread while decoding was tried (578c6b1): faster alone, but
    // slower inside a resume on this 2-core machine (`cargo xtask bench`: index open
    // 4.6 -> 8.7 ms), so the check stays in line.
    if r.hasher.digest128().to_le_bytes() != stored {
        return Err(corrupt("checksum mismatch".to_owned()));
    }
    Ok(build(hd, recs, (hashes, order), pool, &rest, expected)?)
}

/// A bounded reader of the string tables and aggregates.
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
                    "needs {n} bytes at offset {} of the string tables, they have {}",
                    self.at,
                    self.b.len()
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
}

/// Checks each record's spans, codes and parent against the sections they name.
fn check_records(h: &Header, recs: &[Rec]) -> Result<(), DecodeFault> {
    let n = recs.len();
    for r in recs {
        let at = r.offset;
        for s in [r.id, r.parent] {
            if !s.is_none() && s.start.saturating_add(u64::from(s.len)) > h.pool_len {
                return Err(DecodeFault::Corrupt(format!(
                    "record at journal offset {at} points outside the pool"
                )));
            }
        }
        if u32::from(r.type_code) >= h.types_count.max(1) && r.type_code != u16::MAX
            || u32::from(r.role_code) >= h.roles_count.max(1) && r.role_code != u16::MAX
        {
            return Err(DecodeFault::Corrupt(format!(
                "record at journal offset {at} has an unknown type or role code"
            )));
        }
        if r.parent_pos != NO_POS && r.parent_pos as usize >= n {
            return Err(DecodeFault::Corrupt(format!(
                "record at journal offset {at} names parent record {}, the sidecar has {n}",
                r.parent_pos
            )));
        }
    }
    Ok(())
}

/// Checks the contents of a sidecar whose trailer matched and builds the state.
fn build(
    h: Header,
    recs: Vec<Rec>,
    (hashes, order): (Vec<u64>, Vec<u32>),
    pool: Vec<u8>,
    rest: &[u8],
    expected: JournalId,
) -> Result<(Checkpoint, State), DecodeFault> {
    let corrupt = |s: String| DecodeFault::Corrupt(s);
    let cp = h.checkpoint;
    if cp.journal_id != expected {
        return Err(DecodeFault::Foreign(cp.journal_id));
    }
    check_records(&h, &recs)?;
    let n = recs.len();
    // The id table and the aggregates name records by position; a sidecar whose
    // trailer matches can still have been crafted, so a position past the records is
    // corruption, never an index handed to callers. (A crafted table out of order
    // only gets wrong answers from its binary search.)
    let undefined = (h.ids_undefined != NONE).then_some(h.ids_undefined);
    if let Some(p) = order
        .iter()
        .copied()
        .chain(undefined)
        .find(|p| *p as usize >= n)
    {
        return Err(corrupt(format!(
            "the id table names record {p}, the sidecar has {n}"
        )));
    }
    let mut c = Cursor { b: rest, at: 0 };
    let mut tables: [Vec<Box<str>>; 2] = [Vec::new(), Vec::new()];
    for (t, count) in tables.iter_mut().zip([h.types_count, h.roles_count]) {
        for _ in 0..count {
            let len = c.u32()? as usize;
            let s = std::str::from_utf8(c.take(len)?)
                .map_err(|_| corrupt("a type or role name is not UTF-8".into()))?;
            t.push(s.into());
        }
        if t.is_empty() {
            t.push("".into());
        }
    }
    let agg_len = usize::try_from(h.agg_len).map_err(|_| corrupt("aggregates too large".into()))?;
    let agg_bytes = c.take(agg_len)?;
    if c.at != rest.len() {
        return Err(corrupt(format!(
            "{} trailing bytes before the trailer",
            rest.len() - c.at
        )));
    }
    let agg: AggregatesWire =
        serde_json::from_slice(agg_bytes).map_err(|e| corrupt(format!("aggregates: {e}")))?;
    if let Some(p) = agg.positions().find(|p| *p as usize >= n) {
        return Err(corrupt(format!(
            "aggregates name record {p}, the sidecar has {n}"
        )));
    }
    // The last record is the last frame, or an earlier one when frames of other
    // kinds (counted, not recorded) or the journal's seal (which repeats the last
    // entry's seq) follow it.
    if let Some(last) = recs.last()
        && (last.seq > cp.covered_seq
            || last.offset > cp.last_offset
            || (last.offset == cp.last_offset && last.seq != cp.covered_seq))
    {
        return Err(corrupt("checkpoint disagrees with the last record".into()));
    }
    let [types, roles] = tables;
    let table = IdTable {
        hashes,
        order,
        covers: u32::try_from(n).map_err(|_| corrupt(format!("{n} records")))?,
        undefined,
    };
    let mut state = State {
        recs,
        pool,
        types,
        roles,
        ids: Ids::with_table(table),
        agg: agg.into_aggregates(),
        covered_len: cp.covered_len,
        covered_seq: cp.covered_seq,
        last_frame: (cp.covered_seq > 0).then_some((cp.last_offset, cp.last_body_check)),
        parents_exact: true,
        ..State::default()
    };
    state.rebuild_lookups();
    state.restore_orphans();
    Ok((cp, state))
}
