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
use tokio::io::AsyncReadExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader, Lines};
use tokio::process::{ChildStderr, ChildStdout};
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
    /// Connection attempts of [`Client::connect_or_start`] (default 80). A started
    /// owner is waited for (up to 10 s) until it prints its ready line or exits;
    /// other failed attempts are spaced 2 ms doubling to 100 ms (about 7 s in all).
    pub start_attempts: u32,
    /// The longest a call waits for its answer (default `None`: no bound). A call
    /// not answered in time fails [`ClientError::Timeout`] naming its method and the
    /// time; the connection goes on. It bounds `initialize` too, so an owner that
    /// accepts connections and never answers fails the connect instead of hanging
    /// it. [`Client::with_call_timeout`] changes it for one clone.
    pub call_timeout: Option<Duration>,
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
            call_timeout: None,
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

    /// These options with `n` connection attempts after starting an owner.
    pub fn with_start_attempts(mut self, n: u32) -> Self {
        self.start_attempts = n;
        self
    }

    /// These options bounding each call's wait for its answer (`None`: no bound).
    pub fn with_call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.call_timeout = timeout;
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
    /// How long this clone's calls wait for their answers.
    call_timeout: Option<Duration>,
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
        // The owner we started last, while it may still print its ready line.
        let mut ready: Option<Started> = None;
        // Whether a process we started may still come to serve.
        let mut starting = false;
        // Why the last owner we started exited, if it said.
        let mut exited: Option<String> = None;
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
                let owner = start_owner(home, &options.bcs_program())?;
                starts += 1;
                started = owner.pid;
                ready = Some(owner);
                starting = true;
            }
            // `bcs serve` prints its socket's path once it is bound: the sign that it
            // serves. It may instead exit (another owner won, or a dying owner's
            // socket still looked alive, or it cannot serve here): then try again,
            // starting another while none answers.
            if let Some(mut owner) = ready.take() {
                match tokio::time::timeout(START_TIMEOUT, owner.stdout.next_line()).await {
                    // Bound: connect at once.
                    Ok(Ok(Some(_))) => continue,
                    // Exited: the winner of an election may still be binding; pause
                    // before trying it (and before starting another).
                    Ok(_) => {
                        starting = false;
                        exited = owner.why_exited().await.or(exited);
                    }
                    // Slow: it may still come up; retry meanwhile.
                    Err(_) => continue,
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
        Err(ClientError::NotStarted {
            path: socket::socket_path(home),
            attempts,
            last: match exited {
                Some(why) => format!("{last}; {why}"),
                None => last,
            },
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
            .request(
                &call::Initialize::request(InitializeParams {
                    protocol_version: asked,
                    client_info: options.client_info.clone(),
                }),
                options.call_timeout,
            )
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
            call_timeout: options.call_timeout,
        })
    }

    /// This client (a clone sharing its connection) with another call timeout
    /// (`None`: calls wait until answered or the connection ends).
    pub fn with_call_timeout(mut self, timeout: Option<Duration>) -> Client {
        self.call_timeout = timeout;
        self
    }

    /// How long this client's calls wait for their answers.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.call_timeout
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

    /// Calls sent (or being sent) and not yet answered, on every clone.
    pub fn in_flight(&self) -> usize {
        self.conn.shared().in_flight()
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
        let raw = self
            .conn
            .request(&C::request(params), self.call_timeout)
            .await?;
        decode::<C>(&raw)
    }

    /// Sends any request and returns its result as JSON text (for callers that
    /// dispatch on [`session_protocol::Method`] themselves).
    pub async fn request(&self, request: &Request) -> Result<Box<RawValue>, ClientError> {
        self.conn.request(request, self.call_timeout).await
    }
}

/// A `bcs serve` this client started: its output, read by line (the socket path it
/// prints once bound), and its error output (why it exited, if it did).
struct Started {
    pid: Option<u32>,
    stdout: Lines<BufReader<ChildStdout>>,
    stderr: Option<ChildStderr>,
    program: PathBuf,
}

impl Started {
    /// What the owner said before it exited (its first error line), if anything.
    async fn why_exited(&mut self) -> Option<String> {
        let mut text = String::new();
        let stderr = self.stderr.take()?;
        // Its output ended: it exited, or is about to. Bounded in size and time.
        let mut bounded = stderr.take(4096);
        let read = bounded.read_to_string(&mut text);
        let _ = tokio::time::timeout(Duration::from_secs(1), read).await;
        let line = text.lines().find(|l| !l.trim().is_empty())?;
        Some(format!(
            "{} exited: {}",
            self.program.display(),
            line.trim()
        ))
    }
}

/// The most owner processes one `connect_or_start` starts.
const MAX_STARTS: u32 = 4;

/// How long a started owner has to print its ready line or exit before the client
/// goes back to retrying its socket.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts `bcs --home HOME serve` detached; returns its pid and its output's lines
/// (the socket path it prints once bound). The child is not waited for: it outlives
/// this client (tokio reaps it if it exits while this process runs).
fn start_owner(home: &Path, program: &Path) -> Result<Started, ClientError> {
    let mut child = tokio::process::Command::new(program)
        .arg("--home")
        .arg(home)
        .arg("serve")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group: a terminal's ^C to the client does not reach it.
        .process_group(0)
        .kill_on_drop(false)
        .spawn()
        .map_err(|source| ClientError::Start {
            program: program.to_path_buf(),
            source,
        })?;
    let start = |e: &str| ClientError::Start {
        program: program.to_path_buf(),
        source: std::io::Error::other(e.to_owned()),
    };
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| start("no pipe to the child"))?;
    Ok(Started {
        pid: child.id(),
        stdout: BufReader::new(stdout).lines(),
        stderr: child.stderr.take(),
        program: program.to_path_buf(),
    })
}

fn decode<C: Call>(raw: &RawValue) -> Result<C::Result, ClientError> {
    serde_json::from_str(raw.get()).map_err(|e| ClientError::BadAnswer {
        method: C::METHOD.as_str(),
        detail: e.to_string(),
    })
}
