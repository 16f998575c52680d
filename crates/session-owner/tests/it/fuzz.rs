//! A malformed-input campaign on one connection (issue 17 point 7): seeded mutations
//! of valid requests — bytes flipped, cut, spliced, duplicated keys and ids, odd id
//! types, random bytes — each followed by a sentinel request whose answer proves the
//! connection still reads in order. Every few lines a second client appends and reads
//! its session: it is never disturbed, and at the end every entry it was told was
//! appended is on its branch. `OWNER_FUZZ_LINES` sets the campaign's length (400 by
//! default; `docs/reliability.md` records a longer run).

use std::time::Duration;

use serde_json::{Value, json};
use session_owner::{Owner, OwnerOptions};
use session_protocol::*;
use session_testkit::sim::SimRng;

use crate::support::*;

/// Valid requests the mutations start from (`SID` is the fuzzed connection's session).
const TEMPLATES: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":1,"method":"session/appendMessage","params":{"sessionId":"SID","message":{"role":"user","content":"hello","timestamp":1}}}"#,
    r#"{"jsonrpc":"2.0","id":"two","method":"session/readBranch","params":{"sessionId":"SID"}}"#,
    r#"{"jsonrpc":"2.0","id":3,"method":"session/buildSessionContext","params":{"sessionId":"SID","limits":{"maxSourceEntries":4}}}"#,
    r#"{"jsonrpc":"2.0","id":4,"method":"session/appendEntry","params":{"sessionId":"SID","entry":{"type":"custom","customType":"x","data":{"a":[1,2,{"b":null}]}}}}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"session/readTree","params":{"sessionId":"SID"}}"#,
    r#"{"jsonrpc":"2.0","id":6,"method":"store/list","params":{"cwd":"/w","progress":true}}"#,
    r#"{"jsonrpc":"2.0","id":7,"method":"session/branch","params":{"sessionId":"SID","entryId":"nope"}}"#,
    r#"{"jsonrpc":"2.0","method":"initialized"}"#,
];

fn mutate(rng: &mut SimRng, template: &str) -> Vec<u8> {
    let mut b = template.as_bytes().to_vec();
    match rng.below(9) {
        // Flip bytes.
        0 => {
            for _ in 0..=rng.below(4) {
                let i = rng.below(b.len() as u64) as usize;
                b[i] ^= 1 << rng.below(8);
            }
        }
        // Cut it short.
        1 => b.truncate(rng.below(b.len() as u64) as usize),
        // Splice random bytes in (invalid UTF-8 included).
        2 => {
            let at = rng.below(b.len() as u64) as usize;
            let mut junk = vec![0u8; 1 + rng.below(16) as usize];
            rng.fill(&mut junk);
            junk.retain(|c| *c != b'\n');
            b.splice(at..at, junk);
        }
        // A duplicated key: the last one wins in serde, never a crash.
        3 => {
            let s = String::from_utf8(b).expect("templates are UTF-8");
            b = s
                .replacen("\"jsonrpc\":\"2.0\",", "\"jsonrpc\":\"2.0\",\"id\":99,", 1)
                .into_bytes();
        }
        // An id of another type.
        4 => {
            let ids = ["null", "[1]", "{\"a\":1}", "1.5", "true", "-0", "1e400"];
            let id = ids[rng.below(ids.len() as u64) as usize];
            let s = String::from_utf8(b).expect("templates are UTF-8");
            b = s
                .replacen("\"id\":", &format!("\"id\":{id},\"x\":"), 1)
                .into_bytes();
        }
        // Nested deeper than the limit.
        5 => {
            let depth = 60 + rng.below(40) as usize;
            b = format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes();
        }
        // Pure garbage.
        6 => {
            b = vec![0u8; 1 + rng.below(64) as usize];
            rng.fill(&mut b);
            b.retain(|c| *c != b'\n');
        }
        // A valid line as it is (duplicate ids across lines included).
        _ => {}
    }
    b.push(b'\n');
    b
}

/// Reads answers until the sentinel's and returns its result; panics if the owner
/// does not answer in time. Answers to earlier fuzzed requests may come before or
/// after it (writes are answered when their batch is performed, reads beside them),
/// so the other answers are skipped, here and by later sentinels.
async fn until_sentinel(c: &mut Client, sentinel: &Value) -> Value {
    loop {
        let a = tokio::time::timeout(Duration::from_secs(10), c.recv())
            .await
            .expect("the owner answers within 10 s");
        if &a["id"] == sentinel {
            return a
                .get("result")
                .unwrap_or_else(|| panic!("the sentinel succeeds: {a}"))
                .clone();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_input_campaign_never_breaks_the_owner_or_other_clients() {
    let lines: u64 = std::env::var("OWNER_FUZZ_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let home = tempfile::tempdir().expect("tempdir");
    let limits = LineLimits {
        max_line_bytes: 64 << 10,
        max_depth: 64,
    };
    let owner = Owner::new(
        store(home.path()),
        OwnerOptions::default().with_line_limits(limits),
    );
    let mut bad = Client::connect(&owner);
    let mut good = Client::connect(&owner);
    bad.initialize().await;
    good.initialize().await;
    let fuzzed = bad.create().await.session_id;
    let mine = good.create().await.session_id;
    let mut rng = SimRng::new(0x0f0f_2026_1201);
    let mut acknowledged = Vec::new();
    for k in 0..lines {
        let template =
            TEMPLATES[rng.below(TEMPLATES.len() as u64) as usize].replace("SID", &fuzzed);
        bad.send_raw(&mutate(&mut rng, &template)).await;
        let sentinel = json!(format!("sentinel-{k}"));
        let ping = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{sentinel},\"method\":\"session/getMetadata\",\"params\":{{\"sessionId\":\"{fuzzed}\"}}}}\n"
        );
        bad.send_raw(ping.as_bytes()).await;
        until_sentinel(&mut bad, &sentinel).await;
        if k % 8 == 0 {
            let appended = good
                .call::<call::AppendMessage>(
                    serde_json::from_value(json!({
                        "sessionId": mine,
                        "message": {"role": "user", "content": format!("turn {k}"), "timestamp": k},
                    }))
                    .expect("params"),
                )
                .await
                .expect("the other client's append succeeds");
            acknowledged.push(appended.entry_id);
        }
    }
    let branch = good.branch(&mine).await;
    let ids: Vec<String> = branch
        .entries
        .iter()
        .filter_map(|e| e.id().map(str::to_owned))
        .collect();
    let acknowledged: Vec<String> = acknowledged
        .iter()
        .map(|id| id.as_str().to_owned())
        .collect();
    assert_eq!(
        ids, acknowledged,
        "every acknowledged append, once, in order"
    );
    // The fuzzed connection still works and the fuzzed session still reads whole
    // (asked with sentinels: a late answer to a fuzzed request may still be on its way).
    let ask = |id: &str, method: &str| {
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"{method}\",\"params\":{{\"sessionId\":\"{fuzzed}\"}}}}\n"
        )
    };
    bad.send_raw(ask("final-metadata", "session/getMetadata").as_bytes())
        .await;
    let metadata = until_sentinel(&mut bad, &json!("final-metadata")).await;
    assert_eq!(metadata["sessionId"], json!(fuzzed), "{metadata}");
    bad.send_raw(ask("final-branch", "session/readBranch").as_bytes())
        .await;
    let branch = until_sentinel(&mut bad, &json!("final-branch")).await;
    assert!(branch["entries"].is_array(), "{branch}");
}
