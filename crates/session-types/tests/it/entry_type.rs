//! The entry-type vocabulary: one table gives the names, the serde tags, the variants
//! and the strict reading's dispatch.

use std::collections::BTreeSet;

use session_types::{Entry, EntryType, EntryTypeMap, Envelope, Record, SessionHeader};

/// One valid entry of every type this version models.
const SAMPLES: [&str; 14] = [
    r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
    r#"{"type":"thinking_level_change","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","thinkingLevel":"high"}"#,
    r#"{"type":"model_change","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","provider":"p","modelId":"m"}"#,
    r#"{"type":"service_tier_change","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","serviceTier":"priority"}"#,
    r#"{"type":"compaction","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"b","tokensBefore":1}"#,
    r#"{"type":"branch_summary","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","fromId":"root","summary":"s"}"#,
    r#"{"type":"custom","customType":"x","data":1,"id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}"#,
    r#"{"type":"child_usage_attributed","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","targetId":"b","childUsage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"aggregateUsage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}"#,
    r#"{"type":"custom_message","customType":"x","content":"c","display":true,"id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}"#,
    r#"{"type":"label","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","targetId":"b","label":"l"}"#,
    r#"{"type":"session_info","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","name":"n"}"#,
    r#"{"type":"session_state","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","state":"active"}"#,
    r#"{"type":"agent_status","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","status":{"summary":"s"}}"#,
    r#"{"type":"git_state","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","git":{"branch":"main"}}"#,
];

#[test]
fn names_round_trip_and_unknown_names_are_none() {
    for t in EntryType::ALL {
        assert_eq!(EntryType::from_name(t.as_str()), Some(t));
        assert_eq!(t.as_str().parse::<EntryType>(), Ok(t));
        assert_eq!(t.to_string(), t.as_str());
    }
    let names: BTreeSet<&str> = EntryType::ALL.iter().map(|t| t.as_str()).collect();
    assert_eq!(names.len(), EntryType::ALL.len(), "names are distinct");
    for other in [
        "",
        "Message",
        "message ",
        SessionHeader::TYPE,
        "future_entry_type",
    ] {
        assert_eq!(EntryType::from_name(other), None, "{other:?}");
        let err = other.parse::<EntryType>().unwrap_err();
        assert_eq!(err.to_string(), format!("unknown entry type `{other}`"));
    }
}

/// Every variant's serde tag is its `EntryType` name: a sample of each type reads as
/// its own variant, reports its own type, and writes its own tag back.
#[test]
fn every_type_reads_as_its_own_variant() {
    let mut seen = BTreeSet::new();
    for text in SAMPLES {
        let e = Entry::parse(text).unwrap_or_else(|err| panic!("{text}: {err}"));
        assert!(!matches!(e, Entry::Unknown(_)), "{text}");
        let t = e.known_type().expect("a modelled type");
        assert_eq!(e.entry_type(), Some(t.as_str()));
        let out: serde_json::Value = serde_json::from_str(&e.to_json()).expect("JSON");
        assert_eq!(out["type"], t.as_str());
        assert_eq!(
            Envelope::parse(text).expect("envelope").known_type(),
            Some(t)
        );
        seen.insert(t.as_str());
    }
    assert_eq!(seen.len(), EntryType::ALL.len(), "one sample per type");
}

/// A known type in the wrong shape is named in the strict reading's error, with the
/// field its own model misses (not another type's).
#[test]
fn a_wrong_shape_is_reported_against_its_own_type() {
    for t in EntryType::ALL {
        let text = format!(r#"{{"type":"{t}","id":"a","parentId":null,"git":5,"state":[]}}"#);
        match Entry::parse(&text) {
            // Every field of `session_info` is optional.
            Ok(e) => assert_eq!((t, e.known_type()), (EntryType::SessionInfo, Some(t))),
            Err(err) => {
                assert!(err.message.starts_with(&format!("`{t}` entry: ")), "{err}");
                // Only `git_state` reads `git` (as its `GitState`).
                assert_eq!(
                    err.message.contains("GitState"),
                    t == EntryType::GitState,
                    "{t}: {err}"
                );
            }
        }
        // The lenient reading keeps it whole and still knows its type.
        let e = Entry::read(&text).expect("an object");
        assert_eq!(e.known_type(), Some(t));
    }
}

#[test]
fn an_unknown_type_is_unknown_and_a_header_is_no_entry() {
    let e = Entry::parse(r#"{"type":"future_entry_type","id":"a"}"#).expect("parses");
    assert!(matches!(e, Entry::Unknown(_)));
    assert_eq!(e.known_type(), None);
    let header = r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#;
    assert!(matches!(Record::parse(header), Ok(Record::Header(_))));
    let env = Envelope::parse(header).expect("envelope");
    assert!(env.is_header());
    assert_eq!(env.known_type(), None);
}

#[test]
fn a_map_by_type_answers_for_every_type() {
    let names = EntryTypeMap::NAMES;
    for t in EntryType::ALL {
        assert_eq!(*names.get(t), t.as_str());
    }
}

/// `docs/format.md` §1.1 has a row for every record type, and only those.
#[test]
fn the_format_spec_lists_every_type() {
    let spec = std::fs::read_to_string(crate::fixtures_dir().join("../../docs/format.md"))
        .expect("docs/format.md");
    let section = spec
        .split("### 1.1 Records")
        .nth(1)
        .and_then(|s| s.split("\n### ").next())
        .expect("a §1.1 section");
    let listed: BTreeSet<&str> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let mut expected: BTreeSet<&str> = EntryType::ALL.iter().map(|t| t.as_str()).collect();
    expected.insert(SessionHeader::TYPE);
    assert_eq!(listed, expected);
}
