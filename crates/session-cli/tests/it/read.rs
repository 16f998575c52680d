//! `list`, `show`, `tree`, `context`: human and JSON snapshots, error paths, and
//! that reading never writes.

use crate::support::{Bcs, pretty};

fn store() -> (Bcs, String, String) {
    let b = Bcs::new();
    let rich = b.import("legacy/v2-hookmessage.jsonl");
    let labels = b.import("edge/labels-names-roots.jsonl");
    (b, rich, labels)
}

/// Every file under `dir` with its length and bytes hash, sorted.
fn snapshot_dir(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir") {
        let p = e.expect("entry").path();
        if p.is_file() {
            out.push((
                p.to_string_lossy().into_owned(),
                std::fs::read(&p).expect("read"),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn list_human_and_json() {
    let (b, _, _) = store();
    let human = b.run(&["list", "--all"]);
    insta::assert_snapshot!("list_human", b.redact(human.ok()));
    let json = b.run(&["list", "--all", "--json"]).json();
    insta::assert_snapshot!("list_json", b.redact(&pretty(&json)));
    // --cwd filters by the header's cwd; the default is the current directory.
    let cwd = b.run(&["list", "--cwd", "/home/dev/edge", "--json"]).json();
    assert_eq!(cwd.as_array().map(Vec::len), Some(1));
    assert_eq!(b.run(&["list"]).ok(), "no sessions\n");
}

#[test]
fn show_human_and_json() {
    let (b, rich, _) = store();
    insta::assert_snapshot!("show_human", b.redact(b.run(&["show", &rich]).ok()));
    let v = b.run(&["show", &rich, "--json"]).json();
    insta::assert_snapshot!("show_json", b.redact(&pretty(&v)));
}

#[test]
fn tree_human_and_json() {
    let (b, _, labels) = store();
    insta::assert_snapshot!("tree_human", b.run(&["tree", &labels]).ok());
    let v = b.run(&["tree", &labels, "--json"]).json();
    insta::assert_snapshot!("tree_json", pretty(&v));
}

#[test]
fn context_human_and_json_and_leaf() {
    let (b, rich, _) = store();
    insta::assert_snapshot!("context_human", b.run(&["context", &rich]).ok());
    let v = b.run(&["context", &rich, "--json"]).json();
    insta::assert_snapshot!("context_json", pretty(&v));
    let at = b
        .run(&["context", &rich, "--leaf", "e0000103", "--json"])
        .json();
    assert_eq!(at["messages"].as_array().map(Vec::len), Some(2));
    let err = b.run(&["context", &rich, "--leaf", "nope"]);
    assert!(
        err.fails(1).contains("no entry with id \"nope\""),
        "{}",
        err.stderr
    );
}

#[test]
fn session_argument_forms_and_errors() {
    let (b, rich, labels) = store();
    // id, unique prefix, path
    let by_id = b.run(&["tree", &rich, "--json"]).json();
    assert_eq!(b.run(&["tree", &rich[..6], "--json"]).json(), by_id);
    let path = b.sessions().join(format!("{rich}.jsonl"));
    assert_eq!(
        b.run(&["tree", path.to_str().expect("utf-8"), "--json"])
            .json(),
        by_id
    );
    // ambiguous prefix: both ids start with "019"
    assert!(rich.starts_with("019") && labels.starts_with("019"));
    let amb = b.run(&["show", "019"]);
    let mut errors = vec![b.redact(amb.fails(1))];
    errors.push(b.redact(b.run(&["show", "zzz"]).fails(1)));
    errors.push(b.redact(b.run(&["tree", "/no/such/file.jsonl"]).fails(1)));
    insta::assert_snapshot!("session_argument_errors", errors.concat());
}

#[test]
fn reading_commands_modify_nothing() {
    let (b, rich, _) = store();
    // Delete the sidecars so a writing open would have something to save.
    for e in std::fs::read_dir(b.sessions()).expect("dir") {
        let p = e.expect("entry").path();
        if p.to_string_lossy().ends_with(".idx") {
            std::fs::remove_file(p).expect("rm idx");
        }
    }
    let before = snapshot_dir(&b.sessions());
    for args in [
        vec!["show", &rich],
        vec!["tree", &rich, "--json"],
        vec!["context", &rich, "--json"],
        vec!["verify", "--all"],
        vec!["export", &rich],
    ] {
        let _ = b.run(&args);
    }
    assert_eq!(snapshot_dir(&b.sessions()), before);
}

/// `bcs list` refreshes the listing catalog (derived data only: the journals are
/// untouched), privately, and lists the same from it afterwards; an agent status
/// and a lifecycle state show in the human listing, never in `--json` (the
/// reference's `SessionInfo` shape).
#[test]
fn list_refreshes_the_catalog_and_shows_state_and_status() {
    let (b, rich, _) = store();
    let journals = |d: &std::path::Path| -> Vec<(String, Vec<u8>)> {
        snapshot_dir(d)
            .into_iter()
            .filter(|(p, _)| p.ends_with(".jsonl") && !p.contains("/."))
            .collect()
    };
    let before = journals(&b.sessions());
    let cat = b.sessions().join(".catalog");
    let _ = std::fs::remove_file(&cat);
    let first = b.run(&["list", "--all", "--json"]).ok().to_owned();
    assert!(cat.is_file(), "bcs list wrote the catalog");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&cat)
            .expect("catalog")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(journals(&b.sessions()), before);
    assert_eq!(b.run(&["list", "--all", "--json"]).ok(), first);
    let entries = [
        r#"{"type":"session_state","state":"archived"}"#,
        r#"{"type":"agent_status","status":{"summary":"waiting for review","taskState":"blocked"}}"#,
    ];
    b.run_stdin(
        &["append", &rich],
        &format!("{}\n{}\n", entries[0], entries[1]),
    )
    .ok();
    let human = b.run(&["list", "--all"]).ok().to_owned();
    let line = human.lines().find(|l| l.contains(&rich)).expect("listed");
    assert!(
        line.ends_with("  (archived)  status: [blocked] waiting for review"),
        "{line}"
    );
    let json = b.run(&["list", "--all", "--json"]).json();
    let text = json.to_string();
    assert!(!text.contains("archived") && !text.contains("waiting for review"));
}

/// `--json` numbers are spelled as the reference's `JSON.stringify` spells them:
/// `bcs context --json` on entries holding `1.0`, `-0.0`, `1e-7`,
/// `12345678901234567890` (and more) prints node's bytes
/// (`tests/data/numbers.context.json`, written by `tests/data/numbers.mjs`).
#[test]
fn context_json_numbers_are_json_stringify_bytes() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let b = Bcs::new();
    let src = b.home().join("sources/numbers.jsonl");
    std::fs::create_dir_all(src.parent().expect("dir")).expect("mkdir");
    std::fs::copy(data.join("numbers.jsonl"), &src).expect("copy");
    let imported = b
        .run(&["import", "--json", src.to_str().expect("utf-8")])
        .json();
    let id = imported["sessionId"]
        .as_str()
        .expect("session id")
        .to_owned();
    let want = std::fs::read_to_string(data.join("numbers.context.json")).expect("oracle");
    assert_eq!(b.run(&["context", &id, "--json"]).ok(), want);
}
