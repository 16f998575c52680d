//! Format evolution of the imports registry: the goldens of every registry line
//! version (`tests/fixtures/formats/registry/v<N>/`: two legacy sources, the journals
//! their imports wrote, the registry), read by this code. Lines of the current version
//! are read; a line of another version is ignored like any line that cannot be
//! checked, and a re-import is still recognised from the journal's own source frame
//! (`docs/format.md` §2.9, §4).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use session_import::format::REGISTRY_VERSION;
use session_import::registry::{self, REGISTRY_FILE};
use session_import::{Destination, import};
use session_journal::vfs::Vfs;
use session_testkit::formats::{
    FORMATS_DIR, Kind, REGISTRY_SESSIONS_DIR, REGISTRY_SOURCE_DIR, REGISTRY_SOURCES, check,
    describe_registry, load_into, registry_import_options, write_current,
};
use session_testkit::sim::SimFs;

fn formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(FORMATS_DIR)
}

/// The current version's goldens regenerate byte for byte (`FORMATS_REGENERATE=1`
/// writes them instead) and older versions' are pinned and unchanged.
#[test]
fn registry_goldens_are_current_and_old_ones_frozen() {
    if std::env::var_os("FORMATS_REGENERATE").is_some() {
        write_current(&formats_dir(), Kind::Registry).unwrap();
    }
    let problems = check(&formats_dir(), Kind::Registry).unwrap();
    assert!(
        problems.is_empty(),
        "registry goldens (run `cargo xtask fixtures`):\n{}",
        problems.join("\n")
    );
}

/// A registry golden on a fresh file system where it was written: the sources in
/// their directory, the journals and the registry in the sessions directory.
fn load(version: u32) -> SimFs {
    let fs = SimFs::new();
    let dir = Kind::Registry.dir(&formats_dir(), version);
    let sessions = Path::new(REGISTRY_SESSIONS_DIR);
    load_into(&fs, &dir, sessions).unwrap();
    fs.create_dir_all(Path::new(REGISTRY_SOURCE_DIR)).unwrap();
    for name in REGISTRY_SOURCES {
        let from = sessions.join(name);
        let bytes = fs.read_raw(&from).unwrap();
        fs.remove_file(&from).unwrap();
        fs.write_raw(&Path::new(REGISTRY_SOURCE_DIR).join(name), &bytes);
    }
    fs
}

/// What re-importing every source of a loaded golden answers, and the files that
/// changed.
fn reimports(fs: &SimFs) -> (String, Vec<PathBuf>) {
    let before: Vec<(PathBuf, Vec<u8>)> = fs
        .list()
        .into_iter()
        .map(|p| {
            let b = fs.read_raw(&p).unwrap();
            (p, b)
        })
        .collect();
    let mut out = String::new();
    for name in REGISTRY_SOURCES {
        let o = import(
            &Path::new(REGISTRY_SOURCE_DIR).join(name),
            &Destination::Dir(PathBuf::from(REGISTRY_SESSIONS_DIR)),
            &registry_import_options(fs),
        )
        .unwrap();
        let _ = writeln!(
            out,
            "{name}: already_imported={} session_id={:?} journal={}",
            o.already_imported,
            o.session_id,
            o.journal.display()
        );
    }
    let after: Vec<(PathBuf, Vec<u8>)> = fs
        .list()
        .into_iter()
        .map(|p| {
            let b = fs.read_raw(&p).unwrap();
            (p, b)
        })
        .collect();
    let changed = after
        .iter()
        .filter(|a| !before.contains(a))
        .map(|(p, _)| p.clone())
        .collect();
    (out, changed)
}

/// Every registry golden, read by this code: the current version's lines are read;
/// an older version's are ignored (and the sources are still found imported, from
/// their journals). The snapshot holds the lines read and the re-imports' answers.
#[test]
fn every_registry_golden_reads_to_its_snapshot() {
    let versions = Kind::Registry.versions(&formats_dir()).unwrap();
    assert!(versions.contains(&REGISTRY_VERSION), "{versions:?}");
    for version in versions {
        let fs = load(version);
        let lines = registry::read(&fs, Path::new(REGISTRY_SESSIONS_DIR)).unwrap();
        if version == REGISTRY_VERSION {
            assert_eq!(lines.len(), REGISTRY_SOURCES.len(), "v{version}");
        } else {
            assert!(lines.is_empty(), "v{version}: {lines:?}");
        }
        let (answers, changed) = reimports(&fs);
        if version == REGISTRY_VERSION {
            assert_eq!(
                changed,
                Vec::<PathBuf>::new(),
                "v{version}: a re-import wrote"
            );
        }
        let text = format!("{}{answers}", describe_registry(&lines));
        insta::assert_snapshot!(format!("registry-v{version}"), text);
    }
}

/// The rule for a registry line of another version, on the golden's lines: an older
/// (`"v":0`) or newer (`"v":2`) line is ignored, never misread; a line without `"v"`
/// (written before versions) is version 1; and with only ignored lines a re-import is
/// still recognised from the journal's own source frame (which appends lines of the
/// current version).
#[test]
fn registry_lines_of_another_version_are_ignored() {
    let fs = load(REGISTRY_VERSION);
    let sessions = Path::new(REGISTRY_SESSIONS_DIR);
    let path = sessions.join(REGISTRY_FILE);
    let golden = String::from_utf8(fs.read_raw(&path).unwrap()).unwrap();
    let current = format!("{{\"v\":{REGISTRY_VERSION},");
    let golden_lines: Vec<&str> = golden.lines().collect();
    assert!(
        golden_lines.iter().all(|l| l.starts_with(&current)),
        "{golden}"
    );
    let first = registry::read(&fs, sessions).unwrap().remove(0);

    for other in [REGISTRY_VERSION - 1, REGISTRY_VERSION + 1] {
        let text: String = golden_lines
            .iter()
            .map(|l| l.replacen(&current, &format!("{{\"v\":{other},"), 1) + "\n")
            .collect();
        fs.write_raw(&path, text.as_bytes());
        assert_eq!(
            registry::read(&fs, sessions).unwrap(),
            Vec::new(),
            "v{other}"
        );
        let (answers, changed) = reimports(&fs);
        assert_eq!(
            answers.matches("already_imported=true").count(),
            REGISTRY_SOURCES.len(),
            "v{other}: {answers}"
        );
        // Only the registry was written: the current version's lines, appended.
        assert_eq!(changed, vec![path.clone()], "v{other}");
        assert_eq!(
            registry::read(&fs, sessions).unwrap().len(),
            REGISTRY_SOURCES.len(),
            "v{other}"
        );
    }

    // Without "v": version 1 (read while 1 is the current version).
    let unversioned = golden_lines[0].replacen(&current, "{", 1) + "\n";
    fs.write_raw(&path, unversioned.as_bytes());
    let read = registry::read(&fs, sessions).unwrap();
    if REGISTRY_VERSION == 1 {
        assert_eq!(read, vec![first]);
    } else {
        assert_eq!(read, Vec::new());
    }
}
