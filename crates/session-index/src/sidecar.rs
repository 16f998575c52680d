//! The index sidecar's byte format: encode and decode (checks included).
//!
//! Layout (little-endian; documented in `docs/format.md` §3):
//!
//! ```text
//! 0    magic            8   89 42 43 53 49 44 58 0a  ("\x89BCSIDX\n")
//! 8    version          u32 (7)
//! 12   flags            u32 (0)
//! 16   journal_id       16
//! 32   covered_len      u64   journal bytes covered (a frame boundary)
//! 40   covered_seq      u64   seq of the last covered frame (0: none)
//! 48   last_offset      u64   offset of the last covered frame
//! 56   last_body_check  8     its body check
//! 64   data_start       u64   where the journal's first entry frame starts
//! 72   rec_count        u64
//! 80   pool_len         u64
//! 88   types_count      u32
//! 92   roles_count      u32
//! 96   agg_len          u64
//! 104  records          rec_count × 68 bytes
//!      pool             pool_len bytes (entry and parent ids, UTF-8)
//!      types, roles     each: u32 length + UTF-8 bytes
//!      aggregates       agg_len bytes of JSON
//!      trailer          16  XXH3-128 of every byte before it (little-endian)
//! ```

use session_journal::JournalId;

use crate::state::{Aggregates, NO_POS, Rec, Span, State};

/// The parent position written for record `i`: exact even when the in-memory
/// positions went stale (a later duplicate id), so a loaded index can trust them.
fn parent_pos(state: &State, i: u32) -> u32 {
    if state.parents_exact {
        state.recs[i as usize].parent_pos
    } else {
        state.resolve_parent(i).unwrap_or(NO_POS)
    }
}

/// The first 8 bytes of an index sidecar.
pub const MAGIC: [u8; 8] = [0x89, b'B', b'C', b'S', b'I', b'D', b'X', b'\n'];
/// The sidecar format version this crate writes and reads.
pub const VERSION: u32 = 8;
/// Fixed header length.
pub const HEADER_LEN: usize = 104;
/// Length of one encoded record.
pub(crate) const REC_LEN: usize = 72;
/// Length of the trailing check.
pub const TRAILER_LEN: usize = 16;

/// The trailer of a sidecar whose bytes before the trailer are `body`: XXH3-128,
/// little-endian. (A derived file's check guards against accidental damage, like a
/// CRC; XXH3 checks an 8.8 MB sidecar in 0.3 ms where BLAKE3 took 1.6 ms — the
/// largest part of resuming a 100k-entry session.) Public for tools and tests that
/// craft sidecars.
pub fn trailer(body: &[u8]) -> [u8; TRAILER_LEN] {
    xxhash_rust::xxh3::xxh3_128(body).to_le_bytes()
}

/// Why a sidecar could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeFault {
    Corrupt(String),
    Version(u32),
    Foreign(JournalId),
}

/// Encodes `state` (bound to `journal_id`).
pub(crate) fn encode(state: &State, journal_id: JournalId, data_start: u64) -> Vec<u8> {
    let agg = serde_json::to_vec(&state.agg).unwrap_or_default();
    let mut out = Vec::with_capacity(
        HEADER_LEN + state.recs.len() * REC_LEN + state.pool.len() + agg.len() + 256,
    );
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(journal_id.as_bytes());
    let (last_off, last_check) = state.last_frame.unwrap_or((0, [0; 8]));
    out.extend_from_slice(&state.covered_len.to_le_bytes());
    out.extend_from_slice(&state.covered_seq.to_le_bytes());
    out.extend_from_slice(&last_off.to_le_bytes());
    out.extend_from_slice(&last_check);
    out.extend_from_slice(&data_start.to_le_bytes());
    out.extend_from_slice(&(state.recs.len() as u64).to_le_bytes());
    out.extend_from_slice(&(state.pool.len() as u64).to_le_bytes());
    out.extend_from_slice(&(state.types.len() as u32).to_le_bytes());
    out.extend_from_slice(&(state.roles.len() as u32).to_le_bytes());
    out.extend_from_slice(&(agg.len() as u64).to_le_bytes());
    debug_assert_eq!(out.len(), HEADER_LEN);
    for (i, r) in state.recs.iter().enumerate() {
        out.extend_from_slice(&r.offset.to_le_bytes());
        out.extend_from_slice(&r.seq.to_le_bytes());
        out.extend_from_slice(&r.body_check);
        out.extend_from_slice(&r.ts.to_le_bytes());
        out.extend_from_slice(&r.id.start.to_le_bytes());
        out.extend_from_slice(&r.id.len.to_le_bytes());
        out.extend_from_slice(&r.parent.start.to_le_bytes());
        out.extend_from_slice(&r.parent.len.to_le_bytes());
        out.extend_from_slice(&r.payload_len.to_le_bytes());
        out.extend_from_slice(&r.type_code.to_le_bytes());
        out.extend_from_slice(&r.role_code.to_le_bytes());
        out.push(r.kind);
        out.push(r.flags);
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&parent_pos(state, i as u32).to_le_bytes());
    }
    out.extend_from_slice(&state.pool);
    for table in [&state.types, &state.roles] {
        for s in table.iter() {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
    out.extend_from_slice(&agg);
    let t = trailer(&out);
    out.extend_from_slice(&t);
    out
}

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
                    "needs {n} bytes at offset {}, file body has {}",
                    self.at,
                    self.b.len()
                ))
            })?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], DecodeFault> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    fn u32(&mut self) -> Result<u32, DecodeFault> {
        Ok(u32::from_le_bytes(self.arr()?))
    }
    fn u64(&mut self) -> Result<u64, DecodeFault> {
        Ok(u64::from_le_bytes(self.arr()?))
    }
}

/// The fixed header, readable without the rest (for the O(1) checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub(crate) journal_id: JournalId,
    pub(crate) covered_len: u64,
    pub(crate) covered_seq: u64,
    pub(crate) last_offset: u64,
    pub(crate) last_body_check: [u8; 8],
    pub(crate) data_start: u64,
}

/// Why a sidecar file could not be read.
#[derive(Debug)]
pub(crate) enum ReadFault {
    Io(std::io::Error),
    Decode(DecodeFault),
}

impl From<DecodeFault> for ReadFault {
    fn from(f: DecodeFault) -> Self {
        ReadFault::Decode(f)
    }
}

/// Records are read and hashed this many at a time (64 KiB).
const RECS_PER_READ: usize = 910;

/// Reads and decodes the sidecar `file` of `len` bytes; `expected` is the journal it
/// must belong to. The file is read once, in pieces, hashed as it goes: records are
/// decoded from a reused 64 KiB buffer and the id pool is read straight into its
/// place, so nothing is held twice. Nothing read is trusted before the trailer
/// matches: every check of the contents runs after it.
pub(crate) fn read(
    file: &dyn session_journal::vfs::VfsFile,
    len: u64,
    expected: JournalId,
) -> Result<(Checkpoint, State), ReadFault> {
    let corrupt = |s: String| ReadFault::Decode(DecodeFault::Corrupt(s));
    if len < 12 {
        return Err(corrupt(format!(
            "file is {len} bytes, shorter than a header"
        )));
    }
    let mut head = [0u8; HEADER_LEN];
    let head_len = HEADER_LEN.min(len as usize);
    file.read_exact_at(0, &mut head[..head_len])
        .map_err(ReadFault::Io)?;
    if head[..8] != MAGIC {
        return Err(corrupt("bad magic".to_owned()));
    }
    let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
    if version != VERSION {
        return Err(ReadFault::Decode(DecodeFault::Version(version)));
    }
    if len < (HEADER_LEN + TRAILER_LEN) as u64 {
        return Err(corrupt(format!(
            "file is {len} bytes, shorter than header and trailer"
        )));
    }
    let h = Header::parse(&head)?;
    // The sections' lengths must add up to the file's (the string tables take the
    // rest): this bounds every allocation below by the file's size.
    let fixed = [
        (HEADER_LEN + TRAILER_LEN) as u64,
        h.rec_count.saturating_mul(REC_LEN as u64),
        h.pool_len,
        h.agg_len,
    ]
    .into_iter()
    .try_fold(0u64, u64::checked_add)
    .filter(|n| *n <= len)
    .ok_or_else(|| {
        corrupt(format!(
            "{} records, a {}-byte pool and {} bytes of aggregates do not fit in {len} bytes",
            h.rec_count, h.pool_len, h.agg_len
        ))
    })?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&head);
    let mut at = HEADER_LEN as u64;
    // Records, in 64 KiB reads.
    let rec_count = h.rec_count as usize; // bounded by `len` above
    let mut recs = Vec::with_capacity(rec_count);
    let mut buf = vec![0u8; RECS_PER_READ.min(rec_count.max(1)) * REC_LEN];
    while recs.len() < rec_count {
        let n = (rec_count - recs.len()).min(RECS_PER_READ) * REC_LEN;
        file.read_exact_at(at, &mut buf[..n])
            .map_err(ReadFault::Io)?;
        hasher.update(&buf[..n]);
        recs.extend(buf[..n].chunks_exact(REC_LEN).map(parse_rec));
        at += n as u64;
    }
    // The pool, straight into place; then the string tables and aggregates.
    let mut pool = vec![0u8; h.pool_len as usize];
    file.read_exact_at(at, &mut pool).map_err(ReadFault::Io)?;
    hasher.update(&pool);
    at += h.pool_len;
    let mut rest = vec![0u8; (len - TRAILER_LEN as u64 - at) as usize];
    file.read_exact_at(at, &mut rest).map_err(ReadFault::Io)?;
    hasher.update(&rest);
    at += rest.len() as u64;
    let mut stored = [0u8; TRAILER_LEN];
    file.read_exact_at(at, &mut stored).map_err(ReadFault::Io)?;
    debug_assert!(fixed <= len);
    // Hashing on a second thread while decoding was tried (578c6b1): faster alone, but
    // slower inside a resume on this 2-core machine (`cargo xtask bench`: index open
    // 4.6 -> 8.7 ms), so the check stays in line.
    if hasher.digest128().to_le_bytes() != stored {
        return Err(corrupt("checksum mismatch".to_owned()));
    }
    Ok(build(h, recs, pool, &rest, expected)?)
}

/// The fixed header's fields after magic and version.
struct Header {
    journal_id: JournalId,
    covered_len: u64,
    covered_seq: u64,
    last_offset: u64,
    last_body_check: [u8; 8],
    data_start: u64,
    rec_count: u64,
    pool_len: u64,
    types_count: u32,
    roles_count: u32,
    agg_len: u64,
}

impl Header {
    fn parse(head: &[u8; HEADER_LEN]) -> Result<Header, DecodeFault> {
        let mut c = Cursor { b: head, at: 12 };
        let _flags = c.u32()?;
        Ok(Header {
            journal_id: JournalId(c.arr()?),
            covered_len: c.u64()?,
            covered_seq: c.u64()?,
            last_offset: c.u64()?,
            last_body_check: c.arr()?,
            data_start: c.u64()?,
            rec_count: c.u64()?,
            pool_len: c.u64()?,
            types_count: c.u32()?,
            roles_count: c.u32()?,
            agg_len: c.u64()?,
        })
    }
}

/// One record's fields at their fixed offsets (docs/format.md §3); `b` is
/// [`REC_LEN`] bytes (from `chunks_exact`), so the conversions cannot fail.
fn parse_rec(b: &[u8]) -> Rec {
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
    let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().expect("2 bytes"));
    Rec {
        offset: u64_at(0),
        seq: u64_at(8),
        body_check: b[16..24].try_into().expect("8 bytes"),
        ts: f64::from_le_bytes(b[24..32].try_into().expect("8 bytes")),
        id: Span {
            start: u64_at(32),
            len: u32_at(40),
        },
        parent: Span {
            start: u64_at(44),
            len: u32_at(52),
        },
        payload_len: u32_at(56),
        type_code: u16_at(60),
        role_code: u16_at(62),
        kind: b[64],
        flags: b[65],
        // 66..68: zero padding.
        parent_pos: u32_at(68),
    }
}

/// Checks the contents of a sidecar whose trailer matched and builds the state.
fn build(
    h: Header,
    recs: Vec<Rec>,
    pool: Vec<u8>,
    rest: &[u8],
    expected: JournalId,
) -> Result<(Checkpoint, State), DecodeFault> {
    let corrupt = |s: String| DecodeFault::Corrupt(s);
    if h.journal_id != expected {
        return Err(DecodeFault::Foreign(h.journal_id));
    }
    let cp = Checkpoint {
        journal_id: h.journal_id,
        covered_len: h.covered_len,
        covered_seq: h.covered_seq,
        last_offset: h.last_offset,
        last_body_check: h.last_body_check,
        data_start: h.data_start,
    };
    let (pool_len, types_count, roles_count) = (h.pool_len, h.types_count, h.roles_count);
    for r in &recs {
        for s in [r.id, r.parent] {
            if !s.is_none() && s.start.saturating_add(u64::from(s.len)) > pool_len {
                return Err(corrupt(format!(
                    "record at journal offset {} points outside the pool",
                    r.offset
                )));
            }
        }
        if u32::from(r.type_code) >= types_count.max(1) && r.type_code != u16::MAX
            || u32::from(r.role_code) >= roles_count.max(1) && r.role_code != u16::MAX
        {
            return Err(corrupt(format!(
                "record at journal offset {} has an unknown type or role code",
                r.offset
            )));
        }
    }
    let n = recs.len();
    if let Some(r) = recs
        .iter()
        .find(|r| r.parent_pos != NO_POS && r.parent_pos as usize >= n)
    {
        return Err(corrupt(format!(
            "record at journal offset {} names parent record {}, the sidecar has {n}",
            r.offset, r.parent_pos
        )));
    }
    let mut c = Cursor { b: rest, at: 0 };
    let mut tables: [Vec<Box<str>>; 2] = [Vec::new(), Vec::new()];
    for (t, n) in tables.iter_mut().zip([types_count, roles_count]) {
        for _ in 0..n {
            let len = c.u32()? as usize;
            let s = std::str::from_utf8(c.take(len)?)
                .map_err(|_| corrupt("a type or role name is not UTF-8".into()))?;
            t.push(s.into());
        }
        if t.is_empty() {
            t.push("".into());
        }
    }
    let agg_bytes =
        c.take(usize::try_from(h.agg_len).map_err(|_| corrupt("aggregates too large".into()))?)?;
    if c.at != rest.len() {
        return Err(corrupt(format!(
            "{} trailing bytes before the trailer",
            rest.len() - c.at
        )));
    }
    let agg: Aggregates =
        serde_json::from_slice(agg_bytes).map_err(|e| corrupt(format!("aggregates: {e}")))?;
    // The aggregates name records by position; a sidecar whose trailer matches can
    // still have been crafted, so a position past the records is corruption, never
    // an index handed to callers.
    let positions = [agg.header_entry, agg.name_entry, agg.state_entry, agg.leaf]
        .into_iter()
        .flatten()
        .chain(agg.labels.values().map(|l| l.entry))
        .chain(agg.usage_latest.values().copied());
    for p in positions {
        if p as usize >= recs.len() {
            return Err(corrupt(format!(
                "aggregates name record {p}, the sidecar has {}",
                recs.len()
            )));
        }
    }
    let [types, roles] = tables;
    let mut state = State {
        recs,
        pool,
        types,
        roles,
        agg,
        covered_len: cp.covered_len,
        covered_seq: cp.covered_seq,
        last_frame: (cp.covered_seq > 0).then_some((cp.last_offset, cp.last_body_check)),
        parents_exact: true,
        ..State::default()
    };
    // The last record is the last frame, or an earlier one when frames of other
    // kinds (counted, not recorded) follow it.
    if let Some(last) = state.recs.last()
        && (last.seq > cp.covered_seq
            || last.offset > cp.last_offset
            || (last.seq == cp.covered_seq) != (last.offset == cp.last_offset))
    {
        return Err(corrupt("checkpoint disagrees with the last record".into()));
    }
    state.rebuild_lookups();
    Ok((cp, state))
}
