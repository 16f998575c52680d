//! The context vectors (V1–V20 of `legacy-pi-behaviour.md` and X1–X8) and the golden
//! corpus through the index-backed context source, as a resume reads them: each input
//! is imported into a native journal, opened with `Store::open` and its context
//! built with `build_session_context_with` (and, for an explicit leaf, with
//! `indexed_context` over a read-only index). `session-context`'s own tests run the
//! same inputs through its in-memory sources; here the same expected outputs must come
//! out of the journal, the index and its parent positions.

use std::path::{Path, PathBuf};

use serde_json::Value;
use session_context::{ContextOptions, Leaf, ResidentSource, build_context};
use session_index::{Index, OpenIndexOptions};
use session_journal::{Reader, ReaderOptions};
use session_manager::{ReadLimits, SessionContext, indexed_context};
use session_testkit::compare::first_difference;
use session_testkit::corpus::oracle_cases;
use session_types::json::{js_normalized, replace_lone_surrogates};
use session_types::{Entry, Record};

use crate::support::store;

/// Where a context is built.
#[derive(Debug, Clone)]
enum LeafAt {
    /// The last appended entry (the reference's resume).
    Last,
    /// Before any entry (`branch(null)`).
    Nothing,
    /// An entry by id, which may not exist (the reference then falls back).
    Id(String),
}

/// One input and what the reference answers for it.
struct Case {
    name: String,
    /// The v3 JSONL imported (a session header, then the entries).
    jsonl: PathBuf,
    leaf: LeafAt,
    /// The reference's context: `{messages, thinkingLevel, model}`.
    context: Value,
    /// The corpus oracle's other answers (`leafId`, `sessionName`, `labels`,
    /// `entryCount`), when the input has them.
    oracle: Option<Value>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// JSON read the way the typed view reads it: lone surrogates become U+FFFD.
fn parse(text: &str) -> Value {
    serde_json::from_str(&replace_lone_surrogates(text).0).expect("json")
}

/// The entries of a v3 JSONL file (its header and blank or bad lines left out), as
/// the resident source sees them.
fn entries_of(jsonl: &Path) -> Vec<Entry> {
    let bytes = std::fs::read(jsonl).expect("jsonl");
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| match Record::parse(&replace_lone_surrogates(l).0) {
            Ok(Record::Entry(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// The reference's context of `case`, through the index-backed source: owned (when
/// the leaf can be set through the owned API) and read-only (when it is not "before
/// any entry"); each must equal the oracle and the in-memory source's answer, leaf
/// and warnings included. Returns the paths taken.
fn check(case: &Case) -> Vec<&'static str> {
    let name = &case.name;
    let (_dir, store) = store();
    let journal = store
        .import(&case.jsonl)
        .unwrap_or_else(|e| panic!("{name}: import: {e}"))
        .journal;
    let entries = entries_of(&case.jsonl);
    let source = ResidentSource::new(&entries);
    let resident = build_context(
        &source,
        match &case.leaf {
            LeafAt::Last => Leaf::Default,
            LeafAt::Nothing => Leaf::None,
            LeafAt::Id(id) => Leaf::Id(id),
        },
        &ContextOptions::reference(),
    )
    .unwrap_or_else(|e| panic!("{name}: resident: {e}"));
    let contexts: Vec<(&'static str, SessionContext<'static>)> = [
        ("owned", owned_context(&store, &journal, case)),
        ("read-only", read_only_context(&journal, case)),
    ]
    .into_iter()
    .filter_map(|(path, ctx)| Some((path, ctx?)))
    .collect();
    assert!(
        !contexts.is_empty(),
        "{name}: no index-backed context built"
    );
    for (path, ctx) in &contexts {
        let ours = ctx.to_reference_json();
        if let Some(d) = first_difference(&ours, &case.context) {
            panic!("{name} ({path}): {d}");
        }
        // Synthesized and typed messages keep the reference's key order too (numbers
        // compared as JavaScript holds them: we keep their spelling, it re-spells).
        assert_eq!(
            js_normalized(&ours).to_string(),
            js_normalized(&case.context).to_string(),
            "{name} ({path})"
        );
        assert_eq!(ctx.leaf, resident.leaf, "{name} ({path}): leaf");
        assert_eq!(
            warnings(ctx),
            warnings(&resident),
            "{name} ({path}): warnings"
        );
        if let Some(oracle) = &case.oracle {
            assert_eq!(
                ctx.leaf.as_ref().map(|l| l.as_str()),
                oracle["leafId"].as_str(),
                "{name} ({path}): leaf"
            );
        }
    }
    contexts.iter().map(|(path, _)| *path).collect()
}

/// `Store::open`, the leaf moved with `branch_to`, `build_session_context_with`; and
/// the corpus oracle's session-level answers. `None`: the owned API cannot point the
/// leaf at an unknown id.
fn owned_context(
    store: &session_manager::Store,
    journal: &Path,
    case: &Case,
) -> Option<SessionContext<'static>> {
    let name = &case.name;
    let mut s = store.open(journal).expect("open");
    if let Some(oracle) = &case.oracle {
        check_session_answers(name, &s, oracle);
    }
    match &case.leaf {
        LeafAt::Last => {}
        LeafAt::Nothing => s.branch_to(None).expect("branch to nothing"),
        LeafAt::Id(id) if s.index().find(id).is_some() => {
            s.branch_to(Some(id)).expect("branch to an entry");
        }
        LeafAt::Id(_) => return None,
    }
    let ctx = s
        .build_session_context_with(ReadLimits::default(), &ContextOptions::reference())
        .unwrap_or_else(|e| panic!("{name} (owned): {e}"));
    Some(ctx)
}

/// `indexed_context` over an index opened without saving and a journal reader, as
/// `bcs context` reads. `None` for a leaf before any entry (it has no spelling there).
fn read_only_context(journal: &Path, case: &Case) -> Option<SessionContext<'static>> {
    let leaf = match &case.leaf {
        LeafAt::Last => None,
        LeafAt::Nothing => return None,
        LeafAt::Id(id) => Some(id.as_str()),
    };
    let options = OpenIndexOptions {
        save: false,
        sync_journal: false,
        ..OpenIndexOptions::default()
    };
    let (index, _) = Index::open_or_rebuild(journal, options).expect("index");
    let reader = Reader::open(journal, ReaderOptions::default()).expect("reader");
    let ctx = indexed_context(
        journal,
        &index,
        &reader,
        leaf,
        ReadLimits::default(),
        &ContextOptions::reference(),
    )
    .unwrap_or_else(|e| panic!("{} (read-only): {e}", case.name));
    Some(ctx)
}

fn warnings(ctx: &SessionContext<'_>) -> Vec<String> {
    ctx.warnings.iter().map(ToString::to_string).collect()
}

/// The corpus oracle's session-level answers: name, labels, entry count.
fn check_session_answers(name: &str, s: &session_manager::OwnedSession, oracle: &Value) {
    assert_eq!(
        s.session_name(),
        oracle["sessionName"].as_str(),
        "{name}: session name"
    );
    let limits = ReadLimits {
        max_source_entries: u64::MAX,
        max_source_bytes: u64::MAX,
    };
    let entries = s.read_entries(limits).expect("entries");
    assert_eq!(
        entries.len() as u64,
        oracle["entryCount"].as_u64().expect("entryCount"),
        "{name}: entries"
    );
    // Labels as the reference holds them: any truthy JSON value, not only strings.
    let labels: serde_json::Map<String, Value> = entries
        .iter()
        .filter_map(|e| e.id())
        .filter_map(|id| Some((id.to_owned(), s.index().label_value(id)?)))
        .collect();
    assert_eq!(Value::Object(labels), oracle["labels"], "{name}: labels");
}

/// The context vectors: V1–V20 (expected outputs produced by the reference) and
/// X1–X8, each written as a v3 JSONL session with a fixed header.
fn vector_cases(dir: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(fixtures().join("generated/session-context/vectors.json"))
        .expect("vectors");
    let vectors: Vec<Value> = serde_json::from_str(&text).expect("vectors json");
    vectors
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let name = v["name"].as_str().expect("name").to_owned();
            let header = format!(
                r#"{{"type":"session","version":3,"id":"0190d9a0-0000-7000-8000-{i:012}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/vectors"}}"#
            );
            let lines: Vec<String> = std::iter::once(header)
                .chain(
                    v["entries"]
                        .as_array()
                        .expect("entries")
                        .iter()
                        .map(Value::to_string),
                )
                .collect();
            let jsonl = dir.join(format!("vector-{i}.jsonl"));
            std::fs::write(&jsonl, lines.join("\n") + "\n").expect("write vector");
            let leaf = match v.get("leaf") {
                None => LeafAt::Last,
                Some(Value::Null) => LeafAt::Nothing,
                Some(Value::String(s)) => LeafAt::Id(s.clone()),
                Some(other) => panic!("{name}: bad leaf {other}"),
            };
            Case {
                name,
                jsonl,
                leaf,
                context: v["expected"].clone(),
                oracle: None,
            }
        })
        .collect()
}

/// Every fixture of the golden corpus with a reference oracle (`legacy/`, `edge/`
/// and the leniency fixtures of issue 14). The input is the file as the reference
/// left it after opening (`NAME.after-open.jsonl`: v1/v2 migrated to v3 with the
/// reference's ids, a missing header replaced) when there is one, else the fixture
/// itself.
fn corpus_cases() -> Vec<Case> {
    oracle_cases(&fixtures(), &["legacy", "edge", "leniency"])
        .expect("fixture dirs")
        .into_iter()
        .map(|c| {
            let oracle = parse(&std::fs::read_to_string(&c.oracle).expect("oracle"));
            Case {
                name: c.key(),
                jsonl: c.input,
                leaf: LeafAt::Last,
                context: oracle["context"].clone(),
                oracle: Some(oracle),
            }
        })
        .collect()
}

#[test]
fn context_vectors_through_the_index() {
    let dir = tempfile::tempdir().expect("temp dir");
    let cases = vector_cases(dir.path());
    assert!(cases.len() >= 21, "V1–V20 and more: {}", cases.len());
    let mut one_path = Vec::new();
    for case in &cases {
        if check(case).len() < 2 {
            one_path.push(case.name.as_str());
        }
    }
    // Every vector goes both ways but these: a null leaf has no read-only spelling,
    // and the owned API does not move the leaf to an unknown id.
    assert_eq!(one_path, ["V11", "V12", "X1-empty-leaf-string"]);
}

#[test]
fn corpus_through_the_index() {
    let cases = corpus_cases();
    assert!(cases.len() >= 14 + 30, "{} fixtures", cases.len());
    for case in &cases {
        assert_eq!(check(case), ["owned", "read-only"], "{}", case.name);
    }
}
