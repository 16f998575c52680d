//! Multi-process tests: the test binary re-runs itself as a child (selected by an
//! environment variable) so that real processes race for the lock and really crash.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use session_manager::{Layout, OpenError, Store};

const ROLE: &str = "SESSION_MANAGER_TEST_ROLE";
const PATH: &str = "SESSION_MANAGER_TEST_PATH";

fn spawn(test: &str, role: &str, path: &Path) -> (Child, BufReader<ChildStdout>) {
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(PATH, path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    (child, out)
}

/// The child's `RESULT ...` text (libtest prints its own text around it, on the same
/// line too).
fn result_line(out: &mut BufReader<ChildStdout>) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).expect("read child") == 0 {
            return "EOF".into();
        }
        if let Some(at) = line.find("RESULT ") {
            return line[at + "RESULT ".len()..].trim().to_owned();
        }
    }
}

fn store_of(root: &Path) -> Store {
    Store::new(Layout::with_root(root).expect("absolute root"))
}

fn child_role() -> Option<(String, PathBuf)> {
    let role = std::env::var(ROLE).ok()?;
    let path = PathBuf::from(std::env::var_os(PATH)?);
    Some((role, path))
}

/// Child side: wait until the parent closes our stdin.
fn wait_for_parent() {
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
}

#[test]
fn eight_processes_race_to_own_one_session() {
    if let Some((role, path)) = child_role() {
        if role != "race" {
            return;
        }
        let root = path.parent().and_then(Path::parent).expect("root");
        match store_of(root).open(&path) {
            Ok(s) => {
                println!("RESULT owned");
                std::io::stdout().flush().expect("flush");
                wait_for_parent();
                drop(s);
            }
            Err(OpenError::Locked { holder, .. }) => {
                println!("RESULT locked {}", holder.pid.unwrap_or(0));
            }
            Err(e) => println!("RESULT error {e}"),
        }
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let store = store_of(dir.path());
    let mut s = store.create("/race").expect("create");
    s.append_thinking_level_change("high").expect("append");
    let path = s.session_file().expect("file").to_path_buf();
    drop(s);
    let mut children: Vec<_> = (0..8)
        .map(|_| {
            spawn(
                "process::eight_processes_race_to_own_one_session",
                "race",
                &path,
            )
        })
        .collect();
    let results: Vec<String> = children
        .iter_mut()
        .map(|(_, out)| result_line(out))
        .collect();
    let owners: Vec<usize> = (0..8).filter(|i| results[*i] == "owned").collect();
    assert_eq!(owners.len(), 1, "exactly one owner: {results:?}");
    let owner_pid = children[owners[0]].0.id();
    for (i, r) in results.iter().enumerate() {
        if i != owners[0] {
            // A loser that races the winner between its lock and its holder record
            // sees an empty record (pid 0 here); any pid it names is the winner's.
            assert!(
                r == &format!("locked {owner_pid}") || r == "locked 0",
                "the lock error names the holder: {r}"
            );
        }
    }
    // While it is owned: a read-only open works, a write open and delete are refused.
    let view = store.open_read_only(&path).expect("read-only while owned");
    assert_eq!(view.get_entries().len(), 1);
    match store.open(&path) {
        Err(OpenError::Locked { holder, .. }) => assert_eq!(holder.pid, Some(owner_pid)),
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(matches!(store.delete(&path), Err(OpenError::Locked { .. })));
    assert!(path.exists());
    for (mut child, _) in children {
        drop(child.stdin.take());
        child.wait().expect("child exits");
    }
    store.delete(&path).expect("delete once released");
}

#[test]
fn a_crash_right_after_create_leaves_an_openable_session() {
    if let Some((role, path)) = child_role() {
        if role != "crash" {
            return;
        }
        let s = store_of(&path).create("/crashy").expect("create");
        println!("RESULT {}", s.session_file().expect("file").display());
        std::io::stdout().flush().expect("flush");
        wait_for_parent(); // killed here
        return;
    }
    let dir = tempfile::tempdir().expect("dir");
    let (mut child, mut out) = spawn(
        "process::a_crash_right_after_create_leaves_an_openable_session",
        "crash",
        dir.path(),
    );
    let journal = PathBuf::from(result_line(&mut out));
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let store = store_of(dir.path());
    let s = store.open(&journal).expect("openable after the crash");
    assert_eq!(s.cwd(), "/crashy");
    assert_eq!(s.header().version, Some(3));
    assert_eq!(
        journal.file_stem().and_then(|x| x.to_str()),
        Some(s.session_id())
    );
    assert_eq!(store.list("/crashy", &mut ()).expect("list").len(), 1);
}
