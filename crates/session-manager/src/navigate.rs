//! Moving between sessions: the owned session's operations that create or open
//! another session of its store (`newSession`, `setSessionFile`,
//! `createBranchedSession`). They sit above both `owned.rs` and `store.rs`, which
//! creates owned sessions, so neither depends on the other's callers.

use std::path::Path;

use crate::append::recreated_label;
use crate::error::{OpenError, ReadError};
use crate::handle::NewSessionOptions;
use crate::owned::OwnedSession;
use crate::read::{Accounting, NodeEntry, ReadLimits, label_time};

impl OwnedSession {
    /// `newSession({id?, parentSession?})`: creates a new session in this store (with
    /// this session's cwd) and returns it. This handle is not repointed.
    pub fn new_session(&self, options: NewSessionOptions) -> Result<OwnedSession, OpenError> {
        self.store.create_with(self.cwd(), options)
    }

    /// `setSessionFile(path)`: switches this handle to another session. On success the
    /// old session's lock is released; on failure this handle is unchanged.
    pub fn set_session_file(&mut self, path: &Path) -> Result<(), OpenError> {
        let target = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if target == self.path {
            return Ok(());
        }
        let next = self.store.open(&target)?;
        let old = std::mem::replace(self, next);
        drop(old);
        Ok(())
    }

    /// `createBranchedSession(leafId)`: a new session holding the path root → `leaf`
    /// (label entries left out; entries copied byte for byte, ids, parents and
    /// timestamps unchanged), then one new label entry per labelled entry of the path
    /// (in the labels' first-set order, chained, fresh ids). Written durably at once;
    /// `parentSession` is this session's journal. Returns the new session; this handle
    /// is not repointed. The path is read within the default [`ReadLimits`]; a longer
    /// path needs [`create_branched_session_with`](Self::create_branched_session_with).
    pub fn create_branched_session(
        &self,
        leaf: impl AsRef<str>,
    ) -> Result<OwnedSession, OpenError> {
        self.create_branched_session_with(leaf, ReadLimits::default())
    }

    /// [`create_branched_session`](Self::create_branched_session) reading the path
    /// within `limits` (a path longer than 16,384 entries or 64 MiB needs larger ones,
    /// as [`fork_from`](crate::Store::fork_from) needs none).
    pub fn create_branched_session_with(
        &self,
        leaf: impl AsRef<str>,
        limits: ReadLimits,
    ) -> Result<OwnedSession, OpenError> {
        let leaf = leaf.as_ref();
        let view = self.view(self.snapshot());
        let i = view.find(leaf).ok_or_else(|| ReadError::EntryNotFound {
            session: self.error_name(),
            id: leaf.to_owned(),
        })?;
        let plan = crate::read::branch_plan(&self.index, i);
        if plan.cycle {
            return Err(ReadError::Cycle {
                id: leaf.to_owned(),
            }
            .into());
        }
        let path = plan.path;
        let bytes: u64 = path.iter().map(|x| view.payload_len(*x)).sum();
        Accounting::new(limits, self.error_name()).reserve(path.len() as u64, bytes)?;
        let mut load = |i| {
            view.load_entry(i)
                .map(|e| Some(NodeEntry::Owned(Box::new(e))))
        };
        let labels: Vec<(Option<String>, String, String)> = plan
            .labels
            .into_iter()
            .map(|(t, l)| Ok((label_time(&self.index, &t, &mut load)?, t, l)))
            .collect::<Result<_, ReadError>>()?;
        let options = NewSessionOptions::with_parent_session(self.path.to_string_lossy());
        let mut new = self.store.create_with(self.cwd(), options)?;
        const BATCH: usize = 256;
        for chunk in path.chunks(BATCH) {
            let payloads: Vec<Vec<u8>> = chunk
                .iter()
                .map(|x| view.load_raw(*x))
                .collect::<Result<_, _>>()?;
            new.append_raw_batch(&payloads)?;
        }
        for (time, target, label) in labels {
            new.append_with(|b| recreated_label(b, &target, &label, time))?;
        }
        new.sync()?;
        Ok(new)
    }
}
