//! `cargo xtask protocol [--check]`: the owner protocol's JSON Schema and TypeScript
//! definitions, generated from the Rust types of `session-protocol`.
//!
//! The schema is `session_protocol::schema::bundle()` (schemars derives on the wire
//! types, the method and notification maps from their tables), written as
//! `crates/session-protocol/schema/protocol.schema.json`. The TypeScript definitions in
//! `clients/typescript/src/generated/` are made from that schema ([`typescript`]), so
//! the two cannot disagree. `--check` writes nothing and fails, naming the file, when
//! a committed file differs from what the types give (a test runs it).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub(crate) mod typescript;

/// The committed schema, relative to the workspace root.
pub(crate) const SCHEMA_FILE: &str = "crates/session-protocol/schema/protocol.schema.json";
/// The directory of the generated TypeScript, relative to the workspace root.
pub(crate) const TS_DIR: &str = "clients/typescript/src/generated";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        _ => bail!("usage: cargo xtask protocol [--check]"),
    };
    let root = crate::workspace_root();
    let files = generate()?;
    if check {
        let stale = stale_files(&root, &files)?;
        if !stale.is_empty() {
            for s in &stale {
                eprintln!("protocol: {s}");
            }
            bail!(
                "{} generated protocol file(s) are stale: run `cargo xtask protocol` and commit the result",
                stale.len()
            );
        }
        println!("protocol: ok ({} files up to date)", files.len());
        return Ok(());
    }
    for (rel, contents) in &files {
        let path = root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
            std::fs::write(&path, contents)
                .with_context(|| format!("writing {}", path.display()))?;
            println!("protocol: wrote {rel}");
        }
    }
    for extra in extra_files(&root, &files)? {
        std::fs::remove_file(root.join(&extra)).with_context(|| format!("removing {extra}"))?;
        println!("protocol: removed {extra} (no longer generated)");
    }
    Ok(())
}

/// Every generated file: its path relative to the workspace root and its contents.
pub(crate) fn generate() -> Result<Vec<(String, String)>> {
    let bundle = session_protocol::schema::bundle()?;
    let mut schema = serde_json::to_string_pretty(&bundle).context("serializing the schema")?;
    schema.push('\n');
    let mut files = vec![(SCHEMA_FILE.to_owned(), schema)];
    for (name, contents) in typescript::generate(&bundle)? {
        files.push((format!("{TS_DIR}/{name}"), contents));
    }
    Ok(files)
}

/// What differs between the committed files under `root` and `files`: one line per
/// stale, missing or no-longer-generated file, naming it.
pub(crate) fn stale_files(root: &Path, files: &[(String, String)]) -> Result<Vec<String>> {
    let mut stale = Vec::new();
    for (rel, contents) in files {
        match std::fs::read_to_string(root.join(rel)) {
            Ok(committed) if committed == *contents => {}
            Ok(committed) => stale.push(format!(
                "{rel} is stale (differs from the Rust types from line {})",
                first_difference(&committed, contents)
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                stale.push(format!("{rel} is missing"));
            }
            Err(e) => return Err(e).with_context(|| format!("reading {rel}")),
        }
    }
    for extra in extra_files(root, files)? {
        stale.push(format!("{extra} is no longer generated"));
    }
    Ok(stale)
}

/// The 1-based line where `a` and `b` first differ.
fn first_difference(a: &str, b: &str) -> usize {
    a.lines()
        .zip(b.lines())
        .position(|(x, y)| x != y)
        .unwrap_or_else(|| a.lines().count().min(b.lines().count()))
        + 1
}

/// Files in the generated TypeScript directory that `files` does not contain.
fn extra_files(root: &Path, files: &[(String, String)]) -> Result<Vec<String>> {
    let dir: PathBuf = root.join(TS_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    let mut extra = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let rel = format!("{TS_DIR}/{}", entry.file_name().to_string_lossy());
        if !files.iter().any(|(f, _)| *f == rel) {
            extra.push(rel);
        }
    }
    extra.sort();
    Ok(extra)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed schema and TypeScript are what the Rust types give: change a
    /// wire type, and this fails until `cargo xtask protocol` is run.
    #[test]
    fn committed_protocol_files_are_current() {
        let files = generate().expect("generates");
        let stale = stale_files(&crate::workspace_root(), &files).expect("reads");
        assert!(
            stale.is_empty(),
            "{}\nrun `cargo xtask protocol` and commit the result",
            stale.join("\n")
        );
    }

    #[test]
    fn a_changed_file_is_named_with_its_first_differing_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = vec![
            (SCHEMA_FILE.to_owned(), "a\nb\nc\n".to_owned()),
            (format!("{TS_DIR}/index.ts"), "x\n".to_owned()),
        ];
        std::fs::create_dir_all(dir.path().join(TS_DIR)).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("crates/session-protocol/schema")).expect("mkdir");
        std::fs::write(dir.path().join(SCHEMA_FILE), "a\nB\nc\n").expect("write");
        std::fs::write(dir.path().join(TS_DIR).join("old.ts"), "").expect("write");
        let stale = stale_files(dir.path(), &files).expect("reads");
        assert_eq!(
            stale,
            [
                format!("{SCHEMA_FILE} is stale (differs from the Rust types from line 2)"),
                format!("{TS_DIR}/index.ts is missing"),
                format!("{TS_DIR}/old.ts is no longer generated"),
            ]
        );
        std::fs::write(dir.path().join(TS_DIR).join("index.ts"), "x\n").expect("write");
        std::fs::write(dir.path().join(SCHEMA_FILE), "a\nb\nc\n").expect("write");
        std::fs::remove_file(dir.path().join(TS_DIR).join("old.ts")).expect("rm");
        assert!(stale_files(dir.path(), &files).expect("reads").is_empty());
    }
}
