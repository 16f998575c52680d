//! `import` (files, directories, idempotence, refusals) and `export`.

use serde_json::Value;

use crate::support::{Bcs, fixtures};

#[test]
fn import_human_then_already_imported() {
    let b = Bcs::new();
    let src = fixtures().join("edge/malformed-lines.jsonl");
    let src = src.to_str().expect("utf-8");
    let first = b.run(&["import", src]);
    let again = b.run(&["import", src]);
    insta::assert_snapshot!(
        "import_human",
        b.redact(&format!("{}{}", first.ok(), again.ok()))
    );
}

#[test]
fn import_directory_json_lines_and_refusals() {
    let b = Bcs::new();
    // A directory tree of legacy files, as ~/.pi/agent/sessions is laid out.
    let tree = b.home().join("pi/agent/sessions");
    std::fs::create_dir_all(tree.join("--a--")).expect("mkdir");
    std::fs::create_dir_all(tree.join("--b--/deeper")).expect("mkdir");
    let copy = |name: &str, to: &str| {
        std::fs::copy(fixtures().join(name), tree.join(to)).expect("copy");
    };
    copy("legacy/v3-control.jsonl", "--a--/one.jsonl");
    copy("legacy/v1-linear.jsonl", "--b--/two.jsonl");
    copy("edge/empty-file.jsonl", "--b--/deeper/empty.jsonl");
    std::fs::write(tree.join("--a--/notes.txt"), "not a session").expect("write");
    let r = b.run(&["import", "--json", tree.to_str().expect("utf-8")]);
    assert_eq!(r.code, 1, "a refused source makes the exit code 1");
    let lines: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 3);
    for l in &lines {
        for key in [
            "source",
            "sessionId",
            "entries",
            "alreadyImported",
            "warnings",
        ] {
            assert!(l.get(key).is_some(), "{key} in {l}");
        }
    }
    insta::assert_snapshot!("import_json", b.redact(&r.stdout));
    assert!(r.stderr.starts_with("bcs: import of "), "{}", r.stderr);
    assert!(r.stderr.contains("empty.jsonl"), "{}", r.stderr);
}

#[test]
fn import_of_a_missing_path_fails() {
    let b = Bcs::new();
    let r = b.run(&["import", "/no/such/dir"]);
    insta::assert_snapshot!(r.fails(1));
    let empty = b.home().join("empty-dir");
    std::fs::create_dir(&empty).expect("mkdir");
    let r = b.run(&["import", empty.to_str().expect("utf-8")]);
    assert!(r.fails(1).contains("no *.jsonl file found"), "{}", r.stderr);
}

#[test]
fn export_to_stdout_and_to_a_file() {
    let b = Bcs::new();
    let id = b.import("legacy/v3-control.jsonl");
    let out = b.run(&["export", &id]);
    // v3-sourced records come out byte for byte.
    let source = std::fs::read_to_string(fixtures().join("legacy/v3-control.jsonl")).expect("read");
    assert_eq!(out.ok(), source);
    let file = b.home().join("out.jsonl");
    b.run(&["export", &id, "-o", file.to_str().expect("utf-8")])
        .ok();
    assert_eq!(std::fs::read_to_string(&file).expect("read"), source);
    let err = b.run(&["export", "nope"]);
    assert!(
        err.fails(1).contains("no session \"nope\""),
        "{}",
        err.stderr
    );
}

/// Several `bcs import` processes of one file at once: all succeed, one journal.
#[test]
fn concurrent_import_processes_of_one_file_converge() {
    let bcs = Bcs::new();
    let src = bcs.home().join("src.jsonl");
    std::fs::copy(fixtures().join("legacy/v2-hookmessage.jsonl"), &src).unwrap();
    let children: Vec<_> = (0..6)
        .map(|_| {
            bcs.cmd(&["import", "--json", src.to_str().unwrap()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut imported = 0;
    for c in children {
        let out = c.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let v: serde_json::Value =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
        if v["alreadyImported"] == false {
            imported += 1;
        }
    }
    assert_eq!(imported, 1);
    let journals: Vec<_> = std::fs::read_dir(bcs.sessions())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl") && !n.starts_with('.'))
        .collect();
    assert_eq!(journals.len(), 1, "{journals:?}");
    assert!(std::fs::read_dir(bcs.sessions()).unwrap().all(|e| {
        !e.unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".import-")
    }));
}
