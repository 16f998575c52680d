//! Garbage given to `import`, `verify`, `context`: a clear one-line error, exit code 1,
//! no panic, the source untouched. (A header version the reference does not write,
//! such as 99, is not garbage: it imports as the reference reads it, docs/format.md §4.)

use crate::support::{Bcs, fixtures};

/// (name, bytes) of malformed inputs.
fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let native_sig = vec![0x89, b'J', b'N', b'L', 0x0d, 0x0a, 0x1a, 0x0a];
    let mut native_trunc = native_sig.clone();
    native_trunc.extend_from_slice(&[0xff; 20]);
    let mut binary = Vec::new();
    let mut x: u32 = 12345;
    for _ in 0..4096 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        binary.push((x >> 16) as u8);
    }
    vec![
        ("empty", Vec::new()),
        ("binary", binary),
        ("open-brace", b"{".to_vec()),
        ("json-array", b"[1,2,3]\n".to_vec()),
        ("not-json-text", b"hello world\nsecond line\n".to_vec()),
        ("nul-bytes", vec![0; 100]),
        ("invalid-utf8", vec![0xff, 0xfe, b'{', b'}', b'\n']),
        ("native-signature-only", native_sig),
        ("native-truncated-header", native_trunc),
    ]
}

#[test]
fn garbage_inputs_give_clear_errors() {
    let b = Bcs::new();
    let dir = b.home().join("garbage");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut report = Vec::new();
    for (name, bytes) in inputs() {
        let path = dir.join(format!("{name}.jsonl"));
        std::fs::write(&path, &bytes).expect("write");
        let p = path.to_str().expect("utf-8");
        for cmd in [
            vec!["import", p],
            vec!["verify", p],
            vec!["context", p],
            vec!["tree", p, "--json"],
        ] {
            let r = b.run(&cmd);
            let label = format!("{} {name}", cmd[0]);
            assert_eq!(
                r.code, 1,
                "{label}: stdout {} stderr {}",
                r.stdout, r.stderr
            );
            assert!(!r.stderr.contains("panicked"), "{label}: {}", r.stderr);
            let first = r.stderr.lines().next().unwrap_or("");
            assert!(first.starts_with("bcs: "), "{label}: {:?}", r.stderr);
            assert!(
                first.contains(p) || first.contains(&format!("{name}.jsonl")),
                "{label}: names the file: {first}"
            );
            assert_eq!(
                std::fs::read(&path).expect("read"),
                bytes,
                "{label}: source modified"
            );
            report.push(format!("{label}: {}", b.redact(first)));
        }
    }
    // A legacy file given to the native readers says to import it.
    let legacy = fixtures().join("legacy/v3-control.jsonl");
    let r = b.run(&["context", legacy.to_str().expect("utf-8")]);
    assert!(r.fails(1).contains("import"), "{}", r.stderr);
    report.push(format!("context legacy: {}", b.redact(r.stderr.trim_end())));
    insta::assert_snapshot!(report.join("\n"));
    // Nothing was imported.
    assert_eq!(b.run(&["list", "--all"]).ok(), "no sessions\n");
}

#[test]
fn a_native_journal_given_to_import_is_refused() {
    let b = Bcs::new();
    let id = b.import("legacy/v3-control.jsonl");
    let journal = b.sessions().join(format!("{id}.jsonl"));
    let before = std::fs::read(&journal).expect("read");
    let r = b.run(&["import", journal.to_str().expect("utf-8")]);
    r.fails(1);
    assert_eq!(std::fs::read(&journal).expect("read"), before);
}
