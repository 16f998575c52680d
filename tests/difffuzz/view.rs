//! The differential fuzzer's two shared halves: what we answer for a legacy file
//! ([`ours`]), in the shape the batch oracle (`xtask/difffuzz/oracle.mjs`) gives for
//! the reference, and the comparison of the two ([`compare`]).
//!
//! Used by `cargo xtask difffuzz` (driving node) and by the `difffuzz` test of the
//! `tests` crate (replaying committed oracles), through `#[path]`: one source, so the
//! replay checks exactly what the fuzzer checked.
//!
//! Our side goes through what `bcs` runs: `bcs import` into a scratch store, then the
//! `bcs tree --json`, `bcs context --json` and `bcs list --json` builders on the
//! imported journal; outputs are serialized as `bcs` prints them.

use std::path::Path;

use serde_json::{Map, Value, json};
use session_cli::testing::{Location, Out, SessionView, context_json, import_all, tree_json};
use session_index::EntryIndex;
use session_manager::Layout;
use session_types::json::{js_normalized, replace_lone_surrogates};

/// The mtime both sides give the listed file (2001-01-01T00:00:00Z): the listing's
/// `modified` falls back to it.
pub(crate) const FIXED_MTIME_MS: u64 = 978_307_200_000;

/// Our answers for the legacy file `source`, imported into a fresh store under
/// `scratch` (created, and removed again). Keys as the oracle's: `importError`, or
/// `list`, `leafId`, `sessionName`, `entryCount`, `entryIds`, `labels`,
/// `context` (or `contextError`), `tree` (or `treeError`).
pub(crate) fn ours(source: &Path, scratch: &Path) -> Value {
    let _ = std::fs::remove_dir_all(scratch);
    let v = ours_in(source, scratch);
    let _ = std::fs::remove_dir_all(scratch);
    v
}

fn ours_in(source: &Path, scratch: &Path) -> Value {
    let store = Location::with_layout(Layout::with_root(scratch).expect("absolute scratch"));
    let out = Out::stdio();
    let journal = match import_all(&store, &[source.to_path_buf()], &out) {
        Err(e) => return json!({ "importError": format!("{e:#}") }),
        Ok(mut v) => match v.pop().map(|(_, r)| r) {
            Some(Ok(o)) => o.journal,
            Some(Err(e)) => return json!({ "importError": e }),
            None => return json!({ "importError": "no result" }),
        },
    };
    let mut o = Map::new();
    o.insert("list".into(), listed(&store, &journal));
    let view = match SessionView::open(&journal) {
        Ok(v) => v,
        Err(e) => return json!({ "importError": format!("opening the import: {e:#}") }),
    };
    let idx = &view.index;
    // Entry records only (the reference's getEntries() leaves out every `session`
    // record; our index counts the header record too).
    // Ids as the reference holds them (`e.id ?? null`: any JSON value).
    let entries: Vec<EntryIndex> = (0..idx.len())
        .filter_map(|i| u32::try_from(i).ok().and_then(|i| idx.info(EntryIndex(i))))
        .filter(|info| info.kind == session_index::kinds::ENTRY_KIND)
        .map(|info| info.index)
        .collect();
    let ids: Vec<Value> = entries
        .iter()
        .map(|i| idx.id_value(*i).unwrap_or(Value::Null))
        .collect();
    // `labels[e.id] = getLabel(e.id)`: keyed by JavaScript's `String(e.id)`.
    let mut labels = Map::new();
    for i in &entries {
        if let Some(l) = idx.label_of(*i) {
            let key = match idx.id_value(*i) {
                None => "undefined".to_owned(),
                Some(Value::String(s)) => s,
                // `1e400` is `Infinity` to the reference: `String(id)` is "Infinity".
                Some(Value::Null) => idx
                    .id_json(*i)
                    .filter(|t| t.ends_with("Infinity"))
                    .unwrap_or("null")
                    .to_owned(),
                Some(Value::Number(n)) => js_number_text(n.as_f64().unwrap_or(0.0)),
                Some(v) => v.to_string(),
            };
            labels.insert(key, l);
        }
    }
    let leaf = idx
        .leaf()
        .and_then(|i| idx.id_value(i))
        .unwrap_or(Value::Null);
    o.insert("leafId".into(), leaf);
    o.insert(
        "sessionName".into(),
        idx.name().map_or(Value::Null, Value::from),
    );
    o.insert("entryCount".into(), ids.len().into());
    o.insert("entryIds".into(), Value::Array(ids));
    o.insert("labels".into(), Value::Object(labels));
    match context_json(&view, None) {
        Ok(c) => o.insert("context".into(), c),
        Err(e) => o.insert("contextError".into(), format!("{e:#}").into()),
    };
    o.insert("tree".into(), tree_json(&view));
    Value::Object(o)
}

/// `bcs list --json`'s record of the journal (without `path`), `null` when unlisted.
fn listed(store: &Location, journal: &Path) -> Value {
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_millis(FIXED_MTIME_MS);
    if let Ok(f) = std::fs::File::options().write(true).open(journal) {
        let _ = f.set_modified(mtime);
    }
    let options = session_index::ListOptions {
        read_only: true,
        ..session_index::ListOptions::default()
    };
    let Ok((infos, _)) = session_index::list_sessions(store.sessions_dir(), &options) else {
        return Value::Null;
    };
    infos
        .into_iter()
        .find(|i| i.path == journal && i.summary.has_header)
        .map_or(Value::Null, |i| {
            let mut v = i.to_json();
            if let Some(m) = v.as_object_mut() {
                m.shift_remove("path");
            }
            v
        })
}

/// Parses an oracle line (lone surrogate escapes, which serde cannot hold, become
/// U+FFFD first, as everywhere in our comparisons with the reference).
pub(crate) fn parse_oracle(line: &str) -> serde_json::Result<Value> {
    // Without serde_json's 128 levels: an oracle holds a record nested as deep as
    // the reference reads (the replay's inputs stay far below a thread's stack).
    let text = replace_lone_surrogates(line).0;
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    let v = <Value as serde::Deserialize>::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// One difference: which field, and a short signature that groups alike differences.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Mismatch {
    /// `import`, `context`, `tree`, `labels`, `leafId`, `sessionName`, `entries`,
    /// `list`, or `<field> spelling` (same values, different JSON text).
    pub(crate) field: String,
    /// The kind of difference, free of ids and values where possible.
    pub(crate) signature: String,
    /// The first difference in full (not part of the class).
    pub(crate) detail: String,
}

impl Mismatch {
    /// The class key: `field: signature`.
    pub(crate) fn class(&self) -> String {
        format!("{}: {}", self.field, self.signature)
    }
}

/// What comparing one file gave.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// Where the reference hangs, throws or throws the file away: not compared
    /// (allowed divergences, see docs/conformance.md).
    pub(crate) divergences: Vec<String>,
    /// Real differences.
    pub(crate) mismatches: Vec<Mismatch>,
}

/// Compares our answers with the oracle's for one file.
pub(crate) fn compare(theirs: &Value, ours: &Value) -> Verdict {
    let mut v = Verdict::default();
    for key in ["workerError", "oracleError", "openError", "listError"] {
        if let Some(e) = theirs.get(key) {
            v.divergences
                .push(format!("reference {key}: {}", generalise(&text(e))));
            return v;
        }
    }
    if theirs["recovered"] == true {
        let what = if ours.get("importError").is_some() {
            "we refuse the import"
        } else {
            "we import it"
        };
        v.divergences.push(format!(
            "reference discards the file (no valid header) and {what}"
        ));
        return v;
    }
    let mut push = |field: &str, signature: String, detail: String| {
        v.mismatches.push(Mismatch {
            field: field.to_owned(),
            signature,
            detail,
        });
    };
    if let Some(e) = ours.get("importError") {
        push(
            "import",
            format!("refused: {}", generalise(&text(e))),
            text(e),
        );
        return v;
    }
    // v1: the reference's migration gives random ids, ours derived ones; rename the
    // reference's ids to ours by file position.
    let (theirs, ids_comparable) = if theirs["v1"] == true {
        match renamed(theirs, ours) {
            Some(t) => (t, true),
            None => (theirs.clone(), false),
        }
    } else {
        (theirs.clone(), true)
    };
    if !ids_comparable {
        // v1 with a different number of entries: the ids cannot be paired, so only
        // the id-free answers are compared.
        let (a, b) = (&ours["entryCount"], &theirs["entryCount"]);
        push(
            "entries",
            "v1 entry count differs".into(),
            format!("ours {a}, theirs {b}"),
        );
    }
    let fields: [(&str, &str); 6] = [
        ("leafId", "leafId"),
        ("sessionName", "sessionName"),
        ("entries", "entryIds"),
        ("labels", "labels"),
        ("list", "list"),
        ("context", "context"),
    ];
    for (field, key) in fields {
        if !ids_comparable && matches!(key, "leafId" | "entryIds" | "labels") {
            continue;
        }
        let (a, mut b) = (&ours[key], theirs[key].clone());
        if key == "context" {
            if theirs["contextHang"] == true {
                v.divergences
                    .push("reference context loops forever (parent cycle)".into());
                continue;
            }
            if let Some(e) = theirs.get("contextError") {
                v.divergences.push(format!(
                    "reference context throws: {}",
                    generalise(&text(e))
                ));
                continue;
            }
            if let Some(e) = ours.get("contextError") {
                push(
                    "context",
                    format!("ours fails: {}", generalise(&text(e))),
                    text(e),
                );
                continue;
            }
        }
        if key == "list" && theirs["listThrows"] == true {
            v.divergences
                .push("reference listing throws (the file is not listed)".into());
            continue;
        }
        if let Some(e) = theirs.get(format!("{key}Error").as_str())
            && key != "context"
        {
            v.divergences
                .push(format!("reference {key} throws: {}", generalise(&text(e))));
            continue;
        }
        if key == "list"
            && let Some(m) = b.as_object_mut()
        {
            // `bcs list` has no allMessagesText.
            m.shift_remove("allMessagesText");
            // A header id that cannot name a file: our import gives the session an id
            // of its own and writes it into the header record (one id on every
            // surface; the original stays in the provenance and comes back on export).
            // A documented difference (docs/conformance.md), not a mismatch.
            if let (Some(Value::String(header_id)), Some(assigned)) =
                (m.get("id"), a["id"].as_str())
                && session_manager::SafeSessionId::new(header_id).is_err()
                && assigned != header_id
            {
                v.divergences.push(
                    "header id unsafe as a file name: listed under the id the import assigned"
                        .into(),
                );
                m.insert("id".into(), Value::from(assigned));
            }
        }
        let diff = if key == "context" {
            context_difference(a, &b)
        } else {
            difference(a, &b)
        };
        if let Some((sig, detail)) = diff {
            // Label keys are entry ids: not part of the class.
            let sig = match (field, sig.split_once(':')) {
                ("labels", Some((_, rest))) if sig.starts_with('/') => format!("/<id>:{rest}"),
                _ => sig,
            };
            push(field, sig, detail);
        } else if key != "labels"
            && let Some((sig, detail)) = spelling(a, &b)
        {
            // (`labels` is the oracle's own object, not a reference output: its key
            // order is JavaScript's, integer-like keys first.)
            push(&format!("{field} spelling"), sig, detail);
        }
    }
    if !ids_comparable {
        return v;
    }
    if theirs["treeHang"] == true {
        v.divergences
            .push("reference getTree loops forever (cycle through duplicate ids)".into());
    } else if theirs["treeBlowup"] == true {
        v.divergences
            .push("reference getTree visits over a million nodes (duplicate ids)".into());
    } else if let Some(e) = theirs.get("treeError") {
        v.divergences.push(format!(
            "reference getTree throws: {}",
            generalise(&text(e))
        ));
    } else if let Some(sig) = tree_difference(&ours["tree"], &theirs["tree"]) {
        push("tree", sig.0, sig.1);
    } else if let Some((sig, detail)) = spelling(&ours["tree"], &theirs["tree"]) {
        push("tree spelling", sig, detail);
    }
    v
}

fn text(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// `theirs` with every id of `theirs.entryIds` replaced by ours at the same position;
/// `None` when the two sides have different numbers of entries.
fn renamed(theirs: &Value, ours: &Value) -> Option<Value> {
    let (t, o) = (theirs["entryIds"].as_array()?, ours["entryIds"].as_array()?);
    if t.len() != o.len() {
        return None;
    }
    let map: std::collections::HashMap<String, Value> = t
        .iter()
        .zip(o)
        .filter_map(|(a, b)| a.as_str().map(|a| (a.to_owned(), b.clone())))
        .collect();
    let rename = |v: &Value| match v.as_str().and_then(|s| map.get(s)) {
        Some(n) => n.clone(),
        None => v.clone(),
    };
    let mut out = theirs.clone();
    out["entryIds"] = Value::Array(t.iter().map(rename).collect());
    out["leafId"] = rename(&theirs["leafId"]);
    if let Some(labels) = theirs["labels"].as_object() {
        out["labels"] = Value::Object(
            labels
                .iter()
                .map(|(k, l)| (map.get(k).map_or_else(|| k.clone(), text), l.clone()))
                .collect(),
        );
    }
    if let Some(tree) = out.get_mut("tree").and_then(Value::as_object_mut) {
        if let Some(roots) = tree.get_mut("roots").and_then(Value::as_array_mut) {
            roots.iter_mut().for_each(|r| *r = rename(r));
        }
        if let Some(nodes) = tree.get_mut("nodes").and_then(Value::as_array_mut) {
            for n in nodes {
                n["id"] = rename(&n["id"]);
                n["parentId"] = rename(&n["parentId"]);
            }
        }
    }
    Some(out)
}

/// The first difference of two values under JavaScript number semantics, as
/// (signature, detail): the signature is the path with array indices as `*` and
/// the JSON types of both sides.
fn difference(ours: &Value, theirs: &Value) -> Option<(String, String)> {
    let (a, b) = (js_normalized(ours), js_normalized(theirs));
    first(&a, &b, String::new())
}

fn first(a: &Value, b: &Value, at: String) -> Option<(String, String)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => {
                        if let Some(d) = first(v, w, format!("{at}/{k}")) {
                            return Some(d);
                        }
                    }
                    None => {
                        return Some((
                            format!("{at}/{k}: only in ours"),
                            format!("{at}/{k}: ours {}", short(v)),
                        ));
                    }
                }
            }
            y.iter().find(|(k, _)| !x.contains_key(*k)).map(|(k, w)| {
                (
                    format!("{at}/{k}: only in theirs"),
                    format!("{at}/{k}: theirs {}", short(w)),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if let Some((sig, detail)) = first(v, w, format!("{at}/{i}")) {
                    let sig = sig.replacen(&format!("{at}/{i}"), &format!("{at}/*"), 1);
                    return Some((sig, detail));
                }
            }
            (x.len() != y.len()).then(|| {
                let rel = if x.len() < y.len() { "fewer" } else { "more" };
                (
                    format!("{at}: {rel} items in ours"),
                    format!("{at}: {} items in ours, {} in theirs", x.len(), y.len()),
                )
            })
        }
        _ if a == b => None,
        _ => Some((
            format!("{at}: ours {} vs theirs {}", kind(a), kind(b)),
            format!("{at}: ours {}, theirs {}", short(a), short(b)),
        )),
    }
}

/// Context differences: the message list's shape first (length, then the sequence
/// of roles: a message taken or dropped on one side shifts every later one), then
/// the first differing field.
fn context_difference(ours: &Value, theirs: &Value) -> Option<(String, String)> {
    let roles = |c: &Value| -> Option<Vec<Value>> {
        c["messages"]
            .as_array()
            .map(|m| m.iter().map(|m| m["role"].clone()).collect())
    };
    let (ours, theirs) = (&js_normalized(ours), &js_normalized(theirs));
    if let (Some(a), Some(b)) = (roles(ours), roles(theirs))
        && a.len() == b.len()
        && a != b
    {
        let show = |v: &[Value]| {
            v.iter()
                .map(|r| r.as_str().map_or_else(|| r.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(",")
        };
        return Some((
            "/messages: different roles".into(),
            format!("ours [{}], theirs [{}]", show(&a), show(&b)),
        ));
    }
    difference(ours, theirs)
}

/// A JSON type bucket: `null`, `string`, `number`, or `other` (booleans, arrays and
/// objects, which our typed model treats alike).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        _ => "other",
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 160 {
        return s;
    }
    let cut = (0..=160)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &s[..cut])
}

/// Tree differences: the node sets first (which entries are in the tree), then
/// their order (sibling order), then the first differing node field.
fn tree_difference(ours: &Value, theirs: &Value) -> Option<(String, String)> {
    let ids = |t: &Value| -> Vec<String> {
        t["nodes"]
            .as_array()
            .map(|n| n.iter().map(|n| n["id"].to_string()).collect())
            .unwrap_or_default()
    };
    let (mut a, mut b) = (ids(ours), ids(theirs));
    if a != b {
        let order_only = {
            a.sort();
            b.sort();
            a == b
        };
        if order_only {
            let detail = first(&js_normalized(ours), &js_normalized(theirs), String::new())
                .map(|d| d.1)
                .unwrap_or_default();
            return Some(("node order differs (same nodes)".into(), detail));
        }
        let detail = format!("{} nodes in ours, {} in theirs", a.len(), b.len());
        let rel = match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Less => "fewer nodes in ours",
            std::cmp::Ordering::Greater => "more nodes in ours",
            std::cmp::Ordering::Equal => "different node ids",
        };
        return Some((rel.into(), detail));
    }
    difference(ours, theirs)
}

/// Same values, different JSON text (number spelling, key order, escapes): compares
/// `bcs`'s compact serialization with `JSON.stringify`'s, recomputed from the
/// oracle's parsed value with the reference's number spelling.
fn spelling(ours: &Value, theirs: &Value) -> Option<(String, String)> {
    // Ours as `bcs --json` prints it (`session_cli::out::json_line`).
    let bcs = |v: &Value| session_types::js::stringify::to_string(v).unwrap_or_default();
    let a = bcs(ours);
    let b = js_stringify(theirs);
    if a == b {
        return None;
    }
    let at = a
        .bytes()
        .zip(b.bytes())
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let token = |s: &str| -> String {
        let start = s[..at].rfind([',', ':', '[', '{']).map_or(0, |i| i + 1);
        let end = s[at..].find([',', '}', ']']).map_or(s.len(), |i| at + i);
        s.get(start..end).unwrap_or("").chars().take(40).collect()
    };
    let (ta, tb) = (token(&a), token(&b));
    let numeric = |t: &str| t.parse::<f64>().is_ok();
    let ours_sorted = bcs(&sorted(ours));
    let key_order_only = ours_sorted == js_stringify(&sorted(theirs));
    let sig = if numeric(&ta) && numeric(&tb) {
        "number spelling".to_owned()
    } else if key_order_only {
        "key order".to_owned()
    } else {
        "text differs".to_owned()
    };
    Some((sig, format!("ours `{ta}`, JSON.stringify `{tb}`")))
}

/// `v` with every object's keys sorted.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// `JSON.stringify` of a value the oracle printed: JavaScript numbers are printed
/// by the shortest round-trip rule, integral values without a fraction.
fn js_stringify(v: &Value) -> String {
    let mut s = String::new();
    write_js(v, &mut s);
    s
}

fn write_js(v: &Value, out: &mut String) {
    match v {
        Value::Number(n) => out.push_str(&js_number_text(n.as_f64().unwrap_or(0.0))),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_js(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_js(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `Number.prototype.toString()` for a finite double (ECMA-262 Number::toString).
pub(crate) fn js_number_text(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return "null".into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // Shortest round-trip digits and exponent from Rust's `{:e}`.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let e: i64 = exp.parse().unwrap_or(0);
    let k = i64::try_from(digits.len()).unwrap_or(1);
    let n = e + 1;
    let body = if (k..=21).contains(&n) {
        let zeros = usize::try_from(n - k).unwrap_or(0);
        format!("{digits}{}", "0".repeat(zeros))
    } else if 0 < n && n <= 21 {
        let cut = usize::try_from(n).unwrap_or(0);
        format!("{}.{}", &digits[..cut], &digits[cut..])
    } else if -6 < n && n <= 0 {
        let zeros = usize::try_from(-n).unwrap_or(0);
        format!("0.{}{digits}", "0".repeat(zeros))
    } else {
        let exp = n - 1;
        let sign_e = if exp >= 0 { "+" } else { "-" };
        let (first, rest) = digits.split_at(1);
        if rest.is_empty() {
            format!("{first}e{sign_e}{}", exp.abs())
        } else {
            format!("{first}.{rest}e{sign_e}{}", exp.abs())
        }
    };
    format!("{sign}{body}")
}

/// `s` with paths, numbers, quoted text and hex ids replaced, so alike errors group.
pub(crate) fn generalise(s: &str) -> String {
    // serde's "invalid type: <what>, expected …": the type found is not the class.
    let mut s = s.to_owned();
    if let Some(at) = s.find("invalid type: ")
        && let Some(end) = s[at..].find(", expected")
    {
        s.replace_range(at + 14..at + end, "T");
    }
    let mut out = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '`' {
            let mut inner = String::new();
            for d in chars.by_ref() {
                if d == '`' {
                    break;
                }
                inner.push(d);
            }
            // Entry types stay (`message` entry); values go.
            if inner.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !inner.is_empty() {
                out.push_str(&format!("`{inner}`"));
            } else {
                out.push_str("`…`");
            }
        } else if c == '"' {
            // quoted text
            for d in chars.by_ref() {
                if d == '"' {
                    break;
                }
            }
            out.push_str("\"…\"");
        } else if c == '/' && (out.is_empty() || out.ends_with(' ') || out.ends_with('(')) {
            // a path up to the next ':' or space
            while let Some(&d) = chars.peek() {
                if d == ':' || d == ' ' || d == ')' {
                    break;
                }
                chars.next();
            }
            out.push_str("<path>");
        } else if c.is_ascii_hexdigit() && !out.ends_with(|p: char| p.is_ascii_alphanumeric()) {
            // a word of hex digits and dashes with a digit in it is an id
            let mut word = String::from(c);
            while let Some(&d) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '-' {
                    word.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            let hexish = word.chars().all(|d| d.is_ascii_hexdigit() || d == '-');
            if word.chars().all(|d| d.is_ascii_digit()) {
                out.push('N');
            } else if hexish && word.len() >= 4 && word.chars().any(|d| d.is_ascii_digit()) {
                out.push_str("<id>");
            } else {
                out.push_str(&word);
            }
        } else if c.is_ascii_digit() {
            while chars.peek().is_some_and(char::is_ascii_digit) {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out.chars().take(140).collect()
}
