//! The `js` module against tables produced by node 20 (`tests/data/*.mjs`).

use std::path::PathBuf;

use serde_json::Value;
use session_types::js::sort::sort_by_number_key;

fn data(name: &str) -> Value {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(&p).expect("committed test data");
    serde_json::from_str(&text).expect("test data is JSON")
}

/// V8's `Array.prototype.sort` with `(a, b) => a.t - b.t`, NaN keys included, at
/// 1–300 elements and a few longer arrays.
#[test]
fn sort_matches_v8() {
    let cases = data("js_sort.json");
    let cases = cases.as_array().expect("an array of cases");
    assert!(cases.len() >= 300);
    let mut failures = Vec::new();
    for case in cases {
        let keys: Vec<f64> = case["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|k| k.as_f64().unwrap_or(f64::NAN))
            .collect();
        let want: Vec<usize> = case["order"]
            .as_array()
            .expect("order")
            .iter()
            .map(|i| i.as_u64().expect("an index") as usize)
            .collect();
        let mut got: Vec<usize> = (0..keys.len()).collect();
        sort_by_number_key(&mut got, |&i| keys[i]);
        if got != want {
            failures.push(keys.len());
        }
    }
    assert!(
        failures.is_empty(),
        "orders differ from V8's at lengths {failures:?}"
    );
}

/// `Date.parse` (as `new Date(s).getTime()` in the reference) on ISO forms, V8's
/// extensions and legacy forms, rejections and range edges, against node with
/// `TZ=UTC`.
#[test]
fn date_parse_matches_v8() {
    let rows = data("js_date.json");
    let rows = rows.as_array().expect("an array of rows");
    assert!(rows.len() >= 200);
    let mut failures = Vec::new();
    for row in rows {
        let s = row[0].as_str().expect("the input string");
        let want = row[1].as_i64();
        let got = session_types::parse_js_date(s);
        if got != want {
            failures.push(format!("{s:?}: node {want:?}, ours {got:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}

/// Numbers read from JSON text and printed with `js::stringify`, against node's
/// `JSON.stringify(JSON.parse(text))`.
#[test]
fn numbers_print_as_json_stringify() {
    let rows = data("js_number.json");
    let rows = rows.as_array().expect("an array of rows");
    assert!(rows.len() >= 300);
    let mut failures = Vec::new();
    for row in rows {
        let text = row[0].as_str().expect("the number text");
        let want = row[1].as_str().expect("node's output");
        let v: Value = serde_json::from_str(text).expect("a JSON number");
        let got = session_types::js::stringify::to_string(&v).expect("serializes");
        if got != want {
            failures.push(format!("{text}: node {want}, ours {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} differ:\n{}",
        failures.len(),
        rows.len(),
        failures.join("\n")
    );
}
