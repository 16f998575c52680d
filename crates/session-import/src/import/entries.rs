//! The lines after the header: each validated, migrated if the source's version
//! requires it, and queued as its record's frame (its source line noted in the
//! retention table, written after the last record); everything but the last frame
//! written (the caller writes that frame, then syncs).

use std::path::Path;

use serde_json::Value;
use session_journal::{FrameKind, Tag};
use session_types::EntryType;

use super::Run;
use super::batch::{Batch, Out, Sink};
use super::header::Header;
use super::parse::{
    Line, Parsed, is_blank, odd_trailing_whitespace, parse_line, parse_map, session_state,
    trailing_whitespace_refused,
};
use crate::error::ImportError;
use crate::format::{
    BATCH_BYTES, ENTRY, KIND_IMPORT_SOURCE, KIND_ORIGINAL_HEADER, KIND_RETENTION_TABLE,
    SESSION_HEADER, SourceRecord, id_tag,
};
use crate::lines::{BACKGROUND_HASH_MIN, LineMeta, LineReader};
use crate::migrate::{Slot, migrate_header, migrate_v1_entry, rename_hook_message, to_js_json};
use crate::outcome::IssueKind;

impl Run<'_> {
    /// Streams the header, the source record and every entry into `out`'s writer, all
    /// but the last frame, without syncing, feeding its index; returns `out` (the
    /// writer still holding the temporary's lock) and the batch holding the last
    /// frame, which is written after the caller's sync ([`Batch::write_last`]).
    pub(super) fn write_all(
        &mut self,
        reader: &mut LineReader<'_>,
        out: Out,
        tmp: &Path,
        header: Header,
        shown_source: &Path,
        hash_hex: &str,
    ) -> Result<(Out, Batch), ImportError> {
        let mut batch = self.first_frames(&header, shown_source, hash_hex);
        let mut sink = Sink::new(out, tmp, self.bytes >= BACKGROUND_HASH_MIN)?;
        // The header frame has seq 0 and each later frame the next: the records start
        // after the frames queued so far.
        let first_seq = batch.len() as u64 + 1;
        // A record followed by JavaScript whitespace that JSON refuses (U+00A0…) is the
        // reference's only if nothing but whitespace follows it (its `trim()` of the
        // whole file removes the whitespace; `JSON.parse` refuses it anywhere else): it
        // waits here until the next non-blank line or the end of the file decides.
        let mut pending: Option<(LineMeta, Vec<u8>)> = None;
        let header_line = header.line.number;
        let header_trail = header.trail;
        while let Some((meta, buf)) = reader.next_line()? {
            if is_blank(buf) {
                self.count_blank(meta);
                continue;
            }
            if header_trail {
                return Err(ImportError::NoHeader {
                    path: self.path.to_path_buf(),
                    line: header_line,
                    found: "a session header followed by whitespace that JSON.parse refuses (only the file's end may hold it)".to_owned(),
                });
            }
            if let Some((m, line)) = pending.take() {
                self.issue(m.number, trailing_whitespace_refused(&line));
            }
            if meta.crlf {
                self.crlf_lines += 1;
            }
            if odd_trailing_whitespace(buf) {
                pending = Some((meta, buf.to_vec()));
                continue;
            }
            self.take_line(buf, meta, &mut batch);
            if batch.bytes.len() >= BATCH_BYTES {
                sink.flush_all_but_last(&mut batch, tmp, meta.number)?;
            }
        }
        if header_trail {
            self.issue(header_line, IssueKind::OuterWhitespace { place: "after" });
        }
        if let Some((meta, buf)) = pending {
            self.take_line(&buf, meta, &mut batch);
        }
        // The retention table follows the last record (docs/format.md §4).
        for payload in self.table.payloads(first_seq) {
            batch.push(KIND_RETENTION_TABLE, Tag::default(), &payload);
        }
        sink.flush_all_but_last(&mut batch, tmp, reader.lines())?;
        let out = sink.finish()?;
        let found = reader.finish_hash()?;
        if found != self.scan_hash {
            return Err(ImportError::SourceChanged {
                path: self.path.to_path_buf(),
                expected: self.scan_hash.to_hex().to_string(),
                found: found.to_hex().to_string(),
            });
        }
        let tree = std::mem::take(&mut self.tree);
        for issue in tree.finish() {
            self.issue(issue.line, issue.kind);
        }
        self.issues.sort_by_key(|i| i.line);
        Ok((out, batch))
    }

    /// The frames before the entries: the session header record, the import's source
    /// record, and the original header record when the session got another id.
    fn first_frames(&self, header: &Header, shown_source: &Path, hash_hex: &str) -> Batch {
        let source_record = SourceRecord {
            record_type: "import_source".to_owned(),
            path: shown_source.to_string_lossy().into_owned(),
            blake3: hash_hex.to_owned(),
            source_version: header.version,
            bytes: self.bytes,
            header_line: header.line.number,
            header_changed: header.changed,
            original_id: header.original.as_ref().map(|_| header.id.clone()),
        };
        let mut batch = Batch::default();
        batch.push(SESSION_HEADER, Tag::default(), &header.payload);
        batch.push(
            KIND_IMPORT_SOURCE,
            Tag::default(),
            serde_json::to_string(&source_record)
                .unwrap_or_default()
                .as_bytes(),
        );
        if let Some(original) = &header.original {
            batch.push(KIND_ORIGINAL_HEADER, Tag::default(), original);
        }
        batch
    }

    /// Takes one non-blank line after the header: validates it, migrates it if the
    /// source version requires, queues its record frame and notes its line.
    fn take_line(&mut self, buf: &[u8], meta: LineMeta, batch: &mut Batch) {
        let n = meta.number;
        let line = match parse_line(buf, meta, false) {
            Parsed::Bad(IssueKind::NotAnObject) => {
                if let Some(v1) = &mut self.v1 {
                    // JSON.parse takes it: it holds a slot in the v1 index array, but
                    // the reference's v1 migration cannot keep it (docs/context.md D12).
                    v1.slots.push(Slot::Other);
                } else if String::from_utf8_lossy(buf).trim() != "null" {
                    // JSON.parse takes it and getEntries() holds it (the default leaf
                    // when it is last): kept byte-exact as an entry without an id. A
                    // `null` makes the reference's open throw; it stays skipped.
                    self.entries += 1;
                    self.issue(n, IssueKind::NotAnObjectKept);
                    batch.push(ENTRY, Tag::default(), buf);
                    self.table.push(n, false);
                    return;
                }
                self.issue(n, IssueKind::NotAnObject);
                return;
            }
            Parsed::Bad(kind) => {
                self.issue(n, kind);
                return;
            }
            Parsed::Object(line) => line,
        };
        self.note_line(buf, n, &line);
        self.entries += 1;
        if self.needs_change(&line) {
            let (is_session, surrogate) = (line.env.is_header(), line.surrogate);
            drop(line);
            self.take_migrated(buf, n, is_session, surrogate, batch);
        } else {
            self.take_verbatim(buf, n, &line, batch);
        }
    }

    /// Reports what is odd about a line that reads as an object: whitespace after
    /// it, invalid UTF-8, a second header, a lifecycle claim, an unknown type.
    fn note_line(&mut self, buf: &[u8], n: u64, line: &Line<'_>) {
        if line.trail {
            // Only the file's last record gets here with it (see `write_all`).
            self.issue(n, IssueKind::OuterWhitespace { place: "after" });
        }
        if let Some(column) = line.invalid_utf8 {
            self.issue(n, IssueKind::InvalidUtf8 { column });
        }
        let env = &line.env;
        match env.known_type() {
            None if env.is_header() => self.issue(n, IssueKind::ExtraHeader),
            Some(EntryType::SessionState) => {
                let state = session_state(buf);
                self.issue(n, IssueKind::LifecycleClaim { state });
            }
            Some(_) => {}
            None => {
                let entry_type = env.entry_type.as_deref().map(str::to_owned);
                self.issue(n, IssueKind::UnknownType { entry_type });
            }
        }
    }

    /// Whether the source's version makes this line change on import (v1: every
    /// line; v2: headers and `hookMessage` messages).
    fn needs_change(&self, line: &Line<'_>) -> bool {
        let env = &line.env;
        match self.version {
            1 => true,
            2 => {
                env.is_header()
                    || (env.known_type() == Some(EntryType::Message)
                        && env.role() == Some("hookMessage"))
            }
            _ => false,
        }
    }

    /// Queues a line that needs no change, byte for byte.
    fn take_verbatim(&mut self, buf: &[u8], n: u64, line: &Line<'_>, batch: &mut Batch) {
        let env = &line.env;
        let is_session = env.is_header();
        if let Some(column) = line.surrogate {
            self.issue(n, IssueKind::LoneSurrogate { column });
        }
        let (kind, tag) = kind_and_tag(is_session, env.id.as_deref());
        if !is_session {
            match env.id.as_deref() {
                Some(id) => {
                    // The frame's tag is the id's key (one hash for both).
                    let parent = env.parent_id.as_deref();
                    if let Some(dup) = self.tree.add_keyed(n, id, tag.0, parent) {
                        self.issue(n, dup);
                    }
                }
                None => self.issue(n, IssueKind::MissingId),
            }
        }
        batch.push_scanned(kind, tag, buf, line.scanned);
        self.table.push(n, false);
    }

    /// Migrates a line as the reference does for its source version and queues the
    /// result.
    fn take_migrated(
        &mut self,
        buf: &[u8],
        n: u64,
        is_session: bool,
        surrogate: Option<usize>,
        batch: &mut Batch,
    ) {
        let Some(mut map) = parse_map(buf) else {
            self.entries -= 1;
            self.issue(
                n,
                IssueKind::InvalidJson {
                    column: 1,
                    message: format!(
                        "nests deeper than the {} levels a record may have: not migrated",
                        session_types::json::MAX_READ_DEPTH
                    ),
                },
            );
            return;
        };
        if let Some(column) = surrogate {
            self.issue(n, IssueKind::LoneSurrogateReplaced { column });
        }
        if is_session {
            migrate_header(&mut map);
            if let Some(v1) = &mut self.v1 {
                v1.slots.push(Slot::Session);
            }
            self.issue(n, IssueKind::HeaderVersionSet { from: self.version });
        } else if let Some(v1) = &mut self.v1 {
            let notes = migrate_v1_entry(&mut map, n, v1);
            self.ids_assigned += 1;
            for note in notes {
                self.issue(n, note);
            }
            let id = map.get("id").and_then(Value::as_str).unwrap_or_default();
            let parent = map.get("parentId").and_then(Value::as_str);
            // Derived ids are unique within the file: no duplicate can arise.
            let _ = self.tree.add(n, id, parent);
        } else {
            if rename_hook_message(&mut map) {
                self.issue(n, IssueKind::HookMessageRenamed);
            }
            match map.get("id").and_then(Value::as_str) {
                Some(id) => {
                    let parent = map.get("parentId").and_then(Value::as_str);
                    if let Some(dup) = self.tree.add(n, id, parent) {
                        self.issue(n, dup);
                    }
                }
                None => self.issue(n, IssueKind::MissingId),
            }
        }
        let (kind, tag) = kind_and_tag(is_session, map.get("id").and_then(Value::as_str));
        batch.push(kind, tag, to_js_json(map).as_bytes());
        self.table.push(n, true);
    }
}

/// A later `session` line is a header frame (readers take the first one); an entry
/// frame is tagged with its id.
fn kind_and_tag(is_session: bool, id: Option<&str>) -> (FrameKind, Tag) {
    match (is_session, id) {
        (true, _) => (SESSION_HEADER, Tag::default()),
        (false, Some(id)) => (ENTRY, id_tag(id)),
        (false, None) => (ENTRY, Tag::default()),
    }
}
