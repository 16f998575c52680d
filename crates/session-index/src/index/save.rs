//! Saving the sidecar: atomically, and never claiming journal bytes that are not
//! durable.

use std::path::{Path, PathBuf};

use session_journal::Capture;
use session_journal::vfs::Vfs;

use super::{Index, sidecar_path};
use crate::error::SaveError;
use crate::sidecar;

impl Index {
    /// Writes the sidecar atomically (temp file, sync, rename, directory sync).
    /// `durable` is the writer's durable capture: the index must not cover more.
    pub fn save(&self, durable: Capture) -> Result<(), SaveError> {
        self.save_with(durable, true)
    }

    /// [`save`](Self::save) without its two syncs, for an index built while its
    /// journal was written (an import): derived data, so a crash that loses or tears
    /// the sidecar costs one rebuild at the next open.
    pub fn save_unsynced(&self, durable: Capture) -> Result<(), SaveError> {
        self.save_with(durable, false)
    }

    fn save_with(&self, durable: Capture, sync: bool) -> Result<(), SaveError> {
        self.check_durable(durable)?;
        let bytes = sidecar::encode(&self.derived.state, self.journal_id, self.data_start);
        self.prepared(Sidecar::Encoded(bytes)).write_replacing(sync)
    }

    fn check_durable(&self, durable: Capture) -> Result<(), SaveError> {
        let side = sidecar_path(&self.journal);
        if durable.journal_id != self.journal_id {
            return Err(SaveError::ForeignCapture { path: side });
        }
        if self.derived.state.covered_len > durable.len.0 {
            return Err(SaveError::NotDurable {
                path: side,
                covered: self.derived.state.covered_len,
                durable: durable.len.0,
            });
        }
        Ok(())
    }

    /// The sidecar as it stands, to be encoded and written later — on another
    /// thread, once the journal bytes it covers are durable ([`PreparedSave::write`]):
    /// the save that rides with a writer's background sync. The appending thread pays
    /// only a copy of the index's state; encoding it (the id table's sort, the
    /// aggregates' JSON) is the saving thread's work.
    pub fn prepare_save(&self) -> PreparedSave {
        self.prepared(Sidecar::State(
            Box::new(self.derived.state.clone()),
            self.data_start,
        ))
    }

    fn prepared(&self, sidecar: Sidecar) -> PreparedSave {
        PreparedSave {
            vfs: self.vfs.clone(),
            path: sidecar_path(&self.journal),
            journal_id: self.journal_id,
            covered: self.derived.state.covered_len,
            sidecar,
        }
    }
}

/// A sidecar to be written: its bytes, or the state they are encoded from (with the
/// journal offset where its data frames start).
#[derive(Debug)]
enum Sidecar {
    Encoded(Vec<u8>),
    State(Box<crate::state::State>, u64),
}

/// An index's sidecar taken by [`Index::prepare_save`], not yet written.
#[derive(Debug)]
pub struct PreparedSave {
    vfs: std::sync::Arc<dyn Vfs>,
    path: PathBuf,
    journal_id: session_journal::JournalId,
    covered: u64,
    sidecar: Sidecar,
}

impl PreparedSave {
    /// Writes the sidecar as [`Index::save`] does (temp file, sync, rename, directory
    /// sync), if `durable` (the writer's durable capture, taken after the index was
    /// prepared) shows every byte it covers durable.
    pub fn write(self, durable: Capture) -> Result<(), SaveError> {
        if durable.journal_id != self.journal_id {
            return Err(SaveError::ForeignCapture { path: self.path });
        }
        if self.covered > durable.len.0 {
            return Err(SaveError::NotDurable {
                path: self.path,
                covered: self.covered,
                durable: durable.len.0,
            });
        }
        self.write_replacing(true)
    }

    fn write_replacing(self, sync: bool) -> Result<(), SaveError> {
        let bytes = match self.sidecar {
            Sidecar::Encoded(bytes) => bytes,
            Sidecar::State(state, data_start) => {
                sidecar::encode(&state, self.journal_id, data_start)
            }
        };
        write_replacing(self.vfs.as_ref(), &self.path, &bytes, sync)
    }
}

/// Writes `bytes` to `path` atomically through `vfs`: into a temporary created
/// exclusively under an unpredictable name beside it (`.<name>.save-<16 hex>.tmp`, at
/// most 64 characters of the name, so no planted file or link is ever written through
/// and two concurrent savers never clobber each other's temporary), synced, renamed
/// over `path` (`0600`), then the directory synced.
pub(crate) fn write_atomic(vfs: &dyn Vfs, path: &Path, bytes: &[u8]) -> Result<(), SaveError> {
    write_replacing(vfs, path, bytes, true)
}

/// [`write_atomic`], with the two syncs only when `sync`: unsynced, a crash may leave
/// the old file, the new one, or a torn one — for derived files that are validated
/// and rebuilt when they do not match.
pub(crate) fn write_replacing(
    vfs: &dyn Vfs,
    path: &Path,
    bytes: &[u8],
    sync: bool,
) -> Result<(), SaveError> {
    let io = SaveError::io;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name: String = path
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(64).collect())
        .unwrap_or_default();
    let (tmp, f) = vfs
        .create_temp(&dir, &format!(".{name}.save-"))
        .map_err(io("create a temporary file", &dir))?;
    let written = f
        .write_all_at(0, bytes)
        .map_err(io("write", &tmp))
        .and_then(|()| {
            if sync {
                f.sync_data().map_err(io("sync", &tmp))
            } else {
                Ok(())
            }
        });
    drop(f);
    if let Err(e) = written.and_then(|()| vfs.rename(&tmp, path).map_err(io("rename", path))) {
        let _ = vfs.remove_file(&tmp);
        return Err(e);
    }
    if sync {
        vfs.sync_dir(&dir).map_err(io("sync directory", &dir))?;
    }
    Ok(())
}
