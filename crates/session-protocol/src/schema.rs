//! The protocol's JSON Schema, generated from the Rust types (feature `schema`).
//!
//! [`bundle`] is one JSON Schema (draft 2020-12) document: every type a message carries
//! under `$defs` (named as in Rust, except [`Error`], which is
//! `ErrorData`: the `data` of an error object), and beside them, as annotations, the
//! method map (`methods`: each method's params and result, from the table in
//! `methods.rs`) and the notification map (`notifications`, from the table in
//! `notification.rs`). The schemas describe what this crate's types *read*
//! (schemars' deserialize contract): an optional field may be absent or `null`, an
//! object with unmodelled fields (`extra`) takes any further keys.
//!
//! `errorKinds` maps each error's `data.kind` to its code and retryability.
//!
//! `cargo xtask protocol` writes it to `crates/session-protocol/schema/` and derives
//! the TypeScript definitions from it; `cargo xtask protocol --check` (and a test)
//! fails when the committed files differ from what the types give.

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::error::{Error, ErrorObject};
use crate::methods::Method;
use crate::notification::{Direction, Notification};
use crate::version::PROTOCOL_VERSION;

/// One row of the method table, as schemas.
pub(crate) struct MethodSchema {
    pub(crate) name: &'static str,
    pub(crate) doc: &'static [&'static str],
    pub(crate) params: Schema,
    pub(crate) result: Schema,
}

/// One row of the notification table, as schemas.
pub(crate) struct NotificationSchema {
    pub(crate) name: &'static str,
    pub(crate) doc: &'static [&'static str],
    pub(crate) direction: Direction,
    pub(crate) params: Schema,
}

/// The whole protocol as one JSON Schema document (see the module docs).
pub fn bundle() -> Result<Value, SchemaError> {
    let mut generator = SchemaGenerator::new(SchemaSettings::draft2020_12());
    let methods = Method::schemas(&mut generator);
    let notifications = Notification::schemas(&mut generator);
    let error = generator.subschema_for::<ErrorObject>();
    let error_data = generator.subschema_for::<Error>();
    // Sorted by name, so that the files change only where a type does.
    let defs: BTreeMap<String, Value> = generator.take_definitions(true).into_iter().collect();

    let methods: Map<String, Value> = methods
        .into_iter()
        .map(|m| {
            let entry = json!({
                "description": method_description(&m, &defs),
                "params": m.params,
                "result": m.result,
            });
            (m.name.to_owned(), entry)
        })
        .collect();
    let notifications: Map<String, Value> = notifications
        .into_iter()
        .map(|n| {
            let direction = match n.direction {
                Direction::ToOwner => "toOwner",
                Direction::ToClient => "toClient",
            };
            let entry = json!({
                "description": doc_text(n.doc),
                "direction": direction,
                "params": n.params,
            });
            (n.name.to_owned(), entry)
        })
        .collect();
    let error_kinds = error_kinds(&defs)?;
    let mut bundle = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("Base Context session protocol {PROTOCOL_VERSION}"),
        "description": "Generated from the Rust types of session-protocol by `cargo xtask protocol`; do not edit. Types are under `$defs`; `methods` maps each method to its params and result, `notifications` each notification to its params and sender; `error` is the JSON-RPC error object, whose `data` is `errorData`; `errorKinds` gives each `data.kind` its code and whether it is retryable.",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": methods,
        "notifications": notifications,
        "error": error,
        "errorData": error_data,
        "errorKinds": error_kinds,
        "$defs": defs,
    });
    plain_descriptions(&mut bundle);
    Ok(bundle)
}

/// Why the schema could not be made: a construct this module does not expect in the
/// types' schemas (a bug of the generator, found when it runs).
#[derive(Debug, thiserror::Error)]
#[error("schema generation: {0}")]
pub struct SchemaError(String);

/// Every error kind (`data.kind`) with its code and whether it is retryable, read off
/// the types themselves: for each variant of the `ErrorData` schema a sample value is
/// made from its required fields and read as an [`Error`], whose
/// [`code`](Error::code) and [`is_retryable`](Error::is_retryable) answer.
fn error_kinds(defs: &BTreeMap<String, Value>) -> Result<Map<String, Value>, SchemaError> {
    let variants = defs
        .get("ErrorData")
        .and_then(|d| d.get("oneOf"))
        .and_then(Value::as_array)
        .ok_or_else(|| SchemaError("`ErrorData` is not a `oneOf` of its variants".into()))?;
    let mut kinds = Map::new();
    for variant in variants {
        let kind = variant["properties"]["kind"]["const"]
            .as_str()
            .ok_or_else(|| SchemaError(format!("an error variant has no `kind`: {variant}")))?;
        let sample = sample_of(variant, defs, 0)?;
        let error = Error::deserialize(&sample)
            .map_err(|e| SchemaError(format!("error kind {kind}: sample {sample}: {e}")))?;
        kinds.insert(
            kind.to_owned(),
            json!({ "code": error.code(), "retryable": error.is_retryable() }),
        );
    }
    Ok(kinds)
}

/// A value that fits `schema`: required properties only, the first of a union or
/// enum, zeros and empty strings.
fn sample_of(
    schema: &Value,
    defs: &BTreeMap<String, Value>,
    depth: usize,
) -> Result<Value, SchemaError> {
    if depth > 8 {
        return Err(SchemaError(format!("no finite sample of {schema}")));
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        let def = defs
            .get(name)
            .ok_or_else(|| SchemaError(format!("`$ref` to an unknown type {r}")))?;
        return sample_of(def, defs, depth + 1);
    }
    if let Some(c) = schema.get("const") {
        return Ok(c.clone());
    }
    if let Some(first) = schema.get("enum").and_then(|e| e.get(0)) {
        return Ok(first.clone());
    }
    for union in ["oneOf", "anyOf"] {
        if let Some(first) = schema.get(union).and_then(|u| u.get(0)) {
            return sample_of(first, defs, depth + 1);
        }
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types.first().and_then(Value::as_str),
        Some(t) => t.as_str(),
        None => None,
    };
    Ok(match ty {
        Some("string") => json!(""),
        Some("integer" | "number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        Some("object") | None => {
            let mut object = Map::new();
            for key in schema["required"].as_array().into_iter().flatten() {
                let key = key.as_str().unwrap_or_default();
                let prop = &schema["properties"][key];
                object.insert(key.to_owned(), sample_of(prop, defs, depth + 1)?);
            }
            Value::Object(object)
        }
        Some(_) => Value::Null,
    })
}

/// Rewrites rustdoc's links in every `description` as plain code spans: "[`Entry`]"
/// and "[`code`](Error::code)" read as "`Entry`" and "`code`" outside Rust.
fn plain_descriptions(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    match child {
                        Value::String(text) if key == "description" => *text = unlink(text),
                        _ => stack.push(child),
                    }
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// "[`x`]" and "[`x`](target)" as "`x`"; everything else unchanged.
fn unlink(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find("`]") else {
            out.push_str(&rest[start..]);
            return out;
        };
        out.push_str(&after[..end + 1]);
        rest = &after[end + 2..];
        if rest.starts_with('(')
            && let Some(close) = rest.find(')')
        {
            rest = &rest[close + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// A method's description: its row's doc in the table, or, where that only names the
/// method, its params type's doc when that starts with the name
/// (`` `store/create`: `SessionManager.create(cwd)`. ``).
fn method_description(m: &MethodSchema, defs: &BTreeMap<String, Value>) -> String {
    let row = doc_text(m.doc);
    let name = format!("`{}`", m.name);
    if row != name {
        return row;
    }
    let params = m.params.get("$ref").and_then(Value::as_str).and_then(|r| {
        defs.get(r.trim_start_matches("#/$defs/"))
            .and_then(|d| d.get("description"))
            .and_then(Value::as_str)
    });
    match params {
        Some(doc) if doc.starts_with(&name) => doc.to_owned(),
        _ => row,
    }
}

/// A doc comment's lines as one text: lines joined by spaces, blank lines kept as
/// paragraph breaks.
fn doc_text(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            out.push_str("\n\n");
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_text_joins_lines_and_keeps_paragraphs() {
        assert_eq!(doc_text(&[" a", " b", "", " c"]), "a b\n\nc");
        assert_eq!(doc_text(&[]), "");
    }

    #[test]
    fn rustdoc_links_become_code_spans() {
        assert_eq!(
            unlink("see [`Entry`] and [`code`](Error::code)."),
            "see `Entry` and `code`."
        );
        assert_eq!(unlink("a [b] `c` [`d"), "a [b] `c` [`d");
    }

    #[test]
    fn a_method_named_only_in_its_row_takes_its_params_doc() {
        let b = bundle().expect("generates");
        let doc = |m: &str| {
            b["methods"][m]["description"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(doc("store/create").starts_with("`store/create`: `SessionManager.create(cwd)`"));
        // A row with more than the name keeps it.
        assert!(doc("session/close").starts_with("`session/close`: this connection"));
        // Params shared by several methods say nothing of one: the row stays.
        assert_eq!(doc("session/readEntries"), "`session/readEntries`");
    }

    #[test]
    fn error_kinds_are_read_off_the_error_type() {
        let b = bundle().expect("generates");
        assert_eq!(
            b["errorKinds"]["limitExceeded"],
            json!({"code": 1005, "retryable": false})
        );
        assert_eq!(
            b["errorKinds"]["overloaded"],
            json!({"code": -32001, "retryable": true})
        );
        assert_eq!(b["errorKinds"]["alreadyInitialized"]["code"], -32003);
    }

    #[test]
    fn every_method_and_notification_is_in_the_bundle() {
        let b = bundle().expect("generates");
        for m in Method::ALL {
            let entry = &b["methods"][m.as_str()];
            assert!(entry["params"]["$ref"].is_string(), "{}", m.as_str());
            assert!(entry["result"]["$ref"].is_string(), "{}", m.as_str());
        }
        for n in Notification::METHODS {
            assert!(b["notifications"][n]["params"]["$ref"].is_string(), "{n}");
        }
        assert!(b["$defs"]["ErrorData"].is_object());
        assert!(b["$defs"].get("Error").is_none());
    }
}
