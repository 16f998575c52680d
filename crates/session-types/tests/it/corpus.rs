//! Every line of every corpus file parses into typed values and round-trips.

use session_types::{Entry, ParseErrorKind, Record};

use crate::corpus_files;

/// Lines that are expected not to parse, with the pinned reason.
/// (file, 1-based line, kind)
const EXPECTED_FAILURES: &[(&str, usize, ParseErrorKind)] = &[
    // A lone surrogate cannot live in a Rust string: typed, located error. The
    // journal keeps such a payload byte-exact; import reports it (see docs/format.md §1).
    ("edge/json-values.jsonl", 3, ParseErrorKind::LoneSurrogate),
    // `{"type":"message","id":"broken"` — a torn line.
    ("edge/malformed-lines.jsonl", 4, ParseErrorKind::Truncated),
    // `not json at all`
    ("edge/malformed-lines.jsonl", 7, ParseErrorKind::Syntax),
];

#[test]
fn every_corpus_line_parses_and_round_trips() {
    let mut parsed = 0;
    let mut failures = Vec::new();
    for (file, lines) in corpus_files() {
        for (i, line) in lines.iter().enumerate() {
            let line_no = i + 1;
            let text = line.trim_end_matches('\r');
            if text.trim().is_empty() {
                continue;
            }
            match Record::parse(text) {
                Ok(record) => {
                    let json = record.to_json();
                    let again = Record::parse(&json).unwrap_or_else(|e| {
                        panic!("{file}:{line_no}: re-parse failed: {e}\n{json}")
                    });
                    assert_eq!(
                        record, again,
                        "{file}:{line_no}: value changed in a round trip"
                    );
                    // And the JSON values agree with the source (numbers compared as
                    // serde_json reads them, keys in any order).
                    let src: serde_json::Value = serde_json::from_str(text).expect("parsed once");
                    let out: serde_json::Value = serde_json::from_str(&json).expect("we wrote it");
                    assert_eq!(
                        normalize(src),
                        normalize(out),
                        "{file}:{line_no}: JSON differs"
                    );
                    parsed += 1;
                }
                Err(e) => failures.push((file.clone(), line_no, e)),
            }
        }
    }
    let got: Vec<_> = failures
        .iter()
        .map(|(f, l, e)| (f.as_str(), *l, e.kind))
        .collect();
    assert_eq!(
        got, EXPECTED_FAILURES,
        "unexpected parse failures: {failures:#?}"
    );
    assert!(parsed > 150, "only {parsed} lines parsed");
}

/// The difference our typed round trip is allowed to make: an entry with an id
/// but no `parentId` key is written with `"parentId":null`.
fn normalize(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(map) = v.as_object_mut()
        && map.get("type").and_then(|t| t.as_str()) != Some("session")
        && map.contains_key("id")
    {
        map.entry("parentId").or_insert(serde_json::Value::Null);
    }
    v
}

#[test]
fn json_values_numbers_survive_by_value() {
    let (_, lines) = corpus_files()
        .into_iter()
        .find(|(f, _)| f == "edge/json-values.jsonl")
        .expect("json-values fixture");
    let line = &lines[4];
    let record = Record::parse(line).expect("numbers line parses");
    let json = record.to_json();
    // Integers above 2^53 stay exact (they fit u64), -0 stays negative zero,
    // 1e300 and 5e-324 stay the same doubles.
    assert!(json.contains(r#""big":12345678901234567890"#), "{json}");
    assert!(json.contains(r#""maxSafe":9007199254740991"#), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let d = &v["details"];
    assert_eq!(d["negZero"].as_f64().map(f64::is_sign_negative), Some(true));
    assert_eq!(d["exp"].as_f64(), Some(1e300));
    assert_eq!(d["tiny"].as_f64(), Some(5e-324));
    assert_eq!(d["sum"].as_f64(), Some(0.30000000000000004));
}

#[test]
fn lone_surrogate_error_is_located() {
    let line = r#"{"type":"message","id":"x","parentId":null,"timestamp":"t","message":{"role":"user","content":"a \ud83d b","timestamp":1}}"#;
    let e = Record::parse(line).unwrap_err();
    assert_eq!(e.kind, ParseErrorKind::LoneSurrogate);
    assert_eq!(e.column, line.find("\\ud83d").unwrap() + 1);
    assert!(e.to_string().contains("\\ud83d"), "{e}");
    // The import path's view: replace and report, never silently.
    let (fixed, found) = session_types::json::replace_lone_surrogates(line);
    assert_eq!(found.len(), 1);
    assert!(Record::parse(&fixed).is_ok());
}

/// `Entry::parse` reads the modelled variants first without `Entry`'s untagged
/// fallback (one copy of the record fewer): on every line of the corpus, the leniency
/// fixtures (odd shapes, repeated keys, out-of-range numbers) and the generated 1k
/// session, and on hand-made odd records, it gives what serde's `Entry` gives.
#[test]
fn parse_gives_what_serde_reads_as_an_entry() {
    let mut lines: Vec<(String, String)> = Vec::new();
    for (file, ls) in corpus_files() {
        lines.extend(ls.into_iter().map(|l| (file.clone(), l)));
    }
    let root = crate::fixtures_dir();
    let mut extra: Vec<_> = std::fs::read_dir(root.join("leniency"))
        .expect("leniency")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    extra.sort();
    extra.push(root.join("generated/1k.jsonl"));
    for p in extra {
        let text = String::from_utf8_lossy(&std::fs::read(&p).expect("fixture")).into_owned();
        let name = p.display().to_string();
        lines.extend(text.split('\n').map(|l| (name.clone(), l.to_owned())));
    }
    for odd in [
        r#"{"type":"message","type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"x","label":"l"}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","role":"assistant","content":"x","timestamp":1}}"#,
        r#"{"type":"label","id":"a","parentId":null,"timestamp":"t","targetId":"x","label":3}"#,
        r#"{"type":"message","id":1,"parentId":null,"timestamp":"t","message":{"role":"user","content":"x","timestamp":1}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"hookMessage","x":1}}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":[{"type":"video","u":1}],"timestamp":1},"z":[1.0]}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":"not an object"}"#,
        r#"{"type":"message","id":"a","timestamp":"t","message":{"role":"assistant","content":[],"api":"x","provider":"p","model":"m","usage":{"input":1},"stopReason":"stop","timestamp":1}}"#,
        r#"{"type":"no_such_type","id":"a"}"#,
        r#"{"id":"a"}"#,
        r#"{"type":7}"#,
    ] {
        lines.push(("odd".to_owned(), odd.to_owned()));
    }
    let mut typed = 0;
    for (file, line) in &lines {
        let (clean, _) = session_types::json::replace_lone_surrogates(line.trim_end_matches('\r'));
        let serde: Result<Entry, _> = serde_json::from_str(&clean);
        let ours = Entry::parse(&clean);
        match (&serde, &ours) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{file}: {line}");
                typed += usize::from(!matches!(a, Entry::Unknown(_)));
            }
            (Ok(Entry::Unknown(_)), Err(_)) | (Err(_), Err(_)) => {}
            _ => panic!("{file}: {line}\nserde {serde:?}\nours {ours:?}"),
        }
    }
    assert!(typed > 1000, "{typed} typed records");
}
