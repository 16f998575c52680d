//! Tree queries: cycles, self-parents, orphans, duplicates, sort order.

use std::path::Path;

use session_index::{EntryIndex, Index};

use crate::support::{open, sim, write};

const HEADER: &str =
    r#"{"type":"session","version":3,"id":"t","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

fn entry(id: &str, parent: Option<&str>, ts: &str) -> String {
    let p = parent.map_or("null".to_owned(), |p| format!("\"{p}\""));
    format!(r#"{{"type":"custom","customType":"x","id":"{id}","parentId":{p},"timestamp":"{ts}"}}"#)
}

fn index_of(lines: &[String]) -> Index {
    let fs = sim();
    let path = Path::new("/s/t.jsonl");
    let text = format!("{HEADER}\n{}\n", lines.join("\n"));
    write(fs.clone(), path, &text);
    open(fs, path).0
}

fn ids(ix: &Index, v: &[EntryIndex]) -> Vec<String> {
    v.iter()
        .map(|i| ix.info(*i).unwrap().id.unwrap().to_owned())
        .collect()
}

fn render(ix: &Index) -> String {
    let t = ix.tree();
    t.preorder()
        .iter()
        .map(|n| {
            format!(
                "{}{}",
                "  ".repeat(n.depth as usize),
                ix.info(n.entry).unwrap().id.unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const T: &str = "2026-01-01T00:00:0";

#[test]
fn a_two_cycle_terminates_and_is_reported() {
    let ix = index_of(&[
        entry("r", None, &format!("{T}1.000Z")),
        entry("a", Some("b"), &format!("{T}2.000Z")),
        entry("b", Some("a"), &format!("{T}3.000Z")),
        entry("c", Some("a"), &format!("{T}4.000Z")),
    ]);
    let t = ix.tree();
    assert_eq!(render(&ix), "r");
    assert_eq!(t.report.cycles.len(), 1);
    let mut cyc = ids(&ix, &t.report.cycles[0]);
    cyc.sort();
    assert_eq!(cyc, ["a", "b"]);
    assert_eq!(t.report.below_cycles, 1);
    let p = ix.path_to_root(ix.find("c").unwrap());
    assert_eq!(ids(&ix, p.cycle.as_ref().unwrap()).len(), 2);
    assert_eq!(ids(&ix, &p.path), ["b", "a", "c"]);
}

/// Issue 14: `a` (root), `x` (parent `y`), `y` (parent `x`), `x` again (parent `a`).
/// The reference's `getTree()` keys nodes by id, so the node of `x` is the second
/// `x` entry's and the first `x` entry attaches it under `y`: a → x → y → x → …, a
/// cycle of nodes its timestamp sort walks forever. Ours terminates and shows each
/// node once (`y` still counts the repeated child, as the reference's node does).
#[test]
fn the_duplicated_id_pattern_that_hangs_the_reference_terminates() {
    let ix = index_of(&[
        entry("a", None, &format!("{T}1.000Z")),
        entry("x", Some("y"), &format!("{T}2.000Z")),
        entry("y", Some("x"), &format!("{T}3.000Z")),
        entry("x", Some("a"), &format!("{T}4.000Z")),
    ]);
    let t = ix.tree();
    assert_eq!(render(&ix), "a\n  x\n    y");
    let counts: Vec<u32> = t.preorder().iter().map(|n| n.children).collect();
    assert_eq!(counts, [1, 1, 1]);
    assert_eq!(t.report.repeated, 1);
    assert!(t.report.cycles.is_empty(), "no entry is its own ancestor");
    // The path from the leaf (the second `x`) is the reference's: a, x.
    let p = ix.path_to_root(ix.leaf().unwrap());
    assert_eq!(
        (ids(&ix, &p.path), p.cycle),
        (vec!["a".to_owned(), "x".to_owned()], None)
    );
}

#[test]
fn a_self_parent_is_a_root_and_its_path_ends_with_a_reported_cycle() {
    let ix = index_of(&[
        entry("s", Some("s"), &format!("{T}1.000Z")),
        entry("k", Some("s"), &format!("{T}2.000Z")),
    ]);
    assert_eq!(render(&ix), "s\n  k");
    assert!(ix.tree().report.cycles.is_empty());
    assert_eq!(ix.parent(ix.find("s").unwrap()), None);
    let p = ix.path_to_root(ix.find("k").unwrap());
    assert_eq!(ids(&ix, &p.path), ["s", "k"]);
    assert_eq!(ids(&ix, p.cycle.as_ref().unwrap()), ["s"]);
}

#[test]
fn children_sort_by_timestamp_stably_and_orphans_become_roots() {
    let ix = index_of(&[
        entry("r", None, &format!("{T}1.000Z")),
        entry("late", Some("r"), &format!("{T}9.000Z")),
        entry("early", Some("r"), &format!("{T}2.000Z")),
        entry("same1", Some("r"), &format!("{T}5.000Z")),
        entry("same2", Some("r"), &format!("{T}5.000Z")),
        entry("orphan", Some("nowhere"), &format!("{T}1.000Z")),
        entry("fwd", Some("later-parent"), &format!("{T}1.000Z")),
        entry("later-parent", None, &format!("{T}1.000Z")),
    ]);
    assert_eq!(
        render(&ix),
        "r\n  early\n  same1\n  same2\n  late\norphan\nlater-parent\n  fwd"
    );
    assert_eq!(
        ids(&ix, &ix.children(ix.find("r").unwrap())),
        ["late", "early", "same1", "same2"]
    );
}

#[test]
fn invalid_timestamps_sort_as_v8_does_for_small_lists() {
    // V8 compares NaN as equal: [bad, 2, 1] → run of 2 ([bad,2]: 2-NaN is "equal"),
    // then 1 is binary-inserted before 2 but after bad... as the port computes.
    let ix = index_of(&[
        entry("r", None, &format!("{T}1.000Z")),
        entry("bad", Some("r"), "garbage"),
        entry("two", Some("r"), &format!("{T}2.000Z")),
        entry("one", Some("r"), &format!("{T}1.000Z")),
    ]);
    insta::assert_snapshot!(render(&ix), @r"
    r
      bad
      one
      two
    ");
}

/// The reference's `getTree()` attaches the node of the last entry with an id once
/// per entry carrying it: `d` shows under `x` and again under `r`, subtree and all.
#[test]
fn duplicate_ids_show_the_last_entry_at_each_attachment() {
    let ix = index_of(&[
        entry("r", None, &format!("{T}1.000Z")),
        entry("d", Some("r"), &format!("{T}2.000Z")),
        entry("x", Some("r"), &format!("{T}3.000Z")),
        entry("d", Some("x"), &format!("{T}4.000Z")),
    ]);
    let t = ix.tree();
    assert_eq!(render(&ix), "r\n  x\n    d\n  d");
    assert_eq!(t.report.repeated, 1);
    assert!(!t.report.shown_once);
    assert_eq!(ix.counts().duplicate_ids, 1);
    assert_eq!(ix.find("d"), Some(EntryIndex(4)));
}

/// Parents resolve as the reference's `byId` map does — the last entry with the id,
/// even one appended after the child, and a parent that appears later — both in the
/// index built by a replay and in one loaded from its sidecar.
#[test]
fn parents_resolve_to_the_last_entry_with_the_id_before_and_after_a_reload() {
    let fs = sim();
    let path = Path::new("/s/p.jsonl");
    let lines = [
        entry("x", None, &format!("{T}1.000Z")),
        entry("c", Some("x"), &format!("{T}2.000Z")),
        entry("f", Some("later"), &format!("{T}3.000Z")),
        entry("x", None, &format!("{T}4.000Z")),
        entry("later", None, &format!("{T}5.000Z")),
        entry("o", Some("missing"), &format!("{T}6.000Z")),
        entry("s", Some("s"), &format!("{T}7.000Z")),
    ];
    write(
        fs.clone(),
        path,
        &format!("{HEADER}\n{}\n", lines.join("\n")),
    );
    let parent_ids = |ix: &Index| -> Vec<Option<usize>> {
        (1..=lines.len() as u32)
            .map(|i| ix.parent(EntryIndex(i)).map(|p| p.0 as usize))
            .collect()
    };
    // Record 0 is the header; x=1, c=2, f=3, x(dup)=4, later=5, o=6, s=7.
    let expected = vec![None, Some(4), Some(5), None, None, None, None];
    let (built, _) = open(fs.clone(), path);
    assert_eq!(parent_ids(&built), expected);
    let (loaded, report) = open(fs, path);
    assert_eq!(report.status, session_index::IndexStatus::Fresh);
    assert_eq!(parent_ids(&loaded), expected);
    assert_eq!(loaded.find("x"), Some(EntryIndex(4)));
}

/// The tree takes a truthy parent from the resolved parent the context walk uses:
/// stale in a replay where a named parent appears later (resolved then through the
/// map) and stored exact in the sidecar after a reload; both trees are the
/// reference's (`getTree()` of these lines, node 20, `context.mjs`), with and without
/// a repeated id.
#[test]
fn the_tree_reads_the_same_from_resolved_parents_stale_or_stored() {
    let unique = [
        entry("x", None, &format!("{T}1.000Z")),
        entry("c", Some("x"), &format!("{T}2.000Z")),
        entry("f", Some("later"), &format!("{T}3.000Z")),
        entry("s", Some("s"), &format!("{T}4.000Z")),
        entry("later", Some("x"), &format!("{T}5.000Z")),
        entry("o", Some("missing"), &format!("{T}6.000Z")),
    ];
    let mut repeated = unique.to_vec();
    repeated.push(entry("x", Some("o"), &format!("{T}7.000Z")));
    for (lines, expected) in [
        (&unique[..], "x\n  c\n  later\n    f\ns\no"),
        // The last `x` owns the id: a root (the first `x` is one) and below `o`.
        (
            &repeated[..],
            "x\n  c\n  later\n    f\ns\no\n  x\n    c\n    later\n      f",
        ),
    ] {
        let fs = sim();
        let path = Path::new("/s/r.jsonl");
        write(
            fs.clone(),
            path,
            &format!("{HEADER}\n{}\n", lines.join("\n")),
        );
        let (built, _) = open(fs.clone(), path);
        assert_eq!(render(&built), expected);
        let (loaded, report) = open(fs, path);
        assert_eq!(report.status, session_index::IndexStatus::Fresh);
        assert_eq!(render(&loaded), expected);
    }
}

/// Sibling order is V8's for any number of siblings, invalid timestamps included:
/// orders node produced (`session-types/tests/data/js_sort.json`) for 64 to 72
/// siblings (where V8 starts merging runs) and for 777.
#[test]
fn sibling_order_is_v8s_at_any_length() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../session-types/tests/data/js_sort.json");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut checked = 0;
    for case in cases.as_array().unwrap() {
        let keys = case["keys"].as_array().unwrap();
        if !((64..=72).contains(&keys.len()) || keys.len() == 777)
            || !keys.iter().any(|k| k.is_null())
        {
            continue;
        }
        let mut lines = vec![entry("r", None, &format!("{T}1.000Z"))];
        for (i, k) in keys.iter().enumerate() {
            let ts = k.as_i64().map_or("garbage".to_owned(), |ms| {
                session_types::Timestamp::from_unix_ms(1_767_225_600_000 + ms).0
            });
            lines.push(entry(&format!("c{i}"), Some("r"), &ts));
        }
        let ix = index_of(&lines);
        let want: Vec<String> = case["order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| format!("c{i}"))
            .collect();
        let t = ix.tree();
        assert_eq!(
            ids(
                &ix,
                &t.children(ix.find("r").unwrap())
                    .iter()
                    .map(|c| EntryIndex(*c))
                    .collect::<Vec<_>>()
            ),
            want,
            "{} siblings",
            keys.len()
        );
        checked += 1;
    }
    assert!(checked >= 10, "{checked} cases");
}

/// Issue 14: fields of other JSON types are read as the reference reads them. A
/// `parentId` that is `""`, a number or an object names no parent (an orphan root) and
/// is kept to be shown as is; a truthy non-string label is a label (`0` clears one);
/// a line with a repeated key keeps its last value.
#[test]
fn odd_parent_ids_and_labels_read_as_the_reference_reads_them() {
    let text = [
        r#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"x","timestamp":1}}"#,
        r#"{"type":"message","id":"b","parentId":5,"timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"x","timestamp":2}}"#,
        r#"{"type":"message","id":"c","parentId":"","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":"x","timestamp":3}}"#,
        r#"{"type":"message","id":"d","parentId":{"id":"a"},"timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"user","content":"x","timestamp":4}}"#,
        r#"{"type":"message","id":"e","parentId":"zzz","timestamp":"2025-01-01T00:00:05.000Z","parentId":"a","message":{"role":"user","content":"x","timestamp":5}}"#,
        r#"{"type":"label","id":"l1","parentId":"e","timestamp":"2025-01-01T00:00:06.000Z","targetId":"a","label":42}"#,
        r#"{"type":"label","id":"l2","parentId":"l1","timestamp":"2025-01-01T00:00:07.000Z","targetId":"b","label":{"k":[1]}}"#,
        r#"{"type":"label","id":"l3","parentId":"l2","timestamp":"2025-01-01T00:00:08.000Z","targetId":"c","label":"s"}"#,
        r#"{"type":"label","id":"l4","parentId":"l3","timestamp":"2025-01-01T00:00:09.000Z","targetId":"c","label":0}"#,
    ]
    .join("\n")
        + "\n";
    let path = Path::new("/s/odd.jsonl");
    let fs = sim();
    write(fs.clone(), path, &text);
    let (ix, _) = open(fs.clone(), path);
    let info = |id: &str| ix.info(ix.find(id).expect(id)).expect(id);
    let parents: Vec<_> = ["b", "c", "d", "e"]
        .iter()
        .map(|id| (info(id).parent_id, info(id).parent_json))
        .collect();
    assert_eq!(
        parents,
        [
            (None, Some("5")),
            (None, Some(r#""""#)),
            (None, Some(r#"{"id":"a"}"#)),
            (Some("a"), None)
        ]
    );
    let t = ix.tree();
    let roots: Vec<_> = t.roots.iter().map(|r| info_id(&ix, *r)).collect();
    assert_eq!(roots, ["a", "b", "c", "d"]);
    assert_eq!(ix.label_value("a"), Some(serde_json::json!(42)));
    assert_eq!(ix.label_value("b"), Some(serde_json::json!({"k": [1]})));
    assert_eq!(ix.label_value("c"), None);
    assert_eq!(ix.label("a"), None, "label() gives string labels only");
    assert_eq!(ix.counts().unparsable, 0);
    // A rebuild from the saved sidecar answers the same.
    let (again, _) = open(fs, path);
    assert_eq!(again.label_value("b"), ix.label_value("b"));
    let i = again.find("d").expect("d");
    assert_eq!(again.info(i).expect("d").parent_json, Some(r#"{"id":"a"}"#));
}

fn info_id(ix: &Index, i: EntryIndex) -> String {
    ix.info(i).and_then(|x| x.id).unwrap_or("").to_owned()
}

/// Issue 14: ids of any JSON type are the reference's `Map` keys (`5` is not `"5"`,
/// `5.0` is `5`, an object is only itself); entries without an id and records that
/// are not objects are keyed `undefined`, whose last node an entry without a
/// `parentId` key attaches under; a node is shown at each attachment; labels follow
/// the target's key. The answers survive a reload from the sidecar. (Oracle:
/// `tests/fixtures/difffuzz/classes/ids-of-every-json-type.oracle.json`.)
#[test]
fn ids_of_any_json_type_key_the_tree_as_the_reference_maps_do() {
    let text = std::fs::read_to_string(
        crate::support::fixtures().join("difffuzz/classes/ids-of-every-json-type.jsonl"),
    )
    .unwrap();
    let path = Path::new("/s/keys.jsonl");
    let fs = sim();
    write(fs.clone(), path, &text);
    for pass in 0..2 {
        let (ix, _) = open(fs.clone(), path);
        let t = ix.tree();
        let shown: Vec<_> = t
            .preorder()
            .iter()
            .map(|n| serde_json::json!([ix.id_value(n.entry), n.depth, ix.label_of(n.entry)]))
            .collect();
        assert_eq!(
            serde_json::Value::Array(shown),
            serde_json::json!([
                [5, 0, "five"],
                ["5", 1, null],
                [null, 2, "none"],
                ["e", 3, null],
                ["c", 1, null],
                [false, 0, null],
                [{"o": 1}, 0, null],
                [null, 0, "none"],
                ["e", 1, null],
                ["l1", 0, null],
                ["l2", 0, null]
            ]),
            "pass {pass}"
        );
        // Fields as held: absent ones are `None`, `null` and other types as they are.
        let fields = |i: u32| {
            let i = EntryIndex(i);
            (ix.id_value(i), ix.parent_value(i), ix.type_value(i))
        };
        use serde_json::json;
        assert_eq!(fields(4), (None, Some(json!("5")), Some(json!("custom"))));
        assert_eq!(fields(5), (Some(json!("e")), None, Some(json!("custom"))));
        assert_eq!(
            fields(6),
            (Some(json!(false)), Some(json!("")), Some(json!(7)))
        );
        assert_eq!(fields(7), (Some(json!({"o": 1})), Some(json!(null)), None));
        assert_eq!(fields(8), (None, None, None));
        assert_eq!(ix.leaf().and_then(|l| ix.id_value(l)), Some("l2".into()));
        assert_eq!(ix.counts().unparsable, 1);
    }
}

/// The reference's context walk follows any truthy `parentId`
/// (`byId.get(current.parentId)`): a number leads to the entry whose id is that
/// number (`1.0` and `1` are one key), `0` and `false` stop, an unknown one is an
/// orphan's missing parent (difffuzz class `context: /messages/*/role…`, seed 326).
#[test]
fn a_parent_id_that_is_not_a_string_leads_where_the_context_walk_goes() {
    let c = |id: &str, parent: &str| {
        format!(
            r#"{{"type":"custom","customType":"x","id":{id},"parentId":{parent},"timestamp":"{T}1.000Z"}}"#
        )
    };
    let ix = index_of(&[
        c("1.0", "null"),
        c(r#""a""#, "1"),
        c(r#""b""#, "0"),
        c(r#""c""#, "false"),
        c(r#""d""#, "7"),
        c(r#""e""#, r#""a""#),
        c("true", "true"),
    ]);
    let jp = |i: u32| ix.json_parent(EntryIndex(i));
    assert_eq!(jp(1), None);
    assert_eq!(jp(2), Some(("1", Some(EntryIndex(1)))));
    assert_eq!(jp(3), None);
    assert_eq!(jp(4), None);
    assert_eq!(jp(5), Some(("7", None)));
    assert_eq!(jp(6), None);
    assert_eq!(jp(7), Some(("true", Some(EntryIndex(7)))));
}

/// A line that repeats a key keeps a `1e400` id as `Infinity` (JSON.parse keeps the
/// last value; only the keys are made unique), so its children find it and a last
/// entry with that id is no `null` leaf (difffuzz seed 1843).
#[test]
fn a_1e400_id_on_a_line_with_a_repeated_key_is_infinity() {
    let ix = index_of(&[
        format!(
            r#"{{"id":"zzz","type":"custom","id":1e400,"parentId":null,"timestamp":"{T}1.000Z"}}"#
        ),
        format!(r#"{{"type":"custom","id":"c","parentId":1e400,"timestamp":"{T}2.000Z"}}"#),
    ]);
    assert_eq!(ix.id_json(EntryIndex(1)), Some("Infinity"));
    assert_eq!(ix.parent(EntryIndex(2)), Some(EntryIndex(1)));
    assert_eq!(ix.tree().preorder().len(), 2);
    // The largest double stands in for Infinity while the line is re-read: a line
    // holding it too keeps the finite view (`1e400` as `null`), and the double itself
    // stays what it is.
    let ix = index_of(&[format!(
        r#"{{"id":"zzz","type":"custom","id":1e400,"parentId":1.7976931348623157e308,"parentId":1.7976931348623157e308,"timestamp":"{T}1.000Z"}}"#
    )]);
    assert_eq!(ix.id_json(EntryIndex(1)), Some("null"));
    assert_eq!(
        ix.parent_value(EntryIndex(1)),
        Some(serde_json::json!(f64::MAX))
    );
}

/// `getBranch` walks the reference's rules (§2.1: follow any truthy `parentId`
/// through the id map), so number ids chain as the reference's `Map` keys them:
/// `1 ← 2 ← "3"` is one branch of three entries (checked against
/// `SessionManager.getBranch()` of 0.73.1: `[1,2,"3"]`), as the context walk finds.
#[test]
fn a_branch_follows_number_parent_ids_as_the_reference_does() {
    let ix = index_of(&[
        format!(
            r#"{{"type":"custom","customType":"x","id":1,"parentId":null,"timestamp":"{T}1.000Z"}}"#
        ),
        format!(
            r#"{{"type":"custom","customType":"x","id":2,"parentId":1,"timestamp":"{T}2.000Z"}}"#
        ),
        format!(
            r#"{{"type":"custom","customType":"x","id":"3","parentId":2,"timestamp":"{T}3.000Z"}}"#
        ),
        // A string "1" is not the number 1: this one's parent is missing.
        format!(
            r#"{{"type":"custom","customType":"x","id":"4","parentId":"1","timestamp":"{T}4.000Z"}}"#
        ),
    ]);
    let ids = |v: &[EntryIndex]| -> Vec<serde_json::Value> {
        v.iter().map(|i| ix.id_value(*i).unwrap()).collect()
    };
    let p = ix.path_to_root(ix.find("3").unwrap());
    assert_eq!(
        ids(&p.path),
        [
            serde_json::json!(1),
            serde_json::json!(2),
            serde_json::json!("3")
        ]
    );
    assert_eq!(p.cycle, None);
    let p = ix.path_to_root(ix.find("4").unwrap());
    assert_eq!(ids(&p.path), [serde_json::json!("4")]);
}
