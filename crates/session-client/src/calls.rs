//! Shorthands for the common calls; everything else through [`Client::call`].

use session_protocol::{
    AppendEntryParams, AppendMessageParams, CreateParams, Durability, ListAllParams, ListParams,
    ListedSession, Metadata, OpenParams, ReadBranchParams, ReadParams, SessionContext,
    SessionOpened, SessionParams, Tree, call,
};
use session_types::{AgentMessage, Entry, EntryId};

use crate::{Client, ClientError};

impl Client {
    /// `store/create`: a new session of `cwd`, open on this connection.
    pub async fn create(&self, cwd: &str) -> Result<SessionOpened, ClientError> {
        self.call::<call::StoreCreate>(CreateParams {
            cwd: cwd.to_owned(),
            session_id: None,
            parent_session: None,
        })
        .await
    }

    /// `store/open` by session id (shared with every other client that has it open).
    pub async fn open(&self, session_id: &str) -> Result<SessionOpened, ClientError> {
        self.call::<call::StoreOpen>(OpenParams {
            path: None,
            session_id: Some(session_id.to_owned()),
        })
        .await
    }

    /// `store/open` by absolute journal path.
    pub async fn open_path(&self, path: &str) -> Result<SessionOpened, ClientError> {
        self.call::<call::StoreOpen>(OpenParams {
            path: Some(path.to_owned()),
            session_id: None,
        })
        .await
    }

    /// `session/close`: this connection stops using the session.
    pub async fn close(&self, session_id: &str) -> Result<(), ClientError> {
        self.call::<call::SessionClose>(session(session_id))
            .await
            .map(drop)
    }

    /// `session/sync`: every buffered append so far made durable.
    pub async fn sync(&self, session_id: &str) -> Result<(), ClientError> {
        self.call::<call::SessionSync>(session(session_id))
            .await
            .map(drop)
    }

    /// `session/appendMessage`, acknowledged as `durability` asks (`None`: durable).
    pub async fn append_message(
        &self,
        session_id: &str,
        message: AgentMessage,
        durability: Option<Durability>,
    ) -> Result<EntryId, ClientError> {
        self.call::<call::AppendMessage>(AppendMessageParams {
            session_id: session_id.to_owned(),
            message,
            durability,
        })
        .await
        .map(|a| a.entry_id)
    }

    /// `session/appendEntry`: a caller-built entry of any type.
    pub async fn append_entry(
        &self,
        session_id: &str,
        entry: Entry,
        durability: Option<Durability>,
    ) -> Result<EntryId, ClientError> {
        self.call::<call::AppendEntry>(AppendEntryParams {
            session_id: session_id.to_owned(),
            entry,
            durability,
        })
        .await
        .map(|a| a.entry_id)
    }

    /// `session/readBranch` from the leaf, with the seed's default limits.
    pub async fn read_branch(&self, session_id: &str) -> Result<Vec<Entry>, ClientError> {
        self.call::<call::ReadBranch>(ReadBranchParams {
            session_id: session_id.to_owned(),
            from_id: None,
            limits: None,
        })
        .await
        .map(|e| e.entries)
    }

    /// `session/readEntries`, with the seed's default limits.
    pub async fn read_entries(&self, session_id: &str) -> Result<Vec<Entry>, ClientError> {
        self.call::<call::ReadEntries>(read(session_id))
            .await
            .map(|e| e.entries)
    }

    /// `session/readTree`, with the seed's default limits.
    pub async fn read_tree(&self, session_id: &str) -> Result<Tree, ClientError> {
        self.call::<call::ReadTree>(read(session_id)).await
    }

    /// `session/buildSessionContext`, with the seed's default limits.
    pub async fn build_session_context(
        &self,
        session_id: &str,
    ) -> Result<SessionContext, ClientError> {
        self.call::<call::BuildSessionContext>(read(session_id))
            .await
    }

    /// `session/getMetadata`.
    pub async fn metadata(&self, session_id: &str) -> Result<Metadata, ClientError> {
        self.call::<call::GetMetadata>(session(session_id)).await
    }

    /// `store/list`: the sessions of `cwd`, newest first.
    pub async fn list(&self, cwd: &str) -> Result<Vec<ListedSession>, ClientError> {
        self.call::<call::StoreList>(ListParams {
            cwd: cwd.to_owned(),
            progress: None,
        })
        .await
        .map(|l| l.sessions)
    }

    /// `store/listAll`: every session of the store.
    pub async fn list_all(&self) -> Result<Vec<ListedSession>, ClientError> {
        self.call::<call::StoreListAll>(ListAllParams { progress: None })
            .await
            .map(|l| l.sessions)
    }
}

fn session(session_id: &str) -> SessionParams {
    SessionParams {
        session_id: session_id.to_owned(),
    }
}

fn read(session_id: &str) -> ReadParams {
    ReadParams {
        session_id: session_id.to_owned(),
        limits: None,
    }
}
