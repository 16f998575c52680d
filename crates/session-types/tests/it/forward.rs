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
