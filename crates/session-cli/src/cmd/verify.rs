//! `bcs verify`: the journal's frames and end (as a writer's open would classify them)
//! and the index sidecar; read-only unless `--repair`.

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use session_index::{Index, IndexStatus, OpenIndexOptions};
use session_journal::{OpenError, OpenOptions, TailState, VerifyOptions, Writer, verify};

use crate::cli::VerifyArgs;
use crate::out::{Out, Progress, one_line};
use crate::store::{Store, index_status, read_only_index, session_id_of};

/// The verdict on one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Journal and index are sound and current.
    Clean,
    /// The journal ends in a torn (never acknowledged) frame.
    TornTail,
    /// The index sidecar is missing, behind or invalid.
    StaleIndex,
    /// Durable data is damaged, or the file is not a readable journal.
    Corrupt,
}

impl Status {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::TornTail => "torn-tail",
            Status::StaleIndex => "stale-index",
            Status::Corrupt => "corrupt",
        }
    }
}

/// Checks one journal without modifying anything.
pub fn check(path: &Path) -> (Status, Value) {
    let mut journal = serde_json::Map::new();
    let report = match verify(path, &VerifyOptions::default()) {
        Ok(r) => r,
        Err(e) => {
            let offset = match &e {
                OpenError::Corrupt { offset, .. } => Some(offset.0),
                _ => None,
            };
            journal.insert("error".into(), one_line(&e.to_string()).into());
            journal.insert("offset".into(), offset.into());
            return (Status::Corrupt, json!({"journal": journal, "index": null}));
        }
    };
    journal.insert("frames".into(), report.frames.into());
    journal.insert("end".into(), report.end.0.into());
    journal.insert("len".into(), report.len.into());
    let torn = report.torn_tail.as_ref().map(|(off, fault)| {
        json!({"offset": off.0, "bytes": report.len - off.0, "fault": one_line(&fault.to_string())})
    });
    journal.insert("tornTail".into(), torn.clone().unwrap_or(Value::Null));
    let index = match Index::open_or_rebuild(path, read_only_index()) {
        Ok((_, r)) => {
            let (status, detail) = index_status(&r.status);
            json!({"status": status, "detail": detail})
        }
        Err(e) => json!({"status": "error", "detail": one_line(&e.to_string())}),
    };
    let status = if torn.is_some() {
        Status::TornTail
    } else if index["status"] != "fresh" {
        Status::StaleIndex
    } else {
        Status::Clean
    };
    (status, json!({"journal": journal, "index": index}))
}

/// Repairs what can be: a torn tail is cut by a writer's open (the bytes are copied
/// aside first), and the index is rebuilt and saved. Corruption of durable data is not
/// repaired here.
fn repair(path: &Path, status: Status) -> Result<Option<String>> {
    let mut note = None;
    if status == Status::TornTail {
        let (w, report) =
            Writer::open(path, OpenOptions::default()).map_err(|e| anyhow::anyhow!(e))?;
        if let TailState::TornTail {
            offset,
            bytes,
            quarantine,
            ..
        } = &report.tail
        {
            note = Some(format!(
                "cut {bytes} bytes at offset {offset}{}",
                quarantine
                    .as_ref()
                    .map(|q| format!(", copied to {}", q.display()))
                    .unwrap_or_default()
            ));
        }
        w.close().map_err(|e| anyhow::anyhow!(e))?;
    }
    if matches!(status, Status::TornTail | Status::StaleIndex) {
        let (_, r) = Index::open_or_rebuild(path, OpenIndexOptions::default())
            .map_err(|e| anyhow::anyhow!("{}: cannot index: {e}", path.display()))?;
        if let Some(e) = r.save_error {
            anyhow::bail!("{}: cannot save the index: {e}", path.display());
        }
        if !matches!(r.status, IndexStatus::Fresh) && note.is_none() {
            note = Some("index rebuilt".to_owned());
        }
    }
    Ok(note)
}

/// `bcs verify`. Exits 0 only when every session ends up clean.
pub fn run(store: &Store, args: &VerifyArgs, out: &mut Out) -> Result<()> {
    let paths = match &args.session {
        Some(s) => vec![store.find(s)?],
        None => store.journals()?,
    };
    let progress = Progress::new(out, paths.len() as u64, "verifying");
    let mut results = Vec::new();
    let mut all_clean = true;
    for path in &paths {
        progress.message(&session_id_of(path));
        let (mut status, mut details) = check(path);
        let mut repaired = Value::Null;
        if args.repair && status != Status::Clean && status != Status::Corrupt {
            match repair(path, status) {
                Ok(note) => {
                    let before = status;
                    (status, details) = check(path);
                    repaired = json!({"from": before.as_str(), "note": note});
                }
                Err(e) => repaired = json!({"error": one_line(&format!("{e:#}"))}),
            }
        }
        all_clean &= status == Status::Clean;
        let mut v = json!({
            "session": session_id_of(path),
            "path": path.to_string_lossy(),
            "status": status.as_str(),
        });
        if let (Value::Object(m), Value::Object(d)) = (&mut v, details) {
            m.extend(d);
            if args.repair {
                m.insert("repaired".into(), repaired);
            }
        }
        results.push(v);
        progress.inc();
    }
    progress.finish();
    if args.session.is_none() {
        let leftovers = leftover_imports(store.sessions_dir(), args.repair)?;
        all_clean &= leftovers
            .iter()
            .all(|v| v["status"] != LEFTOVER_IMPORT || v["repaired"] == true);
        results.extend(leftovers);
    }
    if args.json {
        out.json(&Value::Array(results.clone()))?;
    } else {
        if results.is_empty() {
            out.line("no sessions")?;
        }
        for v in &results {
            out.line(&human(v))?;
        }
    }
    for v in &results {
        if v["status"] == "corrupt" {
            eprintln!(
                "bcs: verify: {}",
                v["journal"]["error"].as_str().unwrap_or("corrupt journal")
            );
        }
    }
    if !all_clean {
        return Err(crate::Failure::Quiet.into());
    }
    Ok(())
}

/// The status of a temporary journal a killed import left behind.
const LEFTOVER_IMPORT: &str = "leftover-import";

/// The temporaries imports left in the sessions directory: `leftover-import` when no
/// live import holds one (removed with `repair`), `import-in-progress` when one does.
fn leftover_imports(dir: &Path, repair: bool) -> Result<Vec<Value>> {
    use session_journal::vfs::{OpenMode, StdVfs, Vfs};
    let vfs = StdVfs;
    let listed = match session_import::leftover_imports(&vfs, dir) {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(anyhow::anyhow!(
                "{}: cannot read the sessions directory: {e}",
                dir.display()
            ));
        }
    };
    let removed = if repair && !listed.is_empty() {
        session_import::remove_leftover_imports(&vfs, dir).map_err(|e| anyhow::anyhow!(e))?
    } else {
        Vec::new()
    };
    let mut out = Vec::new();
    for path in listed {
        // A live import holds its temporary's lock (holder records are never held).
        let held = !path.to_string_lossy().ends_with(".lock")
            && vfs
                .open(&path, OpenMode::ReadWrite)
                .and_then(|f| f.try_lock())
                .is_ok_and(|locked| !locked);
        let mut v = json!({
            "leftover": path.to_string_lossy(),
            "status": if held && !removed.contains(&path) { "import-in-progress" } else { LEFTOVER_IMPORT },
        });
        if repair && let Value::Object(m) = &mut v {
            m.insert("repaired".into(), removed.contains(&path).into());
        }
        out.push(v);
    }
    Ok(out)
}

fn human(v: &Value) -> String {
    let status = v["status"].as_str().unwrap_or("?");
    if let Some(path) = v["leftover"].as_str() {
        let what = if status == LEFTOVER_IMPORT {
            "left by an import that did not finish (remove with --repair)"
        } else {
            "an import still writing it"
        };
        let repaired = if v["repaired"] == true {
            " [removed]"
        } else {
            ""
        };
        return format!("{status:<12} {path}: {what}{repaired}");
    }
    let mut s = format!("{:<12} {}", status, v["session"].as_str().unwrap_or(""));
    let j = &v["journal"];
    match status {
        "clean" => s.push_str(&format!(" ({} entries, {} bytes)", j["frames"], j["len"])),
        "torn-tail" => s.push_str(&format!(
            ": torn frame at offset {} ({} bytes): {}",
            j["tornTail"]["offset"],
            j["tornTail"]["bytes"],
            j["tornTail"]["fault"].as_str().unwrap_or("")
        )),
        "stale-index" => s.push_str(&format!(
            ": index {}{}",
            v["index"]["status"].as_str().unwrap_or("?"),
            v["index"]["detail"]
                .as_str()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        _ => s.push_str(&format!(": {}", j["error"].as_str().unwrap_or(""))),
    }
    if let Some(r) = v.get("repaired").filter(|r| !r.is_null()) {
        match r.get("error").and_then(Value::as_str) {
            Some(e) => s.push_str(&format!(" [repair failed: {e}]")),
            None => s.push_str(&format!(
                " [repaired from {}{}]",
                r["from"].as_str().unwrap_or("?"),
                r["note"]
                    .as_str()
                    .map(|n| format!(": {n}"))
                    .unwrap_or_default()
            )),
        }
    }
    s
}
