//! The index sidecar's byte format (version 8): its layout, [`encode`] and [`read`]
//! (checks included).
//!
//! `docs/format.md` §3 specifies it and reproduces [`layout_table`], which is printed
//! from the field definitions below — the ones the encoder and decoder use — so the
//! spec and the code cannot drift (a test checks the spec holds the table verbatim,
//! and decodes a saved sidecar by the spec's offsets). The aggregates section has its
//! own wire types ([`wire`]), decoupled from the index's internal ones.
//!
//! ```text
//! header      120 bytes (fields below)
//! records     rec_count × 72 bytes, one per covered header or entry frame
//! id table    ids_count × u64 hashes, then ids_count × u32 records, sorted by id
//!             (hash, class, bytes): binary searched
//! pool        pool_len bytes (entry and parent ids, UTF-8)
//! types, roles each: u32 length + UTF-8 bytes
//! aggregates  agg_len bytes of JSON (`wire::AggregatesWire`)
//! trailer     16: XXH3-128 of every byte before it (little-endian)
//! ```

mod decode;
mod encode;
mod wire;

use session_journal::JournalId;

use crate::state::{
    REC_ID_JSON, REC_PARENT_ABSENT, REC_PARENT_JSON, REC_TYPE_JSON, REC_UNPARSABLE,
};

pub(crate) use decode::read;
pub(crate) use encode::encode;

/// The first 8 bytes of an index sidecar.
pub const MAGIC: [u8; 8] = [0x89, b'B', b'C', b'S', b'I', b'D', b'X', b'\n'];
/// The sidecar format version this crate writes and reads (older ones are rebuilt).
pub const VERSION: u32 = 9;
/// Fixed header length.
pub const HEADER_LEN: usize = 120;
/// Length of one encoded record.
pub(crate) const REC_LEN: usize = 72;
/// Length of one id table entry: its hash (u64) and its record (u32), stored as two
/// columns.
pub(crate) const ID_LEN: usize = 12;
/// Length of the trailing check.
pub const TRAILER_LEN: usize = 16;
/// "No record" in the header's `ids_undefined` and a record's `parent`.
pub(crate) const NONE: u32 = u32::MAX;

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
    pub(crate) const REC_COUNT: Field = Field::new(72, 8, "rec_count", "u64");
    pub(crate) const POOL_LEN: Field = Field::new(80, 8, "pool_len", "u64");
    pub(crate) const TYPES_COUNT: Field = Field::new(88, 4, "types_count", "u32");
    pub(crate) const ROLES_COUNT: Field = Field::new(92, 4, "roles_count", "u32");
    pub(crate) const AGG_LEN: Field = Field::new(96, 8, "agg_len", "u64");
    pub(crate) const IDS_COUNT: Field = Field::new(104, 8, "ids_count", "u64");
    pub(crate) const IDS_UNDEFINED: Field = Field::new(112, 4, "ids_undefined", "u32");
    pub(crate) const RESERVED: Field = Field::new(116, 4, "reserved", "u32");
    /// In order.
    pub(crate) const ALL: [Field; 17] = [
        MAGIC,
        VERSION,
        FLAGS,
        JOURNAL_ID,
        COVERED_LEN,
        COVERED_SEQ,
        LAST_OFFSET,
        LAST_BODY_CHECK,
        DATA_START,
        REC_COUNT,
        POOL_LEN,
        TYPES_COUNT,
        ROLES_COUNT,
        AGG_LEN,
        IDS_COUNT,
        IDS_UNDEFINED,
        RESERVED,
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
    /// In order.
    pub(crate) const ALL: [Field; 15] = [
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
    out.push_str("record flags\n");
    out.extend(
        REC_FLAGS
            .iter()
            .map(|(bit, name)| format!("  {bit:<4} {name}\n")),
    );
    out
}

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
