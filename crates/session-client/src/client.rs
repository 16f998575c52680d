//! [`Client`]: connecting (socket, stdio, any stream, or starting an owner on
//! demand), the `initialize` handshake, and typed calls.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::value::RawValue;
use session_protocol::{
    Call, Error, InitializeParams, InitializeResult, PROTOCOL_VERSION, PeerInfo, ProtocolVersion,
    Request, call,
};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader, Lines};
use tokio::process::ChildStdout;
use tokio::sync::mpsc;

use crate::conn::{Bounds, Conn, Notice};
use crate::error::ClientError;
use crate::socket;

/// The environment variable naming the `bcs` program to start (default: `bcs` on
/// `PATH`).
pub const BCS_VAR: &str = "BASE_CONTEXT_BCS";

/// How a client connects and what it bounds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Who this client is (sent in `initialize`, for the owner's logs).
    pub client_info: Option<PeerInfo>,
    /// The protocol version asked for (default [`PROTOCOL_VERSION`]).
    pub protocol_version: ProtocolVersion,
    /// The longest answer line read, in bytes (default 1 GiB: a read answers at most
    /// the seed's 64 MiB of source data by default, as JSON). A longer line ends the
    /// connection.
    pub max_answer_bytes: usize,
    /// Notifications kept until read (default 1,024); past that they are dropped and
    /// counted ([`Client::missed_notifications`]) rather than stalling answers.
    pub notification_queue: usize,
    /// Request lines queued for the writer (default 256); past that callers wait.
    pub outgoing_queue: usize,
    /// The `bcs` program to start (default: `$BASE_CONTEXT_BCS`, else `bcs`).
    pub bcs: Option<PathBuf>,
    /// Connection attempts after starting an owner (default 80, spaced 2 ms doubling
    /// to 100 ms: about 7 seconds).
    pub start_attempts: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            client_info: None,
            protocol_version: PROTOCOL_VERSION,
            max_answer_bytes: 1 << 30,
            notification_queue: 1024,
            outgoing_queue: 256,
            bcs: None,
            start_attempts: 80,
        }
    }
}

impl ClientOptions {
    /// These options with this `bcs` program.
    pub fn with_bcs(mut self, program: impl Into<PathBuf>) -> Self {
        self.bcs = Some(program.into());
        self
    }

    /// These options naming the client.
    pub fn with_client_info(mut self, name: &str, version: &str) -> Self {
        self.client_info = Some(PeerInfo {
            name: name.to_owned(),
            version: version.to_owned(),
        });
        self
    }

    /// These options asking for another protocol version (tests of the handshake).
    pub fn with_protocol_version(mut self, version: ProtocolVersion) -> Self {
        self.protocol_version = version;
        self
    }

    /// The `bcs` program these options start.
    pub fn bcs_program(&self) -> PathBuf {
        if let Some(p) = &self.bcs {
            return p.clone();
        }
        match std::env::var_os(BCS_VAR) {
            Some(p) if !p.is_empty() => PathBuf::from(p),
            _ => PathBuf::from("bcs"),
        }
    }

    fn bounds(&self) -> Bounds {
        Bounds {
            max_answer_bytes: self.max_answer_bytes,
            notification_queue: self.notification_queue,
            outgoing_queue: self.outgoing_queue,
        }
    }
}

/// A connection to a session owner, initialized. Cheap to clone: clones share the
/// connection, and calls from any of them may be in flight at once (pipelining).
/// Dropping the last clone closes the connection (the owner then lets go of the
/// sessions it opened for it).
#[derive(Clone)]
pub struct Client {
    conn: Arc<Conn>,
    server: InitializeResult,
    owner_pid: Option<u32>,
    started: Option<u32>,
    notices: Arc<Mutex<Option<mpsc::Receiver<Notice>>>>,
    /// The `bcs serve --stdio` child, kept while the client lives.
    child: Arc<Mutex<Option<tokio::process::Child>>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.server)
            .field("owner_pid", &self.owner_pid)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects to the owner serving `home` on its socket and initializes.
    pub async fn connect(home: &Path) -> Result<Client, ClientError> {
        Client::connect_with(home, ClientOptions::default()).await
    }

    /// [`Client::connect`] with options.
    pub async fn connect_with(home: &Path, options: ClientOptions) -> Result<Client, ClientError> {
        let connected = socket::connect(home)
            .await
            .map_err(|source| ClientError::Connect {
                path: socket::socket_path(home),
                source,
            })?;
        let (r, w) = connected.stream.into_split();
        let mut client = Client::over(r, w, options).await?;
        client.owner_pid = connected.pid;
        Ok(client)
    }

    /// Connects to `home`'s owner, starting one (`bcs --home HOME serve`, detached)
    /// when none answers, then connecting with bounded retries. Several clients may do
    /// this at once: the owners they start elect one (the others exit), and every
    /// client connects to the one that serves. An owner that dies as we reach it (a
    /// killed owner's socket can accept a connection it never serves) counts as none.
    /// [`Client::started_owner`] tells whether this call started a process.
    pub async fn connect_or_start(home: &Path) -> Result<Client, ClientError> {
        Client::connect_or_start_with(home, ClientOptions::default()).await
    }

    /// [`Client::connect_or_start`] with options.
    pub async fn connect_or_start_with(
        home: &Path,
        options: ClientOptions,
    ) -> Result<Client, ClientError> {
        let attempts = options.start_attempts.max(1);
        let mut pause = Duration::from_millis(2);
        let mut last = String::new();
        let mut started: Option<u32> = None;
        let mut starts = 0;
        // The ready line of the owner we started last, while it may still print it.
        let mut ready: Option<ReadyLines> = None;
        // Whether a process we started may still come to serve.
        let mut starting = false;
        for _ in 0..attempts {
            match Client::connect_with(home, options.clone()).await {
                Ok(mut client) => {
                    client.started = started;
                    return Ok(client);
                }
                Err(ClientError::Connect { source, .. }) => last = source.to_string(),
                Err(ClientError::OwnerGone { detail }) => last = detail,
                Err(e) => return Err(e),
            }
            if !starting && starts < MAX_STARTS {
                let (pid, lines) = start_owner(home, &options.bcs_program())?;
                starts += 1;
                started = pid;
                ready = lines;
                starting = true;
            }
            // `bcs serve` prints its socket's path once it is bound: the sign that it
            // serves. It may instead exit (another owner won, or a dying owner's
            // socket still looked alive): then try again, starting another if none
            // answers.
            match ready.as_mut() {
                Some(lines) => {
                    tokio::select! {
                        line = lines.next_line() => {
                            starting = matches!(line, Ok(Some(_)));
                            ready = None;
                        }
                        () = tokio::time::sleep(pause) => {}
                    }
                }
                None => tokio::time::sleep(pause).await,
            }
            pause = (pause * 2).min(Duration::from_millis(100));
        }
        Err(ClientError::NotStarted {
            path: socket::socket_path(home),
            attempts,
            last,
        })
    }

    /// Starts `bcs --home HOME serve --stdio` for this client alone and initializes.
    /// The owner ends when the client is dropped (its standard input closes).
    pub async fn spawn_stdio(home: &Path, options: ClientOptions) -> Result<Client, ClientError> {
        let program = options.bcs_program();
        let start = |source| ClientError::Start {
            program: program.clone(),
            source,
        };
        let mut child = tokio::process::Command::new(&program)
            .arg("--home")
            .arg(home)
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(false)
            .spawn()
            .map_err(start)?;
        let missing = || start(std::io::Error::other("no pipe to the child"));
        let w = child.stdin.take().ok_or_else(missing)?;
        let r = child.stdout.take().ok_or_else(missing)?;
        let pid = child.id();
        let mut client = Client::over(r, w, options).await?;
        client.owner_pid = pid;
        client.child = Arc::new(Mutex::new(Some(child)));
        Ok(client)
    }

    /// Speaks to an owner over any stream pair (an in-process owner's duplex, a
    /// socket connected by other means) and initializes.
    pub async fn over<R, W>(r: R, w: W, options: ClientOptions) -> Result<Client, ClientError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (conn, notices) = Conn::start(r, w, options.bounds());
        let conn = Arc::new(conn);
        let asked = options.protocol_version;
        let raw = conn
            .request(&call::Initialize::request(InitializeParams {
                protocol_version: asked,
                client_info: options.client_info.clone(),
            }))
            .await?;
        let server: InitializeResult = decode::<call::Initialize>(&raw)?;
        if server.protocol_version.major != asked.major {
            // An owner of another major answered anyway: its messages would be misread.
            return Err(ClientError::Owner(Error::UnsupportedProtocol {
                client: asked,
                server: server.protocol_version,
            }));
        }
        Ok(Client {
            conn,
            server,
            owner_pid: None,
            started: None,
            notices: Arc::new(Mutex::new(Some(notices))),
            child: Arc::default(),
        })
    }

    /// The owner's answer to `initialize`: its protocol version and name.
    pub fn server(&self) -> &InitializeResult {
        &self.server
    }

    /// The owner's process id (from the socket's peer credentials, or the stdio
    /// child's), when known.
    pub fn owner_pid(&self) -> Option<u32> {
        self.owner_pid
    }

    /// The process [`Client::connect_or_start`] started last, if it started any: the
    /// owner it connected to, or one that lost the election to it.
    pub fn started_owner(&self) -> Option<u32> {
        self.started
    }

    /// The owner's notifications, in the order it sent them. The first call takes the
    /// receiver (one per connection, shared by the clones); later calls get `None`.
    pub fn notifications(&self) -> Option<mpsc::Receiver<Notice>> {
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Notifications dropped because their queue was full.
    pub fn missed_notifications(&self) -> u64 {
        self.conn.shared().missed()
    }

    /// Whether the connection has ended (every call now fails with `OwnerGone`).
    pub fn is_gone(&self) -> bool {
        self.conn.shared().is_gone()
    }

    /// Closes the connection (for every clone) after the calls already sent, and
    /// waits until the owner has closed its side: by then it has answered what it
    /// read and let go of the sessions this connection opened (the last user of a
    /// session closes it, releasing its lock). A `bcs serve --stdio` owner is
    /// waited for until it exits. Calls made afterwards fail `OwnerGone`.
    pub async fn shutdown(self) -> Result<(), ClientError> {
        self.conn.close().await;
        self.conn.shared().ended().await;
        let child = self
            .child
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut child) = child {
            child
                .wait()
                .await
                .map_err(|source| ClientError::OwnerGone {
                    detail: format!("waiting for the stdio owner: {source}"),
                })?;
        }
        Ok(())
    }

    /// Calls method `C` (`session_protocol::call::*`) with its params and reads its
    /// typed result.
    ///
    /// ```no_run
    /// # async fn f(client: &session_client::Client) -> Result<(), session_client::ClientError> {
    /// use session_protocol::{call, ReadParams};
    /// let tree = client
    ///     .call::<call::ReadTree>(ReadParams { session_id: "s1".into(), limits: None })
    ///     .await?;
    /// println!("{} nodes", tree.nodes.len());
    /// # Ok(()) }
    /// ```
    pub async fn call<C: Call>(&self, params: C::Params) -> Result<C::Result, ClientError> {
        let raw = self.conn.request(&C::request(params)).await?;
        decode::<C>(&raw)
    }

    /// Sends any request and returns its result as JSON text (for callers that
    /// dispatch on [`session_protocol::Method`] themselves).
    pub async fn request(&self, request: &Request) -> Result<Box<RawValue>, ClientError> {
        self.conn.request(request).await
    }
}

/// The output of a started owner, read by line.
type ReadyLines = Lines<BufReader<ChildStdout>>;

/// The most owner processes one `connect_or_start` starts.
const MAX_STARTS: u32 = 4;

/// Starts `bcs --home HOME serve` detached; returns its pid and its output's lines
/// (the socket path it prints once bound). The child is not waited for: it outlives
/// this client (tokio reaps it if it exits while this process runs).
fn start_owner(
    home: &Path,
    program: &Path,
) -> Result<(Option<u32>, Option<ReadyLines>), ClientError> {
    let mut child = tokio::process::Command::new(program)
        .arg("--home")
        .arg(home)
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group: a terminal's ^C to the client does not reach it.
        .process_group(0)
        .kill_on_drop(false)
        .spawn()
        .map_err(|source| ClientError::Start {
            program: program.to_path_buf(),
            source,
        })?;
    let lines = child.stdout.take().map(|o| BufReader::new(o).lines());
    Ok((child.id(), lines))
}

fn decode<C: Call>(raw: &RawValue) -> Result<C::Result, ClientError> {
    serde_json::from_str(raw.get()).map_err(|e| ClientError::BadAnswer {
        method: C::METHOD.as_str(),
        detail: e.to_string(),
    })
}
