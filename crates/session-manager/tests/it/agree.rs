//! One session model: every view of a session — owned, reopened, rebuilt from the
//! journal (sidecar deleted), read-only, and in memory (`from_entries`, appends) —
//! gives exactly the same answers: tree (nested order, labels, label timestamps),
//! children of every node, labels, name, branch from every leaf, leaf and context.
//! Over every corpus fixture, the generated 1k session, and random sessions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use session_manager::{
    OwnedSession, ReadError, ReadLimits, ResidentSession, SessionTree, Sources, Store,
};
use session_types::{Entry, Record};

use crate::support::{T0, store_at};

/// No limit gets in the way of comparing answers.
const ALL: ReadLimits = ReadLimits {
    max_source_entries: u64::MAX,
    max_source_bytes: u64::MAX,
};

/// Everything a view answers, rendered comparably.
#[derive(Debug, PartialEq)]
struct Answers {
    /// Pre-order: depth, id, entry JSON, label, label timestamp, children ids.
    tree: Vec<String>,
    roots: Vec<String>,
    /// `getChildren(id)` of every entry id.
    children: BTreeMap<String, Vec<String>>,
    /// The label of every entry id.
    labels: BTreeMap<String, Option<String>>,
    name: Option<String>,
    leaf: Option<String>,
    /// The branch from every tree leaf (and the default leaf, keyed "").
    branches: BTreeMap<String, Result<Vec<String>, String>>,
    /// The context at every tree leaf (and the default leaf, keyed "").
    contexts: BTreeMap<String, Result<Value, String>>,
}

fn render_tree(tree: &SessionTree<'_>) -> (Vec<String>, Vec<String>) {
    let id = |pos: usize| tree.nodes[pos].entry.id().unwrap_or("").to_owned();
    let nodes = tree
        .nodes
        .iter()
        .map(|n| {
            let kids: Vec<String> = n.children.iter().map(|c| id(*c)).collect();
            format!(
                "{} {} {} label={:?}@{:?} children={:?}",
                n.depth,
                n.entry.id().unwrap_or(""),
                n.entry.to_json(),
                n.label,
                n.label_timestamp,
                kids
            )
        })
        .collect();
    (nodes, tree.roots.iter().map(|r| id(*r)).collect())
}

/// The tree's leaves (nodes without children), by id.
fn tree_leaves(tree: &SessionTree<'_>) -> Vec<String> {
    tree.nodes
        .iter()
        .filter(|n| n.children.is_empty())
        .filter_map(|n| n.entry.id().map(str::to_owned))
        .collect()
}

fn error_kind(e: &ReadError) -> String {
    match e {
        ReadError::Cycle { id } => format!("cycle at {id}"),
        ReadError::EntryNotFound { id, .. } => format!("not found: {id}"),
        other => format!("error: {other}"),
    }
}

/// The ids of the entries that have one: what the answers are asked for.
fn all_ids(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .filter_map(Entry::id)
        .map(str::to_owned)
        .collect()
}

fn ids_of<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<String> {
    entries
        .into_iter()
        .map(|e| e.id().unwrap_or("").to_owned())
        .collect()
}

fn owned_answers(s: &mut OwnedSession, all_ids: &[String]) -> Answers {
    let tree = s.read_tree(ALL).expect("owned tree");
    let (nodes, roots) = render_tree(&tree);
    let index = s.index();
    let children = all_ids
        .iter()
        .map(|id| {
            let kids = index
                .find(id)
                .map(|i| {
                    index
                        .children(i)
                        .into_iter()
                        .map(|c| index.id_of(c).unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            (id.clone(), kids)
        })
        .collect();
    let labels = all_ids
        .iter()
        .map(|id| (id.clone(), s.read_label(id, ALL).expect("label")))
        .collect();
    let leaf = s.get_leaf_id().map(|l| l.0.clone());
    let mut branches = BTreeMap::new();
    let mut contexts = BTreeMap::new();
    let ctx = |s: &OwnedSession| {
        s.build_session_context_with(ALL, &Default::default())
            .map(|c| c.to_json())
            .map_err(|e| error_kind(&e))
    };
    branches.insert(
        String::new(),
        s.read_branch(None, ALL)
            .map(|b| ids_of(&b))
            .map_err(|e| error_kind(&e)),
    );
    contexts.insert(String::new(), ctx(s));
    for l in tree_leaves(&tree) {
        branches.insert(
            l.clone(),
            s.read_branch(Some(&l), ALL)
                .map(|b| ids_of(&b))
                .map_err(|e| error_kind(&e)),
        );
        s.branch_to(Some(&l)).expect("branch to a tree leaf");
        contexts.insert(l, ctx(s));
    }
    // Back to where the session was.
    s.branch_to(leaf.as_deref()).expect("restore the leaf");
    Answers {
        tree: nodes,
        roots,
        children,
        labels,
        name: s.session_name().map(str::to_owned),
        leaf,
        branches,
        contexts,
    }
}

fn resident_answers(s: &mut ResidentSession, all_ids: &[String]) -> Answers {
    let tree = s.get_tree();
    let (nodes, roots) = render_tree(&tree);
    let leaves = tree_leaves(&tree);
    drop(tree);
    let children = all_ids
        .iter()
        .map(|id| (id.clone(), ids_of(s.get_children(id))))
        .collect();
    let labels = all_ids
        .iter()
        .map(|id| (id.clone(), s.get_label(id).map(str::to_owned)))
        .collect();
    let leaf = s.get_leaf_id().map(|l| l.0.clone());
    let mut branches = BTreeMap::new();
    let mut contexts = BTreeMap::new();
    let ctx = |s: &ResidentSession| {
        s.build_session_context()
            .map(|c| c.to_json())
            .map_err(|e| error_kind(&e))
    };
    // The resident `getBranch` cannot fail: compare the owned read's success case.
    let branch = |s: &ResidentSession, from: Option<&str>| -> Result<Vec<String>, String> {
        Ok(ids_of(s.get_branch(from)))
    };
    branches.insert(String::new(), branch(s, None));
    contexts.insert(String::new(), ctx(s));
    for l in leaves {
        branches.insert(l.clone(), branch(s, Some(&l)));
        s.branch_to(Some(&l)).expect("branch to a tree leaf");
        contexts.insert(l, ctx(s));
    }
    s.branch_to(leaf.as_deref()).expect("restore the leaf");
    Answers {
        tree: nodes,
        roots,
        children,
        labels,
        name: s.session_name().map(str::to_owned),
        leaf,
        branches,
        contexts,
    }
}

/// Owned branches that fail on a cycle have no resident counterpart (`getBranch`
/// cannot fail): they are compared as what the resident view answers for them.
fn align_branches(owned: &mut Answers, resident: &Answers) {
    for (k, v) in owned.branches.iter_mut() {
        if v.as_ref().is_err_and(|e| e.starts_with("cycle"))
            && let Some(r) = resident.branches.get(k)
        {
            *v = r.clone();
        }
    }
}

/// Checks every view of the journal at `path` (owned by no one) against each other.
fn check_journal(store: &Store, path: &Path, case: &str) {
    let mut owned = store.open(path).expect("open");
    let entries = owned.read_entries(ALL).expect("entries");
    let all_ids = all_ids(&entries);
    let reference = owned_answers(&mut owned, &all_ids);
    let header = owned.header().clone();
    drop(owned);

    let mut reopened = store.open(path).expect("reopen");
    assert_eq!(
        owned_answers(&mut reopened, &all_ids),
        reference,
        "{case}: reopened owned session"
    );
    drop(reopened);

    let sidecar = session_index::sidecar_path(path);
    std::fs::remove_file(&sidecar).expect("sidecar exists after close");
    let mut rebuilt = store.open(path).expect("rebuild");
    assert_eq!(
        owned_answers(&mut rebuilt, &all_ids),
        reference,
        "{case}: owned session rebuilt from the journal"
    );
    drop(rebuilt);

    let residents = [
        ("read-only view", store.open_read_only(path).expect("view")),
        (
            "from_entries",
            ResidentSession::from_entries(header, entries, Sources::deterministic(T0, 3)),
        ),
    ];
    for (what, mut view) in residents {
        let got = resident_answers(&mut view, &all_ids);
        let mut want = owned_answers(&mut store.open(path).expect("open"), &all_ids);
        align_branches(&mut want, &got);
        assert_eq!(got, want, "{case}: {what}");
    }
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// Every corpus fixture, imported, agrees with itself through every view.
#[test]
fn every_view_of_every_corpus_fixture_agrees() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store_at(dir.path(), 21);
    let mut checked = 0;
    let mut refused = Vec::new();
    for group in ["legacy", "edge", "leniency", "generated"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir().join(group))
            .expect("fixture dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(".jsonl")
                    && !name.ends_with(".after-open.jsonl")
                    // Not a session: one message line per key order.
                    && name != "10k-bash-lines.jsonl"
            })
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let case = format!("{group}/{name}");
            // Files the import refuses (empty, no header) have no views to compare.
            let Ok(outcome) = store.import(&file) else {
                refused.push(case);
                continue;
            };
            check_journal(&store, &outcome.journal, &case);
            checked += 1;
        }
    }
    assert_eq!(refused, ["edge/empty-file.jsonl", "edge/no-header.jsonl"]);
    assert!(checked >= 48, "only {checked} fixtures checked");
}

// ----- random sessions -----

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const WHITESPACE: [&str; 8] = [
    "\u{feff}", " ", "\u{a0}", "\u{3000}", "\u{2028}", "\u{2003}", "\t", "\u{1680}",
];

fn timestamp(rng: &mut Rng, previous: &[Value]) -> Option<Value> {
    Some(match rng.below(12) {
        0 => json!("garbage"),
        1 => json!(""),
        2 => json!(5),
        3 => Value::Null,
        4 => json!(true),
        5 => json!({"t": 1}),
        6 => json!([]),
        7 => return None,
        // A tie with an earlier entry.
        8 if !previous.is_empty() => rng.pick(previous).clone(),
        _ => json!(session_types::Timestamp::from_unix_ms((T0 + rng.below(5_000) as u64) as i64).0),
    })
}

fn name(rng: &mut Rng) -> Value {
    match rng.below(8) {
        0 => json!(5),
        1 => Value::Null,
        2 => json!(format!(
            "{}{}",
            rng.pick(&WHITESPACE),
            rng.pick(&WHITESPACE)
        )),
        _ => json!(format!(
            "{}n{}{}",
            rng.pick(&WHITESPACE),
            rng.below(100),
            rng.pick(&WHITESPACE)
        )),
    }
}

fn label(rng: &mut Rng) -> Option<Value> {
    Some(match rng.below(10) {
        0 => return None,
        1 => json!(""),
        2 => json!(42),
        3 => json!({"l": 1}),
        4 => Value::Null,
        5 => json!(false),
        6 => json!(0),
        _ => json!(format!("L{}", rng.below(5))),
    })
}

/// A random session: entry objects in append order, every id unique, every parent
/// an earlier entry or none (a second root).
fn random_entries(seed: u64, n: usize) -> Vec<Value> {
    random_entries_with(seed, n, false)
}

/// [`random_entries`]; with `typed`, every field holds the JSON type its entry type
/// gives it (odd strings still: invalid timestamps, BOMs, clears).
fn random_entries_with(seed: u64, n: usize, typed: bool) -> Vec<Value> {
    let mut rng = Rng(seed);
    let mut out: Vec<Value> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut stamps: Vec<Value> = Vec::new();
    for k in 0..n {
        let id = format!("e{k:03}x{}", rng.below(1000));
        let parent = match rng.below(10) {
            0 => Value::Null,
            1..=4 if !ids.is_empty() => json!(rng.pick(&ids)),
            _ => ids.last().map_or(Value::Null, |l| json!(l)),
        };
        let mut e = serde_json::Map::new();
        let kind = rng.below(10);
        let ty = match kind {
            0..=2 => "message",
            3 | 4 => "label",
            5 => "session_info",
            6 => "model_change",
            7 => "thinking_level_change",
            8 => "custom",
            _ => "branch_summary",
        };
        e.insert("type".into(), json!(ty));
        e.insert("id".into(), json!(id));
        e.insert("parentId".into(), parent);
        let ts = timestamp(&mut rng, &stamps).filter(|t| !typed || t.is_string());
        let ts = ts.or_else(|| typed.then(|| json!("2025-01-01T00:00:09.000Z")));
        if let Some(ts) = ts {
            stamps.push(ts.clone());
            e.insert("timestamp".into(), ts);
        }
        match ty {
            "message" => {
                let role = if rng.below(2) == 0 {
                    "user"
                } else {
                    "assistant"
                };
                let message = if role == "user" {
                    json!({"role":"user","content":format!("q{k}"),"timestamp":k})
                } else {
                    json!({"role":"assistant","content":[{"type":"text","text":format!("a{k}")}],
                        "api":"messages","provider":"p","model":"m",
                        "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,
                            "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
                        "stopReason":"stop","timestamp":k})
                };
                e.insert("message".into(), message);
            }
            "label" => {
                let target = if ids.is_empty() || rng.below(8) == 0 {
                    "nowhere".to_owned()
                } else {
                    rng.pick(&ids).clone()
                };
                e.insert("targetId".into(), json!(target));
                if let Some(l) = label(&mut rng).filter(|l| !typed || l.is_string()) {
                    e.insert("label".into(), l);
                }
            }
            "session_info" => {
                let n = name(&mut rng);
                e.insert(
                    "name".into(),
                    if typed && !n.is_string() {
                        json!(" x ")
                    } else {
                        n
                    },
                );
            }
            "model_change" => {
                e.insert("provider".into(), json!("p"));
                e.insert("modelId".into(), json!(format!("m{}", rng.below(3))));
            }
            "thinking_level_change" => {
                e.insert("thinkingLevel".into(), json!("high"));
            }
            "custom" => {
                e.insert("customType".into(), json!("x"));
            }
            _ => {
                let from = ids.first().cloned().unwrap_or_else(|| "root".into());
                e.insert("fromId".into(), json!(from));
                e.insert("summary".into(), json!(format!("s{k}")));
            }
        }
        ids.push(id);
        out.push(Value::Object(e));
    }
    out
}

fn entry(v: &Value) -> Entry {
    match Record::parse(&v.to_string()).expect("an object parses") {
        Record::Entry(e) => e,
        Record::Header(_) => unreachable!("generated entries are not headers"),
    }
}

/// Imports a v3 session of these entry lines into `store`; returns its journal.
/// (Appends refuse entries whose fields do not fit their type; the import keeps
/// them verbatim, as the reference's files can hold them.)
fn import_lines(store: &Store, dir: &Path, name: &str, lines: &[Value]) -> PathBuf {
    let header = json!({"type":"session","version":3,"id":name,
        "timestamp":"2025-01-01T00:00:00.000Z","cwd":"/rand"});
    let mut text = header.to_string();
    for l in lines {
        text.push('\n');
        text.push_str(&l.to_string());
    }
    text.push('\n');
    let file = dir.join(format!("{name}.legacy.jsonl"));
    std::fs::write(&file, text).expect("write the legacy file");
    store.import(&file).expect("import").journal
}

/// Random sessions (invalid, tied and non-string timestamps, BOMs and Unicode
/// whitespace in names, label churn with clears and non-string labels, branches,
/// second roots) agree through every view; and the entries an owned session accepts
/// as appends, appended to an in-memory session too, give the same answers there.
#[test]
fn every_view_of_random_sessions_agrees() {
    for seed in 0..40u64 {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_at(dir.path(), seed);
        let lines = random_entries(seed, 12 + (seed as usize % 5) * 10);
        let journal = import_lines(&store, dir.path(), &format!("rand-{seed}"), &lines);
        check_journal(&store, &journal, &format!("seed {seed}"));

        let mut owned = store.create("/rand").expect("create");
        // Synced at close: what is compared is what is appended, not when it is durable.
        owned.set_durability(session_manager::Durability::Buffered);
        let mut mem = ResidentSession::in_memory("/rand", Sources::deterministic(T0, seed));
        // Appends take entries whose fields fit their types: strings where strings go.
        let typed = random_entries_with(seed, 12 + (seed as usize % 5) * 10, true);
        for e in typed.iter().map(entry) {
            let a = owned.append_entry(e.clone()).expect("owned append");
            let b = mem.append_entry(e).expect("in-memory append");
            assert_eq!(a, b);
        }
        let path = owned.session_file().expect("persisted").to_path_buf();
        let all_ids = all_ids(mem.get_entries());
        let mut want = owned_answers(&mut owned, &all_ids);
        drop(owned);
        let got = resident_answers(&mut mem, &all_ids);
        align_branches(&mut want, &got);
        assert_eq!(got, want, "seed {seed}: in-memory appends");
        check_journal(&store, &path, &format!("seed {seed}, appended"));
    }
}

/// Probe: a name with a BOM is trimmed the way JavaScript trims, in every view.
#[test]
fn a_bom_in_a_name_is_trimmed_alike_everywhere() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store_at(dir.path(), 2);
    let mut owned = store.create("/w").expect("create");
    owned.append_session_info("\u{feff}named").expect("name");
    assert_eq!(owned.session_name(), Some("named"));
    let path = owned.session_file().expect("file").to_path_buf();
    let view = store.open_read_only(&path).expect("view");
    assert_eq!(view.session_name(), Some("named"));
    let mut mem = ResidentSession::in_memory("/w", Sources::deterministic(T0, 2));
    mem.append_session_info("\u{feff}named").expect("name");
    assert_eq!(mem.session_name(), Some("named"));
}

/// Probe: one child with an invalid timestamp orders siblings alike in every view.
#[test]
fn an_invalid_timestamp_orders_children_alike_everywhere() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store_at(dir.path(), 2);
    let lines = [
        json!({"type":"custom","customType":"x","id":"r","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z"}),
        json!({"type":"custom","customType":"x","id":"a","parentId":"r","timestamp":"2025-01-01T00:00:03.000Z"}),
        json!({"type":"custom","customType":"x","id":"b","parentId":"r","timestamp":"garbage"}),
        json!({"type":"custom","customType":"x","id":"c","parentId":"r","timestamp":"2025-01-01T00:00:01.000Z"}),
        json!({"type":"custom","customType":"x","id":"d","parentId":"r","timestamp":{"t":1}}),
    ];
    let path = import_lines(&store, dir.path(), "probe", &lines);
    let owned = store.open(&path).expect("open");
    let (want, _) = render_tree(&owned.read_tree(ALL).expect("tree"));
    let view = store.open_read_only(&path).expect("view");
    assert_eq!(render_tree(&view.get_tree()).0, want);
}

/// Random sessions rich in compactions (kept windows that start on the path, off it,
/// at an unknown id, at the compaction itself), settings changes above and inside
/// the window, second roots, orphans, self-parents and (in some seeds) duplicate ids,
/// after a linear first half.
/// Entries from `appendable` on are ones an append accepts (a fresh id, a parent that
/// exists).
fn compacting_entries(seed: u64, n: usize, appendable: usize) -> Vec<Value> {
    let mut rng = Rng(seed);
    let mut out: Vec<Value> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let dups = seed % 4 == 3;
    for k in 0..n {
        let odd = k < appendable;
        let id = if odd && dups && !ids.is_empty() && rng.below(12) == 0 {
            rng.pick(&ids).clone()
        } else {
            format!("c{k}")
        };
        let parent = match rng.below(40) {
            0 => Value::Null,
            1 if odd => json!("missing"),
            2 if odd => json!(id),
            3..=8 if !ids.is_empty() => json!(rng.pick(&ids)),
            _ => ids.last().map_or(Value::Null, |l| json!(l)),
        };
        let ts = "2025-01-01T00:00:09.000Z";
        // A linear first half (settings set near the root, messages after): paths
        // deeper than the walk's budget, so the path marks answer.
        let kind = match k {
            1 => 0,
            2 => 1,
            3 => 2,
            _ if k < n / 2 => 11,
            _ => rng.below(12),
        };
        let parent = if k < n / 2 {
            ids.last().map_or(Value::Null, |l| json!(l))
        } else {
            parent
        };
        let e = match kind {
            0 => json!({"type":"thinking_level_change","id":id,"parentId":parent,"timestamp":ts,
                "thinkingLevel":format!("t{k}")}),
            1 => json!({"type":"service_tier_change","id":id,"parentId":parent,"timestamp":ts,
                "serviceTier":format!("s{k}")}),
            2 => json!({"type":"model_change","id":id,"parentId":parent,"timestamp":ts,
                "provider":"p","modelId":format!("m{k}")}),
            3 => {
                let first = match rng.below(5) {
                    0 => json!("nowhere"),
                    1 => json!(id),
                    _ if !ids.is_empty() => json!(rng.pick(&ids)),
                    _ => json!("nowhere"),
                };
                json!({"type":"compaction","id":id,"parentId":parent,"timestamp":ts,
                    "summary":format!("sum{k}"),"firstKeptEntryId":first,"tokensBefore":k})
            }
            4 => json!({"type":"custom","id":id,"parentId":parent,"timestamp":ts,"customType":"x"}),
            5 | 6 => json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,
                "message":{"role":"assistant","content":[{"type":"text","text":format!("a{k}")}],
                    "api":"messages","provider":"p","model":format!("am{k}"),
                    "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,
                        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
                    "stopReason":"stop","timestamp":k}}),
            _ => json!({"type":"message","id":id,"parentId":parent,"timestamp":ts,
                "message":{"role":"user","content":format!("q{k}"),"timestamp":k}}),
        };
        ids.push(id);
        out.push(e);
    }
    out
}

/// Resume walks only what the context needs, through the index's path marks (the
/// nearest settings changes and the path's top); the whole walk over the same
/// entries in memory (`ResidentSource`, which keeps no marks) must give the same
/// context — messages, settings and warnings — at every entry as leaf, in a reopened
/// session (marks computed on load) and after appends (marks kept while appending).
#[test]
fn contexts_through_path_marks_agree_with_the_whole_walk() {
    use session_context::{ContextOptions, Leaf, ResidentSource, build_context};
    let whole = |entries: &[Entry], leaf: &str| {
        let source = ResidentSource::new(entries);
        build_context(&source, Leaf::Id(leaf), &ContextOptions::default())
            .map(|c| (c.to_json(), format!("{:?}", c.warnings)))
            .map_err(|e| e.to_string())
    };
    let marked = |s: &mut OwnedSession, leaf: &str| {
        s.branch_to(Some(leaf)).expect("branch to an entry");
        s.build_session_context_with(ALL, &ContextOptions::default())
            .map(|c| (c.to_json(), format!("{:?}", c.warnings)))
            .map_err(|e| error_kind(&e))
    };
    for seed in 0..24u64 {
        let dir = tempfile::tempdir().expect("dir");
        let store = store_at(dir.path(), seed);
        let n = 60 + seed as usize * 3;
        let lines = compacting_entries(seed, n, n * 2 / 3);
        let (head, tail) = lines.split_at(n * 2 / 3);
        let journal = import_lines(&store, dir.path(), &format!("cmp-{seed}"), head);
        let mut s = store.open(&journal).expect("open");
        s.set_durability(session_manager::Durability::Buffered);
        for e in tail.iter().map(entry) {
            s.append_entry(e).expect("append");
        }
        let entries: Vec<Entry> = lines.iter().map(entry).collect();
        for round in ["appended", "reopened"] {
            for e in &entries {
                let Some(id) = e.id() else { continue };
                let want = whole(&entries, id);
                let got = marked(&mut s, id);
                match (&want, &got) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "seed {seed}, {round}, leaf {id}"),
                    (Err(_), Err(b)) => assert!(b.starts_with("cycle"), "seed {seed}: {b}"),
                    _ => panic!("seed {seed}, {round}, leaf {id}: {want:?} vs {got:?}"),
                }
            }
            s.close().expect("close");
            s = store.open(&journal).expect("reopen");
        }
    }
}

/// Labels land on the nodes the reference's `getTree()` labels (checked with 0.73.1):
/// a string id that a label targets, not a number id whose text a label names, not a
/// target no entry has; with a repeated id, on every node of that id. (The tree looks
/// labels up per label where no id repeats, per node where ids repeat.) A label whose
/// value is not a string is no `label` string (the reference's `{json:1}` on `r`).
#[test]
fn labels_land_on_the_nodes_the_reference_labels() {
    let t = |s: u32| format!("2025-01-01T00:00:0{s}.000Z");
    let mut lines = vec![
        json!({"type":"custom","customType":"x","id":"r","parentId":null,"timestamp":t(1)}),
        json!({"type":"custom","customType":"x","id":5,"parentId":"r","timestamp":t(2)}),
        json!({"type":"custom","customType":"x","id":"a","parentId":"r","timestamp":t(3)}),
        json!({"type":"label","id":"l1","parentId":"a","timestamp":t(4),"targetId":"a","label":"on-a"}),
        json!({"type":"label","id":"l2","parentId":"l1","timestamp":t(5),"targetId":"5","label":"on-5"}),
        json!({"type":"label","id":"l3","parentId":"l2","timestamp":t(6),"targetId":"nowhere","label":"lost"}),
        json!({"type":"label","id":"l4","parentId":"l3","timestamp":t(7),"targetId":"r","label":{"json":1}}),
    ];
    let labels = |tree: &SessionTree<'_>| -> Vec<(u32, String, Option<String>, Option<String>)> {
        tree.nodes
            .iter()
            .map(|n| {
                let v: Value = serde_json::from_str(&n.entry.to_json()).expect("json");
                let id = v["id"].to_string();
                (n.depth, id, n.label.clone(), n.label_timestamp.clone())
            })
            .collect()
    };
    let on_a = || (Some("on-a".to_owned()), Some(t(4)));
    let subtree = |d: u32| -> Vec<(u32, String, Option<String>, Option<String>)> {
        let (l, ts) = on_a();
        let mut v = vec![(d, "\"a\"".to_owned(), l, ts)];
        for (k, id) in ["l1", "l2", "l3", "l4"].iter().enumerate() {
            v.push((d + 1 + k as u32, format!("\"{id}\""), None, None));
        }
        v
    };
    let mut want = vec![
        (0, "\"r\"".to_owned(), None, None),
        (1, "5".to_owned(), None, None),
    ];
    want.extend(subtree(1));
    for dup in [false, true] {
        if dup {
            lines.push(
                json!({"type":"custom","customType":"x","id":"a","parentId":"r","timestamp":t(8)}),
            );
            want.extend(subtree(1));
        }
        let dir = tempfile::tempdir().expect("dir");
        let store = store_at(dir.path(), 3);
        let path = import_lines(&store, dir.path(), "labels", &lines);
        let owned = store.open(&path).expect("open");
        assert_eq!(
            labels(&owned.read_tree(ALL).expect("tree")),
            want,
            "owned, dup {dup}"
        );
        let view = store.open_read_only(&path).expect("view");
        assert_eq!(labels(&view.get_tree()), want, "resident, dup {dup}");
    }
}

/// A value beyond a double's range (`1e400`, D11) is `Infinity` to the reference but
/// `null` in a typed entry: the views that read a journal read it from the record's
/// text alike, so a read-only view answers what the owned session answers (the
/// difffuzz fixtures of such values; `from_entries`, given typed entries only, cannot
/// know it). So are ids holding a lone surrogate, which a typed entry reads with
/// U+FFFD and the index keys exactly (D6; the `probe-surrogate-*` fixtures).
#[test]
fn a_read_only_view_reads_values_beyond_a_double_as_the_owned_session() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store_at(dir.path(), 22);
    let classes = fixtures_dir().join("difffuzz/classes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&classes)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name.contains("-infinite")
                || name.contains("probe-surrogate")
                || name.contains("probe-utf8"))
                && name.ends_with(".jsonl")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let case = file.display().to_string();
        // A header whose id is `1e400` is no header, to the reference too.
        let Ok(imported) = store.import(&file) else {
            assert!(case.contains("header-id"), "{case}: refused");
            continue;
        };
        let journal = imported.journal;
        let mut owned = store.open(&journal).expect("open");
        let all_ids = all_ids(&owned.read_entries(ALL).expect("entries"));
        let mut want = owned_answers(&mut owned, &all_ids);
        drop(owned);
        let mut view = store.open_read_only(&journal).expect("view");
        let got = resident_answers(&mut view, &all_ids);
        align_branches(&mut want, &got);
        assert_eq!(got, want, "{case}");
    }
}

/// A record nested as deep as the reference reads and prints (1,000 levels of
/// `details` and of a custom entry's `data`, past serde_json's 128) is read: the
/// context holds its message with the nesting whole, and every view agrees.
#[test]
fn a_record_nested_as_deep_as_the_reference_reads_is_read() {
    let dir = tempfile::tempdir().expect("dir");
    let store = store_at(dir.path(), 23);
    for depth in [200, 1000] {
        let file = fixtures_dir().join(format!("difffuzz/classes/deep-{depth}-v3.jsonl"));
        let journal = store.import(&file).expect("imported").journal;
        let s = store.open(&journal).expect("open");
        let ctx = s.build_session_context().expect("context");
        assert_eq!(ctx.messages.len(), 2, "depth {depth}");
        let json = ctx.to_reference_json().to_string();
        assert!(json.contains(&"[".repeat(depth)), "depth {depth}");
        drop(s);
        check_journal(&store, &journal, &format!("deep-{depth}"));
    }
}
