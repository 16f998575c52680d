//! The library's errors as the protocol's: the fields a caller acts on go into the
//! error's `data`; everything else keeps its message (which names the path, offset or
//! entry) as [`Error::Store`].

use session_manager::{AppendError, Limit, OpenError, ReadError};
use session_protocol::{Error, LimitKind};

fn lossy(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// An open, create, list, import, export or delete error.
pub(crate) fn open_error(method: &str, e: OpenError) -> Error {
    match e {
        OpenError::Locked { path, holder, .. } => Error::Locked {
            path: lossy(&path),
            holder_pid: holder.pid,
            holder_host: holder.host,
        },
        OpenError::NotFound { path } => Error::NotFound { path: lossy(&path) },
        OpenError::LegacyJsonl { path } => Error::LegacyJsonl { path: lossy(&path) },
        OpenError::Exists { path, id } => Error::Exists {
            path: lossy(&path),
            session_id: id,
        },
        OpenError::InvalidId(e) => Error::InvalidParams {
            method: method.to_owned(),
            detail: e.to_string(),
        },
        OpenError::Io { path, op, source } => Error::Io {
            path: lossy(&path),
            op: op.to_owned(),
            detail: source.to_string(),
        },
        OpenError::NotAJournal { path, found } => Error::NotAJournal {
            path: lossy(&path),
            detail: found,
        },
        // A journal whose session header record never made it (a creation that
        // never finished): not a session, as `bcs` says too.
        OpenError::NoHeader { path } => Error::NotAJournal {
            path: lossy(&path),
            detail: "a journal with no session header record (the session was never created)"
                .to_owned(),
        },
        OpenError::Journal(j) => journal_open_error(j),
        OpenError::Read(r) => read_error(*r),
        OpenError::Append(a) => append_error(*a),
        other => Error::Store {
            detail: other.to_string(),
        },
    }
}

/// The journal signature in hex, as the journal's own message spells it.
fn signature_hex() -> String {
    session_journal::format::SIGNATURE
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn journal_open_error(e: session_journal::OpenError) -> Error {
    use session_journal::OpenError as J;
    let detail = e.to_string();
    match e {
        J::UnsupportedVersion {
            path,
            found,
            supported,
            ..
        } => Error::UnsupportedVersion {
            path: lossy(&path),
            found,
            supported,
        },
        J::Corrupt { path, offset, .. } => Error::Corrupt {
            path: lossy(&path),
            offset: offset.0,
            detail,
        },
        J::NotAJournal { path, found, .. } => Error::NotAJournal {
            path: lossy(&path),
            detail: format!(
                "expected signature {} at offset 0, found {found}",
                signature_hex()
            ),
        },
        J::Uninitialized { path, len: 0 } => Error::NotAJournal {
            path: lossy(&path),
            detail: "the file is empty".to_owned(),
        },
        J::Uninitialized { path, len } => Error::NotAJournal {
            path: lossy(&path),
            detail: format!(
                "{len} bytes and no complete header frame (a creation that never finished)"
            ),
        },
        _ => Error::Store { detail },
    }
}

/// An append (or leaf move) error.
pub(crate) fn append_error(e: AppendError) -> Error {
    match e {
        AppendError::EntryNotFound { session, id } => Error::EntryNotFound {
            session,
            entry_id: id,
        },
        AppendError::InvalidEntry { reason } => Error::InvalidEntry { reason },
        other => Error::Store {
            detail: other.to_string(),
        },
    }
}

/// A read error.
pub(crate) fn read_error(e: ReadError) -> Error {
    let detail = e.to_string();
    match e {
        ReadError::LimitExceeded {
            session,
            limit,
            limit_value,
            needed,
            exact,
        } => {
            let limit = match limit {
                Limit::SourceEntries => LimitKind::SourceEntries,
                Limit::SourceBytes => LimitKind::SourceBytes,
                _ => return Error::Store { detail },
            };
            Error::LimitExceeded {
                session,
                limit,
                limit_value,
                needed,
                exact,
            }
        }
        ReadError::EntryNotFound { session, id } => Error::EntryNotFound {
            session,
            entry_id: id,
        },
        ReadError::Journal(session_journal::ReadError::Invalid { path, offset, .. }) => {
            Error::Corrupt {
                path: lossy(&path),
                offset: offset.0,
                detail,
            }
        }
        _ => Error::Store { detail },
    }
}
