//! `bcs verify`: the journal's frames and end (as a writer's open would classify them)
//! and the index sidecar; read-only unless `--repair`.

use std::path::Path;

use anyhow::Result;
use serde_json::{Value, json};
use session_index::{Index, IndexStatus, OpenIndexOptions};
use session_journal::vfs::{EntryKind, StdVfs, Vfs as _};
use session_journal::{OpenError, OpenOptions, TailState, VerifyOptions, Writer, verify};

use crate::cli::VerifyArgs;
use crate::location::{Location, index_status, read_only_index, session_id_of};
use crate::out::{Out, Progress, one_line};

/// The verdict on one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Journal and index are sound and current.
    Clean,
    /// The journal ends in a torn (never acknowledged) frame.
    TornTail,
    /// The index sidecar is missing, behind or invalid.
    StaleIndex,
    /// Durable data is damaged, or the file is not a readable journal.
    Corrupt,
    /// A temporary journal left by a creation or an import that never finished.
    Leftover,
    /// A journal whose session header record was never written (or torn), holding
    /// no entry: the session's creation was never acknowledged.
    NeverCreated,
}

impl Status {
    /// The JSON spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::TornTail => "torn-tail",
            Status::StaleIndex => "stale-index",
            Status::Corrupt => "corrupt",
            Status::Leftover => "leftover",
            Status::NeverCreated => "never-created",
        }
    }
}

/// How many times a torn-looking tail is looked at again while the file keeps growing
/// (a live writer's append in progress), 10 ms apart.
const LIVE_TAIL_RECHECKS: u32 = 200;

/// `verify`, looked at again while a torn-looking tail keeps growing: a writer that is
/// appending a multi-megabyte frame makes its end look torn until the write is
/// complete. Only a tail that stays torn while the file stops changing is reported.
fn settled_verify(path: &Path) -> Result<session_journal::VerifyReport, OpenError> {
    let mut report = verify(path, &VerifyOptions::default())?;
    for _ in 0..LIVE_TAIL_RECHECKS {
        if report.torn_tail.is_none() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        let len = StdVfs.stat(path).ok().flatten().map_or(0, |s| s.len);
        if len == report.len {
            break;
        }
        report = verify(path, &VerifyOptions::default())?;
    }
    Ok(report)
}

/// What is wrong with the session records of a journal whose frames are sound: no
/// session header record (a creation that never finished), or a journal header that
/// names another session than the file does (a journal copied over another's name).
/// When nothing is, the session header record's `id` (when it has one).
fn session_problem(
    path: &Path,
    report: &session_journal::VerifyReport,
) -> Result<Option<Value>, (Status, String)> {
    let name = session_id_of(path);
    if let Some(id) = &report.header.session_id
        && *id != name
    {
        return Err((
            Status::Corrupt,
            format!(
                "journal of session {id:?} under the name of session {name:?} (copied or renamed?)"
            ),
        ));
    }
    let Ok(reader) = session_journal::Reader::open(path, session_journal::ReaderOptions::default())
    else {
        return Ok(None);
    };
    let first = reader.frames(None).find_map(|f| match f {
        Ok(f) if f.info.kind == session_index::kinds::SESSION_HEADER => {
            Some(Ok(header_record_id(&f.payload)))
        }
        Ok(f) if f.info.kind == session_index::kinds::ENTRY => Some(Err(f.info.offset.0)),
        Ok(_) => None,
        Err(_) => None,
    });
    match first {
        Some(Ok(id)) => Ok(id),
        Some(Err(offset)) => Err((
            Status::Corrupt,
            format!("no session header record: the first entry frame is at offset {offset}"),
        )),
        None => Err((
            Status::NeverCreated,
            format!(
                "the session was never created: no session header record (the journal's frames end at offset {})",
                report.end.0
            ),
        )),
    }
}

/// The `id` of a session header record's JSON (`None` when it is not an object with
/// one: the reader's own checks report such a record).
fn header_record_id(payload: &[u8]) -> Option<Value> {
    match serde_json::from_slice::<Value>(payload) {
        Ok(Value::Object(mut m)) => m.remove("id").filter(|id| !id.is_null()),
        _ => None,
    }
}

/// The warning for a journal whose session header record names another id than its
/// file name: an import made before one id per session (docs/format.md §4) kept the
/// legacy header's id under a derived file name. Not corruption, and not repaired.
fn header_id_warning(path: &Path, ids: &Value) -> String {
    let header = match &ids["header"] {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    let name = ids["fileName"].as_str().unwrap_or("");
    format!(
        "{}: the session header record's id {header} differs from the file name's id {name:?} \
         (imported before one id per session): bcs commands take {name:?}, getSessionId() \
         returns the header's; not corruption, and --repair does not rewrite headers: to give \
         it one id, re-import it (bcs export {name} -o FILE; bcs rm {name}; bcs import FILE)",
        path.display()
    )
}

/// Checks one journal without modifying anything.
pub(crate) fn check(path: &Path) -> (Status, Value) {
    let mut journal = serde_json::Map::new();
    let report = match settled_verify(path) {
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
    let mut header_id = None;
    if report.torn_tail.is_none() {
        match session_problem(path, &report) {
            Ok(id) => header_id = id,
            Err((status, problem)) => {
                journal.insert(
                    "error".into(),
                    format!("{}: {problem}", path.display()).into(),
                );
                let offset = (status == Status::NeverCreated).then_some(report.end.0);
                journal.insert("offset".into(), offset.into());
                return (status, json!({"journal": journal, "index": null}));
            }
        }
    }
    journal.insert("frames".into(), report.frames.into());
    journal.insert("end".into(), report.end.0.into());
    journal.insert("len".into(), report.len.into());
    journal.insert("formatVersion".into(), report.header.format_version.into());
    journal.insert("sealed".into(), report.sealed.into());
    let torn = report.torn_tail.as_ref().map(|(off, fault)| {
        json!({"offset": off.0, "bytes": report.len - off.0, "fault": one_line(&fault.to_string())})
    });
    journal.insert("tornTail".into(), torn.clone().unwrap_or(Value::Null));
    let name = session_id_of(path);
    if let Some(header) = header_id.filter(|h| h.as_str() != Some(name.as_str())) {
        journal.insert(
            "headerId".into(),
            json!({"fileName": name, "header": header}),
        );
    }
    let index = match Index::open_or_rebuild(path, read_only_index()) {
        // An open reads the sidecar's head only: its pages are checked here.
        Ok((ix, r)) => match ix.check_sidecar_pages() {
            Some(fault) => json!({"status": "damaged", "detail": one_line(fault)}),
            None => {
                let (status, detail) = index_status(&r.status);
                json!({"status": status, "detail": detail})
            }
        },
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
    if status == Status::NeverCreated {
        // It holds no entry (only the journal's own header): moved aside, never
        // deleted, out of the journals' names (hidden).
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let aside = path.with_file_name(format!(".{name}.never-created"));
        // Through the store's seam, holding the journal's lock: a journal someone
        // owns is never moved, and the name moved is the file that was checked.
        let vfs = StdVfs;
        let hold = session_journal::lock::Hold::take(&vfs, path)
            .map_err(|e| crate::out::at_path(path, "cannot move aside", e))?;
        vfs.rename(path, &aside)
            .map_err(|e| crate::out::at_path(path, "cannot move aside", e))?;
        drop(hold);
        return Ok(Some(format!("moved aside to {}", aside.display())));
    }
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
        let (ix, mut r) = Index::open_or_rebuild(path, OpenIndexOptions::default())
            .map_err(|e| crate::out::at_path(path, "cannot index", e))?;
        if ix.check_sidecar_pages().is_some() {
            // A damaged page the open did not read: the sidecar is derived, so it is
            // removed and rebuilt.
            let side = session_index::sidecar_path(path);
            StdVfs
                .remove_file(&side)
                .map_err(|e| crate::out::at_path(&side, "cannot remove the index", e))?;
            r = Index::open_or_rebuild(path, OpenIndexOptions::default())
                .map_err(|e| crate::out::at_path(path, "cannot index", e))?
                .1;
        }
        if let Some(e) = r.save_error {
            return Err(crate::out::at_path(path, "cannot save the index", e));
        }
        if !matches!(r.status, IndexStatus::Fresh) && note.is_none() {
            note = Some("index rebuilt".to_owned());
        }
    }
    Ok(note)
}

/// `bcs verify`. Exits 0 only when every session ends up clean.
pub(crate) fn run(store: &Location, args: &VerifyArgs, out: &mut Out) -> Result<()> {
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
                    if before == Status::NeverCreated {
                        // Moved aside: there is no session left to check.
                        status = Status::Clean;
                    } else {
                        (status, details) = check(path);
                    }
                    repaired = json!({"from": before.as_str(), "note": note});
                }
                Err(e) => repaired = json!({"error": one_line(&crate::error_line(&e))}),
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
        for path in leftovers(store)? {
            let mut repaired = Value::Null;
            let mut status = Status::Leftover;
            if args.repair {
                repaired = match remove_leftover(&path) {
                    Ok(()) => {
                        status = Status::Clean;
                        json!({"from": "leftover", "note": "removed"})
                    }
                    Err(e) => json!({"error": one_line(&format!("{}: {e}", path.display()))}),
                };
            }
            all_clean &= status == Status::Clean;
            let mut v = json!({
                "session": null,
                "path": path.to_string_lossy(),
                "status": status.as_str(),
                "journal": {"error": "a temporary journal left by a creation or an import that never finished (it holds no acknowledged session)"},
            });
            if args.repair
                && let Value::Object(m) = &mut v
            {
                m.insert("repaired".into(), repaired);
            }
            results.push(v);
        }
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
        if let (Some(ids), Some(path)) = (v["journal"].get("headerId"), v["path"].as_str()) {
            out.warn(&header_id_warning(Path::new(path), ids));
        }
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

/// Removes a leftover through the store's seam: a temporary journal only while holding
/// its lock (a creation or import still running holds it, and it is kept), a holder
/// record as it is.
fn remove_leftover(path: &Path) -> std::io::Result<()> {
    let vfs = StdVfs;
    if path.extension().is_some_and(|e| e == "lock") {
        return vfs.remove_file(path);
    }
    let hold = session_journal::lock::Hold::take(&vfs, path)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let removed = vfs.remove_file(path);
    drop(hold);
    removed
}

/// Temporary journals in the sessions directory that no running creation or import
/// holds: what a process killed inside `create` or `import` leaves (regular files
/// only), with the holder records of import temporaries that are gone.
fn leftovers(store: &Location) -> Result<Vec<std::path::PathBuf>> {
    let dir = store.sessions_dir();
    let entries = match StdVfs.read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(anyhow::anyhow!(
                "{}: cannot read the directory: {e}",
                dir.display()
            ));
        }
    };
    let mut out = Vec::new();
    for e in entries {
        if e.kind == EntryKind::File && session_journal::is_leftover_temp(&e.name) {
            let path = dir.join(&e.name);
            // A creation in progress holds its temporary's lock: not a leftover.
            if session_journal::lock::Hold::take(&StdVfs, &path).is_ok() {
                out.push(path);
            }
        }
    }
    // An import's temporary (`.<name>.import-<id>.tmp`) stays locked by its importer
    // until it is published; its holder record is a leftover once the temporary is gone.
    let imports = session_import::leftover_imports(&StdVfs, dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot read the directory: {e}", dir.display()))?;
    for path in imports {
        let leftover = match path.to_str().and_then(|p| p.strip_suffix(".lock")) {
            // An error stating the temporary keeps the record (never remove on doubt).
            Some(tmp) => StdVfs.exists(Path::new(tmp)).is_ok_and(|e| !e),
            None => session_journal::lock::Hold::take(&StdVfs, &path).is_ok(),
        };
        if leftover {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn human(v: &Value) -> String {
    let status = v["status"].as_str().unwrap_or("?");
    let shown = v["session"].as_str().map_or_else(
        || v["path"].as_str().unwrap_or("").to_owned(),
        str::to_owned,
    );
    let mut s = format!("{:<12} {}", status, shown);
    let j = &v["journal"];
    match status {
        "clean" => s.push_str(&format!(
            " ({} entries, {} bytes, {}, format v{})",
            j["frames"],
            j["len"],
            if j["sealed"] == true {
                "sealed"
            } else {
                "not sealed"
            },
            j["formatVersion"]
        )),
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
