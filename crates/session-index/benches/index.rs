//! Benchmarks of session-index: build rate, fresh open, catch-up, tree of a 100k
//! session, listing 2,000 and 10,000 sessions with a fresh catalog.
//!
//! Data: `/work/peer/data` (the reference's generated sessions) if present, converted
//! to native journals once under `$CARGO_TARGET_DIR/session-index-bench/`; otherwise
//! synthetic sessions. Results are recorded in `docs/benchmarks.md`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use criterion::{Criterion, criterion_main};
use session_index::{Index, ListOptions, OpenIndexOptions, list_all, sidecar_path};
use session_journal::vfs::StdVfs;
use session_testkit::legacy;

fn work() -> PathBuf {
    let base =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| PathBuf::from("target"), PathBuf::from);
    base.join("session-index-bench")
}

fn peer() -> PathBuf {
    PathBuf::from(std::env::var_os("PEER_DATA").unwrap_or_else(|| "/work/peer/data".into()))
}

fn native(src: &Path, dst: &Path) {
    if dst.exists() {
        return;
    }
    std::fs::create_dir_all(dst.parent().expect("has a parent")).expect("mkdir");
    let text = std::fs::read_to_string(src).expect("read source");
    legacy::write_journal_from_jsonl(
        dst,
        legacy::fixture_journal_id(&dst.to_string_lossy()),
        &text,
        Arc::new(StdVfs),
    )
    .expect("write journal");
}

fn opts() -> OpenIndexOptions {
    OpenIndexOptions::default()
}

fn sessions_tree(copies: usize) -> PathBuf {
    let root = work().join(format!("sessions-{copies}x"));
    let marker = root.join(".done");
    if marker.exists() {
        return root;
    }
    let src = peer().join("agent/sessions");
    for d in std::fs::read_dir(&src).expect("peer sessions") {
        let d = d.expect("entry").path();
        for f in std::fs::read_dir(&d).expect("dir") {
            let f = f.expect("entry").path();
            for c in 0..copies {
                let name = format!("{c}-{}", f.file_name().expect("name").to_string_lossy());
                native(&f, &root.join(d.file_name().expect("dir name")).join(name));
            }
        }
    }
    std::fs::write(marker, b"").expect("marker");
    root
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("index");
    g.sample_size(10);
    for size in ["10k", "100k"] {
        let j = work().join(format!("big/{size}.jsonl"));
        native(&peer().join(format!("big/{size}.jsonl")), &j);
        g.bench_function(format!("rebuild {size}"), |b| {
            b.iter(|| {
                let _ = std::fs::remove_file(sidecar_path(&j));
                black_box(Index::open_or_rebuild(&j, opts()).expect("open"))
            })
        });
        Index::open_or_rebuild(&j, opts()).expect("open");
        g.bench_function(format!("open fresh {size}"), |b| {
            b.iter(|| black_box(Index::open_or_rebuild(&j, opts()).expect("open")))
        });
        let (ix, _) = Index::open_or_rebuild(&j, opts()).expect("open");
        g.bench_function(format!("tree {size}"), |b| {
            b.iter(|| black_box(ix.tree().preorder().len()))
        });
        g.bench_function(format!("path to root from leaf {size}"), |b| {
            b.iter(|| black_box(ix.path_to_root(ix.leaf().expect("leaf")).path.len()))
        });
    }
    // Catch-up: the 10k journal's index saved at 90% of the entries.
    let full = work().join("big/10k.jsonl");
    let src = std::fs::read_to_string(peer().join("big/10k.jsonl")).expect("10k");
    let recs = legacy::legacy_records(&src);
    let cut = recs.len() * 9 / 10;
    let partial = work().join("catchup/part.jsonl");
    let _ = std::fs::remove_dir_all(work().join("catchup"));
    std::fs::create_dir_all(work().join("catchup")).expect("mkdir");
    let id = legacy::fixture_journal_id("catchup");
    legacy::write_journal(&partial, id, &recs[..cut], Arc::new(StdVfs)).expect("write");
    Index::open_or_rebuild(&partial, opts()).expect("open");
    let side = std::fs::read(sidecar_path(&partial)).expect("sidecar");
    let whole = work().join("catchup/whole.jsonl");
    legacy::write_journal(&whole, id, &recs, Arc::new(StdVfs)).expect("write");
    let _ = full;
    g.bench_function("catch-up 10% of 10k", |b| {
        b.iter(|| {
            std::fs::write(sidecar_path(&whole), &side).expect("restore sidecar");
            black_box(
                Index::open_or_rebuild(
                    &whole,
                    OpenIndexOptions {
                        save: false,
                        ..opts()
                    },
                )
                .expect("open"),
            )
        })
    });
    for copies in [1usize, 5] {
        let root = sessions_tree(copies);
        list_all(&root, &ListOptions::default()).expect("list");
        g.bench_function(
            format!("list {} sessions, fresh catalog", 2000 * copies),
            |b| {
                b.iter(|| {
                    black_box(
                        list_all(&root, &ListOptions::default())
                            .expect("list")
                            .0
                            .len(),
                    )
                })
            },
        );
    }
    g.finish();
}

mod group {
    #![allow(missing_docs)]
    criterion::criterion_group!(benches, super::bench);
}
use group::benches;
criterion_main!(benches);
