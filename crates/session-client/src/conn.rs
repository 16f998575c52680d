//! One connection to an owner: a writer task fed by a bounded queue of request lines,
//! a reader task that matches each answer to its pending request by id and sends
//! notifications on, and the table of pending requests.
//!
//! Pipelining: any number of calls (from clones of one [`crate::Client`], on any
//! tasks) may be in flight at once; each waits on its own oneshot. When the
//! connection ends — the owner closed it, was killed, or wrote a line that cannot be
//! read — the table is marked gone and every pending call is answered
//! [`ClientError::OwnerGone`]; a call made afterwards gets it at once. No call waits
//! for an answer that cannot come.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::value::RawValue;
use session_protocol::{
    Error, Incoming, LineLimits, Notification, RequestId, check_line, encode_request,
};
use tokio::io::{
    AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::{mpsc, oneshot};

use crate::error::ClientError;

/// A notification from the owner.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Notice {
    /// One this version of the protocol knows, with its typed params.
    Known(Notification),
    /// One it does not know (a newer owner's), kept raw.
    Unknown {
        /// Its method name.
        method: String,
        /// Its params as JSON text.
        params: Option<Box<RawValue>>,
    },
}

/// What the writer task is given.
enum Out {
    /// A request line (with its `\n`).
    Line(String),
    /// End our side of the connection.
    Close,
}

/// An answer: the result's JSON text, or the error.
type Answer = Result<Box<RawValue>, ClientError>;

#[derive(Default)]
struct Pending {
    waiting: HashMap<i64, oneshot::Sender<Answer>>,
    /// Set once the connection has ended: why.
    gone: Option<String>,
}

/// What the reader, the writer and the callers share.
pub(crate) struct Shared {
    pending: Mutex<Pending>,
    missed: AtomicU64,
    /// Becomes `true` once the connection has ended.
    ended: tokio::sync::watch::Sender<bool>,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            pending: Mutex::default(),
            missed: AtomicU64::new(0),
            ended: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        // Every update is one statement on plain data: a panic elsewhere cannot leave
        // the table half-changed.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for request `id`'s answer, or fails at once if the connection ended.
    fn register(&self, id: i64) -> Result<oneshot::Receiver<Answer>, ClientError> {
        let mut p = self.pending();
        if let Some(detail) = &p.gone {
            return Err(ClientError::OwnerGone {
                detail: detail.clone(),
            });
        }
        let (tx, rx) = oneshot::channel();
        p.waiting.insert(id, tx);
        Ok(rx)
    }

    fn forget(&self, id: i64) {
        self.pending().waiting.remove(&id);
    }

    fn resolve(&self, id: i64, answer: Answer) {
        let waiter = self.pending().waiting.remove(&id);
        if let Some(tx) = waiter {
            let _ = tx.send(answer); // the caller may have stopped waiting
        }
    }

    /// Ends the connection: every pending call gets `OwnerGone`, and so does every
    /// later one.
    pub(crate) fn gone(&self, detail: String) {
        let waiting = {
            let mut p = self.pending();
            if p.gone.is_some() {
                return;
            }
            p.gone = Some(detail.clone());
            std::mem::take(&mut p.waiting)
        };
        self.ended.send_replace(true);
        for (_, tx) in waiting {
            let _ = tx.send(Err(ClientError::OwnerGone {
                detail: detail.clone(),
            }));
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.pending().waiting.len()
    }

    pub(crate) fn is_gone(&self) -> bool {
        self.pending().gone.is_some()
    }

    pub(crate) fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }

    /// Waits until the connection has ended.
    pub(crate) async fn ended(&self) {
        let mut rx = self.ended.subscribe();
        let _ = rx.wait_for(|ended| *ended).await;
    }
}

/// The caller's side of a connection.
pub(crate) struct Conn {
    out: mpsc::Sender<Out>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
}

/// The bounds of a connection.
pub(crate) struct Bounds {
    pub(crate) max_answer_bytes: usize,
    pub(crate) notification_queue: usize,
    pub(crate) outgoing_queue: usize,
}

impl Conn {
    /// Starts the reader and writer tasks on `r` and `w`.
    pub(crate) fn start<R, W>(r: R, w: W, bounds: Bounds) -> (Conn, mpsc::Receiver<Notice>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared::default());
        let (out, out_rx) = mpsc::channel(bounds.outgoing_queue.max(1));
        let (notices, notices_rx) = mpsc::channel(bounds.notification_queue.max(1));
        tokio::spawn(write_loop(w, out_rx, shared.clone()));
        tokio::spawn(read_loop(
            r,
            shared.clone(),
            notices,
            bounds.max_answer_bytes,
        ));
        let conn = Conn {
            out,
            shared,
            next_id: AtomicU64::new(1),
        };
        (conn, notices_rx)
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Sends `request` and waits for its answer (the result's JSON text), for at
    /// most `timeout` in all (queueing the line included) when one is given.
    pub(crate) async fn request(
        &self,
        request: &session_protocol::Request,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, ClientError> {
        let Some(after) = timeout else {
            return self.request_unbounded(request).await;
        };
        // Dropping the call's future on timeout drops its slot: a late answer finds
        // nobody waiting and is dropped.
        tokio::time::timeout(after, self.request_unbounded(request))
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    method: request.method().as_str(),
                    after,
                })
            })
    }

    async fn request_unbounded(
        &self,
        request: &session_protocol::Request,
    ) -> Result<Box<RawValue>, ClientError> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        // Ids stay below 2^53 so that any JSON reader (JavaScript's too) keeps them exact.
        let id = i64::try_from(n & ((1 << 53) - 1)).unwrap_or(i64::MAX);
        let mut line = encode_request(&RequestId::Number(id), request);
        // The owner answers a line it refuses before reading its id with `"id": null`,
        // which no pending call could be matched with: refuse such a line here.
        check_line(line.as_bytes(), LineLimits::default()).map_err(Error::from)?;
        line.push('\n');
        let rx = self.shared.register(id)?;
        // A caller that stops waiting (its future dropped) leaves no slot behind.
        let _slot = Slot {
            shared: &self.shared,
            id,
        };
        if self.out.send(Out::Line(line)).await.is_err() {
            return Err(self.gone_error());
        }
        match rx.await {
            // The reader cannot know the method of an answer it could not read.
            Ok(Err(ClientError::BadAnswer { detail, .. })) => Err(ClientError::BadAnswer {
                method: request.method().as_str(),
                detail,
            }),
            Ok(answer) => answer,
            // The table was dropped without an answer: the connection is gone.
            Err(_) => Err(self.gone_error()),
        }
    }

    /// Ends our side of the connection after the requests already queued: the
    /// owner answers what it has read, lets go of this connection's sessions and
    /// closes its side. Later calls fail `OwnerGone`.
    pub(crate) async fn close(&self) {
        let _ = self.out.send(Out::Close).await;
    }

    fn gone_error(&self) -> ClientError {
        let detail = self
            .shared
            .pending()
            .gone
            .clone()
            .unwrap_or_else(|| "the connection closed".to_owned());
        ClientError::OwnerGone { detail }
    }
}

/// A pending call's slot, removed when the call ends however it ends (answered,
/// failed, or its future dropped).
struct Slot<'a> {
    shared: &'a Shared,
    id: i64,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.shared.forget(self.id);
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(w: W, mut rx: mpsc::Receiver<Out>, shared: Arc<Shared>) {
    let mut w = BufWriter::new(w);
    while let Some(out) = rx.recv().await {
        let Out::Line(line) = out else {
            break;
        };
        let mut sent = w.write_all(line.as_bytes()).await;
        if sent.is_ok() && rx.is_empty() {
            sent = w.flush().await;
        }
        if let Err(e) = sent {
            shared.gone(format!("writing to the owner failed: {e}"));
            return;
        }
    }
    // Closed, or every sender is gone (the client was dropped): end our side; the
    // owner then lets go of this connection's sessions. Requests queued after a
    // close are never sent: their senders see the queue closed.
    rx.close();
    let _ = w.flush().await;
    let _ = w.shutdown().await;
}

/// The depth bound for answers: serde_json's own (entries the owner stores may nest
/// deeper than the 64 levels it accepts in a request).
const ANSWER_DEPTH: usize = 128;

async fn read_loop<R: AsyncRead + Unpin>(
    r: R,
    shared: Arc<Shared>,
    notices: mpsc::Sender<Notice>,
    max: usize,
) {
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    let limits = LineLimits {
        max_line_bytes: max,
        max_depth: ANSWER_DEPTH,
    };
    let detail = loop {
        buf.clear();
        let read = (&mut r)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut buf)
            .await;
        match read {
            Ok(0) => break "the connection closed".to_owned(),
            Ok(_) => {}
            Err(e) => break format!("reading from the owner failed: {e}"),
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if buf.len() > max {
            break format!("an answer line is longer than {max} bytes");
        } else {
            break "the connection closed in the middle of a line".to_owned();
        }
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match Incoming::parse(&buf, limits) {
            Ok(Incoming::Response {
                id: RequestId::Number(id),
                outcome,
            }) => shared.resolve(
                id,
                outcome
                    .map(|raw| raw.to_owned())
                    .map_err(|o| ClientError::Owner(Error::from_object(o))),
            ),
            // Not an id of ours: nobody waits for it.
            Ok(Incoming::Response { .. }) => {}
            Ok(Incoming::Notification { method, params }) => {
                let notice = match Notification::from_params(&method, params) {
                    Ok(n) => Notice::Known(n),
                    Err(_) => Notice::Unknown {
                        method: method.into_owned(),
                        params: params.map(|p| p.to_owned()),
                    },
                };
                if let Err(mpsc::error::TrySendError::Full(_)) = notices.try_send(notice) {
                    // Nobody reads them fast enough: never let that stall answers.
                    shared.missed.fetch_add(1, Ordering::Relaxed);
                }
            }
            // The owner sends no requests.
            Ok(Incoming::Request { .. }) => {}
            Err(refusal) => match leading_id(&buf) {
                // An answer we cannot read, to a request we can name: that call fails.
                Some(id) => shared.resolve(
                    id,
                    Err(ClientError::BadAnswer {
                        method: "",
                        detail: refusal.error.to_string(),
                    }),
                ),
                // A line we cannot attribute: some call would wait forever.
                None => {
                    break format!("the owner wrote an unreadable line: {}", refusal.error);
                }
            },
        }
    };
    shared.gone(detail);
}

/// The id of an answer the owner wrote (`{"jsonrpc":"2.0","id":N,…`), read without
/// parsing the rest (for a line too deep or malformed to parse).
fn leading_id(line: &[u8]) -> Option<i64> {
    let rest = line.strip_prefix(br#"{"jsonrpc":"2.0","id":"#)?;
    let end = rest.iter().position(|b| !b.is_ascii_digit())?;
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::leading_id;

    #[test]
    fn the_leading_id_is_read_from_the_owners_own_prefix_only() {
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":42,"result":[[[["#),
            Some(42)
        );
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","id":"a","result":1}"#),
            None
        );
        assert_eq!(leading_id(br#"{"id":4,"jsonrpc":"2.0"}"#), None);
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":"#), None);
    }
}
