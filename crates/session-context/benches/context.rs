//! Context-building benchmarks.
//!
//! `cargo bench -p session-context --bench context`:
//! - `chain/{1k,100k}`: a linear chain of small user messages (no compaction, so the
//!   context holds every entry), resident source; the two must scale linearly.
//! - `generated_100k/{resident,lazy}`: the resume context of the reference-generated
//!   100k session (`$CONTEXT_BENCH_100K`, default `/work/peer/data/big/100k.jsonl`;
//!   skipped when absent). The file is parsed (resident) or indexed by envelope (lazy)
//!   once, outside the timed loop; the timed part is `build_context` from the resume leaf.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use session_context::{ContextOptions, Leaf, ResidentSource, TextSource, build_context};
use session_types::{Entry, EntryBase, EntryId, Record, Timestamp};

fn chain(n: usize) -> Vec<Entry> {
    let template = match Record::parse(
        r#"{"type":"message","id":"t","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"a short prompt","timestamp":1735689600000}}"#,
    ) {
        Ok(Record::Entry(e)) => e,
        other => panic!("template: {other:?}"),
    };
    (0..n)
        .map(|i| {
            let mut e = template.clone();
            *e.base_mut().expect("known entry") = EntryBase::new(
                EntryId::new(format!("{i:08x}")),
                (i > 0).then(|| EntryId::new(format!("{:08x}", i - 1))),
                Timestamp::new("2025-01-01T00:00:00.000Z"),
            );
            e
        })
        .collect()
}

fn linear_chain(c: &mut Criterion) {
    let mut g = c.benchmark_group("chain");
    for (name, n) in [("1k", 1_000), ("100k", 100_000)] {
        let entries = chain(n);
        let source = ResidentSource::new(&entries);
        g.bench_function(name, |b| {
            b.iter(|| {
                let ctx = build_context(
                    &source,
                    black_box(Leaf::Default),
                    &ContextOptions::default(),
                )
                .expect("context");
                assert_eq!(ctx.messages.len(), n);
                ctx
            })
        });
    }
    g.finish();
}

fn generated_100k(c: &mut Criterion) {
    let path = std::env::var("CONTEXT_BENCH_100K")
        .unwrap_or_else(|_| "/work/peer/data/big/100k.jsonl".to_owned());
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipping generated_100k: cannot read {path}");
        return;
    };
    let lines: Vec<&str> = text
        .trim()
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .collect();
    let entries: Vec<Entry> = lines
        .iter()
        .filter_map(|l| match Record::parse(l) {
            Ok(Record::Entry(e)) => Some(e),
            _ => None,
        })
        .collect();
    let resident = ResidentSource::new(&entries);
    let lazy = TextSource::new(lines.iter().copied());
    let mut g = c.benchmark_group("generated_100k");
    g.sample_size(30).measurement_time(Duration::from_secs(10));
    g.bench_function("resident", |b| {
        b.iter(|| {
            build_context(
                &resident,
                black_box(Leaf::Default),
                &ContextOptions::default(),
            )
            .expect("context")
        })
    });
    g.bench_function("lazy", |b| {
        b.iter(|| {
            build_context(&lazy, black_box(Leaf::Default), &ContextOptions::default())
                .expect("context")
        })
    });
    g.finish();
}

// The macro generates an undocumented function.
#[allow(missing_docs)]
mod group {
    use super::*;
    criterion_group!(benches, linear_chain, generated_100k);
}
criterion_main!(group::benches);
