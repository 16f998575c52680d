//! One connection: a reader that parses and dispatches each line, a writer task that
//! sends the answers, and a bound on the requests in flight.
//!
//! Backpressure: at most `connection_in_flight` requests of a connection await their
//! answer; past that the reader stops reading (a client that never reads its answers
//! stalls only itself). A full session queue is answered at once with the retryable
//! `overloaded` error instead of waiting.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::value::RawValue;
use session_manager::{BulkOptions, NewSessionOptions, SafeSessionId};
use session_protocol::{
    self as p, Error, Incoming, PROTOCOL_VERSION, Request, RequestId, encode_error, encode_result,
    typed_request,
};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::Owner;
use crate::actor::{Answer, Command, Reply, Submitted, gone, is_read, ok, store_change_line};
use crate::errors::open_error;
use crate::lines::{Line, LineReader};
use crate::outbox::{Followers, Lag, Outbox, Topic};
use crate::registry::Handle;

#[derive(Default)]
struct State {
    initialized: bool,
    /// The sessions this connection opened, by session id.
    sessions: HashMap<String, Handle>,
}

struct Conn {
    owner: Arc<Owner>,
    out: Arc<Outbox>,
    state: Mutex<State>,
    permits: Arc<Semaphore>,
    /// This connection's task handled a line since the runtime last polled it, and
    /// so may have woken other tasks (its writer, followers, spawned ones): its
    /// worker's LIFO slot may hold one, and a sync there would hold it (see
    /// `actor::WorkerSync`).
    handled: AtomicBool,
}

/// Serves one connection until the client closes its side; then lets go of every
/// session it opened and waits for the last answer to be written.
pub(crate) async fn serve<R, W>(owner: Arc<Owner>, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::channel(owner.options.outgoing_queue.max(1));
    let out = Arc::new(Outbox::new(tx));
    let writing = tokio::spawn(write_lines(writer, rx, out.lag()));
    let conn = Arc::new(Conn {
        permits: Arc::new(Semaphore::new(owner.options.connection_in_flight.max(1))),
        owner,
        out,
        state: Mutex::new(State::default()),
        // This poll spawned the writer.
        handled: AtomicBool::new(true),
    });
    let read = {
        let mut reading = std::pin::pin!(conn.clone().read_loop(reader));
        let mut first = true;
        std::future::poll_fn(|cx| {
            if !std::mem::take(&mut first) {
                conn.handled.store(false, Ordering::Relaxed);
            }
            reading.as_mut().poll(cx)
        })
        .await
    };
    conn.owner.registry.store_followers.remove(conn.out.id);
    let handles: Vec<Handle> = conn.state().sessions.drain().map(|(_, h)| h).collect();
    for h in handles {
        let _ = conn.unfollow_and_release(h).await;
    }
    drop(conn);
    let written = writing.await.unwrap_or(Ok(()));
    read.and(written)
}

/// Writes the queued lines; when the queue is empty, first the `lagged` notices of
/// the topics whose notifications were dropped (see `outbox`).
async fn write_lines<W: AsyncWrite + Unpin>(
    w: W,
    mut rx: mpsc::Receiver<String>,
    lag: Arc<Lag>,
) -> io::Result<()> {
    let mut w = BufWriter::new(w);
    loop {
        if rx.is_empty() {
            for line in lag.take_lagged() {
                w.write_all(line.as_bytes()).await?;
                w.write_all(b"\n").await?;
            }
            w.flush().await?;
        }
        tokio::select! {
            line = rx.recv() => match line {
                Some(line) => {
                    w.write_all(line.as_bytes()).await?;
                    w.write_all(b"\n").await?;
                }
                None => break,
            },
            () = lag.woken() => {}
        }
    }
    w.flush().await?;
    w.shutdown().await
}

/// The session a `session/*` request addresses.
fn target(request: &Request) -> Option<&str> {
    use Request as R;
    Some(match request {
        R::AppendMessage(q) => &q.session_id,
        R::AppendThinkingLevelChange(q) => &q.session_id,
        R::AppendServiceTierChange(q) => &q.session_id,
        R::AppendModelChange(q) => &q.session_id,
        R::AppendCompaction(q) => &q.session_id,
        R::AppendCustomEntry(q) => &q.session_id,
        R::AppendChildUsageAttribution(q) => &q.session_id,
        R::AppendSessionInfo(q) => &q.session_id,
        R::AppendSessionState(q) => &q.session_id,
        R::AppendAgentStatus(q) => &q.session_id,
        R::AppendGitState(q) => &q.session_id,
        R::AppendCustomMessageEntry(q) => &q.session_id,
        R::AppendLabelChange(q) => &q.session_id,
        R::AppendEntry(q) => &q.session_id,
        R::Branch(q) => &q.session_id,
        R::BranchWithSummary(q) => &q.session_id,
        R::SessionSync(q)
        | R::SessionFollow(q)
        | R::SessionUnfollow(q)
        | R::GetHeader(q)
        | R::GetMetadata(q)
        | R::GetArtifactDir(q) => &q.session_id,
        R::ReadLeafEntry(q) | R::ReadEntries(q) | R::ReadTree(q) | R::BuildSessionContext(q) => {
            &q.session_id
        }
        R::ReadEntry(q) | R::ReadLabel(q) => &q.session_id,
        R::ReadBranch(q) => &q.session_id,
        R::ReadBranches(q) => &q.session_id,
        R::ReadEntryRetention(q) => &q.session_id,
        _ => return None,
    })
}

impl Conn {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is plain data updated in single statements: a panic elsewhere
        // cannot leave it half-changed.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn read_loop<R: AsyncRead + Unpin>(self: Arc<Self>, reader: R) -> io::Result<()> {
        let limits = self.owner.options.line_limits;
        let mut lines = LineReader::new(reader, limits.max_line_bytes);
        let mut buf = Vec::new();
        loop {
            let sent = match lines.next(&mut buf).await? {
                Line::Eof => return Ok(()),
                Line::TooLong(len) => {
                    let e = Error::LineTooLong {
                        len: len as u64,
                        limit: limits.max_line_bytes as u64,
                    };
                    self.send(encode_error(None, &e)).await
                }
                Line::Full if buf.iter().all(u8::is_ascii_whitespace) => true,
                Line::Full => self.clone().handle(&buf).await,
            };
            self.handled.store(true, Ordering::Relaxed);
            if !sent {
                return Ok(()); // the writer is gone: nobody reads our answers
            }
        }
    }

    /// Lets go of a session: no longer following it, then one reference less.
    async fn unfollow_and_release(&self, h: Handle) -> Result<(), Error> {
        let unfollow = Command::Unfollow {
            outbox: self.out.id,
            reply: None,
        };
        let _ = h.shared.submit(unfollow, false); // a closed session has no followers
        self.owner.registry.release(h).await
    }

    /// Sends a line; `false` when the writer is gone.
    async fn send(&self, line: String) -> bool {
        self.out.send(line).await
    }

    async fn answer(&self, id: &RequestId, reply: Reply) -> bool {
        self.send(match reply {
            Ok(raw) => encode_result(id, &raw),
            Err(e) => encode_error(Some(id), &e),
        })
        .await
    }

    async fn handle(self: Arc<Self>, line: &[u8]) -> bool {
        // A lone surrogate reads as U+FFFD (as a UTF-8 encoder writes it): a message
        // holding one is stored, not refused.
        let line = session_protocol::read_lone_surrogates(line);
        match Incoming::parse(&line, self.owner.options.line_limits) {
            Err(r) => self.send(encode_error(r.id.as_ref(), &r.error)).await,
            // `initialized` and unknown notifications need no answer; we send no
            // requests, so responses are stray and dropped.
            Ok(Incoming::Notification { .. } | Incoming::Response { .. }) => true,
            Ok(Incoming::Request { id, method, params }) => match typed_request(&method, params) {
                Err(e) => self.answer(&id, Err(e)).await,
                Ok(request) => self.dispatch(id, request).await,
            },
        }
    }

    async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        self.permits.clone().acquire_owned().await.ok()
    }

    async fn dispatch(self: Arc<Self>, id: RequestId, request: Request) -> bool {
        let initialized = self.state().initialized;
        if let Request::Initialize(q) = &request {
            let reply = if initialized {
                Err(Error::AlreadyInitialized)
            } else if !PROTOCOL_VERSION.serves(q.protocol_version) {
                Err(Error::UnsupportedProtocol {
                    client: q.protocol_version,
                    server: PROTOCOL_VERSION,
                })
            } else {
                self.state().initialized = true;
                ok(&p::InitializeResult {
                    protocol_version: PROTOCOL_VERSION,
                    server_info: p::PeerInfo {
                        name: "bcs-owner".to_owned(),
                        version: env!("CARGO_PKG_VERSION").to_owned(),
                    },
                })
            };
            return self.answer(&id, reply).await;
        }
        if !initialized {
            let e = Error::NotInitialized {
                method: request.method().as_str().to_owned(),
            };
            return self.answer(&id, Err(e)).await;
        }
        if target(&request).is_some() {
            return self.session_call(id, request).await;
        }
        match &request {
            Request::StoreFollow(_) => {
                self.owner.registry.store_followers.add(&self.out);
                return self.answer(&id, ok(&p::Empty {})).await;
            }
            Request::StoreUnfollow(_) => {
                self.owner.registry.store_followers.remove(self.out.id);
                return self.answer(&id, ok(&p::Empty {})).await;
            }
            _ => {}
        }
        let Some(permit) = self.permit().await else {
            return false;
        };
        match request {
            Request::SessionClose(q) => {
                let handle = self.state().sessions.remove(&q.session_id);
                tokio::spawn(async move {
                    let reply = match handle {
                        None => Err(Error::SessionNotOpen {
                            session_id: q.session_id,
                        }),
                        Some(h) => match self.unfollow_and_release(h).await {
                            Ok(()) => ok(&p::Empty {}),
                            Err(e) => Err(e),
                        },
                    };
                    self.answer(&id, reply).await;
                    drop(permit);
                });
            }
            Request::StoreCreate(_)
            | Request::StoreOpen(_)
            | Request::StoreContinueRecent(_)
            | Request::StoreForkFrom(_)
            | Request::SessionNewSession(_)
            | Request::SessionCreateBranchedSession(_)
            | Request::SessionSetSessionFile(_) => {
                tokio::spawn(async move {
                    let reply = self.open(request).await;
                    self.answer(&id, reply).await;
                    drop(permit);
                });
            }
            Request::StoreDelete(_)
            | Request::StoreImport(_)
            | Request::StoreImportMany(_)
            | Request::StoreExport(_) => {
                tokio::spawn(async move {
                    let reply = self.store_call(request).await;
                    self.answer(&id, reply).await;
                    drop(permit);
                });
            }
            Request::StoreList(_) | Request::StoreListAll(_) => {
                tokio::spawn(async move {
                    let reply = self.list(id.clone(), request).await;
                    self.answer(&id, reply).await;
                    drop(permit);
                });
            }
            other => {
                drop(permit);
                let e = Error::MethodNotFound {
                    method: other.method().as_str().to_owned(),
                };
                return self.answer(&id, Err(e)).await;
            }
        }
        true
    }

    /// A `session/*` request (`target` names its session): no copy of its params or
    /// of the session id is made on the way (the answer names the session through its
    /// cell's shared id).
    async fn session_call(self: Arc<Self>, id: RequestId, request: Request) -> bool {
        let session_id = target(&request).unwrap_or_default();
        let handle = self.state().sessions.get(session_id).cloned();
        let Some(handle) = handle else {
            let session_id = session_id.to_owned();
            return self
                .answer(&id, Err(Error::SessionNotOpen { session_id }))
                .await;
        };
        let Some(permit) = self.permit().await else {
            return false;
        };
        if is_read(&request) {
            // Beside the writes: never behind queued writes or a sync.
            let Ok(reading) = handle.shared.reads.clone().try_acquire_owned() else {
                let e = Error::Overloaded {
                    queue: format!("session {} reads", handle.shared.session_id),
                };
                return self.answer(&id, Err(e)).await;
            };
            tokio::spawn(async move {
                let shared = handle.shared;
                let answering = id.clone();
                let session_id = shared.session_id.clone();
                let line =
                    tokio::task::spawn_blocking(move || shared.read_line(&answering, request))
                        .await
                        .unwrap_or_else(|_| encode_error(Some(&id), &gone(&session_id)));
                drop(reading);
                self.send(line).await;
                drop(permit);
            });
            return true;
        }
        let reply = Answer::line(
            self.out.clone(),
            id,
            permit,
            handle.shared.session_id.clone(),
        );
        let command = match request {
            Request::SessionFollow(_) => Command::Follow {
                outbox: self.out.clone(),
                reply,
            },
            Request::SessionUnfollow(_) => Command::Unfollow {
                outbox: self.out.id,
                reply: Some(reply),
            },
            request => Command::Call {
                request: Box::new(request),
                reply,
            },
        };
        // Performed or queued, its answer goes straight to the outbox, in order
        // with the session's other answers.
        // (a refused one is answered too: `overloaded`, or no longer served).
        // A durable append may sync on this task when it is the first line handled
        // in this poll.
        let lifo_empty = !self.handled.load(Ordering::Relaxed);
        let _ = handle.shared.submit(command, lifo_empty);
        true
    }

    /// The handle this connection holds on `session_id`.
    fn held(&self, session_id: &str) -> Result<Handle, Error> {
        self.state()
            .sessions
            .get(session_id)
            .cloned()
            .ok_or_else(|| Error::SessionNotOpen {
                session_id: session_id.to_owned(),
            })
    }

    /// Every call that answers with an opened session (`store/create`, `store/open`,
    /// `store/continueRecent`, `store/forkFrom`, `session/newSession`,
    /// `session/createBranchedSession`, `session/setSessionFile`): a handle
    /// registered on this connection, and the session as it is now.
    async fn open(&self, request: Request) -> Reply {
        let creates = matches!(
            request,
            Request::StoreCreate(_)
                | Request::StoreForkFrom(_)
                | Request::SessionNewSession(_)
                | Request::SessionCreateBranchedSession(_)
        );
        let reply = self.open_inner(request).await;
        // `store/continueRecent` may create too; its answer does not say, so it is
        // not announced (the next listing shows the session).
        if creates && let Ok(raw) = &reply {
            self.announce_created(raw);
        }
        reply
    }

    /// `store/changed` `created` for an answer that opened a new session.
    fn announce_created(&self, raw: &RawValue) {
        let followers = &self.owner.registry.store_followers;
        if followers.is_empty() {
            return;
        }
        if let Ok(o) = parse::<p::SessionOpened>(raw) {
            let change = p::StoreChange::Created { cwd: o.header.cwd };
            let line = store_change_line(&o.session_id, &o.session_file, change);
            followers.notify(&Topic::Store, line);
        }
    }

    async fn open_inner(&self, request: Request) -> Reply {
        let method = request.method().as_str();
        let owner = &self.owner;
        let store = owner.store.clone();
        let handle = match request {
            Request::StoreCreate(q) => {
                let mut options = NewSessionOptions::default();
                options.id = q.session_id;
                options.parent_session = q.parent_session;
                self.create(method, q.cwd, options).await?
            }
            Request::StoreOpen(q) => {
                let key = open_key(&store, q)?;
                self.acquire(method, key).await?
            }
            Request::StoreContinueRecent(q) => {
                // As the library's `continue_recent`, through the registry: a session
                // open in the owner is shared, one held by another process skipped.
                let cwd = q.cwd.clone();
                let listed = blocking(method, move || {
                    store.list(&cwd, &mut ()).map_err(|e| open_error(method, e))
                })
                .await?;
                let mut found = None;
                for info in listed {
                    match self.acquire(method, info.path).await {
                        Err(Error::Locked { .. }) => continue,
                        other => {
                            found = Some(other?);
                            break;
                        }
                    }
                }
                match found {
                    Some(h) => h,
                    None => {
                        self.create(method, q.cwd, NewSessionOptions::default())
                            .await?
                    }
                }
            }
            Request::StoreForkFrom(q) => {
                let forked = blocking(method, move || {
                    store
                        .fork_from(Path::new(&q.source), &q.target_cwd)
                        .map_err(|e| open_error(method, e))
                })
                .await?;
                owner.registry.adopt(forked, &owner.options).await
            }
            Request::SessionNewSession(q) => {
                let from: p::SessionOpened = parse(&describe(&self.held(&q.session_id)?).await?)?;
                let mut options = NewSessionOptions::default();
                options.id = q.new_session_id;
                options.parent_session = q.parent_session;
                let cwd = from.header.cwd.unwrap_or_default();
                self.create(method, cwd, options).await?
            }
            Request::SessionCreateBranchedSession(q) => {
                let from = self.held(&q.session_id)?;
                let (reply, answer) = oneshot::channel();
                let branched = Command::Branched {
                    leaf: q.leaf_id,
                    reply,
                };
                if from.shared.submit(branched, false) == Submitted::Closed {
                    return Err(gone(&q.session_id));
                }
                let branched = answer.await.unwrap_or_else(|_| Err(gone(&q.session_id)))?;
                owner.registry.adopt(branched, &owner.options).await
            }
            Request::SessionSetSessionFile(q) => {
                let old = self.held(&q.session_id)?;
                let open = p::OpenParams {
                    path: Some(q.path),
                    session_id: None,
                };
                let new = self.acquire(method, open_key(&store, open)?).await?;
                // The switch succeeded: this connection lets go of the old session.
                let removed = self.state().sessions.remove(&q.session_id);
                if let Some(h) = removed {
                    let _ = owner.registry.release(h).await;
                }
                drop(old);
                new
            }
            other => {
                return Err(Error::MethodNotFound {
                    method: other.method().as_str().to_owned(),
                });
            }
        };
        self.register(method, handle).await
    }

    async fn create(
        &self,
        method: &'static str,
        cwd: String,
        options: NewSessionOptions,
    ) -> Result<Handle, Error> {
        let store = self.owner.store.clone();
        let created = blocking(method, move || {
            store
                .create_with(&cwd, options)
                .map_err(|e| open_error(method, e))
        })
        .await?;
        Ok(self
            .owner
            .registry
            .adopt(created, &self.owner.options)
            .await)
    }

    async fn acquire(&self, method: &'static str, key: PathBuf) -> Result<Handle, Error> {
        let store = self.owner.store.clone();
        let path = key.clone();
        self.owner
            .registry
            .acquire(key, &self.owner.options, move || {
                store.open(&path).map_err(|e| open_error(method, e))
            })
            .await
    }

    /// Records `handle` on this connection (one reference per session) and answers
    /// with the session as it is now.
    async fn register(&self, method: &str, handle: Handle) -> Reply {
        let owner = &self.owner;
        let opened: p::SessionOpened = match describe(&handle).await.and_then(|r| parse(&r)) {
            Ok(o) => o,
            Err(e) => {
                let _ = owner.registry.release(handle).await;
                return Err(e);
            }
        };
        let extra = {
            let mut state = self.state();
            match state.sessions.get(&opened.session_id) {
                Some(held) if held.key == handle.key => Some(Ok(handle)),
                Some(_) => Some(Err(handle)),
                None => {
                    state.sessions.insert(opened.session_id.clone(), handle);
                    None
                }
            }
        };
        match extra {
            None => ok(&opened),
            Some(Ok(again)) => {
                let _ = owner.registry.release(again).await;
                ok(&opened)
            }
            Some(Err(other)) => {
                let _ = owner.registry.release(other).await;
                Err(Error::InvalidParams {
                    method: method.to_owned(),
                    detail: format!(
                        "a session with id {} from another journal is open on this connection",
                        opened.session_id
                    ),
                })
            }
        }
    }

    /// `store/delete`, `store/import`, `store/importMany`, `store/export`: one library
    /// call each.
    async fn store_call(&self, request: Request) -> Reply {
        let method = request.method().as_str();
        let store = self.owner.store.clone();
        let followers = self.owner.registry.store_followers.clone();
        blocking(method, move || match request {
            Request::StoreDelete(q) => {
                // An open session is refused by its lock (held by this owner).
                let report = store
                    .delete_id(&q.session_id)
                    .map_err(|e| open_error(method, e))?;
                if !followers.is_empty() {
                    let id =
                        SafeSessionId::new(&q.session_id).map_err(|e| Error::InvalidParams {
                            method: method.to_owned(),
                            detail: e.to_string(),
                        })?;
                    let file = store.layout().journal_path(&id);
                    let line = store_change_line(
                        &q.session_id,
                        &file.to_string_lossy(),
                        p::StoreChange::Deleted,
                    );
                    followers.notify(&Topic::Store, line);
                }
                ok(&p::Deleted {
                    removed: report
                        .removed
                        .iter()
                        .map(|p| p.to_string_lossy().into_owned())
                        .collect(),
                })
            }
            Request::StoreImport(q) => {
                let o = store
                    .import(Path::new(&q.path))
                    .map_err(|e| open_error(method, e))?;
                ok(&imported(o, &followers))
            }
            Request::StoreImportMany(q) => {
                let sources: Vec<PathBuf> = q.paths.iter().map(PathBuf::from).collect();
                let outcomes = store
                    .import_many(&sources, &BulkOptions::default(), &mut |_, _| {})
                    .map_err(|e| open_error(method, e))?;
                let results = q
                    .paths
                    .into_iter()
                    .zip(outcomes)
                    .map(|(path, outcome)| match outcome {
                        Ok(o) => p::ImportManyItem {
                            path,
                            imported: Some(imported(o, &followers)),
                            error: None,
                        },
                        Err(e) => {
                            let e = open_error(method, e);
                            p::ImportManyItem {
                                path,
                                imported: None,
                                error: Some(p::ImportManyError {
                                    code: e.code(),
                                    message: e.to_string(),
                                }),
                            }
                        }
                    })
                    .collect();
                ok(&p::ImportedMany { results })
            }
            Request::StoreExport(q) => {
                let id = SafeSessionId::new(&q.session_id).map_err(|e| Error::InvalidParams {
                    method: method.to_owned(),
                    detail: e.to_string(),
                })?;
                let journal = store.layout().journal_path(&id);
                let o = store
                    .export(&journal, Path::new(&q.path))
                    .map_err(|e| Error::Store {
                        detail: e.to_string(),
                    })?;
                ok(&p::Exported {
                    path: o.path.to_string_lossy().into_owned(),
                    records: o.records,
                    bytes: o.bytes,
                })
            }
            other => Err(Error::MethodNotFound {
                method: other.method().as_str().to_owned(),
            }),
        })
        .await
    }

    /// `store/list` and `store/listAll`, with `store/listProgress` notifications when
    /// asked (dropped, not waited for, when the connection's queue is full: progress
    /// is advisory and a slow reader must not slow the listing).
    async fn list(&self, id: RequestId, request: Request) -> Reply {
        let store = self.owner.store.clone();
        let progress = match &request {
            Request::StoreList(q) => q.progress,
            Request::StoreListAll(q) => q.progress,
            _ => None,
        };
        let mut observer = Progress {
            out: progress.unwrap_or(false).then(|| self.out.clone()),
            request_id: id,
        };
        let listed = tokio::task::spawn_blocking(move || match request {
            Request::StoreList(q) => store.list(&q.cwd, &mut observer),
            _ => store.list_all(&mut observer),
        })
        .await
        .map_err(|e| Error::Internal {
            detail: format!("listing: {e}"),
        })?
        .map_err(|e| open_error("store/list", e))?;
        let sessions = listed
            .iter()
            .map(|s| serde_json::from_value(s.to_json()))
            .collect::<Result<_, _>>()
            .map_err(|e| Error::Internal {
                detail: format!("a listed session does not fit the protocol's shape: {e}"),
            })?;
        ok(&p::Listing { sessions })
    }
}

/// Sends a listing's progress as `store/listProgress` notifications.
struct Progress {
    out: Option<Arc<Outbox>>,
    request_id: RequestId,
}

impl session_manager::ListObserver for Progress {
    fn on_progress(&mut self, loaded: usize, total: usize) {
        if let Some(out) = &self.out {
            let note = p::Notification::ListProgress(p::ListProgressParams {
                request_id: self.request_id.clone(),
                loaded: loaded as u64,
                total: total as u64,
            });
            out.try_send(p::encode_notification(&note));
        }
    }
}

/// The journal a `store/open` names: by id in the store's sessions directory, or an
/// absolute path (the registry's key: a second name for one journal is refused by
/// its lock, never opened twice).
fn open_key(store: &session_manager::Store, q: p::OpenParams) -> Result<PathBuf, Error> {
    let invalid = |detail: String| Error::InvalidParams {
        method: "store/open".to_owned(),
        detail,
    };
    match (q.path, q.session_id) {
        (Some(path), None) => {
            let path = PathBuf::from(path);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(invalid(format!(
                    "{}: path must be absolute",
                    path.display()
                )))
            }
        }
        (None, Some(id)) => {
            let id = SafeSessionId::new(&id).map_err(|e| invalid(e.to_string()))?;
            Ok(store.layout().journal_path(&id))
        }
        _ => Err(invalid("give exactly one of path and sessionId".to_owned())),
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(
    what: &str,
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal {
            detail: format!("{what}: {e}"),
        })?
}

fn parse<T: serde::de::DeserializeOwned>(raw: &RawValue) -> Result<T, Error> {
    serde_json::from_str(raw.get()).map_err(|e| Error::Internal {
        detail: format!("reading our own answer: {e}"),
    })
}

/// The session as `store/open` answers it now: a read, beside the writes (opening a
/// shared session never waits for its sync).
async fn describe(handle: &Handle) -> Result<Box<RawValue>, Error> {
    let shared = handle.shared.clone();
    tokio::task::spawn_blocking(move || shared.describe())
        .await
        .unwrap_or_else(|_| Err(gone("(opening)")))
}

/// What an import answers, announced to the store's followers when it created a
/// session.
fn imported(o: session_manager::ImportOutcome, followers: &Followers) -> p::Imported {
    if !o.already_imported && !followers.is_empty() {
        let change = p::StoreChange::Created { cwd: None };
        let line = store_change_line(&o.session_id, &o.journal.to_string_lossy(), change);
        followers.notify(&Topic::Store, line);
    }
    p::Imported {
        session_id: o.session_id,
        session_file: o.journal.to_string_lossy().into_owned(),
        already_imported: o.already_imported,
        entries: o.entries,
        issues: o.issues.len() as u64 + o.issues_not_listed,
    }
}
