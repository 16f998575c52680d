//! Constructor-built entries serialize byte-identically to what the reference
//! implementation wrote for the same values.
//!
//! The vectors are the lines of `tests/fixtures/generated/1k.jsonl`, a session the
//! real `SessionManager` (0.73.1) wrote through its append methods (`cargo xtask
//! fixtures` regenerates it): every entry is rebuilt through our constructor from its
//! parsed values and must come out as the same bytes.

use std::collections::BTreeMap;

use session_types::*;

fn base_of(e: &Entry) -> EntryBase {
    e.base().cloned().expect("reference entries are modelled")
}

/// Rebuilds `e` through the public constructors only.
fn rebuild(e: &Entry) -> Entry {
    let base = base_of(e);
    match e {
        Entry::Message(m) => Entry::message(base, m.message.clone()),
        Entry::ThinkingLevelChange(t) => {
            Entry::thinking_level_change(base, t.thinking_level.clone())
        }
        Entry::ModelChange(m) => Entry::model_change(base, m.provider.clone(), m.model_id.clone()),
        Entry::ServiceTierChange(s) => Entry::service_tier_change(base, s.service_tier.clone()),
        Entry::Compaction(c) => Entry::compaction(
            base,
            c.summary.clone(),
            c.first_kept_entry_id
                .clone()
                .expect("reference compactions keep an id"),
            c.tokens_before.as_u64().expect("integer tokensBefore"),
            c.details.clone(),
            c.from_hook,
        ),
        Entry::BranchSummary(b) => {
            let from = (b.from_id != "root").then(|| EntryId::new(b.from_id.clone()));
            Entry::branch_summary(
                base,
                from.as_ref(),
                b.summary.clone(),
                b.details.clone(),
                b.from_hook,
            )
        }
        Entry::Custom(c) => Entry::custom(base, c.custom_type.clone(), c.data.clone()),
        Entry::CustomMessage(c) => Entry::custom_message(
            base,
            c.custom_type.clone(),
            c.content.clone(),
            c.display,
            c.details.clone(),
        ),
        Entry::Label(l) => Entry::label(base, l.target_id.clone(), l.label.clone()),
        Entry::SessionInfo(s) => Entry::session_info(base, s.name.as_deref().unwrap_or("")),
        Entry::ChildUsageAttributed(c) => Entry::child_usage_attributed(
            base,
            c.target_id.clone(),
            c.child_usage.clone(),
            c.aggregate_usage.clone(),
        ),
        Entry::SessionState(s) => Entry::session_state(base, s.state.clone()),
        Entry::AgentStatus(a) => Entry::agent_status(base, a.status.clone()),
        Entry::GitState(g) => Entry::git_state(base, g.git.clone()),
        other => panic!("not constructible: {other:?}"),
    }
}

#[test]
fn constructors_match_reference_bytes() {
    // 1k.jsonl has no bashExecution message; 10k-bash-lines.jsonl holds one line of
    // each bashExecution shape from the generated 10k session.
    let mut text = String::new();
    for name in ["generated/1k.jsonl", "generated/10k-bash-lines.jsonl"] {
        let path = crate::fixtures_dir().join(name);
        text += &std::fs::read_to_string(&path).expect("generated corpus present");
    }
    let mut per_kind: BTreeMap<String, usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        match Record::parse(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1)) {
            Record::Header(h) => {
                let rebuilt = SessionHeader::new(
                    h.id.clone(),
                    h.timestamp.clone().expect("timestamp"),
                    h.cwd.clone().expect("cwd"),
                );
                assert_eq!(rebuilt.to_json(), line, "header");
            }
            Record::Entry(e) => {
                let kind = match &e {
                    Entry::Message(m) => format!("message:{}", m.message.role().unwrap_or("?")),
                    other => other.entry_type().unwrap_or("?").to_owned(),
                };
                assert!(
                    !matches!(e, Entry::Unknown(_)),
                    "line {}: unknown {kind}",
                    i + 1
                );
                let json = rebuild(&e).to_json();
                assert_eq!(json, line, "line {} ({kind}) differs", i + 1);
                *per_kind.entry(kind).or_default() += 1;
            }
        }
    }
    // The vectors cover every entry type the reference 0.73.1 can write.
    for kind in [
        "message:user",
        "message:assistant",
        "message:toolResult",
        "message:bashExecution",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    ] {
        assert!(
            per_kind.contains_key(kind),
            "no vector for {kind}: {per_kind:?}"
        );
    }
}

/// Entry types of the seed that the reference 0.73.1 does not write. Their vectors
/// come from the seed document (service tier) or from our format document.
#[test]
fn seed_only_entry_types_have_fixed_shapes() {
    let b = |id: &str, parent: Option<&str>| {
        EntryBase::new(
            EntryId::new(id),
            parent.map(EntryId::new),
            Timestamp::new("2024-12-03T14:07:00.000Z"),
        )
    };
    let cases: Vec<(Entry, &str)> = vec![
        (
            Entry::service_tier_change(b("e6f7g8h9", Some("e5f6g7h8")), "priority"),
            r#"{"type":"service_tier_change","id":"e6f7g8h9","parentId":"e5f6g7h8","timestamp":"2024-12-03T14:07:00.000Z","serviceTier":"priority"}"#,
        ),
        (
            Entry::session_state(b("s1", Some("p")), SessionState::Archived),
            r#"{"type":"session_state","id":"s1","parentId":"p","timestamp":"2024-12-03T14:07:00.000Z","state":"archived"}"#,
        ),
        (
            Entry::agent_status(
                b("a1", Some("p")),
                AgentStatus {
                    summary: "fixing tests".into(),
                    task_state: Some("working".into()),
                    source_message_count: Some(12),
                    extra: Extra::new(),
                },
            ),
            r#"{"type":"agent_status","id":"a1","parentId":"p","timestamp":"2024-12-03T14:07:00.000Z","status":{"summary":"fixing tests","taskState":"working","sourceMessageCount":12}}"#,
        ),
        (
            Entry::git_state(
                b("g1", Some("p")),
                GitState {
                    branch: Some("main".into()),
                    head: Some("abc123".into()),
                    dirty: Some(false),
                    extra: Extra::new(),
                },
            ),
            r#"{"type":"git_state","id":"g1","parentId":"p","timestamp":"2024-12-03T14:07:00.000Z","git":{"branch":"main","head":"abc123","dirty":false}}"#,
        ),
        (
            Entry::child_usage_attributed(
                b("c1", Some("p")),
                EntryId::new("t1"),
                Usage::zero(),
                Usage::zero(),
            ),
            r#"{"type":"child_usage_attributed","id":"c1","parentId":"p","timestamp":"2024-12-03T14:07:00.000Z","targetId":"t1","childUsage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"aggregateUsage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}"#,
        ),
        (
            Entry::label(b("l1", Some("p")), EntryId::new("t1"), Some(String::new())),
            r#"{"type":"label","id":"l1","parentId":"p","timestamp":"2024-12-03T14:07:00.000Z","targetId":"t1"}"#,
        ),
        (
            Entry::session_info(b("n1", None), "  Refactor auth  "),
            r#"{"type":"session_info","id":"n1","parentId":null,"timestamp":"2024-12-03T14:07:00.000Z","name":"Refactor auth"}"#,
        ),
        (
            Entry::branch_summary(b("r1", None), None, "Started over.", None, Some(false)),
            r#"{"type":"branch_summary","id":"r1","parentId":null,"timestamp":"2024-12-03T14:07:00.000Z","fromId":"root","summary":"Started over.","fromHook":false}"#,
        ),
    ];
    for (entry, expected) in cases {
        assert_eq!(entry.to_json(), expected);
        assert_eq!(Record::parse(expected).unwrap(), Record::Entry(entry));
    }
}

/// Message constructors write the reference's shapes and key order.
#[test]
fn message_constructors_write_the_reference_shapes() {
    use session_types::{AgentMessage, ContentBlock, Usage, UserContent};
    let json = |m: &AgentMessage| serde_json::to_string(m).expect("json");
    assert_eq!(
        json(&AgentMessage::user("hi", 5)),
        r#"{"role":"user","content":"hi","timestamp":5}"#
    );
    assert_eq!(
        json(&AgentMessage::assistant_text(
            "ok",
            "anthropic-messages",
            "anthropic",
            "claude",
            Usage::tokens(2, 1),
            6
        )),
        concat!(
            r#"{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"anthropic-messages","#,
            r#""provider":"anthropic","model":"claude","usage":{"input":2,"output":1,"cacheRead":0,"#,
            r#""cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"#,
            r#""cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":6}"#
        )
    );
    assert_eq!(
        json(&AgentMessage::tool_result(
            "c1",
            "read",
            vec![ContentBlock::text("x")],
            false,
            7
        )),
        r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x"}],"isError":false,"timestamp":7}"#
    );
    assert_eq!(
        json(&AgentMessage::bash_execution("ls", "a\n", Some(0), 8)),
        r#"{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":8}"#
    );
    assert_eq!(
        json(&AgentMessage::custom(
            "note",
            UserContent::Text("n".into()),
            true,
            9
        )),
        r#"{"role":"custom","customType":"note","content":"n","display":true,"timestamp":9}"#
    );
    for m in [
        AgentMessage::user("hi", 5),
        AgentMessage::user_blocks(vec![ContentBlock::text("b")], 1),
    ] {
        let back: AgentMessage = serde_json::from_str(&json(&m)).expect("parse");
        assert_eq!(back, m);
    }
}
