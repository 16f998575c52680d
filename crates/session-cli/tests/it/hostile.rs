//! The hostile-filesystem suite: what a careless script or a hostile local file can
//! plant around a store — links at every name the store uses, FIFOs and directories at
//! every derived name, deleted holder records, aliases of journals under concurrent
//! appenders, odd names given to `rm`. Each case asserts what must hold: nothing
//! acknowledged is lost, nothing outside the store is written, nothing hangs.
#![cfg(unix)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Bcs, Run, bin};

/// How long any command may take before it counts as hung.
const HANG: Duration = Duration::from_secs(20);

/// Runs `cmd` with `stdin`, killing it (and failing) if it runs longer than [`HANG`].
/// Output is drained while it runs, so a large output never stalls it.
fn run_bounded(mut cmd: Command, stdin: &str, what: &str) -> Run {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bcs");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let mut input = child.stdin.take().expect("stdin");
    let stdin = stdin.to_owned();
    let feeder = std::thread::spawn(move || {
        let _ = input.write_all(stdin.as_bytes());
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > HANG {
            let wchan =
                std::fs::read_to_string(format!("/proc/{}/wchan", child.id())).unwrap_or_default();
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: still running after {HANG:?} (hung in {wchan:?}); stderr: {}",
                err.join().unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = feeder.join();
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().expect("stdout"),
        stderr: err.join().expect("stderr"),
    }
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo")
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

const LEGACY: &str = concat!(
    r#"{"type":"session","version":3,"id":"legacy-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
    "\n",
    r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
    "\n"
);

const USER: &str = r#"{"role":"user","content":"hello","timestamp":1}"#;

/// A store with one session `s1` holding one message.
fn one_session() -> Bcs {
    let b = Bcs::new();
    b.run(&["new", "--id", "s1", "--cwd", "/w"]).ok();
    b.run_stdin(&["append", "s1"], &format!("{USER}\n")).ok();
    b
}

/// Every reading, writing and store-wide command, as it would be run on `s1`.
fn every_command() -> Vec<(Vec<&'static str>, &'static str)> {
    vec![
        (vec!["show", "s1"], ""),
        (vec!["tree", "s1"], ""),
        (vec!["context", "s1"], ""),
        (vec!["context", "--json", "s1"], ""),
        (vec!["verify", "s1"], ""),
        (vec!["verify", "--all"], ""),
        (vec!["list", "--all"], ""),
        (vec!["list", "--all", "--json"], ""),
        (vec!["export", "s1"], ""),
        (vec!["append", "s1"], USER),
    ]
}

/// A FIFO, a directory or a symlink at each derived name of a session or a store —
/// the sidecar, the catalog, the imports registry, the holder record — never hangs a
/// command, never makes one write through it, and never loses the session: every
/// command answers (exit 0, or 1 with a one-line error), and `context` still works.
#[test]
fn planted_files_at_derived_names_never_hang_or_lose_the_session() {
    for plant in ["fifo", "dir", "symlink"] {
        for name in [
            "s1.jsonl.idx",
            ".catalog",
            ".imports.jsonl",
            "s1.jsonl.lock",
        ] {
            let b = one_session();
            let target = b.sessions().join(name);
            let _ = std::fs::remove_file(&target);
            let victim = b.home().join("victim.txt");
            std::fs::write(&victim, b"precious").expect("victim");
            match plant {
                "fifo" => mkfifo(&target),
                "dir" => std::fs::create_dir(&target).expect("dir"),
                _ => std::os::unix::fs::symlink(&victim, &target).expect("symlink"),
            }
            for (args, stdin) in every_command() {
                let what = format!("{plant} at {name}: bcs {}", args.join(" "));
                let r = run_bounded(b.cmd(&args), stdin, &what);
                assert!(
                    r.code == 0 || r.code == 1,
                    "{what}: exit {}: {}",
                    r.code,
                    r.stderr
                );
                assert!(!r.stderr.contains("panicked"), "{what}: {}", r.stderr);
            }
            let what = format!("{plant} at {name}: context after everything");
            let r = run_bounded(b.cmd(&["context", "--json", "s1"]), "", &what);
            assert_eq!(r.code, 0, "{what}: {}", r.stderr);
            assert!(r.stdout.contains("hello"), "{what}: {}", r.stdout);
            assert_eq!(
                std::fs::read(&victim).expect("victim"),
                b"precious",
                "{what}: wrote through the link"
            );
            let what = format!("{plant} at {name}: import of a missing file");
            let r = run_bounded(b.cmd(&["import", "/nonexistent.jsonl"]), "", &what);
            assert_eq!(r.code, 1, "{what}");
            let src = b.home().join("legacy.jsonl");
            std::fs::write(&src, LEGACY).expect("source");
            let what = format!("{plant} at {name}: import");
            let r = run_bounded(b.cmd(&["import", src.to_str().expect("utf-8")]), "", &what);
            assert!(r.code == 0 || r.code == 1, "{what}: {}", r.stderr);
            let what = format!("{plant} at {name}: rm");
            let r = run_bounded(b.cmd(&["rm", "s1"]), "", &what);
            assert!(r.code == 0 || r.code == 1, "{what}: {}", r.stderr);
            assert_eq!(
                std::fs::read(&victim).expect("victim"),
                b"precious",
                "{what}"
            );
        }
    }
}

/// A journal reached through a symlink is refused by every writing command, is not
/// listed, and the link's target is never written.
#[test]
fn a_journal_symlink_is_refused() {
    let b = one_session();
    let elsewhere = b.home().join("elsewhere.jsonl");
    std::fs::copy(b.sessions().join("s1.jsonl"), &elsewhere).expect("copy");
    let before = std::fs::read(&elsewhere).expect("read");
    std::os::unix::fs::symlink(&elsewhere, b.sessions().join("s2.jsonl")).expect("link");
    let r = b.run_stdin(&["append", "s2"], &format!("{USER}\n"));
    assert!(r.fails(1).contains("symbolic link"), "{}", r.stderr);
    let r = b.run(&["rm", "s2"]);
    assert!(r.fails(1).contains("symbolic link"), "{}", r.stderr);
    let r = b.run(&["list", "--all"]);
    assert!(
        r.ok().contains("s1") && !r.ok().contains("s2"),
        "{}",
        r.stdout
    );
    assert_eq!(std::fs::read(&elsewhere).expect("read"), before);
}

/// `bcs rm` deletes exactly one session of this store: names whose stem is `.` or
/// `..`, files outside the store, and another store's journal are refused, and nothing
/// of anyone's is removed.
#[test]
fn rm_of_odd_names_deletes_nothing() {
    let b = one_session();
    let artifacts = b.home().join("session-artifacts");
    std::fs::create_dir_all(artifacts.join("s1")).expect("artifacts");
    std::fs::write(artifacts.join("s1").join("keep"), b"x").expect("artifact");
    for name in ["...jsonl", "..jsonl"] {
        std::fs::write(b.home().join(name), b"").expect("file");
        let r = b.run(&["rm", name]);
        r.fails(1);
        assert!(b.home().join(name).exists(), "{name} kept");
    }
    let other = one_session();
    std::fs::create_dir_all(other.home().join("session-artifacts/s1")).expect("artifacts");
    let theirs = other.sessions().join("s1.jsonl");
    let r = b.run(&["rm", theirs.to_str().expect("utf-8")]);
    assert!(r.fails(1).contains("refusing to delete"), "{}", r.stderr);
    assert!(theirs.exists() && other.home().join("session-artifacts/s1").exists());
    assert!(artifacts.join("s1").join("keep").exists());
    assert!(b.sessions().join("s1.jsonl").exists());
}

/// Every file under `root`, recursively (links not followed).
fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let e = e.expect("entry");
            let t = e.file_type().expect("type");
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

/// After `rm`, no file under the store holds the session's text: not the catalog, not
/// a torn-tail copy, not the registry, not the sidecar; the files `rm` rewrites stay
/// `0600`.
#[test]
fn rm_leaves_no_trace_of_the_session() {
    use std::os::unix::fs::PermissionsExt;
    let b = Bcs::new();
    let marker = "zebra-marker-7f3a";
    let src = b.home().join("src.jsonl");
    std::fs::write(
        &src,
        format!(
            "{{\"type\":\"session\",\"version\":3,\"id\":\"imp\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}}\n\
             {{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{marker}\",\"timestamp\":1}}}}\n"
        ),
    )
    .expect("source");
    b.run(&["import", src.to_str().expect("utf-8")]).ok();
    b.run(&["new", "--id", "other", "--cwd", "/w"]).ok();
    // A torn tail copy: append garbage past the end, then let an append repair it.
    let journal = b.sessions().join("imp.jsonl");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .expect("open");
    f.write_all(&[0x11; 40]).expect("tear");
    drop(f);
    b.run_stdin(&["append", "imp"], &format!("{USER}\n")).ok();
    b.run(&["list", "--all"]).ok();
    assert!(
        files_under(b.home())
            .iter()
            .filter(|p| !p.starts_with(b.home().join("src.jsonl")))
            .any(|p| std::fs::read(p).is_ok_and(|c| contains(&c, marker.as_bytes()))),
        "the marker is stored somewhere before rm"
    );
    b.run(&["rm", "imp"]).ok();
    for p in files_under(b.home()) {
        if p == src {
            continue;
        }
        let c = std::fs::read(&p).expect("read");
        assert!(
            !contains(&c, marker.as_bytes()),
            "{} still holds the deleted session's text",
            p.display()
        );
        if p.starts_with(b.sessions()) {
            let mode = std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `export` to stdout stages nothing in the temp directory (it streams), and `export
/// -o` works for a destination name near the 255-byte limit.
#[test]
fn export_streams_and_takes_long_names() {
    let b = one_session();
    let tmp = tempfile::tempdir().expect("tmp");
    let r = run_bounded(
        {
            let mut c = b.cmd(&["export", "s1"]);
            c.env("TMPDIR", tmp.path());
            c
        },
        "",
        "export to stdout",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("hello"));
    assert_eq!(std::fs::read_dir(tmp.path()).expect("tmp").count(), 0);
    let long = b.home().join(format!("{}.jsonl", "e".repeat(244)));
    b.run(&["export", "s1", "-o", long.to_str().expect("utf-8")])
        .ok();
    assert!(
        std::fs::read_to_string(&long)
            .expect("exported")
            .contains("hello")
    );
}

/// Writers through every alias of one journal (its name, a hard link, a `..` path),
/// while a cleaner keeps deleting holder records: every acknowledged entry is in the
/// journal afterwards, and `verify` finds it clean.
#[test]
fn appenders_through_aliases_lose_nothing_acknowledged() {
    let b = one_session();
    let journal = b.sessions().join("s1.jsonl");
    let hard = b.sessions().join("alias.jsonl");
    std::fs::hard_link(&journal, &hard).expect("hard link");
    std::fs::create_dir_all(b.sessions().join("sub")).expect("sub");
    let dotted = b.sessions().join("sub/../s1.jsonl");
    let names = [journal.clone(), hard.clone(), dotted];
    let stop = std::sync::atomic::AtomicBool::new(false);
    let acked = std::sync::Mutex::new(Vec::<String>::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for n in &names {
                    let _ = std::fs::remove_file(session_journal::lock::lock_path(n));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let writers: Vec<_> = (0..6)
            .map(|w| {
                let path = names[w % names.len()].clone();
                let acked = &acked;
                let b = &b;
                s.spawn(move || {
                    for round in 0..8 {
                        let mut child = Command::new(bin())
                            .arg("--home")
                            .arg(b.home())
                            .args(["append", path.to_str().expect("utf-8")])
                            .stdin(Stdio::piped())
                            .stdout(Stdio::piped())
                            .stderr(Stdio::piped())
                            .spawn()
                            .expect("spawn");
                        let mut stdin = child.stdin.take().expect("stdin");
                        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
                        for k in 0..5 {
                            let line = format!(
                                "{{\"role\":\"user\",\"content\":\"w{w} r{round} k{k}\",\"timestamp\":1}}\n"
                            );
                            if stdin.write_all(line.as_bytes()).is_err() {
                                break;
                            }
                            let mut ack = String::new();
                            if out.read_line(&mut ack).unwrap_or(0) == 0 {
                                break; // refused: someone else owns it
                            }
                            acked.lock().expect("acked").push(ack.trim().to_owned());
                        }
                        drop(stdin);
                        let _ = child.wait();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().expect("writer");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let acked = acked.into_inner().expect("acked");
    assert!(!acked.is_empty(), "some appends were acknowledged");
    let r = b.run(&["show", "--json", "s1"]);
    r.ok();
    let all = b.run(&["export", "s1"]);
    let text = all.ok();
    let missing: Vec<&String> = acked
        .iter()
        .filter(|id| !text.contains(id.as_str()))
        .collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    // The journal is sound; a sidecar left behind by appends through another name may
    // be stale (derived, rebuilt on the next open), which `verify` reports.
    let v = b.run(&["verify", "--json", "s1"]);
    let out: serde_json::Value = serde_json::from_str(&v.stdout).expect("verify json");
    let status = out[0]["status"].as_str().expect("status");
    assert!(matches!(status, "clean" | "stale-index"), "{out}");
}

/// `BASE_CONTEXT_HOME` naming a file is an error, not an empty store.
#[test]
fn a_home_that_is_a_file_is_an_error() {
    let b = Bcs::new();
    let file = b.home().join("not-a-dir");
    std::fs::write(&file, b"x").expect("file");
    let r = Command::new(bin())
        .args(["list", "--all"])
        .env("BASE_CONTEXT_HOME", &file)
        .env_remove("BASE_CONTEXT_SESSION_DIR")
        .output()
        .expect("run");
    assert_eq!(
        r.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&r.stdout)
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("not a directory"), "{err}");
}

/// `cp b.jsonl a.jsonl`: the copy is not served as `a` and `verify` reports the
/// mismatch between the journal's session id and its name.
#[test]
fn a_journal_copied_over_another_name_is_reported() {
    let b = one_session();
    b.run(&["new", "--id", "s2", "--cwd", "/w"]).ok();
    std::fs::copy(b.sessions().join("s1.jsonl"), b.sessions().join("s2.jsonl")).expect("cp");
    let err = b.run(&["context", "s2"]);
    assert!(
        err.fails(1).contains("under the name of session"),
        "{}",
        err.stderr
    );
    let v = b.run(&["verify", "--json", "s2"]);
    assert_eq!(v.code, 1);
    let out: serde_json::Value = serde_json::from_str(&v.stdout).expect("json");
    assert_eq!(out[0]["status"], "corrupt", "{out}");
    assert!(
        out[0]["journal"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("\"s1\"") && e.contains("\"s2\"")),
        "{out}"
    );
}

/// A journal without a session header record (what a crash inside `create` left
/// before creation linked complete journals into place) is never reported clean, and
/// a temporary left by a killed creation is reported by `verify --all` and removed by
/// `--repair`.
#[test]
fn unborn_journals_and_leftover_temporaries_are_reported() {
    let b = Bcs::new();
    std::fs::create_dir_all(b.sessions()).expect("dir");
    let unborn = b.sessions().join("unborn.jsonl");
    let w = session_journal::Writer::create(
        &unborn,
        session_journal::JournalId([5; 16]),
        session_journal::CreateOptions {
            session_id: Some("unborn".to_owned()),
            ..Default::default()
        },
    )
    .expect("journal");
    w.close().expect("close");
    let leftover = b.sessions().join(".s9.jsonl.new-00000000deadbeef.tmp");
    std::fs::copy(&unborn, &leftover).expect("leftover");
    let r = b.run(&["verify", "--all", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let out: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let statuses: Vec<&str> = out
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v["status"].as_str().expect("status"))
        .collect();
    assert_eq!(statuses, ["never-created", "leftover"], "{out}");
    assert!(
        out[0]["journal"]["error"]
            .as_str()
            .expect("error")
            .contains("was never created: no session header record")
    );
    assert!(out[0]["journal"]["offset"].is_u64(), "{out}");
    // Every reading command refuses it, saying so with the offset.
    for cmd in ["show", "context", "tree"] {
        let r = b.run(&[cmd, "unborn"]);
        let err = r.fails(1);
        assert!(
            err.contains("was never created") && err.contains("offset"),
            "{cmd}: {err}"
        );
    }
    // Listings skip it, with a note.
    let listed = b.run(&["list", "--all", "--json"]);
    assert_eq!(listed.ok().trim(), "[]", "{}", listed.stdout);
    assert!(listed.stderr.contains("never created"), "{}", listed.stderr);
    let r = b.run(&["verify", "--all", "--repair", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(!leftover.exists(), "{}", r.stdout);
    assert!(!unborn.exists(), "moved aside");
    assert!(b.sessions().join(".unborn.jsonl.never-created").exists());
    // Never deleted: moved aside, out of the journals' names.
    assert!(b.run(&["list", "--all", "--json"]).ok().trim() == "[]");
}

/// `verify` of a session a writer is appending multi-megabyte entries to never calls
/// the append in progress a torn tail (it did in about one run in eight).
#[test]
fn verify_of_a_live_session_sees_no_torn_tail() {
    let b = one_session();
    let big = "x".repeat(3 << 20);
    let line = format!("{{\"role\":\"user\",\"content\":\"{big}\",\"timestamp\":1}}\n");
    let mut child = b
        .cmd(&["append", "--buffered", "s1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        for _ in 0..12 {
            if stdin.write_all(line.as_bytes()).is_err() {
                break;
            }
        }
    });
    let mut torn = Vec::new();
    for _ in 0..12 {
        let r = b.run(&["verify", "--json", "s1"]);
        if r.stdout.contains("torn-tail") {
            torn.push(r.stdout);
        }
    }
    writer.join().expect("writer");
    let _ = child.wait();
    assert!(torn.is_empty(), "{torn:?}");
}

/// An error names its path once and its OS error once (`{:#}` printed a cause the
/// message already held a second time).
#[test]
fn errors_say_each_cause_once() {
    let b = one_session();
    let r = b.run(&["export", "s1", "-o", "/nonexistent/dir/x.jsonl"]);
    let err = r.fails(1);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    assert_eq!(err.matches("/nonexistent/dir").count(), 1, "{err}");
}

/// A small tmpfs mounted for one test and unmounted when dropped (even on panic).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// `None` where this process may not mount (not root): the tests below then say so
    /// and check nothing. CI runs as root, so it always runs them.
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().expect("mount point");
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "none",
            ])
            .arg(dir.path())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("cannot mount a tmpfs here (not root?): skipped");
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, mode: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.path())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount {mode}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn bcs_at(home: &Path, args: &[&str], stdin: &str) -> Run {
    let mut c = Command::new(bin());
    c.arg("--home").arg(home).args(args);
    c.env_remove("BASE_CONTEXT_HOME")
        .env_remove("BASE_CONTEXT_SESSION_DIR");
    run_bounded(c, stdin, &format!("bcs {}", args.join(" ")))
}

/// A full file system: appends fail with a clear error once space runs out, every
/// entry acknowledged before is kept, reading commands keep working while it is
/// full, and once space is freed the session takes appends again.
#[test]
fn a_full_file_system_loses_nothing_acknowledged() {
    let Some(fs) = Tmpfs::mount("2m") else { return };
    let home = fs.path().join("home");
    bcs_at(&home, &["new", "--id", "s1", "--cwd", "/w"], "").ok();
    let filler = fs.path().join("filler");
    // Leave about 600 KiB.
    let _ = Command::new("dd")
        .args(["if=/dev/zero", "bs=1024", "count=1400"])
        .arg(format!("of={}", filler.display()))
        .stderr(Stdio::null())
        .status();
    let mut input = String::new();
    for k in 0..60 {
        input.push_str(&format!(
            "{{\"role\":\"user\",\"content\":\"k{k} {}\",\"timestamp\":1}}\n",
            "y".repeat(20_000)
        ));
    }
    let r = bcs_at(&home, &["append", "s1"], &input);
    assert_eq!(r.code, 1, "the disk filled up: {}", r.stderr);
    assert!(r.stderr.contains("No space left"), "{}", r.stderr);
    let acked: Vec<&str> = r.stdout.lines().collect();
    assert!(
        !acked.is_empty() && acked.len() < 60,
        "{} acknowledged",
        acked.len()
    );
    for args in [
        &["context", "s1"][..],
        &["show", "s1"],
        &["list", "--all"],
        &["tree", "s1"],
    ] {
        let r = bcs_at(&home, args, "");
        assert_eq!(r.code, 0, "bcs {} while full: {}", args.join(" "), r.stderr);
    }
    std::fs::remove_file(&filler).expect("free space");
    let exported = bcs_at(&home, &["export", "s1"], "");
    let text = exported.ok();
    for id in &acked {
        assert!(text.contains(id), "acknowledged {id} lost");
    }
    bcs_at(&home, &["append", "s1"], &format!("{USER}\n")).ok();
    let v = bcs_at(&home, &["verify", "--json", "s1"], "");
    assert!(
        v.stdout.contains("\"clean\"") || v.stdout.contains("stale-index"),
        "{}",
        v.stdout
    );
}

/// A read-only file system: every reading command works, every writing command fails
/// with a one-line error naming what it could not write, and nothing is lost.
#[test]
fn a_read_only_file_system_reads_and_refuses_writes() {
    let Some(fs) = Tmpfs::mount("4m") else { return };
    let home = fs.path().join("home");
    bcs_at(&home, &["new", "--id", "s1", "--cwd", "/w"], "").ok();
    bcs_at(&home, &["append", "s1"], &format!("{USER}\n")).ok();
    let src = fs.path().join("legacy.jsonl");
    std::fs::write(&src, LEGACY).expect("source");
    let before = bcs_at(&home, &["export", "s1"], "").stdout;
    fs.remount("ro");
    for args in [
        &["context", "--json", "s1"][..],
        &["show", "s1"],
        &["tree", "s1"],
        &["list", "--all"],
        &["verify", "s1"],
        &["export", "s1"],
    ] {
        let r = bcs_at(&home, args, "");
        assert_eq!(
            r.code,
            0,
            "bcs {} on a read-only fs: {}",
            args.join(" "),
            r.stderr
        );
    }
    let src_arg = src.to_str().expect("utf-8");
    for (args, stdin) in [
        (&["append", "s1"][..], format!("{USER}\n")),
        (&["new", "--id", "s2", "--cwd", "/w"], String::new()),
        (&["rm", "s1"], String::new()),
        (&["import", src_arg], String::new()),
    ] {
        let r = bcs_at(&home, args, &stdin);
        let err = r.fails(1);
        assert!(
            err.contains("Read-only file system"),
            "bcs {}: {err}",
            args.join(" ")
        );
    }
    fs.remount("rw");
    assert_eq!(bcs_at(&home, &["export", "s1"], "").stdout, before);
}

/// `bcs list` refreshes the catalog where it can write and lists read-only where
/// it cannot: on a read-only file system it lists the same sessions, exits 0 and
/// writes nothing; once writable again it writes the catalog.
#[test]
fn list_falls_back_to_read_only_on_a_read_only_file_system() {
    let Some(fs) = Tmpfs::mount("4m") else { return };
    let home = fs.path().join("home");
    for id in ["s1", "s2"] {
        bcs_at(&home, &["new", "--id", id, "--cwd", "/w"], "").ok();
        bcs_at(&home, &["append", id], &format!("{USER}\n")).ok();
    }
    let want = bcs_at(&home, &["list", "--all", "--json"], "")
        .ok()
        .to_owned();
    let cat = home.join("sessions/.catalog");
    assert!(cat.is_file());
    std::fs::remove_file(&cat).expect("rm catalog");
    fs.remount("ro");
    let r = bcs_at(&home, &["list", "--all", "--json"], "");
    assert_eq!(r.ok(), want);
    assert!(!cat.exists(), "nothing written on a read-only file system");
    fs.remount("rw");
    assert_eq!(bcs_at(&home, &["list", "--all", "--json"], "").ok(), want);
    assert!(cat.is_file(), "written once writable");
}

/// A journal under a file name that is not UTF-8 (so never a session id) is not
/// listed under a mangled name; `verify --all` reports it with its real path.
#[test]
fn non_utf8_file_names_are_never_mangled_into_sessions() {
    use std::os::unix::ffi::OsStrExt;
    let b = one_session();
    let odd = b
        .sessions()
        .join(std::ffi::OsStr::from_bytes(b"\xff\xfe.jsonl"));
    std::fs::copy(b.sessions().join("s1.jsonl"), &odd).expect("copy");
    let listed = b.run(&["list", "--all", "--json"]).json();
    let paths: Vec<&str> = listed
        .as_array()
        .expect("array")
        .iter()
        .map(|s| s["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths.len(), 1, "{listed}");
    assert!(paths[0].ends_with("/s1.jsonl"), "{listed}");
    let v = b.run(&["verify", "--all", "--json"]);
    let out: serde_json::Value = serde_json::from_str(&v.stdout).expect("json");
    let reported: Vec<String> = out
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["path"].as_str().expect("path").to_owned())
        .collect();
    assert_eq!(reported.len(), 2, "{out}");
    assert_eq!(out[1]["status"], "corrupt", "{out}");
}
