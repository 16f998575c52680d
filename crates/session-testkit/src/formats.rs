//! Format goldens of every file kind and version: `tests/fixtures/formats/<kind>/v<N>/`.
//!
//! Each file kind the store writes has its own version number, and its goldens live in
//! a directory named by that kind and version ([`Kind::dir`]):
//!
//! | kind | version | directory |
//! |---|---|---|
//! | native journal | `session_journal::format::FORMAT_VERSION` | `journal/v<N>/` |
//! | index sidecar | `session_index::SIDECAR_VERSION` | `sidecar/v<N>/` |
//! | listing catalog | `session_index::CATALOG_VERSION` | `catalog/v<N>/` |
//! | imports registry line | `session_import::format::REGISTRY_VERSION` | `registry/v<N>/` |
//!
//! The directory of a kind's current version is written by this code ([`generate`],
//! deterministic: a [`SimFs`], fixed clocks and ids) and regenerates byte for byte.
//! Every other directory holds what an older version's code wrote: frozen, each file's
//! BLAKE3 pinned in [`FROZEN_FILE`] (`<hex>  <kind>/v<N>/<name>` lines). When a kind's
//! version is bumped, its previous directory becomes old: [`pin_old`] (run by `cargo
//! xtask fixtures`) pins the files it holds then, and from that point [`check`] fails
//! on any change to them. The derived files' goldens keep the journals they were
//! derived from beside them, so an old sidecar or catalog stays bound to its journal.
//!
//! [`describe_index`], [`describe_listing`] and [`describe_registry`] render what the
//! current code reads from a golden, for snapshots.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_index::{
    EntryIndex, Index, IndexStatus, ListOptions, ListReport, OpenIndexOptions, SessionInfo,
};
use session_journal::vfs::Vfs;

pub use crate::golden::FORMATS_DIR;
use crate::golden::{format_readme, golden_journals};
use crate::legacy::{fixture_journal_id, legacy_records, write_journal};
use crate::sim::SimFs;

/// The file (in [`FORMATS_DIR`]) pinning the BLAKE3 of every frozen golden.
pub const FROZEN_FILE: &str = "FROZEN";

/// A file kind with a format version of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The native journal (`docs/format.md` §2).
    Journal,
    /// The index sidecar `<journal>.idx` (§3).
    Sidecar,
    /// The listing catalog `.catalog` (§3).
    Catalog,
    /// The imports registry `.imports.jsonl`, by its lines' `"v"` (§4).
    Registry,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 4] = [Kind::Journal, Kind::Sidecar, Kind::Catalog, Kind::Registry];

    /// The kind's directory name under [`FORMATS_DIR`].
    pub fn name(self) -> &'static str {
        match self {
            Kind::Journal => "journal",
            Kind::Sidecar => "sidecar",
            Kind::Catalog => "catalog",
            Kind::Registry => "registry",
        }
    }

    /// The version of this kind that this code writes.
    pub fn current_version(self) -> u32 {
        match self {
            Kind::Journal => session_journal::format::FORMAT_VERSION,
            Kind::Sidecar => session_index::SIDECAR_VERSION,
            Kind::Catalog => session_index::CATALOG_VERSION,
            Kind::Registry => session_import::format::REGISTRY_VERSION,
        }
    }

    /// The goldens of `version` of this kind: `<formats_dir>/<kind>/v<version>/`.
    pub fn dir(self, formats_dir: &Path, version: u32) -> PathBuf {
        formats_dir.join(self.name()).join(format!("v{version}"))
    }

    /// The versions that have a golden directory under `formats_dir`, ascending.
    pub fn versions(self, formats_dir: &Path) -> io::Result<Vec<u32>> {
        let mut out = Vec::new();
        let dir = formats_dir.join(self.name());
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(e),
        };
        for e in entries {
            let name = e?.file_name();
            if let Some(v) = name
                .to_str()
                .and_then(|n| n.strip_prefix('v'))
                .and_then(|n| n.parse().ok())
            {
                out.push(v);
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}

fn io_other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

/// The golden files of `kind`'s current version, `(file name, bytes)`, its README
/// last: generated deterministically, the same bytes on every run.
pub fn generate(kind: Kind) -> io::Result<Vec<(String, Vec<u8>)>> {
    let version = kind.current_version();
    let mut files = match kind {
        Kind::Journal => golden_journals()?,
        Kind::Sidecar => sidecar_golden()?,
        Kind::Catalog => catalog_golden()?,
        Kind::Registry => registry_golden()?,
    };
    let readme = match kind {
        Kind::Journal => format_readme(version),
        _ => derived_readme(kind, version),
    };
    files.push(("README.md".to_owned(), readme.into_bytes()));
    Ok(files)
}

/// Writes `kind`'s current version's goldens into `formats_dir` (never another
/// version's directory); returns the paths written.
pub fn write_current(formats_dir: &Path, kind: Kind) -> io::Result<Vec<PathBuf>> {
    let dir = kind.dir(formats_dir, kind.current_version());
    std::fs::create_dir_all(&dir)?;
    let mut out = Vec::new();
    for (name, bytes) in generate(kind)? {
        let p = dir.join(name);
        std::fs::write(&p, bytes)?;
        out.push(p);
    }
    Ok(out)
}

/// The README of a derived file kind's golden directory.
fn derived_readme(kind: Kind, version: u32) -> String {
    let (what, files) = match kind {
        Kind::Sidecar => (
            "index sidecar",
            "`golden.jsonl` (a session journal) and `golden.jsonl.idx` (its sidecar)",
        ),
        Kind::Catalog => (
            "listing catalog",
            "two session journals and `.catalog`, the catalog a listing of them wrote",
        ),
        _ => (
            "imports registry line",
            "two legacy sources, the journals importing them made and `.imports.jsonl`",
        ),
    };
    format!(
        "# {what} format version {version}: goldens\n\n\
{files}, written by `session_testkit::formats::generate` while version {version} was\n\
the version this code writes (`cargo xtask fixtures`); do not edit. Once a newer\n\
version exists these bytes are frozen (their BLAKE3 pinned in `../../FROZEN`), and the\n\
current code must still open them by the rule of `docs/format.md` §2.9.\n"
    )
}

/// A session that sets every aggregate the index keeps: header, a branch, labels of
/// a string and a non-string target, a name, a lifecycle state, an agent status,
/// usage attribution, an entry without id and a repeated id.
const SESSION: &str = concat!(
    r#"{"type":"session","version":3,"id":"golden","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/golden"}"#,
    "\n",
    r#"{"type":"message","id":"m1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"fix the parser","timestamp":1767225601000}}"#,
    "\n",
    r#"{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"on it"}],"timestamp":1767225602000}}"#,
    "\n",
    r#"{"type":"model_change","id":"c1","parentId":"m2","timestamp":"2026-01-01T00:00:03.000Z","provider":"p","modelId":"m"}"#,
    "\n",
    r#"{"type":"message","id":"m3","parentId":"m1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"another branch"}],"timestamp":1767225604000}}"#,
    "\n",
    r#"{"type":"label","id":"l1","parentId":"m3","timestamp":"2026-01-01T00:00:05.000Z","targetId":"m1","label":"start"}"#,
    "\n",
    r#"{"type":"label","id":"l2","parentId":"l1","timestamp":"2026-01-01T00:00:06.000Z","targetId":5,"label":42}"#,
    "\n",
    r#"{"type":"session_info","id":"n1","parentId":"l2","timestamp":"2026-01-01T00:00:07.000Z","name":" parser fix "}"#,
    "\n",
    r#"{"type":"session_state","id":"s1","parentId":"n1","timestamp":"2026-01-01T00:00:08.000Z","state":"idle"}"#,
    "\n",
    r#"{"type":"child_usage_attributed","id":"u1","parentId":"s1","timestamp":"2026-01-01T00:00:09.000Z","targetId":"m2"}"#,
    "\n",
    r#"{"type":"custom","customType":"note","data":{},"parentId":"u1","timestamp":"2026-01-01T00:00:10.000Z"}"#,
    "\n",
    r#"{"type":"custom","customType":"note","data":{},"id":"m1","parentId":"u1","timestamp":"2026-01-01T00:00:11.000Z"}"#,
    "\n",
    r#"{"type":"agent_status","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:12.000Z","status":{"summary":"tests pass","taskState":"done"}}"#,
    "\n",
);

/// A second, smaller session for the catalog.
const SESSION_B: &str = concat!(
    r#"{"type":"session","version":3,"id":"golden-b","timestamp":"2026-01-02T00:00:00.000Z","cwd":"/work/b","parentSession":"/work/golden.jsonl"}"#,
    "\n",
    r#"{"type":"message","id":"b1","parentId":null,"timestamp":"2026-01-02T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"list the sessions"}],"timestamp":1767312001000}}"#,
    "\n",
    r#"{"type":"session_state","id":"b2","parentId":"b1","timestamp":"2026-01-02T00:00:02.000Z","state":"archived"}"#,
    "\n",
);

/// Writes a session journal of `text`'s records at `path` (journal id from `name`,
/// fixed clock; closed, so sealed).
fn write_session(fs: &SimFs, path: &Path, name: &str, text: &str) -> io::Result<()> {
    write_journal(
        path,
        fixture_journal_id(name),
        &legacy_records(text),
        Arc::new(fs.clone()),
    )
    .map(|_| ())
    .map_err(io_other)
}

fn read(fs: &SimFs, path: &Path) -> io::Result<Vec<u8>> {
    fs.read_raw(path)
        .ok_or_else(|| io::Error::other(format!("golden file {} missing", path.display())))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The sidecar golden: a session journal and the sidecar an open of it saved.
fn sidecar_golden() -> io::Result<Vec<(String, Vec<u8>)>> {
    let fs = SimFs::new();
    let dir = Path::new("/golden");
    fs.create_dir_all(dir)?;
    let journal = dir.join("golden.jsonl");
    write_session(&fs, &journal, "golden", SESSION)?;
    Index::open_or_rebuild(
        &journal,
        OpenIndexOptions {
            vfs: Arc::new(fs.clone()),
            ..OpenIndexOptions::default()
        },
    )
    .map_err(io_other)?;
    let sidecar = session_index::sidecar_path(&journal);
    Ok(vec![
        (file_name(&journal), read(&fs, &journal)?),
        (file_name(&sidecar), read(&fs, &sidecar)?),
    ])
}

/// The catalog golden: two session journals and the catalog a listing wrote for them
/// (their sidecars are not kept: the catalog alone must answer).
fn catalog_golden() -> io::Result<Vec<(String, Vec<u8>)>> {
    let fs = SimFs::new();
    let dir = Path::new("/golden/sessions");
    fs.create_dir_all(dir)?;
    let a = dir.join("golden.jsonl");
    let b = dir.join("golden-b.jsonl");
    write_session(&fs, &a, "golden", SESSION)?;
    write_session(&fs, &b, "golden-b", SESSION_B)?;
    // Past the racy window, so the records are base records a later listing trusts.
    fs.advance_clock(std::time::Duration::from_secs(2));
    let (_, report) = session_index::list_sessions(
        dir,
        &ListOptions {
            vfs: Arc::new(fs.clone()),
            ..ListOptions::default()
        },
    )
    .map_err(io_other)?;
    if let Some(e) = report.save_error {
        return Err(io::Error::other(format!("the catalog was not saved: {e}")));
    }
    let catalog = dir.join(session_index::CATALOG_FILE);
    Ok(vec![
        (file_name(&a), read(&fs, &a)?),
        (file_name(&b), read(&fs, &b)?),
        (file_name(&catalog), read(&fs, &catalog)?),
    ])
}

/// A legacy v3 source and a legacy v1 source (migrated on import) for the registry.
const SOURCE_V3: &str = concat!(
    r#"{"type":"session","version":3,"id":"imported","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/legacy"}"#,
    "\n",
    r#"{"type":"message","id":"i1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1735689601000}}"#,
    "\n",
);
const SOURCE_V1: &str = concat!(
    r#"{"type":"session","id":"imported-v1","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/legacy"}"#,
    "\n",
    r#"{"type":"message","timestamp":"2024-01-01T00:00:01.000Z","message":{"role":"user","content":"old","timestamp":1704067201000}}"#,
    "\n",
);

/// The legacy sources of the registry golden, by file name; they sit at
/// `/golden/src/<name>` when imported (the path the journals' source frames record).
pub const REGISTRY_SOURCES: [&str; 2] = ["source-v3.jsonl", "source-v1.jsonl"];

/// Where the registry golden's sources and sessions are (on a [`SimFs`]).
pub const REGISTRY_SOURCE_DIR: &str = "/golden/src";
/// Where the registry golden's journals and registry are (on a [`SimFs`]).
pub const REGISTRY_SESSIONS_DIR: &str = "/golden/sessions";

/// The registry golden: two legacy sources, the journals their imports wrote and the
/// registry those imports appended to.
fn registry_golden() -> io::Result<Vec<(String, Vec<u8>)>> {
    let fs = SimFs::new();
    let src = Path::new(REGISTRY_SOURCE_DIR);
    let sessions = Path::new(REGISTRY_SESSIONS_DIR);
    fs.create_dir_all(src)?;
    fs.create_dir_all(sessions)?;
    let mut out = Vec::new();
    let mut journals = Vec::new();
    for (name, text) in REGISTRY_SOURCES.iter().zip([SOURCE_V3, SOURCE_V1]) {
        let p = src.join(name);
        fs.write_raw(&p, text.as_bytes());
        out.push(((*name).to_owned(), text.as_bytes().to_vec()));
        let outcome = session_import::import(
            &p,
            &session_import::Destination::Dir(sessions.to_path_buf()),
            &registry_import_options(&fs),
        )
        .map_err(io_other)?;
        journals.push(outcome.journal);
    }
    for j in &journals {
        out.push((file_name(j), read(&fs, j)?));
    }
    let registry = sessions.join(session_import::registry::REGISTRY_FILE);
    out.push((file_name(&registry), read(&fs, &registry)?));
    Ok(out)
}

/// The import options the registry golden was written with (fixed clock, `fs`).
pub fn registry_import_options(fs: &SimFs) -> session_import::ImportOptions {
    session_import::ImportOptions {
        clock: session_journal::Clock::fixed(1_700_000_000_000),
        vfs: Arc::new(fs.clone()),
        ..session_import::ImportOptions::default()
    }
}

/// Copies the golden directory `dir` (on disk) into `fs` at `to`: every file, hidden
/// ones included.
pub fn load_into(fs: &SimFs, dir: &Path, to: &Path) -> io::Result<Vec<String>> {
    fs.create_dir_all(to)?;
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        fs.write_raw(&to.join(&name), &std::fs::read(e.path())?);
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// What an index answers, rendered: counts, name, state, leaf, the summary, the
/// labels and every indexed entry with its resolved parent. Independent of how the
/// index was obtained (a sidecar read, or a rebuild from the journal).
pub fn describe_index(index: &Index) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "covered_len {}", index.covered_len().0);
    let _ = writeln!(out, "covered_seq {}", index.covered_seq().0);
    let _ = writeln!(out, "counts {:?}", index.counts());
    let _ = writeln!(out, "name {:?}", index.name());
    let _ = writeln!(out, "lifecycle_state {:?}", index.lifecycle_state());
    let _ = writeln!(out, "leaf {:?}", index.leaf().map(|i| i.0));
    let summary = serde_json::to_string_pretty(&index.summary()).unwrap_or_default();
    let _ = writeln!(out, "summary {summary}");
    for (target, label) in index.labels() {
        let _ = writeln!(out, "label {target:?} = {label:?}");
    }
    for i in 0..index.len() {
        let i = EntryIndex(u32::try_from(i).unwrap_or(u32::MAX));
        let Some(info) = index.info(i) else { continue };
        let _ = writeln!(
            out,
            "#{} @{} seq={} kind={:#04x} type={:?} role={:?} id={} parent={:?} time={:?} label={}",
            i.0,
            info.offset.0,
            info.seq.0,
            info.kind,
            info.entry_type,
            info.role,
            index
                .id_value(i)
                .map_or_else(|| "undefined".to_owned(), |v| v.to_string()),
            index.parent(i).map(|p| p.0),
            info.timestamp_ms,
            index
                .label_of(i)
                .map_or_else(|| "-".to_owned(), |v| v.to_string()),
        );
    }
    out
}

/// How an index was obtained, in one line (for asserting, not snapshotting).
pub fn describe_status(status: &IndexStatus) -> String {
    match status {
        IndexStatus::Fresh => "fresh".to_owned(),
        IndexStatus::CaughtUp { frames, .. } => format!("caught up {frames} frames"),
        IndexStatus::Rebuilt { reason } => format!("rebuilt: {reason}"),
        other => format!("{other:?}"),
    }
}

/// What a listing answers, rendered: each session's path and reference JSON, its
/// lifecycle state and agent status.
pub fn describe_listing(infos: &[SessionInfo]) -> String {
    let mut out = String::new();
    for info in infos {
        let _ = writeln!(out, "{}", info.path.display());
        let json = info.to_json().to_string();
        let _ = writeln!(out, "  json {json}");
        let _ = writeln!(out, "  session_state {:?}", info.session_state());
        let _ = writeln!(
            out,
            "  agent_status {}",
            info.agent_status()
                .map_or_else(|| "-".to_owned(), |v| v.to_string())
        );
    }
    out
}

/// A listing report in one line: the catalog's fate and what was read.
pub fn describe_list_report(report: &ListReport) -> String {
    format!(
        "catalog {:?}, journals opened {}, journals checked {}, skipped {}",
        report.catalog,
        report.journals_opened,
        report.journals_checked,
        report.skipped.len()
    )
}

/// What a registry read answers, rendered: each line as parsed.
pub fn describe_registry(lines: &[session_import::format::RegistryLine]) -> String {
    let mut out = String::new();
    for l in lines {
        let _ = writeln!(
            out,
            "v={} blake3={} session_id={:?} journal={:?}",
            l.version, l.blake3, l.session_id, l.journal
        );
    }
    out
}

/// The pinned hashes of [`FROZEN_FILE`]: `(path relative to formats_dir, hex)`.
pub fn frozen(formats_dir: &Path) -> io::Result<Vec<(String, String)>> {
    let text = match std::fs::read_to_string(formats_dir.join(FROZEN_FILE)) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((hash, path)) = line.split_once("  ") else {
            return Err(io::Error::other(format!(
                "{FROZEN_FILE} line {}: expected `<blake3 hex>  <path>`",
                n + 1
            )));
        };
        out.push((path.to_owned(), hash.to_owned()));
    }
    Ok(out)
}

fn files_of(dir: &Path) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_file() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

fn rel(kind: Kind, version: u32, name: &str) -> String {
    format!("{}/v{version}/{name}", kind.name())
}

/// What is wrong with `kind`'s goldens under `formats_dir` (empty: nothing): the
/// current version's directory must equal a fresh generation file for file; every
/// file of an older version's directory must be pinned in [`FROZEN_FILE`] with its
/// BLAKE3, and every pin must hold; no directory may be of a newer version than this
/// code writes.
pub fn check(formats_dir: &Path, kind: Kind) -> io::Result<Vec<String>> {
    let current = kind.current_version();
    let mut problems = Vec::new();
    let generated = generate(kind)?;
    let dir = kind.dir(formats_dir, current);
    for (name, bytes) in &generated {
        match std::fs::read(dir.join(name)) {
            Ok(have) if have == *bytes => {}
            Ok(_) => problems.push(format!(
                "{} differs from what the current code writes",
                rel(kind, current, name)
            )),
            Err(_) => problems.push(format!("{} is missing", rel(kind, current, name))),
        }
    }
    if dir.is_dir() {
        for name in files_of(&dir)? {
            if !generated.iter().any(|(n, _)| *n == name) {
                problems.push(format!(
                    "{} is not written by the current code",
                    rel(kind, current, &name)
                ));
            }
        }
    }
    let pins = frozen(formats_dir)?;
    for version in kind.versions(formats_dir)? {
        if version > current {
            problems.push(format!(
                "{}/v{version} is newer than the version this code writes ({current})",
                kind.name()
            ));
            continue;
        }
        if version == current {
            continue;
        }
        for name in files_of(&kind.dir(formats_dir, version))? {
            let r = rel(kind, version, &name);
            if !pins.iter().any(|(p, _)| *p == r) {
                problems.push(format!(
                    "{r} is an old version's golden but not pinned in {FROZEN_FILE} (run `cargo xtask fixtures`)"
                ));
            }
        }
    }
    let prefix = format!("{}/", kind.name());
    for (path, hash) in pins.iter().filter(|(p, _)| p.starts_with(&prefix)) {
        if path.starts_with(&format!("{}/v{current}/", kind.name())) {
            problems.push(format!(
                "{path} is pinned but of the current version ({current})"
            ));
            continue;
        }
        match std::fs::read(formats_dir.join(path)) {
            Ok(bytes) => {
                let found = blake3::hash(&bytes).to_hex();
                if found.as_str() != hash {
                    problems.push(format!(
                        "{path} is frozen but changed (BLAKE3 {found}, pinned {hash})"
                    ));
                }
            }
            Err(_) => problems.push(format!("{path} is frozen but missing")),
        }
    }
    Ok(problems)
}

/// Pins (in [`FROZEN_FILE`]) every file of an older version's directory of any kind
/// that is not pinned yet — the goldens a version bump just made old, as the previous
/// code wrote them. Never changes an existing pin. Returns the paths pinned.
pub fn pin_old(formats_dir: &Path) -> io::Result<Vec<String>> {
    let mut pins = frozen(formats_dir)?;
    let mut added = Vec::new();
    for kind in Kind::ALL {
        for version in kind.versions(formats_dir)? {
            if version >= kind.current_version() {
                continue;
            }
            for name in files_of(&kind.dir(formats_dir, version))? {
                let r = rel(kind, version, &name);
                if pins.iter().any(|(p, _)| *p == r) {
                    continue;
                }
                let bytes = std::fs::read(kind.dir(formats_dir, version).join(&name))?;
                pins.push((r.clone(), blake3::hash(&bytes).to_hex().to_string()));
                added.push(r);
            }
        }
    }
    if !added.is_empty() {
        pins.sort();
        let mut text = String::from(
            "# BLAKE3 of every frozen format golden (older versions' files): never edit a\n\
             # pinned line; `cargo xtask fixtures` adds the files a version bump made old.\n",
        );
        for (path, hash) in &pins {
            let _ = writeln!(text, "{hash}  {path}");
        }
        std::fs::write(formats_dir.join(FROZEN_FILE), text)?;
    }
    Ok(added)
}

/// Opens the index of `journal` on `vfs` read-only (nothing saved).
pub fn open_index(vfs: Arc<dyn Vfs>, journal: &Path) -> io::Result<(Index, IndexStatus)> {
    let (index, report) = Index::open_or_rebuild(
        journal,
        OpenIndexOptions {
            vfs,
            save: false,
            sync_journal: false,
            ..OpenIndexOptions::default()
        },
    )
    .map_err(io_other)?;
    Ok((index, report.status))
}
