//! Owned sessions: persisted, locked, index-backed; history is read only through
//! bounded, captured reads.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use session_context::{ContextOptions, SessionContext};
use session_import::Retention;
use session_index::{EntryIndex, Index, kinds};
use session_journal::{
    Capture, Durability, NewFrame, PendingSync, Reader, SyncDone, UnixMillis, Writer,
};
use session_types::{AgentMessage, Entry, EntryBase, EntryId, EntryRef, SessionHeader, Timestamp};

use crate::append::{append_methods, base, complete_entry, fresh_id};
use crate::error::{AppendError, ReadError};
use crate::handle::Store;
use crate::read::{Accounting, ReadLimits, SessionTree};
use crate::source::{Snapshot, SnapshotReader};

/// Appends between two syncs of a buffered session's journal, and the fewest between
/// two index sidecar saves (the sidecar is also saved at `sync` and close).
pub const INDEX_SAVE_EVERY: u32 = 1024;

/// Appends between two index sidecar saves for a session of `entries` entries: at
/// least [`INDEX_SAVE_EVERY`], and an eighth of the session. A save writes the whole
/// sidecar (72 bytes per entry plus ids), so a fixed interval made an append's share
/// of the saves grow with the session (13 µs per append at 100k entries); spacing
/// saves in proportion keeps that share constant. The price: after a crash, the next
/// open catches up (verifies and indexes) at most an eighth of the session.
pub fn index_save_interval(entries: usize) -> u32 {
    u32::try_from(entries / 8)
        .unwrap_or(u32::MAX)
        .max(INDEX_SAVE_EVERY)
}

/// A persisted session this process owns: it holds the journal's writer lock until
/// dropped or [closed](OwnedSession::close), appends durably by default, and reads its
/// history only through bounded, captured reads (`read_*`).
///
/// It has no synchronous body getters: those belong to
/// [`ResidentSession`](crate::ResidentSession), and the types make the difference.
///
/// ```compile_fail
/// # fn f(s: &session_manager::OwnedSession) {
/// let _ = s.get_entry("a1b2c3d4"); // owned sessions have no resident getters
/// # }
/// ```
///
/// ```compile_fail
/// # fn f(s: &session_manager::OwnedSession) {
/// let _ = s.get_entries();
/// # }
/// ```
#[derive(Debug)]
pub struct OwnedSession {
    pub(crate) store: Store,
    pub(crate) path: PathBuf,
    /// Behind a mutex only so that [`sync_journal_shared`](Self::sync_journal_shared)
    /// can sync through `&self` while reads go on; every other use is `&mut self`
    /// (`get_mut`, no locking).
    pub(crate) writer: Mutex<Writer>,
    /// What the writer has written so far (its `capture()`), kept beside it so that
    /// reads never take the writer's mutex (which a shared sync holds).
    pub(crate) captured: Capture,
    pub(crate) reader: Reader,
    pub(crate) index: Index,
    pub(crate) header: SessionHeader,
    pub(crate) leaf: Option<EntryId>,
    pub(crate) durability: Durability,
    pub(crate) unsaved: u32,
    pub(crate) repaired: Option<TailRepair>,
    /// The journal bytes the index covered when the session was opened: closing a
    /// session that grew records it in the listing catalog.
    pub(crate) opened_len: u64,
}

/// The times of one append: its frame's, and what `Date.parse` reads from its
/// entry's timestamp when the appender formatted it (`None`: the index parses it).
#[derive(Debug, Clone, Copy)]
struct Stamp {
    frame: UnixMillis,
    timestamp_ms: Option<i64>,
}

/// An entry the manager built or completed has an id; not having one is a bug.
fn no_id() -> AppendError {
    AppendError::InvalidEntry {
        reason: "entry without id".into(),
    }
}

/// A torn tail that opening the session cut: the bytes of an append that was never
/// acknowledged (a writer killed inside it), copied aside before the cut. Opening
/// repairs a torn tail and reports it here; it is never an error (corruption of
/// acknowledged data is: [`OpenError::Journal`](crate::OpenError::Journal)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TailRepair {
    /// Where the torn frame began (the journal's length now).
    pub offset: u64,
    /// How many bytes were cut.
    pub bytes: u64,
    /// Where they were copied (`<journal>.torn-<ms>`); `None` when they were all zero.
    pub copied_to: Option<PathBuf>,
}

impl OwnedSession {
    append_methods!();

    /// The seed's appends all go through here: a fresh id, `parentId` = the leaf,
    /// `timestamp` = now; the entry is appended (durably by default), indexed, and
    /// becomes the leaf.
    pub(crate) fn append_with(
        &mut self,
        build: impl FnOnce(EntryBase) -> Entry,
    ) -> Result<EntryId, AppendError> {
        let id = fresh_id(&self.store.sources, |c| self.index.find(c).is_some());
        // One clock reading stamps the entry and its frame (a test clock keeps its
        // two).
        let (ms, frame_ms) = self.store.sources.clock.stamp_ms();
        let (timestamp, read_back) = Timestamp::from_unix_ms_read_back(ms);
        // The text the index may skip parsing (`read_back` is known for the 24-byte
        // shape only), kept to check that the built entry still carries it: a
        // builder may set a time of its own (a re-created label keeps its label's).
        let formatted: Option<([u8; 24], i64)> =
            read_back.and_then(|ms| Some((timestamp.as_str().as_bytes().try_into().ok()?, ms)));
        // The leaf becomes the new entry's parent and the new id the entry's (both
        // moved, not copied: the append replaces the leaf, and a failed one puts it
        // back).
        let mut entry = build(base(id, self.leaf.take(), timestamp));
        let carries = |text: &[u8; 24]| {
            entry
                .base()
                .and_then(|b| b.timestamp.as_ref())
                .is_some_and(|t| t.as_str().as_bytes() == text)
        };
        let stamp = Stamp {
            frame: UnixMillis(u64::try_from(frame_ms).unwrap_or(0)),
            timestamp_ms: formatted.and_then(|(text, ms)| carries(&text).then_some(ms)),
        };
        let written = self.write_entry(&entry, stamp);
        let base = entry.base_mut();
        match written {
            Ok(()) => {
                let id = base.and_then(|b| b.id.take()).ok_or_else(no_id)?;
                self.leaf = Some(id.clone());
                Ok(id)
            }
            Err(e) => {
                self.leaf = base.and_then(|b| b.parent_id.take());
                Err(e)
            }
        }
    }

    /// [`append_with`](Self::append_with) for a message entry: written and indexed
    /// from the base and the message in place ([`EntryRef::Message`]), so a borrowed
    /// message is never cloned.
    fn append_message_cow(
        &mut self,
        message: Cow<'_, AgentMessage>,
    ) -> Result<EntryId, AppendError> {
        let id = fresh_id(&self.store.sources, |c| self.index.find(c).is_some());
        let tag = kinds::id_tag(id.as_str());
        let (ms, frame_ms) = self.store.sources.clock.stamp_ms();
        // The text is the 24-byte shape exactly when its milliseconds read back.
        let (timestamp, read_back) = Timestamp::from_unix_ms_read_back(ms);
        let base = base(id, self.leaf.take(), timestamp);
        let stamp = Stamp {
            frame: UnixMillis(u64::try_from(frame_ms).unwrap_or(0)),
            timestamp_ms: read_back,
        };
        let entry = EntryRef::Message {
            base: &base,
            message: &message,
        };
        match self.write_tagged(entry, tag, stamp) {
            Ok(()) => {
                let id = base.id.ok_or_else(no_id)?;
                self.leaf = Some(id.clone());
                Ok(id)
            }
            Err(e) => {
                self.leaf = base.parent_id;
                Err(e)
            }
        }
    }

    fn has_entry(&self, id: &str) -> bool {
        self.index.find(id).is_some()
    }

    /// Appends a caller-built entry of any type (including types this version does not
    /// know). Missing `id` / `parentId` / `timestamp` are filled like the typed
    /// appends do (fresh id, the leaf, now); present ones are kept. A present id that
    /// the session already has is refused, and so is a `parentId` that names no entry
    /// of the session (the entry would start a tree of its own and the context built
    /// from it would lose all history). The entry becomes the leaf.
    pub fn append_entry(&mut self, mut entry: Entry) -> Result<EntryId, AppendError> {
        let sources = self.store.sources.clone();
        let index = &self.index;
        let id = complete_entry(
            &mut entry,
            || fresh_id(&sources, |c| index.find(c).is_some()),
            self.leaf.clone(),
            sources.clock.now(),
        )?;
        if self.index.find(id.as_str()).is_some() {
            // Either the caller's id repeats, or the fresh id we just drew (which
            // `fresh_id` excluded) — only the former can happen.
            return Err(AppendError::InvalidEntry {
                reason: format!("entry {id} already exists"),
            });
        }
        if let Some(parent) = entry.parent_id()
            && self.index.find(parent).is_none()
        {
            return Err(AppendError::InvalidEntry {
                reason: format!("parentId {parent:?} names no entry of this session"),
            });
        }
        let stamp = Stamp {
            frame: self.writer_mut().now(),
            timestamp_ms: None,
        };
        self.write_entry_as(&entry, &id, stamp)?;
        self.leaf = Some(id.clone());
        Ok(id)
    }

    /// Appends `entry` (its id is its base's), indexes it, and syncs periodically;
    /// the caller sets the leaf.
    fn write_entry(&mut self, entry: &Entry, stamp: Stamp) -> Result<(), AppendError> {
        let id = entry.id().ok_or_else(no_id)?;
        // The id is borrowed from the entry while `self` is written: its tag first.
        let tag = kinds::id_tag(id);
        self.write_tagged(entry.into(), tag, stamp)
    }

    fn write_entry_as(
        &mut self,
        entry: &Entry,
        id: &EntryId,
        stamp: Stamp,
    ) -> Result<(), AppendError> {
        self.write_tagged(entry.into(), kinds::id_tag(id.as_str()), stamp)
    }

    fn write_tagged(
        &mut self,
        entry: EntryRef<'_>,
        tag: session_journal::Tag,
        stamp: Stamp,
    ) -> Result<(), AppendError> {
        // The entry is serialized once, straight into the frame buffer, and the index
        // takes its fields from the typed entry rather than parsing that text again.
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let written =
            writer.append_encoded_at(kinds::ENTRY, tag, stamp.frame, self.durability, |buf| {
                if entry.write_json(&mut *buf).is_err() {
                    // Unreachable (the buffer never fails); an empty payload is refused.
                    buf.clear();
                }
            });
        let observed = match written {
            Ok((appended, payload)) => self
                .index
                .observe_entry_timed(&appended, payload, entry, stamp.timestamp_ms)
                .map_err(AppendError::from),
            Err(e) => Err(AppendError::from(e)),
        };
        self.captured = self.writer_mut().capture();
        observed?;
        self.unsaved += 1;
        if self.unsaved.is_multiple_of(INDEX_SAVE_EVERY) {
            self.sync_periodically();
        }
        Ok(())
    }

    /// Every [`INDEX_SAVE_EVERY`] appends: the journal's sync (a buffered session's
    /// bound on what a power loss takes) and, when due, the index sidecar's save, both
    /// on the writer's background sync so that no append waits for them. The save is
    /// encoded here and written by that thread once the journal bytes it covers are
    /// durable. Best effort: a failed sync poisons the writer and the next call
    /// reports it; a failed save leaves the older sidecar, which the next open
    /// catches up. When a background sync is still running, this one is skipped (and
    /// the save tried again at the next interval).
    fn sync_periodically(&mut self) {
        if self.unsaved >= index_save_interval(self.index.len()) {
            let save = self.index.prepare_save();
            let started = self
                .writer_mut()
                .sync_in_background_then(Box::new(move |durable| {
                    let _ = save.write(durable);
                }));
            if matches!(started, Ok(true)) {
                self.unsaved = 0;
            }
        } else if self.durability != Durability::Durable {
            let _ = self.writer_mut().sync_in_background();
        }
    }

    /// Saves the index sidecar for what is durable (best effort: the index is derived
    /// and rebuilt when missing).
    fn save_index(&mut self) {
        if self.unsaved == 0 {
            return;
        }
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if writer.sync().is_ok() && self.index.save(writer.durable_capture()).is_ok() {
            self.unsaved = 0;
        }
    }

    /// The writer (never contended with `&mut self`).
    fn writer_mut(&mut self) -> &mut Writer {
        self.writer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// How appends travel: [`Durability::Durable`] (the default: synced before the
    /// append returns) or [`Durability::Buffered`] (survives a process crash; synced at
    /// [`sync`](Self::sync), close, and every [`INDEX_SAVE_EVERY`] appends on the
    /// writer's background sync, which no append waits for; the index is saved every
    /// [`index_save_interval`] appends, on that background sync too).
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// Makes every append so far durable, without saving the index: one `fdatasync`,
    /// whatever the session's size (the sidecar is still saved on its interval, and at
    /// [`sync`](Self::sync) and close). What a group commit needs: the cost of making a
    /// batch durable must not grow with the session.
    pub fn sync_journal(&mut self) -> Result<(), AppendError> {
        self.writer_mut().sync()?;
        if self.unsaved >= index_save_interval(self.index.len()) {
            self.save_index();
        }
        Ok(())
    }

    /// Makes every append so far durable and saves the index.
    pub fn sync(&mut self) -> Result<(), AppendError> {
        self.writer_mut().sync()?;
        self.save_index();
        Ok(())
    }

    /// Makes every append so far durable through a shared reference (one
    /// `fdatasync`), so that reads (`&self`) go on while it runs: what lets an owner
    /// answer reads during a group commit's sync. It saves no index; a later
    /// [`sync_journal`](Self::sync_journal) costs no second `fdatasync` and saves the
    /// index when due. A failure poisons the writer, as every sync does.
    pub fn sync_journal_shared(&self) -> Result<(), AppendError> {
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .sync()?;
        Ok(())
    }

    /// Starts a sync of every append so far that runs without the session
    /// ([`PendingSync::run`], on any thread), so that appends go on while it runs:
    /// what lets an owner write its next batch during the previous batch's
    /// `fdatasync`. Hand the outcome to [`finish_sync`](Self::finish_sync). `None`
    /// when everything appended is durable already.
    pub fn start_sync(&mut self) -> Result<Option<PendingSync>, AppendError> {
        Ok(self.writer_mut().start_sync()?)
    }

    /// Records a sync started by [`start_sync`](Self::start_sync): the appends made
    /// before it started are durable (or, when it failed, the writer is poisoned and
    /// the error returned), and the index sidecar is saved when due, as
    /// [`sync_journal`](Self::sync_journal) does.
    pub fn finish_sync(&mut self, done: SyncDone) -> Result<(), AppendError> {
        self.writer_mut().finish_sync(done)?;
        if self.unsaved >= index_save_interval(self.index.len()) {
            self.save_index();
        }
        Ok(())
    }

    /// The id of the last entry appended (in journal order; not the leaf, which
    /// `branch` moves), `None` before any entry.
    pub fn last_entry_id(&self) -> Option<&str> {
        self.index.leaf().and_then(|l| self.index.id_of(l))
    }

    /// Syncs, seals the journal (a clean close: damage to any of its frames is
    /// corruption from now on, never a torn tail), saves the index (covering the
    /// seal), records the session in its directory's listing catalog when it grew (one
    /// record appended, O(1) in the number of sessions; best effort: the catalog is
    /// derived) and releases the lock.
    pub fn close(mut self) -> Result<(), AppendError> {
        let seal = {
            let writer = self.writer_mut();
            writer.seal()?;
            writer.last_frame().filter(|f| f.kind.is_seal())
        };
        // The index covers the seal too, so the sidecar saved now is fresh for the
        // whole file and names the seal as its witness (derived: best effort).
        if let Some(seal) = seal
            && self.index.covered_len() != seal.end()
            && self.index.observe_seal(&seal).is_ok()
        {
            self.unsaved += 1;
        }
        self.save_index();
        if self.index.covered_len().0 != self.opened_len {
            let _ = session_index::note(self.store.vfs.as_ref(), &self.path, &self.index);
        }
        Ok(())
    }

    // ----- leaf -----

    /// `getLeafId()`: the current leaf (`None`: before any entry).
    pub fn get_leaf_id(&self) -> Option<&EntryId> {
        self.leaf.as_ref()
    }

    /// `branchTo(id | null)`: moves the leaf to an existing entry, or with `None` to
    /// the position before any entry (the next append is a new root). Appends nothing;
    /// the leaf is not persisted (reopening resumes at the last appended entry).
    pub fn branch_to(&mut self, id: Option<&str>) -> Result<(), AppendError> {
        self.leaf = match id {
            None => None,
            Some(id) => match self.index.find(id) {
                Some(_) => Some(EntryId::new(id)),
                None => {
                    return Err(AppendError::EntryNotFound {
                        session: self.error_name(),
                        id: id.to_owned(),
                    });
                }
            },
        };
        Ok(())
    }

    /// `branchWithSummary(id | null, summary, details?, fromHook?)`: moves the leaf to
    /// `from` and appends a `branch_summary` under it (`fromId: "root"` and a new root
    /// for `None`); the summary becomes the leaf.
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<serde_json::Value>,
        from_hook: Option<bool>,
    ) -> Result<EntryId, AppendError> {
        self.branch_to(from)?;
        let from = from.map(EntryId::new);
        self.append_with(|b| Entry::branch_summary(b, from.as_ref(), summary, details, from_hook))
    }

    // ----- captured reads -----

    /// A consistent view of what has been appended so far. Reads through it
    /// (`*_in` methods) never see later appends.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            capture: self.captured,
            frames: u32::try_from(self.index.len()).unwrap_or(u32::MAX),
        }
    }

    pub(crate) fn view(&self, snapshot: Snapshot) -> SnapshotReader<'_> {
        SnapshotReader {
            index: &self.index,
            reader: &self.reader,
            snapshot,
            path: &self.path,
            prefetched: Default::default(),
        }
    }

    /// `supportsCapturedHistoryReads()`: always true for an owned session.
    pub fn supports_captured_history_reads(&self) -> bool {
        true
    }

    /// `readLeafEntry(maxSourceBytes?)`: the leaf entry (`None` before any entry).
    pub fn read_leaf_entry(&self, limits: ReadLimits) -> Result<Option<Entry>, ReadError> {
        match self.leaf.clone() {
            None => Ok(None),
            Some(id) => self.read_entry(id.as_str(), limits).map(Some),
        }
    }

    /// `readEntry(id, maxSourceBytes?)`: one detached entry.
    pub fn read_entry(&self, id: impl AsRef<str>, limits: ReadLimits) -> Result<Entry, ReadError> {
        let id = id.as_ref();
        let view = self.view(self.snapshot());
        let i = view.find(id).ok_or_else(|| ReadError::EntryNotFound {
            session: self.error_name(),
            id: id.to_owned(),
        })?;
        let acct = Accounting::new(limits, self.error_name());
        acct.reserve(1, view.payload_len(i))?;
        view.load_entry(i)
    }

    /// `readLabel(id, maxSourceBytes?)`: the current label of an entry. Labels are
    /// held by the index, so no frame is read, but the answer is accounted as the
    /// label entry that set it: one source entry of its payload's size, so a label
    /// larger than `limits` allows fails like any other read.
    pub fn read_label(
        &self,
        id: impl AsRef<str>,
        limits: ReadLimits,
    ) -> Result<Option<String>, ReadError> {
        let id = id.as_ref();
        let Some(label) = self.index.label(id) else {
            return Ok(None);
        };
        let view = self.view(self.snapshot());
        let bytes = self
            .index
            .label_entry(id)
            .map_or(label.len() as u64, |i| view.payload_len(i));
        Accounting::new(limits, self.error_name()).reserve(1, bytes)?;
        Ok(Some(label.to_owned()))
    }

    /// `readBranch(fromId?, limits?)`: the complete path root → `from` (default: the
    /// leaf; `[]` when the leaf is `None`). An unknown id is an error.
    pub fn read_branch(
        &self,
        from: Option<&str>,
        limits: ReadLimits,
    ) -> Result<Vec<Entry>, ReadError> {
        self.read_branch_in(&self.snapshot(), from, limits)
    }

    /// [`read_branch`](Self::read_branch) through a given snapshot.
    pub fn read_branch_in(
        &self,
        snapshot: &Snapshot,
        from: Option<&str>,
        limits: ReadLimits,
    ) -> Result<Vec<Entry>, ReadError> {
        let view = self.view(*snapshot);
        let acct = Accounting::new(limits, self.error_name());
        let mut cache = HashMap::new();
        let from = from
            .map(str::to_owned)
            .or_else(|| self.leaf.as_ref().map(|l| l.0.clone()));
        match from {
            None => Ok(Vec::new()),
            Some(id) => self.branch_into(&view, &id, &acct, &mut cache),
        }
    }

    fn branch_into(
        &self,
        view: &SnapshotReader<'_>,
        id: &str,
        acct: &Accounting,
        cache: &mut HashMap<EntryIndex, Entry>,
    ) -> Result<Vec<Entry>, ReadError> {
        let i = view.find(id).ok_or_else(|| ReadError::EntryNotFound {
            session: self.error_name(),
            id: id.to_owned(),
        })?;
        let p = self.index.path_to_root(i);
        if let Some(cycle) = &p.cycle {
            let at = cycle
                .first()
                .and_then(|c| self.index.info(*c))
                .and_then(|x| x.id);
            return Err(ReadError::Cycle {
                id: at.unwrap_or(id).to_owned(),
            });
        }
        let new: Vec<EntryIndex> = p
            .path
            .iter()
            .copied()
            .filter(|x| !cache.contains_key(x))
            .collect();
        let bytes: u64 = new.iter().map(|x| view.payload_len(*x)).sum();
        acct.reserve(new.len() as u64, bytes)?;
        for x in new {
            let e = view.load_entry(x)?;
            cache.insert(x, e);
        }
        Ok(p.path
            .iter()
            .filter_map(|x| cache.get(x).cloned())
            .collect())
    }

    /// `readBranches(leafIds, limits?)`: several paths through one snapshot with one
    /// shared accounting (an entry shared by several paths is read and counted once).
    pub fn read_branches(
        &self,
        leaf_ids: &[&str],
        limits: ReadLimits,
    ) -> Result<Vec<Vec<Entry>>, ReadError> {
        let view = self.view(self.snapshot());
        let acct = Accounting::new(limits, self.error_name());
        let mut cache = HashMap::new();
        leaf_ids
            .iter()
            .map(|id| self.branch_into(&view, id, &acct, &mut cache))
            .collect()
    }

    /// `readEntries(limits?)`: every entry (header excluded) in append order.
    pub fn read_entries(&self, limits: ReadLimits) -> Result<Vec<Entry>, ReadError> {
        self.read_entries_in(&self.snapshot(), limits)
    }

    /// [`read_entries`](Self::read_entries) through a given snapshot.
    pub fn read_entries_in(
        &self,
        snapshot: &Snapshot,
        limits: ReadLimits,
    ) -> Result<Vec<Entry>, ReadError> {
        let view = self.view(*snapshot);
        let targets: Vec<EntryIndex> = (0..snapshot.frames)
            .map(EntryIndex)
            .filter(|i| {
                self.index
                    .info(*i)
                    .is_some_and(|x| x.kind == kinds::ENTRY_KIND)
                    && !self.index.is_unparsable(*i)
            })
            .collect();
        let bytes: u64 = targets.iter().map(|x| view.payload_len(*x)).sum();
        Accounting::new(limits, self.error_name()).reserve(targets.len() as u64, bytes)?;
        let mut out = Vec::with_capacity(targets.len());
        for i in targets {
            out.push(view.load_entry(i)?);
        }
        Ok(out)
    }

    /// `readTree(limits?)`: the whole tree in the reference's `getTree()` order, with
    /// labels. Members of a parent cycle are not reachable from a root and are absent,
    /// as in the reference.
    pub fn read_tree(&self, limits: ReadLimits) -> Result<SessionTree<'static>, ReadError> {
        let view = self.view(self.snapshot());
        let order: Vec<_> = self
            .index
            .tree()
            .preorder()
            .into_iter()
            .filter(|n| view.visible(n.entry))
            .collect();
        let bytes: u64 = order.iter().map(|n| view.payload_len(n.entry)).sum();
        Accounting::new(limits, self.error_name()).reserve(order.len() as u64, bytes)?;
        crate::read::assemble_tree(&self.index, order, |i| {
            if self.index.is_unparsable(i) {
                // A JSON value that is not an object: no `Entry` holds it.
                return Ok(None);
            }
            view.load_entry(i)
                .map(|e| Some(crate::read::NodeEntry::Owned(Box::new(e))))
        })
    }

    /// The working context at the leaf (the resume path): a captured read with the
    /// default limits that loads only the entries the context holds.
    pub fn build_session_context(&self) -> Result<SessionContext<'static>, ReadError> {
        self.build_session_context_with(ReadLimits::default(), &ContextOptions::default())
    }

    /// [`build_session_context`](Self::build_session_context) with explicit limits and
    /// options.
    pub fn build_session_context_with(
        &self,
        limits: ReadLimits,
        options: &ContextOptions,
    ) -> Result<SessionContext<'static>, ReadError> {
        let leaf = crate::view::context_leaf(&self.index, self.leaf.as_ref());
        crate::view::context_in(self.view(self.snapshot()), leaf, limits, options)
    }

    /// `readEntryRetention(id)`: where an imported entry came from. `None` for
    /// natively appended entries — absence does not establish authorship. The index
    /// locates the import's retention table (or the earlier layout's retention frame
    /// after the entry): reads at most three frames.
    pub fn read_entry_retention(
        &self,
        id: impl AsRef<str>,
    ) -> Result<Option<Retention>, ReadError> {
        let id = id.as_ref();
        let view = self.view(self.snapshot());
        let i = view.find(id).ok_or_else(|| ReadError::EntryNotFound {
            session: self.error_name(),
            id: id.to_owned(),
        })?;
        let bound = view.snapshot.committed_bytes();
        Ok(session_import::retention_of(
            &self.reader,
            &self.index,
            i,
            bound,
        )?)
    }

    // ----- accessors -----

    /// `getHeader()`: the session header record.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// `getSessionName()`: the latest `session_info` name in append order (trimmed;
    /// empty clears).
    pub fn session_name(&self) -> Option<&str> {
        self.index.name()
    }

    /// `getCwd()`: the header's working directory (`""` when absent).
    pub fn cwd(&self) -> &str {
        self.header.cwd.as_deref().unwrap_or("")
    }

    /// `getSessionDir()`: where new, branched and forked sessions of this store go.
    pub fn session_dir(&self) -> &Path {
        self.store.layout.sessions_dir()
    }

    /// `getSessionId()`: the header's id.
    pub fn session_id(&self) -> &str {
        self.header.id.as_str()
    }

    /// The torn tail opening this session cut, if it cut one.
    pub fn repaired_tail(&self) -> Option<&TailRepair> {
        self.repaired.as_ref()
    }

    /// How errors name this session: its journal.
    pub(crate) fn error_name(&self) -> String {
        self.path.display().to_string()
    }

    /// `getSessionFile()`: the journal path (always present for an owned session).
    pub fn session_file(&self) -> Option<&Path> {
        Some(&self.path)
    }

    /// `isPersisted()`: always true.
    pub fn is_persisted(&self) -> bool {
        true
    }

    /// `getSessionArtifactDir()`: this session's artifact directory, created `0700` if
    /// missing: the one of the session id the journal's file name carries. A journal
    /// whose name is not `<valid id>.jsonl` has none (`InvalidInput`).
    pub fn session_artifact_dir(&self) -> std::io::Result<PathBuf> {
        let dir = self
            .store
            .artifact_dir_for(&self.path)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.store.vfs.create_dir_all(&dir)?;
        Ok(dir)
    }

    /// The store this session belongs to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The session's derived index (tree queries, counts, listing summary). Feature
    /// `internals`: a lower layer's handle, for the workspace's tests.
    #[cfg(feature = "internals")]
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// Appends verbatim entry payloads (copies), in one write, durably.
    pub(crate) fn append_raw_batch(&mut self, payloads: &[Vec<u8>]) -> Result<(), AppendError> {
        let frames: Vec<NewFrame<'_>> = payloads
            .iter()
            .map(|p| {
                let id = session_types::Envelope::parse(&String::from_utf8_lossy(p))
                    .ok()
                    .and_then(|e| e.id.map(|c| c.into_owned()));
                let f = NewFrame::new(kinds::ENTRY, p);
                match id {
                    Some(id) => f.with_tag(kinds::id_tag(&id)),
                    None => f,
                }
            })
            .collect();
        if frames.is_empty() {
            return Ok(());
        }
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let done = writer.append_batch(&frames, Durability::Durable);
        self.captured = writer.capture();
        let done = done?;
        for (a, p) in done.iter().zip(payloads) {
            self.index
                .observe(kinds::ENTRY, a, p)
                .map_err(AppendError::from)?;
        }
        self.unsaved += u32::try_from(done.len()).unwrap_or(u32::MAX);
        self.leaf = self
            .index
            .leaf()
            .and_then(|l| self.index.info(l))
            .and_then(|i| i.id)
            .map(EntryId::new);
        Ok(())
    }
}

impl Drop for OwnedSession {
    fn drop(&mut self) {
        self.save_index();
    }
}
