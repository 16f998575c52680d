//! `bcs import` (legacy JSONL into the store, with a fresh index per new journal) and
//! `bcs export` (v3 plain JSONL).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::{Value, json};
use session_import::{ImportOutcome, export as export_journal};

use session_client::session_protocol::Imported as OwnerImported;

use crate::cli::{ExportArgs, ImportArgs};
use crate::cmd::owner::Owner;
use crate::location::Location;
use crate::out::{Out, Progress, one_line};

/// The most files a directory argument may expand to (a bound, not a policy).
const MAX_FILES: usize = 1_000_000;

/// Expands the arguments: files as given, directories searched recursively (without
/// following symbolic links) for `*.jsonl`, in path order.
pub(crate) fn expand(sources: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for s in sources {
        let md = std::fs::metadata(s).with_context(|| format!("{}: cannot read", s.display()))?;
        if !md.is_dir() {
            out.push(s.clone());
            continue;
        }
        let mut found = Vec::new();
        let mut stack = vec![s.clone()];
        while let Some(dir) = stack.pop() {
            let rd = std::fs::read_dir(&dir)
                .with_context(|| format!("{}: cannot read the directory", dir.display()))?;
            for e in rd {
                let e =
                    e.with_context(|| format!("{}: cannot read the directory", dir.display()))?;
                let ft = e
                    .file_type()
                    .with_context(|| format!("{}: cannot stat", e.path().display()))?;
                let p = e.path();
                if ft.is_dir() {
                    stack.push(p);
                } else if ft.is_file() && p.extension().is_some_and(|x| x == "jsonl") {
                    found.push(p);
                    if found.len() + out.len() > MAX_FILES {
                        bail!("{}: more than {MAX_FILES} files to import", s.display());
                    }
                }
            }
        }
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

/// What importing one source gave.
pub type Imported = (PathBuf, Result<ImportOutcome, String>);

/// Imports every source into the store's sessions directory through the manager
/// (`session_manager::Store::import_many`: in batches, each made durable together and
/// published with one directory sync); each new journal gets its index sidecar saved
/// (from the import's durable capture, without syncs of its own: it is derived), so
/// the next reads start fresh. A progress bar is drawn when stderr is a terminal.
pub fn import_all(store: &Location, files: &[PathBuf], out: &Out) -> Result<Vec<Imported>> {
    let dir = store.sessions_dir();
    session_manager::layout::create_private_dir(dir)
        .with_context(|| format!("{}: cannot create the sessions directory", dir.display()))?;
    let manager = session_manager::Store::new(store.layout().clone());
    let progress = Progress::new(out, files.len() as u64, "importing");
    let mut results: Vec<Option<Result<ImportOutcome, String>>> =
        files.iter().map(|_| None).collect();
    let finished = manager.import_many(
        files,
        &session_manager::BulkOptions::default(),
        &mut |i, r| {
            let r = match r {
                Ok(o) => Ok(o.clone()),
                Err(e) => Err(e.to_string()),
            };
            progress.message(&files[i].to_string_lossy());
            progress.inc();
            results[i] = Some(r);
        },
    );
    progress.finish();
    let finished = finished.map_err(|e| anyhow!("{e}"))?;
    Ok(files
        .iter()
        .zip(results)
        .zip(finished)
        .map(|((f, r), fallback)| {
            let r = r.unwrap_or_else(|| fallback.map_err(|e| e.to_string()));
            (f.clone(), r)
        })
        .collect())
}

/// The `--json` object of one source.
pub(crate) fn imported_json(source: &Path, r: &Result<ImportOutcome, String>) -> Value {
    match r {
        Ok(o) => json!({
            "source": source.to_string_lossy(),
            "sessionId": o.session_id,
            "journal": o.journal.to_string_lossy(),
            "version": o.source.version,
            "entries": o.entries,
            "alreadyImported": o.already_imported,
            "warnings": o.issues.iter().map(|i| json!({
                "line": i.line,
                "message": i.kind.to_string(),
            })).collect::<Vec<_>>(),
            "warningsNotListed": o.issues_not_listed,
        }),
        Err(e) => failed_json(source, e),
    }
}

/// The human lines of one source.
/// The JSON of a source that did not import, whichever way it went.
fn failed_json(source: &Path, error: &str) -> Value {
    json!({
        "source": source.to_string_lossy(),
        "sessionId": null,
        "entries": 0,
        "alreadyImported": false,
        "warnings": [],
        "error": error,
    })
}

pub(crate) fn imported_human(source: &Path, r: &Result<ImportOutcome, String>) -> Vec<String> {
    let src = source.display();
    match r {
        Ok(o) if o.already_imported => vec![format!("already imported  {src} -> {}", o.session_id)],
        Ok(o) => {
            let mut lines = vec![format!(
                "imported  {src} -> {} (v{}, {} entries, {} warnings)",
                o.session_id,
                o.source.version,
                o.entries,
                o.issues.len() as u64 + o.issues_not_listed
            )];
            for i in &o.issues {
                lines.push(format!(
                    "  line {}: {}",
                    i.line,
                    one_line(&i.kind.to_string())
                ));
            }
            if o.issues_not_listed > 0 {
                lines.push(format!("  … and {} more warnings", o.issues_not_listed));
            }
            lines
        }
        Err(e) => vec![format!(
            "refused   {src}: {}",
            one_line(without_path(e, source))
        )],
    }
}

/// What the owner answered for one source (`store/importMany`).
type ThroughOwner = Result<OwnerImported, String>;

/// Imports every source through the store's owner (`store/importMany`, in chunks),
/// which announces each new session to its store followers; in source order.
fn import_through(owner: &Owner, files: &[PathBuf], out: &Out) -> Vec<ThroughOwner> {
    let progress = Progress::new(out, files.len() as u64, "importing");
    let mut results: Vec<Option<ThroughOwner>> = files.iter().map(|_| None).collect();
    owner.import(files, &mut |i, r| {
        progress.message(&files[i].to_string_lossy());
        progress.inc();
        results[i] = Some(r);
    });
    progress.finish();
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("the import was not answered".to_owned())))
        .collect()
}

/// The `--json` object of one source imported through the owner: the same keys;
/// the owner answers the number of warnings, not each one, nor the source's
/// version (`null`).
fn owner_json(source: &Path, r: &ThroughOwner) -> Value {
    match r {
        Ok(o) => json!({
            "source": source.to_string_lossy(),
            "sessionId": o.session_id,
            "journal": o.session_file,
            "version": null,
            "entries": o.entries,
            "alreadyImported": o.already_imported,
            "warnings": [],
            "warningsNotListed": o.issues,
        }),
        Err(e) => failed_json(source, e),
    }
}

/// The human lines of one source imported through the owner.
fn owner_human(source: &Path, r: &ThroughOwner) -> Vec<String> {
    let src = source.display();
    match r {
        Ok(o) if o.already_imported => vec![format!("already imported  {src} -> {}", o.session_id)],
        Ok(o) => vec![format!(
            "imported  {src} -> {} ({} entries, {} warnings; through the owner)",
            o.session_id, o.entries, o.issues
        )],
        Err(e) => vec![format!(
            "refused   {src}: {}",
            one_line(without_path(e, source))
        )],
    }
}

/// `e` without a leading `<source>: ` (the caller names the source itself).
fn without_path<'e>(e: &'e str, source: &Path) -> &'e str {
    let p = source.to_string_lossy();
    e.strip_prefix(p.as_ref())
        .and_then(|r| r.strip_prefix(": "))
        .unwrap_or(e)
}

/// `bcs import`. Exits non-zero if any source was refused.
pub(crate) fn run(store: &Location, args: &ImportArgs, out: &mut Out) -> Result<()> {
    let files = expand(&args.sources)?;
    if files.is_empty() {
        bail!(
            "no *.jsonl file found in {}",
            args.sources
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // Through the owner when one serves this sessions directory: its store followers
    // see the new sessions. Else the files, in batches.
    let reports: Vec<(Value, Vec<String>, Option<String>)> = match Owner::connect(store)? {
        Some(owner) if owner.serves(store)? => import_through(&owner, &files, out)
            .iter()
            .zip(&files)
            .map(|(r, f)| {
                (
                    owner_json(f, r),
                    owner_human(f, r),
                    r.as_ref().err().cloned(),
                )
            })
            .collect(),
        _ => import_all(store, &files, out)?
            .iter()
            .map(|(f, r)| {
                (
                    imported_json(f, r),
                    imported_human(f, r),
                    r.as_ref().err().cloned(),
                )
            })
            .collect(),
    };
    let mut refused = 0;
    for ((json, human, error), source) in reports.into_iter().zip(&files) {
        if args.json {
            out.json(&json)?;
        } else if error.is_none() {
            for l in human {
                out.line(&l)?;
            }
        }
        if let Some(e) = error {
            refused += 1;
            eprintln!(
                "bcs: import of {} refused: {}",
                source.display(),
                one_line(without_path(&e, source))
            );
        }
    }
    if refused > 0 {
        return Err(crate::Failure::Quiet.into());
    }
    Ok(())
}

/// `bcs export`.
pub(crate) fn export(store: &Location, args: &ExportArgs, out: &mut Out) -> Result<()> {
    let path = store.find(&args.session)?;
    if let Some(dest) = &args.output {
        export_journal(&path, dest).map_err(|e| anyhow!(e))?;
        return Ok(());
    }
    // Streamed: nothing staged on disk, memory bounded by the largest entry.
    session_import::export_to(&path, out.writer(), Path::new("<stdout>"))
        .map_err(|e| anyhow!(e))?;
    out.flush()
}
