//! The imports registry is never trusted for identity; its one owner rewrites it
//! atomically; concurrent imports of one source converge; killed imports' leftovers
//! are found and removed.

use std::path::{Path, PathBuf};

use session_import::registry::{self, REGISTRY_FILE, RegistryLine};
use session_journal::vfs::StdVfs;

use crate::support::{fixtures, import_into};

fn source() -> PathBuf {
    fixtures().join("legacy/v2-hookmessage.jsonl")
}

fn other_source() -> PathBuf {
    fixtures().join("legacy/v3-control.jsonl")
}

/// The session journals of `dir` (not hidden, `*.jsonl`).
fn journals(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jsonl") && !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

/// Builds a registry line for a case, preparing the case's directory.
type MakeLine<'a> = dyn Fn(&Path) -> RegistryLine + 'a;

fn plant(dir: &Path, line: &RegistryLine) {
    std::fs::create_dir_all(dir).unwrap();
    let mut text = serde_json::to_string(line).unwrap();
    text.push('\n');
    std::fs::write(dir.join(REGISTRY_FILE), text).unwrap();
}

/// A registry line whose journal is not a plain name of a regular file in the
/// registry's directory that is an import of the line's source is ignored: the import
/// proceeds as new, into this directory.
#[test]
fn registry_lines_that_their_journal_does_not_prove_are_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    // A real import of the source, elsewhere.
    let elsewhere = tmp.path().join("elsewhere");
    let real = import_into(&source(), &elsewhere).unwrap();
    let hash = real.source.blake3.clone();
    let real_name = real
        .journal
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let line = |journal: String| RegistryLine {
        version: 1,
        blake3: hash.clone(),
        session_id: real.session_id.clone(),
        journal,
    };
    let mut cases: Vec<(&str, Box<MakeLine<'_>>)> = vec![
        (
            "absolute path",
            Box::new(|_| line(real.journal.to_str().unwrap().to_owned())),
        ),
        (
            "parent directory",
            Box::new(|_| line(format!("../elsewhere/{real_name}"))),
        ),
        ("missing journal", Box::new(|_| line("ghost.jsonl".into()))),
        (
            "hidden name",
            Box::new(|d: &Path| {
                std::fs::copy(&real.journal, d.join(".hidden.jsonl")).unwrap();
                line(".hidden.jsonl".into())
            }),
        ),
        (
            "import of another source",
            Box::new(|d: &Path| {
                let other = import_into(&other_source(), d).unwrap();
                line(
                    other
                        .journal
                        .file_name()
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_owned(),
                )
            }),
        ),
    ];
    #[cfg(unix)]
    cases.push((
        "symlink to a journal elsewhere",
        Box::new(|d: &Path| {
            std::os::unix::fs::symlink(&real.journal, d.join("link.jsonl")).unwrap();
            line("link.jsonl".into())
        }),
    ));
    for (k, (what, make)) in cases.iter().enumerate() {
        let dir = tmp.path().join(format!("case-{k}"));
        std::fs::create_dir_all(&dir).unwrap();
        let planted = make(&dir);
        // Keep lines the case wrote (an import of another source) after the planted one.
        let before = std::fs::read(dir.join(REGISTRY_FILE)).unwrap_or_default();
        plant(&dir, &planted);
        let mut reg = std::fs::read(dir.join(REGISTRY_FILE)).unwrap();
        reg.extend_from_slice(&before);
        std::fs::write(dir.join(REGISTRY_FILE), reg).unwrap();
        let out = import_into(&source(), &dir).unwrap();
        assert!(!out.already_imported, "{what}: trusted the registry");
        assert_eq!(out.journal, dir.join(&real_name), "{what}");
        assert!(out.journal.is_file(), "{what}");
        // And the import is now recorded properly: a re-import is recognised.
        let again = import_into(&source(), &dir).unwrap();
        assert!(again.already_imported, "{what}");
        assert_eq!(again.journal, out.journal, "{what}");
    }
}

/// A line naming the right journal with another session id: the answer's session id
/// is the journal's own, never the line's.
#[test]
fn a_registry_lines_session_id_is_never_reported() {
    let dir = tempfile::tempdir().unwrap();
    let real = import_into(&source(), dir.path()).unwrap();
    plant(
        dir.path(),
        &RegistryLine {
            version: 1,
            blake3: real.source.blake3.clone(),
            session_id: "ghost".into(),
            journal: real.journal.file_name().unwrap().to_str().unwrap().into(),
        },
    );
    let again = import_into(&source(), dir.path()).unwrap();
    assert!(again.already_imported);
    assert_eq!(again.session_id, real.session_id);
    assert_eq!(again.journal, real.journal);
}

#[test]
fn journal_names_are_plain_file_names() {
    for bad in [
        "",
        ".",
        "..",
        "../x.jsonl",
        "/abs.jsonl",
        "a/b.jsonl",
        "a\\b.jsonl",
        ".h.jsonl",
    ] {
        assert!(!registry::is_journal_name(bad), "{bad:?}");
    }
    assert!(registry::is_journal_name("s-1.jsonl"));
}

#[cfg(unix)]
#[test]
fn remove_rewrites_the_registry_privately_and_keeps_other_lines_byte_for_byte() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = import_into(&source(), d).unwrap();
    let b = import_into(&other_source(), d).unwrap();
    let reg = d.join(REGISTRY_FILE);
    // Lines the registry owner did not write stay as they are too.
    let mut text = std::fs::read(&reg).unwrap();
    text.extend_from_slice(b"not json, kept\n");
    std::fs::write(&reg, &text).unwrap();
    std::fs::set_permissions(&reg, std::fs::Permissions::from_mode(0o644)).unwrap();
    let a_name = a.journal.file_name().unwrap().to_str().unwrap();
    let b_name = b.journal.file_name().unwrap().to_str().unwrap();

    assert!(registry::remove(&StdVfs, d, a_name).unwrap());
    let after = std::fs::read(&reg).unwrap();
    let kept: Vec<&[u8]> = text
        .split_inclusive(|c| *c == b'\n')
        .filter(|l| !l.windows(a_name.len()).any(|w| w == a_name.as_bytes()))
        .collect();
    assert_eq!(after, kept.concat());
    assert!(after.windows(b_name.len()).any(|w| w == b_name.as_bytes()));
    let mode = std::fs::metadata(&reg).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let lines = registry::read(&StdVfs, d).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].journal, b_name);
    // Nothing left behind but the registry and the journals' own files.
    assert!(
        std::fs::read_dir(d).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp"))
    );
    // Nothing to remove, or no registry: no change, no error.
    assert!(!registry::remove(&StdVfs, d, a_name).unwrap());
    assert_eq!(std::fs::read(&reg).unwrap(), after);
    std::fs::remove_file(&reg).unwrap();
    assert!(!registry::remove(&StdVfs, d, b_name).unwrap());
    assert!(!reg.exists());
}

#[cfg(unix)]
#[test]
fn a_fifo_at_the_registry_neither_blocks_an_import_nor_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.path().join(REGISTRY_FILE))
        .status()
        .unwrap();
    assert!(status.success());
    let out = import_into(&source(), dir.path()).unwrap();
    assert!(!out.already_imported);
    assert!(import_into(&source(), dir.path()).unwrap().already_imported);
}

/// Many importers of one source at once: exactly one journal, every importer succeeds,
/// exactly one of them imported it.
#[test]
fn concurrent_imports_of_one_source_converge() {
    for round in 0..4 {
        let dir = tempfile::tempdir().unwrap();
        let n = 8;
        let barrier = std::sync::Barrier::new(n);
        let outcomes: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        session_import::import(
                            &source(),
                            &session_import::Destination::Dir(dir.path().to_path_buf()),
                            &crate::support::options(),
                        )
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let outcomes: Vec<_> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|e| panic!("round {round}: {e}")))
            .collect();
        assert_eq!(
            outcomes.iter().filter(|o| !o.already_imported).count(),
            1,
            "round {round}"
        );
        assert!(outcomes.iter().all(|o| o.journal == outcomes[0].journal));
        assert!(
            outcomes
                .iter()
                .all(|o| o.session_id == outcomes[0].session_id)
        );
        assert_eq!(journals(dir.path()).len(), 1, "round {round}");
        assert_eq!(
            session_import::leftover_imports(&StdVfs, dir.path()).unwrap(),
            Vec::<PathBuf>::new()
        );
    }
}

/// What a killed import leaves (its temporary journal and holder record) is listed and
/// removed; a temporary a live import holds is listed but kept.
#[test]
fn leftover_import_temporaries_are_listed_and_the_unheld_ones_removed() {
    use session_journal::vfs::{OpenMode, Vfs};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    import_into(&source(), d).unwrap();
    let dead = d.join(".s.jsonl.import-0123456789abcdef.tmp");
    let dead_record = d.join(".s.jsonl.import-0123456789abcdef.tmp.lock");
    let old_style = d.join(".t.jsonl.import-4242-123456789.tmp");
    let orphan_record = d.join(".u.jsonl.import-fedcba9876543210.tmp.lock");
    let live = d.join(".v.jsonl.import-00000000000000ff.tmp");
    for p in [&dead, &dead_record, &old_style, &orphan_record, &live] {
        std::fs::write(p, b"x").unwrap();
    }
    // Not leftovers: other hidden files, and a directory or link with the pattern.
    std::fs::create_dir(d.join(".w.jsonl.import-0000000000000001.tmp")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&live, d.join(".x.jsonl.import-0000000000000002.tmp")).unwrap();
    let held = StdVfs.open(&live, OpenMode::ReadWrite).unwrap();
    assert!(held.try_lock().unwrap());

    let mut listed = vec![
        dead.clone(),
        dead_record.clone(),
        old_style.clone(),
        orphan_record.clone(),
        live.clone(),
    ];
    listed.sort();
    assert_eq!(
        session_import::leftover_imports(&StdVfs, d).unwrap(),
        listed
    );
    let removed = session_import::remove_leftover_imports(&StdVfs, d).unwrap();
    let mut want = vec![dead, dead_record, old_style, orphan_record];
    want.sort();
    assert_eq!(removed, want);
    assert_eq!(
        session_import::leftover_imports(&StdVfs, d).unwrap(),
        std::slice::from_ref(&live)
    );
    // Once its holder is gone, it is removed too.
    drop(held);
    assert_eq!(
        session_import::remove_leftover_imports(&StdVfs, d).unwrap(),
        [live]
    );
    assert_eq!(journals(d).len(), 1);
}

/// A FIFO given as the source is refused at once, never waited on.
#[cfg(unix)]
#[test]
fn a_fifo_source_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("src.jsonl");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let err = session_import::import(
        &fifo,
        &session_import::Destination::Dir(dir.path().join("s")),
        &crate::support::options(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("not a regular file"), "{err}");
}

/// The registry's lines are versioned: a line written before versions (no `"v"`) is
/// version 1 and still recognised; a line of another version is ignored, so the import
/// proceeds as new rather than trusting what it cannot read; new lines say `"v":1`.
#[test]
fn registry_lines_are_versioned() {
    let dir = tempfile::tempdir().unwrap();
    let real = import_into(&source(), dir.path()).unwrap();
    let path = dir.path().join(session_import::format::REGISTRY_FILE);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.starts_with("{\"v\":1,"), "{written}");
    let line = |v: &str| {
        format!(
            "{{{v}\"blake3\":\"{}\",\"sessionId\":\"{}\",\"journal\":\"{}\"}}\n",
            real.source.blake3,
            real.session_id,
            real.journal.file_name().unwrap().to_str().unwrap()
        )
    };
    std::fs::write(&path, line("")).unwrap();
    let lines = session_import::registry::read(&session_journal::vfs::StdVfs, dir.path()).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].version, 1);
    std::fs::write(&path, line("\"v\":2,")).unwrap();
    let lines = session_import::registry::read(&session_journal::vfs::StdVfs, dir.path()).unwrap();
    assert!(lines.is_empty(), "{lines:?}");
}
