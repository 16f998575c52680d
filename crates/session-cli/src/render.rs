//! Human renderings: one concise, stable line per item. JSON renderings live next to
//! the commands that print them (their shapes are documented in the crate README).

use serde_json::Value;

/// At most `max` characters of the first line of `text`, with `…` when cut.
pub(crate) fn preview(text: &str, max: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if line.chars().count() > max || text.trim().lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The text a message shows in a one-line summary.
pub(crate) fn message_text(m: &Value) -> String {
    let role = m.get("role").and_then(Value::as_str).unwrap_or("");
    match role {
        "compactionSummary" | "branchSummary" => {
            return m
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
        }
        "bashExecution" => {
            return format!(
                "$ {}",
                m.get("command").and_then(Value::as_str).unwrap_or("")
            );
        }
        _ => {}
    }
    content_text(m.get("content").unwrap_or(&Value::Null))
}

/// Text of a `content` value: a string, or blocks (text kept, others named).
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let mut parts = Vec::new();
            for b in blocks {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => {
                        parts.push(
                            b.get("text")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                        );
                    }
                    Some("toolCall") => parts.push(format!(
                        "[tool call {}]",
                        b.get("name").and_then(Value::as_str).unwrap_or("?")
                    )),
                    Some(other) => parts.push(format!("[{other}]")),
                    None => parts.push("[?]".to_owned()),
                }
            }
            parts.join(" ")
        }
        _ => String::new(),
    }
}

/// The human rendering of a context JSON (`{messages, thinkingLevel, model}`).
pub(crate) fn context(ctx: &Value) -> String {
    let mut out = String::new();
    // Fields of odd entries can be any JSON value, or absent: shown as such.
    let shown = |v: Option<&Value>, absent: &str| match v {
        None => absent.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let model = match ctx.get("model") {
        Some(Value::Object(m)) => format!(
            "{}/{}",
            shown(m.get("provider"), "?"),
            shown(m.get("modelId"), "?")
        ),
        _ => "none".to_owned(),
    };
    let msgs = ctx
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    out.push_str(&format!(
        "model {model}  thinking {}  {} messages\n",
        shown(ctx.get("thinkingLevel"), "?"),
        msgs.len()
    ));
    for (i, m) in msgs.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let role = match (role, m.get("customType").and_then(Value::as_str)) {
            ("custom", Some(t)) => format!("custom:{t}"),
            ("toolResult", _) => format!(
                "toolResult:{}",
                m.get("toolName").and_then(Value::as_str).unwrap_or("?")
            ),
            _ => role.to_owned(),
        };
        out.push_str(&format!(
            "{:>4} {:<18} {}\n",
            i + 1,
            role,
            preview(&message_text(m), 72)
        ));
    }
    out
}

/// The deepest indentation shown; deeper nodes print their depth instead.
const MAX_INDENT: u32 = 24;

/// One tree node as a line: indentation, id, type (role for messages), label, leaf mark.
pub(crate) fn tree_line(
    depth: u32,
    id: &str,
    kind: &str,
    label: Option<&str>,
    leaf: bool,
) -> String {
    let mut out = String::new();
    if depth > MAX_INDENT {
        out.push_str(&"  ".repeat(MAX_INDENT as usize));
        out.push_str(&format!("[{depth}] "));
    } else {
        out.push_str(&"  ".repeat(depth as usize));
    }
    out.push_str(id);
    out.push(' ');
    out.push_str(kind);
    if let Some(l) = label {
        out.push_str(&format!(" [{l}]"));
    }
    if leaf {
        out.push_str("  <- leaf");
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// Issue 14: settings read from odd entries can be any JSON value or absent.
    #[test]
    fn odd_settings_are_shown_as_they_are() {
        let first = |v| super::context(&v).lines().next().unwrap_or("").to_owned();
        assert_eq!(
            first(json!({"messages": [], "thinkingLevel": 3, "model": {"provider": 42}})),
            "model 42/?  thinking 3  0 messages"
        );
        assert_eq!(
            first(json!({"messages": [], "model": {}})),
            "model ?/?  thinking ?  0 messages"
        );
        assert_eq!(
            first(json!({"messages": [], "thinkingLevel": "high", "model": null})),
            "model none  thinking high  0 messages"
        );
    }
}
