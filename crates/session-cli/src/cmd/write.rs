//! The writing commands: `new`, `append`, `rm`, through the store's running owner
//! when one serves its sessions directory (`cmd::owner`), else through the manager.

use std::io::{BufRead, Read};

use anyhow::{Result, anyhow, bail};
use serde_json::Value;
use session_journal::Durability;
use session_manager::NewSessionOptions;
use session_types::{AgentMessage, Entry};

use crate::cli::{AppendArgs, NewArgs, SessionArg};
use crate::cmd::owner::Owner;
use crate::location::{Location, session_id_of};
use crate::out::{Out, one_line};

/// The longest stdin line `append` accepts (the journal's default payload bound).
pub(crate) const MAX_LINE: usize = 64 << 20;

fn manager(store: &Location) -> session_manager::Store {
    session_manager::Store::new(store.layout().clone())
}

/// `bcs new`: through the owner when one serves the store (its store followers see
/// the session created), else through the manager.
pub(crate) fn new(store: &Location, args: &NewArgs, out: &mut Out) -> Result<()> {
    let cwd = match &args.cwd {
        Some(c) => std::path::absolute(c)?,
        None => std::env::current_dir()?,
    };
    if let Some(id) = &args.id {
        // Refused alike with or without an owner.
        session_manager::SafeSessionId::new(id)?;
    }
    if let Some(owner) = Owner::connect(store)?
        && owner.serves(store)?
    {
        let id = owner.create(&cwd.to_string_lossy(), args.id.clone())?;
        return out.line(&id);
    }
    let mut options = NewSessionOptions::default();
    options.id = args.id.clone();
    let session = manager(store)
        .create_with(&cwd.to_string_lossy(), options)
        .map_err(|e| anyhow!(e))?;
    let id = session.session_id().to_owned();
    session.close().map_err(|e| anyhow!(e))?;
    out.line(&id)
}

/// One stdin line parsed: an entry (has `type`) or a message (has `role`).
enum Line {
    Entry(Box<Entry>),
    Message(Box<AgentMessage>),
}

fn parse_line(text: &str) -> Result<Line, String> {
    // A lone surrogate escape (a JavaScript string cut in the middle of an emoji) is
    // read as U+FFFD, as the owner reads a request holding one: stored, not refused.
    let (text, _) = session_types::json::replace_lone_surrogates(text);
    let text = &*text;
    let v: Value = serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let Value::Object(m) = &v else {
        return Err("expected a JSON object".to_owned());
    };
    if m.contains_key("type") {
        return Entry::parse(text)
            .map(|e| Line::Entry(Box::new(e)))
            .map_err(|e| format!("invalid entry: {e}"));
    }
    if let Some(role) = m.get("role") {
        if !role.is_string() {
            return Err("`role` must be a string".to_owned());
        }
        return serde_json::from_value::<AgentMessage>(v)
            .map(|m| Line::Message(Box::new(m)))
            .map_err(|e| format!("invalid message: {e}"));
    }
    Err("expected an entry (with `type`) or a message (with `role`)".to_owned())
}

/// Reads one line (without its `\n`) of at most [`MAX_LINE`] bytes; `None` at EOF.
fn read_line(input: &mut dyn BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    buf.clear();
    let n = input.take(MAX_LINE as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        return Ok(Some(true));
    }
    Ok(Some(buf.len() <= MAX_LINE))
}

/// `bcs append`: appends each stdin line and prints its id once acknowledged;
/// through the store's owner when one runs (`cmd::owner`), else directly.
pub(crate) fn append(store: &Location, args: &AppendArgs, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    if let Some(owner) = Owner::connect(store)? {
        let sid = owner.open(store, &path)?;
        let result = append_lines(
            &mut |line| {
                match line {
                    Line::Entry(e) => owner.append_entry(&sid, *e, args.buffered),
                    Line::Message(m) => owner.append_message(&sid, *m, args.buffered),
                }
                .map_err(|e| e.to_string())
            },
            &mut input,
            out,
            &path,
        );
        let closed = owner.close(&sid);
        result?;
        return closed;
    }
    let mut session = manager(store).open(&path).map_err(|e| anyhow!(e))?;
    if args.buffered {
        session.set_durability(Durability::Buffered);
    }
    let result = append_lines(
        &mut |line| {
            match line {
                Line::Entry(e) => session.append_entry(*e),
                Line::Message(m) => session.append_message(*m),
            }
            .map(|id| id.as_str().to_owned())
            .map_err(|e| e.to_string())
        },
        &mut input,
        out,
        &path,
    );
    let closed = session.close().map_err(|e| anyhow!(e));
    result?;
    closed
}

/// Appends each line with `append` (which answers the new entry's id).
fn append_lines(
    append: &mut dyn FnMut(Line) -> Result<String, String>,
    input: &mut dyn BufRead,
    out: &mut Out,
    path: &std::path::Path,
) -> Result<()> {
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let at = |n: u64| format!("{}: stdin line {n}", path.display());
    while let Some(complete) =
        read_line(input, &mut buf).map_err(|e| anyhow!("reading stdin: {e}"))?
    {
        line_no += 1;
        if !complete {
            bail!("{}: longer than {MAX_LINE} bytes", at(line_no));
        }
        let Ok(text) = std::str::from_utf8(&buf) else {
            bail!("{}: not valid UTF-8", at(line_no));
        };
        let text = text.trim_end_matches('\r');
        if text.trim().is_empty() {
            continue;
        }
        let parsed = parse_line(text).map_err(|e| anyhow!("{}: {}", at(line_no), one_line(&e)))?;
        let id = append(parsed).map_err(|e| anyhow!("{}: {e}", at(line_no)))?;
        out.line(&id)?;
        out.flush()?;
    }
    Ok(())
}

/// Whether `path` is a journal of the sessions directory (which an owner serving it
/// names by its id).
fn in_sessions_dir(store: &Location, path: &std::path::Path) -> bool {
    path.parent()
        .is_some_and(|dir| crate::cmd::owner::same_dir(dir, store.sessions_dir()))
}

/// `bcs rm`: a session of the sessions directory through the owner when one serves
/// it (its store followers see it deleted), else through the manager.
pub(crate) fn rm(store: &Location, args: &SessionArg, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    let id = session_id_of(&path);
    let removed = match Owner::connect(store)? {
        Some(owner) if in_sessions_dir(store, &path) && owner.serves(store)? => {
            owner.delete(&id)?.len()
        }
        _ => manager(store)
            .delete(&path)
            .map_err(|e| anyhow!(e))?
            .removed
            .len(),
    };
    out.line(&format!("removed {id} ({removed} files)"))
}
