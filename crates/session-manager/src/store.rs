//! The store: the seed's static methods (create, open, continue, fork, list, delete,
//! import) over one layout, with injected clock, ids and file system.

use std::path::{Path, PathBuf};

use session_import::{Destination, ImportOptions, ImportOutcome};
use session_index::{
    Index, IndexStatus, ListOptions, OpenIndexOptions, SessionInfo, kinds, list_sessions,
};
use session_journal::vfs::Vfs;
use session_journal::{
    CreateOptions, Durability, JournalId, NewFrame, OpenOptions, Reader, ReaderOptions, Writer,
};
use session_types::{EntryId, Record, SessionHeader, SessionId};

use crate::error::{OpenError, ReadError, io, journal_open_error};
use crate::handle::{NewSessionOptions, Store};
use crate::layout::SafeSessionId;
use crate::owned::OwnedSession;
use crate::resident::ResidentSession;
use crate::source::parse_entry;

/// Progress and per-session delivery of a listing (the seed's `onProgress(loaded,
/// total)` and `onSession(session)` callbacks). Both default to doing nothing;
/// `()` is the observer that ignores everything.
pub trait ListObserver {
    /// `loaded` of `total` sessions are known.
    fn on_progress(&mut self, loaded: usize, total: usize) {
        let _ = (loaded, total);
    }
    /// One session, in the listing's order (newest first).
    fn on_session(&mut self, session: &SessionInfo) {
        let _ = session;
    }
}

impl ListObserver for () {}

/// Closures as listing observers: `on_progress` and `on_session` of the seed's
/// `list(cwd, sessionDir?, onProgress?)`, each optional.
///
/// ```
/// # let root = tempfile::tempdir().unwrap();
/// # let store = session_manager::Store::new(session_manager::Layout::with_root(root.path()).unwrap());
/// use session_manager::Observe;
/// let mut seen = Vec::new();
/// let mut progress = 0;
/// let listed = store
///     .list_all(&mut Observe::new()
///         .on_session(|s| seen.push(s.path.clone()))
///         .on_progress(|loaded, _total| progress = loaded))
///     .unwrap();
/// assert_eq!(listed.len(), seen.len());
/// ```
pub struct Observe<'a> {
    progress: Option<ProgressFn<'a>>,
    session: Option<SessionFn<'a>>,
}

type ProgressFn<'a> = Box<dyn FnMut(usize, usize) + 'a>;
type SessionFn<'a> = Box<dyn FnMut(&SessionInfo) + 'a>;

impl<'a> Observe<'a> {
    /// An observer that does nothing until given closures.
    pub fn new() -> Self {
        Self {
            progress: None,
            session: None,
        }
    }

    /// Called with `(loaded, total)` as sessions are read.
    pub fn on_progress(mut self, f: impl FnMut(usize, usize) + 'a) -> Self {
        self.progress = Some(Box::new(f));
        self
    }

    /// Called with each session, in the listing's order.
    pub fn on_session(mut self, f: impl FnMut(&SessionInfo) + 'a) -> Self {
        self.session = Some(Box::new(f));
        self
    }
}

impl Default for Observe<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Observe<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observe")
            .field("on_progress", &self.progress.is_some())
            .field("on_session", &self.session.is_some())
            .finish()
    }
}

impl ListObserver for Observe<'_> {
    fn on_progress(&mut self, loaded: usize, total: usize) {
        if let Some(f) = &mut self.progress {
            f(loaded, total);
        }
    }
    fn on_session(&mut self, session: &SessionInfo) {
        if let Some(f) = &mut self.session {
            f(session);
        }
    }
}

/// What [`Store::delete`] removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct DeleteReport {
    /// Every path removed, in removal order.
    pub removed: Vec<PathBuf>,
}

/// The seed's static methods over the store's layout, sources and file system.
impl Store {
    // ----- creation -----

    /// `SessionManager.create(cwd)`: a new session whose header is durable when this
    /// returns (no deferred first write).
    pub fn create(&self, cwd: &str) -> Result<OwnedSession, OpenError> {
        self.create_with(cwd, NewSessionOptions::default())
    }

    /// [`create`](Self::create) with a caller-chosen id and/or `parentSession`.
    pub fn create_with(
        &self,
        cwd: &str,
        options: NewSessionOptions,
    ) -> Result<OwnedSession, OpenError> {
        let now = self.sources.clock.now_ms();
        let id = match &options.id {
            Some(id) => SafeSessionId::new(id)?,
            None => SafeSessionId::new(&self.sources.ids.session_id(now))?,
        };
        let mut header = SessionHeader::new(
            SessionId::new(id.as_str()),
            session_types::Timestamp::from_unix_ms(now),
            cwd,
        );
        header.parent_session = options.parent_session;
        let dir = self.layout.sessions_dir();
        self.vfs
            .create_dir_all(dir)
            .map_err(io(dir, "create directory"))?;
        let path = self.layout.journal_path(&id);
        if self.vfs.exists(&path).map_err(io(&path, "stat"))? {
            return Err(OpenError::Exists {
                path,
                id: id.as_str().to_owned(),
            });
        }
        let mut writer = Writer::create(
            &path,
            JournalId(self.sources.ids.journal_id()),
            CreateOptions {
                session_id: Some(id.as_str().to_owned()),
                vfs: self.vfs.clone(),
                clock: self.sources.journal_clock(),
                ..CreateOptions::default()
            },
        )
        .map_err(|e| match e {
            session_journal::CreateError::Exists { path } => OpenError::Exists {
                path,
                id: id.as_str().to_owned(),
            },
            session_journal::CreateError::Locked {
                path,
                lock_path,
                holder,
            } => OpenError::Locked {
                path,
                lock_path,
                holder,
            },
            other => OpenError::Create(other),
        })?;
        let text = header.to_json();
        writer
            .append_frame(
                NewFrame::new(kinds::SESSION_HEADER, text.as_bytes()),
                Durability::Durable,
            )
            .map_err(|e| OpenError::from(crate::error::AppendError::from(e)))?;
        self.own(path, writer)
    }

    /// Builds the owned handle around a writer that holds the lock.
    fn own(&self, path: PathBuf, writer: Writer) -> Result<OwnedSession, OpenError> {
        self.own_with(path, writer, None, None)
    }

    /// Like [`Store::own`], reusing an index opened before the lock was taken when
    /// it covers exactly what the writer found (nothing was appended in between).
    /// A `reader` opened before the lock is kept when it reads the file the writer
    /// locked (its prefix was read once, for all three).
    fn own_with(
        &self,
        path: PathBuf,
        writer: Writer,
        pre_opened: Option<(Index, bool)>,
        reader: Option<Reader>,
    ) -> Result<OwnedSession, OpenError> {
        let reuse = pre_opened.filter(|(index, _)| {
            index.covered_len() == writer.capture().len
                && index.covered_seq() == writer.capture().last_seq
        });
        let index = match reuse {
            Some((index, fresh)) => {
                if !fresh {
                    // The sidecar was missing or stale: save what was verified, now
                    // that the writer made the whole journal durable and holds the lock.
                    let _ = index.save(writer.durable_capture());
                }
                index
            }
            None => {
                Index::open_or_rebuild(
                    &path,
                    OpenIndexOptions {
                        vfs: self.vfs.clone(),
                        durable: Some(writer.durable_capture()),
                        ..OpenIndexOptions::default()
                    },
                )
                .map_err(OpenError::from)?
                .0
            }
        };
        let locked = writer.file_id();
        let reader = match reader.filter(|r| r.file_id().is_some() && r.file_id() == locked) {
            Some(r) => r,
            None => Reader::open(
                &path,
                ReaderOptions {
                    vfs: self.vfs.clone(),
                },
            )
            .map_err(journal_open_error)?,
        };
        let header = read_header(&index, &reader, &path)?;
        let leaf = index
            .leaf()
            .and_then(|l| index.info(l))
            .and_then(|i| i.id)
            .map(EntryId::new);
        let opened_len = index.covered_len().0;
        Ok(OwnedSession {
            store: self.clone(),
            path,
            captured: writer.capture(),
            writer: std::sync::Mutex::new(writer),
            reader,
            opened_len,
            index,
            header,
            leaf,
            durability: Durability::Durable,
            unsaved: 0,
            repaired: None,
        })
    }

    /// `SessionManager.open(path)`: takes the journal's lock (a second owner gets
    /// [`OpenError::Locked`] naming the holder), recovers a torn tail, opens the index
    /// (O(1) when fresh) and resumes at the last appended entry. A legacy JSONL file
    /// is refused with [`OpenError::LegacyJsonl`]: import it.
    pub fn open(&self, path: &Path) -> Result<OwnedSession, OpenError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        // Resume costs what the answer needs, and reads each byte once: one reader
        // reads the journal's prefix; the index (validated in O(1) against the journal
        // through it, without saving anything before we own the session) tells the
        // writer which prefix is already verified and hands over the frame it checked,
        // so the writer's open reads neither again and verifies only the tail; the
        // owned session keeps that reader.
        let reader = Reader::open(
            &path,
            ReaderOptions {
                vfs: self.vfs.clone(),
            },
        )
        .map_err(journal_open_error)?;
        let pre = Index::open_or_rebuild_with(
            &reader,
            OpenIndexOptions {
                vfs: self.vfs.clone(),
                save: false,
                sync_journal: false,
                ..OpenIndexOptions::default()
            },
        )
        .ok();
        let known = reader
            .known()
            .map(|k| k.with_verified_frame(pre.as_ref().and_then(|(_, r)| r.witness_frame)));
        let pre_opened = pre.map(|(index, report)| (index, report.status == IndexStatus::Fresh));
        let trusted = pre_opened.as_ref().and_then(|(index, _)| index.witness());
        let (writer, report) = Writer::open(
            &path,
            OpenOptions {
                vfs: self.vfs.clone(),
                trusted,
                known,
                clock: self.sources.journal_clock(),
                ..OpenOptions::default()
            },
        )
        .map_err(journal_open_error)?;
        let mut session = self.own_with(path, writer, pre_opened, Some(reader))?;
        if let session_journal::TailState::TornTail {
            offset,
            bytes,
            quarantine,
            ..
        } = report.tail
        {
            session.repaired = Some(crate::owned::TailRepair {
                offset: offset.0,
                bytes,
                copied_to: quarantine,
            });
        }
        Ok(session)
    }

    /// Opens the session with this id in the sessions directory.
    pub fn open_id(&self, id: &str) -> Result<OwnedSession, OpenError> {
        let id = SafeSessionId::new(id)?;
        self.open(&self.layout.journal_path(&id))
    }

    /// `SessionManager.continueRecent(cwd)`: opens the session of `cwd` with the latest
    /// activity (the listing's `modified`, read from derived summaries only) that no
    /// other process or handle owns, or creates one when every session of `cwd` is
    /// owned (or there is none): two agents started in one directory each get a
    /// session instead of one of them failing on the other's lock.
    pub fn continue_recent(&self, cwd: &str) -> Result<OwnedSession, OpenError> {
        for info in self.list(cwd, &mut ())? {
            match self.open(&info.path) {
                Err(OpenError::Locked { .. }) => continue,
                other => return other,
            }
        }
        self.create(cwd)
    }

    /// `SessionManager.forkFrom(sourcePath, targetCwd)`: a new session in this store
    /// holding every entry of the native journal at `source` (copied byte for byte),
    /// with `cwd = target_cwd` and `parentSession = source`. The source is only read
    /// (no lock taken). A legacy source is refused: import it first.
    pub fn fork_from(&self, source: &Path, target_cwd: &str) -> Result<OwnedSession, OpenError> {
        let reader = Reader::open(
            source,
            ReaderOptions {
                vfs: self.vfs.clone(),
            },
        )
        .map_err(journal_open_error)?;
        let options = NewSessionOptions::with_parent_session(source.to_string_lossy());
        let mut new = self.create_with(target_cwd, options)?;
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let mut batch_bytes = 0usize;
        let mut saw_header = false;
        for frame in reader.frames(None) {
            let frame = frame.map_err(|e| OpenError::from(ReadError::from(e)))?;
            if frame.info.kind == kinds::SESSION_HEADER {
                saw_header = true;
                continue;
            }
            if frame.info.kind != kinds::ENTRY {
                continue;
            }
            batch_bytes += frame.payload.len();
            batch.push(frame.payload);
            if batch_bytes >= 4 << 20 {
                new.append_raw_batch(&batch)?;
                batch.clear();
                batch_bytes = 0;
            }
        }
        if !saw_header {
            let path = new.path.clone();
            drop(new);
            let _ = self.delete(&path);
            return Err(OpenError::NoHeader {
                path: source.to_path_buf(),
            });
        }
        new.append_raw_batch(&batch)?;
        new.sync()?;
        Ok(new)
    }

    /// `SessionManager.openReadOnly(path)`: a resident view of the journal as it is
    /// now. Takes no lock and modifies no file (a torn tail being written is simply
    /// not read); works while another process owns the session.
    pub fn open_read_only(&self, path: &Path) -> Result<ResidentSession, OpenError> {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let reader = Reader::open(
            &path,
            ReaderOptions {
                vfs: self.vfs.clone(),
            },
        )
        .map_err(journal_open_error)?;
        // Frames before the header record (none in a journal this crate writes) wait
        // for it, so that every frame reaches the view in journal order.
        let mut pending = Vec::new();
        let mut view: Option<ResidentSession> = None;
        for frame in reader.frames(None) {
            let frame = frame.map_err(|e| OpenError::from(ReadError::from(e)))?;
            if view.is_none() {
                if frame.info.kind != kinds::SESSION_HEADER {
                    pending.push(frame);
                    continue;
                }
                let header = match Record::read_payload(&frame.payload) {
                    Ok(Record::Header(h)) => h,
                    Ok(_) => {
                        pending.push(frame);
                        continue;
                    }
                    Err(source) => return Err(OpenError::BadHeader { path, source }),
                };
                let mut v = ResidentSession::read_only(
                    self.sources.clone(),
                    header,
                    path.clone(),
                    self.layout.sessions_dir().to_path_buf(),
                    self.artifact_dir_for(&path).ok(),
                );
                for f in pending.drain(..) {
                    push_frame(&mut v, &f, &path);
                }
                view = Some(v);
            }
            if let Some(v) = view.as_mut() {
                push_frame(v, &frame, &path);
            }
        }
        let mut view = view.ok_or_else(|| OpenError::NoHeader { path: path.clone() })?;
        view.resume_at_last();
        Ok(view)
    }

    // ----- listing -----

    /// `SessionManager.list(cwd)`: the sessions whose header cwd is `cwd`, newest
    /// first, from derived summaries (a fresh catalog reads no journal through: each record
    /// is checked against its journal's header and last frame).
    pub fn list(
        &self,
        cwd: &str,
        observer: &mut dyn ListObserver,
    ) -> Result<Vec<SessionInfo>, OpenError> {
        self.list_filtered(Some(cwd), observer)
    }

    /// `SessionManager.listAll()`: every session of the store, newest first.
    pub fn list_all(&self, observer: &mut dyn ListObserver) -> Result<Vec<SessionInfo>, OpenError> {
        self.list_filtered(None, observer)
    }

    fn list_filtered(
        &self,
        cwd: Option<&str>,
        observer: &mut dyn ListObserver,
    ) -> Result<Vec<SessionInfo>, OpenError> {
        let dir = self.layout.sessions_dir();
        if !self.vfs.exists(dir).map_err(io(dir, "stat"))? {
            observer.on_progress(0, 0);
            return Ok(Vec::new());
        }
        let (infos, _report) = list_sessions(
            dir,
            &ListOptions {
                vfs: self.vfs.clone(),
                ..ListOptions::default()
            },
        )?;
        let infos: Vec<SessionInfo> = infos
            .into_iter()
            .filter(|i| cwd.is_none_or(|c| i.summary.cwd == c))
            .collect();
        let total = infos.len();
        observer.on_progress(0, total);
        for (n, info) in infos.iter().enumerate() {
            observer.on_session(info);
            observer.on_progress(n + 1, total);
        }
        Ok(infos)
    }

    // ----- import -----

    /// Explicit, offline import of a legacy JSONL session into this store's sessions
    /// directory (idempotent by content). Open the result with
    /// [`open`](Self::open)`(&outcome.journal)`.
    pub fn import(&self, legacy: &Path) -> Result<ImportOutcome, OpenError> {
        let dir = self.layout.sessions_dir();
        self.vfs
            .create_dir_all(dir)
            .map_err(io(dir, "create directory"))?;
        let outcome = session_import::import(
            legacy,
            &Destination::Dir(dir.to_path_buf()),
            &ImportOptions {
                vfs: self.vfs.clone(),
                clock: self.sources.journal_clock(),
                ..ImportOptions::default()
            },
        )?;
        // The import saved the new journal's index sidecar as it wrote it.
        Ok(outcome)
    }

    /// Imports many legacy JSONL sessions into this store's sessions directory in
    /// batches (`session_import::import_many`): each batch's journals are made durable
    /// together and published with one directory sync and one registry append, with the
    /// guarantees of [`import`](Self::import) for each. `on_done(i, result)` is called
    /// as `legacy[i]` finishes (in batch order, not necessarily in source order); the
    /// results come back in the sources' order.
    pub fn import_many(
        &self,
        legacy: &[PathBuf],
        bulk: &crate::BulkOptions,
        on_done: &mut dyn FnMut(usize, &Result<ImportOutcome, crate::ImportError>),
    ) -> Result<Vec<Result<ImportOutcome, OpenError>>, OpenError> {
        let dir = self.layout.sessions_dir();
        self.vfs
            .create_dir_all(dir)
            .map_err(io(dir, "create directory"))?;
        let options = ImportOptions {
            vfs: self.vfs.clone(),
            clock: self.sources.journal_clock(),
            ..ImportOptions::default()
        };
        // Each new journal's index sidecar is saved by the import as it is published,
        // before the caller hears of it.
        Ok(
            session_import::import_many(legacy, dir, &options, bulk, on_done)
                .into_iter()
                .map(|r| r.map_err(OpenError::from))
                .collect(),
        )
    }

    // ----- export -----

    /// Exports the session at `journal` as v3 JSONL to `dest` (atomically, through
    /// this store's file system): what the reference opens.
    pub fn export(
        &self,
        journal: &Path,
        dest: &Path,
    ) -> Result<session_import::ExportOutcome, session_import::ExportError> {
        session_import::export_in(self.vfs.clone(), journal, dest)
    }

    /// Exports the session at `journal` as v3 JSONL to `out`, streaming (memory
    /// bounded by the largest entry); `shown` names the destination in errors.
    pub fn export_to(
        &self,
        journal: &Path,
        out: &mut dyn std::io::Write,
        shown: &Path,
    ) -> Result<session_import::ExportOutcome, session_import::ExportError> {
        session_import::export_to_in(self.vfs.clone(), journal, out, shown)
    }

    // ----- deletion -----

    /// Deletes the session with this id.
    pub fn delete_id(&self, id: &str) -> Result<DeleteReport, OpenError> {
        let id = SafeSessionId::new(id)?;
        self.delete(&self.layout.journal_path(&id))
    }

    /// Deletes a session: its journal, index sidecar, torn-tail copies, listing-catalog
    /// record, imports-registry line, artifact directory and holder record — exactly
    /// that one session, completely.
    ///
    /// Only `<sessions>/<id>.jsonl` of this store, with a valid id, and only a native
    /// journal reached without a link, is deleted: anything else is refused with
    /// [`OpenError::NotInStore`] (or [`OpenError::NotAJournal`] /
    /// [`OpenError::LegacyJsonl`]), and the artifact directory is the one of that
    /// validated id, never a name derived from a path. Refused with
    /// [`OpenError::Locked`] while anyone owns the session (the lock is on the journal
    /// file itself, so no other name of it can own it either).
    ///
    /// Order: lock taken → journal unlinked and the directory synced (the session is
    /// gone: nobody can own it again) → derived files → artifacts → holder record.
    pub fn delete(&self, journal: &Path) -> Result<DeleteReport, OpenError> {
        let journal = std::path::absolute(journal).unwrap_or_else(|_| journal.to_path_buf());
        let (dir, id) = self.own_journal(&journal)?;
        let vfs = self.vfs.as_ref();
        let hold = session_journal::lock::Hold::take(vfs, &journal)
            .map_err(crate::error::journal_open_error)?;
        refuse_non_journal(vfs, &journal)?;
        let mut report = DeleteReport::default();
        if !hold.still_at(vfs, &journal).map_err(io(&journal, "stat"))? {
            return Err(OpenError::Replaced { path: journal });
        }
        vfs.remove_file(&journal).map_err(io(&journal, "remove"))?;
        vfs.sync_dir(&dir).map_err(io(&dir, "sync directory"))?;
        report.removed.push(journal.clone());
        // The session is gone; every part of it is removed even if one fails, and the
        // first failure is returned.
        let mut failed: Option<OpenError> = None;
        let mut keep = |r: Result<(), OpenError>| {
            if let Err(e) = r
                && failed.is_none()
            {
                failed = Some(e);
            }
        };
        for derived in derived_files(vfs, &dir, &journal)? {
            keep(vfs.remove_file(&derived).map_err(io(&derived, "remove")));
            report.removed.push(derived);
        }
        let name = journal
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        keep(session_index::forget(vfs, &dir, &name).map_err(OpenError::from));
        match session_import::registry::remove(vfs, &dir, &name) {
            Ok(true) => report
                .removed
                .push(dir.join(session_import::registry::REGISTRY_FILE)),
            Ok(false) => {}
            Err(e) => keep(Err(OpenError::from(e))),
        }
        let artifacts = self.layout.artifact_dir(&id);
        if vfs.exists(&artifacts).map_err(io(&artifacts, "stat"))? {
            keep(
                vfs.remove_dir_all(&artifacts)
                    .map_err(io(&artifacts, "remove directory")),
            );
            report.removed.push(artifacts);
        }
        let record = session_journal::lock::lock_path(&journal);
        match vfs.remove_file(&record) {
            Ok(()) => report.removed.push(record),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => keep(Err(io(&record, "remove")(e))),
        }
        if let Some(e) = failed {
            return Err(e);
        }
        vfs.sync_dir(&dir).map_err(io(&dir, "sync directory"))?;
        drop(hold);
        Ok(report)
    }

    /// Checks that `journal` is `<sessions>/<id>.jsonl` of this store (the directory by
    /// identity, so another spelling of the same directory is accepted and a
    /// look-alike elsewhere is not) and returns the directory and the id.
    fn own_journal(&self, journal: &Path) -> Result<(PathBuf, SafeSessionId), OpenError> {
        let sessions_dir = self.layout.sessions_dir().to_path_buf();
        let refuse = |reason| OpenError::NotInStore {
            path: journal.to_path_buf(),
            sessions_dir: sessions_dir.clone(),
            reason,
        };
        let name = journal
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| refuse("not a session journal: its name is not `<session id>.jsonl`"))?;
        let id = name
            .strip_suffix(".jsonl")
            .and_then(|stem| SafeSessionId::new(stem).ok())
            .ok_or_else(|| refuse("not a session journal: its name is not `<session id>.jsonl`"))?;
        let dir = journal.parent().unwrap_or(Path::new("."));
        let vfs = self.vfs.as_ref();
        let same_dir = dir == sessions_dir
            || match (vfs.identity(dir), vfs.identity(&sessions_dir)) {
                (Ok(Some(a)), Ok(Some(b))) => a == b,
                _ => false,
            };
        if !same_dir {
            return Err(refuse("not a journal of this store"));
        }
        if !vfs.exists(journal).map_err(io(journal, "stat"))? {
            return Err(OpenError::NotFound {
                path: journal.to_path_buf(),
            });
        }
        Ok((sessions_dir, id))
    }
}

/// The derived files of `journal` in `dir` that hold its content: the index sidecar,
/// a temporary of a sidecar save that was killed, and every torn-tail copy
/// (`<name>.torn-*`), regular files only.
fn derived_files(vfs: &dyn Vfs, dir: &Path, journal: &Path) -> Result<Vec<PathBuf>, OpenError> {
    let name = journal.file_name().unwrap_or_default().to_string_lossy();
    let torn = format!("{name}.torn-");
    let side = session_index::sidecar_path(journal);
    let side_name = side.file_name().unwrap_or_default().to_owned();
    // A save killed before its rename leaves `.<sidecar name, 64 chars>.save-*.tmp`.
    let side_text: String = side_name.to_string_lossy().chars().take(64).collect();
    let save = format!(".{side_text}.save-");
    let entries = vfs.read_dir(dir).map_err(io(dir, "read directory"))?;
    let mut out: Vec<PathBuf> = entries
        .into_iter()
        .filter(|e| {
            e.kind == session_journal::vfs::EntryKind::File
                && (e.name == side_name
                    || e.name
                        .to_str()
                        .is_some_and(|n| n.starts_with(&torn) || n.starts_with(&save)))
        })
        .map(|e| dir.join(e.name))
        .collect();
    out.sort();
    Ok(out)
}

/// Reads and parses the session header record (the first `SESSION_HEADER` frame).
fn read_header(index: &Index, reader: &Reader, path: &Path) -> Result<SessionHeader, OpenError> {
    let i = (0..index.len().min(4))
        .map(|i| session_index::EntryIndex(i as u32))
        .find(|i| {
            index
                .info(*i)
                .is_some_and(|x| x.kind == kinds::SESSION_HEADER_KIND)
        })
        .ok_or_else(|| OpenError::NoHeader {
            path: path.to_path_buf(),
        })?;
    let info = index.info(i).ok_or_else(|| OpenError::NoHeader {
        path: path.to_path_buf(),
    })?;
    // Exactly the frame's bytes: the entries after it are the context's to read.
    let end = session_journal::Offset(
        info.offset.0 + session_journal::format::frame_len(u64::from(info.payload_len)),
    );
    let frame = reader
        .read_frame_within(info.offset, end)
        .map_err(|e| OpenError::from(ReadError::from(e)))?;
    match Record::read_payload(&frame.payload) {
        Ok(Record::Header(h)) => Ok(h),
        Ok(_) => Err(OpenError::NoHeader {
            path: path.to_path_buf(),
        }),
        Err(source) => Err(OpenError::BadHeader {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Deletion removes files: only what is (or began to be) a native journal. Every
/// byte present must agree with the journal signature, so an empty file or a journal
/// whose creation crashed early is removable, while legacy JSONL or anything else is
/// refused (legacy sessions must be imported; other files are not ours).
fn refuse_non_journal(vfs: &dyn session_journal::vfs::Vfs, path: &Path) -> Result<(), OpenError> {
    let sig = session_journal::format::SIGNATURE;
    let file = vfs
        .open(path, session_journal::vfs::OpenMode::Read)
        .map_err(io(path, "open"))?;
    let len = file.len().map_err(io(path, "stat"))?;
    let n = usize::try_from(len.min(sig.len() as u64)).unwrap_or(sig.len());
    let mut head = [0u8; 8];
    file.read_exact_at(0, &mut head[..n])
        .map_err(io(path, "read"))?;
    if head[..n] == sig[..n] {
        return Ok(());
    }
    let first = head[..n].iter().copied().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'{') {
        return Err(OpenError::LegacyJsonl {
            path: path.to_path_buf(),
        });
    }
    Err(OpenError::NotAJournal {
        path: path.to_path_buf(),
        found: format!("it starts with {:02x?}", &head[..n]),
    })
}

/// Hands one journal frame to a read-only view, with the entry its payload parses to.
fn push_frame(view: &mut ResidentSession, frame: &session_journal::Frame, path: &Path) {
    let entry = (frame.info.kind == kinds::ENTRY)
        .then(|| parse_entry(&frame.payload, path, frame.info.offset.0, true).ok())
        .flatten();
    view.push_frame(frame.info.kind, &frame.payload, entry);
}
