//! Real child processes: the test binary re-invokes itself with `JOURNAL_CHILD` set,
//! running only [`child_process_entry`], which then acts as a second process.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};

use session_journal::{Durability, FrameKind, OpenOptions, Writer};

const VAR: &str = "JOURNAL_CHILD";

/// The payload the kill -9 child writes for `seq` (sizes vary from 1 B to ~3 KiB).
pub(crate) fn child_payload(seq: u64) -> Vec<u8> {
    let len = 1 + (seq.wrapping_mul(2_654_435_761) % 3000) as usize;
    crate::payload(seq, len)
}

/// Entry point of the child role. Without `JOURNAL_CHILD` (a normal test run) it only
/// checks that the parent-side helpers agree with themselves.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(VAR) else {
        assert_eq!(child_payload(7), child_payload(7));
        return;
    };
    let out = std::io::stdout();
    let mut out = out.lock();
    if let Some(path) = role.strip_prefix("lock:") {
        let (_w, _) = Writer::open(Path::new(path), OpenOptions::default()).unwrap();
        writeln!(out, "CHILD locked").unwrap();
        out.flush().unwrap();
        // Hold the lock until killed: block on stdin, which the parent never closes
        // before killing us.
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    } else if let Some(path) = role.strip_prefix("append:") {
        let (mut w, report) = Writer::open(Path::new(path), OpenOptions::default()).unwrap();
        let mut seq = report.last_seq.get();
        loop {
            seq += 1;
            let a = w
                .append(
                    FrameKind::FIRST_CALLER,
                    &child_payload(seq),
                    Durability::Durable,
                )
                .unwrap();
            assert_eq!(a.seq.get(), seq);
            writeln!(out, "CHILD ack {seq}").unwrap();
            out.flush().unwrap();
        }
    }
}

pub(crate) struct ChildProc {
    pub(crate) child: Child,
    pub(crate) lines: std::io::Lines<BufReader<ChildStdout>>,
}

impl ChildProc {
    pub(crate) fn spawn(role: &str) -> Self {
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new(exe)
            .args([
                "process::child_process_entry",
                "--exact",
                "--nocapture",
                "-q",
            ])
            .arg("--test-threads=1")
            .env(VAR, role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self { child, lines }
    }

    /// The next line the child wrote with the `CHILD ` prefix (libtest's own output is
    /// skipped); `None` once its stdout closes.
    pub(crate) fn next(&mut self) -> Option<String> {
        for line in self.lines.by_ref() {
            let line = line.ok()?;
            if let Some(rest) = line.strip_prefix("CHILD ") {
                return Some(rest.to_owned());
            }
        }
        None
    }

    /// SIGKILL, then reap.
    pub(crate) fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// Kill -9 a child appending durably at random moments, many times over the same
/// journal: every seq it acknowledged is present and byte-identical after reopen.
#[test]
fn kill9_never_loses_an_acknowledged_durable_append() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("kill9.jsonl");
    drop(
        Writer::create(
            &path,
            session_journal::JournalId([0x99; 16]),
            session_journal::CreateOptions::default(),
        )
        .unwrap(),
    );
    let runs = crate::scale(50, "JOURNAL_KILL_RUNS");
    let mut rng = session_testkit::sim::SimRng::new(2024);
    let mut acked_max = 0u64;
    let mut torn = 0;
    for _ in 0..runs {
        let mut child = ChildProc::spawn(&format!("append:{}", path.display()));
        let wait_for = 1 + rng.below(12);
        let mut acked = Vec::new();
        while (acked.len() as u64) < wait_for {
            let line = child.next().expect("child exited early");
            acked.push(line.strip_prefix("ack ").unwrap().parse::<u64>().unwrap());
        }
        child.kill9();
        // Acknowledgements already in the pipe count too.
        while let Some(line) = child.next() {
            acked.push(line.strip_prefix("ack ").unwrap().parse::<u64>().unwrap());
        }
        acked_max = acked_max.max(*acked.iter().max().unwrap());

        let (w, report) = Writer::open(&path, OpenOptions::default()).unwrap();
        if !matches!(report.tail, session_journal::TailState::Clean) {
            torn += 1;
        }
        assert!(
            report.last_seq.get() >= acked_max,
            "lost an acknowledged append"
        );
        drop(w);
        let r = session_journal::Reader::open(&path, session_journal::ReaderOptions::default())
            .unwrap();
        let mut n = 0;
        for f in r.frames(None) {
            let f = f.unwrap();
            n += 1;
            assert_eq!(f.info.seq.get(), n);
            assert_eq!(f.payload, child_payload(n), "seq {n} differs");
        }
        assert!(n >= acked_max);
    }
    println!("{runs} kill -9 runs, {acked_max} acknowledged appends, {torn} torn tails repaired");
}
