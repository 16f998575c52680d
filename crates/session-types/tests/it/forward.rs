//! Unknown entry types, fields, roles and content blocks survive a round trip.

use serde_json::{Value, json};
use session_types::{AgentMessage, ContentBlock, Entry, Record};

fn round_trip(text: &str) -> (Record, Value) {
    let r = Record::parse(text).expect("parses");
    let out = r.to_json();
    assert_eq!(Record::parse(&out).expect("re-parses"), r);
    (r, serde_json::from_str(&out).expect("valid JSON"))
}

#[test]
fn unknown_entry_type_is_kept_whole() {
    let text = r#"{"type":"future_entry_type","id":"e7","parentId":"e5","timestamp":"2026-02-04T09:00:49.000Z","payload":{"x":1,"y":[true,null]}}"#;
    let (r, out) = round_trip(text);
    let Record::Entry(e @ Entry::Unknown(_)) = &r else {
        panic!("{r:?}")
    };
    assert_eq!(e.entry_type(), Some("future_entry_type"));
    assert_eq!(e.id(), Some("e7"));
    assert_eq!(e.parent_id(), Some("e5"));
    // Same bytes: unknown entries keep key order.
    assert_eq!(r.to_json(), text);
    assert_eq!(out["payload"]["y"], json!([true, null]));
}

#[test]
fn unknown_fields_are_kept_on_every_level() {
    let text = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"t","textSignature":"sig"},{"type":"toolCall","id":"c","name":"bash","arguments":{"cmd":"ls"},"partial":false}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0,"currency":"usd"},"reasoning":5},"stopReason":"stop","timestamp":1,"providerMeta":"r1"},"sidecar":{"k":[1,2]}}"#;
    let (r, out) = round_trip(text);
    let Record::Entry(Entry::Message(m)) = &r else {
        panic!()
    };
    assert_eq!(m.extra["sidecar"], json!({"k": [1, 2]}));
    let AgentMessage::Assistant(a) = &m.message else {
        panic!()
    };
    assert_eq!(a.extra["providerMeta"], json!("r1"));
    assert_eq!(a.usage.extra["reasoning"], json!(5));
    assert_eq!(a.usage.cost.extra["currency"], json!("usd"));
    assert_eq!(out["message"]["content"][0]["textSignature"], json!("sig"));
    assert_eq!(out["message"]["content"][1]["partial"], json!(false));
    // Modelled and unmodelled keys come back in the source order here.
    assert_eq!(r.to_json(), text);
}

#[test]
fn unknown_role_is_kept_whole() {
    let text = r#"{"type":"message","id":"h","parentId":"g","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"hookMessage","customType":"x","content":"h","display":true,"timestamp":3}}"#;
    let (r, _) = round_trip(text);
    let Record::Entry(Entry::Message(m)) = &r else {
        panic!()
    };
    assert!(matches!(m.message, AgentMessage::Unknown(_)));
    assert_eq!(m.message.role(), Some("hookMessage"));
    assert_eq!(r.to_json(), text);
}

#[test]
fn unknown_content_block_is_kept_whole() {
    let text = r#"{"type":"message","id":"u","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"audio","data":"AAA=","format":"wav"},{"type":"text","text":"hi"}],"timestamp":1}}"#;
    let (r, out) = round_trip(text);
    let Record::Entry(Entry::Message(m)) = &r else {
        panic!()
    };
    let AgentMessage::User(u) = &m.message else {
        panic!()
    };
    let session_types::UserContent::Blocks(blocks) = &u.content else {
        panic!()
    };
    assert!(matches!(&blocks[0], ContentBlock::Unknown(b) if b["format"] == json!("wav")));
    assert_eq!(out["message"]["content"][0]["type"], json!("audio"));
    assert_eq!(r.to_json(), text);
}

#[test]
fn legacy_sleep_reads_as_archived() {
    let text = r#"{"type":"session_state","id":"s","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","state":"sleep"}"#;
    let Record::Entry(Entry::SessionState(s)) = Record::parse(text).unwrap() else {
        panic!()
    };
    assert_eq!(s.state, session_types::SessionState::Archived);
    let other = r#"{"type":"session_state","id":"s","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","state":"hibernating"}"#;
    let (r, _) = round_trip(other);
    assert_eq!(r.to_json(), other);
}

/// The reference puts `entry.message` into the context as stored: a message the typed
/// model would print differently is read as the stored object (difffuzz classes
/// `context spelling: key order`, `…/errorMessage: only in theirs`,
/// `…/timestamp: only in ours`, `…indexed a message but loaded a user message`).
#[test]
fn a_message_that_would_not_print_as_stored_is_kept_as_stored() {
    let envelope = r#"{"type":"message","id":"m","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":"#;
    for message in [
        // `excludeFromContext` before `timestamp`
        r#"{"role":"bashExecution","command":"ls","output":"x","exitCode":1,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":1}"#,
        // a `null` the typed model drops
        r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","errorMessage":null,"timestamp":1}"#,
        // no `timestamp`
        r#"{"role":"custom","customType":"ext","content":"c","display":false}"#,
        // a numeric role (serde reads 0 as the first variant)
        r#"{"role":-0.0,"content":"c","timestamp":1}"#,
        // content block keys in another order
        r#"{"role":"user","content":[{"text":"hi","type":"text"}],"timestamp":1}"#,
    ] {
        let text = format!("{envelope}{message}}}");
        let e = Entry::read(&text).expect("reads");
        let Entry::Message(m) = &e else {
            panic!("{message}: {e:?}")
        };
        assert_eq!(
            serde_json::to_string(&m.message).unwrap(),
            message,
            "{message}"
        );
        assert!(matches!(m.message, AgentMessage::Unknown(_)), "{message}");
    }
    // As written, the message stays typed.
    let text = format!(
        r#"{envelope}{{"role":"user","content":[{{"type":"text","text":"hi"}}],"timestamp":1}},"extra":1}}"#
    );
    let Entry::Message(m) = Entry::read(&text).expect("reads") else {
        panic!()
    };
    assert!(matches!(m.message, AgentMessage::User(_)));
}
