//! Resident views: every entry in memory, with the seed's synchronous getters.
//! [`ResidentSession::in_memory`] persists nothing; [`Store::open_read_only`]
//! (crate::Store::open_read_only) is a read-only snapshot of a journal.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use session_context::{ContextOptions, Leaf, ResidentSource, SessionContext, build_context};
use session_types::js::sort::sort_by_number_key;
use session_types::{Entry, EntryBase, EntryId, SessionHeader, SessionId};

use crate::append::{append_methods, base, complete_entry, fresh_id, recreated_label};
use crate::clock::Sources;
use crate::error::{AppendError, ReadError};
use crate::read::{NodeEntry, SessionTree, TreeNode};
use crate::store::NewSessionOptions;

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
    entries: Vec<Entry>,
    by_id: HashMap<String, usize>,
    labels: IndexMap<String, String>,
    /// Per labelled target, the timestamp of the label entry that set its label.
    label_times: HashMap<String, Option<String>>,
    name: Option<String>,
    leaf: Option<EntryId>,
    file: Option<PathBuf>,
    session_dir: PathBuf,
    artifact_dir: Option<PathBuf>,
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
        Self::from_parts(sources, header, Vec::new(), None, PathBuf::new(), None)
    }

    /// An in-memory session holding `entries` (header excluded, file order), e.g. to
    /// build contexts from entries obtained elsewhere. The leaf is the last entry.
    pub fn from_entries(header: SessionHeader, entries: Vec<Entry>, sources: Sources) -> Self {
        Self::from_parts(sources, header, entries, None, PathBuf::new(), None)
    }

    pub(crate) fn from_parts(
        sources: Sources,
        header: SessionHeader,
        entries: Vec<Entry>,
        file: Option<PathBuf>,
        session_dir: PathBuf,
        artifact_dir: Option<PathBuf>,
    ) -> Self {
        let mut s = Self {
            sources,
            header,
            entries: Vec::with_capacity(entries.len()),
            by_id: HashMap::new(),
            labels: IndexMap::new(),
            label_times: HashMap::new(),
            name: None,
            leaf: None,
            file,
            session_dir,
            artifact_dir,
        };
        for e in entries {
            s.push(e);
        }
        s.leaf = s.entries.last().and_then(Entry::id).map(EntryId::new);
        s
    }

    fn push(&mut self, e: Entry) {
        match &e {
            Entry::Label(l) => match l.label.as_deref().filter(|x| !x.is_empty()) {
                Some(label) => {
                    self.labels.insert(l.target_id.0.clone(), label.to_owned());
                    let time = l.base.timestamp.as_ref().map(|t| t.as_str().to_owned());
                    self.label_times.insert(l.target_id.0.clone(), time);
                }
                None => {
                    self.labels.shift_remove(l.target_id.as_str());
                    self.label_times.remove(l.target_id.as_str());
                }
            },
            Entry::SessionInfo(i) => {
                self.name = i
                    .name
                    .as_deref()
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned);
            }
            _ => {}
        }
        if let Some(id) = e.id() {
            self.by_id.insert(id.to_owned(), self.entries.len());
        }
        self.entries.push(e);
    }

    fn append_with(
        &mut self,
        build: impl FnOnce(EntryBase) -> Entry,
    ) -> Result<EntryId, AppendError> {
        self.writable()?;
        let id = fresh_id(&self.sources, |c| self.by_id.contains_key(c));
        let entry = build(base(
            id.clone(),
            self.leaf.clone(),
            self.sources.clock.now(),
        ));
        self.push(entry);
        self.leaf = Some(id.clone());
        Ok(id)
    }

    fn writable(&self) -> Result<(), AppendError> {
        match &self.file {
            Some(path) => Err(AppendError::ReadOnly { path: path.clone() }),
            None => Ok(()),
        }
    }

    fn has_entry(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }

    /// Appends a caller-built entry (see
    /// [`OwnedSession::append_entry`](crate::OwnedSession::append_entry)).
    pub fn append_entry(&mut self, mut entry: Entry) -> Result<EntryId, AppendError> {
        self.writable()?;
        let sources = self.sources.clone();
        let by_id = &self.by_id;
        let id = complete_entry(
            &mut entry,
            || fresh_id(&sources, |c| by_id.contains_key(c)),
            self.leaf.clone(),
            sources.clock.now(),
        )?;
        if self.by_id.contains_key(id.as_str()) {
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
        self.by_id.get(id).and_then(|i| self.entries.get(*i))
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
        self.labels.get(id).map(String::as_str)
    }

    /// `getChildren(id)`: entries whose parent is `id`, in file order.
    pub fn get_children(&self, id: &str) -> Vec<&Entry> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, e)| {
                e.parent_id() == Some(id)
                    && e.id() != Some(id)
                    && e.id().is_some_and(|x| self.by_id.get(x) == Some(i))
            })
            .map(|(_, e)| e)
            .collect()
    }

    /// `getBranch(fromId?)`: the path root → `from` (default: the leaf). Empty when the
    /// leaf is `None` or the id is unknown (as the reference). A parent cycle ends the
    /// walk instead of looping.
    pub fn get_branch(&self, from: Option<&str>) -> Vec<&Entry> {
        let start = match from {
            Some(id) => Some(id),
            None => self.leaf.as_ref().map(EntryId::as_str),
        };
        let mut path = Vec::new();
        let mut cur = start.and_then(|id| self.by_id.get(id).copied());
        let mut steps = 0usize;
        while let Some(i) = cur {
            if steps > self.entries.len() {
                break;
            }
            steps += 1;
            let e = &self.entries[i];
            path.push(e);
            cur = e
                .parent_id()
                .filter(|p| Some(*p) != e.id())
                .and_then(|p| self.by_id.get(p).copied());
        }
        path.reverse();
        path
    }

    /// `getTree()`: the reference's tree order (roots in file order, children by
    /// timestamp, stable), flattened. Nodes borrow the session's entries.
    pub fn get_tree(&self) -> SessionTree<'_> {
        let n = self.entries.len();
        let canonical = |i: usize| {
            self.entries[i]
                .id()
                .is_some_and(|id| self.by_id.get(id) == Some(&i))
        };
        let mut roots = Vec::new();
        let mut kids: Vec<Vec<(Option<i64>, usize)>> = vec![Vec::new(); n];
        for i in 0..n {
            if !canonical(i) {
                continue;
            }
            let e = &self.entries[i];
            match e
                .parent_id()
                .filter(|p| Some(*p) != e.id())
                .and_then(|p| self.by_id.get(p))
            {
                Some(&p) => kids[p].push((None, i)),
                None => roots.push(i),
            }
        }
        // Timestamps are parsed only where there is an order to decide.
        for k in kids.iter_mut().filter(|k| k.len() > 1) {
            for c in k.iter_mut() {
                c.0 = self.entries[c.1].timestamp_ms();
            }
            // The reference's `getTree()`: V8's sort by `Date.parse(timestamp)`.
            sort_by_number_key(k, |c| c.0.map_or(f64::NAN, |ms| ms as f64));
        }
        let mut tree = SessionTree::default();
        let mut seen = vec![false; n];
        // (entry index, depth, parent position)
        let mut stack: Vec<(usize, u32, Option<usize>)> =
            roots.iter().rev().map(|r| (*r, 0, None)).collect();
        while let Some((i, depth, parent)) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            let pos = tree.nodes.len();
            match parent {
                Some(p) => tree.nodes[p].children.push(pos),
                None => tree.roots.push(pos),
            }
            let entry = NodeEntry::Borrowed(&self.entries[i]);
            let (label, label_timestamp) = match entry.id() {
                Some(id) if !self.labels.is_empty() => (
                    self.get_label(id).map(str::to_owned),
                    self.label_times.get(id).cloned().flatten(),
                ),
                _ => (None, None),
            };
            tree.nodes.push(TreeNode {
                entry,
                label,
                label_timestamp,
                depth,
                children: Vec::new(),
            });
            for (_, c) in kids[i].iter().rev() {
                stack.push((*c, depth + 1, Some(pos)));
            }
        }
        tree
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
        let source = ResidentSource::new(&self.entries);
        let leaf = match &self.leaf {
            None => Leaf::None,
            Some(id) => Leaf::Id(id.as_str()),
        };
        build_context(&source, leaf, options)
            .map(crate::read::detach)
            .map_err(|e| match e {
                session_context::ContextError::Cycle { at, .. } => ReadError::Cycle { id: at.0 },
                other => {
                    let session = self.error_name();
                    ReadError::Context(Box::new(other.map_source(|e| ReadError::EntryNotFound {
                        session,
                        id: format!("#{}", e.position),
                    })))
                }
            })
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
            Some(id) if self.by_id.contains_key(id) => Some(EntryId::new(id)),
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
    pub fn create_branched_session(&self, leaf: &str) -> Result<ResidentSession, AppendError> {
        if !self.by_id.contains_key(leaf) {
            return Err(AppendError::EntryNotFound {
                session: self.error_name(),
                id: leaf.to_owned(),
            });
        }
        let path: Vec<Entry> = self
            .get_branch(Some(leaf))
            .into_iter()
            .filter(|e| !matches!(e, Entry::Label(_)))
            .cloned()
            .collect();
        let mut new = ResidentSession::in_memory(self.cwd(), self.sources.clone());
        new.header.parent_session = self.file.as_ref().map(|f| f.to_string_lossy().into_owned());
        let on_path: Vec<String> = path
            .iter()
            .filter_map(|e| e.id().map(str::to_owned))
            .collect();
        for e in path {
            new.push(e);
        }
        new.leaf = new.entries.last().and_then(Entry::id).map(EntryId::new);
        for (target, label) in &self.labels {
            if on_path.contains(target) {
                let time = self.label_times.get(target).cloned().flatten();
                new.append_with(|b| recreated_label(b, target, label, time))?;
            }
        }
        Ok(new)
    }

    // ----- accessors -----

    /// `getHeader()`
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// `getSessionName()`: the latest `session_info` name in file order.
    pub fn session_name(&self) -> Option<&str> {
        self.name.as_deref()
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
        self.session_file()
            .map_or_else(|| self.session_id().to_owned(), |p| p.display().to_string())
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
