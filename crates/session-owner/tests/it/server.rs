//! The served API: handshake, create, append, reads, context, close.

use serde_json::json;
use session_protocol::*;

use crate::support::*;

#[tokio::test]
async fn initialize_comes_first_once_and_a_newer_major_is_refused_by_name() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::connect(&owner);

    let before = c
        .call::<call::StoreListAll>(ListAllParams { progress: None })
        .await;
    assert_eq!(
        before.expect_err("refused"),
        Error::NotInitialized {
            method: "store/listAll".into()
        }
    );

    let newer = ProtocolVersion {
        major: PROTOCOL_VERSION.major + 1,
        minor: 0,
    };
    let e = c
        .call::<call::Initialize>(InitializeParams {
            protocol_version: newer,
            client_info: None,
        })
        .await
        .expect_err("refused");
    assert_eq!(
        e,
        Error::UnsupportedProtocol {
            client: newer,
            server: PROTOCOL_VERSION
        }
    );
    assert_eq!(e.code(), code::UNSUPPORTED_PROTOCOL);
    assert!(
        e.to_string().contains(&format!(
            "the client speaks 2.0, this owner speaks {}.{}",
            PROTOCOL_VERSION.major, PROTOCOL_VERSION.minor
        )),
        "{e}"
    );

    // A newer minor of the same major is served; the answer names the server's version.
    let r = c
        .call::<call::Initialize>(InitializeParams {
            protocol_version: ProtocolVersion {
                major: PROTOCOL_VERSION.major,
                minor: 99,
            },
            client_info: Some(PeerInfo {
                name: "test".into(),
                version: "0".into(),
            }),
        })
        .await
        .expect("served");
    assert_eq!(r.protocol_version, PROTOCOL_VERSION);
    assert_eq!(r.server_info.name, "bcs-owner");

    let again = c
        .call::<call::Initialize>(InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            client_info: None,
        })
        .await;
    assert_eq!(again.expect_err("refused"), Error::AlreadyInitialized);
}

#[tokio::test]
async fn create_append_read_and_build_the_context() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    assert_eq!(s.leaf_id, None);
    assert_eq!(s.header.cwd.as_deref(), Some("/work"));
    assert!(std::path::Path::new(&s.session_file).starts_with(home.path()));
    let sid = s.session_id.as_str();

    let a = c
        .call::<call::AppendMessage>(append(sid, "hello", None))
        .await
        .expect("append");
    c.call::<call::AppendThinkingLevelChange>(AppendThinkingLevelChangeParams {
        session_id: sid.into(),
        thinking_level: "high".into(),
        durability: None,
    })
    .await
    .expect("append");
    let b = c
        .call::<call::AppendMessage>(append(sid, "again", Some(Durability::Buffered)))
        .await
        .expect("append");

    let branch = c.branch(sid).await;
    assert_eq!(branch.entries.len(), 3);
    assert_eq!(branch.entries[0].id(), Some(a.entry_id.as_str()));
    assert_eq!(branch.entries[2].id(), Some(b.entry_id.as_str()));

    let ctx = c
        .call::<call::BuildSessionContext>(ReadParams {
            session_id: sid.into(),
            limits: None,
        })
        .await
        .expect("context");
    assert_eq!(ctx.messages.len(), 2);
    assert_eq!(ctx.thinking_level, Some(json!("high")));
    assert_eq!(ctx.model, json!(null));

    // The same context as the library builds from the journal after close.
    c.close(sid).await;
    assert_eq!(owner.open_sessions().await, 0);
    let lib = store(home.path())
        .open(std::path::Path::new(&s.session_file))
        .expect("reopen")
        .build_session_context()
        .expect("context")
        .to_json();
    assert_eq!(serde_json::to_value(&ctx).expect("json"), lib);

    // Closed: calls on it are refused; it can be opened again by id.
    let e = c
        .call::<call::ReadBranch>(ReadBranchParams {
            session_id: sid.into(),
            from_id: None,
            limits: None,
        })
        .await;
    assert_eq!(
        e.expect_err("closed"),
        Error::SessionNotOpen {
            session_id: sid.into()
        }
    );
    let again = c.open(sid).await;
    assert_eq!(again.leaf_id, Some(b.entry_id));
}

/// The context's answer is written as `bcs context --json` prints the context: the
/// library's value (`to_json`, `serviceTier` included) spelled as the reference's
/// `JSON.stringify` spells it (`1.0` is `1`), inside the usual envelope.
#[tokio::test]
async fn the_context_is_answered_as_the_reference_spells_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let sid = s.session_id.as_str();
    let reply: session_types::AgentMessage = serde_json::from_value(json!({
        "role":"assistant","content":[{"type":"text","text":"a \"quoted\"\nline é"}],
        "api":"messages","provider":"p","model":"m",
        "usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,
                 "cost":{"input":0.5,"output":1.0,"cacheRead":0,"cacheWrite":0,"total":1.5}},
        "stopReason":"stop","timestamp":2
    }))
    .expect("a message");
    c.call::<call::AppendMessage>(AppendMessageParams {
        session_id: sid.into(),
        message: reply,
        durability: None,
    })
    .await
    .expect("append");
    c.call::<call::AppendServiceTierChange>(AppendServiceTierChangeParams {
        session_id: sid.into(),
        service_tier: "priority".into(),
        durability: None,
    })
    .await
    .expect("append");

    let id = c
        .send::<call::BuildSessionContext>(ReadParams {
            session_id: sid.into(),
            limits: None,
        })
        .await;
    let line = c.recv_line().await;
    c.close(sid).await;

    let lib = store(home.path())
        .open(std::path::Path::new(&s.session_file))
        .expect("reopen")
        .build_session_context()
        .expect("context")
        .to_json();
    assert_eq!(lib["serviceTier"], json!("priority"));
    let result = session_types::js::stringify::to_string(&lib).expect("json");
    assert!(result.contains(r#""output":1,"#), "{result}");
    let id = serde_json::to_string(&id).expect("id");
    assert_eq!(
        line,
        format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
    );
}

#[tokio::test]
async fn library_errors_arrive_typed() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;

    let e = c
        .call::<call::StoreOpen>(OpenParams {
            path: None,
            session_id: Some("nope".into()),
        })
        .await;
    let Err(Error::NotFound { path }) = e else {
        panic!("{e:?}")
    };
    assert!(path.ends_with("nope.jsonl"), "{path}");

    let e = c
        .call::<call::StoreOpen>(OpenParams {
            path: None,
            session_id: Some("../x".into()),
        })
        .await;
    assert!(matches!(e, Err(Error::InvalidParams { .. })), "{e:?}");

    let s = c.create().await;
    let sid = s.session_id.as_str();
    let e = c
        .call::<call::AppendLabelChange>(AppendLabelChangeParams {
            session_id: sid.into(),
            target_id: "missing".into(),
            label: None,
            durability: None,
        })
        .await;
    assert_eq!(
        e.expect_err("refused"),
        Error::EntryNotFound {
            session: s.session_file.clone(),
            entry_id: "missing".into()
        }
    );

    for i in 0..3 {
        c.call::<call::AppendMessage>(append(sid, &format!("m{i}"), None))
            .await
            .expect("append");
    }
    let e = c
        .call::<call::ReadEntries>(ReadParams {
            session_id: sid.into(),
            limits: Some(ReadLimits {
                max_source_entries: Some(2),
                max_source_bytes: None,
            }),
        })
        .await;
    let Err(Error::LimitExceeded {
        limit,
        limit_value,
        needed,
        ..
    }) = e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (limit, limit_value, needed),
        (LimitKind::SourceEntries, 2, 3)
    );

    // A session held by another owner (here: the library in this process) is locked.
    let other = store(home.path())
        .with_sources(session_manager::Sources::deterministic(T0, 99))
        .create("/w")
        .expect("create");
    let other_id = other.session_id().to_owned();
    let e = c
        .call::<call::StoreOpen>(OpenParams {
            path: None,
            session_id: Some(other_id),
        })
        .await;
    let Err(Error::Locked { holder_pid, .. }) = e else {
        panic!("{e:?}")
    };
    assert_eq!(holder_pid, Some(std::process::id()));

    // A session call names a session this connection has not opened.
    let e = c
        .call::<call::GetHeader>(SessionParams {
            session_id: "elsewhere".into(),
        })
        .await;
    assert_eq!(
        e.expect_err("refused"),
        Error::SessionNotOpen {
            session_id: "elsewhere".into()
        }
    );
}

#[tokio::test]
async fn every_session_read_is_served() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let sid = s.session_id.as_str();
    let a = c
        .call::<call::AppendMessage>(append(sid, "one", None))
        .await
        .expect("append")
        .entry_id;
    c.call::<call::AppendLabelChange>(AppendLabelChangeParams {
        session_id: sid.into(),
        target_id: a.0.clone(),
        label: Some("start".into()),
        durability: None,
    })
    .await
    .expect("label");
    c.call::<call::AppendSessionInfo>(AppendSessionInfoParams {
        session_id: sid.into(),
        name: " named ".into(),
        durability: None,
    })
    .await
    .expect("name");

    let leaf = c
        .call::<call::ReadLeafEntry>(ReadParams {
            session_id: sid.into(),
            limits: None,
        })
        .await
        .expect("leaf");
    assert_eq!(
        leaf.entry.as_ref().and_then(|e| e.entry_type()),
        Some(session_types::EntryType::SessionInfo.as_str())
    );
    let one = c
        .call::<call::ReadEntry>(EntryReadParams {
            session_id: sid.into(),
            entry_id: a.0.clone(),
            limits: None,
        })
        .await
        .expect("entry");
    assert_eq!(text_of(&one.entry), "one");
    let label = c
        .call::<call::ReadLabel>(EntryReadParams {
            session_id: sid.into(),
            entry_id: a.0.clone(),
            limits: None,
        })
        .await
        .expect("label");
    assert_eq!(label.label.as_deref(), Some("start"));
    let tree = c
        .call::<call::ReadTree>(ReadParams {
            session_id: sid.into(),
            limits: None,
        })
        .await
        .expect("tree");
    assert_eq!(tree.nodes.len(), 3);
    assert_eq!(tree.roots, vec![0]);
    assert_eq!(tree.nodes[0].label.as_deref(), Some("start"));
    let meta = c
        .call::<call::GetMetadata>(SessionParams {
            session_id: sid.into(),
        })
        .await
        .expect("metadata");
    assert_eq!(meta.session_name.as_deref(), Some("named"));
    assert_eq!(meta.session_file, s.session_file);
    let header = c
        .call::<call::GetHeader>(SessionParams {
            session_id: sid.into(),
        })
        .await
        .expect("header");
    assert_eq!(header.header, s.header);
    c.call::<call::Branch>(BranchParams {
        session_id: sid.into(),
        entry_id: Some(a.clone()),
    })
    .await
    .expect("branch");
    let branches = c
        .call::<call::ReadBranches>(ReadBranchesParams {
            session_id: sid.into(),
            leaf_ids: vec![a.0.clone()],
            limits: None,
        })
        .await
        .expect("branches");
    assert_eq!(branches.branches.len(), 1);
    let listed = c
        .call::<call::StoreListAll>(ListAllParams { progress: None })
        .await
        .expect("list");
    assert_eq!(listed.sessions.len(), 1);
    assert_eq!(listed.sessions[0].id, Some(json!(sid)));
}

#[tokio::test]
async fn continue_recent_shares_an_open_session_and_creates_when_none() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut a = Client::connect(&owner);
    let mut b = Client::connect(&owner);
    a.initialize().await;
    b.initialize().await;
    let first = b
        .call::<call::StoreContinueRecent>(ContinueRecentParams {
            cwd: "/work".into(),
        })
        .await
        .expect("created");
    let s = a.open(&first.session_id).await;
    a.call::<call::AppendMessage>(append(&s.session_id, "x", None))
        .await
        .expect("append");
    // Open in the owner (by both): shared, not skipped as locked.
    let again = a
        .call::<call::StoreContinueRecent>(ContinueRecentParams {
            cwd: "/work".into(),
        })
        .await
        .expect("continued");
    assert_eq!(again.session_id, first.session_id);
    assert_eq!(owner.open_sessions().await, 1);
}

#[tokio::test]
async fn new_branched_forked_and_switched_sessions_are_opened_on_the_connection() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let sid = s.session_id.clone();
    let a = c
        .call::<call::AppendMessage>(append(&sid, "one", None))
        .await
        .expect("append")
        .entry_id;
    c.call::<call::AppendMessage>(append(&sid, "two", None))
        .await
        .expect("append");

    let new = c
        .call::<call::SessionNewSession>(NewSessionParams {
            session_id: sid.clone(),
            new_session_id: Some("fresh".into()),
            parent_session: Some(s.session_file.clone()),
        })
        .await
        .expect("new session");
    assert_eq!(new.session_id, "fresh");
    assert_eq!(new.header.cwd.as_deref(), Some("/work"));
    assert_eq!(
        new.header.parent_session.as_deref(),
        Some(s.session_file.as_str())
    );

    let branched = c
        .call::<call::SessionCreateBranchedSession>(CreateBranchedSessionParams {
            session_id: sid.clone(),
            leaf_id: a.0.clone(),
        })
        .await
        .expect("branched");
    let path = c.branch(&branched.session_id).await;
    assert_eq!(
        path.entries.iter().map(text_of).collect::<Vec<_>>(),
        ["one"]
    );

    let forked = c
        .call::<call::StoreForkFrom>(ForkFromParams {
            source: s.session_file.clone(),
            target_cwd: "/elsewhere".into(),
        })
        .await
        .expect("forked");
    let all = c
        .call::<call::ReadEntries>(ReadParams {
            session_id: forked.session_id.clone(),
            limits: None,
        })
        .await
        .expect("its entries");
    assert_eq!(
        all.entries.iter().map(text_of).collect::<Vec<_>>(),
        ["one", "two"]
    );
    assert_eq!(owner.open_sessions().await, 4);

    // setSessionFile: this connection's handle on `fresh` moves to the original.
    let fresh_file = new.session_file.clone();
    let switched = c
        .call::<call::SessionSetSessionFile>(SetSessionFileParams {
            session_id: "fresh".into(),
            path: s.session_file.clone(),
        })
        .await
        .expect("switched");
    assert_eq!(switched.session_id, sid);
    let e = c
        .call::<call::GetHeader>(SessionParams {
            session_id: "fresh".into(),
        })
        .await;
    assert_eq!(
        e.expect_err("let go"),
        Error::SessionNotOpen {
            session_id: "fresh".into()
        }
    );
    assert_eq!(owner.open_sessions().await, 3, "fresh was closed");
    store(home.path())
        .open(std::path::Path::new(&fresh_file))
        .expect("fresh's lock released");
}

#[tokio::test]
async fn delete_import_and_export_go_through_the_store() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let sid = s.session_id.clone();
    c.call::<call::AppendMessage>(append(&sid, "kept", None))
        .await
        .expect("append");

    let out = home.path().join("out.jsonl");
    let exported = c
        .call::<call::StoreExport>(ExportParams {
            session_id: sid.clone(),
            path: out.to_string_lossy().into_owned(),
        })
        .await
        .expect("export");
    assert_eq!(exported.records, 2);
    assert!(
        std::fs::read_to_string(&out)
            .expect("written")
            .contains("\"kept\"")
    );

    // Deleting an open session is refused by its lock, which this owner holds.
    let e = c
        .call::<call::StoreDelete>(DeleteParams {
            session_id: sid.clone(),
        })
        .await;
    let Err(Error::Locked { holder_pid, .. }) = e else {
        panic!("{e:?}")
    };
    assert_eq!(holder_pid, Some(std::process::id()));
    c.close(&sid).await;
    let deleted = c
        .call::<call::StoreDelete>(DeleteParams {
            session_id: sid.clone(),
        })
        .await
        .expect("delete");
    assert!(deleted.removed.contains(&s.session_file), "{deleted:?}");

    let imported = c
        .call::<call::StoreImport>(ImportParams {
            path: out.to_string_lossy().into_owned(),
        })
        .await
        .expect("import");
    assert_eq!(
        (
            imported.session_id.as_str(),
            imported.entries,
            imported.issues
        ),
        (sid.as_str(), 1, 0)
    );
    let again = c
        .call::<call::StoreImport>(ImportParams {
            path: out.to_string_lossy().into_owned(),
        })
        .await
        .expect("import");
    assert!(again.already_imported);
}

#[tokio::test]
async fn import_many_answers_each_source_in_order_and_batches_them() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    // Two exported sessions to import back, and a source that does not exist.
    let mut sources = vec![];
    for (i, text) in ["first", "second"].into_iter().enumerate() {
        let s = c.create().await;
        c.call::<call::AppendMessage>(append(&s.session_id, text, None))
            .await
            .expect("append");
        let out = home.path().join(format!("out-{i}.jsonl"));
        c.call::<call::StoreExport>(ExportParams {
            session_id: s.session_id.clone(),
            path: out.to_string_lossy().into_owned(),
        })
        .await
        .expect("export");
        c.close(&s.session_id).await;
        c.call::<call::StoreDelete>(DeleteParams {
            session_id: s.session_id.clone(),
        })
        .await
        .expect("delete");
        sources.push((out, s.session_id));
    }
    let missing = home.path().join("missing.jsonl");
    let paths: Vec<String> = [&sources[0].0, &missing, &sources[1].0]
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();

    let many = c
        .call::<call::StoreImportMany>(ImportManyParams {
            paths: paths.clone(),
        })
        .await
        .expect("importMany");
    let got: Vec<_> = many.results.iter().map(|r| r.path.clone()).collect();
    assert_eq!(got, paths, "one result per source, in order");
    for (r, (_, sid)) in [&many.results[0], &many.results[2]]
        .into_iter()
        .zip(&sources)
    {
        let imported = r.imported.as_ref().expect("imported");
        assert_eq!(
            (imported.session_id.as_str(), imported.entries),
            (sid.as_str(), 1)
        );
        assert!(!imported.already_imported && r.error.is_none());
    }
    let failed = &many.results[1];
    assert!(failed.imported.is_none());
    let e = failed.error.as_ref().expect("an error");
    assert!(e.message.contains("missing.jsonl"), "{e:?}");
    assert_eq!(e.code, code::STORE, "{e:?}");

    // Imported once: the same sources again are recognised.
    let again = c
        .call::<call::StoreImportMany>(ImportManyParams { paths })
        .await
        .expect("importMany");
    assert!(
        again.results[0]
            .imported
            .as_ref()
            .expect("imported")
            .already_imported
    );
    assert!(
        again.results[2]
            .imported
            .as_ref()
            .expect("imported")
            .already_imported
    );
}

#[tokio::test]
async fn a_listing_asked_with_progress_notifies_before_it_answers() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    for _ in 0..3 {
        let s = c.create().await;
        c.close(&s.session_id).await;
    }
    let id = c
        .send::<call::StoreListAll>(ListAllParams {
            progress: Some(true),
        })
        .await;
    let mut notes = Vec::new();
    let answer = loop {
        let line = c.recv().await;
        if line.get("method").is_none() {
            break line;
        }
        let params = serde_json::value::to_raw_value(&line["params"]).expect("raw");
        let Notification::ListProgress(p) =
            Notification::from_params(line["method"].as_str().expect("a method"), Some(&params))
                .expect("typed")
        else {
            panic!("{line}");
        };
        assert_eq!(p.request_id, id);
        notes.push((p.loaded, p.total));
    };
    assert_eq!(answer["id"], serde_json::to_value(&id).expect("id"));
    assert_eq!(
        decode::<call::StoreListAll>(answer)
            .expect("listing")
            .sessions
            .len(),
        3
    );
    assert_eq!(notes.last(), Some(&(3, 3)), "{notes:?}");

    // Without `progress`, no notification precedes the answer.
    let r = c
        .call::<call::StoreListAll>(ListAllParams { progress: None })
        .await
        .expect("listing");
    assert_eq!(r.sessions.len(), 3);
}

#[tokio::test]
async fn an_empty_or_foreign_file_is_refused_as_not_a_journal() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let dir = std::path::Path::new(&s.session_file)
        .parent()
        .expect("sessions dir");

    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, b"").expect("write");
    let foreign = dir.join("foreign.jsonl");
    std::fs::write(&foreign, b"PK\x03\x04 not a journal").expect("write");
    // A journal whose session header record was never written: not a session.
    let headless = dir.join("headless.jsonl");
    drop(
        session_journal::Writer::create(
            &headless,
            session_journal::JournalId([3; 16]),
            session_journal::CreateOptions::default(),
        )
        .expect("journal"),
    );

    for (path, detail) in [
        (&empty, "the file is empty"),
        (&foreign, "expected signature 894a4e4c0d0a1a0a"),
        (&headless, "no session header record"),
    ] {
        let e = c
            .call::<call::StoreOpen>(OpenParams {
                path: Some(path.to_string_lossy().into_owned()),
                session_id: None,
            })
            .await
            .expect_err("refused");
        let Error::NotAJournal { path: p, detail: d } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(p, &path.to_string_lossy());
        assert!(d.contains(detail), "{d}");
        assert_eq!(e.code(), code::NOT_A_JOURNAL);
        // The message names the path once.
        assert_eq!(e.to_string().matches(p.as_str()).count(), 1, "{e}");
    }
}

/// A lone surrogate in a request (JavaScript strings hold them, e.g. one cut in the
/// middle of an emoji, and `JSON.stringify` writes them as `\ud83d`) is read as
/// U+FFFD, as a UTF-8 encoder writes it: the message is stored, not refused, and
/// every other byte of the request is read as sent.
#[tokio::test]
async fn a_lone_surrogate_in_a_request_is_stored_as_u_fffd() {
    let home = tempfile::tempdir().expect("tempdir");
    let owner = owner(home.path());
    let mut c = Client::ready(&owner).await;
    let s = c.create().await;
    let sid = s.session_id.as_str();
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":90,"method":"session/appendMessage","params":{{"sessionId":"{sid}","message":{{"role":"user","content":"cut \ud83d here, kept \ud83d\ude80, \\ud83d escaped","timestamp":1}}}}}}"#
    );
    c.send_raw(format!("{line}\n").as_bytes()).await;
    let answer = c.recv().await;
    assert_eq!(answer["id"], json!(90), "{answer}");
    assert!(answer["result"]["entryId"].is_string(), "{answer}");
    c.close(sid).await;
    assert_eq!(
        texts_in(&store(home.path()), &s.session_file),
        ["cut \u{fffd} here, kept \u{1f680}, \\ud83d escaped"]
    );
}
