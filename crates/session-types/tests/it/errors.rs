//! Garbage, truncated and wrong-typed JSON give typed errors, never panics.

use session_types::{Entry, Envelope, ParseErrorKind, Record};

fn kind(text: &str) -> ParseErrorKind {
    match Record::parse(text) {
        Ok(r) => panic!("{text:?} parsed as {r:?}"),
        Err(e) => {
            assert!(!e.message.is_empty());
            assert!(e.column >= 1 && e.line >= 1);
            e.kind
        }
    }
}

#[test]
fn garbage_is_a_syntax_error() {
    for text in [
        "not json at all",
        "{",
        "}",
        "{]",
        "\u{0}\u{1}\u{2}",
        "{\"type\":\"message\",}",
        "nul",
    ] {
        let k = kind(text);
        assert!(
            matches!(k, ParseErrorKind::Syntax | ParseErrorKind::Truncated),
            "{text:?}: {k:?}"
        );
    }
    assert_eq!(kind(""), ParseErrorKind::Truncated);
}

#[test]
fn truncated_lines_are_truncated() {
    let full = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#;
    for cut in 1..full.len() {
        let k = kind(&full[..cut]);
        assert!(
            matches!(k, ParseErrorKind::Truncated | ParseErrorKind::Syntax),
            "cut {cut}: {k:?}"
        );
    }
    assert!(Record::parse(full).is_ok());
}

#[test]
fn non_objects_are_named() {
    for (text, found) in [
        ("[1,2]", "an array"),
        ("42", "a number"),
        ("\"s\"", "a string"),
        ("null", "null"),
    ] {
        let e = Record::parse(text).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::NotAnObject, "{text}");
        assert!(e.message.contains(found), "{e}");
    }
}

#[test]
fn wrong_types_name_the_field() {
    let cases = [
        (
            r#"{"type":"model_change","id":"a","parentId":null,"provider":1,"modelId":"m"}"#,
            "integer",
        ),
        (r#"{"type":"label","id":"a","parentId":null}"#, "targetId"),
        (
            r#"{"type":"compaction","id":"a","parentId":null,"summary":"s","tokensBefore":"many"}"#,
            "string",
        ),
        (r#"{"id":"a","parentId":null}"#, "`type`"),
        (r#"{"type":7,"id":"a"}"#, "`type`"),
        (
            r#"{"type":"message","id":"a","parentId":{"x":1},"message":{"role":"user","content":"x","timestamp":1}}"#,
            "",
        ),
    ];
    for (text, needle) in cases {
        let e = session_types::Entry::parse(text).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::WrongShape, "{text}: {e}");
        assert!(e.message.contains(needle), "{text}: {e}");
        // Reading (as opposed to validating what we write) keeps the object whole.
        let Record::Entry(entry) = Record::parse(text).unwrap() else {
            panic!("{text}")
        };
        assert!(matches!(entry, session_types::Entry::Unknown(_)), "{text}");
        assert_eq!(entry.to_json(), text);
    }
}

/// Issue 14: reading never fails on an entry's content, only on text that is not a
/// JSON object; fields read as the reference's JavaScript reads them.
#[test]
fn reading_is_as_lenient_as_json_parse() {
    use serde_json::json;
    use session_types::Entry;
    let read = |t: &str| match Record::parse(t).unwrap_or_else(|e| panic!("{t}: {e}")) {
        Record::Entry(e) => e,
        Record::Header(_) => panic!("{t}: header"),
    };
    // JavaScript whitespace around the object (a BOM, U+00A0, U+2028) is ignored.
    let e = read("\u{feff}{\"type\":\"label\",\"id\":\"l\",\"targetId\":\"a\"}\u{a0}\u{2028}");
    assert_eq!(e.entry_type(), Some("label"));
    // A repeated key keeps the last value, in the first key's place.
    let e = read(r#"{"type":"custom","id":"c","parentId":"zzz","customType":"t","parentId":"a"}"#);
    assert!(matches!(e, Entry::Custom(_)));
    assert_eq!(e.parent_id(), Some("a"));
    assert_eq!(
        e.to_json(),
        r#"{"type":"custom","customType":"t","id":"c","parentId":"a"}"#,
        "typed after the repeated key is resolved"
    );
    // A number beyond a double's range reads as null (JSON.stringify(Infinity)).
    let e = read(
        r#"{"type":"message","id":"m","parentId":null,"message":{"role":"user","content":"x","timestamp":1e400}}"#,
    );
    assert_eq!(
        e.as_message()
            .map(|m| serde_json::to_value(m).unwrap()["timestamp"].clone()),
        Some(json!(null))
    );
    // Odd field types: the entry is kept whole, its fields read by property access.
    let e = read(
        r#"{"type":"custom_message","customType":"n","content":"x","id":"b","parentId":"a","timestamp":5}"#,
    );
    assert!(matches!(e, Entry::Unknown(_)));
    assert_eq!(
        (e.entry_type(), e.id(), e.parent_id(), e.timestamp_ms()),
        (Some("custom_message"), Some("b"), Some("a"), Some(5))
    );
    assert_eq!(e.js_property("display"), None);
    let e = read(
        r#"{"type":"branch_summary","id":"b","parentId":null,"timestamp":null,"fromId":"a","summary":"s"}"#,
    );
    assert!(
        matches!(e, Entry::Unknown(_)),
        "a null timestamp is not an absent one"
    );
    assert_eq!(e.timestamp_ms(), Some(0));
    let e = read(
        r#"{"type":"message","id":"b","parentId":5,"message":{"role":"user","content":"x","timestamp":1}}"#,
    );
    assert_eq!((e.entry_type(), e.parent_id()), (Some("message"), None));
    assert_eq!(e.js_property("parentId"), Some(json!(5)));
    // Without a string type: kept as an unknown entry.
    assert_eq!(read(r#"{"id":"a"}"#).entry_type(), None);
    // Still refused: what JSON.parse refuses, and JSON that is not an object.
    for bad in ["{\"type\":", "[1]", "{\"a\":1}\u{85}", "\u{200b}{}"] {
        assert!(Record::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_known_role_in_an_unknown_shape_is_kept_verbatim() {
    // The reference replays stored messages verbatim, so we keep them rather than fail.
    let text = r#"{"type":"message","id":"a","parentId":null,"message":{"role":"assistant","content":"x"}}"#;
    let Record::Entry(e) = Record::parse(text).unwrap() else {
        panic!()
    };
    let m = e.as_message().unwrap();
    assert!(matches!(m, session_types::AgentMessage::Unknown(_)));
    assert_eq!(m.role(), Some("assistant"));
    assert_eq!(e.to_json(), text);
}

#[test]
fn deep_nesting_does_not_overflow_the_stack() {
    // serde_json's recursion limit turns this into an error rather than a crash.
    let deep = format!(
        r#"{{"type":"custom","customType":"x","data":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(Entry::parse(&deep).is_err());
    let deep_env = format!(r#"{{"type":"x","payload":{}}}"#, "[".repeat(100_000));
    assert!(Envelope::parse(&deep_env).is_err());
}

#[test]
fn envelope_is_lenient_about_field_types() {
    let e =
        Envelope::parse(r#"{"type":"message","id":5,"parentId":["a"],"message":"text"}"#).unwrap();
    assert_eq!(e.entry_type.as_deref(), Some("message"));
    assert_eq!(e.id, None);
    assert_eq!(e.parent_id, None);
    assert_eq!(e.role(), None);
    assert!(Envelope::parse("[1]").is_err());
}

/// A parsed session header writes its `type` once (it was kept in `extra` and written
/// twice, so parsing the output kept it in `extra` again).
#[test]
fn a_session_header_round_trips_with_one_type_key() {
    let text = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w","x":1}"#;
    let session_types::Record::Header(h) = session_types::Record::parse(text).expect("header")
    else {
        panic!("not a header");
    };
    let out = h.to_json();
    assert_eq!(out.matches("\"type\"").count(), 1, "{out}");
    assert_eq!(out, text);
}
