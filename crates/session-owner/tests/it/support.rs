//! A minimal test client: typed calls over a duplex (or any stream), raw lines too.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use session_manager::{Layout, Sources, Store};
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

pub(crate) const T0: u64 = 1_767_225_600_000;

pub(crate) fn store(root: &Path) -> Store {
    Store::new(Layout::with_root(root).expect("absolute root"))
        .with_sources(Sources::deterministic(T0, 7))
}

pub(crate) fn owner(root: &Path) -> Arc<Owner> {
    Owner::new(store(root), OwnerOptions::default())
}

pub(crate) struct Client {
    w: Box<dyn AsyncWrite + Unpin + Send>,
    lines: Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>,
    next: i64,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Client {
    /// A client of `owner`, initialized.
    pub(crate) async fn ready(owner: &Arc<Owner>) -> Client {
        let mut c = Client::connect(owner);
        c.initialize().await;
        c
    }

    /// A client of `owner`, initialized, with the session `sid` open.
    pub(crate) async fn joined(owner: &Arc<Owner>, sid: &str) -> Client {
        let mut c = Client::ready(owner).await;
        c.open(sid).await;
        c
    }

    /// A client on a new duplex connection to `owner`.
    pub(crate) fn connect(owner: &Arc<Owner>) -> Client {
        Client::connect_with_buffer(owner, 1 << 20)
    }

    /// A client whose connection buffers at most `bytes` each way.
    pub(crate) fn connect_with_buffer(owner: &Arc<Owner>, bytes: usize) -> Client {
        let (client, server) = tokio::io::duplex(bytes);
        let (sr, sw) = tokio::io::split(server);
        let owner = owner.clone();
        let server = tokio::spawn(async move { owner.serve(sr, sw).await });
        let (r, w) = tokio::io::split(client);
        let mut c = Client::over(r, w);
        c.server = Some(server);
        c
    }

    /// Closes the connection and waits until the owner has finished with it (and so
    /// let go of its sessions).
    pub(crate) async fn disconnect(self) {
        let server = self.server;
        drop(self.w);
        drop(self.lines);
        if let Some(s) = server {
            let _ = s.await.expect("the connection task ends");
        }
    }

    pub(crate) fn over(
        r: impl AsyncRead + Unpin + Send + 'static,
        w: impl AsyncWrite + Unpin + Send + 'static,
    ) -> Client {
        let r: Box<dyn AsyncRead + Unpin + Send> = Box::new(r);
        Client {
            w: Box::new(w),
            lines: BufReader::new(r).lines(),
            next: 1,
            server: None,
        }
    }

    pub(crate) async fn send_raw(&mut self, bytes: &[u8]) {
        self.w.write_all(bytes).await.expect("write");
        self.w.flush().await.expect("flush");
    }

    /// The next line from the owner, as JSON.
    pub(crate) async fn recv(&mut self) -> Value {
        let line = self.recv_line().await;
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// The next line from the owner, as sent (without its `\n`).
    pub(crate) async fn recv_line(&mut self) -> String {
        self.lines
            .next_line()
            .await
            .expect("read")
            .expect("a line, not the end")
    }

    /// Writes a request line; returns its id.
    pub(crate) async fn send<C: Call>(&mut self, params: C::Params) -> RequestId {
        let id = RequestId::Number(self.next);
        self.next += 1;
        let mut line = encode_request(&id, &C::request(params));
        line.push('\n');
        self.send_raw(line.as_bytes()).await;
        id
    }

    /// A call: writes the request and reads its answer (the next line).
    pub(crate) async fn call<C: Call>(&mut self, params: C::Params) -> Result<C::Result, Error> {
        let id = self.send::<C>(params).await;
        let answer = self.recv().await;
        assert_eq!(
            answer["id"],
            serde_json::to_value(&id).expect("id"),
            "{answer}"
        );
        decode::<C>(answer)
    }

    pub(crate) async fn initialize(&mut self) {
        self.call::<call::Initialize>(InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            client_info: None,
        })
        .await
        .expect("initialize");
    }

    pub(crate) async fn create(&mut self) -> SessionOpened {
        self.call::<call::StoreCreate>(CreateParams {
            cwd: "/work".into(),
            session_id: None,
            parent_session: None,
        })
        .await
        .expect("create")
    }

    /// Lets go of `session_id` on this connection.
    pub(crate) async fn close(&mut self, session_id: &str) {
        self.call::<call::SessionClose>(SessionParams {
            session_id: session_id.into(),
        })
        .await
        .expect("close");
    }

    /// The current branch of `session_id`, unbounded.
    pub(crate) async fn branch(&mut self, session_id: &str) -> Entries {
        self.call::<call::ReadBranch>(ReadBranchParams {
            session_id: session_id.into(),
            from_id: None,
            limits: None,
        })
        .await
        .expect("branch")
    }

    pub(crate) async fn open(&mut self, session_id: &str) -> SessionOpened {
        self.call::<call::StoreOpen>(OpenParams {
            path: None,
            session_id: Some(session_id.into()),
        })
        .await
        .expect("open")
    }
}

/// An answer line's result as `C`'s result type, or its error.
pub(crate) fn decode<C: Call>(answer: Value) -> Result<C::Result, Error> {
    if let Some(e) = answer.get("error") {
        let object: ErrorObject = serde_json::from_value(e.clone()).expect("an error object");
        return Err(Error::from_object(object));
    }
    Ok(
        serde_json::from_value(answer["result"].clone())
            .unwrap_or_else(|e| panic!("{answer}: {e}")),
    )
}

pub(crate) fn user(text: &str) -> session_types::AgentMessage {
    serde_json::from_value(serde_json::json!({"role":"user","content":text,"timestamp":1}))
        .expect("a user message")
}

pub(crate) fn append(
    session_id: &str,
    text: &str,
    durability: Option<Durability>,
) -> AppendMessageParams {
    AppendMessageParams {
        session_id: session_id.into(),
        message: user(text),
        durability,
    }
}

/// The texts of the user messages of the journal at `session_file`, read through
/// `store` (after a crash, say).
pub(crate) fn texts_in(store: &Store, session_file: &str) -> Vec<String> {
    store
        .open_read_only(Path::new(session_file))
        .expect("the journal survives")
        .get_entries()
        .iter()
        .map(text_of)
        .collect()
}

/// The text of a user message entry.
pub(crate) fn text_of(e: &session_types::Entry) -> String {
    let v = serde_json::to_value(e).expect("serializes");
    v["message"]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
