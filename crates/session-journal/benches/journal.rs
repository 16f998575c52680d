//! Journal benchmarks: buffered append rate, durable append latency next to a bare
//! `write` + `fdatasync` of the same bytes, and scan-and-verify throughput.
//!
//! `cargo bench -p session-journal --bench journal`. The durable-latency comparison
//! prints median and p99 of both paths, measured interleaved in the same run; the
//! other figures come from criterion. Files live under `$JOURNAL_BENCH_DIR` (default:
//! the system temp dir) — point it at the disk you care about.
#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::fs::OpenOptions as FsOpen;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use session_journal::{
    CreateOptions, Durability, FrameKind, JournalId, NewFrame, Reader, ReaderOptions, Writer,
};

fn bench_dir() -> tempfile::TempDir {
    match std::env::var_os("JOURNAL_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).expect("bench dir"),
        None => tempfile::tempdir().expect("temp dir"),
    }
}

fn new_journal(dir: &Path, name: &str) -> (PathBuf, Writer) {
    let path = dir.join(name);
    let w = Writer::create(&path, JournalId([1; 16]), CreateOptions::default()).expect("create");
    (path, w)
}

fn buffered_append(c: &mut Criterion) {
    let dir = bench_dir();
    let payload = vec![b'x'; 1024];
    let mut g = c.benchmark_group("append");
    g.throughput(Throughput::Elements(1));
    let (_p, mut w) = new_journal(dir.path(), "buffered.jsonl");
    g.bench_function("buffered_1KiB", |b| {
        b.iter(|| {
            w.append(
                FrameKind::FIRST_CALLER,
                black_box(&payload),
                Durability::Buffered,
            )
            .expect("append")
        })
    });
    let batch: Vec<NewFrame<'_>> = (0..64)
        .map(|_| NewFrame::new(FrameKind::FIRST_CALLER, &payload))
        .collect();
    g.throughput(Throughput::Elements(64));
    let (_p, mut w) = new_journal(dir.path(), "batch.jsonl");
    g.bench_function("batch64_buffered_1KiB", |b| {
        b.iter(|| {
            w.append_batch(black_box(&batch), Durability::Buffered)
                .expect("batch")
        })
    });
    g.finish();
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Durable appends and bare write+fdatasync, interleaved so both see the same disk
/// weather; prints median and p99 of each.
fn durable_latency(_c: &mut Criterion) {
    let n: usize = std::env::var("JOURNAL_BENCH_DURABLE_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let dir = bench_dir();
    let payload = vec![b'y'; 1024];
    let (_p, mut w) = new_journal(dir.path(), "durable.jsonl");
    let bare_path = dir.path().join("bare.bin");
    let bare = FsOpen::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&bare_path)
        .expect("bare file");
    // The same number of bytes as one journal frame (64-byte header + 1 KiB payload).
    let frame = vec![b'z'; 64 + 1024];
    let mut bare_off = 0u64;
    let (mut journal, mut plain) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..50 {
        w.append(FrameKind::FIRST_CALLER, &payload, Durability::Durable)
            .expect("warm up");
    }
    // Alternate which goes first: an fsync on ext4 also commits whatever metadata other
    // processes left in the file system's journal, so the first of a pair pays more.
    for i in 0..n {
        for journal_turn in [i % 2 == 0, i % 2 != 0] {
            let t = Instant::now();
            if journal_turn {
                w.append(FrameKind::FIRST_CALLER, &payload, Durability::Durable)
                    .expect("append");
                journal.push(t.elapsed());
            } else {
                bare.write_all_at(&frame, bare_off).expect("write");
                bare.sync_data().expect("fdatasync");
                plain.push(t.elapsed());
                bare_off += frame.len() as u64;
            }
        }
    }
    journal.sort_unstable();
    plain.sort_unstable();
    let (jm, pm) = (percentile(&journal, 0.5), percentile(&plain, 0.5));
    println!(
        "durable append 1 KiB ({n} samples, interleaved): journal median {:?} p99 {:?}; \
         bare write+fdatasync median {:?} p99 {:?}; median ratio {:.3}",
        jm,
        percentile(&journal, 0.99),
        pm,
        percentile(&plain, 0.99),
        jm.as_secs_f64() / pm.as_secs_f64()
    );
}

fn scan_verify(c: &mut Criterion) {
    let dir = bench_dir();
    let mut journals = Vec::new();
    for (name, size, count) in [("1KiB", 1024usize, 64 * 1024), ("16KiB", 16 * 1024, 4096)] {
        let (path, mut w) = new_journal(dir.path(), &format!("scan-{name}.jsonl"));
        let payload = vec![b's'; size];
        let batch: Vec<NewFrame<'_>> = (0..256)
            .map(|_| NewFrame::new(FrameKind::FIRST_CALLER, &payload))
            .collect();
        for _ in 0..count / 256 {
            w.append_batch(&batch, Durability::Buffered).expect("fill");
        }
        let cap = w.close().expect("close");
        journals.push((name, path, cap));
    }
    let mut g = c.benchmark_group("scan_verify");
    for (name, path, cap) in &journals {
        g.throughput(Throughput::Bytes(cap.len.get()));
        g.bench_function(*name, |b| {
            b.iter_batched(
                || Reader::open(path, ReaderOptions::default()).expect("reader"),
                |r| {
                    let mut n = 0u64;
                    for f in r.frames(Some(*cap)) {
                        n += u64::from(f.expect("valid").info.payload_len);
                    }
                    n
                },
                BatchSize::PerIteration,
            )
        });
    }
    // The floor for 1 KiB frames: one keyed BLAKE3 per 1 KiB input, nothing else. A
    // 1 KiB input is a single BLAKE3 chunk, compressed serially (no SIMD across chunks).
    let key = [7u8; 32];
    let one_kib = vec![b's'; 1024];
    g.throughput(Throughput::Bytes(1024 * 1024));
    g.bench_function("blake3_keyed_only_1KiB_x1024", |b| {
        b.iter(|| {
            let mut acc = 0u8;
            for _ in 0..1024 {
                let h = blake3::keyed_hash(&key, black_box(&one_kib));
                acc ^= h.as_bytes()[0];
            }
            acc
        })
    });
    g.finish();
    let mut g = c.benchmark_group("open_recover");
    for (name, path, cap) in &journals {
        g.throughput(Throughput::Bytes(cap.len.get()));
        g.bench_function(*name, |b| {
            b.iter(|| {
                Writer::open(path, session_journal::OpenOptions::default())
                    .expect("open")
                    .1
                    .frames
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = buffered_append, durable_latency, scan_verify
}
criterion_main!(benches);
