//! `docs/format.md` §3 describes the derived files' bytes: its constants and the
//! sidecar's layout are the code's (verbatim blocks), and a saved sidecar decodes by
//! the spec's offsets to what the index answers, its aggregates to the spec's example.

use std::collections::HashMap;
use std::path::Path;

use session_index::{EntryIndex, Index};

use crate::support::{open, sim, write};

fn doc() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format.md"),
    )
    .expect("docs/format.md")
}

#[test]
fn format_doc_lists_the_constants() {
    let table = session_index::constants_table();
    assert!(
        doc().contains(&table),
        "docs/format.md §3 must contain:\n{table}"
    );
}

#[test]
fn format_doc_lists_the_sidecar_layout() {
    let block = format!("```text\n{}```", session_index::sidecar_layout_table());
    assert!(
        doc().contains(&block),
        "docs/format.md §3 must contain this block verbatim:\n{block}"
    );
}

/// The spec's layout block, read from the spec: (part, field) → (offset, type), and
/// the flags by name.
struct Spec {
    fields: HashMap<(String, String), (usize, String)>,
    sizes: HashMap<String, usize>,
    flags: HashMap<String, u8>,
    /// Entries a page holds, by section.
    pages: HashMap<String, usize>,
}

impl Spec {
    fn read() -> Spec {
        let doc = doc();
        let start = doc.find("```text\nheader (").expect("the layout block") + 8;
        let block = &doc[start..start + doc[start..].find("```").unwrap()];
        let mut spec = Spec {
            fields: HashMap::new(),
            sizes: HashMap::new(),
            flags: HashMap::new(),
            pages: HashMap::new(),
        };
        let mut part = String::new();
        for line in block.lines() {
            if let Some(row) = line.strip_prefix("  ") {
                let cols: Vec<&str> = row.split_whitespace().collect();
                let at: usize = cols[0].parse().unwrap();
                if part == "record flags" {
                    spec.flags.insert(cols[1].to_owned(), at as u8);
                } else if part == "pages" {
                    spec.pages.insert(cols[1].to_owned(), at);
                } else {
                    spec.fields
                        .insert((part.clone(), cols[1].to_owned()), (at, cols[2].to_owned()));
                }
            } else {
                let (name, size) = match line.split_once(" (") {
                    Some((n, s)) => (n, s.split(' ').next().unwrap().parse().unwrap_or(0)),
                    None => (line, 0),
                };
                part = name.to_owned();
                spec.sizes.insert(part.clone(), size);
            }
        }
        spec
    }

    /// The unsigned field `name` of `part` in `b` (little-endian, by its type's width).
    fn uint(&self, part: &str, name: &str, b: &[u8]) -> u64 {
        let ty = &self.fields[&(part.to_owned(), name.to_owned())].1;
        assert!(ty.starts_with('u'), "{name} is {ty}");
        let mut le = [0u8; 8];
        let field = self.bytes(part, name, b);
        le[..field.len()].copy_from_slice(field);
        u64::from_le_bytes(le)
    }

    /// The bytes of field `name` of `part` in `b`.
    fn bytes<'b>(&self, part: &str, name: &str, b: &'b [u8]) -> &'b [u8] {
        let (at, ty) = &self.fields[&(part.to_owned(), name.to_owned())];
        let width = match ty.as_str() {
            "u8" => 1,
            "u16" => 2,
            "u32" => 4,
            "u64" | "f64" => 8,
            n => n.trim_matches(['[', ']']).parse().unwrap(),
        };
        &b[*at..*at + width]
    }
}

/// A session that sets every aggregate: header, labels of string and other targets
/// (a string and a non-string label), name, lifecycle state, usage attribution, the
/// listing's first message and activity, a reason the reference would drop it, an
/// entry without id and a repeated id.
const SESSION: &str = concat!(
    r#"{"type":"session","version":3,"id":"doc","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","parentSession":null}"#,
    "\n",
    r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1767225601000}}"#,
    "\n",
    r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"timestamp":1767225602000}}"#,
    "\n",
    r#"{"type":"label","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","targetId":"a1","label":"start"}"#,
    "\n",
    r#"{"type":"label","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:04.000Z","targetId":5,"label":42}"#,
    "\n",
    r#"{"type":"session_info","id":"a5","parentId":"a4","timestamp":"2026-01-01T00:00:05.000Z","name":" doc "}"#,
    "\n",
    r#"{"type":"session_state","id":"a6","parentId":"a5","timestamp":"2026-01-01T00:00:06.000Z","state":"idle"}"#,
    "\n",
    r#"{"type":"child_usage_attributed","id":"a7","parentId":"a6","timestamp":"2026-01-01T00:00:07.000Z","targetId":"a2"}"#,
    "\n",
    r#"{"type":"message","id":"a8","parentId":"a7","timestamp":"2026-01-01T00:00:08.000Z"}"#,
    "\n",
    r#"{"type":"custom","parentId":"a8","timestamp":"2026-01-01T00:00:09.000Z"}"#,
    "\n",
    r#"{"type":"custom","id":"a1","parentId":"a8","timestamp":"2026-01-01T00:00:10.000Z"}"#,
    "\n",
    r#"{"type":"agent_status","id":"a9","parentId":"a8","timestamp":"2026-01-01T00:00:11.000Z","status":{"summary":"tests pass"}}"#,
    "\n",
);

fn saved() -> (Index, Vec<u8>) {
    let fs = sim();
    let path = Path::new("/s/doc.jsonl");
    write(fs.clone(), path, SESSION);
    let (ix, _) = open(fs.clone(), path);
    let bytes = fs.read_raw(&session_index::sidecar_path(path)).unwrap();
    (ix, bytes)
}

/// Little-endian integers of `b` at `at`.
fn le(b: &[u8], at: usize, width: usize) -> u64 {
    let mut x = [0u8; 8];
    x[..width].copy_from_slice(&b[at..at + width]);
    u64::from_le_bytes(x)
}

/// The path marks of record `i` by a walk of its resolved parents (thinking, service
/// tier, model source, top); all `None` for a record that is no tree entry, or whose
/// path goes to a later record.
fn walked_marks(ix: &Index, i: u32) -> [Option<EntryIndex>; 4] {
    let entry = |k: EntryIndex| {
        ix.info(k)
            .is_some_and(|x| x.kind == session_index::kinds::ENTRY_KIND)
            && !ix.is_unparsable(k)
    };
    let mut out = [None; 4];
    let mut cur = EntryIndex(i);
    if !entry(cur) {
        return out;
    }
    for _ in 0..=ix.len() {
        let (t, role) = ix.kind_of(cur).unwrap();
        let set = |slot: &mut Option<EntryIndex>, hit: bool| {
            if hit && slot.is_none() {
                *slot = Some(cur);
            }
        };
        set(&mut out[0], t == "thinking_level_change");
        set(&mut out[1], t == "service_tier_change");
        set(
            &mut out[2],
            t == "model_change" || t == "message" && role == Some("assistant"),
        );
        match ix.parent(cur) {
            // A parent after its child (a later duplicate id took the parent's
            // id): no marks, only a walk tells.
            Some(p) if p > cur => return [None; 4],
            Some(p) => cur = p,
            None => break,
        }
    }
    out[3] = Some(cur);
    out
}

/// Reads a saved sidecar by the spec alone and compares it with the index's answers.
#[test]
fn a_saved_sidecar_reads_by_the_spec() {
    let spec = Spec::read();
    let (ix, b) = saved();
    let h = &b[..];
    let u = |name: &str| spec.uint("header", name, h);
    assert_eq!(
        spec.bytes("header", "magic", h),
        session_index::SIDECAR_MAGIC
    );
    assert_eq!(u("version"), u64::from(session_index::SIDECAR_VERSION));
    assert_eq!(u("flags"), 0);
    assert_eq!(
        spec.bytes("header", "journal_id", h),
        ix.journal_id().as_bytes()
    );
    assert_eq!(u("covered_len"), ix.covered_len().0);
    assert_eq!(u("covered_seq"), ix.covered_seq().0);
    let witness = ix.witness().unwrap();
    assert_eq!(u("last_offset"), witness.frame.0);
    assert_eq!(
        spec.bytes("header", "last_body_check", h),
        witness.body_check.0
    );
    assert_eq!(u("data_start"), ix.info(EntryIndex(0)).unwrap().offset.0);
    let n = u("rec_count") as usize;
    assert_eq!(n, ix.len());
    let count = u("ids_count") as usize;
    let page = |name: &str| spec.pages[name];
    // The pages, in the spec's order after the head.
    let head_len = u("head_len") as usize;
    let rec_len = spec.sizes["record"];
    let id_len = spec.sizes["id table entry"];
    let recs = head_len;
    let hashes_at = recs + n * rec_len;
    let records_at = hashes_at + 8 * count;
    let pool = hashes_at + count * id_len;
    let labels = pool + u("pool_len") as usize;
    assert_eq!(labels + u("labels_len") as usize, b.len());
    // Recomputing every check (what tools crafting sidecars do) changes nothing.
    let mut resealed = b.clone();
    session_index::sidecar_reseal(&mut resealed);
    assert!(resealed == b, "resealing a saved sidecar changed it");
    let check_end = head_len - session_index::SIDECAR_TRAILER_LEN;
    assert_eq!(
        &b[check_end..head_len],
        session_index::sidecar_trailer(&b[..check_end])
    );
    // The head after the header: the page checks (XXH3-64 seeded with the page's
    // offset), the type and role names, the orphans, the aggregates.
    let page_check =
        |from: usize, to: usize| xxhash_rust::xxh3::xxh3_64_with_seed(&b[from..to], from as u64);
    let mut at = spec.sizes["header"];
    for p in (recs..hashes_at).step_by(page("records") * rec_len) {
        let end = (p + page("records") * rec_len).min(hashes_at);
        assert_eq!(le(h, at, 8), page_check(p, end), "record page at {p}");
        at += 8;
    }
    for p in (hashes_at..records_at).step_by(page("id_hashes") * 8) {
        let end = (p + page("id_hashes") * 8).min(records_at);
        assert_eq!(le(h, at, 8), le(h, p, 8), "first hash of the page at {p}");
        assert_eq!(le(h, at + 8, 8), page_check(p, end), "id hash page at {p}");
        at += 16;
    }
    for p in (records_at..pool).step_by(page("id_records") * 4) {
        let end = (p + page("id_records") * 4).min(pool);
        assert_eq!(le(h, at, 8), page_check(p, end), "id record page at {p}");
        at += 8;
    }
    let mut chunk = pool;
    for _ in 0..u("pool_chunks") {
        let len = le(h, at, 4) as usize;
        assert!(len >= page("pool_chunk") || chunk + len == labels);
        assert_eq!(
            le(h, at + 4, 8),
            page_check(chunk, chunk + len),
            "chunk at {chunk}"
        );
        chunk += len;
        at += 12;
    }
    assert_eq!(chunk, labels);
    assert_eq!(le(h, at, 8), page_check(labels, b.len()), "labels");
    at += 8;
    // Types and roles: counted strings.
    let mut names = Vec::new();
    for _ in 0..u("types_count") + u("roles_count") {
        let len = le(h, at, 4) as usize;
        names.push(std::str::from_utf8(&b[at + 4..at + 4 + len]).unwrap());
        at += 4 + len;
    }
    // No orphans in this session.
    assert_eq!(u("orphan_count"), 0);
    let agg = at;
    assert_eq!(agg + u("agg_len") as usize, check_end);
    // Records.
    let span = |r: &[u8], part: &str| {
        let len = spec.uint("record", &format!("{part}_len"), r);
        (len != 0xffff_ffff).then(|| {
            let start = pool + spec.uint("record", &format!("{part}_start"), r) as usize;
            std::str::from_utf8(&b[start..start + len as usize]).unwrap()
        })
    };
    let rec = |i: usize| &b[recs + i * rec_len..recs + (i + 1) * rec_len];
    let none = |x: u64| (x != 0xffff_ffff).then_some(EntryIndex(x as u32));
    for i in 0..n {
        let (r, info) = (rec(i), ix.info(EntryIndex(i as u32)).unwrap());
        let ru = |name: &str| spec.uint("record", name, r);
        assert_eq!(ru("offset"), info.offset.0);
        assert_eq!(ru("seq"), info.seq.0);
        assert_eq!(ru("payload_len"), u64::from(info.payload_len));
        assert_eq!(ru("kind"), u64::from(info.kind));
        assert_eq!(spec.bytes("record", "padding", r), [0, 0]);
        let ts = f64::from_le_bytes(spec.bytes("record", "timestamp_ms", r).try_into().unwrap());
        assert_eq!((!ts.is_nan()).then_some(ts as i64), info.timestamp_ms);
        assert_eq!(names[ru("type_code") as usize], info.entry_type);
        let flags = ru("flags") as u8;
        if flags & spec.flags["id_json"] == 0 {
            assert_eq!(span(r, "id"), info.id, "record {i}");
        }
        if flags & spec.flags["parent_json"] == 0 {
            assert_eq!(span(r, "parent"), info.parent_id, "record {i}");
        }
        let parent = ru("parent");
        let resolved = ix
            .parent(EntryIndex(i as u32))
            .map_or(0xffff_ffff, |p| u64::from(p.0));
        assert_eq!(parent, resolved, "record {i}");
        // The path marks: what a walk by the resolved parents finds.
        let marks = [
            "mark_thinking",
            "mark_service_tier",
            "mark_model",
            "mark_top",
        ]
        .map(|f| none(ru(f)));
        assert_eq!(marks, walked_marks(&ix, i as u32), "record {i}");
    }
    // The id table, two columns: for every string id the last record with it, in
    // the order of (XXH3-64 of its bytes seeded with its class, 0 for strings; then
    // its bytes); the last entry without an id.
    let (hash, record) = (
        &spec.fields[&("id table entry".into(), "hash".into())],
        &spec.fields[&("id table entry".into(), "record".into())],
    );
    assert_eq!((hash.0, record.0, id_len), (0, 8, 12));
    let hashes: Vec<u64> = (0..count).map(|k| le(h, hashes_at + 8 * k, 8)).collect();
    let table: Vec<usize> = (0..count)
        .map(|k| le(h, records_at + 4 * k, 4) as usize)
        .collect();
    let keys: Vec<&str> = table.iter().map(|i| span(rec(*i), "id").unwrap()).collect();
    for (h, key) in hashes.iter().zip(&keys) {
        assert_eq!(
            *h,
            xxhash_rust::xxh3::xxh3_64_with_seed(key.as_bytes(), 0),
            "{key}"
        );
    }
    let sorted: Vec<(u64, &str)> = hashes.iter().copied().zip(keys.iter().copied()).collect();
    assert!(sorted.windows(2).all(|w| w[0] < w[1]), "{sorted:?}");
    for (i, key) in table.iter().zip(&keys) {
        assert_eq!(ix.find(key), Some(EntryIndex(*i as u32)), "{key}");
    }
    let mut all = keys.clone();
    all.sort_unstable();
    assert_eq!(all, ["a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"]);
    assert_eq!(table[keys.iter().position(|k| *k == "a1").unwrap()], 10);
    assert_eq!(u("ids_undefined"), 9);
    // The aggregates and the labels section: the spec's examples, verbatim.
    for (what, json) in [("aggregates", &b[agg..check_end]), ("labels", &b[labels..])] {
        let value: serde_json::Value = serde_json::from_slice(json).unwrap();
        let example = format!(
            "```json\n{}\n```",
            serde_json::to_string_pretty(&value).unwrap()
        );
        assert!(
            doc().contains(&example),
            "docs/format.md §3 must contain this example of the {what}:\n{example}"
        );
    }
}

/// `docs/format.md` §3 reproduces a framed catalog record with every field, byte by
/// byte, as the catalog's wire code writes it: moving, resizing or adding a field
/// changes the format, and this test fails until the spec (and the catalog version)
/// follow.
#[test]
fn format_doc_shows_the_catalog_record() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format.md"),
    )
    .expect("docs/format.md");
    let record = session_index::catalog_record_example();
    let block = format!("```text\n{record}```");
    assert!(
        doc.contains(&block),
        "docs/format.md §3 must contain:\n{block}"
    );
}
