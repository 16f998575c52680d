//! Argument parsing: usage errors exit 2 with one `bcs: ` line; help exits 0.

use crate::support::Bcs;

#[test]
fn usage_errors_exit_2_with_one_line() {
    let b = Bcs::new();
    let cases: &[&[&str]] = &[
        &["frobnicate"],
        &["list", "--all", "--cwd", "/x"],
        &["verify"],
        &["verify", "abc", "--all"],
        &["tree"],
        &["import"],
        &["show", "x", "--bogus"],
    ];
    let mut shown = Vec::new();
    for args in cases {
        let r = b.run(args);
        let err = r.fails(2);
        assert_eq!(err.lines().count(), 1, "{err}");
        shown.push(format!("{}: {}", args.join(" "), err.trim_end()));
    }
    insta::assert_snapshot!(shown.join("\n"));
}

#[test]
fn help_and_version_exit_0() {
    let b = Bcs::new();
    let r = b.run(&["--help"]);
    assert!(r.ok().contains("Usage: bcs"));
    for sub in [
        "new", "append", "list", "show", "tree", "context", "import", "export", "verify", "rm",
        "demo",
    ] {
        assert!(r.stdout.contains(sub), "help lists {sub}");
    }
    assert!(b.run(&["--version"]).ok().starts_with("bcs "));
}

#[test]
fn relative_env_session_dir_is_an_error() {
    let b = Bcs::new();
    let out = std::process::Command::new(crate::support::bin())
        .arg("list")
        .env("BASE_CONTEXT_HOME", b.home())
        .env("BASE_CONTEXT_SESSION_DIR", "relative/dir")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("bcs: BASE_CONTEXT_SESSION_DIR must be an absolute path"),
        "{err}"
    );
}

#[test]
fn env_home_and_session_dir_options_select_the_store() {
    let b = Bcs::new();
    let id = b.import("legacy/v3-control.jsonl");
    // BASE_CONTEXT_HOME alone finds the imported session.
    let out = std::process::Command::new(crate::support::bin())
        .args(["show", &id[..8]])
        .env("BASE_CONTEXT_HOME", b.home())
        .env_remove("BASE_CONTEXT_SESSION_DIR")
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --session-dir elsewhere: nothing there.
    let other = tempfile::tempdir().expect("tempdir");
    let r = b.run(&[
        "--session-dir",
        other.path().to_str().expect("utf-8"),
        "list",
        "--all",
    ]);
    assert_eq!(r.ok(), "no sessions\n");
}
