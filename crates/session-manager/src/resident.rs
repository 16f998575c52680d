//! Resident views: every entry in memory, with the seed's synchronous getters.
//! [`ResidentSession::in_memory`] persists nothing; [`Store::open_read_only`]
//! (crate::Store::open_read_only) is a read-only snapshot of a journal.

use std::path::{Path, PathBuf};

use session_context::{ContextOptions, SessionContext};
use session_index::{Derived, EntryIndex, kinds};
use session_journal::FrameKind;
use session_types::{Entry, EntryBase, EntryId, SessionHeader, SessionId};

use crate::append::{append_methods, base, complete_entry, fresh_id, recreated_label};
use crate::clock::Sources;
use crate::error::{AppendError, ReadError};
use crate::handle::NewSessionOptions;
use crate::read::{NodeEntry, ReadLimits, SessionTree};
use crate::source::{Memory, NO_ENTRY};

/// A session held entirely in memory, with the seed's synchronous getters
/// (`get_entry`, `get_branch`, `get_entries`, `get_tree`, `build_session_context`).
///
/// In-memory sessions ([`ResidentSession::in_memory`]) accept appends and persist
/// nothing. Read-only views of a journal
/// ([`Store::open_read_only`](crate::Store::open_read_only)) refuse appends
/// ([`AppendError::ReadOnly`]) but can move their leaf.
///
/// ```
/// use session_manager::{ResidentSession, Sources};
/// let mut s = ResidentSession::in_memory("/work", Sources::deterministic(1_735_689_600_000, 7));
/// let a = s.append_thinking_level_change("high")?;
/// let b = s.append_label_change(a.as_str(), Some("start"))?;
/// assert_eq!(s.get_leaf_id(), Some(&b));
/// assert_eq!(s.get_label(a.as_str()), Some("start"));
/// assert_eq!(s.get_branch(None).len(), 2);
/// assert_eq!(s.build_session_context()?.settings.thinking_level_str(), Some("high"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct ResidentSession {
    sources: Sources,
    header: SessionHeader,
    /// What the session's records derive (ids, parents, tree, labels, name): the
    /// rules owned sessions answer from, fed through the same path.
    derived: Derived,
    /// Every entry, in file order.
    entries: Vec<Entry>,
    /// Per record of `derived`, the position of its entry in `entries`
    /// ([`NO_ENTRY`] for the header record and payloads that are not entries).
    slots: Vec<u32>,
    /// The text of each entry record read from a journal that holds a number beyond
    /// a double's range (`1e400`: `Infinity` to the reference, `null` in the typed
    /// entry, D11) or a lone surrogate (U+FFFD in the typed entry, D6), by record:
    /// what the context reads such a field from, as the views that read the journal
    /// do. Only those records: a resident view holds typed entries, not their text.
    raw: std::collections::HashMap<u32, Box<[u8]>>,
    leaf: Option<EntryId>,
    file: Option<PathBuf>,
    session_dir: PathBuf,
    artifact_dir: Option<PathBuf>,
    /// How errors name this session: its journal, or its id in memory.
    name_in_errors: String,
}

impl ResidentSession {
    append_methods!();

    /// `SessionManager.inMemory(cwd)`: a new session that persists nothing.
    pub fn in_memory(cwd: &str, sources: Sources) -> Self {
        let now = sources.clock.now_ms();
        let header = SessionHeader::new(
            SessionId::new(sources.ids.session_id(now)),
            session_types::Timestamp::from_unix_ms(now),
            cwd,
        );
        Self::from_entries(header, Vec::new(), sources)
    }

    /// An in-memory session holding `entries` (header excluded, file order), e.g. to
    /// build contexts from entries obtained elsewhere. The leaf is the last entry.
    pub fn from_entries(header: SessionHeader, entries: Vec<Entry>, sources: Sources) -> Self {
        let mut s = Self::empty(sources, header, None, PathBuf::new(), None);
        s.derived
            .push_payload(kinds::SESSION_HEADER, s.header.to_json().as_bytes());
        s.slots.push(NO_ENTRY);
        s.entries.reserve(entries.len());
        for e in entries {
            s.push(e);
        }
        s.resume_at_last();
        s
    }

    /// An empty read-only view of the journal `file` (`Store::open_read_only`), fed
    /// by [`push_frame`](Self::push_frame) and finished by
    /// [`resume_at_last`](Self::resume_at_last).
    pub(crate) fn read_only(
        sources: Sources,
        header: SessionHeader,
        file: PathBuf,
        session_dir: PathBuf,
        artifact_dir: Option<PathBuf>,
    ) -> Self {
        Self::empty(sources, header, Some(file), session_dir, artifact_dir)
    }

    /// Adds one journal frame through the same replay as the journal's index; `entry`
    /// is the entry its payload parsed to, if any.
    pub(crate) fn push_frame(&mut self, kind: FrameKind, payload: &[u8], entry: Option<Entry>) {
        let before = self.derived.len();
        self.derived.push_payload(kind, payload);
        if self.derived.len() == before {
            return; // a frame of another kind: counted, not a record
        }
        if kind == kinds::ENTRY
            && let Ok(record) = u32::try_from(before)
        {
            let text = String::from_utf8_lossy(payload);
            let infinite = session_types::js::may_hold_infinite_number(payload)
                && matches!(
                    session_types::js::finite_view(&text),
                    std::borrow::Cow::Owned(_)
                );
            if infinite || !session_types::json::find_lone_surrogates(&text).is_empty() {
                self.raw.insert(record, payload.into());
            }
        }
        match entry {
            Some(e) => {
                self.slots
                    .push(u32::try_from(self.entries.len()).unwrap_or(NO_ENTRY));
                self.entries.push(e);
            }
            None => self.slots.push(NO_ENTRY),
        }
    }

    fn empty(
        sources: Sources,
        header: SessionHeader,
        file: Option<PathBuf>,
        session_dir: PathBuf,
        artifact_dir: Option<PathBuf>,
    ) -> Self {
        let name_in_errors = file.as_ref().map_or_else(
            || header.id.as_str().to_owned(),
            |p| p.display().to_string(),
        );
        Self {
            sources,
            header,
            derived: Derived::new(),
            entries: Vec::new(),
            slots: Vec::new(),
            raw: std::collections::HashMap::new(),
            leaf: None,
            file,
            session_dir,
            artifact_dir,
            name_in_errors,
        }
    }

    /// The leaf the reference resumes at: the last appended entry.
    pub(crate) fn resume_at_last(&mut self) {
        self.leaf = self
            .derived
            .leaf()
            .and_then(|l| self.derived.id_of(l))
            .map(EntryId::new);
    }

    fn push(&mut self, e: Entry) {
        self.derived.push_entry(&e);
        self.slots
            .push(u32::try_from(self.entries.len()).unwrap_or(NO_ENTRY));
        self.entries.push(e);
    }

    fn memory(&self) -> Memory<'_> {
        Memory {
            derived: &self.derived,
            entries: &self.entries,
            slots: &self.slots,
            raw: &self.raw,
            session: &self.name_in_errors,
        }
    }

    /// The entry of a record.
    fn entry_at(&self, i: EntryIndex) -> Option<&Entry> {
        self.memory().get(i)
    }

    fn append_with(
        &mut self,
        build: impl FnOnce(EntryBase) -> Entry,
    ) -> Result<EntryId, AppendError> {
        self.writable()?;
        let id = fresh_id(&self.sources, |c| self.derived.find(c).is_some());
        let entry = build(base(
            id.clone(),
            self.leaf.clone(),
            self.sources.clock.now(),
        ));
        self.push(entry);
        self.leaf = Some(id.clone());
        Ok(id)
    }

    /// A message entry holds its message: a borrowed one is cloned into it.
    fn append_message_cow(
        &mut self,
        message: std::borrow::Cow<'_, session_types::AgentMessage>,
    ) -> Result<EntryId, AppendError> {
        self.append_with(|b| Entry::message(b, message.into_owned()))
    }

    fn writable(&self) -> Result<(), AppendError> {
        match &self.file {
            Some(path) => Err(AppendError::ReadOnly { path: path.clone() }),
            None => Ok(()),
        }
    }

    fn has_entry(&self, id: &str) -> bool {
        self.derived.find(id).is_some()
    }

    /// Appends a caller-built entry (see
    /// [`OwnedSession::append_entry`](crate::OwnedSession::append_entry)).
    pub fn append_entry(&mut self, mut entry: Entry) -> Result<EntryId, AppendError> {
        self.writable()?;
        let sources = self.sources.clone();
        let derived = &self.derived;
        let id = complete_entry(
            &mut entry,
            || fresh_id(&sources, |c| derived.find(c).is_some()),
            self.leaf.clone(),
            sources.clock.now(),
        )?;
        if self.derived.find(id.as_str()).is_some() {
            return Err(AppendError::InvalidEntry {
                reason: format!("entry {id} already exists"),
            });
        }
        self.push(entry);
        self.leaf = Some(id.clone());
        Ok(id)
    }

    // ----- resident getters -----

    /// `getEntry(id)`: the entry with this id (the last one when ids repeat).
    pub fn get_entry(&self, id: &str) -> Option<&Entry> {
        self.derived.find(id).and_then(|i| self.entry_at(i))
    }

    /// `getEntries()`: every entry (header excluded) in file order.
    pub fn get_entries(&self) -> &[Entry] {
        &self.entries
    }

    /// `getLeafEntry()`
    pub fn get_leaf_entry(&self) -> Option<&Entry> {
        self.leaf.as_ref().and_then(|l| self.get_entry(l.as_str()))
    }

    /// `getLabel(id)`
    pub fn get_label(&self, id: &str) -> Option<&str> {
        self.derived.label(id)
    }

    /// `getChildren(id)`: entries whose parent is `id`, in file order.
    pub fn get_children(&self, id: &str) -> Vec<&Entry> {
        self.derived
            .find(id)
            .map(|i| self.derived.children(i))
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| self.entry_at(c))
            .collect()
    }

    /// `getBranch(fromId?)`: the path root → `from` (default: the leaf). Empty when the
    /// leaf is `None` or the id is unknown (as the reference). A parent cycle ends the
    /// walk instead of looping.
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        let start = from.or(self.leaf.as_ref().map(EntryId::as_str));
        match start.and_then(|id| self.derived.find(id)) {
            None => Vec::new(),
            Some(i) => self
                .derived
                .path_to_root(i)
                .path
                .into_iter()
                .filter_map(|x| self.entry_at(x))
                .collect(),
        }
    }

    /// `getTree()`: the reference's tree order (roots in file order, children by
    /// timestamp, stable), flattened. Nodes borrow the session's entries.
    pub fn get_tree(&self) -> SessionTree<'_> {
        let loaded =
            crate::read::assemble_tree(&self.derived, self.derived.tree().preorder(), |i| {
                Ok::<_, std::convert::Infallible>(self.entry_at(i).map(NodeEntry::Borrowed))
            });
        match loaded {
            Ok(tree) => tree,
            Err(never) => match never {},
        }
    }

    /// `buildSessionContext()`: the context at the leaf (empty when the leaf is
    /// `None`). A parent cycle is an error, not a hang.
    pub fn build_session_context(&self) -> Result<SessionContext<'static>, ReadError> {
        self.build_session_context_with(&ContextOptions::default())
    }

    /// [`build_session_context`](Self::build_session_context) with options.
    pub fn build_session_context_with(
        &self,
        options: &ContextOptions,
    ) -> Result<SessionContext<'static>, ReadError> {
        // Everything is in memory already: no read limit applies.
        let unlimited = ReadLimits {
            max_source_entries: u64::MAX,
            max_source_bytes: u64::MAX,
        };
        let leaf = crate::view::context_leaf(&self.derived, self.leaf.as_ref());
        crate::view::context_in(self.memory(), leaf, unlimited, options)
    }

    // ----- leaf -----

    /// `getLeafId()`
    pub fn get_leaf_id(&self) -> Option<&EntryId> {
        self.leaf.as_ref()
    }

    /// `branchTo(id | null)` (see [`OwnedSession::branch_to`](crate::OwnedSession::branch_to)).
    pub fn branch_to(&mut self, id: Option<&str>) -> Result<(), AppendError> {
        self.leaf = match id {
            None => None,
            Some(id) if self.derived.find(id).is_some() => Some(EntryId::new(id)),
            Some(id) => {
                return Err(AppendError::EntryNotFound {
                    session: self.error_name(),
                    id: id.to_owned(),
                });
            }
        };
        Ok(())
    }

    /// `branchWithSummary(id | null, summary, details?, fromHook?)`
    pub fn branch_with_summary(
        &mut self,
        from: Option<&str>,
        summary: &str,
        details: Option<serde_json::Value>,
        from_hook: Option<bool>,
    ) -> Result<EntryId, AppendError> {
        self.writable()?;
        self.branch_to(from)?;
        let from = from.map(EntryId::new);
        self.append_with(|b| Entry::branch_summary(b, from.as_ref(), summary, details, from_hook))
    }

    // ----- session management -----

    /// `newSession({id?, parentSession?})` in memory: a new, empty in-memory session.
    /// A caller id is used as given (nothing is named after it).
    pub fn new_session(&self, options: NewSessionOptions) -> ResidentSession {
        let mut s = ResidentSession::in_memory(self.cwd(), self.sources.clone());
        if let Some(id) = options.id {
            s.header.id = SessionId::new(id);
        }
        s.header.parent_session = options.parent_session;
        s
    }

    /// `createBranchedSession(leafId)` in memory: a new in-memory session with the path
    /// root → `leaf` (labels left out, then re-created for labelled path entries with
    /// the original label entries' timestamps, as in 0.73.1).
    pub fn create_branched_session(
        &self,
        leaf: impl AsRef<str>,
    ) -> Result<ResidentSession, AppendError> {
        let leaf = leaf.as_ref();
        let Some(i) = self.derived.find(leaf) else {
            return Err(AppendError::EntryNotFound {
                session: self.error_name(),
                id: leaf.to_owned(),
            });
        };
        let plan = crate::read::branch_plan(&self.derived, i);
        let mut new = ResidentSession::in_memory(self.cwd(), self.sources.clone());
        new.header.parent_session = self.file.as_ref().map(|f| f.to_string_lossy().into_owned());
        for x in &plan.path {
            if let Some(e) = self.entry_at(*x) {
                new.push(e.clone());
            }
        }
        new.resume_at_last();
        let mut load =
            |x| Ok::<_, std::convert::Infallible>(self.entry_at(x).map(NodeEntry::Borrowed));
        for (target, label) in &plan.labels {
            let time = match crate::read::label_time(&self.derived, target, &mut load) {
                Ok(t) => t,
                Err(never) => match never {},
            };
            new.append_with(|b| recreated_label(b, target, label, time))?;
        }
        Ok(new)
    }

    // ----- accessors -----

    /// `getHeader()`
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// `getSessionName()`: the latest `session_info` name in file order (trimmed as
    /// JavaScript trims; empty clears).
    pub fn session_name(&self) -> Option<&str> {
        self.derived.name()
    }

    /// `getCwd()`
    pub fn cwd(&self) -> &str {
        self.header.cwd.as_deref().unwrap_or("")
    }

    /// `getSessionDir()`: `""` in memory, the store's sessions directory for a
    /// read-only view.
    pub fn session_dir(&self) -> &Path {
        &self.session_dir
    }

    /// `getSessionId()`
    pub fn session_id(&self) -> &str {
        self.header.id.as_str()
    }

    /// How errors name this session: its journal, or its id in memory.
    pub(crate) fn error_name(&self) -> String {
        self.name_in_errors.clone()
    }

    /// `getSessionFile()`: `None` in memory; the journal for a read-only view.
    pub fn session_file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// `isPersisted()`: false in memory; true for a read-only view of a journal (the
    /// session is on disk, though this view writes nothing).
    pub fn is_persisted(&self) -> bool {
        self.file.is_some()
    }

    /// `getSessionArtifactDir()`: `None` in memory; the session's artifact directory
    /// for a read-only view (not created).
    pub fn session_artifact_dir(&self) -> Option<&Path> {
        self.artifact_dir.as_deref()
    }

    /// `supportsCapturedHistoryReads()`: false — resident views read from memory.
    pub fn supports_captured_history_reads(&self) -> bool {
        false
    }
}
