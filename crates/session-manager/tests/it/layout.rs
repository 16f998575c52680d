//! Environment variables, layout and session-id validation.

use std::ffi::OsString;
use std::path::PathBuf;

use session_manager::{Layout, LayoutError, NewSessionOptions, OpenError, SafeSessionId};

use crate::support::store;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let pairs: Vec<(String, String)> = pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| OsString::from(v))
    }
}

#[test]
fn home_defaults_to_dot_base_context() {
    let l = Layout::from_vars(vars(&[]), Some(PathBuf::from("/home/u"))).expect("layout");
    assert_eq!(l.root(), PathBuf::from("/home/u/.base-context"));
    assert_eq!(
        l.sessions_dir(),
        PathBuf::from("/home/u/.base-context/sessions")
    );
}

#[test]
fn base_context_home_selects_the_root() {
    let l = Layout::from_vars(vars(&[("BASE_CONTEXT_HOME", "/data/bc")]), None).expect("layout");
    assert_eq!(l.sessions_dir(), PathBuf::from("/data/bc/sessions"));
    let id = SafeSessionId::new("abc").expect("safe");
    assert_eq!(
        l.journal_path(&id),
        PathBuf::from("/data/bc/sessions/abc.jsonl")
    );
    assert_eq!(
        l.artifact_dir(&id),
        PathBuf::from("/data/bc/session-artifacts/abc")
    );
}

#[test]
fn session_dir_variable_must_be_absolute() {
    let l = Layout::from_vars(
        vars(&[
            ("BASE_CONTEXT_HOME", "/data/bc"),
            ("BASE_CONTEXT_SESSION_DIR", "/elsewhere/s"),
        ]),
        None,
    )
    .expect("layout");
    assert_eq!(l.sessions_dir(), PathBuf::from("/elsewhere/s"));
    assert_eq!(l.root(), PathBuf::from("/data/bc"));
    let err = Layout::from_vars(
        vars(&[("BASE_CONTEXT_SESSION_DIR", "rel/s")]),
        Some("/h".into()),
    )
    .expect_err("relative refused");
    assert!(matches!(err, LayoutError::RelativeSessionDir { .. }));
    assert_eq!(
        err.to_string(),
        "BASE_CONTEXT_SESSION_DIR must be an absolute path, found `rel/s`"
    );
    assert!(
        Layout::with_root("/r")
            .expect("absolute root")
            .with_session_dir("rel")
            .is_err()
    );
    assert!(matches!(
        Layout::with_root("rel/root"),
        Err(LayoutError::RelativeRoot { .. })
    ));
    assert!(matches!(
        Layout::from_vars(vars(&[("BASE_CONTEXT_HOME", "rel")]), None),
        Err(LayoutError::RelativeHome { .. })
    ));
}

#[test]
fn unsafe_session_ids_are_refused() {
    for bad in [
        "a/b",
        "..",
        ".",
        "../x",
        "a\0b",
        "",
        ".hidden",
        "a\\b",
        &"x".repeat(129),
    ] {
        assert!(SafeSessionId::new(bad).is_err(), "{bad:?} must be refused");
    }
    let (_d, store) = store();
    for bad in ["a/b", "..", "a\0b"] {
        let err = store
            .create_with("/w", NewSessionOptions::with_id(bad))
            .expect_err("refused");
        assert!(matches!(err, OpenError::InvalidId(_)), "{err}");
    }
    assert!(store.delete_id("../x").is_err());
    assert!(store.open_id("a/b").is_err());
}

#[cfg(unix)]
#[test]
fn files_are_0600_and_directories_0700() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, store) = store();
    let mut s = store.create("/w").expect("create");
    s.append_thinking_level_change("high").expect("append");
    let art = s.session_artifact_dir().expect("artifact dir");
    let journal = s.session_file().expect("file").to_path_buf();
    drop(s);
    store.list_all(&mut ()).expect("list");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&journal), 0o600, "journal");
    let side = session_index::sidecar_path(&journal);
    assert_eq!(mode(&side), 0o600, "index sidecar");
    assert_eq!(
        mode(&session_journal::lock::lock_path(&journal)),
        0o600,
        "lock file"
    );
    assert_eq!(
        mode(&store.layout().sessions_dir().join(".catalog")),
        0o600,
        "catalog"
    );
    assert_eq!(mode(store.layout().sessions_dir()), 0o700, "sessions dir");
    assert_eq!(mode(&art), 0o700, "artifact dir");
    assert_eq!(
        mode(&dir.path().join("session-artifacts")),
        0o700,
        "artifacts root"
    );
}
