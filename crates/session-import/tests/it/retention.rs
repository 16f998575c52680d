//! Retention records: present for imported entries, absent for native appends.

use session_import::{format::ENTRY, import_source, retention};
use session_journal::{Durability, OpenOptions, Writer};

use super::support::*;

#[test]
fn imported_entries_name_their_source_line() {
    let dir = tempfile::tempdir().unwrap();
    let source = fixtures().join("edge/malformed-lines.jsonl");
    let outcome = import_into(&source, dir.path()).unwrap();
    let r = retention(&outcome.journal, "e0000403").unwrap().unwrap();
    assert_eq!(r.line, 8);
    assert_eq!(r.source_version, 3);
    assert_eq!(r.blake3, outcome.source.blake3);
    assert_eq!(r.path, std::path::absolute(&source).unwrap());
    assert!(!r.changed);
    let src = import_source(&outcome.journal).unwrap().unwrap();
    assert_eq!(src.header_line, 1);

    // A natively appended entry has no retention record.
    let (mut w, _) = Writer::open(&outcome.journal, OpenOptions::default()).unwrap();
    w.append(
        ENTRY,
        entry("native1", Some("e0000404")).as_bytes(),
        Durability::Durable,
    )
    .unwrap();
    drop(w);
    assert_eq!(retention(&outcome.journal, "native1").unwrap(), None);
    assert_eq!(retention(&outcome.journal, "no-such-id").unwrap(), None);
}

#[test]
fn migrated_entries_are_marked_changed() {
    let dir = tempfile::tempdir().unwrap();
    let outcome = import_into(&fixtures().join("legacy/v2-hookmessage.jsonl"), dir.path()).unwrap();
    let renamed = retention(&outcome.journal, "e0000105").unwrap().unwrap();
    assert!(renamed.changed);
    assert_eq!((renamed.line, renamed.source_version), (6, 2));
    let kept = retention(&outcome.journal, "e0000102").unwrap().unwrap();
    assert!(!kept.changed);
}
