//! `cargo xtask tidy`: no entry-type string literal outside `session-types`.
//!
//! Entry types are named through `session_types::EntryType` (and the header's `type`
//! through `SessionHeader::TYPE`), so that adding a type is one row in
//! `session-types` and compile errors wherever a crate must decide on it (the checklist
//! is in ARCHITECTURE.md). A string literal such as `"label"` elsewhere would be a
//! second spelling the compiler cannot follow.
//!
//! Scans `crates/*/src/**/*.rs` except `crates/session-types`, skipping comments (doc
//! comments and their examples included) and raw strings (JSON examples). A literal
//! whose text is an entry type (or `session`) is allowed where it cannot be a type:
//! - as a JSON key: indexing (`v["message"]`), a map access (`.get("message")`,
//!   `.get_mut`, `.insert`, `.remove`, `.contains_key`), or a `json!` key
//!   (`"session": …`);
//! - on a line that ends with the comment `// tidy: not an entry type (<reason>)`, or
//!   the line below that comment standing on a line of its own. Some names are also other things: `custom` is a message role,
//!   `message` and `label` are field names; the marker says which. A marker that
//!   covers no literal is reported, so allowances do not outlive their code.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use session_types::{EntryType, SessionHeader};

/// The marker that allows an entry-type literal on its line or the next.
const MARKER: &str = "tidy: not an entry type (";

/// The crate that owns the vocabulary (its literals are the definition).
const OWNER: &str = "session-types";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if !args.is_empty() {
        bail!("`cargo xtask tidy` takes no arguments");
    }
    let (files, problems) = check_workspace(&crate::workspace_root())?;
    if problems.is_empty() {
        println!("tidy: ok ({files} files checked)");
        return Ok(());
    }
    for p in &problems {
        eprintln!("tidy: {p}");
    }
    bail!("{} tidy problem(s)", problems.len())
}

/// The number of files checked and every problem found under `root`'s crates.
pub(crate) fn check_workspace(root: &Path) -> Result<(usize, Vec<String>)> {
    let mut files = Vec::new();
    let crates = root.join("crates");
    for entry in
        std::fs::read_dir(&crates).with_context(|| format!("reading {}", crates.display()))?
    {
        let dir = entry?.path();
        if dir.file_name().is_some_and(|n| n == OWNER) {
            continue;
        }
        rust_files(&dir.join("src"), &mut files)?;
    }
    files.sort();
    let mut problems = Vec::new();
    for f in &files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let shown = f.strip_prefix(root).unwrap_or(f).display().to_string();
        problems.extend(check(&text).into_iter().map(|p| format!("{shown}:{p}")));
    }
    Ok((files.len(), problems))
}

/// Every `.rs` file under `dir` (none if it does not exist), depth-first.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    Ok(())
}

/// The names the check looks for: every entry type and the header's type.
fn vocabulary() -> Vec<&'static str> {
    let mut v: Vec<&str> = EntryType::ALL.iter().map(|t| t.as_str()).collect();
    v.push(SessionHeader::TYPE);
    v
}

/// The problems in one Rust source text, as `line:column: message`.
pub(crate) fn check(text: &str) -> Vec<String> {
    let vocabulary = vocabulary();
    let lexed = lex(text);
    let mut marker_used = vec![false; lexed.markers.len()];
    let mut problems = Vec::new();
    for lit in &lexed.strings {
        let Some(value) = text.get(lit.start + 1..lit.end.saturating_sub(1)) else {
            continue;
        };
        if !vocabulary.contains(&value) || is_key(text, lit.start, lit.end) {
            continue;
        }
        let line = line_of(text, lit.start);
        let covering = lexed
            .markers
            .iter()
            .position(|m| m.line == line || (m.own_line && m.line + 1 == line));
        match covering {
            Some(i) => marker_used[i] = true,
            None => {
                let column = lit.start - text[..lit.start].rfind('\n').map_or(0, |n| n + 1) + 1;
                let instead = if value == SessionHeader::TYPE {
                    "session_types::SessionHeader::TYPE"
                } else {
                    "session_types::EntryType"
                };
                problems.push(format!(
                    "{line}:{column}: entry-type string literal \"{value}\": name it through {instead} \
                     (or mark the line `// {MARKER}<reason>)` if it is no entry type)"
                ));
            }
        }
    }
    for (used, m) in marker_used.iter().zip(&lexed.markers) {
        let line = m.line;
        if !m.reasoned {
            problems.push(format!(
                "{line}: a tidy marker needs a reason: `// {MARKER}<reason>)`"
            ));
        } else if !used {
            problems.push(format!(
                "{line}: tidy marker covers no entry-type literal on its line or the next; remove it"
            ));
        }
    }
    problems.sort_by_key(|p| p.split(':').next().and_then(|l| l.parse::<usize>().ok()));
    problems
}

/// Whether the literal at `start..end` is used as a JSON key (see the module doc).
fn is_key(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].trim_end();
    let after = text[end..].trim_start();
    if after.starts_with(':') && !after.starts_with("::") {
        return true;
    }
    if let Some(b) = before.strip_suffix('[') {
        // Indexing follows a value; a `[` after anything else opens an array.
        return b.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ')' || c == ']');
    }
    [
        ".get(",
        ".get_mut(",
        ".insert(",
        ".remove(",
        ".contains_key(",
    ]
    .iter()
    .any(|call| before.ends_with(call))
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].bytes().filter(|&b| b == b'\n').count() + 1
}

/// A string literal (quotes included) as byte offsets.
struct Lit {
    start: usize,
    end: usize,
}

/// A tidy marker.
struct Marker {
    /// Its line.
    line: usize,
    /// Whether it gives a reason.
    reasoned: bool,
    /// Whether its comment stands on a line of its own, and so covers the next line
    /// (a trailing marker covers only its own).
    own_line: bool,
}

/// What the check needs from a source text.
#[derive(Default)]
struct Lexed {
    /// Non-raw string and byte-string literals.
    strings: Vec<Lit>,
    /// Tidy markers in comments.
    markers: Vec<Marker>,
}

/// A small Rust lexer: enough to tell comments, raw strings, strings, and char
/// literals from lifetimes. Malformed input ends the scan early, it never panics.
fn lex(text: &str) -> Lexed {
    let b = text.as_bytes();
    let mut out = Lexed::default();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(b.len(), |n| i + n);
                note_marker(text, i, &text[i..end], &mut out);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                let start = i;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                note_marker(text, start, &text[start..i.min(b.len())], &mut out);
            }
            b'r' | b'b' | b'c' if raw_string_start(b, i).is_some() => {
                let (hashes, quote) = raw_string_start(b, i).unwrap_or((0, i));
                let close: String = std::iter::once('"')
                    .chain(std::iter::repeat_n('#', hashes))
                    .collect();
                i = text[quote + 1..]
                    .find(&close)
                    .map_or(b.len(), |n| quote + 1 + n + close.len());
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                // A byte string's `b` prefix is part of an identifier-like run; the
                // literal's text is what lies between the quotes either way.
                out.strings.push(Lit { start, end: i });
            }
            b'\'' => i = skip_char_or_lifetime(text, i),
            c if is_ident(c) => {
                // Identifiers are skipped whole, so only a word's first letter can
                // start a raw string (`br"…"`, checked above); a byte string's `b` is
                // skipped here and its quote read next.
                while i < b.len() && is_ident(b[i]) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// At `i`, a raw string (`r"`, `r#"`, `br#"`, `cr"`…): the number of `#` and the
/// offset of its opening quote.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if matches!(b.get(j), Some(b'b' | b'c')) {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    (b.get(j) == Some(&b'"')).then_some((hashes, j))
}

/// Past a char literal (`'x'`, `'\n'`, `'\u{1F600}'`) or a lifetime/label (`'a`).
fn skip_char_or_lifetime(text: &str, i: usize) -> usize {
    let rest = &text[i + 1..];
    if rest.starts_with('\\') {
        // Past the backslash and the (ASCII) escaped character, to the closing quote.
        return rest
            .get(2..)
            .and_then(|r| r.find('\''))
            .map_or(text.len(), |n| i + 1 + 2 + n + 1);
    }
    let mut chars = rest.char_indices();
    match (chars.next(), chars.next()) {
        (Some(_), Some((n, '\''))) => i + 1 + n + 1,
        _ => i + 1,
    }
}

/// Records a tidy marker found in the comment `comment` starting at `at`.
fn note_marker(text: &str, at: usize, comment: &str, out: &mut Lexed) {
    if let Some(pos) = comment.find(MARKER) {
        let reason = comment[pos + MARKER.len()..].trim_end();
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        out.markers.push(Marker {
            line: line_of(text, at + pos),
            reasoned: reason.len() > 1 && reason.ends_with(')'),
            own_line: text[line_start..at].trim().is_empty(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(problems: &[String]) -> Vec<usize> {
        problems
            .iter()
            .map(|p| {
                p.split(':')
                    .next()
                    .and_then(|l| l.parse().ok())
                    .unwrap_or(0)
            })
            .collect()
    }

    #[test]
    fn entry_type_literals_are_found() {
        let src = r#"fn f(t: &str) -> bool {
    t == "label"
        || matches!(t, "custom" | "git_state")
        || ["message", "compaction"].contains(&t)
        || t == "session"
}
"#;
        let p = check(src);
        assert_eq!(lines(&p), [2, 3, 3, 4, 4, 5], "{p:#?}");
        assert!(
            p[0].starts_with("2:10: entry-type string literal \"label\""),
            "{}",
            p[0]
        );
        assert!(p[5].contains("SessionHeader::TYPE"), "{}", p[5]);
    }

    #[test]
    fn comments_raw_strings_and_other_words_are_not_literals() {
        let src = r###"//! A `"label"` entry; `{"type":"message"}`.
/// ```
/// let t = "label";
/// ```
/* "compaction" /* nested "custom" */ "git_state" */
const J: &str = r#"{"type":"message","label":"x"}"#;
const B: &[u8] = br"session";
const S: &str = "session_infos";
const C: char = '"';
fn g<'a>(x: &'a str) -> &'a str { let _q = '\''; let _r = b'"'; x }
"###;
        assert_eq!(check(src), Vec::<String>::new());
    }

    #[test]
    fn json_keys_are_field_names_not_types() {
        let src = r#"fn h(v: &Value, m: &mut Map) {
    let _ = v["message"]["role"];
    let _ = m.get("message");
    let _ = m.get_mut("label");
    m.insert("label".into(), Value::Null);
    let _ = json!({"session": 1, "message": "x"});
    let _ = f()["session"];
}
"#;
        assert_eq!(check(src), Vec::<String>::new());
    }

    #[test]
    fn a_marker_allows_its_line_or_the_line_below_it() {
        let src = r#"fn r() {
    // tidy: not an entry type (the message role)
    let a = role("custom");
    let b = "custom"; // tidy: not an entry type (a role again)
    let c = "custom";
}
"#;
        let p = check(src);
        assert_eq!(lines(&p), [5], "{p:#?}");
    }

    #[test]
    fn markers_need_a_reason_and_a_literal() {
        let src = "// tidy: not an entry type ()\nlet a = \"custom\";\n\n// tidy: not an entry type (stale)\nlet b = 1;\n";
        let p = check(src);
        assert_eq!(lines(&p), [1, 4], "{p:#?}");
        assert!(p[0].contains("needs a reason"), "{}", p[0]);
        assert!(p[1].contains("covers no entry-type literal"), "{}", p[1]);
    }

    #[test]
    fn the_real_workspace_is_tidy() {
        let (files, problems) = check_workspace(&crate::workspace_root()).unwrap();
        assert!(files > 50, "{files} files");
        assert_eq!(problems, Vec::<String>::new());
    }
}
