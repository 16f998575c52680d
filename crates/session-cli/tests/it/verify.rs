//! `verify`: clean, torn tail (read-only, context of the intact prefix, repair),
//! stale index, human and JSON outputs.

use crate::support::{Bcs, pretty};

#[test]
fn clean_store_verifies_clean() {
    let b = Bcs::new();
    b.import("legacy/v3-control.jsonl");
    b.import("edge/tree-oddities.jsonl");
    insta::assert_snapshot!("verify_clean_human", b.run(&["verify", "--all"]).ok());
    let v = b.run(&["verify", "--all", "--json"]).json();
    // An import ends with a seal; both journals are of the version this code writes.
    for s in v.as_array().expect("array") {
        assert_eq!(s["journal"]["sealed"], true, "{s}");
        assert_eq!(
            s["journal"]["formatVersion"],
            session_journal::format::FORMAT_VERSION,
            "{s}"
        );
    }
    insta::assert_snapshot!("verify_clean_json", b.redact(&pretty(&v)));
}

#[test]
fn torn_tail_is_reported_read_only_then_repaired() {
    let b = Bcs::new();
    // A session whose last frame is an entry (an import ends with provenance frames).
    let id = "torn";
    b.run(&["new", "--id", id, "--cwd", "/w"]).ok();
    let input = (0..3)
        .map(|i| format!("{{\"role\":\"user\",\"content\":\"message {i}\",\"timestamp\":{i}}}\n"))
        .collect::<String>();
    let acked = b.run_stdin(&["append", id], &input);
    let ids: Vec<&str> = acked.ok().lines().collect();
    let journal = b.sessions().join(format!("{id}.jsonl"));
    // The context the intact prefix gives: the same as at the second-to-last entry.
    let prev = ids[1].to_owned();
    let expected = b.run(&["context", id, "--leaf", &prev, "--json"]).json();

    // Cut the file inside its last entry frame (before the seal `append` closes with).
    let len = std::fs::metadata(&journal).expect("stat").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&journal)
        .expect("open");
    f.set_len(len - session_journal::format::SEAL_FRAME_LEN - 5)
        .expect("truncate");
    drop(f);
    let torn = std::fs::read(&journal).expect("read");

    let r = b.run(&["verify", id, "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v[0]["status"], "torn-tail");
    assert!(v[0]["journal"]["tornTail"]["offset"].as_u64().is_some());
    assert_eq!(v[0]["journal"]["sealed"], false, "the seal was cut");
    insta::assert_snapshot!("verify_torn_json", b.redact(&pretty(&v)));
    let human = b.run(&["verify", id]);
    assert_eq!(human.code, 1);
    insta::assert_snapshot!("verify_torn_human", human.stdout);
    assert_eq!(
        std::fs::read(&journal).expect("read"),
        torn,
        "verify modified the journal"
    );

    let ctx = b.run(&["context", id, "--json"]);
    assert_eq!(ctx.json(), expected);
    assert!(ctx.stderr.starts_with("bcs: warning:"), "{}", ctx.stderr);
    assert_eq!(
        std::fs::read(&journal).expect("read"),
        torn,
        "context modified the journal"
    );

    let repaired = b.run(&["verify", id, "--repair", "--json"]).json();
    assert_eq!(repaired[0]["status"], "clean");
    assert_eq!(repaired[0]["repaired"]["from"], "torn-tail");
    assert_eq!(b.run(&["verify", id]).code, 0);
    assert_eq!(b.run(&["context", id, "--json"]).json(), expected);
}

#[test]
fn stale_index_is_reported_and_rebuilt() {
    let b = Bcs::new();
    let id = b.import("edge/labels-names-roots.jsonl");
    let id = id.as_str();
    let side = b.sessions().join(format!("{id}.jsonl.idx"));
    assert!(side.is_file(), "import saves the index");
    std::fs::write(&side, b"garbage").expect("damage the sidecar");
    let r = b.run(&["verify", id]);
    assert_eq!(r.code, 1);
    insta::assert_snapshot!("verify_stale_human", r.stdout);
    std::fs::remove_file(&side).expect("rm");
    let r = b.run(&["verify", id, "--json"]);
    assert_eq!(r.code, 1);
    assert!(!side.exists(), "verify without --repair writes nothing");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v[0]["status"], "stale-index");
    let fixed = b.run(&["verify", "--all", "--repair"]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert!(side.is_file());
    assert_eq!(b.run(&["verify", "--all"]).code, 0);
}

#[test]
fn verify_of_an_empty_store_is_clean() {
    let b = Bcs::new();
    assert_eq!(b.run(&["verify", "--all"]).ok(), "no sessions\n");
    assert_eq!(
        b.run(&["verify", "--all", "--json"]).json(),
        serde_json::json!([])
    );
}

/// What a killed import leaves (a hidden temporary journal and its holder record) is
/// reported by `verify --all` and removed by `--repair`.
#[test]
fn leftovers_of_a_killed_import_are_reported_and_repaired() {
    let b = Bcs::new();
    b.import("legacy/v3-control.jsonl");
    let tmp = b.sessions().join(".s.jsonl.import-0123456789abcdef.tmp");
    let record = b
        .sessions()
        .join(".u.jsonl.import-0123456789abcdef.tmp.lock");
    std::fs::write(&tmp, b"\x89partial").expect("plant");
    std::fs::write(&record, b"pid=1\n").expect("plant");
    let r = b.run(&["verify", "--all"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stdout
            .lines()
            .any(|l| l.starts_with("leftover") && l.contains(".s.jsonl.import-")),
        "{}",
        r.stdout
    );
    let v = b.run(&["verify", "--all", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&v.stdout).expect("json");
    let leftovers: Vec<_> = v
        .as_array()
        .expect("array")
        .iter()
        .filter(|x| x["status"] == "leftover")
        .map(|x| x["path"].as_str().expect("path").to_owned())
        .collect();
    assert_eq!(
        leftovers,
        [tmp.to_string_lossy(), record.to_string_lossy()],
        "{v}"
    );
    let fixed = b.run(&["verify", "--all", "--repair"]);
    assert_eq!(fixed.code, 0, "{}", fixed.stdout);
    assert!(!tmp.exists() && !record.exists());
    assert_eq!(b.run(&["verify", "--all"]).code, 0);
}

/// A journal imported before the one-id change (docs/format.md §4) kept the legacy
/// header's id in its session header record under a derived file name. `verify` reports
/// it clearly, as a warning (not corruption): a line on stderr and `journal.headerId`
/// naming both ids; `--repair` leaves the header as it is.
#[test]
fn a_header_id_that_differs_from_the_file_name_is_a_warning() {
    use session_journal::{CreateOptions, Durability, JournalId, NewFrame, Writer};
    let b = Bcs::new();
    std::fs::create_dir_all(b.sessions()).expect("mkdir");
    let name = "c0ffee00-1111-2222-3333-444455556666-0badf00d";
    let original = "c0ffee00-1111-2222-3333-444455556666";
    let journal = b.sessions().join(format!("{name}.jsonl"));
    let mut w = Writer::create(
        &journal,
        JournalId([7; 16]),
        CreateOptions {
            session_id: Some(name.to_owned()),
            ..CreateOptions::default()
        },
    )
    .expect("create");
    let header = format!(
        r#"{{"type":"session","version":3,"id":"{original}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}}"#
    );
    let entry = r#"{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1735689601000}}"#;
    for (kind, payload) in [
        (session_index::kinds::SESSION_HEADER, header.as_bytes()),
        (session_index::kinds::ENTRY, entry.as_bytes()),
    ] {
        w.append_frame(NewFrame::new(kind, payload), Durability::Durable)
            .expect("append");
    }
    w.close().expect("close");

    // Its index is built by --repair; the journal itself is not rewritten.
    let before = std::fs::read(&journal).expect("read");
    let r = b.run(&["verify", name, "--repair"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read(&journal).expect("read"),
        before,
        "--repair rewrote the journal"
    );

    let r = b.run(&["verify", name]);
    assert_eq!(r.code, 0, "a warning, not a failure: {}", r.stderr);
    assert!(r.stdout.starts_with("clean"), "{}", r.stdout);
    let warning = r.stderr.trim_end();
    assert_eq!(warning.lines().count(), 1, "{warning}");
    assert!(warning.starts_with("bcs: warning: "), "{warning}");
    for needle in [name, original, "re-import", "--repair"] {
        assert!(warning.contains(needle), "{needle}: {warning}");
    }

    let r = b.run(&["verify", name, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v[0]["status"], "clean");
    assert_eq!(
        v[0]["journal"]["headerId"],
        serde_json::json!({"fileName": name, "header": original})
    );
    assert!(r.stderr.starts_with("bcs: warning: "), "{}", r.stderr);

    // The re-import the warning suggests gives the session one id.
    let file = b.sessions().join("../exported.jsonl");
    let file = file.to_str().expect("utf-8");
    b.run(&["export", name, "-o", file]).ok();
    b.run(&["rm", name]).ok();
    let imported = b.run(&["import", file, "--json"]).json();
    let id = imported["sessionId"].as_str().expect("an id").to_owned();
    b.run(&["verify", &id, "--repair"]).ok();
    let r = b.run(&["verify", &id, "--json"]);
    assert_eq!(r.stderr, "", "one id after the re-import");
    assert!(r.json()[0]["journal"].get("headerId").is_none());

    // A session whose ids agree has no such field and no warning.
    b.run(&["new", "--id", "plain", "--cwd", "/w"]).ok();
    b.run(&["verify", "plain", "--repair"]).ok();
    let r = b.run(&["verify", "plain", "--json"]);
    assert_eq!(r.stderr, "");
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert!(v[0]["journal"].get("headerId").is_none(), "{v}");
}

/// A damaged page of the sidecar that an open does not read (the pool's, here) is
/// found by `verify`, which reads every page, and `--repair` rebuilds the sidecar.
#[test]
fn a_damaged_sidecar_page_is_reported_and_rebuilt() {
    let b = Bcs::new();
    let id = b.import("edge/labels-names-roots.jsonl");
    let id = id.as_str();
    let side = b.sessions().join(format!("{id}.jsonl.idx"));
    let mut bytes = std::fs::read(&side).expect("sidecar");
    let u = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    // By the header (docs/format.md §3): head_len, rec_count, ids_count.
    let pool = u(72) + u(80) * 88 + u(88) * 12;
    bytes[pool] ^= 0x20;
    std::fs::write(&side, &bytes).expect("damage the pool");
    let r = b.run(&["verify", id, "--json"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v[0]["status"], "stale-index");
    assert_eq!(v[0]["index"]["status"], "damaged", "{v}");
    let fixed = b.run(&["verify", id, "--repair"]);
    assert_eq!(fixed.code, 0, "{}", fixed.stderr);
    assert_ne!(std::fs::read(&side).expect("sidecar"), bytes);
    assert_eq!(b.run(&["verify", id]).code, 0);
}
