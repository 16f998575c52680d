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
        let e = Record::parse(text).unwrap_err();
        assert_eq!(e.kind, ParseErrorKind::WrongShape, "{text}: {e}");
        assert!(e.message.contains(needle), "{text}: {e}");
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
