//! Comparing our context JSON with the reference's, under JavaScript number semantics.
//!
//! The reference is JavaScript: integers above 2^53 come out rounded and `-0` as `0`,
//! while we keep numbers exact. Both sides are therefore compared after
//! [`session_types::json::js_normalized`]. Key order is not compared (the reference
//! passes stored messages through with whatever key order they were written in).

use serde_json::{Map, Value};
use session_types::json::js_normalized;

/// A canonical text of a context JSON value: JavaScript-normalized numbers, object keys
/// sorted, compact. Two values are equal as the reference sees them iff their canonical
/// texts are equal, so a hash of it can stand in for a large oracle output.
pub fn js_canonical(value: &Value) -> String {
    fn sort(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut entries: Vec<(String, Value)> = m.into_iter().collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k, sort(v)))
                        .collect::<Map<_, _>>(),
                )
            }
            Value::Array(items) => Value::Array(items.into_iter().map(sort).collect()),
            other => other,
        }
    }
    sort(js_normalized(value)).to_string()
}

/// The first place where `ours` and `theirs` differ under JavaScript number semantics,
/// as a JSON-pointer-like path with both values, or `None` when they are equal.
pub fn first_difference(ours: &Value, theirs: &Value) -> Option<String> {
    diff(&js_normalized(ours), &js_normalized(theirs), String::new())
}

fn diff(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => {
                        if let Some(d) = diff(v, w, format!("{at}/{k}")) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{at}/{k}: only in ours")),
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{at}/{k}: only in theirs"))
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if let Some(d) = diff(v, w, format!("{at}/{i}")) {
                    return Some(d);
                }
            }
            (x.len() != y.len())
                .then(|| format!("{at}: {} items in ours, {} in theirs", x.len(), y.len()))
        }
        _ if a == b => None,
        _ => Some(format!("{at}: ours {}, theirs {}", short(a), short(b))),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 120 {
        let cut = (0..=120)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}…", &s[..cut])
    } else {
        s
    }
}
