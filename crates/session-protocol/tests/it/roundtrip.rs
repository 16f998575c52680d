//! Every method's request and result, every notification: written, read back, equal.

use std::collections::BTreeSet;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use session_protocol::*;

fn from<T: DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("sample fits its type")
}

/// Writes the request and a result, reads both back through the line parser, and
/// checks they are what was written; returns the method for coverage.
fn rt<C: Call>(params: C::Params, result: C::Result) -> Method
where
    C::Result: PartialEq + std::fmt::Debug,
{
    let request = C::request(params);
    assert_eq!(request.method(), C::METHOD);
    let id = RequestId::String(format!("r-{}", C::METHOD.as_str()));
    let line = encode_request(&id, &request);
    assert!(!line.contains('\n'), "one line: {line}");
    let (read_id, read) = parse_request(line.as_bytes(), LineLimits::default())
        .unwrap_or_else(|r| panic!("{line}: {r:?}"));
    assert_eq!(read_id, id);
    assert_eq!(read, request, "{line}");
    let params: Value = serde_json::from_str(&request.params_json()).expect("params are JSON");
    crate::schema::assert_fits(&line, crate::schema::params_of(C::METHOD.as_str()), &params);

    let line = encode_result(&id, &result);
    let Incoming::Response { id: rid, outcome } =
        Incoming::parse(line.as_bytes(), LineLimits::default()).expect("a response")
    else {
        panic!("not a response: {line}");
    };
    assert_eq!(rid, id);
    let raw = outcome.expect("a result");
    let back: C::Result = serde_json::from_str(raw.get()).expect("result fits its type");
    assert_eq!(back, result, "{line}");
    // And the result's JSON is stable: writing it again gives the same text.
    assert_eq!(encode_result(&id, &back), line);
    let written: Value = serde_json::from_str(raw.get()).expect("a result is JSON");
    crate::schema::assert_fits(
        &line,
        crate::schema::result_of(C::METHOD.as_str()),
        &written,
    );
    C::METHOD
}

fn entry() -> session_types::Entry {
    from(
        json!({"type":"message","id":"e1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",
        "message":{"role":"user","content":"hi","timestamp":1}}),
    )
}

fn header() -> session_types::SessionHeader {
    from(
        json!({"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}),
    )
}

fn usage() -> session_types::Usage {
    from(
        json!({"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,
        "cost":{"input":0.1,"output":0.2,"cacheRead":0,"cacheWrite":0,"total":0.3}}),
    )
}

fn opened() -> SessionOpened {
    SessionOpened {
        session_id: "s1".into(),
        session_file: "/h/sessions/s1.jsonl".into(),
        header: header(),
        leaf_id: Some(session_types::EntryId::new("e1")),
    }
}

fn appended() -> Appended {
    Appended {
        entry_id: session_types::EntryId::new("e2"),
    }
}

fn read(limits: bool) -> ReadParams {
    ReadParams {
        session_id: "s1".into(),
        limits: limits.then_some(ReadLimits {
            max_source_entries: Some(10),
            max_source_bytes: None,
        }),
    }
}

fn sid() -> SessionParams {
    SessionParams {
        session_id: "s1".into(),
    }
}

fn entry_read() -> EntryReadParams {
    EntryReadParams {
        session_id: "s1".into(),
        entry_id: "e1".into(),
        limits: None,
    }
}

#[test]
fn every_method_round_trips() {
    let s = || "s1".to_owned();
    let d = Some(Durability::Buffered);
    let covered: Vec<Method> = vec![
        rt::<call::Initialize>(
            InitializeParams {
                protocol_version: PROTOCOL_VERSION,
                client_info: Some(PeerInfo {
                    name: "t".into(),
                    version: "0".into(),
                }),
            },
            InitializeResult {
                protocol_version: PROTOCOL_VERSION,
                server_info: PeerInfo {
                    name: "bcs".into(),
                    version: "0.1.0".into(),
                },
            },
        ),
        rt::<call::StoreCreate>(
            CreateParams {
                cwd: "/w".into(),
                session_id: Some(s()),
                parent_session: None,
            },
            opened(),
        ),
        rt::<call::StoreOpen>(
            OpenParams {
                path: Some("/p".into()),
                session_id: None,
            },
            opened(),
        ),
        rt::<call::StoreContinueRecent>(ContinueRecentParams { cwd: "/w".into() }, opened()),
        rt::<call::StoreForkFrom>(
            ForkFromParams {
                source: "/p".into(),
                target_cwd: "/w".into(),
            },
            opened(),
        ),
        rt::<call::StoreList>(
            ListParams {
                cwd: "/w".into(),
                progress: Some(true),
            },
            Listing {
                sessions: vec![
                    from(
                        json!({"path":"/p","id":"s1","cwd":"/w","name":"n","created":"2026-01-01T00:00:00.000Z","modified":null,"messageCount":2,"firstMessage":"hi"}),
                    ),
                    // Odd header values as stored: a numeric id, a parentSession object.
                    from(
                        json!({"path":"/q","id":5,"cwd":"","parentSessionPath":{"a":1},"created":null,"modified":null,"messageCount":0,"firstMessage":""}),
                    ),
                ],
            },
        ),
        rt::<call::StoreListAll>(
            ListAllParams { progress: None },
            Listing { sessions: vec![] },
        ),
        rt::<call::StoreDelete>(
            DeleteParams { session_id: s() },
            Deleted {
                removed: vec!["/p".into()],
            },
        ),
        rt::<call::StoreImport>(
            ImportParams {
                path: "/l.jsonl".into(),
            },
            Imported {
                session_id: s(),
                session_file: "/p".into(),
                already_imported: false,
                entries: 3,
                issues: 1,
            },
        ),
        rt::<call::StoreImportMany>(
            ImportManyParams {
                paths: vec!["/l.jsonl".into(), "/gone.jsonl".into()],
            },
            ImportedMany {
                results: vec![
                    ImportManyItem {
                        path: "/l.jsonl".into(),
                        imported: Some(Imported {
                            session_id: s(),
                            session_file: "/p".into(),
                            already_imported: true,
                            entries: 0,
                            issues: 0,
                        }),
                        error: None,
                    },
                    ImportManyItem {
                        path: "/gone.jsonl".into(),
                        imported: None,
                        error: Some(ImportManyError {
                            code: code::STORE,
                            message: "/gone.jsonl: cannot open".into(),
                        }),
                    },
                ],
            },
        ),
        rt::<call::StoreExport>(
            ExportParams {
                session_id: s(),
                path: "/o.jsonl".into(),
            },
            Exported {
                path: "/o.jsonl".into(),
                records: 4,
                bytes: 400,
            },
        ),
        rt::<call::SessionClose>(sid(), Empty {}),
        rt::<call::SessionSync>(sid(), Empty {}),
        rt::<call::SessionNewSession>(
            NewSessionParams {
                session_id: s(),
                new_session_id: None,
                parent_session: Some("/p".into()),
            },
            opened(),
        ),
        rt::<call::SessionSetSessionFile>(
            SetSessionFileParams {
                session_id: s(),
                path: "/q".into(),
            },
            opened(),
        ),
        rt::<call::SessionCreateBranchedSession>(
            CreateBranchedSessionParams {
                session_id: s(),
                leaf_id: "e1".into(),
            },
            opened(),
        ),
        rt::<call::AppendMessage>(
            AppendMessageParams {
                session_id: s(),
                message: from(
                    json!({"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}),
                ),
                durability: d,
            },
            appended(),
        ),
        rt::<call::AppendThinkingLevelChange>(
            AppendThinkingLevelChangeParams {
                session_id: s(),
                thinking_level: "high".into(),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendServiceTierChange>(
            AppendServiceTierChangeParams {
                session_id: s(),
                service_tier: "flex".into(),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendModelChange>(
            AppendModelChangeParams {
                session_id: s(),
                provider: "p".into(),
                model_id: "m".into(),
                durability: d,
            },
            appended(),
        ),
        rt::<call::AppendCompaction>(
            AppendCompactionParams {
                session_id: s(),
                summary: "sum".into(),
                first_kept_entry_id: "e1".into(),
                tokens_before: 1000,
                details: Some(json!({"k":[1,2]})),
                from_hook: Some(false),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendCustomEntry>(
            AppendCustomEntryParams {
                session_id: s(),
                custom_type: "ext".into(),
                data: Some(json!(null)),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendChildUsageAttribution>(
            AppendChildUsageAttributionParams {
                session_id: s(),
                target_id: "e1".into(),
                child_usage: usage(),
                aggregate_usage: usage(),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendSessionInfo>(
            AppendSessionInfoParams {
                session_id: s(),
                name: "n".into(),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendSessionState>(
            AppendSessionStateParams {
                session_id: s(),
                state: from(json!("archived")),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendAgentStatus>(
            AppendAgentStatusParams {
                session_id: s(),
                status: from(json!({"summary":"working","taskState":"working"})),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendGitState>(
            AppendGitStateParams {
                session_id: s(),
                git: from(json!({"branch":"main"})),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendCustomMessageEntry>(
            AppendCustomMessageEntryParams {
                session_id: s(),
                custom_type: "note".into(),
                content: from(json!("text")),
                display: true,
                details: None,
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendLabelChange>(
            AppendLabelChangeParams {
                session_id: s(),
                target_id: "e1".into(),
                label: Some("x".into()),
                durability: None,
            },
            appended(),
        ),
        rt::<call::AppendEntry>(
            AppendEntryParams {
                session_id: s(),
                entry: from(json!({"type":"future_kind","id":"z","parentId":null,"odd":[1]})),
                durability: None,
            },
            appended(),
        ),
        rt::<call::Branch>(
            BranchParams {
                session_id: s(),
                entry_id: None,
            },
            Empty {},
        ),
        rt::<call::BranchWithSummary>(
            BranchWithSummaryParams {
                session_id: s(),
                from_id: Some(session_types::EntryId::new("e1")),
                summary: "gone".into(),
                details: None,
                from_hook: None,
                durability: None,
            },
            appended(),
        ),
        rt::<call::ReadLeafEntry>(read(false), MaybeEntry { entry: None }),
        rt::<call::ReadEntry>(entry_read(), OneEntry { entry: entry() }),
        rt::<call::ReadLabel>(
            entry_read(),
            Label {
                label: Some("x".into()),
            },
        ),
        rt::<call::ReadBranch>(
            ReadBranchParams {
                session_id: s(),
                from_id: Some("e1".into()),
                limits: None,
            },
            Entries {
                entries: vec![entry()],
            },
        ),
        rt::<call::ReadBranches>(
            ReadBranchesParams {
                session_id: s(),
                leaf_ids: vec!["e1".into()],
                limits: None,
            },
            Branches {
                branches: vec![vec![entry()], vec![]],
            },
        ),
        rt::<call::ReadEntries>(
            read(true),
            Entries {
                entries: vec![entry()],
            },
        ),
        rt::<call::ReadTree>(
            read(false),
            Tree {
                nodes: vec![TreeNode {
                    entry: entry(),
                    label: None,
                    label_timestamp: None,
                    depth: 0,
                    children: vec![],
                }],
                roots: vec![0],
            },
        ),
        rt::<call::ReadEntryRetention>(
            EntryParams {
                session_id: s(),
                entry_id: "e1".into(),
            },
            RetentionResult {
                retention: Some(json!({"line":3})),
            },
        ),
        rt::<call::BuildSessionContext>(
            read(false),
            SessionContext {
                messages: vec![from(json!({"role":"user","content":"hi","timestamp":1}))],
                thinking_level: Some(json!("high")),
                model: json!({"provider":"p","modelId":"m"}),
                service_tier: None,
            },
        ),
        rt::<call::GetHeader>(sid(), HeaderResult { header: header() }),
        rt::<call::GetMetadata>(
            sid(),
            Metadata {
                session_id: s(),
                session_file: "/p".into(),
                session_dir: "/h/sessions".into(),
                cwd: "/w".into(),
                session_name: None,
                leaf_id: None,
            },
        ),
        rt::<call::GetArtifactDir>(
            sid(),
            PathResult {
                path: "/h/session-artifacts/s1".into(),
            },
        ),
        rt::<call::SessionFollow>(
            sid(),
            Followed {
                last_entry_id: Some("e1".into()),
            },
        ),
        rt::<call::SessionUnfollow>(sid(), Empty {}),
        rt::<call::StoreFollow>(StoreFollowParams {}, Empty {}),
        rt::<call::StoreUnfollow>(StoreFollowParams {}, Empty {}),
    ];
    let covered: BTreeSet<&str> = covered.iter().map(|m| m.as_str()).collect();
    let all: BTreeSet<&str> = Method::ALL.iter().map(|m| m.as_str()).collect();
    assert_eq!(covered, all, "every method has a round-trip sample");
}

#[test]
fn method_names_are_unique_and_read_back() {
    let mut seen = BTreeSet::new();
    for m in Method::ALL {
        assert!(seen.insert(m.as_str()), "{} twice", m.as_str());
        assert_eq!(Method::from_name(m.as_str()), Some(*m));
        let (group, name) = m.as_str().split_once('/').unwrap_or(("", m.as_str()));
        assert!(matches!(group, "" | "store" | "session"), "{}", m.as_str());
        assert!(
            name.chars().next().is_some_and(|c| c.is_ascii_lowercase()),
            "camelCase {name}"
        );
    }
    assert_eq!(Method::from_name("session/AppendMessage"), None);
}

#[test]
fn params_are_camel_case_on_the_wire() {
    let line = encode_request(
        &RequestId::Number(3),
        &call::AppendCompaction::request(AppendCompactionParams {
            session_id: "s".into(),
            summary: "x".into(),
            first_kept_entry_id: "e".into(),
            tokens_before: 5,
            details: None,
            from_hook: Some(true),
            durability: Some(Durability::Durable),
        }),
    );
    assert_eq!(
        line,
        r#"{"jsonrpc":"2.0","id":3,"method":"session/appendCompaction","params":{"sessionId":"s","summary":"x","firstKeptEntryId":"e","tokensBefore":5,"fromHook":true,"durability":"durable"}}"#
    );
}

fn note_rt(n: Notification) {
    let line = encode_notification(&n);
    let Incoming::Notification { method, params } =
        Incoming::parse(line.as_bytes(), LineLimits::default()).expect("parses")
    else {
        panic!("not a notification: {line}");
    };
    assert_eq!(method, n.method());
    let written: Value = serde_json::from_str(&n.params_json()).expect("params are JSON");
    crate::schema::assert_fits(
        &line,
        crate::schema::notification_params_of(&method),
        &written,
    );
    assert_eq!(
        Notification::from_params(&method, params).expect("typed"),
        n
    );
}

#[test]
fn every_notification_round_trips() {
    let samples = [
        Notification::Initialized(InitializedParams {}),
        Notification::ListProgress(ListProgressParams {
            request_id: RequestId::Number(4),
            loaded: 1,
            total: 2,
        }),
        Notification::Appended(Box::new(AppendedParams {
            session_id: "s1".into(),
            entry: entry(),
        })),
        Notification::SessionLagged(SessionLaggedParams {
            session_id: "s1".into(),
        }),
        Notification::StoreChanged(StoreChangedParams {
            session_id: "s1".into(),
            session_file: "/p".into(),
            change: StoreChange::State {
                state: from(json!("archived")),
            },
        }),
        Notification::StoreLagged(StoreLaggedParams {}),
    ];
    let names: BTreeSet<&str> = samples.iter().map(Notification::method).collect();
    assert_eq!(names, Notification::METHODS.iter().copied().collect());
    // Who sends each (the TypeScript splits its notification map by it).
    assert_eq!(samples[0].direction(), Direction::ToOwner);
    assert_eq!(samples[1].direction(), Direction::ToClient);
    for n in samples {
        note_rt(n);
    }
    // Every kind of store change, as the agents view reads it.
    for (change, kind) in [
        (
            StoreChange::Created {
                cwd: Some("/w".into()),
            },
            "created",
        ),
        (StoreChange::Renamed { name: None }, "renamed"),
        (StoreChange::Deleted, "deleted"),
        (
            StoreChange::State {
                state: from(json!("active")),
            },
            "sessionState",
        ),
        (
            StoreChange::AgentStatus {
                status: from(json!({"summary":"tests"})),
            },
            "agentStatus",
        ),
    ] {
        assert_eq!(serde_json::to_value(&change).expect("json")["kind"], kind);
        note_rt(Notification::StoreChanged(StoreChangedParams {
            session_id: "s1".into(),
            session_file: "/p".into(),
            change,
        }));
    }
}

/// A value's JSON text, for the few assertions on exact shapes.
pub(crate) fn text<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serializes")
}

#[test]
fn optional_fields_are_absent_not_null() {
    assert_eq!(
        text(&OpenParams {
            path: None,
            session_id: Some("s".into())
        }),
        r#"{"sessionId":"s"}"#
    );
    assert_eq!(text(&Empty {}), "{}");
}

/// A stored `message` that is not an object reaches the context as it is (the
/// reference passes it through); the answer reads back and fits the schema.
#[test]
fn a_context_message_that_is_not_an_object_reads_back() {
    let messages = vec![
        from(json!({"role":"user","content":"hi","timestamp":1})),
        session_types::AgentMessage::NotAnObject(json!("text")),
        session_types::AgentMessage::NotAnObject(json!(5)),
        session_types::AgentMessage::NotAnObject(Value::Null),
        session_types::AgentMessage::NotAnObject(json!([1, {"role": "user"}])),
    ];
    rt::<call::BuildSessionContext>(
        read(false),
        SessionContext {
            messages,
            thinking_level: None,
            model: Value::Null,
            service_tier: None,
        },
    );
}
