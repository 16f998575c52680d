//! The reading commands: `list`, `show`, `tree`, `context`. Only `list` writes, and
//! only derived data: it refreshes the sessions directory's listing catalog when the
//! directory can be written (else it lists read-only). The others open indexes
//! without saving their sidecars.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};
use session_context::ContextOptions;
use session_journal::vfs::{StdVfs, Vfs as _};
use session_types::EntryType;

use session_index::SessionInfo;

use crate::cli::{ContextArgs, ListArgs, SessionJson};
use crate::location::{Location, SessionView, session_id_of};
use crate::out::Out;
use crate::render;

/// Journals that could not be listed, and why.
type Skipped = Vec<(PathBuf, String)>;

/// Lists sessions (newest activity first; ties keep file-name order) through the
/// store's listing catalog: a fresh catalog answers without opening a journal;
/// stale records are recomputed and the catalog rewritten (atomically, `0600`) —
/// or, where the directory cannot be written, computed in memory with nothing
/// written.
fn listed(store: &Location, _out: &Out) -> Result<(Vec<SessionInfo>, Skipped)> {
    let dir = store.sessions_dir();
    if !dir.is_dir() {
        return Ok((Vec::new(), Vec::new()));
    }
    let (infos, report) = session_index::list_sessions(dir, &session_index::ListOptions::default())
        .map_err(|e| anyhow::anyhow!("listing {}: {e}", dir.display()))?;
    let rows = infos
        .into_iter()
        .filter(|info| info.summary.has_header)
        .collect();
    Ok((rows, report.skipped))
}

/// An agent status as one line: its `summary`, and its `taskState` in brackets.
fn status_line(status: &Value) -> String {
    let summary = status.get("summary").and_then(Value::as_str).unwrap_or("");
    match status.get("taskState").and_then(Value::as_str) {
        Some(t) => format!("[{t}] {}", render::preview(summary, 60)),
        None => render::preview(summary, 60),
    }
}

/// `bcs list`.
pub(crate) fn list(store: &Location, args: &ListArgs, out: &mut Out) -> Result<()> {
    let filter: Option<PathBuf> = if args.all {
        None
    } else {
        Some(match &args.cwd {
            Some(c) => c.clone(),
            None => std::env::current_dir()?,
        })
    };
    let (rows, skipped) = listed(store, out)?;
    let rows: Vec<SessionInfo> = rows
        .into_iter()
        .filter(|r| {
            filter
                .as_deref()
                .is_none_or(|f| Path::new(&r.summary.cwd) == f)
        })
        .collect();
    for (path, why) in &skipped {
        out.warn(&format!("skipping {}: {why}", path.display()));
    }
    if args.json {
        // Each `SessionInfo` serializes as the reference's shape, written without
        // building a JSON value per session.
        out.json_sessions(&rows)?;
        // The process ends here: freeing thousands of summaries one by one would
        // cost a tenth of a large listing, for memory the exit returns anyway.
        std::mem::forget(rows);
        return Ok(());
    }
    list_human(&rows, out)
}

fn list_human(rows: &[SessionInfo], out: &mut Out) -> Result<()> {
    if rows.is_empty() {
        return out.line("no sessions");
    }
    for info in rows {
        let json = info.to_json();
        let r = Listed {
            json,
            state: info.session_state().map(str::to_owned),
            status: info.agent_status().map(status_line),
        };
        let s = |k: &str| {
            r.json
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        // The id `bcs` commands take: the journal's name, which is also the session
        // header record's id (the `--json` listing's `id`): an import whose header id
        // was taken or unsafe as a file name writes the id it assigns into the header.
        let id = r
            .json
            .get("path")
            .and_then(Value::as_str)
            .map_or_else(String::new, |p| session_id_of(std::path::Path::new(p)));
        let title = match r.json.get("name").and_then(Value::as_str) {
            Some(n) => format!("{n:?}"),
            None => render::preview(&s("firstMessage"), 50),
        };
        let modified = r
            .json
            .get("modified")
            .and_then(Value::as_str)
            .unwrap_or("-");
        // State and status only where a session has them, so a listing without
        // them reads as before.
        let mut extra = String::new();
        if let Some(state) = &r.state {
            extra.push_str(&format!("  ({state})"));
        }
        if let Some(status) = &r.status {
            extra.push_str(&format!("  status: {status}"));
        }
        out.line(&format!(
            "{modified}  {id}  {:>3} msgs  {}  {title}{extra}",
            r.json
                .get("messageCount")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            s("cwd"),
        ))?;
    }
    Ok(())
}

/// One row of the human listing: the reference's `SessionInfo` JSON, and what the
/// human listing adds: the lifecycle state and the agent status line.
struct Listed {
    json: Value,
    state: Option<String>,
    status: Option<String>,
}

/// `bcs list --all` rendering for the demo.
pub(crate) fn list_all(store: &Location, out: &mut Out) -> Result<()> {
    let (rows, _) = listed(store, out)?;
    list_human(&rows, out)
}

/// `bcs show`.
pub(crate) fn show(store: &Location, args: &SessionJson, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    let view = SessionView::open(&path)?;
    let idx = &view.index;
    let c = idx.counts();
    let leaf = idx
        .leaf()
        .and_then(|i| idx.info(i))
        .and_then(|i| i.id.map(str::to_owned));
    let bytes = StdVfs.stat(&path).ok().flatten().map_or(0, |s| s.len);
    let (status, detail) = view.index_status();
    let header = view.header();
    let journal_tail = match view.report.tail_stop {
        Some(off) => json!({"status": "torn-or-damaged", "offset": off.0}),
        None => json!({"status": "clean"}),
    };
    let state = idx.lifecycle_state().map(str::to_owned);
    // Where an imported session came from, and the id its source's header held when
    // the import had to give it another one (taken, or unsafe as a file name).
    let imported = session_import::import_source(&path)
        .ok()
        .flatten()
        .map(|s| {
            json!({
                "source": s.path,
                "blake3": s.blake3,
                "sourceVersion": s.source_version,
                "originalId": s.original_id,
            })
        });
    let v = json!({
        "id": session_id_of(&path),
        "path": path.to_string_lossy(),
        "header": header,
        "name": idx.name(),
        "state": state,
        "counts": {
            "entries": c.entries,
            "messages": c.messages,
            "labels": c.label_entries,
            "unparsable": c.unparsable,
            "withoutId": c.without_id,
            "duplicateIds": c.duplicate_ids,
        },
        "leaf": leaf,
        "bytes": bytes,
        "index": {"status": status, "detail": detail},
        "journal": journal_tail,
        "imported": imported,
    });
    if args.json {
        return out.json(&v);
    }
    let h = header.unwrap_or(Value::Null);
    let hs = |k: &str| {
        h.get(k).map_or("-".to_owned(), |v| {
            v.as_str().map_or_else(
                || session_types::js::stringify::to_string(v).unwrap_or_default(),
                str::to_owned,
            )
        })
    };
    out.line(&format!("session  {}", session_id_of(&path)))?;
    out.line(&format!("path     {}", path.display()))?;
    out.line(&format!("cwd      {}", hs("cwd")))?;
    out.line(&format!("created  {}", hs("timestamp")))?;
    out.line(&format!("version  {}", hs("version")))?;
    out.line(&format!("name     {}", idx.name().unwrap_or("-")))?;
    out.line(&format!("state    {}", state.as_deref().unwrap_or("-")))?;
    out.line(&format!(
        "entries  {} ({} messages, {} labels, {} unparsable, {} without id, {} duplicate ids)",
        c.entries, c.messages, c.label_entries, c.unparsable, c.without_id, c.duplicate_ids
    ))?;
    out.line(&format!("leaf     {}", leaf.as_deref().unwrap_or("-")))?;
    if let Some(i) = &imported {
        let field = |k: &str| i.get(k).and_then(Value::as_str).unwrap_or("-");
        out.line(&format!(
            "source   {} (v{})",
            field("source"),
            i["sourceVersion"]
        ))?;
        if let Some(o) = i.get("originalId").and_then(Value::as_str) {
            out.line(&format!("orig id  {o}"))?;
        }
    }
    out.line(&format!("bytes    {bytes}"))?;
    out.line(&format!(
        "index    {status}{}",
        detail.map(|d| format!(" ({d})")).unwrap_or_default()
    ))?;
    if let Some(off) = view.report.tail_stop {
        out.line(&format!(
            "journal  invalid frame at offset {off} (run `bcs verify`)"
        ))?;
    }
    Ok(())
}

/// The tree JSON: `{"roots": [ids], "nodes": [{id, parentId, type, children, depth, label?}]}`
/// in pre-order, the shape of the reference oracle's `tree`.
pub fn tree_json(view: &SessionView) -> Value {
    let idx = &view.index;
    let tree = idx.tree();
    // Fields as the reference's `getTree()` nodes hold them: any JSON value, and an
    // absent one (`undefined`) left out (`null` in the roots array, as
    // `JSON.stringify` writes it).
    let roots: Vec<Value> = tree
        .roots
        .iter()
        .map(|r| idx.id_value(*r).unwrap_or(Value::Null))
        .collect();
    let mut nodes = Vec::new();
    for n in tree.preorder() {
        let mut m = Map::new();
        if let Some(id) = idx.id_value(n.entry) {
            m.insert("id".into(), id);
        }
        if let Some(parent) = idx.parent_value(n.entry) {
            m.insert("parentId".into(), parent);
        }
        if let Some(t) = idx.type_value(n.entry) {
            m.insert("type".into(), t);
        }
        m.insert("children".into(), n.children.into());
        m.insert("depth".into(), n.depth.into());
        if let Some(l) = idx.label_of(n.entry) {
            m.insert("label".into(), l);
        }
        nodes.push(Value::Object(m));
    }
    json!({"roots": roots, "nodes": nodes})
}

/// `bcs tree`.
pub(crate) fn tree(store: &Location, args: &SessionJson, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    let view = SessionView::open(&path)?;
    if args.json {
        return out.json(&tree_json(&view));
    }
    tree_human(&view, out)
}

/// The human tree: one line per node, indented by depth, the leaf marked.
pub(crate) fn tree_human(view: &SessionView, out: &mut Out) -> Result<()> {
    let idx = &view.index;
    let tree = idx.tree();
    let leaf = idx.leaf();
    let nodes = tree.preorder();
    if nodes.is_empty() {
        return out.line("(no entries)");
    }
    for n in nodes {
        let Some(info) = idx.info(n.entry) else {
            continue;
        };
        let id = info.id.unwrap_or("");
        let kind = match info.role {
            Some(role) if info.known_type() == Some(EntryType::Message) => role.to_owned(),
            _ => info.entry_type.to_owned(),
        };
        // A label of another JSON type is shown as its JSON text.
        let label = idx.label_value(id).map(|l| match l {
            Value::String(s) => s,
            other => other.to_string(),
        });
        out.line(&render::tree_line(
            n.depth,
            id,
            &kind,
            label.as_deref(),
            Some(n.entry) == leaf,
        ))?;
    }
    let r = &tree.report;
    if !r.cycles.is_empty() {
        out.line(&format!("({} parent cycles not shown)", r.cycles.len()))?;
    }
    Ok(())
}

/// Builds the reference context JSON of a session at `leaf` (default: its leaf).
pub fn context_json(view: &SessionView, leaf: Option<&str>) -> Result<Value> {
    Ok(context_of(view, leaf)?.to_reference_json())
}

/// The context of a session at `leaf` (default: its leaf), as `bcs context` shows it.
fn context_of(
    view: &SessionView,
    leaf: Option<&str>,
) -> Result<session_context::SessionContext<'static>> {
    if let Some(l) = leaf
        && view.index.find(l).is_none()
    {
        bail!("{}: no entry with id {l:?}", view.path.display());
    }
    // Through the index, as a resume does: only the entries the context holds are
    // read (and verified); no lock, nothing written. The whole context is printed,
    // so the read limits are lifted.
    let limits = session_manager::ReadLimits {
        max_source_entries: u64::MAX,
        max_source_bytes: u64::MAX,
    };
    session_manager::indexed_context(
        &view.path,
        &view.index,
        &view.reader,
        leaf,
        limits,
        &ContextOptions::reference(),
    )
    .map_err(|e| {
        let text = e.to_string();
        let shown = view.path.display().to_string();
        if text.starts_with(&shown) {
            anyhow::anyhow!(text)
        } else {
            anyhow::anyhow!("{shown}: {text}")
        }
    })
}

/// `bcs context`.
pub(crate) fn context(store: &Location, args: &ContextArgs, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    let view = SessionView::open(&path)?;
    if let Some(off) = view.report.tail_stop {
        out.warn(&format!(
            "{}: invalid frame at offset {off}: showing the context of the intact prefix",
            path.display()
        ));
    }
    let ctx = context_of(&view, args.leaf.as_deref())?;
    if args.json {
        // Written as it is serialized: the same bytes as `context_json`'s value
        // printed by `Out::json`, without building that value.
        out.json_context(&ctx)?;
        // The process ends here: freeing every message and the index one by one
        // would cost more than a tenth of the printing, for memory the exit returns.
        std::mem::forget(ctx);
        std::mem::forget(view);
        return Ok(());
    }
    out.text(&render::context(&ctx.to_reference_json()))
}
