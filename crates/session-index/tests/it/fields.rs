//! Observing a typed entry (`Index::observe_entry`) against parsing its payload
//! (`Index::observe`): the same index, and the typed path taken where it may be.

use std::path::Path;

use serde_json::{Value, json};
use session_index::{Index, kinds, sidecar_path};
use session_journal::Durability;
use session_journal::vfs::Vfs;
use session_types::{AgentMessage, ContentBlock, Entry, EntryRef, UserContent};

use crate::support::{fingerprint, open, sim, write, writer};

const HEAD: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn entry(v: Value) -> Entry {
    serde_json::from_value(v).unwrap()
}

fn ts(i: usize) -> String {
    format!("2026-01-01T00:00:{:02}.000Z", i % 60)
}

fn user(id: &str, parent: Option<&str>, i: usize, content: Value) -> Entry {
    entry(
        json!({"type":"message","id":id,"parentId":parent,"timestamp":ts(i),
        "message":{"role":"user","content":content,"timestamp":1_767_225_600_000_u64 + i as u64}}),
    )
}

/// Entries of every modelled type, unknown ones, and the shapes whose text reads
/// differently from their types (repeated keys, unknown blocks and roles).
fn varied() -> Vec<Entry> {
    let mut out = vec![
        // The first user message has no text: the next one's is the first message.
        user(
            "u0",
            None,
            0,
            json!([{"type":"image","data":"AA==","mimeType":"image/png"}]),
        ),
        user(
            "u1",
            Some("u0"),
            1,
            json!([{"type":"text","text":"a"},{"type":"image","data":"","mimeType":"x"},{"type":"text","text":"b"}]),
        ),
        entry(
            json!({"type":"message","id":"a1","parentId":"u1","timestamp":ts(2),"message":{
            "role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"},
                {"type":"toolCall","id":"c","name":"n","arguments":{"deep":[[[[{}]]]]}}],
            "api":"m","provider":"p","model":"m","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,
            "totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
            "stopReason":"stop","timestamp":1.5e12}}),
        ),
        entry(
            json!({"type":"message","id":"t1","parentId":"a1","timestamp":ts(3),"message":{
            "role":"toolResult","toolCallId":"c","toolName":"n","content":[{"type":"text","text":"out"}],
            "isError":false,"timestamp":3}}),
        ),
        entry(
            json!({"type":"message","id":"b1","parentId":"t1","timestamp":"not a date","message":{
            "role":"bashExecution","command":"ls","output":"","exitCode":null,"cancelled":false,
            "truncated":false,"timestamp":4}}),
        ),
        entry(
            json!({"type":"message","id":"h1","parentId":"b1","timestamp":ts(5),
            "message":{"role":"hookMessage","content":"legacy"}}),
        ),
        entry(
            json!({"type":"model_change","id":"m1","parentId":"h1","timestamp":ts(6),"provider":"p","modelId":"m"}),
        ),
        entry(
            json!({"type":"thinking_level_change","id":"k1","parentId":"m1","timestamp":ts(7),"thinkingLevel":"high"}),
        ),
        entry(
            json!({"type":"label","id":"l1","parentId":"k1","timestamp":ts(8),"targetId":"u1","label":"start"}),
        ),
        entry(
            json!({"type":"label","id":"l2","parentId":"l1","timestamp":ts(9),"targetId":"a1","label":"x"}),
        ),
        entry(json!({"type":"label","id":"l3","parentId":"l2","timestamp":ts(10),"targetId":"a1"})),
        entry(
            json!({"type":"session_info","id":"n1","parentId":"l3","timestamp":ts(11),"name":"  named \u{feff}"}),
        ),
        entry(
            json!({"type":"session_state","id":"s1","parentId":"n1","timestamp":ts(12),"state":"sleep"}),
        ),
        entry(
            json!({"type":"child_usage_attributed","id":"c1","parentId":"s1","timestamp":ts(13),"targetId":"a1",
            "childUsage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
            "aggregateUsage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}),
        ),
        entry(
            json!({"type":"compaction","id":"cp","parentId":"c1","timestamp":ts(14),"summary":"S","firstKeptEntryId":"u1","tokensBefore":9}),
        ),
        entry(
            json!({"type":"branch_summary","id":"bs","parentId":"u0","timestamp":ts(15),"fromId":"u0","summary":"B"}),
        ),
        entry(
            json!({"customType":"ext","data":{"k":1},"type":"custom","id":"cu","parentId":"bs","timestamp":ts(16)}),
        ),
        entry(
            json!({"customType":"ext","content":"hi","display":true,"type":"custom_message","id":"cm","parentId":"cu","timestamp":ts(17)}),
        ),
        entry(
            json!({"type":"agent_status","id":"as","parentId":"cm","timestamp":ts(18),"status":{"summary":"s"}}),
        ),
        entry(
            json!({"type":"git_state","id":"gs","parentId":"as","timestamp":ts(19),"git":{"dirty":true}}),
        ),
        // Unknown types, one with a message object.
        entry(json!({"type":"future","id":"f1","parentId":"gs","timestamp":ts(20),"label":7})),
        entry(
            json!({"type":"future","id":"f2","parentId":"f1","message":{"role":"user","content":"?"}}),
        ),
        // Orphans, later resolved; a self-parent; an id-less entry; a repeated id.
        entry(
            json!({"type":"model_change","id":"o1","parentId":"ghost","timestamp":ts(21),"provider":"p","modelId":"m"}),
        ),
        entry(
            json!({"type":"model_change","id":"ghost","parentId":null,"timestamp":ts(22),"provider":"p","modelId":"m"}),
        ),
        entry(
            json!({"type":"model_change","id":"self","parentId":"self","timestamp":ts(23),"provider":"p","modelId":"m"}),
        ),
        entry(json!({"type":"model_change","timestamp":ts(24),"provider":"p","modelId":"m"})),
        entry(
            json!({"type":"model_change","id":"u1","parentId":"ghost","timestamp":ts(25),"provider":"p","modelId":"m"}),
        ),
        // An unmodelled field that is a key the index reads (not repeated in the text).
        entry(
            json!({"type":"message","id":"x1","parentId":"u1","timestamp":ts(26),"label":"l",
            "message":{"role":"user","content":"later","timestamp":5}}),
        ),
        // An unknown block that reads as text.
        user(
            "x2",
            Some("x1"),
            27,
            json!([{"type":"text","text":["a",["b",null]],"n":1}]),
        ),
        entry(
            json!({"type":"session_info","id":"n2","parentId":"x2","timestamp":ts(28),"name":"  "}),
        ),
    ];
    // Repeated keys in the text: only built through the types.
    let mut dup = entry(
        json!({"type":"label","id":"d1","parentId":"n2","timestamp":ts(29),"targetId":"u1","label":"dup"}),
    );
    if let Entry::Label(l) = &mut dup {
        l.extra.insert("type".into(), json!("other"));
    }
    out.push(dup);
    let mut dup = user("d2", Some("d1"), 30, json!("t"));
    if let Entry::Message(m) = &mut dup
        && let AgentMessage::User(u) = &mut m.message
    {
        u.extra.insert("timestamp".into(), json!(1));
    }
    out.push(dup);
    let mut dup = user("d3", Some("d2"), 31, json!([{"type":"text","text":"t"}]));
    if let Entry::Message(m) = &mut dup
        && let AgentMessage::User(u) = &mut m.message
        && let UserContent::Blocks(b) = &mut u.content
        && let ContentBlock::Text(t) = &mut b[0]
    {
        t.extra.insert("text".into(), json!("again"));
    }
    out.push(dup);
    out
}

/// Appends `entries` to a fresh journal, feeding one index by parsing each payload
/// and another from the typed entries; returns both.
fn observe_both(
    entries: &[Entry],
    path: &Path,
) -> (Index, Index, std::sync::Arc<session_testkit::sim::SimFs>) {
    let fs = sim();
    write(fs.clone(), path, HEAD);
    let (mut parsed, _) = open(fs.clone(), path);
    let mut typed = parsed.clone();
    // A third index fed the message entries in parts (a message its appender keeps),
    // as the manager's `append_message` feeds it.
    let mut parts = parsed.clone();
    let mut w = writer(fs.clone(), path);
    let mut in_parts = 0;
    for e in entries {
        let tag = kinds::id_tag(e.id().unwrap_or(""));
        let (a, payload) = w
            .append_encoded(kinds::ENTRY, tag, Durability::Buffered, |b| {
                e.write_json(b).unwrap()
            })
            .unwrap();
        assert_eq!(payload, e.to_json().as_bytes());
        parsed.observe(kinds::ENTRY, &a, payload).unwrap();
        typed.observe_entry(&a, payload, e).unwrap();
        match e {
            Entry::Message(m) if m.extra.is_empty() => {
                let split = EntryRef::Message {
                    base: &m.base,
                    message: &m.message,
                };
                assert_eq!(split.to_json().as_bytes(), payload);
                parts.observe_entry_timed(&a, payload, split, None).unwrap();
                in_parts += 1;
            }
            e => parts.observe_entry(&a, payload, e).unwrap(),
        }
    }
    w.sync().unwrap();
    assert!(in_parts > 0, "no message entry in parts");
    assert_eq!(fingerprint(&parts), fingerprint(&typed));
    (parsed, typed, fs)
}

#[test]
fn observing_typed_entries_gives_the_index_parsing_their_payloads_gives() {
    let path = Path::new("/s/a.jsonl");
    let entries = varied();
    let (parsed, typed, fs) = observe_both(&entries, path);
    assert_eq!(fingerprint(&typed), fingerprint(&parsed));
    // What the manager's appends feed the index is what a rebuild reads back.
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&typed), fingerprint(&rebuilt));
    let read = |fs: &dyn Vfs| {
        let f = fs
            .open(&sidecar_path(path), session_journal::vfs::OpenMode::Read)
            .unwrap();
        let mut buf = vec![0; f.len().unwrap() as usize];
        f.read_exact_at(0, &mut buf).unwrap();
        buf
    };
    let capture = session_journal::Capture {
        journal_id: typed.journal_id(),
        len: typed.covered_len(),
        last_seq: typed.covered_seq(),
    };
    parsed.save(capture).unwrap();
    let from_parsed = read(fs.as_ref());
    typed.save(capture).unwrap();
    assert_eq!(read(fs.as_ref()), from_parsed, "sidecar bytes");
    // The cases this test exists for are all there.
    let summary = typed.summary();
    assert_eq!(summary.first_message, "a b");
    assert_eq!(typed.name(), None);
    assert_eq!(typed.lifecycle_state(), Some("archived"));
    assert_eq!(typed.labels().collect::<Vec<_>>(), [("u1", "start")]);
    let c = typed.counts();
    // The entries whose text repeats a key are read as JSON.parse reads them (the last
    // value wins), not counted unparsable (issue 14).
    assert_eq!((c.unparsable, c.without_id, c.duplicate_ids), (0, 1, 1));
}

#[test]
fn the_typed_path_reads_no_payload_and_declines_what_only_the_text_tells() {
    // White box: hand the typed path a payload that does not parse. An entry it takes
    // from its types is indexed whole; one it declines is parsed and found unparsable.
    let entries = varied();
    let path = Path::new("/s/b.jsonl");
    let fs = sim();
    write(fs.clone(), path, HEAD);
    let (mut ix, _) = open(fs.clone(), path);
    let mut w = writer(fs.clone(), path);
    let mut declined = Vec::new();
    for e in &entries {
        let a = w.append(kinds::ENTRY, b"-", Durability::Buffered).unwrap();
        let before = ix.counts().unparsable;
        ix.observe_entry(&a, b"-", e).unwrap();
        if ix.counts().unparsable > before {
            declined.push(e.id().unwrap_or("").to_owned());
        }
    }
    // Unknown types and roles, an agent status (kept as its JSON text says), an
    // unknown block in a user message, repeated keys.
    assert_eq!(
        declined,
        ["h1", "as", "f1", "f2", "x1", "x2", "d1", "d2", "d3"]
    );
}

#[test]
fn a_huge_first_message_is_kept_as_the_same_bounded_excerpt_typed_and_parsed() {
    use session_index::FIRST_MESSAGE_MAX_BYTES as MAX;
    // Escapes (control characters, quotes), multi-byte characters and a surrogate
    // pair around the cut; strings longer than the whole-decode bound (64 KiB) too.
    let unit = "ab\u{1}\"\\é😀\n";
    let cases = [
        json!(unit.repeat(20_000)),
        json!("x".repeat(MAX - 1) + "😀" + &"y".repeat(100_000)),
        json!("\u{2}".repeat(MAX * 3)),
        json!([{"type":"text","text":"a".repeat(MAX - 1)},{"type":"text","text":"b".repeat(200_000)}]),
        json!([{"type":"text","text":["é".repeat(MAX), ["z", null]]}]),
        json!("short"),
    ];
    for (k, content) in cases.into_iter().enumerate() {
        let path = format!("/s/huge-{k}.jsonl");
        let path = Path::new(&path);
        let whole = match &content {
            Value::String(s) => s.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .map(|b| match &b["text"] {
                    Value::String(s) => s.clone(),
                    _ => "é".repeat(MAX) + ",z,",
                })
                .collect::<Vec<_>>()
                .join(" "),
            _ => unreachable!(),
        };
        let entries = [user("u", None, 0, content)];
        let (parsed, typed, fs) = observe_both(&entries, path);
        assert_eq!(fingerprint(&typed), fingerprint(&parsed), "case {k}");
        let (rebuilt, _) = open(fs.clone(), path);
        assert_eq!(fingerprint(&typed), fingerprint(&rebuilt), "case {k}");
        let s = rebuilt.summary();
        let mut cut = MAX.min(whole.len());
        while !whole.is_char_boundary(cut) {
            cut -= 1;
        }
        assert_eq!(s.first_message, whole[..cut], "case {k}");
        assert_eq!(s.first_message_truncated, whole.len() > MAX, "case {k}");
    }
}
