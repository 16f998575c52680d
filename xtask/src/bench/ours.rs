//! Our side: each measurement is a named function in [`MEASUREMENTS`], run in order
//! by [`measure`]; each records its samples under the keys the cases read
//! (`super::cases`) and may add a note to the report.
//!
//! Keys recorded: `open/`, `context/`, `resume/`, `rss/` and `tree/{size}`;
//! `resume-open/` and `first-append/{size}` (µs); `tree-resident/100k`; `append/{durable,bare-sync,buffered,buffered-cpu,
//! buffered-save,floor,floor-cpu,serialize,serialize-serde,buffered-100k,bare-write,batch}` (µs per entry; `append/floor-ratio{,-cpu}` ratios); `list/{2000,10000}` (in-process)
//! and `cold-list/{2000,10000,100000}` (whole process `bcs list --all --json`),
//! `cold-list-cpu/{2000,10000}`, `cold-list-rss/100000` (MiB); `import/100k`
//! and `import/bytes`; `cold/{1k,100k,1m}`, `cold/start` (`bcs --version`) and `cold-reference/1k`;
//! `resume-bytes/{size}` (MiB) and `resume-bytes-excess/1m` (64 KiB units). The resume rows also
//! read the 1M-entry session (`resume/1m`, `rss/1m`, …) when it is prepared. Times
//! are in ms unless the key says otherwise.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use session_index::kinds;
use session_journal::{CreateOptions, Durability, JournalId, NewFrame, Writer};
use session_manager::{Layout, Store};
use session_types::{AgentMessage, Entry, Record};

mod owner;

use super::data::{Data, Native};
use super::report::median;
use super::{Options, Samples, node_ok};

/// What every measurement reads, and where it records.
pub(crate) struct Bench<'a> {
    root: &'a Path,
    data: &'a Data,
    native: &'a Native,
    opts: &'a Options,
    /// The real messages of `1k.jsonl`: the append payloads (cloned before timing).
    payloads: Vec<AgentMessage>,
    pub(crate) samples: Samples,
    pub(crate) notes: Vec<String>,
}

type Measure = fn(&mut Bench<'_>) -> Result<()>;

/// Our measurements, in the order they run.
const MEASUREMENTS: &[(&str, Measure)] = &[
    ("resume", resume),
    ("bytes read by resume", resume_bytes),
    ("first append after a resume", first_append),
    ("peak RSS of resume", peak_rss),
    ("durable append", append_durable),
    ("buffered append", append_buffered),
    ("buffered append: serialization", append_serialization),
    ("buffered append to the 100k session", append_buffered_100k),
    ("bare write", bare_write),
    ("batch append", append_batch),
    ("tree", tree),
    ("list_all", list_all),
    ("bcs list --all --json", cold_list),
    ("bcs list --all --json of 100,000 sessions", cold_list_100k),
    ("import", import),
    ("cold bcs context", cold_bcs),
    ("cold reference context", cold_reference),
    ("through the owner", owner::owner),
];

/// Runs every measurement; returns the samples and the notes.
pub(crate) fn measure(
    root: &Path,
    data: &Data,
    native: &Native,
    opts: &Options,
) -> Result<(Samples, Vec<String>)> {
    let mut bench = Bench {
        root,
        data,
        native,
        opts,
        payloads: payload_messages(&data.big.join("1k.jsonl"))?,
        samples: Samples::default(),
        notes: Vec::new(),
    };
    for (name, measure) in MEASUREMENTS {
        if !opts.only.is_empty() && !opts.only.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        measure(&mut bench).with_context(|| format!("measuring {name}"))?;
    }
    Ok((bench.samples, bench.notes))
}

impl Bench<'_> {
    fn store(&self) -> Store {
        Store::new(Layout::with_root(&self.native.big_root).expect("absolute root"))
    }

    /// `n` append payloads, cycling through the real messages.
    fn msgs(&self, n: usize) -> Vec<AgentMessage> {
        (0..n)
            .map(|i| self.payloads[i % self.payloads.len()].clone())
            .collect()
    }

    fn tmp(&self, name: &str) -> PathBuf {
        self.data.dir.join(name)
    }

    fn median(&self, key: &str) -> f64 {
        self.samples.median(key).unwrap_or(0.0)
    }
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Milliseconds of `op` in each of `reps` runs after one warm-up. `setup` runs
/// untimed before each run; what `op` returns is dropped after the clock stops.
fn timed<S, T>(
    reps: usize,
    mut setup: impl FnMut() -> Result<S>,
    mut op: impl FnMut(S) -> Result<T>,
) -> Result<Vec<f64>> {
    let mut samples = Vec::new();
    for i in 0..=reps {
        let s = setup()?;
        let t = Instant::now();
        let out = op(s)?;
        let dt = ms_since(t);
        std::hint::black_box(&out);
        drop(out);
        if i > 0 {
            samples.push(dt);
        }
    }
    Ok(samples)
}

// ----- resume -----

/// The measurements that read the 1M-entry session (`data::huge`): it is prepared
/// (2.2 GB, imported once) only when one of them runs.
const HUGE_MEASUREMENTS: [&str; 4] = [
    "resume",
    "bytes read by resume",
    "peak RSS of resume",
    "cold bcs context",
];

/// Whether this run measures one of [`HUGE_MEASUREMENTS`].
pub(crate) fn wants_huge(opts: &Options) -> bool {
    opts.only.is_empty()
        || HUGE_MEASUREMENTS
            .iter()
            .any(|m| opts.only.iter().any(|o| m.contains(o.as_str())))
}

/// The sessions the resume rows read: (size, journal, store root), the 1M one last
/// when prepared.
fn resume_sessions(b: &Bench<'_>) -> Vec<(String, PathBuf, PathBuf)> {
    let big = b
        .native
        .journals
        .iter()
        .map(|(size, journal)| (size.clone(), journal.clone(), b.native.big_root.clone()));
    let huge = b
        .native
        .huge
        .iter()
        .map(|(root, journal)| (super::data::HUGE.to_owned(), journal.clone(), root.clone()));
    big.chain(huge).collect()
}

/// `Store::open` (lock, recovery check, index sidecar) + `build_session_context`, and
/// where the open goes.
fn resume(b: &mut Bench<'_>) -> Result<()> {
    let reps = b.opts.reps;
    for (size, journal, home) in resume_sessions(b) {
        let store = Store::new(Layout::with_root(&home).expect("absolute root"));
        let journal = &journal;
        let (mut open, mut ctx, mut ser) = (Vec::new(), Vec::new(), Vec::new());
        let mut json_len = 0;
        for i in 0..=reps {
            let t0 = Instant::now();
            let s = store.open(journal)?;
            let t1 = Instant::now();
            let c = s.build_session_context()?;
            let t2 = Instant::now();
            // What `bcs context --json` does with it (outside the resume figure).
            let text = serde_json::to_vec(&c.to_reference_json())?;
            let t3 = Instant::now();
            json_len = text.len();
            if i > 0 {
                open.push((t1 - t0).as_secs_f64() * 1e3);
                ctx.push((t2 - t1).as_secs_f64() * 1e3);
                ser.push((t3 - t2).as_secs_f64() * 1e3);
            }
            drop(text);
            drop(c);
            drop(s);
        }
        let note = format!(
            "- resume/{size}: the context as `bcs context --json` prints it: `to_reference_json` + `serde_json::to_vec` {:.2} ms ({:.0} KB)",
            median(&ser).unwrap_or(0.0),
            json_len as f64 / 1e3
        );
        eprintln!("ours: {note}");
        b.notes.push(note);
        eprintln!(
            "ours: resume/{size} open {:.3} ms + context {:.3} ms",
            median(&open).unwrap_or(0.0),
            median(&ctx).unwrap_or(0.0)
        );
        let total = open.iter().zip(&ctx).map(|(a, b)| a + b).collect();
        b.samples.put(format!("open/{size}"), open);
        b.samples.put(format!("context/{size}"), ctx);
        b.samples.put(format!("resume/{size}"), total);
        let note = resume_breakdown(journal, reps, b.median(&format!("context/{size}")), &size)?;
        eprintln!("ours: {note}");
        b.notes.push(note);
    }
    Ok(())
}

/// Bytes read (every file: journal, sidecar, lock) by `Store::open` + the context,
/// through a counting file system: `resume-bytes/{size}` in MiB, and
/// `resume-bytes-excess/1m`, what the 1M session reads beyond the 1k one in units of
/// 64 KiB (issue 19: at most one).
fn resume_bytes(b: &mut Bench<'_>) -> Result<()> {
    let mut read = std::collections::BTreeMap::new();
    for (size, journal, home) in resume_sessions(b) {
        let counting = session_testkit::CountingVfs::new(Arc::new(session_journal::vfs::StdVfs));
        let store = Store::new(Layout::with_root(&home).expect("absolute root"))
            .with_vfs(Arc::new(counting.clone()));
        let s = store.open(&journal)?;
        let c = s.build_session_context()?;
        drop(c);
        drop(s);
        let bytes = counting.bytes_read_matching("");
        eprintln!("ours: resume/{size} read {bytes} bytes");
        b.samples.put(
            format!("resume-bytes/{size}"),
            vec![bytes as f64 / 1048576.0],
        );
        read.insert(size, bytes);
    }
    if let (Some(small), Some(huge)) = (read.get("1k"), read.get(super::data::HUGE)) {
        let excess = *huge as f64 - *small as f64;
        b.samples.put(
            format!("resume-bytes-excess/{}", super::data::HUGE),
            vec![excess / 65536.0],
        );
    }
    Ok(())
}

/// `Store::open` of a copy of each session (journal and fresh sidecar, copied and
/// synced untimed, so no writeback of the copy lands in the timing) and its first
/// append (buffered: the append's own work, not a sync): the first append after a
/// resume checks its new id against every id of the session. Samples
/// `first-append/{size}` (µs) and `resume-open/{size}` (ms); a note. (This thread's
/// CPU time from `schedstat` reads 0 at this scale: wall time only.)
fn first_append(b: &mut Bench<'_>) -> Result<()> {
    let tmp = b.tmp("tmp-first-append");
    let msg = b.msgs(1).remove(0);
    for (size, journal) in &b.native.journals {
        let (mut open, mut first) = (Vec::new(), Vec::new());
        for i in 0..=b.opts.reps {
            let copy = copy_session(&tmp, journal)?;
            for f in [copy.clone(), session_index::sidecar_path(&copy)] {
                fs::File::open(&f)?.sync_all()?;
            }
            let st = Store::new(Layout::with_root(&tmp).expect("absolute root"));
            let t = Instant::now();
            let mut s = st.open(&copy)?;
            let dt_open = ms_since(t);
            s.set_durability(Durability::Buffered);
            let m = msg.clone();
            let t = Instant::now();
            s.append_message(m)?;
            let dt_first = ms_since(t) * 1e3;
            drop(s);
            if i > 0 {
                open.push(dt_open);
                first.push(dt_first);
            }
        }
        b.samples.put(format!("resume-open/{size}"), open);
        b.samples.put(format!("first-append/{size}"), first);
        let note = format!(
            "- first append after a resume/{size}: {:.1} µs (buffered; `Store::open` before it {:.2} ms)",
            b.median(&format!("first-append/{size}")),
            b.median(&format!("resume-open/{size}")),
        );
        eprintln!("ours: {note}");
        b.notes.push(note);
    }
    let _ = fs::remove_dir_all(&tmp);
    Ok(())
}

/// Copies `journal` and its index sidecar into `<tmp>/sessions/` (a fresh directory).
fn copy_session(tmp: &Path, journal: &Path) -> Result<PathBuf> {
    let _ = fs::remove_dir_all(tmp);
    let dir = tmp.join("sessions");
    fs::create_dir_all(&dir)?;
    let name = journal.file_name().context("journal file name")?;
    let copy = dir.join(name);
    fs::copy(journal, &copy)?;
    let side = session_index::sidecar_path(journal);
    if side.exists() {
        fs::copy(&side, session_index::sidecar_path(&copy))?;
    }
    Ok(copy)
}

/// The journal's writer open (lock, forward verification of every frame, fdatasync)
/// and the index open (fresh sidecar: O(1) journal check, the whole sidecar read and
/// decoded), each alone: a note for the report.
fn resume_breakdown(journal: &Path, reps: usize, context_ms: f64, size: &str) -> Result<String> {
    let (mut wopen, mut iopen) = (Vec::new(), Vec::new());
    for i in 0..=reps.min(5) {
        let t = Instant::now();
        let w = Writer::open(journal, session_journal::OpenOptions::default())?;
        let dt = ms_since(t);
        drop(w);
        let t = Instant::now();
        let ix = session_index::Index::open_or_rebuild(
            journal,
            session_index::OpenIndexOptions {
                save: false,
                sync_journal: false,
                ..session_index::OpenIndexOptions::default()
            },
        )?;
        let di = ms_since(t);
        drop(ix);
        if i > 0 {
            wopen.push(dt);
            iopen.push(di);
        }
    }
    let side = fs::metadata(session_index::sidecar_path(journal)).map_or(0, |m| m.len());
    Ok(format!(
        "- resume/{size}: `Writer::open` without a witness (verifies every frame) {:.1} ms (journal {:.1} MB), `Index::open_or_rebuild` {:.1} ms (sidecar {:.1} MB), context {:.2} ms",
        median(&wopen).unwrap_or(0.0),
        fs::metadata(journal).map_or(0, |m| m.len()) as f64 / 1e6,
        median(&iopen).unwrap_or(0.0),
        side as f64 / 1e6,
        context_ms,
    ))
}

/// Peak RSS of a resume: a fresh process per size (this binary's `--child-resume`).
fn peak_rss(b: &mut Bench<'_>) -> Result<()> {
    let me = std::env::current_exe()?;
    for (size, journal, home) in resume_sessions(b) {
        let mut peaks = Vec::new();
        for _ in 0..3 {
            let out = Command::new(&me)
                .args(["bench", "--child-resume"])
                .arg(&journal)
                .arg("--home")
                .arg(&home)
                .output()
                .context("running the resume probe")?;
            if !out.status.success() {
                bail!(
                    "resume probe failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            let v: Value = serde_json::from_slice(&out.stdout)?;
            peaks.push(v["vmHwmKiB"].as_f64().unwrap_or(0.0) / 1024.0);
        }
        let key = format!("rss/{size}");
        b.samples.put(&key, peaks);
        eprintln!("ours: peak RSS resume/{size} {:.1} MiB", b.median(&key));
    }
    Ok(())
}

// ----- append -----

const N_FAST: usize = 2000;
const N_DURABLE: usize = 200;

/// Durable appends and the bare baseline, interleaved sample by sample (each durable
/// `append_message`, then a bare write + fdatasync of a frame-sized buffer of the same
/// payload to a second file, the order alternating), so that disk contention from
/// other processes hits both alike. Medians of per-append samples.
fn append_durable(b: &mut Bench<'_>) -> Result<()> {
    let tmp = b.tmp("tmp-append");
    let _ = fs::remove_dir_all(&tmp);
    let st = Store::new(Layout::with_root(&tmp).expect("absolute root"));
    let mut s = st.create("/bench/append")?;
    let mut bare = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(tmp.join("bare.bin"))?;
    let (mut durable_us, mut bare_us) = (Vec::new(), Vec::new());
    for (i, m) in b.msgs(N_DURABLE * 2).into_iter().enumerate() {
        let buf = framed(m.clone());
        let mut durable = || -> Result<f64> {
            let t = Instant::now();
            s.append_message(&m)?;
            Ok(ms_since(t) * 1e3)
        };
        let mut baseline = || -> Result<f64> {
            let t = Instant::now();
            bare.write_all(&buf)?;
            bare.sync_data()?;
            Ok(ms_since(t) * 1e3)
        };
        let (d, w) = if i % 2 == 0 {
            let d = durable()?;
            (d, baseline()?)
        } else {
            let w = baseline()?;
            (durable()?, w)
        };
        // The first tenth warms the files up.
        if i >= N_DURABLE / 5 {
            durable_us.push(d);
            bare_us.push(w);
        }
    }
    s.close()?;
    b.samples.put("append/durable", durable_us);
    b.samples.put("append/bare-sync", bare_us);
    eprintln!(
        "ours: append/durable {:.1} µs, bare write+fdatasync {:.1} µs",
        b.median("append/durable"),
        b.median("append/bare-sync")
    );
    Ok(())
}

/// Buffered `append_message` ×2,000 into a new session (wall and on-CPU µs per entry),
/// interleaved run by run with its floor over the very frames that run wrote: each
/// frame's two keyed checks (header, then header and payload: what `Writer` computes)
/// and one positional write of its bytes at its offset in a fresh file. The order
/// alternates, so a loaded machine slows both alike; `append/floor-ratio` is the
/// ratio within each pair.
fn append_buffered(b: &mut Bench<'_>) -> Result<()> {
    let tmp = b.tmp("tmp-append");
    let reps = b.opts.reps.max(3);
    let mut journal = Vec::new();
    for i in 0..=reps {
        let batch = b.msgs(N_FAST);
        let (run, floor) = if i % 2 == 0 {
            let run = append_run_cpu(&tmp, Durability::Buffered, batch)?;
            let floor = floor_run(&tmp, &run.journal)?;
            (run, floor)
        } else {
            // Floor first, over the frames of the previous run (the same payloads,
            // so the same lengths; ids and times aside).
            let floor = floor_run(&tmp, &journal)?;
            (append_run_cpu(&tmp, Durability::Buffered, batch)?, floor)
        };
        if i > 0 {
            b.samples.push("append/buffered", run.us);
            b.samples.push("append/buffered-cpu", run.cpu_us);
            b.samples.push("append/buffered-save", run.save_us);
            b.samples.push("append/floor", floor.0);
            b.samples.push("append/floor-cpu", floor.1);
            b.samples.push("append/floor-ratio", run.us / floor.0);
            b.samples
                .push("append/floor-ratio-cpu", run.cpu_us / floor.1);
        }
        journal = run.journal;
    }
    let note = format!(
        "- append, buffered vs its floor: wall {:.2} µs vs {:.2} µs (median ratio within a \
         pair {:.2}×; of the append's wall, {:.2} µs is the 1,024th append, which starts \
         the run's one journal sync and index save in the background), on-CPU {:.2} µs vs {:.2} µs ({:.2}×); the \
         floor is each frame's keyed checks and one positional write of its bytes, over \
         the frames the append run wrote",
        b.median("append/buffered"),
        b.median("append/floor"),
        b.median("append/floor-ratio"),
        b.median("append/buffered-save"),
        b.median("append/buffered-cpu"),
        b.median("append/floor-cpu"),
        b.median("append/floor-ratio-cpu"),
    );
    eprintln!("ours: {note}");
    b.notes.push(note);
    Ok(())
}

/// The serialization inside a buffered append: `Entry::write_json` (ours) against
/// serde_json's `to_writer` of the same entries into the same reused buffer, the two
/// interleaved run by run (order alternating); on-CPU µs per entry. Both write the
/// same bytes (checked here once, untimed).
fn append_serialization(b: &mut Bench<'_>) -> Result<()> {
    let entries: Vec<Entry> = b
        .msgs(N_FAST)
        .into_iter()
        .map(|m| {
            let base = session_types::EntryBase {
                id: Some(session_types::EntryId::new("0123abcd")),
                parent_id: Some(session_types::EntryId::new("4567cdef")),
                timestamp: Some(session_types::Timestamp::from_unix_ms(1_735_689_600_000)),
            };
            Entry::message(base, m)
        })
        .collect();
    let mut buf = Vec::with_capacity(1 << 20);
    for e in &entries {
        buf.clear();
        e.write_json(&mut buf)?;
        if buf != serde_json::to_vec(e)? {
            bail!("write_json and serde_json differ on an entry");
        }
    }
    // On-CPU time (this thread's): a loaded machine's waits would swamp a few µs.
    let mut run = |ours: bool| -> Result<f64> {
        let cpu0 = thread_cpu_ns();
        for e in &entries {
            buf.clear();
            if ours {
                e.write_json(&mut buf)?;
            } else {
                serde_json::to_writer(&mut buf, e)?;
            }
            std::hint::black_box(&buf);
        }
        Ok((thread_cpu_ns() - cpu0) as f64 / 1e3 / entries.len() as f64)
    };
    for i in 0..=b.opts.reps.max(3) * 4 {
        let (ours, theirs) = if i % 2 == 0 {
            let o = run(true)?;
            (o, run(false)?)
        } else {
            let t = run(false)?;
            (run(true)?, t)
        };
        if i > 0 {
            b.samples.push("append/serialize", ours);
            b.samples.push("append/serialize-serde", theirs);
        }
    }
    let note = format!(
        "- serializing an entry (the bench's 2,000 messages, on-CPU): `Entry::write_json` \
         {:.2} µs, serde_json's `to_writer` {:.2} µs (same bytes, interleaved)",
        b.median("append/serialize"),
        b.median("append/serialize-serde"),
    );
    eprintln!("ours: {note}");
    b.notes.push(note);
    Ok(())
}

/// One frame of a journal as written: its offset and bytes (header, payload, padding).
struct RawFrame {
    offset: u64,
    payload_len: usize,
    bytes: Vec<u8>,
}

/// The entry frames of `journal` (a whole journal's bytes, the writer's frame key
/// derived from its id), each checked to carry exactly the checks the floor computes.
fn entry_frames(journal: &[u8]) -> Result<([u8; 32], Vec<RawFrame>)> {
    use session_journal::format::{FRAME_HEADER_LEN, FRAME_KEY_CONTEXT, frame_len};
    // The header frame's tag (bytes 40..56 of its header) is the journal id.
    let header_at = session_journal::format::HEADER_FRAME_OFFSET as usize;
    let id = journal
        .get(header_at + 40..header_at + 56)
        .context("a journal header")?;
    let key = blake3::derive_key(FRAME_KEY_CONTEXT, id);
    let mut frames = Vec::new();
    let mut at = header_at;
    while at + FRAME_HEADER_LEN <= journal.len() {
        let h = &journal[at..at + FRAME_HEADER_LEN];
        let kind = h[5];
        let len = u32::from_le_bytes(h[8..12].try_into()?) as usize;
        let end = at + frame_len(len as u64) as usize;
        if kind == kinds::ENTRY.get() {
            let frame = RawFrame {
                offset: at as u64,
                payload_len: len,
                bytes: journal.get(at..end).context("a whole frame")?.to_vec(),
            };
            let (head, body) = frame_checks(&key, &frame);
            if head.as_bytes()[..4] != h[12..16] || body.as_bytes()[..8] != h[56..64] {
                bail!("the floor's checks differ from the frame's at offset {at}");
            }
            frames.push(frame);
        }
        at = end;
    }
    Ok((key, frames))
}

/// A frame's two keyed checks as the writer computes them: over the offset and the
/// header fields (the header check), then on over the payload (the body check).
#[inline]
fn frame_checks(key: &[u8; 32], f: &RawFrame) -> (blake3::Hash, blake3::Hash) {
    let mut h = blake3::Hasher::new_keyed(key);
    h.update(&f.offset.to_le_bytes());
    h.update(&f.bytes[..12]);
    h.update(&f.bytes[16..56]);
    let head = h.finalize();
    h.update(&f.bytes[64..64 + f.payload_len]);
    (head, h.finalize())
}

/// Per-frame µs of the floor over `journal`'s entry frames, wall and on-CPU: both
/// keyed checks and one positional write at the frame's offset, into a fresh file
/// holding the journal's prefix.
fn floor_run(tmp: &Path, journal: &[u8]) -> Result<(f64, f64)> {
    use std::os::unix::fs::FileExt as _;
    let (key, frames) = entry_frames(journal)?;
    let first = frames.first().context("entry frames")?.offset as usize;
    fs::create_dir_all(tmp)?;
    let file = fs::File::create(tmp.join("floor.bin"))?;
    file.write_all_at(&journal[..first], 0)?;
    let n = frames.len() as f64;
    let cpu0 = thread_cpu_ns();
    let t = Instant::now();
    for f in &frames {
        std::hint::black_box(frame_checks(&key, f));
        file.write_all_at(&f.bytes, f.offset)?;
    }
    let us = ms_since(t) * 1e3 / n;
    Ok((us, (thread_cpu_ns() - cpu0) as f64 / 1e3 / n))
}

/// Buffered appends to the 100k session (a copy): 16,384 of them, so the journal
/// syncs (every `INDEX_SAVE_EVERY`) and one index sidecar save (every
/// `index_save_interval`: 15,3xx at this size) are inside the timing.
fn append_buffered_100k(b: &mut Bench<'_>) -> Result<()> {
    let Some((_, journal)) = b.native.journals.iter().find(|(size, _)| size == "100k") else {
        return Ok(());
    };
    let tmp = b.tmp("tmp-append");
    let n = 16 * session_manager::INDEX_SAVE_EVERY as usize;
    for i in 0..=b.opts.reps.min(3) {
        let us = append_to_copy(&tmp, journal, b.msgs(n))?;
        if i > 0 {
            b.samples.push("append/buffered-100k", us);
        }
    }
    eprintln!(
        "ours: append/buffered to the 100k session {:.2} µs",
        b.median("append/buffered-100k")
    );
    Ok(())
}

/// The floor of a buffered append: one bare `write` of the framed bytes per entry.
fn bare_write(b: &mut Bench<'_>) -> Result<()> {
    let tmp = b.tmp("tmp-append");
    let frames: Vec<Vec<u8>> = b.msgs(N_FAST).into_iter().map(framed).collect();
    for i in 0..=b.opts.reps.min(5) {
        let us = bare_run(&tmp, &frames, false)?;
        if i > 0 {
            b.samples.push("append/bare-write", us);
        }
    }
    eprintln!(
        "ours: append/buffered {:.2} µs (bare write alone {:.2} µs)",
        b.median("append/buffered"),
        b.median("append/bare-write")
    );
    Ok(())
}

/// Journal level: `Writer::append_batch` of 100 entries, durable (one write and one
/// fdatasync per batch).
fn append_batch(b: &mut Bench<'_>) -> Result<()> {
    let tmp = b.tmp("tmp-append");
    let texts: Vec<String> = b.msgs(N_FAST).into_iter().map(entry_json).collect();
    for i in 0..=b.opts.reps.min(5) {
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp)?;
        let mut w = Writer::create(
            &tmp.join("batch.jsonl"),
            JournalId([9; 16]),
            CreateOptions::default(),
        )?;
        let t = Instant::now();
        for chunk in texts.chunks(100) {
            let frames: Vec<NewFrame<'_>> = chunk
                .iter()
                .map(|p| NewFrame::new(kinds::ENTRY, p.as_bytes()))
                .collect();
            w.append_batch(&frames, Durability::Durable)?;
        }
        let us = ms_since(t) * 1e3 / texts.len() as f64;
        w.close()?;
        if i > 0 {
            b.samples.push("append/batch", us);
        }
    }
    eprintln!("ours: append/batch {:.2} µs", b.median("append/batch"));
    // The last of the append measurements.
    let _ = fs::remove_dir_all(&tmp);
    Ok(())
}

// ----- tree, list, import -----

/// The index's tree in getTree() order with ids and labels (what `bcs tree` prints),
/// on an opened session; and at 100k the resident `get_tree` with entries in memory.
fn tree(b: &mut Bench<'_>) -> Result<()> {
    let store = b.store();
    let reps = b.opts.reps;
    for (size, journal) in &b.native.journals {
        let s = store.open(journal)?;
        let samples = timed(
            reps,
            || Ok(()),
            |()| {
                let idx = s.index();
                let nodes: Vec<(u32, &str, Option<&str>)> = idx
                    .tree()
                    .preorder()
                    .into_iter()
                    .map(|n| {
                        let id = idx.info(n.entry).and_then(|x| x.id).unwrap_or("");
                        (n.depth, id, idx.label(id))
                    })
                    .collect();
                Ok(nodes)
            },
        )?;
        let key = format!("tree/{size}");
        b.samples.put(&key, samples);
        eprintln!("ours: tree/{size} {:.3} ms", b.median(&key));
        if size == "100k" {
            let r = store.open_read_only(journal)?;
            let samples = timed(reps.min(5), || Ok(()), |()| Ok(r.get_tree()))?;
            b.samples.put("tree-resident/100k", samples);
            eprintln!(
                "ours: resident get_tree/100k {:.3} ms",
                b.median("tree-resident/100k")
            );
        }
    }
    Ok(())
}

/// `list_all` of 2,000 and 10,000 sessions (catalogs fresh after the warm-up).
fn list_all(b: &mut Bench<'_>) -> Result<()> {
    for (label, root_dir) in [("2000", &b.native.many2000), ("10000", &b.native.many10000)] {
        let st = Store::new(Layout::with_root(root_dir).expect("absolute root"));
        let samples = timed(b.opts.reps, || Ok(()), |()| Ok(st.list_all(&mut ())?))?;
        // With fresh catalogs a listing reads no journal through (issue 4): each
        // journal is opened once and only its header and last frame are read to check
        // its record (issue 13). Checked on the real 2,000 and 10,000 sessions with the
        // I/O counter.
        let counting = Arc::new(session_testkit::CountingVfs::new(Arc::new(
            session_journal::vfs::StdVfs,
        )));
        let checked = Store::new(Layout::with_root(root_dir).expect("absolute root"))
            .with_vfs(counting.clone())
            .list_all(&mut ())?;
        let (opens, read) = (
            counting.opens_matching(".jsonl"),
            counting.bytes_read_matching(".jsonl"),
        );
        // The warm-up wrote the catalog; the journals last changed long before
        // (outside the racy window), so no record needs its journal.
        if opens > 0 || read > 0 {
            bail!(
                "listing {} sessions under {} opened {opens} journals and read {read} journal bytes with fresh catalogs",
                checked.len(),
                root_dir.display()
            );
        }
        b.notes.push(format!(
            "- list_all of {} sessions with fresh catalogs: 0 journals opened, 0 journal bytes read (I/O counter)",
            checked.len()
        ));
        eprintln!(
            "ours: list {} {:.2} ms",
            root_dir.display(),
            median(&samples).unwrap_or(0.0)
        );
        b.samples.put(format!("list/{label}"), samples);
    }
    Ok(())
}

/// Whole process `bcs list --all --json` of 2,000 and 10,000 sessions (catalogs
/// fresh after the warm-up run), beside the reference's in-process `listAll`.
fn cold_list(b: &mut Bench<'_>) -> Result<()> {
    let bcs = build_bcs(b.root)?;
    for (label, root_dir) in [("2000", &b.native.many2000), ("10000", &b.native.many10000)] {
        let cpu0 = children_cpu_ms();
        let samples = cold_runs(b.opts.reps, || {
            let mut c = Command::new(&bcs);
            c.arg("--home")
                .arg(root_dir)
                .args(["list", "--all", "--json"]);
            c
        })?;
        // On a shared machine the wall time is mostly waiting for a core: the
        // processes' own CPU time (user + system, averaged over the runs, the
        // warm-up included) says what the listing costs.
        let runs = (b.opts.reps + 1) as f64;
        let cpu = (children_cpu_ms() - cpu0) / runs;
        b.samples.put(format!("cold-list-cpu/{label}"), vec![cpu]);
        eprintln!("ours: bcs list --all --json {label} CPU {cpu:.1} ms");
        let key = format!("cold-list/{label}");
        b.samples.put(&key, samples);
        eprintln!(
            "ours: bcs list --all --json {label} {:.1} ms",
            b.median(&key)
        );
    }
    Ok(())
}

/// Whole process `bcs list --all --json` of 100,000 small sessions (issue 19 §7;
/// the store is made on first use, see `data::many_small`): its time (catalog fresh
/// after the warm-up run) and, in one more run under `/usr/bin/time`, its peak RSS.
fn cold_list_100k(b: &mut Bench<'_>) -> Result<()> {
    let root_dir = b.native.many100000.clone();
    super::data::many_small(b.data, &root_dir)?;
    let bcs = build_bcs(b.root)?;
    let reps = b.opts.reps.min(5);
    let samples = cold_runs(reps, || {
        let mut c = Command::new(&bcs);
        c.arg("--home")
            .arg(&root_dir)
            .args(["list", "--all", "--json"]);
        c
    })?;
    b.samples.put("cold-list/100000", samples);
    eprintln!(
        "ours: bcs list --all --json 100000 {:.1} ms",
        b.median("cold-list/100000")
    );
    // GNU time's `%M`: the child's peak resident set, in KiB.
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M"])
        .arg(&bcs)
        .arg("--home")
        .arg(&root_dir)
        .args(["list", "--all", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stderr);
            let kib: f64 = text
                .lines()
                .last()
                .and_then(|l| l.trim().parse().ok())
                .context("/usr/bin/time printed no peak RSS")?;
            b.samples.put("cold-list-rss/100000", vec![kib / 1024.0]);
            eprintln!("ours: bcs list --all --json 100000 peak RSS {:.1} MiB", kib / 1024.0);
        }
        _ => b.notes.push(
            "- peak RSS of `bcs list --all --json` at 100,000 sessions not measured (no /usr/bin/time)".into(),
        ),
    }
    Ok(())
}

/// Import throughput of the 100k legacy file (a fresh store each rep).
fn import(b: &mut Bench<'_>) -> Result<()> {
    let legacy = b.data.big.join("100k.jsonl");
    let bytes = fs::metadata(&legacy)?.len();
    let tmp = b.tmp("tmp-import");
    let samples = timed(
        b.opts.reps.min(3),
        || {
            let _ = fs::remove_dir_all(&tmp);
            Ok(Store::new(Layout::with_root(&tmp).expect("absolute root")))
        },
        |st| Ok(st.import(&legacy)?),
    )?;
    let _ = fs::remove_dir_all(&tmp);
    b.samples.put("import/100k", samples);
    b.samples.put("import/bytes", vec![bytes as f64]);
    eprintln!("ours: import 100k {:.0} ms", b.median("import/100k"));
    Ok(())
}

// ----- cold processes -----

/// Cold `bcs context` as a whole process (release binary beside this one), 1k, 100k
/// and 1m.
fn cold_bcs(b: &mut Bench<'_>) -> Result<()> {
    let bcs = build_bcs(b.root)?;
    let reps = b.opts.reps;
    for (size, journal, home) in resume_sessions(b) {
        if size == "10k" {
            continue;
        }
        // Every size gets the same reps: a run is a few milliseconds at any size
        // now (the 100k and 1m medians were of 3 runs, a noisy median).
        let samples = cold_runs(reps, || {
            let mut c = Command::new(&bcs);
            c.arg("--home")
                .arg(&home)
                .arg("context")
                .arg(&journal)
                .arg("--json");
            c
        })?;
        let key = format!("cold/{size}");
        b.samples.put(&key, samples);
        eprintln!("ours: cold bcs context {size} {:.1} ms", b.median(&key));
    }
    // The floor of every cold row on this machine now: the same binary started and
    // waited for, doing nothing (a slow host shows here first).
    let start = cold_runs(reps, || {
        let mut c = Command::new(&bcs);
        c.arg("--version");
        c
    })?;
    b.samples.put("cold/start", start);
    eprintln!("ours: cold bcs --version {:.1} ms", b.median("cold/start"));
    Ok(())
}

/// The reference's cold `node context.mjs 1k.jsonl --no-tree`, for the same row.
fn cold_reference(b: &mut Bench<'_>) -> Result<()> {
    if !(b.opts.reference && node_ok()) {
        return Ok(());
    }
    let peer = crate::fixtures::install_peer(&b.root.join("../shared/peer"), b.root)?;
    let file = b.data.big.join("1k.jsonl");
    let samples = cold_runs(b.opts.reps, || {
        let mut c = Command::new("node");
        c.arg(peer.join("context.mjs")).arg(&file).arg("--no-tree");
        c
    })?;
    b.samples.put("cold-reference/1k", samples);
    eprintln!(
        "reference: cold context.mjs 1k {:.1} ms",
        b.median("cold-reference/1k")
    );
    Ok(())
}

// ----- helpers -----

/// What one run of buffered
/// `OwnedSession::append_message` over `batch` into a new session.
struct AppendRun {
    /// Wall µs per append.
    us: f64,
    /// On-CPU µs per append.
    cpu_us: f64,
    /// The wall time of the one append that starts the journal's sync and the index
    /// save on the writer's background sync (the `INDEX_SAVE_EVERY`-th; it encodes
    /// the sidecar), spread over all of them: µs per append.
    save_us: f64,
    /// The journal's bytes after the close.
    journal: Vec<u8>,
}

/// Per-append µs, wall and on-CPU (this thread's CPU clock, so a loaded machine's
/// waiting is left out), of
/// `OwnedSession::append_message` over `batch` into a new session.
fn append_run_cpu(
    tmp: &Path,
    durability: Durability,
    batch: Vec<AgentMessage>,
) -> Result<AppendRun> {
    let _ = fs::remove_dir_all(tmp);
    let st = Store::new(Layout::with_root(tmp).expect("absolute root"));
    let mut s = st.create("/bench/append")?;
    s.set_durability(durability);
    let n = batch.len() as f64;
    let saving = session_manager::INDEX_SAVE_EVERY as usize - 1;
    let mut save_ms = 0.0;
    // Each append borrows its message: the caller keeps it, as an agent keeps its
    // conversation (and as the seed's callers keep the objects they pass to
    // `appendMessage`). The batch is freed after the timing (it is no part of an
    // append).
    let cpu0 = thread_cpu_ns();
    let t = Instant::now();
    for (k, m) in batch.iter().enumerate() {
        if k == saving {
            let t = Instant::now();
            s.append_message(m)?;
            save_ms = ms_since(t);
        } else {
            s.append_message(m)?;
        }
    }
    let us = ms_since(t) * 1e3 / n;
    let cpu_us = (thread_cpu_ns() - cpu0) as f64 / 1e3 / n;
    drop(batch);
    let path = s.session_file().context("a journal")?.to_path_buf();
    s.close()?;
    Ok(AppendRun {
        us,
        cpu_us,
        save_us: save_ms * 1e3 / n,
        journal: fs::read(path)?,
    })
}

/// Per-append µs of buffered `append_message` over `batch` into a copy of `journal`
/// (and its index sidecar) under `tmp`; the copy is made untimed.
fn append_to_copy(tmp: &Path, journal: &Path, batch: Vec<AgentMessage>) -> Result<f64> {
    let copy = copy_session(tmp, journal)?;
    let st = Store::new(Layout::with_root(tmp).expect("absolute root"));
    let mut s = st.open(&copy)?;
    s.set_durability(Durability::Buffered);
    let n = batch.len() as f64;
    let t = Instant::now();
    for m in &batch {
        s.append_message(m)?;
    }
    let us = ms_since(t) * 1e3 / n;
    s.close()?;
    drop(batch);
    Ok(us)
}

/// CPU time (user + system, ms) of this process's waited-for children so far, from
/// `/proc/self/stat` (clock ticks of 10 ms: average it over many children).
fn children_cpu_ms() -> f64 {
    // cutime and cstime: fields 16 and 17 of the line (1-based).
    stat_ms("/proc/self/stat", 16, 17)
}

/// The sum of two clock-tick fields (1-based numbers, as `proc(5)` gives them) of the
/// `/proc/.../stat` line at `path`, in ms (ticks of 10 ms); 0 where it cannot be read.
pub(super) fn stat_ms(path: &str, a: usize, b: usize) -> f64 {
    let stat = fs::read_to_string(path).unwrap_or_default();
    // Fields after the command name (field 2, which may hold spaces) in parentheses:
    // the state (field 3) is the first.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let field = |n: usize| {
        n.checked_sub(3)
            .and_then(|i| f.get(i))
            .copied()
            .unwrap_or(0.0)
    };
    (field(a) + field(b)) * 10.0
}

/// This thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`), exact to the call:
/// `/proc/thread-self/schedstat`, read before, advances only at the scheduler's ticks
/// and switches, which is as coarse as a whole 2,000-append run on a quiet machine.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// Per-append µs of a bare `write` (+ `fdatasync` when `sync`) of each buffer.
fn bare_run(tmp: &Path, frames: &[Vec<u8>], sync: bool) -> Result<f64> {
    let _ = fs::remove_dir_all(tmp);
    fs::create_dir_all(tmp)?;
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(tmp.join("bare.bin"))?;
    let t = Instant::now();
    for b in frames {
        f.write_all(b)?;
        if sync {
            f.sync_data()?;
        }
    }
    Ok(ms_since(t) * 1e3 / frames.len() as f64)
}

/// Wall time of `n` runs (after one warm-up) of a whole process, stdout discarded.
fn cold_runs(n: usize, mut cmd: impl FnMut() -> Command) -> Result<Vec<f64>> {
    let mut s = Vec::new();
    for i in 0..=n {
        let t = Instant::now();
        let st = cmd()
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .context("running a cold process")?;
        let dt = ms_since(t);
        if !st.status.success() {
            bail!(
                "cold process failed: {}",
                String::from_utf8_lossy(&st.stderr)
            );
        }
        if i > 0 {
            s.push(dt);
        }
    }
    Ok(s)
}

fn build_bcs(root: &Path) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "session-cli",
            "--bin",
            "bcs",
        ])
        .current_dir(root)
        .status()
        .context("building bcs")?;
    if !status.success() {
        bail!("cargo build -p session-cli failed");
    }
    let me = std::env::current_exe()?;
    let bcs = me
        .parent()
        .context("the xtask binary has a directory")?
        .join("bcs");
    if !bcs.is_file() {
        bail!("no bcs binary at {}", bcs.display());
    }
    Ok(bcs)
}

fn payload_messages(path: &Path) -> Result<Vec<AgentMessage>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line)?;
        let role = v["message"]["role"].as_str().unwrap_or("");
        if v["type"] != "message" || !["user", "assistant", "toolResult"].contains(&role) {
            continue;
        }
        if let Ok(Record::Entry(Entry::Message(m))) = Record::parse(line) {
            out.push(m.message);
        }
    }
    if out.is_empty() {
        bail!("no message payloads in {}", path.display());
    }
    Ok(out)
}

/// The JSON a message entry carrying `m` serializes to (the journal's payload).
fn entry_json(m: AgentMessage) -> String {
    let base = session_types::EntryBase {
        id: Some(session_types::EntryId::new("0123abcd")),
        parent_id: Some(session_types::EntryId::new("4567cdef")),
        timestamp: Some(session_types::Timestamp::from_unix_ms(1_735_689_600_000)),
    };
    Entry::message(base, m).to_json()
}

/// `entry_json(m)` padded to a frame's size: what a bare baseline writes per entry.
fn framed(m: AgentMessage) -> Vec<u8> {
    let mut b = entry_json(m).into_bytes();
    b.resize(b.len().div_ceil(8) * 8 + 64, b' ');
    b
}

// ----- child modes -----

/// `bench --child-resume JOURNAL --home ROOT`: one resume, then this process's peak RSS.
pub(crate) fn child_resume(args: &[String]) -> Result<()> {
    let journal = args.first().context("--child-resume needs a journal")?;
    let home = match args.get(1..3) {
        Some([flag, h]) if flag == "--home" => PathBuf::from(h),
        _ => bail!("--child-resume JOURNAL --home ROOT"),
    };
    let store = Store::new(Layout::with_root(home).expect("absolute root"));
    let t = Instant::now();
    let s = store.open(Path::new(journal))?;
    let ctx = s.build_session_context()?;
    let ms = ms_since(t);
    let messages = ctx.messages.len();
    let status = fs::read_to_string("/proc/self/status")?;
    let hwm = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .context("VmHWM in /proc/self/status")?;
    println!(
        "{}",
        json!({"vmHwmKiB": hwm, "ms": ms, "messages": messages})
    );
    Ok(())
}

/// `bench --child-append 1k.jsonl`, for profiling (`perf record … xtask bench
/// --child-append 1k.jsonl`): 20,000 buffered appends of the real payloads into a
/// temporary store.
pub(crate) fn child_append(args: &[String]) -> Result<()> {
    let file = args
        .first()
        .context("--child-append needs the 1k.jsonl file")?;
    let payloads = payload_messages(Path::new(file))?;
    let batch = (0..20_000)
        .map(|i| payloads[i % payloads.len()].clone())
        .collect();
    let tmp = std::env::temp_dir().join(format!("xtask-bench-append-{}", std::process::id()));
    let run = append_run_cpu(&tmp, Durability::Buffered, batch)?;
    let _ = fs::remove_dir_all(&tmp);
    println!("{:.2} µs per buffered append", run.us);
    Ok(())
}
