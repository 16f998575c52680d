//! Criterion benchmarks of session-manager on generated sessions: resume (open +
//! `build_session_context`) and `list_all`. The figures on the reference's data
//! (1k/10k/100k, 2,000 sessions) come from `examples/manager_bench.rs`; both are
//! recorded in `docs/benchmarks.md`.

use criterion::{Criterion, criterion_main};
use serde_json::json;
use session_manager::{Durability, Layout, Sources, Store};
use session_types::AgentMessage;

fn message(role: &str, i: usize) -> AgentMessage {
    let v = if role == "user" {
        json!({"role":"user","content":format!("question {i}"),"timestamp":i})
    } else {
        json!({"role":"assistant","content":[{"type":"text","text":format!("answer {i}")}],
               "api":"messages","provider":"anthropic","model":"claude",
               "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,
                        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
               "stopReason":"stop","timestamp":i})
    };
    serde_json::from_value(v).expect("valid message")
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::new(Layout::with_root(dir.path()).expect("absolute root"))
        .with_sources(Sources::deterministic(1_735_689_600_000, 1));
    let mut s = store.create("/bench").expect("create");
    s.set_durability(Durability::Buffered);
    for i in 0..1000 {
        s.append_message(message(if i % 2 == 0 { "user" } else { "assistant" }, i))
            .expect("append");
    }
    let path = s.session_file().expect("persisted").to_path_buf();
    s.close().expect("close");
    for i in 0..199 {
        let mut t = store.create(&format!("/p{}", i % 10)).expect("create");
        t.append_message(message("user", i)).expect("append");
    }
    store.list_all(&mut ()).expect("warm the catalog");

    c.bench_function(
        "resume 1000 generated entries (open + build_session_context)",
        |b| {
            b.iter(|| {
                let s = store.open(&path).expect("open");
                s.build_session_context().expect("context").messages.len()
            })
        },
    );
    c.bench_function("list_all 200 sessions (fresh catalog)", |b| {
        b.iter(|| store.list_all(&mut ()).expect("list").len())
    });
}

mod group {
    #![allow(missing_docs)]
    criterion::criterion_group! {
        name = benches;
        config = criterion::Criterion::default().sample_size(20);
        targets = super::bench
    }
}
use group::benches;
criterion_main!(benches);
