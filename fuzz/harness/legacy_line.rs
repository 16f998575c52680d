//! Fuzz harness of the legacy line parsers and the legacy import, shared by the
//! cargo-fuzz target `fuzz/fuzz_targets/legacy_line.rs` and the replay test
//! `crates/session-import/tests/it/fuzz_replay.rs`.
//!
//! Byte 0 of the input picks the file: odd — a valid v3 session header line, then the
//! rest of the input; even — the rest of the input alone. Every UTF-8 line goes
//! through `Record::parse`, `Entry::parse` and `Envelope::parse`; then the whole file
//! is imported into a fresh temporary sessions directory (the real file system: the
//! import has no VFS).
//!
//! Invariants (a panic is a finding): no parser panics; the source is byte-identical
//! after the import; a refused import leaves no journal behind; an accepted import
//! gives a journal that verifies, indexes, exports, and whose export imports again
//! with the same number of entries.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use session_import::{Destination, ImportOptions, export, import};
use session_index::{Index, OpenIndexOptions};
use session_journal::{Clock, VerifyOptions};
use session_types::{Entry, Envelope, Record};

const HEADER: &[u8] = br#"{"type":"session","version":3,"id":"fuzz-1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}
"#;

/// A fresh directory under the system temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "bcs-fuzz-legacy-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create the scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn journals_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default()
}

fn options() -> ImportOptions {
    ImportOptions {
        clock: Clock::fixed(0),
        ..ImportOptions::default()
    }
}

/// Runs one input; panics only when an invariant above breaks.
pub fn exercise(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut file = Vec::with_capacity(rest.len() + HEADER.len());
    if mode % 2 == 1 {
        file.extend_from_slice(HEADER);
    }
    file.extend_from_slice(rest);
    for line in file.split(|b| *b == b'\n') {
        if let Ok(text) = std::str::from_utf8(line) {
            let _ = Record::parse(text);
            let _ = Entry::parse(text);
            let _ = Envelope::parse(text);
        }
    }

    let scratch = Scratch::new();
    let source = scratch.0.join("source.jsonl");
    std::fs::write(&source, &file).expect("write the source");
    let sessions = scratch.0.join("sessions");
    std::fs::create_dir_all(&sessions).expect("create the sessions dir");
    let result = import(&source, &Destination::Dir(sessions.clone()), &options());
    assert_eq!(
        std::fs::read(&source).expect("read the source"),
        file,
        "the import modified its source"
    );
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            let left = journals_in(&sessions);
            assert!(left.is_empty(), "refused import ({e}) left {left:?}");
            return;
        }
    };
    let journal = outcome.journal.clone();
    let verified = session_journal::verify(&journal, &VerifyOptions::default());
    assert!(
        verified.is_ok(),
        "imported journal does not verify: {verified:?}"
    );
    let indexed = Index::open_or_rebuild(&journal, OpenIndexOptions::default());
    assert!(
        indexed.is_ok(),
        "imported journal does not index: {:?}",
        indexed.err()
    );
    let exported = scratch.0.join("exported.jsonl");
    let ex = export(&journal, &exported);
    assert!(
        ex.is_ok(),
        "imported journal does not export: {:?}",
        ex.err()
    );
    let again_dir = scratch.0.join("again");
    std::fs::create_dir_all(&again_dir).expect("create the second sessions dir");
    match import(&exported, &Destination::Dir(again_dir), &options()) {
        Ok(again) => assert_eq!(
            again.entries, outcome.entries,
            "re-importing the export changed the entry count"
        ),
        Err(e) => panic!("the export of an import does not import: {e}"),
    }
}
