//! The pipelined group commit: the writes that arrive while a batch's sync runs are
//! performed during it, and answered only after a sync of their own, in order; a
//! failed sync fails the durable appends it covers and poisons the session's writer
//! for the ones written while it ran.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::Value;
use session_journal::vfs::VfsFile;
use session_manager::{Layout, Sources, Store};
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;
use session_testkit::sim::SimFs;
use session_testkit::{Interpose, Interposed, SyncHook, on_sync};

use crate::support::*;

/// Bounds every wait: a failure reports instead of hanging.
const DEADLINE: Duration = Duration::from_secs(60);

async fn within<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(DEADLINE, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {DEADLINE:?}"))
}

/// Once closed, every `sync_data` waits for a permit of its own (bounded: twice the
/// test's deadline, so a test stuck behind a held sync fails at the deadline first).
#[derive(Debug, Default)]
struct Turnstile {
    state: Mutex<TurnstileState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct TurnstileState {
    closed: bool,
    permits: u64,
    /// Syncs waiting for a permit now.
    waiting: u64,
    /// Syncs that passed.
    passed: u64,
}

impl Turnstile {
    fn lock(&self) -> std::sync::MutexGuard<'_, TurnstileState> {
        self.state.lock().expect("turnstile")
    }

    fn close(&self) {
        self.lock().closed = true;
    }

    /// Lets every sync through from now on.
    fn open(&self) {
        let mut s = self.lock();
        s.closed = false;
        s.permits = u64::MAX;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let mut s = self.lock();
        if s.closed {
            s.waiting += 1;
            self.changed.notify_all();
            let (mut s2, _) = self
                .changed
                .wait_timeout_while(s, DEADLINE * 2, |s| s.permits == 0)
                .expect("turnstile");
            s2.permits = s2.permits.saturating_sub(1);
            s2.waiting -= 1;
            s = s2;
        }
        s.passed += 1;
        self.changed.notify_all();
    }

    /// Lets one waiting (or the next) sync through.
    fn permit(&self) {
        self.lock().permits += 1;
        self.changed.notify_all();
    }

    /// Waits (bounded) until `n` syncs wait for a permit.
    fn wait_waiting(&self, n: u64) {
        let s = self.lock();
        let (s, _) = self
            .changed
            .wait_timeout_while(s, DEADLINE, |s| s.waiting != n)
            .expect("turnstile");
        assert_eq!(s.waiting, n, "syncs waiting for a permit");
    }

    fn passed(&self) -> u64 {
        self.lock().passed
    }
}

/// An owner over `fs` whose journal syncs each pass `turnstile` (open until closed).
fn gated_owner() -> (Arc<Turnstile>, SimFs, Arc<Owner>) {
    let turnstile = Arc::new(Turnstile::default());
    let fs = SimFs::new();
    let owner = Owner::new(turnstile_store(&turnstile, &fs), OwnerOptions::default());
    (turnstile, fs, owner)
}

/// Waits (on the blocking pool) until a sync is held at `turnstile`; returns how
/// many syncs have passed it.
async fn sync_held(turnstile: &Arc<Turnstile>, what: &str) -> u64 {
    let t = turnstile.clone();
    tokio::task::spawn_blocking(move || t.wait_waiting(1))
        .await
        .expect(what);
    turnstile.passed()
}

fn turnstile_store(t: &Arc<Turnstile>, fs: &SimFs) -> Store {
    let vfs = Interposed::wrap(Arc::new(fs.clone()), Gated(t.clone()));
    Store::new(Layout::with_root("/sim").expect("absolute"))
        .with_sources(Sources::deterministic(T0, 7))
        .with_vfs(Arc::new(vfs))
}

#[derive(Debug, Clone)]
struct Gated(Arc<Turnstile>);

impl SyncHook for Gated {
    fn before(&self, _: &Path) {
        self.0.pass();
    }
}

impl Interpose for Gated {
    fn opened(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        on_sync(path, inner, self.clone())
    }
    fn created(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        self.opened(path, inner)
    }
}

/// Two clients on one session whose first durable append's sync is held.
struct Held {
    turnstile: Arc<Turnstile>,
    fs: SimFs,
    a: Client,
    b: Client,
    /// A third client, for reads (`a`'s task syncs its own append).
    r: Client,
    sid: String,
    /// The request id of `a`'s held append.
    held: RequestId,
}

async fn held() -> Held {
    let (turnstile, fs, owner) = gated_owner();
    let mut a = Client::ready(&owner).await;
    let sid = a.create().await.session_id;
    let b = Client::joined(&owner, &sid).await;
    let r = Client::joined(&owner, &sid).await;
    turnstile.close();
    let held = a
        .send::<call::AppendMessage>(append(&sid, "held", None))
        .await;
    sync_held(&turnstile, "the held sync").await;
    Held {
        turnstile,
        fs,
        a,
        b,
        r,
        sid,
        held,
    }
}

/// What `c` reads of the session's branch now (a read is answered beside a sync).
async fn texts(c: &mut Client, sid: &str) -> Vec<String> {
    c.branch(sid).await.entries.iter().map(text_of).collect()
}

/// Waits (bounded) until the session's branch holds `n` entries.
async fn written(c: &mut Client, sid: &str, n: usize) -> Vec<String> {
    within("the writes during the sync", async {
        loop {
            let t = texts(c, sid).await;
            if t.len() >= n {
                return t;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
}

fn id_of(v: &Value) -> Value {
    v["id"].clone()
}

fn json(id: &RequestId) -> Value {
    serde_json::to_value(id).expect("id")
}

/// A durable append that arrives while another batch's sync runs is written during
/// that sync, and answered only after a sync of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_written_during_a_sync_waits_for_its_own_sync() {
    let Held {
        turnstile,
        a: mut first,
        mut b,
        mut r,
        sid,
        held,
        ..
    } = held().await;
    let d1 = b
        .send::<call::AppendMessage>(append(&sid, "during", None))
        .await;
    // Written while the first sync is held: a read already sees it.
    assert_eq!(written(&mut r, &sid, 2).await, ["held", "during"]);
    let passed = turnstile.passed();
    turnstile.permit();
    let answer = within("the held append", first.recv()).await;
    assert_eq!(id_of(&answer), json(&held), "{answer}");
    // The second sync (for "during") now waits: its append is not answered yet, so
    // a read sent after it is answered first.
    sync_held(&turnstile, "the second sync").await;
    assert_eq!(turnstile.passed(), passed + 1);
    let read = b
        .send::<call::ReadLeafEntry>(ReadParams {
            session_id: sid.clone(),
            limits: None,
        })
        .await;
    let next = within("the read", b.recv()).await;
    assert_eq!(id_of(&next), json(&read), "{next}");
    turnstile.permit();
    let answer = within("the append written during the sync", b.recv()).await;
    assert_eq!(id_of(&answer), json(&d1), "{answer}");
    assert!(answer["result"]["entryId"].is_string(), "{answer}");
    assert_eq!(turnstile.passed(), passed + 2, "one sync each");
    turnstile.open();
}

/// Buffered and durable appends pipelined by one client while another batch's sync
/// is held are answered after it, in the order sent, and share one sync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_during_a_sync_are_answered_in_order_after_it() {
    let Held {
        turnstile,
        a: mut first,
        mut b,
        mut r,
        sid,
        held,
        ..
    } = held().await;
    let sent = [
        b.send::<call::AppendMessage>(append(&sid, "b1", Some(Durability::Buffered)))
            .await,
        b.send::<call::AppendMessage>(append(&sid, "d2", None))
            .await,
        b.send::<call::AppendMessage>(append(&sid, "b3", Some(Durability::Buffered)))
            .await,
        b.send::<call::AppendMessage>(append(&sid, "d4", None))
            .await,
    ];
    assert_eq!(
        written(&mut r, &sid, 5).await,
        ["held", "b1", "d2", "b3", "d4"]
    );
    let passed = turnstile.passed();
    turnstile.permit();
    let answer = within("the held append", first.recv()).await;
    assert_eq!(id_of(&answer), json(&held), "{answer}");
    turnstile.permit();
    let mut got = Vec::new();
    for _ in 0..sent.len() {
        let line = within("a write during the sync", b.recv()).await;
        assert!(line["result"]["entryId"].is_string(), "{line}");
        got.push(id_of(&line));
    }
    let want: Vec<Value> = sent.iter().map(json).collect();
    assert_eq!(got, want, "answered in the order sent");
    assert_eq!(turnstile.passed(), passed + 2, "the four share one sync");
    turnstile.open();
}

/// The held sync fails: its durable append is not acknowledged; the durable append
/// written while it ran fails too (the writer is poisoned, its sync never
/// attempted), a buffered one written meanwhile is acknowledged (written is all it
/// asks), and later appends are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_fails_what_it_covers_and_poisons_the_rest() {
    let Held {
        turnstile,
        fs,
        a: mut first,
        mut b,
        mut r,
        sid,
        held,
    } = held().await;
    let buffered = b
        .send::<call::AppendMessage>(append(&sid, "buffered", Some(Durability::Buffered)))
        .await;
    let durable = b
        .send::<call::AppendMessage>(append(&sid, "durable", None))
        .await;
    written(&mut r, &sid, 3).await;
    fs.fail_sync_after(1);
    let passed = turnstile.passed();
    turnstile.permit();
    let answer = within("the held append", first.recv()).await;
    assert_eq!(id_of(&answer), json(&held), "{answer}");
    assert!(
        answer["error"].is_object(),
        "the failed sync's append: {answer}"
    );
    let mut answers = Vec::new();
    for _ in 0..2 {
        answers.push(within("a write during the sync", b.recv()).await);
    }
    assert_eq!(id_of(&answers[0]), json(&buffered), "{}", answers[0]);
    assert!(
        answers[0]["result"]["entryId"].is_string(),
        "{}",
        answers[0]
    );
    assert_eq!(id_of(&answers[1]), json(&durable), "{}", answers[1]);
    assert!(answers[1]["error"].is_object(), "{}", answers[1]);
    assert_eq!(
        turnstile.passed(),
        passed + 1,
        "no sync after the failed one"
    );
    let later = b
        .call::<call::AppendMessage>(append(&sid, "later", Some(Durability::Buffered)))
        .await;
    assert!(later.is_err(), "the poisoned writer refuses: {later:?}");
    turnstile.open();
}

/// Request lines written to the owner at once (one write: its connection reads them
/// in one poll of its task), numbered from 1001.
async fn pipelined(c: &mut Client, requests: Vec<Request>) -> Vec<RequestId> {
    let mut bytes = String::new();
    let mut ids = Vec::new();
    for (n, request) in (1001..).zip(requests) {
        let id = RequestId::Number(n);
        bytes.push_str(&encode_request(&id, &request));
        bytes.push('\n');
        ids.push(id);
    }
    c.send_raw(bytes.as_bytes()).await;
    ids
}

/// A connection that pipelines a buffered append and a durable one (read in one
/// poll of its task) gets the buffered one's answer while the durable one's sync is
/// held. The buffered answer woke the connection's writer task just before the
/// durable append was performed: a sync blocking that worker would hold the writer
/// in the worker's LIFO slot, which the idle worker cannot take
/// (tokio-rs/tokio#4941), until the sync ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_woken_just_before_a_sync_leaves_during_it() {
    let (turnstile, _, owner) = gated_owner();
    let mut a = Client::ready(&owner).await;
    let sid = a.create().await.session_id;
    turnstile.close();
    let ids = pipelined(
        &mut a,
        vec![
            call::AppendMessage::request(append(&sid, "b1", Some(Durability::Buffered))),
            call::AppendMessage::request(append(&sid, "d2", None)),
        ],
    )
    .await;
    let passed = sync_held(&turnstile, "the held sync").await;
    let answer = within("the buffered answer during the held sync", a.recv()).await;
    assert_eq!(id_of(&answer), json(&ids[0]), "{answer}");
    assert!(answer["result"]["entryId"].is_string(), "{answer}");
    assert_eq!(
        turnstile.passed(),
        passed,
        "answered while the sync is held"
    );
    turnstile.permit();
    let answer = within("the durable append", a.recv()).await;
    assert_eq!(id_of(&answer), json(&ids[1]), "{answer}");
    assert!(answer["result"]["entryId"].is_string(), "{answer}");
    turnstile.open();
}

/// Another connection's notification of an acknowledged append is not held behind
/// the next append's sync: the appender (following its session too, so its own
/// writer is already woken) pipelines a buffered append and a durable one; the
/// follower gets the buffered entry while the durable one's sync is held. Delivering
/// the buffered append woke the follower's writer last, into the LIFO slot of the
/// worker that then performs the durable append.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_is_notified_while_the_next_append_syncs() {
    let (turnstile, _, owner) = gated_owner();
    let mut a = Client::ready(&owner).await;
    let sid = a.create().await.session_id;
    let mut f = Client::joined(&owner, &sid).await;
    let session = || SessionParams {
        session_id: sid.clone(),
    };
    f.call::<call::SessionFollow>(session())
        .await
        .expect("follow");
    turnstile.close();
    pipelined(
        &mut a,
        vec![
            call::SessionFollow::request(session()),
            call::AppendMessage::request(append(&sid, "b1", Some(Durability::Buffered))),
            call::AppendMessage::request(append(&sid, "d2", None)),
        ],
    )
    .await;
    let passed = sync_held(&turnstile, "the held sync").await;
    let note = within("the follower's notification during the held sync", f.recv()).await;
    assert_eq!(note["method"], "session/appended", "{note}");
    assert_eq!(
        note["params"]["entry"]["message"]["content"], "b1",
        "{note}"
    );
    assert_eq!(
        turnstile.passed(),
        passed,
        "notified while the sync is held"
    );
    turnstile.permit();
    let note = within("the durable append's notification", f.recv()).await;
    assert_eq!(
        note["params"]["entry"]["message"]["content"], "d2",
        "{note}"
    );
    turnstile.open();
}

/// A client on a socket pair (its readiness comes through the runtime's I/O driver,
/// as the owner's Unix socket's does).
fn socket_client(owner: &Arc<Owner>) -> Client {
    let (client, server) = tokio::net::UnixStream::pair().expect("a socket pair");
    let owner = owner.clone();
    tokio::spawn(async move {
        let (r, w) = server.into_split();
        owner.serve(r, w).await
    });
    let (r, w) = client.into_split();
    Client::over(r, w)
}

/// Another connection's request is read and answered while a durable append syncs
/// on a worker, over sockets: the worker that polled the I/O driver and found the
/// append runs it and syncs; the idle worker, asleep off the driver, must still
/// learn of the next request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_on_another_socket_is_answered_during_a_sync() {
    let (turnstile, _, owner) = gated_owner();
    let mut a = socket_client(&owner);
    a.initialize().await;
    let sid = a.create().await.session_id;
    let mut b = socket_client(&owner);
    b.initialize().await;
    b.open(&sid).await;
    turnstile.close();
    let held = a
        .send::<call::AppendMessage>(append(&sid, "held", None))
        .await;
    let passed = sync_held(&turnstile, "the held sync").await;
    let leaf = within(
        "another connection's read during the held sync",
        b.call::<call::ReadLeafEntry>(ReadParams {
            session_id: sid.clone(),
            limits: None,
        }),
    )
    .await
    .expect("a read");
    assert!(leaf.entry.is_some(), "the held append is written");
    assert_eq!(
        turnstile.passed(),
        passed,
        "answered while the sync is held"
    );
    turnstile.permit();
    let answer = within("the held append", a.recv()).await;
    assert_eq!(id_of(&answer), json(&held), "{answer}");
    turnstile.open();
}

/// The syncs of different sessions that meet run as one file-system sync, and what
/// it acknowledged survives power loss. Five sessions, a client each: A's append is
/// synced on its connection's worker and held; B's flusher hands its sync to the
/// owner's shared syncs, whose round runs it alone (its journal's own sync), held
/// too; C's, D's and E's are handed in meanwhile, and the next round runs them with
/// one file-system sync (called twice) and none of their journals' own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syncs_of_different_sessions_that_meet_share_one_file_system_sync() {
    let turnstile = Arc::new(Turnstile::default());
    let fs = SimFs::new();
    fs.offer_file_system(0, None);
    let owner = Owner::new(turnstile_store(&turnstile, &fs), OwnerOptions::default());
    let mut clients = Vec::new();
    let mut sessions = Vec::new();
    for _ in 0..5 {
        let mut c = Client::ready(&owner).await;
        sessions.push(c.create().await);
        clients.push(c);
    }
    turnstile.close();
    let mut sent = Vec::new();
    async fn send(c: &mut Client, s: &SessionOpened, i: usize) -> RequestId {
        let text = format!("shared-{i}");
        c.send::<call::AppendMessage>(append(&s.session_id, &text, None))
            .await
    }
    sent.push(send(&mut clients[0], &sessions[0], 0).await);
    sync_held(&turnstile, "A's sync, on its worker").await;
    sent.push(send(&mut clients[1], &sessions[1], 1).await);
    let t = turnstile.clone();
    within(
        "B's sync, in a round of its own",
        tokio::task::spawn_blocking(move || t.wait_waiting(2)),
    )
    .await
    .expect("waited");
    for i in 2..5 {
        sent.push(send(&mut clients[i], &sessions[i], i).await);
    }
    within("C, D and E handed in", async {
        while owner.syncs_waiting() < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let before = fs.stats();
    turnstile.open();
    for (c, id) in clients.iter_mut().zip(&sent) {
        let answer = within("an append", c.recv()).await;
        assert_eq!(id_of(&answer), json(id), "{answer}");
        assert!(answer["result"]["entryId"].is_string(), "{answer}");
    }
    assert_eq!(
        fs.stats().fs_syncs,
        before.fs_syncs + 2,
        "one file-system sync (called twice) for C, D and E"
    );
    assert_eq!(owner.syncs_waiting(), 0);
    fs.crash(11);
    for (i, s) in sessions.iter().enumerate() {
        let back = texts_in(&turnstile_store(&turnstile, &fs), &s.session_file);
        assert_eq!(back, [format!("shared-{i}")], "session {i}");
    }
}
