//! The catalog's bytes (`docs/format.md` §3, "Listing catalog"): a checked header,
//! then framed records, each a binary [`Record`] (version 6).
//!
//! The record type here is the wire format and nothing else: it is converted to and
//! from [`SessionSummary`] field by field, so renaming a field of a public type cannot
//! change what is on disk, and changing the layout here is a format change (bump
//! [`VERSION`]; a test ties [`example_record`] to the spec).
//!
//! A record is a fixed part of [`FIXED_LEN`] bytes (numbers, little-endian) and then
//! its variable fields in a fixed order, each a `u32` length and that many bytes
//! ([`ABSENT`] for an optional field that is absent): decoding one is a few bounds
//! checks and copies, no parse of text (JSON values keep their JSON text, and the
//! common case, a string without escapes, is read without a JSON parser).

use session_journal::vfs::ChangeTime;

use crate::summary::{Modified, SessionSummary};

/// The first 8 bytes of a catalog.
pub(crate) const MAGIC: [u8; 8] = [0x89, b'B', b'C', b'S', b'C', b'A', b'T', b'\n'];
/// The catalog format version.
pub(crate) const VERSION: u32 = 6;
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
/// The length of a record's fixed part (before its variable fields).
pub(crate) const FIXED_LEN: usize = 104;
/// A variable field's length meaning "absent" (optional fields only).
pub(crate) const ABSENT: u32 = u32::MAX;
/// A time field's value meaning "none" (Invalid Date; no stamp).
const NO_TIME: i64 = i64::MIN;
/// `ctime_nanos` meaning "the file system keeps no change time".
const NO_CTIME: u32 = u32::MAX;
/// Record flag: neither the entries nor the header gave a time (the file's mtime
/// applies; `modified` is then [`NO_TIME`]).
const FLAG_MODIFIED_FROM_FILE: u32 = 1;
/// Record flag: the first message is longer than its excerpt.
const FLAG_FIRST_MESSAGE_TRUNCATED: u32 = 2;

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

fn u32_at(b: &[u8], i: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[i..i + 4]);
    u32::from_le_bytes(x)
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[i..i + 8]);
    u64::from_le_bytes(x)
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        // 12..16 flags = 0
        let (secs, nanos) = match self.stamp {
            Some(t) => (t.secs, t.nanos),
            None => (NO_TIME, 0),
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
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(format!(
                "catalog version {version} unsupported (supported: {VERSION})"
            ));
        }
        if u64_at(b, 40) != xxhash_rust::xxh3::xxh3_64(&b[..40]) {
            return Err("catalog header checksum mismatch".into());
        }
        if u32_at(b, 12) != 0 || u32_at(b, 28) != 0 {
            return Err("catalog header has unknown flags".into());
        }
        let secs = u64_at(b, 16) as i64;
        let nanos = u32_at(b, 24);
        let stamp =
            (secs != NO_TIME && nanos < 1_000_000_000).then_some(ChangeTime { secs, nanos });
        let base_end = u64_at(b, 32);
        if base_end < HEADER_LEN as u64 || base_end > file_len {
            return Err(format!("catalog base end {base_end} is outside the file"));
        }
        Ok(Header { stamp, base_end })
    }
}

/// Appends one record framed for the file to `out`: length, XXH3-64 of the payload,
/// payload. Returns false (and leaves `out` as it was) when the payload would be
/// longer than [`RECORD_MAX`].
pub(crate) fn frame_into(record: &Record, out: &mut Vec<u8>) -> bool {
    frame_parts_into(&record.file, &record.key, &record.summary, out)
}

/// [`frame_into`] for the record of `file` with these `key` and `summary`.
pub(crate) fn frame_parts_into(
    file: &str,
    key: &Key,
    summary: &SessionSummary,
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    out.extend_from_slice(&[0u8; FRAME_PREFIX_LEN]);
    Record::encode_parts(file, key, summary, out);
    let len = out.len() - start - FRAME_PREFIX_LEN;
    if len > RECORD_MAX {
        out.truncate(start);
        return false;
    }
    let check = xxhash_rust::xxh3::xxh3_64(&out[start + FRAME_PREFIX_LEN..]);
    out[start..start + 4].copy_from_slice(&(len as u32).to_le_bytes());
    out[start + 4..start + FRAME_PREFIX_LEN].copy_from_slice(&check.to_le_bytes());
    true
}

/// One record framed for the file (see [`frame_into`]).
#[cfg(test)]
pub(crate) fn frame(record: &Record) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    frame_into(record, &mut out).then_some(out)
}

/// A decoded catalog: records in file order, each with whether it was written with
/// the header (stamped) or appended later.
pub(crate) struct Decoded {
    pub(crate) header: Header,
    pub(crate) records: Vec<(Record, bool)>,
    /// Why decoding stopped before the end of the file, if it did (a torn or
    /// damaged record: it and everything after it are ignored), with whether that
    /// was inside the base records.
    pub(crate) stopped: Option<(String, bool)>,
}

/// Decodes a whole catalog file.
pub(crate) fn decode(bytes: &[u8]) -> Result<Decoded, String> {
    let mut records = Vec::new();
    let (header, stopped) = decode_with(
        bytes.len() as u64,
        |at, buf| {
            let at = usize::try_from(at).unwrap_or(usize::MAX).min(bytes.len());
            let n = buf.len().min(bytes.len() - at);
            buf[..n].copy_from_slice(&bytes[at..at + n]);
            Ok(n)
        },
        |r, base| records.push((r, base)),
    )?;
    Ok(Decoded {
        header,
        records,
        stopped,
    })
}

/// How much of a catalog is held in memory at once while it is decoded: a window
/// that always fits the largest frame, reused from the first record to the last (a
/// catalog of 100,000 sessions is tens of MB; its decoded records are all a listing
/// keeps).
const WINDOW: usize = 256 * 1024;

/// Decodes a catalog of `len` bytes read through `read_at(offset, buf)` (a short
/// count only at the end) in windows of at most [`WINDOW`] bytes, handing each
/// record to `on_record` with whether it is a base record. Returns the header and
/// why decoding stopped before the end, if it did (see [`Decoded::stopped`]); `Err`
/// when the header is unusable or the file cannot be read.
pub(crate) fn decode_with(
    len: u64,
    mut read_at: impl FnMut(u64, &mut [u8]) -> std::io::Result<usize>,
    mut on_record: impl FnMut(Record, bool),
) -> Result<(Header, Option<(String, bool)>), String> {
    // Fills `buf` from `at` as far as the file goes; the count read.
    let mut fill = |at: u64, buf: &mut [u8]| -> Result<usize, String> {
        let mut n = 0;
        while n < buf.len() {
            match read_at(at + n as u64, &mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(format!(
                        "reading the catalog at offset {}: {e}",
                        at + n as u64
                    ));
                }
            }
        }
        Ok(n)
    };
    let mut head = [0u8; HEADER_LEN];
    let got = fill(0, &mut head)?;
    let header = Header::decode(&head[..got], len)?;
    let size = usize::try_from(len).unwrap_or(usize::MAX).min(WINDOW);
    let mut window = vec![0u8; size];
    // `window[lo..hi]` holds the file's bytes from `base`.
    let (mut base, mut lo, mut hi) = (HEADER_LEN as u64, 0usize, 0usize);
    let mut stopped = None;
    loop {
        let at = base + lo as u64;
        if at >= len {
            break;
        }
        let in_base = at < header.base_end;
        let bad = |why: String| Some((format!("catalog record at offset {at}: {why}"), in_base));
        // The frame's prefix, then its whole payload, in the window (refilled from
        // `at` when they are not).
        let mut need = FRAME_PREFIX_LEN;
        let mut payload_len = None;
        loop {
            if hi - lo >= need {
                if payload_len.is_some() {
                    break;
                }
                let n = u32_at(&window, lo) as usize;
                if n > RECORD_MAX {
                    break;
                }
                payload_len = Some(n);
                need = FRAME_PREFIX_LEN + n;
                continue;
            }
            // Refill: move what is left to the front and read after it.
            window.copy_within(lo..hi, 0);
            base += lo as u64;
            hi -= lo;
            lo = 0;
            let more = fill(base + hi as u64, &mut window[hi..])?;
            if more == 0 {
                break;
            }
            hi += more;
        }
        let n = u32_at_or_zero(&window[lo..hi]) as usize;
        if hi - lo < FRAME_PREFIX_LEN {
            stopped = bad("torn".into());
            break;
        }
        if n > RECORD_MAX || hi - lo < FRAME_PREFIX_LEN + n {
            stopped = bad(format!("length {n} runs past the end or the limit"));
            break;
        }
        let frame = &window[lo..lo + FRAME_PREFIX_LEN + n];
        let payload = &frame[FRAME_PREFIX_LEN..];
        if xxhash_rust::xxh3::xxh3_64(payload) != u64_at(frame, 4) {
            stopped = bad("checksum mismatch".into());
            break;
        }
        match Record::decode(payload) {
            Ok(r) => on_record(r, in_base),
            Err(e) => {
                stopped = bad(format!("not a record: {e}"));
                break;
            }
        }
        lo += FRAME_PREFIX_LEN + n;
    }
    Ok((header, stopped))
}

/// The little-endian `u32` at the start of `b`, or 0 when `b` is shorter.
fn u32_at_or_zero(b: &[u8]) -> u32 {
    if b.len() < 4 { 0 } else { u32_at(b, 0) }
}

/// One journal's record (catalog version 5).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    /// The journal's file name in the directory (`<session-id>.jsonl`).
    pub(crate) file: String,
    /// What says whether the record still describes its journal.
    pub(crate) key: Key,
    /// The listing summary at `key.len` (records are only written for journals with
    /// a session header: `has_header` is always true).
    pub(crate) summary: SessionSummary,
}

/// A record's freshness fields: the journal's status when the record was made and
/// the last frame it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    /// `st_dev`, `st_ino`, `st_size` of the journal when the record was made.
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) len: u64,
    /// `st_ctime`; `None` where the file system keeps none (the record is then
    /// always checked by content).
    pub(crate) ctime: Option<ChangeTime>,
    /// The journal's id.
    pub(crate) journal_id: [u8; 16],
    /// The last frame the record covers (it ends at `len`): offset, seq and body
    /// check.
    pub(crate) last_offset: u64,
    pub(crate) last_seq: u64,
    pub(crate) last_check: [u8; 8],
}

/// Appends a variable field: length and bytes, or [`ABSENT`].
fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        // Records longer than RECORD_MAX are dropped by `frame_into`; a field
        // longer than u32 can hold would be too, so it is cut to what the length says
        // and the record is refused by its length.
        Some(b) => {
            let n = u32::try_from(b.len()).unwrap_or(ABSENT - 1);
            out.extend_from_slice(&n.to_le_bytes());
            out.extend_from_slice(&b[..n as usize]);
        }
        None => out.extend_from_slice(&ABSENT.to_le_bytes()),
    }
}

fn put_json(out: &mut Vec<u8>, v: Option<&serde_json::Value>) {
    match v {
        Some(v) => {
            let text = serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec());
            put_bytes(out, Some(&text));
        }
        None => put_bytes(out, None),
    }
}

/// Reads a record's variable fields in order.
struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Fields<'a> {
    fn next(&mut self, what: &str) -> Result<Option<&'a [u8]>, String> {
        let Some(n) = self.rest.get(..4) else {
            return Err(format!("{what}: torn length"));
        };
        let n = u32_at(n, 0);
        if n == ABSENT {
            self.rest = &self.rest[4..];
            return Ok(None);
        }
        let Some(b) = self.rest.get(4..4 + n as usize) else {
            return Err(format!("{what}: {n} bytes run past the record"));
        };
        self.rest = &self.rest[4 + n as usize..];
        Ok(Some(b))
    }

    fn str_opt(&mut self, what: &str) -> Result<Option<String>, String> {
        match self.next(what)? {
            Some(b) => std::str::from_utf8(b)
                .map(|s| Some(s.to_owned()))
                .map_err(|e| format!("{what}: {e}")),
            None => Ok(None),
        }
    }

    fn str(&mut self, what: &str) -> Result<String, String> {
        self.str_opt(what)?
            .ok_or_else(|| format!("{what}: absent but required"))
    }

    fn json_opt(&mut self, what: &str) -> Result<Option<serde_json::Value>, String> {
        let Some(b) = self.next(what)? else {
            return Ok(None);
        };
        // A string without escapes or control characters (the usual id) needs no
        // parser: its text between the quotes is its value.
        if let [b'"', inner @ .., b'"'] = b
            && !inner.iter().any(|&c| c == b'\\' || c == b'"' || c < 0x20)
            && let Ok(s) = std::str::from_utf8(inner)
        {
            return Ok(Some(serde_json::Value::String(s.to_owned())));
        }
        serde_json::from_slice(b)
            .map(Some)
            .map_err(|e| format!("{what}: {e}"))
    }
}

impl Record {
    /// Appends the payload of the record of `file` (`docs/format.md` §3) to `out`.
    pub(crate) fn encode_parts(file: &str, k: &Key, s: &SessionSummary, out: &mut Vec<u8>) {
        let (ctime_secs, ctime_nanos) = match k.ctime {
            Some(t) => (t.secs, t.nanos),
            None => (0, NO_CTIME),
        };
        let (modified, from_file) = match s.modified {
            Modified::At(t) => (t.unwrap_or(NO_TIME), false),
            Modified::FileMtime => (NO_TIME, true),
        };
        let mut flags = 0u32;
        if from_file {
            flags |= FLAG_MODIFIED_FROM_FILE;
        }
        if s.first_message_truncated {
            flags |= FLAG_FIRST_MESSAGE_TRUNCATED;
        }
        out.reserve(FIXED_LEN + 64 + file.len() + s.cwd.len() + s.first_message.len());
        out.extend_from_slice(&k.dev.to_le_bytes());
        out.extend_from_slice(&k.ino.to_le_bytes());
        out.extend_from_slice(&k.len.to_le_bytes());
        out.extend_from_slice(&ctime_secs.to_le_bytes());
        out.extend_from_slice(&ctime_nanos.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&k.journal_id);
        out.extend_from_slice(&k.last_offset.to_le_bytes());
        out.extend_from_slice(&k.last_seq.to_le_bytes());
        out.extend_from_slice(&k.last_check);
        out.extend_from_slice(&s.created.unwrap_or(NO_TIME).to_le_bytes());
        out.extend_from_slice(&modified.to_le_bytes());
        out.extend_from_slice(&s.message_count.to_le_bytes());
        put_bytes(out, Some(file.as_bytes()));
        put_bytes(out, Some(s.cwd.as_bytes()));
        put_bytes(out, s.name.as_deref().map(str::as_bytes));
        put_bytes(out, Some(s.first_message.as_bytes()));
        put_bytes(out, s.reference_would_drop.as_deref().map(str::as_bytes));
        put_bytes(out, s.session_state.as_deref().map(str::as_bytes));
        put_json(out, s.id.as_ref());
        put_json(out, s.parent_session_path.as_deref());
        put_json(out, s.agent_status.as_deref());
    }

    /// Decodes one record's payload (all of it: trailing bytes are an error).
    pub(crate) fn decode(b: &[u8]) -> Result<Self, String> {
        let Some(fixed) = b.get(..FIXED_LEN) else {
            return Err(format!("{} bytes, shorter than {FIXED_LEN}", b.len()));
        };
        let i64_at = |i: usize| u64_at(fixed, i) as i64;
        let time = |t: i64| (t != NO_TIME).then_some(t);
        let flags = u32_at(fixed, 36);
        if flags & !(FLAG_MODIFIED_FROM_FILE | FLAG_FIRST_MESSAGE_TRUNCATED) != 0 {
            return Err(format!("unknown flags {flags:#x}"));
        }
        let ctime = match u32_at(fixed, 32) {
            NO_CTIME => None,
            n if n < 1_000_000_000 => Some(ChangeTime {
                secs: i64_at(24),
                nanos: n,
            }),
            n => return Err(format!("ctime nanoseconds {n} out of range")),
        };
        let mut journal_id = [0u8; 16];
        journal_id.copy_from_slice(&fixed[40..56]);
        let mut last_check = [0u8; 8];
        last_check.copy_from_slice(&fixed[72..80]);
        let mut f = Fields {
            rest: &b[FIXED_LEN..],
        };
        let file = f.str("file")?;
        let cwd = f.str("cwd")?;
        let name = f.str_opt("name")?;
        let first_message = f.str("first_message")?;
        let reference_would_drop = f.str_opt("reference_would_drop")?;
        let session_state = f.str_opt("session_state")?; // tidy: not an entry type (a field name in errors)
        let id = f.json_opt("id")?;
        let parent_session_path = f.json_opt("parent_session")?;
        let agent_status = f.json_opt("agent_status")?; // tidy: not an entry type (a field name in errors)
        if !f.rest.is_empty() {
            return Err(format!("{} bytes after the last field", f.rest.len()));
        }
        Ok(Record {
            file,
            key: Key {
                dev: u64_at(fixed, 0),
                ino: u64_at(fixed, 8),
                len: u64_at(fixed, 16),
                ctime,
                journal_id,
                last_offset: u64_at(fixed, 56),
                last_seq: u64_at(fixed, 64),
                last_check,
            },
            summary: SessionSummary {
                has_header: true,
                id,
                cwd,
                name,
                parent_session_path: parent_session_path.map(Box::new),
                created: time(i64_at(80)),
                modified: if flags & FLAG_MODIFIED_FROM_FILE != 0 {
                    Modified::FileMtime
                } else {
                    Modified::At(time(i64_at(88)))
                },
                message_count: u64_at(fixed, 96),
                first_message,
                first_message_truncated: flags & FLAG_FIRST_MESSAGE_TRUNCATED != 0,
                reference_would_drop,
                session_state,
                agent_status: agent_status.map(Box::new),
            },
        })
    }
}

/// The example record of `docs/format.md` §3.
fn example() -> Record {
    Record {
        file: "019b78c9-fbe6-7763-8bf4-9ef1fa1dbd86.jsonl".into(),
        key: Key {
            dev: 2049,
            ino: 1234567,
            len: 14504,
            ctime: Some(ChangeTime {
                secs: 1767258311,
                nanos: 959000123,
            }),
            journal_id: [
                0x28, 0x2e, 0xaa, 0xb8, 0x43, 0x50, 0xeb, 0x07, 0xbb, 0xb9, 0x79, 0x47, 0x42, 0xa5,
                0xfd, 0x9e,
            ],
            last_offset: 14424,
            last_seq: 32,
            last_check: [0xfe, 0x0d, 0x23, 0xda, 0x71, 0x48, 0x71, 0xe5],
        },
        summary: SessionSummary {
            has_header: true,
            id: Some("019b78c9-fbe6-7763-8bf4-9ef1fa1dbd86".into()),
            cwd: "/home/dev/project".into(),
            name: Some("refactor".into()),
            parent_session_path: Some(Box::new(serde_json::Value::Null)),
            created: Some(1767258061798),
            modified: Modified::At(Some(1767258311959)),
            message_count: 14,
            first_message: "fix the parser".into(),
            first_message_truncated: false,
            reference_would_drop: None,
            session_state: Some("active".into()),
            agent_status: Some(Box::new(
                serde_json::json!({"summary": "tests pass", "taskState": "done"}),
            )),
        },
    }
}

/// A framed record with every field set, as an annotated dump (offset within the
/// frame, the bytes in hex, the field): `docs/format.md` §3 reproduces it verbatim (a
/// test ties the two, so a moved, resized or added field fails until the spec and
/// [`VERSION`] follow).
pub(crate) fn example_record() -> String {
    let mut framed = Vec::new();
    frame_into(&example(), &mut framed);
    // The fields in order: name and width (0: a variable field, its length then bytes).
    let fields: [(&str, usize); 24] = [
        ("len (u32: payload bytes)", 4),
        ("check (XXH3-64 of the payload)", 8),
        ("dev (u64)", 8),
        ("ino (u64)", 8),
        ("len (u64)", 8),
        ("ctime_secs (i64)", 8),
        ("ctime_nanos (u32)", 4),
        ("flags (u32)", 4),
        ("journal_id (16 bytes)", 16),
        ("last_offset (u64)", 8),
        ("last_seq (u64)", 8),
        ("last_check (8 bytes)", 8),
        ("created (i64 ms)", 8),
        ("modified (i64 ms)", 8),
        ("message_count (u64)", 8),
        ("file", 0),
        ("cwd", 0),
        ("name", 0),
        ("first_message", 0),
        ("reference_would_drop", 0),
        ("session_state", 0), // tidy: not an entry type (a field of the spec's dump)
        ("id (JSON)", 0),
        ("parent_session (JSON)", 0),
        ("agent_status (JSON)", 0),
    ];
    let hex = |b: &[u8]| {
        b.iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::new();
    let mut at = 0;
    for (name, width) in fields {
        let n = if width > 0 {
            width
        } else {
            let len = u32_at(&framed, at);
            4 + if len == ABSENT { 0 } else { len as usize }
        };
        let b = &framed[at..at + n];
        let shown = if width > 0 {
            hex(b)
        } else if n == 4 {
            format!("{}  (absent)", hex(b))
        } else {
            format!(
                "{} + {} bytes: {}",
                hex(&b[..4]),
                n - 4,
                String::from_utf8_lossy(&b[4..])
            )
        };
        out.push_str(&format!("{at:>4}  {name:<31} {shown}\n"));
        at += n;
    }
    out.push_str(&format!("{at:>4}  (end of the record)\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_with_an_invalid_date_round_trips() {
        let mut r = example();
        r.summary.modified = Modified::At(None);
        let framed = frame(&r).expect("small record");
        assert_eq!(
            Record::decode(&framed[FRAME_PREFIX_LEN..]).expect("decodes"),
            r
        );
    }

    #[test]
    fn a_record_round_trips_and_every_cut_or_flip_is_refused_or_decoded_safely() {
        let r = example();
        let framed = frame(&r).expect("small record");
        let payload = &framed[FRAME_PREFIX_LEN..];
        assert_eq!(Record::decode(payload).expect("decodes"), r);
        for cut in 0..payload.len() {
            assert!(Record::decode(&payload[..cut]).is_err(), "cut at {cut}");
        }
        // Any byte changed decodes to something or is refused; never a panic.
        for i in 0..payload.len() {
            let mut b = payload.to_vec();
            b[i] ^= 0xff;
            let _ = Record::decode(&b);
        }
    }

    #[test]
    fn absent_optional_fields_and_non_string_json_round_trip() {
        let mut r = example();
        r.key.ctime = None;
        let s = &mut r.summary;
        s.id = Some(serde_json::json!(42));
        s.cwd = String::new();
        s.name = None;
        s.parent_session_path = Some(Box::new(serde_json::json!("a \"quoted\" path\n")));
        s.created = None;
        s.modified = Modified::FileMtime;
        s.first_message = "(no messages)".into();
        s.first_message_truncated = true;
        s.reference_would_drop = Some("bad timestamp".into());
        s.session_state = None;
        s.agent_status = None;
        let framed = frame(&r).expect("small record");
        assert_eq!(
            Record::decode(&framed[FRAME_PREFIX_LEN..]).expect("decodes"),
            r
        );
    }

    /// A catalog larger than the decoding window, read in short pieces, decodes to
    /// what the whole bytes decode to; cut anywhere, it stops at the cut record.
    #[test]
    fn a_catalog_decodes_the_same_through_the_window_and_short_reads() {
        let mut bytes = vec![0u8; HEADER_LEN];
        let mut r = example();
        let n = 3 * WINDOW / 300;
        for i in 0..n {
            r.file = format!("{i:08}.jsonl");
            r.summary.first_message = "x".repeat(i % 700);
            assert!(frame_into(&r, &mut bytes));
        }
        let base_end = bytes.len() as u64;
        let header = Header {
            stamp: None,
            base_end,
        };
        bytes[..HEADER_LEN].copy_from_slice(&header.encode());
        let whole = decode(&bytes).expect("decodes");
        assert_eq!(whole.records.len(), n);
        assert!(whole.stopped.is_none());
        let mut streamed = Vec::new();
        let (h, stopped) = decode_with(
            bytes.len() as u64,
            |at, buf| {
                let at = at as usize;
                let k = buf.len().min(997).min(bytes.len() - at);
                buf[..k].copy_from_slice(&bytes[at..at + k]);
                Ok(k)
            },
            |r, base| streamed.push((r, base)),
        )
        .expect("decodes");
        assert_eq!(h, header);
        assert!(stopped.is_none());
        assert!(streamed == whole.records);
        // Cut inside the last record: everything before it serves.
        let mut cut = bytes[..bytes.len() - 5].to_vec();
        let appended = Header {
            stamp: None,
            base_end: HEADER_LEN as u64,
        };
        cut[..HEADER_LEN].copy_from_slice(&appended.encode());
        let d = decode(&cut).expect("header is fine");
        assert_eq!(d.records.len(), n - 1);
        assert!(matches!(d.stopped, Some((_, false))));
    }

    #[test]
    fn a_record_over_the_limit_is_not_framed() {
        let mut r = example();
        r.summary.cwd = "x".repeat(RECORD_MAX);
        let mut out = vec![1, 2, 3];
        assert!(!frame_into(&r, &mut out));
        assert_eq!(out, [1, 2, 3]);
    }
}
