//! The session header: the first record, which decides the source's version (and
//! whether its ids must be assigned, v1) and is migrated to v3 when older.

use super::Run;
use super::parse::{Line, Parsed, describe, is_blank, parse_line, parse_map};
use crate::error::ImportError;
use crate::lines::{LineMeta, LineReader};
use crate::migrate::{V1State, header_version, migrate_header, to_js_json};
use crate::outcome::IssueKind;

/// The session header as read from the source.
pub(super) struct Header {
    pub(super) id: String,
    pub(super) version: u32,
    pub(super) line: LineMeta,
    pub(super) payload: Vec<u8>,
    pub(super) changed: bool,
    /// JavaScript whitespace after the header record: only the file's end may hold it.
    pub(super) trail: bool,
    /// The header record as it was before [`Header::assign_id`] gave it another id.
    pub(super) original: Option<Vec<u8>>,
}

impl Header {
    /// Makes `id` the header record's `id`: the import assigned the session this id
    /// because the header's own was taken or unsafe as a file name, and every surface
    /// (listings, `getSessionId()`, the journal's name) names a session by one id. The
    /// record is re-serialised as migration does (keys in place, numbers as JavaScript
    /// prints them); its previous bytes are kept in [`Header::original`] for the
    /// provenance, from which export restores them.
    pub(super) fn assign_id(&mut self, id: &str) {
        if id == self.id {
            return;
        }
        // The header record was read as an object before (`take_header`), so it reads
        // as one again; should it not, the original bytes stay as the record.
        let Some(mut map) = parse_map(&self.payload) else {
            return;
        };
        map.insert("id".to_owned(), serde_json::Value::from(id));
        let rewritten = to_js_json(map).into_bytes();
        self.original = Some(std::mem::replace(&mut self.payload, rewritten));
        self.changed = true;
    }
}

impl Run<'_> {
    /// Reads lines up to and including the header; refuses what is not a session.
    pub(super) fn read_header(
        &mut self,
        reader: &mut LineReader<'_>,
    ) -> Result<Header, ImportError> {
        let mut first_bad: Option<(u64, String)> = None;
        loop {
            let Some((meta, buf)) = reader.next_line()? else {
                let (line, reason) = first_bad.unwrap_or((0, "no content".to_owned()));
                return Err(ImportError::NotJsonl {
                    path: self.path.to_path_buf(),
                    line,
                    reason,
                });
            };
            if is_blank(buf) {
                self.count_blank(meta);
                continue;
            }
            if meta.crlf {
                self.crlf_lines += 1;
            }
            match parse_line(buf, meta, first_bad.is_none()) {
                Parsed::Bad(kind) => {
                    first_bad.get_or_insert((meta.number, kind.to_string()));
                    self.issue(meta.number, kind);
                }
                Parsed::Object(line) => return self.take_header(buf, meta, line),
            }
        }
    }

    /// Takes the first line that reads as an object: a session header with a string
    /// id, or the import is refused.
    fn take_header(
        &mut self,
        buf: &[u8],
        meta: LineMeta,
        line: Line<'_>,
    ) -> Result<Header, ImportError> {
        let Line {
            env,
            scanned: _,
            surrogate,
            invalid_utf8,
            lead,
            trail,
        } = line;
        let found = describe(&env);
        let header_id = match (env.is_header(), env.id.as_deref()) {
            (true, Some(id)) => id.to_owned(),
            _ => {
                return Err(ImportError::NoHeader {
                    path: self.path.to_path_buf(),
                    line: meta.number,
                    found,
                });
            }
        };
        drop(env);
        if lead {
            self.issue(meta.number, IssueKind::OuterWhitespace { place: "before" });
        }
        if let Some(column) = invalid_utf8 {
            self.issue(meta.number, IssueKind::InvalidUtf8 { column });
        }
        let Some(mut map) = parse_map(buf) else {
            return Err(ImportError::NoHeader {
                path: self.path.to_path_buf(),
                line: meta.number,
                found: "a session header nested too deeply to read".to_owned(),
            });
        };
        let (version, odd) = header_version(map.get("version"));
        if odd {
            let found = map
                .get("version")
                .map(ToString::to_string)
                .unwrap_or_default();
            self.issue(
                meta.number,
                IssueKind::HeaderVersionRead {
                    found,
                    read_as: version,
                },
            );
        }
        self.version = version;
        let (payload, changed) = if version < 3 {
            migrate_header(&mut map);
            self.issue(meta.number, IssueKind::HeaderVersionSet { from: version });
            if let Some(column) = surrogate {
                self.issue(meta.number, IssueKind::LoneSurrogateReplaced { column });
            }
            (to_js_json(map).into_bytes(), true)
        } else {
            if let Some(column) = surrogate {
                self.issue(meta.number, IssueKind::LoneSurrogate { column });
            }
            (buf.to_vec(), false)
        };
        if version == 1 {
            self.v1 = Some(V1State::new(*self.scan_hash.as_bytes()));
        }
        Ok(Header {
            id: header_id,
            version,
            line: meta,
            payload,
            changed,
            trail,
            original: None,
        })
    }
}
