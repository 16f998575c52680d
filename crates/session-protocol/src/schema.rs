//! The protocol's JSON Schema, generated from the Rust types (feature `schema`).
//!
//! [`bundle`] is one JSON Schema (draft 2020-12) document: every type a message carries
//! under `$defs` (named as in Rust, except [`Error`](crate::Error), which is
//! `ErrorData`: the `data` of an error object), and beside them, as annotations, the
//! method map (`methods`: each method's params and result, from the table in
//! `methods.rs`) and the notification map (`notifications`, from the table in
//! `notification.rs`). The schemas describe what this crate's types *read*
//! (schemars' deserialize contract): an optional field may be absent or `null`, an
//! object with unmodelled fields (`extra`) takes any further keys.
//!
//! `cargo xtask protocol` writes it to `crates/session-protocol/schema/` and derives
//! the TypeScript definitions from it; `cargo xtask protocol --check` (and a test)
//! fails when the committed files differ from what the types give.

use std::collections::BTreeMap;

use schemars::generate::SchemaSettings;
use schemars::{Schema, SchemaGenerator};
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
pub fn bundle() -> Value {
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
                "description": doc_text(m.doc),
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
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("Base Context session protocol {PROTOCOL_VERSION}"),
        "description": "Generated from the Rust types of session-protocol by `cargo xtask protocol`; do not edit. Types are under `$defs`; `methods` maps each method to its params and result, `notifications` each notification to its params and sender; `error` is the JSON-RPC error object, whose `data` is `errorData`.",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": methods,
        "notifications": notifications,
        "error": error,
        "errorData": error_data,
        "$defs": defs,
    })
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
    fn every_method_and_notification_is_in_the_bundle() {
        let b = bundle();
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
