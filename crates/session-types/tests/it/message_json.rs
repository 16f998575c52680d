//! `AgentMessage::parse_json` (a direct reading where the text allows) against the
//! derived reading `serde_json::from_str::<AgentMessage>`: the same message, or the
//! same error, on every message of the fixtures and on odd shapes made from them.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use session_types::AgentMessage;

use crate::fixture_files;

/// Checks one text: both readings agree. Returns whether it read as a message.
fn check(text: &str) -> bool {
    let derived = serde_json::from_str::<AgentMessage>(text);
    let fast = AgentMessage::parse_json(text);
    match (&derived, &fast) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the readings differ: {text}"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "errors differ: {text}"),
        (a, b) => panic!("derived {a:?}, parse_json {b:?}: {text}"),
    }
    derived.is_ok()
}

/// The `message` of every message record of the corpus, the leniency fixtures and
/// the generated 1k session, as written there.
fn fixture_messages() -> Vec<String> {
    #[derive(Deserialize)]
    struct Record<'a> {
        #[serde(borrow)]
        message: &'a RawValue,
    }
    let mut out = Vec::new();
    for (_, p) in fixture_files(&["legacy", "edge", "leniency", "generated"]) {
        let text = String::from_utf8_lossy(&std::fs::read(&p).expect("fixture")).into_owned();
        for line in text.lines().filter(|l| l.contains(r#""type":"message""#)) {
            if let Ok(r) = serde_json::from_str::<Record<'_>>(line) {
                out.push(r.message.get().to_owned());
            }
        }
    }
    out
}

/// `obj` written by hand with `key` twice (the second time `again`).
fn repeated(obj: &Map<String, Value>, key: &str, again: &Value) -> String {
    let mut text = String::from("{");
    for (k, x) in obj {
        text.push_str(&format!("{}:{},", json!(k), x));
    }
    text.push_str(&format!("{}:{}}}", json!(key), again));
    text
}

#[test]
fn parse_json_reads_what_the_derived_reading_reads() {
    let odd = [
        Value::Null,
        json!(-1),
        json!(1.5),
        json!("s"),
        json!(true),
        json!([]),
        json!({}),
        json!([{"type": "text"}]),
        json!([{"type": "text", "text": 1}]),
    ];
    let messages = fixture_messages();
    assert!(messages.len() > 1000, "{} fixture messages", messages.len());
    let (mut checked, mut read) = (0usize, 0usize);
    let mut run = |text: &str| {
        checked += 1;
        read += usize::from(check(text));
    };
    for (i, text) in messages.iter().enumerate() {
        run(text);
        // Odd shapes of the first messages of each kind (the generated session's
        // messages, most of the corpus, repeat a few shapes).
        if i >= 400 {
            continue;
        }
        let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) else {
            continue;
        };
        run(&serde_json::to_string_pretty(&m).expect("a value"));
        for role in [
            "user",
            "assistant",
            "toolResult",
            "custom",
            "bashExecution",
            "hook",
            "",
        ] {
            let mut v = m.clone();
            v.insert("role".to_owned(), json!(role));
            run(&Value::Object(v).to_string());
        }
        // An unmodelled key first or last.
        let mut first = Map::new();
        first.insert("zz".to_owned(), json!({"a": [1, 2.5]}));
        first.extend(m.clone());
        run(&Value::Object(first).to_string());
        let mut last = m.clone();
        last.insert("zz".to_owned(), Value::Null);
        run(&Value::Object(last).to_string());
        for k in m.keys() {
            let mut v = m.clone();
            v.shift_remove(k);
            run(&Value::Object(v).to_string());
            for x in &odd {
                let mut v = m.clone();
                v.insert(k.clone(), x.clone());
                run(&Value::Object(v).to_string());
            }
            // The key moved last (the role last: no direct reading).
            let mut v = m.clone();
            let x = v.shift_remove(k).expect("present");
            v.insert(k.clone(), x);
            run(&Value::Object(v).to_string());
            for again in [m[k].clone(), json!("other")] {
                run(&repeated(&m, k, &again));
            }
        }
    }
    // Not objects, a huge string, deep nesting inside an unmodelled key, escapes.
    for text in [
        "null",
        "1",
        r#""user""#,
        "[]",
        "{}",
        r#"{"role":1}"#,
        r#"{"r\u006fle":"us\u0065r","content":"x","timestamp":1}"#,
        r#"{"role":"user","content":"x","timestamp":1} "#,
        r#"{"role":"user","content":"x","timestamp":1}x"#,
        r#"{"role":"user","content":"x","timestamp":1"#,
    ] {
        run(text);
    }
    let huge = format!(
        r#"{{"role":"user","content":{},"timestamp":1}}"#,
        json!("é".repeat(1 << 20))
    );
    run(&huge);
    for depth in [10, 120, 200] {
        let deep = format!(
            r#"{{"role":"user","content":"x","timestamp":1,"zz":{}1{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        run(&deep);
    }
    assert!(checked > 20_000, "{checked} shapes checked");
    // Any object reads as a message (an unknown shape is kept whole): the refusals
    // compared are the texts that are no object or no JSON.
    assert!(
        read < checked && read > checked * 9 / 10,
        "{read} of {checked} read"
    );
}
