//! `docs/rpc.md` documents every method and every notification, and its examples are
//! what the types read, come back unchanged when written again, and fit the
//! committed JSON Schema.

use std::collections::BTreeMap;

use serde_json::Value;
use session_protocol::*;

use crate::schema;

const RPC_MD: &str = include_str!("../../../../docs/rpc.md");

#[test]
fn every_method_is_documented_with_an_example_that_reads() {
    // method → (requests, results) seen in its section; notification → examples
    let mut seen: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut notes: BTreeMap<String, usize> = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_json = false;
    for (n, line) in RPC_MD.lines().enumerate() {
        let n = n + 1;
        if let Some(h) = line.strip_prefix("### `") {
            let name = h.split('`').next().unwrap_or_default().to_owned();
            if Notification::METHODS.contains(&name.as_str()) {
                assert!(
                    notes.insert(name.clone(), 0).is_none(),
                    "rpc.md:{n}: `{name}` twice"
                );
                current = Some(name);
                continue;
            }
            assert!(
                Method::from_name(&name).is_some(),
                "rpc.md:{n}: `{name}` is not a method"
            );
            assert!(
                seen.insert(name.clone(), (0, 0)).is_none(),
                "rpc.md:{n}: `{name}` twice"
            );
            current = Some(name);
            continue;
        }
        if line.starts_with("```") {
            in_json = line == "```json";
            continue;
        }
        if !in_json {
            continue;
        }
        let method = current
            .clone()
            .unwrap_or_else(|| panic!("rpc.md:{n}: example outside a method"));
        if let Some(count) = notes.get_mut(&method) {
            match Incoming::parse(line.as_bytes(), LineLimits::default()) {
                Ok(Incoming::Notification { method: m, params }) => {
                    assert_eq!(m, method, "rpc.md:{n}: a notification of its section");
                    Notification::from_params(&m, params)
                        .unwrap_or_else(|e| panic!("rpc.md:{n}: not a {method}: {e}"));
                    *count += 1;
                }
                other => panic!("rpc.md:{n}: not an example notification: {other:?}"),
            }
            continue;
        }
        let m = Method::from_name(&method).expect("checked at its heading");
        let counts = seen.get_mut(&method).expect("seen");
        match Incoming::parse(line.as_bytes(), LineLimits::default()) {
            Ok(Incoming::Request { .. }) => {
                let (_, request) = parse_request(line.as_bytes(), LineLimits::default())
                    .unwrap_or_else(|r| panic!("rpc.md:{n}: {:?}", r.error));
                assert_eq!(
                    request.method(),
                    m,
                    "rpc.md:{n}: a request of its section's method"
                );
                let line: Value = serde_json::from_str(line).expect("parsed above");
                let params = line
                    .get("params")
                    .cloned()
                    .unwrap_or(Value::Object(Default::default()));
                let written: Value =
                    serde_json::from_str(&request.params_json()).expect("params are JSON");
                assert_eq!(
                    written, params,
                    "rpc.md:{n}: params change when written again"
                );
                schema::assert_fits(
                    &format!("rpc.md:{n}: params"),
                    schema::params_of(&method),
                    &params,
                );
                counts.0 += 1;
            }
            Ok(Incoming::Response {
                outcome: Ok(raw), ..
            }) => {
                m.check_result(raw.get())
                    .unwrap_or_else(|e| panic!("rpc.md:{n}: not a {method} result: {e}"));
                let result: Value = serde_json::from_str(raw.get()).expect("parsed above");
                let again = m.reencode_result(raw.get()).expect("reads, as checked");
                let again: Value = serde_json::from_str(&again).expect("written as JSON");
                assert_eq!(
                    again, result,
                    "rpc.md:{n}: the result changes when written again"
                );
                schema::assert_fits(
                    &format!("rpc.md:{n}: result"),
                    schema::result_of(&method),
                    &result,
                );
                counts.1 += 1;
            }
            other => panic!("rpc.md:{n}: not an example request or result: {other:?}"),
        }
    }
    for name in Notification::METHODS {
        assert_eq!(
            notes.get(*name),
            Some(&1),
            "docs/rpc.md: notification `{name}` needs a section with one example"
        );
    }
    for m in Method::ALL {
        assert_eq!(
            seen.get(m.as_str()),
            Some(&(1, 1)),
            "docs/rpc.md: `{}` needs a section with one request and one result",
            m.as_str()
        );
    }
}
