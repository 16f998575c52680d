//! `append` killed with SIGKILL at random (seeded) moments: every id it printed is in
//! the session afterwards.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;

use crate::support::Bcs;

/// Runs, at least 20 (`BCS_CRASH_RUNS` for more).
fn runs() -> u64 {
    std::env::var("BCS_CRASH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
}

/// xorshift64*: a seeded, dependency-free generator.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn killed_append_keeps_every_printed_id() {
    let b = Bcs::new();
    let mut rng = Rng(0x5EED_0BC5);
    for run in 0..runs() {
        let sid = format!("crash{run}");
        b.run(&["new", "--id", &sid, "--cwd", "/w"]).ok();
        let mut args = vec!["append", sid.as_str()];
        if run % 2 == 1 {
            args.push("--buffered");
        }
        let mut child = b
            .cmd(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let acked = rng.next() % 12;
        let in_flight = 1 + rng.next() % 4;
        let mut printed = Vec::new();
        // Lines acknowledged one by one (the pipe is fed slowly: one line per ack).
        for i in 0..acked {
            writeln!(
                stdin,
                r#"{{"role":"user","content":"run {run} line {i}","timestamp":{i}}}"#
            )
            .expect("write");
            let mut line = String::new();
            stdout.read_line(&mut line).expect("read ack");
            printed.push(line.trim().to_owned());
        }
        // A few more lines in flight, then SIGKILL while they are being appended.
        for i in 0..in_flight {
            let _ = writeln!(
                stdin,
                r#"{{"role":"user","content":"run {run} late {i}","timestamp":{i}}}"#
            );
        }
        let _ = stdin.flush();
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        // Ids printed after the last one we read, before the kill, count too.
        let mut rest = String::new();
        let _ = stdout.read_to_string(&mut rest);
        printed.extend(
            rest.lines()
                .map(|l| l.trim().to_owned())
                .filter(|l| !l.is_empty()),
        );

        let exported = b.run(&["export", &sid]);
        let text = exported.ok();
        for id in &printed {
            assert!(
                text.contains(&format!("\"id\":\"{id}\"")),
                "run {run}: printed id {id} lost"
            );
        }
        let ctx = b.run(&["context", &sid, "--json"]).json();
        assert!(ctx["messages"].as_array().expect("messages").len() >= printed.len());
        // The session can be owned again (the lock died with the process).
        b.run_stdin(&["append", &sid], "").ok();
    }
}
