//! The index sidecar's byte format (version 11): its layout, [`encode`] and [`open`]
//! (checks included), and the pages a loaded index reads on demand ([`Base`]).
//!
//! `docs/format.md` §3 specifies it and reproduces [`layout_table`], which is printed
//! from the field definitions below — the ones the encoder and decoder use — so the
//! spec and the code cannot drift (a test checks the spec holds the table verbatim,
//! and decodes a saved sidecar by the spec's offsets). The aggregates section has its
//! own wire types ([`wire`]), decoupled from the index's internal ones.
//!
//! ```text
//! head        checked as one; all that an open reads
//!   header    136 bytes (fields below)
//!   checks    the page checks: rec_pages × u64; hash_pages × (u64 first hash,
//!             u64 check); order_pages × u64; pool_chunks × (u32 length, u64 check);
//!             the labels section's u64
//!   types, roles each: u32 length + UTF-8 bytes
//!   orphans   orphan_count × (u8 json, u32 length, bytes)
//!   aggregates agg_len bytes of JSON (`wire::AggregatesWire`)
//!   head check 16: XXH3-128 of every head byte before it
//! records     rec_count × 88 bytes, in pages of 256 records
//! id hashes   ids_count × u64, in pages of 4096
//! id records  ids_count × u32, in pages of 8192
//! pool        pool_len bytes, in chunks cut where a string starts
//! labels      labels_len bytes of JSON (`wire::LabelsWire`): labels and usage
//!             attributions, which grow with the session
//! ```
//!
//! Each page's check is XXH3-64 of its bytes seeded with its offset in the file: a
//! page is read and checked when first used, never before.

mod decode;
mod encode;
mod paged;
mod wire;

use session_journal::JournalId;

use crate::state::{
    REC_ID_JSON, REC_PARENT_ABSENT, REC_PARENT_JSON, REC_TYPE_JSON, REC_UNPARSABLE,
};

pub(crate) use decode::open;
pub(crate) use encode::encode;
pub(crate) use paged::{Base, Rebuild, Resident};

/// The first 8 bytes of an index sidecar.
pub const MAGIC: [u8; 8] = [0x89, b'B', b'C', b'S', b'I', b'D', b'X', b'\n'];
/// The sidecar format version this crate writes and reads (older ones are rebuilt).
pub const VERSION: u32 = 11;
/// Fixed header length.
pub const HEADER_LEN: usize = 136;
/// Length of one encoded record.
pub(crate) const REC_LEN: usize = 88;
/// Length of one id table entry: its hash (u64) and its record (u32), stored as two
/// columns.
pub(crate) const ID_LEN: usize = 12;
/// Length of the head's check.
pub const TRAILER_LEN: usize = 16;
/// "No record" in the header's `ids_undefined` and a record's `parent`.
pub(crate) const NONE: u32 = u32::MAX;
/// Records in a page (the last page may hold fewer).
pub(crate) const REC_PAGE: usize = 256;
/// Id hashes in a page.
pub(crate) const HASH_PAGE: usize = 4096;
/// Id records in a page.
pub(crate) const ORDER_PAGE: usize = 8192;
/// A pool chunk ends at the first string start at or past this many bytes.
pub(crate) const POOL_CHUNK: usize = 16 << 10;

/// The check of a page of `bytes` at `offset` in the file.
pub(crate) fn page_check(bytes: &[u8], offset: u64) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(bytes, offset)
}

/// A field of the header or of a record: where it is, what it is called in the spec,
/// its width and its type as the spec writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub(crate) at: usize,
    pub(crate) len: usize,
    name: &'static str,
    ty: &'static str,
}

impl Field {
    const fn new(at: usize, len: usize, name: &'static str, ty: &'static str) -> Field {
        Field { at, len, name, ty }
    }
    fn range(self) -> std::ops::Range<usize> {
        self.at..self.at + self.len
    }
}

/// The header's fields.
pub(crate) mod head {
    use super::Field;
    pub(crate) const MAGIC: Field = Field::new(0, 8, "magic", "[8]");
    pub(crate) const VERSION: Field = Field::new(8, 4, "version", "u32");
    pub(crate) const FLAGS: Field = Field::new(12, 4, "flags", "u32");
    pub(crate) const JOURNAL_ID: Field = Field::new(16, 16, "journal_id", "[16]");
    pub(crate) const COVERED_LEN: Field = Field::new(32, 8, "covered_len", "u64");
    pub(crate) const COVERED_SEQ: Field = Field::new(40, 8, "covered_seq", "u64");
    pub(crate) const LAST_OFFSET: Field = Field::new(48, 8, "last_offset", "u64");
    pub(crate) const LAST_BODY_CHECK: Field = Field::new(56, 8, "last_body_check", "[8]");
    pub(crate) const DATA_START: Field = Field::new(64, 8, "data_start", "u64");
    pub(crate) const HEAD_LEN: Field = Field::new(72, 8, "head_len", "u64");
    pub(crate) const REC_COUNT: Field = Field::new(80, 8, "rec_count", "u64");
    pub(crate) const IDS_COUNT: Field = Field::new(88, 8, "ids_count", "u64");
    pub(crate) const POOL_LEN: Field = Field::new(96, 8, "pool_len", "u64");
    pub(crate) const POOL_CHUNKS: Field = Field::new(104, 4, "pool_chunks", "u32");
    pub(crate) const IDS_UNDEFINED: Field = Field::new(108, 4, "ids_undefined", "u32");
    pub(crate) const TYPES_COUNT: Field = Field::new(112, 4, "types_count", "u32");
    pub(crate) const ROLES_COUNT: Field = Field::new(116, 4, "roles_count", "u32");
    pub(crate) const ORPHAN_COUNT: Field = Field::new(120, 4, "orphan_count", "u32");
    pub(crate) const AGG_LEN: Field = Field::new(124, 4, "agg_len", "u32");
    pub(crate) const LABELS_LEN: Field = Field::new(128, 8, "labels_len", "u64");
    /// In order.
    pub(crate) const ALL: [Field; 20] = [
        MAGIC,
        VERSION,
        FLAGS,
        JOURNAL_ID,
        COVERED_LEN,
        COVERED_SEQ,
        LAST_OFFSET,
        LAST_BODY_CHECK,
        DATA_START,
        HEAD_LEN,
        REC_COUNT,
        IDS_COUNT,
        POOL_LEN,
        POOL_CHUNKS,
        IDS_UNDEFINED,
        TYPES_COUNT,
        ROLES_COUNT,
        ORPHAN_COUNT,
        AGG_LEN,
        LABELS_LEN,
    ];
}

/// A record's fields.
pub(crate) mod rec {
    use super::Field;
    pub(crate) const OFFSET: Field = Field::new(0, 8, "offset", "u64");
    pub(crate) const SEQ: Field = Field::new(8, 8, "seq", "u64");
    pub(crate) const BODY_CHECK: Field = Field::new(16, 8, "body_check", "[8]");
    pub(crate) const TIMESTAMP_MS: Field = Field::new(24, 8, "timestamp_ms", "f64");
    pub(crate) const ID_START: Field = Field::new(32, 8, "id_start", "u64");
    pub(crate) const ID_LEN: Field = Field::new(40, 4, "id_len", "u32");
    pub(crate) const PARENT_START: Field = Field::new(44, 8, "parent_start", "u64");
    pub(crate) const PARENT_LEN: Field = Field::new(52, 4, "parent_len", "u32");
    pub(crate) const PAYLOAD_LEN: Field = Field::new(56, 4, "payload_len", "u32");
    pub(crate) const TYPE_CODE: Field = Field::new(60, 2, "type_code", "u16");
    pub(crate) const ROLE_CODE: Field = Field::new(62, 2, "role_code", "u16");
    pub(crate) const KIND: Field = Field::new(64, 1, "kind", "u8");
    pub(crate) const FLAGS: Field = Field::new(65, 1, "flags", "u8");
    pub(crate) const PADDING: Field = Field::new(66, 2, "padding", "[2]");
    pub(crate) const PARENT: Field = Field::new(68, 4, "parent", "u32");
    pub(crate) const MARK_THINKING: Field = Field::new(72, 4, "mark_thinking", "u32");
    pub(crate) const MARK_SERVICE_TIER: Field = Field::new(76, 4, "mark_service_tier", "u32");
    pub(crate) const MARK_MODEL: Field = Field::new(80, 4, "mark_model", "u32");
    pub(crate) const MARK_TOP: Field = Field::new(84, 4, "mark_top", "u32");
    /// In order.
    pub(crate) const ALL: [Field; 19] = [
        OFFSET,
        SEQ,
        BODY_CHECK,
        TIMESTAMP_MS,
        ID_START,
        ID_LEN,
        PARENT_START,
        PARENT_LEN,
        PAYLOAD_LEN,
        TYPE_CODE,
        ROLE_CODE,
        KIND,
        FLAGS,
        PADDING,
        PARENT,
        MARK_THINKING,
        MARK_SERVICE_TIER,
        MARK_MODEL,
        MARK_TOP,
    ];
}

/// The record flags, as the spec names them.
const REC_FLAGS: [(u8, &str); 5] = [
    (REC_UNPARSABLE, "unparsable"),
    (REC_PARENT_JSON, "parent_json"),
    (REC_ID_JSON, "id_json"),
    (REC_PARENT_ABSENT, "parent_absent"),
    (REC_TYPE_JSON, "type_json"),
];

/// The sidecar's fixed layout as the `text` block `docs/format.md` §3 reproduces
/// verbatim: the header's and a record's fields (offset, name, type), the id table's
/// entry and the record flags.
pub fn layout_table() -> String {
    let mut out = format!("header ({HEADER_LEN} bytes)\n");
    let row = |f: &Field| format!("  {:<4} {:<16} {}\n", f.at, f.name, f.ty);
    out.extend(head::ALL.iter().map(row));
    out.push_str(&format!("record ({REC_LEN} bytes)\n"));
    out.extend(rec::ALL.iter().map(row));
    out.push_str(&format!(
        "id table entry ({ID_LEN} bytes, two columns)\n  0    hash             u64\n  8    record           u32\n"
    ));
    out.push_str("pages (entries a page holds; a pool chunk: bytes it holds at least)\n");
    for (n, name) in [
        (REC_PAGE, "records"),
        (HASH_PAGE, "id_hashes"),
        (ORDER_PAGE, "id_records"),
        (POOL_CHUNK, "pool_chunk"),
    ] {
        out.push_str(&format!("  {n:<5} {name}\n"));
    }
    out.push_str("record flags\n");
    out.extend(
        REC_FLAGS
            .iter()
            .map(|(bit, name)| format!("  {bit:<4} {name}\n")),
    );
    out
}

/// The check that ends a sidecar's head whose bytes before it are `head`: XXH3-128,
/// little-endian. (A derived file's checks guard against accidental damage, like a
/// CRC; XXH3 where BLAKE3 took five times as long.) Public for tools and tests that
/// craft sidecars.
pub fn trailer(head: &[u8]) -> [u8; TRAILER_LEN] {
    xxhash_rust::xxh3::xxh3_128(head).to_le_bytes()
}

/// Recomputes the checks of a crafted sidecar in place: every page's (when the
/// header's sizes add up to the file's) and the head's (when `head_len` fits), so a
/// decoder's checks of the contents are reached. Public for tools, tests and fuzzers
/// that craft sidecars; bytes that are no sidecar are left as they are.
pub fn reseal(b: &mut [u8]) {
    let le = |b: &[u8], f: Field| -> Option<u64> {
        let mut x = [0u8; 8];
        x[..f.len].copy_from_slice(b.get(f.range())?);
        Some(u64::from_le_bytes(x))
    };
    let size = |f: Field| le(b, f).and_then(|x| usize::try_from(x).ok());
    let (Some(head_len), Some(n), Some(ids), Some(pool_len), Some(chunks), Some(labels_len)) = (
        size(head::HEAD_LEN),
        size(head::REC_COUNT),
        size(head::IDS_COUNT),
        size(head::POOL_LEN),
        size(head::POOL_CHUNKS),
        size(head::LABELS_LEN),
    ) else {
        return;
    };
    if head_len < HEADER_LEN + TRAILER_LEN || head_len > b.len() {
        return;
    }
    let recs = head_len;
    let ends = n
        .checked_mul(REC_LEN)
        .and_then(|r| recs.checked_add(r))
        .and_then(|hashes| {
            let orders = hashes.checked_add(ids.checked_mul(8)?)?;
            let pool = orders.checked_add(ids.checked_mul(4)?)?;
            let labels = pool.checked_add(pool_len)?;
            Some((
                hashes,
                orders,
                pool,
                labels,
                labels.checked_add(labels_len)?,
            ))
        });
    if let Some((hashes, orders, pool, labels, end)) = ends
        && end == b.len()
    {
        let mut at = HEADER_LEN;
        let put = |b: &mut [u8], at: &mut usize, x: u64| {
            if let Some(s) = b.get_mut(*at..*at + 8) {
                s.copy_from_slice(&x.to_le_bytes());
            }
            *at += 8;
        };
        let check = |b: &[u8], from: usize, to: usize| page_check(&b[from..to], from as u64);
        for p in (recs..hashes).step_by(REC_PAGE * REC_LEN) {
            let c = check(b, p, (p + REC_PAGE * REC_LEN).min(hashes));
            put(b, &mut at, c);
        }
        for p in (hashes..orders).step_by(HASH_PAGE * 8) {
            let first = le(&b[p..], Field::new(0, 8, "", "")).unwrap_or(0);
            put(b, &mut at, first);
            let c = check(b, p, (p + HASH_PAGE * 8).min(orders));
            put(b, &mut at, c);
        }
        for p in (orders..pool).step_by(ORDER_PAGE * 4) {
            let c = check(b, p, (p + ORDER_PAGE * 4).min(pool));
            put(b, &mut at, c);
        }
        let mut from = pool;
        // Each chunk holds a byte at least, and its entry is in the head.
        for _ in 0..chunks.min(pool_len) {
            if at + 12 > head_len {
                break;
            }
            let len = le(&b[at.min(b.len())..], Field::new(0, 4, "", "")).unwrap_or(0) as usize;
            let to = from.saturating_add(len).min(labels);
            at += 4;
            let c = check(b, from, to);
            put(b, &mut at, c);
            from = to;
        }
        let c = check(b, labels, end);
        put(b, &mut at, c);
    }
    let end = head_len - TRAILER_LEN;
    let t = trailer(&b[..end]);
    b[end..head_len].copy_from_slice(&t);
}

/// Why a sidecar could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DecodeFault {
    Corrupt(String),
    Version(u32),
    Foreign(JournalId),
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

/// The fixed header's claims about the journal, checked against it in O(1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub(crate) journal_id: JournalId,
    pub(crate) covered_len: u64,
    pub(crate) covered_seq: u64,
    pub(crate) last_offset: u64,
    pub(crate) last_body_check: [u8; 8],
    pub(crate) data_start: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields follow each other without gap or overlap and fill the header and
    /// the record exactly.
    #[test]
    fn fields_tile_the_header_and_the_record() {
        for (fields, len) in [(&head::ALL[..], HEADER_LEN), (&rec::ALL[..], REC_LEN)] {
            let mut at = 0;
            for f in fields {
                assert_eq!(f.at, at, "{}", f.name);
                at += f.len;
            }
            assert_eq!(at, len);
        }
        assert_eq!(head::MAGIC.len, MAGIC.len());
    }
}
