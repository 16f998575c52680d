//! The catalog's bytes (`docs/format.md` §3, "Listing catalog"): a checked header,
//! then framed records, each the JSON text of a [`RecordV4`].
//!
//! The record types here are the wire format and nothing else: they are converted to
//! and from [`SessionSummary`] field by field, so renaming a field of a public type
//! cannot change what is on disk, and changing a field here is a format change (bump
//! [`VERSION`]; a test ties [`example_record`] to the spec).

use serde::{Deserialize, Serialize};
use session_journal::vfs::ChangeTime;

use crate::summary::{Modified, SessionSummary};

/// The first 8 bytes of a catalog.
pub(crate) const MAGIC: [u8; 8] = [0x89, b'B', b'C', b'S', b'C', b'A', b'T', b'\n'];
/// The catalog format version.
pub(crate) const VERSION: u32 = 4;
/// The header's length: magic, version, flags, stamp (secs, nanos), reserved,
/// `base_end`, and the header's own check.
pub(crate) const HEADER_LEN: usize = 48;
/// Bytes before each record's payload: its length (u32) and check (XXH3-64).
pub(crate) const FRAME_PREFIX_LEN: usize = 12;
/// The largest record payload written or read. A record holds a bounded excerpt of
/// the first message, but the header's fields, the name and the agent status are as
/// long as the journal made them: a session whose record would be longer is listed
/// from its index every time instead.
pub(crate) const RECORD_MAX: usize = 64 * 1024;
/// How close (ns) a journal's change time may come to the catalog's stamp before
/// its record is "racy" and checked against the journal's content. The stamp and
/// the change times come from one clock (the file system's), so any margin is only
/// for its granularity and for clock adjustments; one second covers the coarsest
/// file systems a store is likely to live on.
pub(crate) const RACY_WINDOW_NS: i128 = 1_000_000_000;

/// The header of a catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    /// The change time of the catalog's temporary file, taken before the listing
    /// that wrote it looked at any journal (`None`: every base record is racy).
    pub(crate) stamp: Option<ChangeTime>,
    /// Where the records written with the header end; records after it were
    /// appended one at a time ([`crate::note`]) and carry no stamp.
    pub(crate) base_end: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        // 12..16 flags = 0
        let (secs, nanos) = match self.stamp {
            Some(t) => (t.secs, t.nanos),
            None => (i64::MIN, 0),
        };
        b[16..24].copy_from_slice(&secs.to_le_bytes());
        b[24..28].copy_from_slice(&nanos.to_le_bytes());
        // 28..32 reserved = 0
        b[32..40].copy_from_slice(&self.base_end.to_le_bytes());
        let check = xxhash_rust::xxh3::xxh3_64(&b[..40]);
        b[40..48].copy_from_slice(&check.to_le_bytes());
        b
    }

    /// Decodes and checks a header (the first [`HEADER_LEN`] bytes of `bytes`) of a
    /// file of `file_len` bytes.
    pub(crate) fn decode(bytes: &[u8], file_len: u64) -> Result<Self, String> {
        let Some(b) = bytes.get(..HEADER_LEN) else {
            return Err("not a catalog (too short)".into());
        };
        if b[..8] != MAGIC {
            return Err("not a catalog (bad magic)".into());
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        let version = u32_at(8);
        if version != VERSION {
            return Err(format!(
                "catalog version {version} unsupported (supported: {VERSION})"
            ));
        }
        if u64_at(40) != xxhash_rust::xxh3::xxh3_64(&b[..40]) {
            return Err("catalog header checksum mismatch".into());
        }
        if u32_at(12) != 0 || u32_at(28) != 0 {
            return Err("catalog header has unknown flags".into());
        }
        let secs = u64_at(16) as i64;
        let nanos = u32_at(24);
        let stamp =
            (secs != i64::MIN && nanos < 1_000_000_000).then_some(ChangeTime { secs, nanos });
        let base_end = u64_at(32);
        if base_end < HEADER_LEN as u64 || base_end > file_len {
            return Err(format!("catalog base end {base_end} is outside the file"));
        }
        Ok(Header { stamp, base_end })
    }
}

/// One record framed for the file: length, XXH3-64 of the payload, payload.
pub(crate) fn frame(record: &RecordV4) -> Option<Vec<u8>> {
    let payload = serde_json::to_vec(record).ok()?;
    if payload.len() > RECORD_MAX {
        return None;
    }
    let mut out = Vec::with_capacity(FRAME_PREFIX_LEN + payload.len());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Some(out)
}

/// A decoded catalog: records in file order, each with whether it was written with
/// the header (stamped) or appended later.
pub(crate) struct Decoded {
    pub(crate) header: Header,
    pub(crate) records: Vec<(RecordV4, bool)>,
    /// Why decoding stopped before the end of the file, if it did (a torn or
    /// damaged record: it and everything after it are ignored), with whether that
    /// was inside the base records.
    pub(crate) stopped: Option<(String, bool)>,
}

/// Decodes a whole catalog file.
pub(crate) fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    let header = Header::decode(bytes, bytes.len() as u64)?;
    let mut records = Vec::new();
    let mut at = HEADER_LEN;
    let mut stopped = None;
    while at < bytes.len() {
        let in_base = (at as u64) < header.base_end;
        let bad = |why: String| Some((format!("catalog record at offset {at}: {why}"), in_base));
        let Some(prefix) = bytes.get(at..at + FRAME_PREFIX_LEN) else {
            stopped = bad("torn".into());
            break;
        };
        let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize;
        let mut c = [0u8; 8];
        c.copy_from_slice(&prefix[4..12]);
        let start = at + FRAME_PREFIX_LEN;
        let payload = match bytes.get(start..start.saturating_add(len)) {
            Some(p) if len <= RECORD_MAX => p,
            _ => {
                stopped = bad(format!("length {len} runs past the end or the limit"));
                break;
            }
        };
        if xxhash_rust::xxh3::xxh3_64(payload) != u64::from_le_bytes(c) {
            stopped = bad("checksum mismatch".into());
            break;
        }
        match serde_json::from_slice::<RecordV4>(payload) {
            Ok(r) => records.push((r, in_base)),
            Err(e) => {
                stopped = bad(format!("not a record: {e}"));
                break;
            }
        }
        at = start + len;
    }
    Ok(Decoded {
        header,
        records,
        stopped,
    })
}

/// One journal's record (catalog version 4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RecordV4 {
    /// The journal's file name in the directory (`<session-id>.jsonl`).
    pub(crate) file: String,
    /// `st_dev`, `st_ino`, `st_size` of the journal when the record was made.
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) len: u64,
    /// `st_ctime` as `[seconds, nanoseconds]`; `null` where the file system keeps
    /// none (the record is then always checked by content).
    pub(crate) ctime: Option<(i64, u32)>,
    /// The journal's id, UUID-style hex.
    pub(crate) journal_id: String,
    /// The last frame the record covers (it ends at `len`): offset, seq and body
    /// check (16 hex digits).
    pub(crate) last_offset: u64,
    pub(crate) last_seq: u64,
    pub(crate) last_check: String,
    /// The listing summary at `len`.
    pub(crate) summary: SummaryV4,
}

impl RecordV4 {
    pub(crate) fn ctime(&self) -> Option<ChangeTime> {
        self.ctime
            .filter(|(_, n)| *n < 1_000_000_000)
            .map(|(secs, nanos)| ChangeTime { secs, nanos })
    }
}

/// The listing summary as the catalog stores it (version 4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SummaryV4 {
    /// `header.id` as written, any JSON value; absent when the header has none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::state::present"
    )]
    pub(crate) id: Option<serde_json::Value>,
    pub(crate) cwd: String,
    pub(crate) name: Option<String>,
    /// `header.parentSession` as written; absent when the header has none.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::state::present"
    )]
    pub(crate) parent_session: Option<serde_json::Value>,
    pub(crate) created: Option<i64>,
    /// `modified` in ms (`null`: Invalid Date), unless `modified_from_file`.
    pub(crate) modified: Option<i64>,
    /// Neither the entries nor the header gave a time: the file's mtime applies.
    pub(crate) modified_from_file: bool,
    pub(crate) message_count: u64,
    pub(crate) first_message: String,
    pub(crate) first_message_truncated: bool,
    pub(crate) reference_would_drop: Option<String>,
    pub(crate) session_state: Option<String>,
    pub(crate) agent_status: Option<serde_json::Value>,
}

impl SummaryV4 {
    pub(crate) fn from_summary(s: &SessionSummary) -> Self {
        let (modified, modified_from_file) = match s.modified {
            Modified::At(t) => (t, false),
            Modified::FileMtime => (None, true),
        };
        SummaryV4 {
            id: s.id.clone(),
            cwd: s.cwd.clone(),
            name: s.name.clone(),
            parent_session: s.parent_session_path.clone(),
            created: s.created,
            modified,
            modified_from_file,
            message_count: s.message_count,
            first_message: s.first_message.clone(),
            first_message_truncated: s.first_message_truncated,
            reference_would_drop: s.reference_would_drop.clone(),
            session_state: s.session_state.clone(),
            agent_status: s.agent_status.clone(),
        }
    }

    /// The summary (records are only written for journals with a session header).
    pub(crate) fn into_summary(self) -> SessionSummary {
        SessionSummary {
            has_header: true,
            id: self.id,
            cwd: self.cwd,
            name: self.name,
            parent_session_path: self.parent_session,
            created: self.created,
            modified: if self.modified_from_file {
                Modified::FileMtime
            } else {
                Modified::At(self.modified)
            },
            message_count: self.message_count,
            first_message: self.first_message,
            first_message_truncated: self.first_message_truncated,
            reference_would_drop: self.reference_would_drop,
            session_state: self.session_state,
            agent_status: self.agent_status,
        }
    }
}

/// A record with every field set, as JSON text: `docs/format.md` §3 reproduces it
/// verbatim (a test ties the two, so a renamed or added field fails until the spec
/// and [`VERSION`] follow).
pub(crate) fn example_record() -> String {
    let r = RecordV4 {
        file: "019b78c9-fbe6-7763-8bf4-9ef1fa1dbd86.jsonl".into(),
        dev: 2049,
        ino: 1234567,
        len: 14504,
        ctime: Some((1767258311, 959000123)),
        journal_id: "282eaab8-4350-eb07-bbb9-794742a5fd9e".into(),
        last_offset: 14424,
        last_seq: 32,
        last_check: "fe0d23da714871e5".into(),
        summary: SummaryV4 {
            id: Some("019b78c9-fbe6-7763-8bf4-9ef1fa1dbd86".into()),
            cwd: "/home/dev/project".into(),
            name: Some("refactor".into()),
            parent_session: Some(serde_json::Value::Null),
            created: Some(1767258061798),
            modified: Some(1767258311959),
            modified_from_file: false,
            message_count: 14,
            first_message: "fix the parser".into(),
            first_message_truncated: false,
            reference_would_drop: None,
            session_state: Some("active".into()),
            agent_status: Some(serde_json::json!({"summary": "tests pass", "taskState": "done"})),
        },
    };
    serde_json::to_string(&r).unwrap_or_default()
}
