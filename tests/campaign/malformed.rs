//! The malformed-input corpus run through every `bcs` subcommand.
//!
//! Inputs: the committed folder `tests/campaign/malformed/` (regenerate with
//! `CAMPAIGN_REGENERATE=1`; a test checks the files equal what the generator writes),
//! plus inputs made at run time: a 2 MiB header line, JSON nested 200,000 deep in a
//! message, a directory, a symlink loop and
//! a missing path. Every per-file subcommand runs over every input; the store-level
//! ones (`list`, `verify --all`, `new`) run over a sessions directory holding a copy of
//! every input. Asserted for every run: exit code 0 or 1 (never a panic's 101 or a
//! signal), no `panicked` on stderr, every stderr line starts with `bcs: `, a failing
//! per-file run names the file, and the input is byte-identical afterwards (commands
//! that may modify or delete — `verify --repair`, `rm` — run on a copy).
//!
//! The binary: `BCS_BIN`, or `bcs` built by `cargo build -p session-cli` into this
//! test's own target directory and profile.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use session_journal::vfs::Vfs;
use session_journal::{Clock, CreateOptions, Durability, FrameKind, JournalId, Writer};
use session_testkit::sim::{SimFs, SimRng};

fn corpus_dir() -> PathBuf {
    crate::repo_root().join("tests/campaign/malformed")
}

const HEADER: &str = r#"{"type":"session","version":3,"id":"m-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
const MESSAGE: &str = r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;

/// A small native journal (id all zeros: a forged header frame stays consistent).
fn native() -> Vec<u8> {
    let fs = SimFs::new();
    let path = Path::new("/j.jsonl");
    let mut w = Writer::create(
        path,
        JournalId([0; 16]),
        CreateOptions {
            vfs: Arc::new(fs.clone()),
            clock: Clock::fixed(0),
            session_id: Some("m-1".into()),
            ..CreateOptions::default()
        },
    )
    .unwrap();
    let header = FrameKind::new(0x10).unwrap();
    let entry = FrameKind::new(0x11).unwrap();
    w.append(header, HEADER.as_bytes(), Durability::Durable)
        .unwrap();
    for _ in 0..3 {
        w.append(entry, MESSAGE.as_bytes(), Durability::Durable)
            .unwrap();
    }
    w.close().unwrap();
    fs.read_raw(path).unwrap()
}

/// The committed inputs, by file name.
fn generated() -> BTreeMap<&'static str, Vec<u8>> {
    let mut m = BTreeMap::new();
    let lines = |ls: &[&[u8]]| -> Vec<u8> {
        ls.iter()
            .flat_map(|l| l.iter().copied().chain([b'\n']))
            .collect()
    };
    m.insert("empty.jsonl", Vec::new());
    m.insert("zero-filled.jsonl", vec![0u8; 4096]);
    let mut random = vec![0u8; 4096];
    SimRng::new(0x0BAD_F00D).fill(&mut random);
    m.insert("random-bytes.jsonl", random);
    m.insert(
        "legacy-garbage.jsonl",
        lines(&[
            HEADER.as_bytes(),
            MESSAGE.as_bytes(),
            b"{\"type\":\"message\",\"id\":\"b\",",
            b"\xff\xfe\x00garbage",
            b"[1,2,3]",
            b"}{",
            b"\"just a string\"",
            br#"{"type":"label","id":"c","parentId":"a1","targetId":"zz","label":{}}"#,
        ]),
    );
    m.insert(
        "lone-surrogates.jsonl",
        lines(&[
            HEADER.as_bytes(),
            br#"{"type":"message","id":"\ud800","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"a\udc00b","timestamp":1}}"#,
            br#"{"type":"label","id":"l\udfff","parentId":"\ud800","timestamp":"2025-01-01T00:00:02.000Z","targetId":"\ud800","label":"\ud83d"}"#,
        ]),
    );
    m.insert(
        "nul-byte.jsonl",
        lines(&[
            HEADER.as_bytes(),
            b"{\"type\":\"message\",\"id\":\"n\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"a\x00b\"}}",
            b"\x00\x00\x00",
        ]),
    );
    m.insert(
        "legacy-future-version.jsonl",
        lines(&[
            br#"{"type":"session","version":4,"id":"m-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
            MESSAGE.as_bytes(),
        ]),
    );
    m.insert("no-header.jsonl", lines(&[MESSAGE.as_bytes()]));
    let journal = native();
    m.insert("journal-signature-only.jsonl", journal[..8].to_vec());
    m.insert(
        "journal-truncated.jsonl",
        journal[..journal.len() - 37].to_vec(),
    );
    let mut cut_header = journal.clone();
    cut_header.truncate(40);
    m.insert("journal-truncated-header.jsonl", cut_header);
    let mut zero_tail = journal[..journal.len() - 200].to_vec();
    zero_tail.resize(journal.len() + 4096, 0);
    m.insert("journal-zero-tail.jsonl", zero_tail);
    // A flipped bit in the second entry, with a later frame proving it durable.
    let mut corrupt = journal.clone();
    let reader = session_journal::Reader::open(
        Path::new("/j.jsonl"),
        session_journal::ReaderOptions {
            vfs: {
                let fs = SimFs::new();
                fs.write_raw(Path::new("/j.jsonl"), &journal);
                Arc::new(fs) as Arc<dyn Vfs>
            },
        },
    )
    .unwrap();
    let offsets: Vec<u64> = reader
        .frames(None)
        .map(|f| f.unwrap().info.offset.0)
        .collect();
    corrupt[offsets[2] as usize + 80] ^= 4;
    m.insert("journal-corrupt-middle.jsonl", corrupt);
    // The next format version (3) in a header frame with valid checks.
    let data_start = reader.data_start().0 as usize;
    let payload = &journal[8 + 64..data_start];
    let end = payload.iter().rposition(|b| *b == b'}').unwrap() + 1;
    let text = std::str::from_utf8(&payload[..end]).unwrap();
    let version = session_journal::format::FORMAT_VERSION;
    let now = format!(r#""format_version":{version}"#);
    assert!(text.contains(&now), "{text}");
    let text = text.replace(&now, &format!(r#""format_version":{}"#, version + 1));
    let frame = session_testkit::fuzz::forge_frame(JournalId([0; 16]), 8, 1, 0, 0, text.as_bytes());
    assert_eq!(frame.len(), data_start - 8);
    let mut future = journal.clone();
    future[8..data_start].copy_from_slice(&frame);
    m.insert("journal-future-version.jsonl", future);
    let mut cat = journal.clone();
    cat.extend_from_slice(&journal);
    m.insert("journal-concatenated.jsonl", cat);
    m
}

#[test]
fn committed_corpus_matches_its_generator() {
    let want = generated();
    let dir = corpus_dir();
    if std::env::var_os("CAMPAIGN_REGENERATE").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in &want {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    for (name, bytes) in &want {
        let got = std::fs::read(dir.join(name))
            .unwrap_or_else(|e| panic!("{name}: {e} (CAMPAIGN_REGENERATE=1 writes it)"));
        assert_eq!(&got, bytes, "{name} differs from its generator");
    }
}

/// The `bcs` binary.
fn bcs() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(p) = std::env::var_os("BCS_BIN") {
            return PathBuf::from(p);
        }
        let exe = std::env::current_exe().unwrap();
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lives in <target>/<profile>/deps");
        let target = profile.parent().expect("<target>");
        let mut c = Command::new(env!("CARGO"));
        c.args([
            "build",
            "-q",
            "-p",
            "session-cli",
            "--bin",
            "bcs",
            "--target-dir",
        ])
        .arg(target)
        .current_dir(crate::repo_root());
        if profile.file_name().is_some_and(|n| n == "release") {
            c.arg("--release");
        }
        let status = c.status().expect("run cargo");
        assert!(
            status.success(),
            "building bcs failed (set BCS_BIN to a built binary to skip the build)"
        );
        let bin = profile.join("bcs");
        assert!(bin.is_file(), "{} missing after the build", bin.display());
        bin
    })
}

struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `bcs --home HOME args…` with `stdin`, killed after two minutes.
fn run(home: &Path, args: &[&str], stdin: &str) -> Outcome {
    let mut child = Command::new(bcs())
        .arg("--home")
        .arg(home)
        .args(args)
        .env_remove("BASE_CONTEXT_HOME")
        .env_remove("BASE_CONTEXT_SESSION_DIR")
        .current_dir(home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(out) => {
            let out = out.unwrap();
            Outcome {
                code: out.status.code(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        }
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("bcs {args:?} hung for two minutes");
        }
    }
}

/// Every input path: copies of the committed corpus in `scratch`, then the run-time
/// ones.
fn inputs(scratch: &Path) -> Vec<(String, PathBuf)> {
    let mut v: Vec<(String, PathBuf)> = generated()
        .keys()
        .map(|n| {
            let p = scratch.join(n);
            std::fs::copy(corpus_dir().join(n), &p).unwrap();
            (n.to_string(), p)
        })
        .collect();
    let huge = scratch.join("huge-line-header.jsonl");
    let mut text = String::from(r#"{"type":"session","version":3,"id":"h","cwd":""#);
    text.push_str(&"x".repeat(2 << 20));
    text.push_str("\"}\n");
    text.push_str(MESSAGE);
    std::fs::write(&huge, text).unwrap();
    v.push(("huge-line-header.jsonl".into(), huge));
    // JSON nested 200,000 deep inside a message's text block (valid JSON; it once
    // overflowed the listing's stack).
    let deep = scratch.join("deep-nesting.jsonl");
    let depth = 200_000;
    let mut text = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"deep\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    );
    text.push_str("{\"type\":\"message\",\"id\":\"m1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":");
    text.push_str(&"[".repeat(depth));
    text.push_str("\"x\"");
    text.push_str(&"]".repeat(depth));
    text.push_str("}],\"timestamp\":1}}\n");
    std::fs::write(&deep, text).unwrap();
    v.push(("deep-nesting.jsonl".into(), deep));
    let dir = scratch.join("directory.jsonl");
    std::fs::create_dir_all(&dir).unwrap();
    v.push(("directory.jsonl".into(), dir));
    #[cfg(unix)]
    {
        let l = scratch.join("loop.jsonl");
        let _ = std::os::unix::fs::symlink(&l, &l);
        v.push(("loop.jsonl".into(), l));
    }
    v.push(("missing.jsonl".into(), scratch.join("missing.jsonl")));
    v
}

fn snapshot(p: &Path) -> Option<Vec<u8>> {
    std::fs::read(p).ok()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Checks one run; returns what went wrong.
fn judge(o: &Outcome, name: &str, per_file: bool) -> Option<String> {
    match o.code {
        Some(0) => {}
        Some(1) => {
            // `verify` reports what it found on stdout (naming the session by the
            // file's stem) and exits 1.
            let stem = name.strip_suffix(".jsonl").unwrap_or(name);
            if per_file && !o.stderr.contains(stem) && !o.stdout.contains(stem) {
                return Some(format!("error does not name the file: {:?}", o.stderr));
            }
        }
        c => return Some(format!("exit {c:?}: {}", o.stderr)),
    }
    if o.stderr.contains("panicked") {
        return Some(format!("panic: {}", o.stderr));
    }
    if let Some(l) = o.stderr.lines().find(|l| !l.starts_with("bcs: ")) {
        return Some(format!("stderr line without `bcs: `: {l:?}"));
    }
    if o.code == Some(1) && o.stderr.is_empty() && o.stdout.is_empty() {
        return Some("exit 1 without a message".into());
    }
    None
}

#[test]
fn every_subcommand_survives_every_malformed_input() {
    let home = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let input_dir = tempfile::tempdir().unwrap();
    let home = home.path();
    let mut failures = Vec::new();
    let mut table: BTreeMap<String, String> = BTreeMap::new();
    let out = scratch.path().join("out.jsonl");
    let all_inputs = inputs(input_dir.path());
    let stdin = format!("{}\n", r#"{"role":"user","content":"x","timestamp":1}"#);
    for (name, path) in all_inputs {
        let p = path.to_str().unwrap().to_owned();
        let before = snapshot(&path);
        let o = out.to_str().unwrap();
        let cmds: Vec<Vec<&str>> = vec![
            vec!["show", &p],
            vec!["show", &p, "--json"],
            vec!["tree", &p],
            vec!["tree", &p, "--json"],
            vec!["context", &p],
            vec!["context", &p, "--json"],
            vec!["export", &p],
            vec!["export", &p, "-o", o],
            vec!["verify", &p],
            vec!["verify", &p, "--json"],
            vec!["import", &p],
            vec!["import", &p, "--json"],
        ];
        let mut codes = Vec::new();
        let mut files = listing(input_dir.path());
        for args in &cmds {
            let r = run(home, args, &stdin);
            codes.push(format!(
                "{}={}",
                args[0],
                r.code.map_or("-".into(), |c| c.to_string())
            ));
            if let Some(why) = judge(&r, &name, true) {
                failures.push(format!("bcs {} {name}: {why}", args[0]));
            }
            if snapshot(&path) != before {
                failures.push(format!("bcs {} modified {name}", args[0]));
            }
            if listing(input_dir.path()) != files {
                failures.push(format!("bcs {} {name}: left files next to it", args[0]));
                files = listing(input_dir.path());
            }
        }
        if before.is_none() {
            let r = run(home, &["append", &p], &stdin);
            codes.push(format!(
                "append={}",
                r.code.map_or("-".into(), |c| c.to_string())
            ));
            if let Some(why) = judge(&r, &name, true) {
                failures.push(format!("bcs append {name}: {why}"));
            }
            if snapshot(&path).is_some() {
                failures.push(format!("bcs append created {name}"));
            }
        }
        // Commands that may modify or delete (`append` recovers a torn tail, then
        // appends): on a copy.
        if let Some(bytes) = &before {
            for cmd in [&["append"][..], &["verify", "--repair"][..], &["rm"][..]] {
                let copy = scratch.path().join(format!("copy-{name}"));
                std::fs::write(&copy, bytes).unwrap();
                let c = copy.to_str().unwrap();
                let mut args = vec![cmd[0], c];
                args.extend(&cmd[1..]);
                let r = run(home, &args, "");
                codes.push(format!(
                    "{}={}",
                    cmd.join(" "),
                    r.code.map_or("-".into(), |c| c.to_string())
                ));
                if let Some(why) = judge(&r, &format!("copy-{name}"), true) {
                    failures.push(format!("bcs {} {name}: {why}", cmd.join(" ")));
                }
                let _ = std::fs::remove_file(&copy);
            }
        }
        table.insert(name, codes.join(" "));
    }
    // Store-level commands over a sessions directory holding every input.
    let store = tempfile::tempdir().unwrap();
    let sessions = store.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    for (name, path) in inputs(scratch.path()) {
        if let Some(bytes) = snapshot(&path) {
            std::fs::write(sessions.join(&name), bytes).unwrap();
            std::fs::write(sessions.join(format!("{name}.idx")), b"\x89BCSIDX\ngarbage").unwrap();
        }
    }
    std::fs::write(sessions.join(".catalog"), b"garbage").unwrap();
    for args in [
        &["list", "--all"][..],
        &["list", "--all", "--json"][..],
        &["list", "--cwd", "/w"][..],
        &["verify", "--all"][..],
        &["verify", "--all", "--json"][..],
        &["new", "--id", "fresh", "--cwd", "/w"][..],
    ] {
        let r = run(store.path(), args, "");
        table.insert(
            format!("(store) {}", args.join(" ")),
            r.code.map_or("-".into(), |c| c.to_string()),
        );
        if let Some(why) = judge(&r, "", false) {
            failures.push(format!("bcs {}: {why}", args.join(" ")));
        }
    }
    for (k, v) in &table {
        eprintln!("{k}: {v}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Finding 3 of the campaign (fixed): `bcs rm PATH` deleted any file whose name ends in
/// `.jsonl` — a legacy session awaiting import, random bytes — with exit 0.
/// `Store::delete` now refuses anything whose bytes are not a journal's.
#[test]
fn rm_refuses_files_that_are_not_session_journals() {
    let home = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let mut deleted = Vec::new();
    // An empty file is removable (it holds nothing, and a `create` that crashed
    // before writing leaves one); anything with bytes that are not a journal's is not.
    for name in ["legacy-garbage.jsonl", "random-bytes.jsonl"] {
        let copy = scratch.path().join(name);
        std::fs::copy(corpus_dir().join(name), &copy).unwrap();
        let r = run(home.path(), &["rm", copy.to_str().unwrap()], "");
        if r.code != Some(1) || !copy.exists() {
            deleted.push(format!(
                "{name}: exit {:?}, exists {}",
                r.code,
                copy.exists()
            ));
        }
    }
    let legacy = scratch.path().join("v3-control.jsonl");
    std::fs::copy(
        crate::repo_root().join("tests/fixtures/legacy/v3-control.jsonl"),
        &legacy,
    )
    .unwrap();
    let r = run(home.path(), &["rm", legacy.to_str().unwrap()], "");
    if r.code != Some(1) || !legacy.exists() {
        deleted.push(format!("v3-control.jsonl: exit {:?}", r.code));
    }
    assert!(
        deleted.is_empty(),
        "bcs rm deleted non-journals: {deleted:?}"
    );
}
