//! Issue 17 §4 with real processes: a parent client (this test, through
//! `session-client`) appends to its session while child agents — `bcs append`
//! processes routed through the running owner — attribute their usage to the
//! parent's assistant message (`child_usage_attributed`, the seed's "daemon
//! bookkeeping"). Every acknowledged entry is stored exactly once, whole, on one
//! chain, in each writer's order.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use session_client::{Client, ClientOptions};
use session_manager::{Layout, Store};

use crate::support::{Bcs, Serving, bin};

/// Bounds every wait: a hang fails the test instead of stalling it.
const DEADLINE: Duration = Duration::from_secs(120);
/// Child processes, and the attributions each appends.
const CHILDREN: usize = 4;
const PER_CHILD: usize = 40;
/// The parent's own appends.
const PARENT: usize = 80;

fn usage(input: u64, output: u64) -> Value {
    json!({"input":input,"output":output,"cacheRead":0,"cacheWrite":0,
           "totalTokens":input + output,
           "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}})
}

/// Child `k`'s attribution number `i`: its usage names it, and a padding of a few
/// KiB (its own letter, repeated) makes a torn or interleaved entry visible.
fn attribution(target: &str, k: usize, i: usize) -> Value {
    let mark = (k * 1000 + i) as u64;
    json!({
        "type": "child_usage_attributed",
        "targetId": target,
        "childUsage": usage(mark, 1),
        "aggregateUsage": usage(100 + mark, 2),
        "child": k,
        "seq": i,
        "pad": pad(k, i),
    })
}

fn pad(k: usize, i: usize) -> String {
    let letter = char::from(b'a' + k as u8);
    std::iter::repeat_n(letter, 2048 + i).collect()
}

/// A child agent: `bcs append SESSION` fed attribution lines; the ids it prints
/// (one per acknowledged entry) arrive on `ids`.
struct ChildAgent {
    process: Child,
    stdin: Option<ChildStdin>,
    ids: mpsc::Receiver<String>,
    printed: Vec<String>,
}

impl ChildAgent {
    fn spawn(bcs: &Bcs, sid: &str) -> ChildAgent {
        let mut process = bcs
            .cmd(&["append", sid])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn bcs append");
        let stdin = process.stdin.take();
        let out = BufReader::new(process.stdout.take().expect("stdout"));
        let (tx, ids) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        ChildAgent {
            process,
            stdin,
            ids,
            printed: Vec::new(),
        }
    }

    fn feed(&mut self, lines: impl Iterator<Item = Value>) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        for l in lines {
            writeln!(stdin, "{l}").expect("feed the child");
        }
        stdin.flush().expect("flush");
    }

    /// Waits until it has printed `n` ids in all.
    fn wait_for(&mut self, n: usize) {
        while self.printed.len() < n {
            let id = self
                .ids
                .recv_timeout(DEADLINE)
                .expect("the child acknowledges its appends");
            self.printed.push(id);
        }
    }

    /// Ends its input and waits for it to exit; returns every id it printed.
    fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        self.wait_for(PER_CHILD);
        let status = self.process.wait().expect("wait");
        assert!(status.success(), "the child exits 0: {status}");
        std::mem::take(&mut self.printed)
    }
}

impl Drop for ChildAgent {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

#[test]
fn a_parent_appends_while_child_processes_attribute_usage_to_it_through_the_owner() {
    let bcs = Bcs::new();
    let owner = Serving::start(&bcs);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let parent = rt
        .block_on(Client::connect_with(
            bcs.home(),
            ClientOptions::default().with_bcs(bin()),
        ))
        .expect("connect");
    let s = rt.block_on(parent.create("/w")).expect("create");
    let sid = s.session_id.clone();
    let reply: session_types::AgentMessage = serde_json::from_value(json!({
        "role":"assistant","content":[{"type":"text","text":"spawning children"}],
        "api":"messages","provider":"p","model":"m","usage":usage(10, 10),
        "stopReason":"stop","timestamp":1
    }))
    .expect("a message");
    let target = rt
        .block_on(parent.append_message(&sid, reply, None))
        .expect("append")
        .as_str()
        .to_owned();

    // Each child appends its first attribution and is acknowledged: four processes
    // hold the session through the owner, mid-stream (their input stays open).
    let mut children: Vec<ChildAgent> = (0..CHILDREN)
        .map(|k| {
            let mut c = ChildAgent::spawn(&bcs, &sid);
            c.feed(std::iter::once(attribution(&target, k, 0)));
            c
        })
        .collect();
    for c in &mut children {
        c.wait_for(1);
    }
    let parent_text = |i: usize| format!("parent {i}");
    let user = |i: usize| -> session_types::AgentMessage {
        serde_json::from_value(json!({"role":"user","content":parent_text(i),"timestamp":2}))
            .expect("a message")
    };
    let mut parent_ids = Vec::new();
    // The parent's first half, then everyone at once: the children's other
    // attributions while the parent appends its second half.
    for i in 0..PARENT / 2 {
        let id = rt
            .block_on(parent.append_message(&sid, user(i), None))
            .expect("the parent appends");
        parent_ids.push(id.as_str().to_owned());
    }
    for (k, c) in children.iter_mut().enumerate() {
        c.feed((1..PER_CHILD).map(|i| attribution(&target, k, i)));
    }
    for i in PARENT / 2..PARENT {
        let id = rt
            .block_on(parent.append_message(&sid, user(i), None))
            .expect("the parent appends");
        parent_ids.push(id.as_str().to_owned());
    }
    let child_ids: Vec<Vec<String>> = children.into_iter().map(ChildAgent::finish).collect();
    let context = rt
        .block_on(parent.build_session_context(&sid))
        .expect("the context");
    rt.block_on(parent.shutdown()).expect("shutdown");
    drop(owner);

    // Who acknowledged what: writer (None = the parent, Some(k) = child k) and its
    // position in that writer's order.
    let mut acked: HashMap<String, (Option<usize>, usize)> = HashMap::new();
    acked.insert(target.clone(), (None, usize::MAX));
    for (i, id) in parent_ids.iter().enumerate() {
        assert!(acked.insert(id.clone(), (None, i)).is_none(), "{id} twice");
    }
    for (k, ids) in child_ids.iter().enumerate() {
        assert_eq!(ids.len(), PER_CHILD);
        for (i, id) in ids.iter().enumerate() {
            assert!(
                acked.insert(id.clone(), (Some(k), i)).is_none(),
                "{id} twice"
            );
        }
    }

    // The journal, read back through the library once the owner is gone.
    let store = Store::new(Layout::with_root(bcs.home()).expect("absolute home"));
    let view = store
        .open_read_only(std::path::Path::new(&s.session_file))
        .expect("read back");
    let entries = view.get_entries();
    assert_eq!(
        entries.len(),
        1 + PARENT + CHILDREN * PER_CHILD,
        "every acknowledged entry, nothing else"
    );
    let mut next: BTreeMap<Option<usize>, usize> = BTreeMap::new();
    let mut parent_of_next: Option<String> = None;
    let mut seen_before_parent = vec![false; CHILDREN];
    for (n, e) in entries.iter().enumerate() {
        let id = e.id().expect("an id").to_owned();
        let (writer, i) = acked
            .remove(&id)
            .unwrap_or_else(|| panic!("entry {n} ({id}) was acknowledged, once"));
        // One chain: each entry's parent is the one before it.
        assert_eq!(
            e.parent_id().map(str::to_owned),
            parent_of_next,
            "entry {n}"
        );
        parent_of_next = Some(id.clone());
        let v = serde_json::to_value(e).expect("json");
        match writer {
            None if i == usize::MAX => assert_eq!(n, 0, "the target comes first"),
            None => {
                assert_eq!(v["message"]["content"], parent_text(i), "entry {n} whole");
                let expected = next.entry(None).or_insert(0);
                assert_eq!(i, *expected, "the parent's order, entry {n}");
                *expected += 1;
            }
            Some(k) => {
                // Whole: every field as the child sent it, the padding intact.
                let mut sent = attribution(&target, k, i);
                for key in ["id", "parentId", "timestamp"] {
                    sent[key] = v[key].clone();
                }
                assert_eq!(v, sent, "entry {n}: child {k}'s attribution {i}, whole");
                let expected = next.entry(Some(k)).or_insert(0);
                assert_eq!(i, *expected, "child {k}'s order, entry {n}");
                *expected += 1;
                if i == 0 && next.get(&None).copied().unwrap_or(0) == 0 {
                    seen_before_parent[k] = true;
                }
            }
        }
    }
    assert!(acked.is_empty(), "not stored: {acked:?}");
    // The writers did overlap: each child's first attribution precedes the parent's
    // appends and its others follow the parent's first half.
    assert_eq!(seen_before_parent, vec![true; CHILDREN]);

    // And the attribution means what the seed says: the parent's assistant message
    // carries the aggregate of the attribution appended last.
    let last = entries
        .iter()
        .rev()
        .find(|e| serde_json::to_value(e).expect("json")["type"] == "child_usage_attributed")
        .expect("attributions");
    let aggregate = serde_json::to_value(last).expect("json")["aggregateUsage"].clone();
    let context = serde_json::to_value(&context).expect("json");
    let assistant = context["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "assistant")
        .expect("the parent's reply");
    assert_eq!(assistant["usage"], aggregate);
}
