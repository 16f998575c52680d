//! Integration tests of session-context: reference vectors, the golden corpus, generated
//! sessions, cycles, child usage and service tier.

mod build;
mod corpus;
mod generated;
mod kind;
mod serialize;
mod walk;

use std::path::PathBuf;

use serde_json::Value;
use session_context::Leaf;
use session_types::json::replace_lone_surrogates;
use session_types::{Entry, Record};

/// The workspace root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Typed entries from JSON values (test data is well-formed).
pub fn entries_of(values: &[Value]) -> Vec<Entry> {
    values
        .iter()
        .map(|v| match Record::parse(&v.to_string()) {
            Ok(Record::Entry(e)) => e,
            other => panic!("not an entry: {v} -> {other:?}"),
        })
        .collect()
}

/// The leaf of a vector: key absent → default, `null` → none, string → that id.
pub fn leaf_of(v: &Value) -> Leaf<'_> {
    match v.get("leaf") {
        None => Leaf::Default,
        Some(Value::Null) => Leaf::None,
        Some(Value::String(s)) => Leaf::Id(s),
        Some(other) => panic!("bad leaf {other}"),
    }
}

/// A legacy JSONL file read the way the reference's loader reads it: trim, split on
/// `\n`, skip blank and non-JSON lines, require the first parsed record to be a header
/// with a string id (else no entries), drop the header. Lone surrogates read as U+FFFD.
/// JavaScript's `trim()` is used (a BOM, U+3000 are whitespace); a number beyond a
/// double's range parses (as `JSON.parse` reads it: `Infinity`, here `null`).
pub fn load_jsonl(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut header_seen = false;
    for line in session_types::js::trim(text).split('\n') {
        if session_types::js::is_blank(line) {
            continue;
        }
        let (clean, _) = replace_lone_surrogates(line);
        let Ok(v) = serde_json::from_str::<Value>(&session_types::js::finite_view(&clean)) else {
            continue;
        };
        if !header_seen {
            let ok = v.get("type").and_then(Value::as_str) == Some("session")
                && v.get("id").is_some_and(Value::is_string);
            if !ok {
                return Vec::new();
            }
            header_seen = true;
            continue;
        }
        if v.get("type").and_then(Value::as_str) == Some("session") {
            continue;
        }
        out.push(clean.into_owned());
    }
    out
}

/// Typed entries of record texts; every record must decode.
pub fn parse_all(records: &[String]) -> Vec<Entry> {
    records
        .iter()
        .map(|r| match Record::parse(r) {
            Ok(Record::Entry(e)) => e,
            other => panic!("record does not decode: {other:?}\n{r}"),
        })
        .collect()
}
