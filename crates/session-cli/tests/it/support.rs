//! The harness: a temp `--home` per test, the built binary, output redaction.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// The built binary.
pub(crate) fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bcs")
}

/// The workspace root.
pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The golden corpus directory.
pub(crate) fn fixtures() -> PathBuf {
    repo_root().join("tests/fixtures")
}

/// One finished run.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    /// Asserts success and returns stdout.
    #[track_caller]
    pub(crate) fn ok(&self) -> &str {
        assert_eq!(
            self.code, 0,
            "expected success, stderr: {}\nstdout: {}",
            self.stderr, self.stdout
        );
        &self.stdout
    }

    /// Asserts exit code `code`, a single `bcs: ` error line (plus warnings), no panic.
    #[track_caller]
    pub(crate) fn fails(&self, code: i32) -> &str {
        assert_eq!(
            self.code, code,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "panic: {}", self.stderr);
        assert!(
            self.stderr.starts_with("bcs: "),
            "stderr: {:?}",
            self.stderr
        );
        for l in self.stderr.lines() {
            assert!(
                l.starts_with("bcs: "),
                "every stderr line starts with `bcs: `: {l:?}"
            );
        }
        &self.stderr
    }

    /// stdout parsed as one JSON value.
    #[track_caller]
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(self.ok()).unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
    }
}

/// A store in a temp dir.
pub(crate) struct Bcs {
    pub(crate) home: tempfile::TempDir,
}

impl Bcs {
    pub(crate) fn new() -> Self {
        Bcs {
            home: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    pub(crate) fn sessions(&self) -> PathBuf {
        self.home().join("sessions")
    }

    /// `bcs --home HOME ARGS…`, environment cleaned, run in the home dir.
    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.arg("--home").arg(self.home());
        c.args(args);
        c.env_remove("BASE_CONTEXT_HOME")
            .env_remove("BASE_CONTEXT_SESSION_DIR");
        c.current_dir(self.home());
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_stdin(args, "")
    }

    pub(crate) fn run_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn bcs");
        let mut input = child.stdin.take().expect("stdin");
        // The process may exit before reading (e.g. a lock error): ignore EPIPE.
        let _ = input.write_all(stdin.as_bytes());
        drop(input);
        Run::from(child.wait_with_output().expect("wait"))
    }

    /// Imports a fixture (`legacy/NAME.jsonl`) and returns its session id.
    ///
    /// The fixture is copied into the temp home first: an import records its
    /// source's absolute path, so importing from the checkout would make journal
    /// sizes (and snapshots of them) depend on where the repository lives.
    pub(crate) fn import(&self, fixture: &str) -> String {
        let path = self.home().join("sources").join(fixture);
        std::fs::create_dir_all(path.parent().expect("fixture has a directory")).expect("mkdir");
        std::fs::copy(fixtures().join(fixture), &path).expect("copy fixture");
        let out = self.run(&["import", "--json", path.to_str().expect("utf-8")]);
        let v: Value = serde_json::from_str(out.ok().trim()).expect("import json");
        v["sessionId"].as_str().expect("session id").to_owned()
    }

    /// Replaces the temp home and the fixtures dir with placeholders.
    pub(crate) fn redact(&self, s: &str) -> String {
        s.replace(&self.home().to_string_lossy().into_owned(), "[HOME]")
            .replace(&fixtures().to_string_lossy().into_owned(), "[FIXTURES]")
    }
}

/// `bcs serve` (never idle-exiting), once bound; killed and reaped when dropped.
pub(crate) struct Serving(Child);

impl Serving {
    pub(crate) fn start(bcs: &Bcs) -> Serving {
        let mut child = bcs
            .cmd(&["serve", "--idle-timeout", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn bcs serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the socket path");
        assert!(line.ends_with("owner.sock\n"), "{line:?}");
        Serving(child)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Pretty JSON for snapshots.
pub(crate) fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("json")
}
