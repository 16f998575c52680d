//! Format evolution of the derived files: the index sidecar and listing catalog
//! goldens of every version (`tests/fixtures/formats/{sidecar,catalog}/v<N>/`), opened
//! by this code. The current version's are read as they are; any other version's
//! (older or newer) is rebuilt from the journals, never read, with the same answers
//! (`docs/format.md` §2.9).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use session_index::{
    CATALOG_FILE, CATALOG_VERSION, CatalogStatus, Index, IndexStatus, ListOptions,
    OpenIndexOptions, RebuildReason, SIDECAR_VERSION, list_sessions, sidecar_path,
};
use session_journal::vfs::Vfs;
use session_testkit::formats::{
    FORMATS_DIR, Kind, check, describe_index, describe_list_report, describe_listing, load_into,
    open_index, write_current,
};
use session_testkit::sim::SimFs;

fn formats_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(FORMATS_DIR)
}

/// The current versions' goldens regenerate byte for byte (`FORMATS_REGENERATE=1`
/// writes them instead) and older versions' are pinned and unchanged.
#[test]
fn sidecar_and_catalog_goldens_are_current_and_old_ones_frozen() {
    for kind in [Kind::Sidecar, Kind::Catalog] {
        if std::env::var_os("FORMATS_REGENERATE").is_some() {
            write_current(&formats_dir(), kind).unwrap();
        }
        let problems = check(&formats_dir(), kind).unwrap();
        assert!(
            problems.is_empty(),
            "{} goldens (run `cargo xtask fixtures`):\n{}",
            kind.name(),
            problems.join("\n")
        );
    }
}

/// A golden directory on a fresh file system at `/s`.
fn load(kind: Kind, version: u32) -> Arc<SimFs> {
    let fs = Arc::new(SimFs::new());
    load_into(&fs, &kind.dir(&formats_dir(), version), Path::new("/s")).unwrap();
    fs
}

const JOURNAL: &str = "/s/golden.jsonl";

/// Every sidecar golden, opened by this code: the current version's is used as it is
/// (no journal frame replayed), another version's is rebuilt from its journal
/// (`UnsupportedVersion`); both answer what the snapshot holds.
#[test]
fn every_sidecar_golden_opens_to_its_snapshot() {
    let versions = Kind::Sidecar.versions(&formats_dir()).unwrap();
    assert!(versions.contains(&SIDECAR_VERSION), "{versions:?}");
    for version in versions {
        let fs = load(Kind::Sidecar, version);
        let (index, status) = open_index(fs.clone(), Path::new(JOURNAL)).unwrap();
        if version == SIDECAR_VERSION {
            assert_eq!(status, IndexStatus::Fresh, "v{version}");
        } else {
            assert_eq!(
                status,
                IndexStatus::Rebuilt {
                    reason: RebuildReason::UnsupportedVersion {
                        found: version,
                        supported: SIDECAR_VERSION
                    }
                },
                "v{version}"
            );
        }
        insta::assert_snapshot!(format!("sidecar-v{version}"), describe_index(&index));
    }
}

/// The current sidecar golden with its version field set to `version` (and its
/// head check recomputed, so only the version differs).
fn sidecar_of_version(version: u32) -> Vec<u8> {
    let dir = Kind::Sidecar.dir(&formats_dir(), SIDECAR_VERSION);
    let bytes = std::fs::read(dir.join("golden.jsonl.idx")).unwrap();
    assert_eq!(bytes[8..12], SIDECAR_VERSION.to_le_bytes());
    crate::support::session_index_with_version(&bytes, version)
}

/// The rule for a sidecar of another version: older (here a crafted header of the
/// previous version; `ids::a_version_7_sidecar_is_rebuilt_not_misread` reads a real
/// version 7 one) and newer are both rebuilt from the journal, never read — the same
/// answers as the current sidecar — and the rebuild saves a sidecar of the current
/// version, byte for byte the golden.
#[test]
fn a_sidecar_of_another_version_is_rebuilt_from_the_journal_never_misread() {
    let fs = load(Kind::Sidecar, SIDECAR_VERSION);
    let journal = Path::new(JOURNAL);
    let golden = fs.read_raw(&sidecar_path(journal)).unwrap();
    let (fresh, status) = open_index(fs.clone(), journal).unwrap();
    assert_eq!(status, IndexStatus::Fresh);
    for version in [SIDECAR_VERSION - 1, SIDECAR_VERSION + 1] {
        fs.write_raw(&sidecar_path(journal), &sidecar_of_version(version));
        let (index, status) = open_index(fs.clone(), journal).unwrap();
        assert_eq!(
            status,
            IndexStatus::Rebuilt {
                reason: RebuildReason::UnsupportedVersion {
                    found: version,
                    supported: SIDECAR_VERSION
                }
            },
            "v{version}"
        );
        assert_eq!(describe_index(&index), describe_index(&fresh), "v{version}");
        // An open that may write replaces it with the current version's.
        let (_, report) = Index::open_or_rebuild(
            journal,
            OpenIndexOptions {
                vfs: fs.clone(),
                ..OpenIndexOptions::default()
            },
        )
        .unwrap();
        assert!(report.saved_coverage.is_some(), "v{version}: {report:?}");
        assert!(
            fs.read_raw(&sidecar_path(journal)).unwrap() == golden,
            "v{version}: the rebuilt sidecar is not the golden"
        );
    }
}

/// Lists the golden catalog directory at `/s` without writing.
fn list_read_only(fs: &Arc<SimFs>) -> (String, session_index::ListReport) {
    let (infos, report) = list_sessions(
        Path::new("/s"),
        &ListOptions {
            vfs: fs.clone(),
            read_only: true,
            ..ListOptions::default()
        },
    )
    .unwrap();
    (describe_listing(&infos), report)
}

/// Every catalog golden, listed by this code: the current version's records are used
/// (checked against their journals' content in O(1), since a copied file has a new
/// inode and change time; no journal opened through its index), another version's
/// catalog is rebuilt from the journals; both list what the snapshot holds.
#[test]
fn every_catalog_golden_lists_to_its_snapshot() {
    let versions = Kind::Catalog.versions(&formats_dir()).unwrap();
    assert!(versions.contains(&CATALOG_VERSION), "{versions:?}");
    for version in versions {
        let fs = load(Kind::Catalog, version);
        let (listing, report) = list_read_only(&fs);
        if version == CATALOG_VERSION {
            assert_eq!(
                report.journals_opened,
                0,
                "{}",
                describe_list_report(&report)
            );
            assert_eq!(
                report.journals_checked,
                2,
                "{}",
                describe_list_report(&report)
            );
        } else {
            assert!(
                matches!(&report.catalog, CatalogStatus::Rebuilt { reason }
                    if reason.contains(&format!("catalog version {version} unsupported"))),
                "v{version}: {}",
                describe_list_report(&report)
            );
        }
        insta::assert_snapshot!(format!("catalog-v{version}"), listing);
    }
}

/// The current catalog golden with its version field set to `version` (and its
/// header check recomputed, so only the version differs).
fn catalog_of_version(version: u32) -> Vec<u8> {
    let dir = Kind::Catalog.dir(&formats_dir(), CATALOG_VERSION);
    let mut bytes = std::fs::read(dir.join(CATALOG_FILE)).unwrap();
    assert_eq!(bytes[8..12], CATALOG_VERSION.to_le_bytes());
    bytes[8..12].copy_from_slice(&version.to_le_bytes());
    let check = xxhash_rust::xxh3::xxh3_64(&bytes[..40]);
    bytes[40..48].copy_from_slice(&check.to_le_bytes());
    bytes
}

/// The rule for a catalog of another version: older (a crafted header of the
/// previous version) and newer are both rebuilt from the journals' indexes, never
/// read, listing the same sessions; a listing that may write replaces it with a
/// catalog of the current version.
#[test]
fn a_catalog_of_another_version_is_rebuilt_never_misread() {
    let fs = load(Kind::Catalog, CATALOG_VERSION);
    let catalog = Path::new("/s").join(CATALOG_FILE);
    let (current, _) = list_read_only(&fs);
    for version in [CATALOG_VERSION - 1, CATALOG_VERSION + 1] {
        fs.write_raw(&catalog, &catalog_of_version(version));
        let (listing, report) = list_read_only(&fs);
        assert_eq!(
            report.catalog,
            CatalogStatus::Rebuilt {
                reason: format!(
                    "catalog version {version} unsupported (supported: {CATALOG_VERSION})"
                )
            },
            "v{version}"
        );
        assert_eq!(report.journals_opened, 2, "v{version}");
        assert_eq!(listing, current, "v{version}");
        let (_, report) = list_sessions(
            Path::new("/s"),
            &ListOptions {
                vfs: fs.clone(),
                ..ListOptions::default()
            },
        )
        .unwrap();
        assert_eq!(report.save_error, None);
        let rewritten = fs.read_raw(&catalog).unwrap();
        assert_eq!(
            rewritten[8..12],
            CATALOG_VERSION.to_le_bytes(),
            "v{version}"
        );
        let (_, report) = list_read_only(&fs);
        assert!(
            !matches!(report.catalog, CatalogStatus::Rebuilt { .. }),
            "v{version}: {}",
            describe_list_report(&report)
        );
        for p in fs.list() {
            if p.to_string_lossy().ends_with(".idx") {
                fs.remove_file(&p).unwrap();
            }
        }
    }
}
