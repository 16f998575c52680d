//! Fuzz harness of the index sidecar decoder (`<journal>.idx`), shared by the
//! cargo-fuzz target `fuzz/fuzz_targets/index_sidecar.rs` and the replay test
//! `crates/session-index/tests/it/fuzz_replay.rs`.
//!
//! The sidecar decoder is private to session-index, so the harness goes through
//! `Index::open_or_rebuild` on a `SimFs`: a small valid journal (the
//! `labels-names-roots` edge fixture) and fuzzed bytes written as its sidecar.
//!
//! Byte 0 of the input picks the image (`% 6`) and whether the open saves (`/ 6 % 2`):
//!
//! - 0: the raw input is the sidecar;
//! - 1: the valid sidecar of the whole journal, XOR-patched;
//! - 2: the valid sidecar of the journal's first half (so the open catches up), patched;
//! - 3, 4: as 1, 2, with the checks recomputed after patching (the pages' XXH3-64 and
//!   the head's XXH3-128, `session_index::sidecar_reseal`), so the decoder's
//!   structural checks (counts, spans, codes, aggregates, page contents) are reached;
//! - 5: the raw input, resealed the same way.
//!
//! A patch is `[at_lo, at_hi, cut, xor…]`: XOR from offset `at % len`, then drop `cut`
//! bytes from the end (before any check is recomputed).
//!
//! Invariants (a panic is a finding): opening never fails (the journal is valid) and
//! never panics; every query on the opened index runs without panicking; unless the
//! checks were forged, every answer equals a rebuild from the journal alone (a damaged
//! sidecar is never answered from); the untouched sidecars are used (`Fresh`,
//! `CaughtUp`); after a saving open, the next open is `Fresh` with the same answers.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use session_index::{EntryIndex, Index, IndexStatus, OpenIndexOptions, sidecar_path};
use session_journal::vfs::Vfs;
use session_journal::{Clock, Durability, NewFrame, OpenOptions, Reader, ReaderOptions, Writer};
use session_testkit::legacy;
use session_testkit::sim::SimFs;

const TEXT: &str = include_str!("../../tests/fixtures/edge/labels-names-roots.jsonl");

/// The fixed inputs every run starts from.
pub struct Base {
    /// The whole journal.
    pub journal: Vec<u8>,
    /// The sidecar saved over the whole journal.
    pub sidecar_full: Vec<u8>,
    /// The sidecar saved over the journal's first half.
    pub sidecar_prefix: Vec<u8>,
    /// The answers of a rebuild from the journal alone.
    pub expected: String,
}

fn journal_path() -> PathBuf {
    PathBuf::from("/s/a.jsonl")
}

fn options(fs: &SimFs, save: bool) -> OpenIndexOptions {
    OpenIndexOptions {
        vfs: Arc::new(fs.clone()),
        save,
        ..OpenIndexOptions::default()
    }
}

/// Builds (once) the journal, both sidecars and the expected answers.
pub fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let fs = SimFs::new();
        fs.create_dir_all(Path::new("/s")).expect("sim mkdir");
        let path = journal_path();
        let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
        let records = legacy::legacy_records(TEXT);
        let half = records.len() / 2;
        legacy::write_journal(
            &path,
            legacy::fixture_journal_id("fuzz"),
            &records[..half],
            vfs.clone(),
        )
        .expect("write the first half");
        Index::open_or_rebuild(&path, options(&fs, true)).expect("index the first half");
        let sidecar_prefix = fs.read_raw(&sidecar_path(&path)).expect("prefix sidecar");
        let (mut w, _) = Writer::open(
            &path,
            OpenOptions {
                vfs: vfs.clone(),
                clock: Clock::fixed(1),
                ..OpenOptions::default()
            },
        )
        .expect("reopen the journal");
        let frames: Vec<NewFrame<'_>> = records[half..]
            .iter()
            .map(|r| NewFrame::new(session_index::kinds::ENTRY, r.as_bytes()))
            .collect();
        w.append_batch(&frames, Durability::Durable)
            .expect("append the second half");
        w.close().expect("close");
        let journal = fs.read_raw(&path).expect("journal");
        let (_, report) =
            Index::open_or_rebuild(&path, options(&fs, true)).expect("index the whole journal");
        assert!(matches!(report.status, IndexStatus::CaughtUp { .. }));
        let sidecar_full = fs.read_raw(&sidecar_path(&path)).expect("full sidecar");

        let clean = SimFs::new();
        clean.create_dir_all(Path::new("/s")).expect("sim mkdir");
        clean.write_raw(&path, &journal);
        let (ix, _) = Index::open_or_rebuild(&path, options(&clean, false)).expect("rebuild");
        let expected = render(&ix, &clean);
        Base {
            journal,
            sidecar_full,
            sidecar_prefix,
            expected,
        }
    })
}

/// Every answer of `ix`, rendered (it runs every query, so it also looks for panics).
pub fn render(ix: &Index, fs: &SimFs) -> String {
    let reader = Reader::open(
        ix.journal_path(),
        ReaderOptions {
            vfs: Arc::new(fs.clone()),
        },
    )
    .expect("the journal is valid");
    let mut s = String::new();
    let _ = writeln!(s, "len {} counts {:?}", ix.len(), ix.counts());
    let _ = writeln!(s, "covered {:?} {:?}", ix.covered_len(), ix.covered_seq());
    let _ = writeln!(s, "leaf {:?} name {:?}", ix.leaf(), ix.name());
    let _ = writeln!(s, "state {:?}", ix.lifecycle_state());
    let labels: Vec<_> = ix.labels().collect();
    let _ = writeln!(s, "labels {labels:?}");
    let _ = writeln!(s, "summary {:?}", ix.summary());
    let _ = writeln!(s, "tree {:?}", ix.tree().preorder());
    // Positions past the end too, where the API answers `None` / `false`.
    let n = u32::try_from(ix.len()).unwrap_or(u32::MAX);
    for i in (n..n.saturating_add(2)).map(EntryIndex) {
        let _ = writeln!(s, "{i:?} {:?} {}", ix.info(i), ix.is_unparsable(i));
    }
    // What callers do first: walk from the leaf (it comes from the aggregates).
    if let Some(leaf) = ix.leaf() {
        let _ = writeln!(
            s,
            "leaf {:?} parent {:?} path {:?}",
            ix.info(leaf),
            ix.parent(leaf),
            ix.path_to_root(leaf)
        );
    }
    for i in (0..n).map(EntryIndex) {
        let info = ix.info(i);
        let _ = writeln!(
            s,
            "{i:?} {info:?} parent {:?} children {:?} unparsable {}",
            ix.parent(i),
            ix.children(i),
            ix.is_unparsable(i)
        );
        let _ = writeln!(s, "  path {:?}", ix.path_to_root(i));
        let _ = writeln!(s, "  load {:?}", ix.load(&reader, i).map(|_| ()).is_ok());
        if let Some(id) = info.and_then(|x| x.id) {
            let _ = writeln!(
                s,
                "  find {:?} label {:?} usage {:?}",
                ix.find(id),
                ix.label(id),
                ix.latest_aggregate_usage(id)
            );
        }
    }
    s
}

fn patched(base: &[u8], rest: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    let (at, cut, xor) = match rest {
        [lo, hi, cut, xor @ ..] => (usize::from(u16::from_le_bytes([*lo, *hi])), *cut, xor),
        _ => (0, 0, &[][..]),
    };
    let start = if v.is_empty() { 0 } else { at % v.len() };
    for (i, b) in xor.iter().enumerate() {
        match v.get_mut(start + i) {
            Some(slot) => *slot ^= *b,
            None => v.push(*b),
        }
    }
    v.truncate(v.len().saturating_sub(usize::from(cut)));
    v
}

fn reseal(mut v: Vec<u8>) -> Vec<u8> {
    session_index::sidecar_reseal(&mut v);
    v
}

/// Runs one input; panics only when an invariant above breaks.
pub fn exercise(data: &[u8]) {
    let base = base();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let save = (mode / 6) % 2 == 1;
    let (image, forged) = match mode % 6 {
        0 => (rest.to_vec(), false),
        1 => (patched(&base.sidecar_full, rest), false),
        2 => (patched(&base.sidecar_prefix, rest), false),
        3 => (reseal(patched(&base.sidecar_full, rest)), true),
        4 => (reseal(patched(&base.sidecar_prefix, rest)), true),
        _ => (reseal(rest.to_vec()), true),
    };
    let forged = forged && image != base.sidecar_full && image != base.sidecar_prefix;
    let fs = SimFs::new();
    fs.create_dir_all(Path::new("/s")).expect("sim mkdir");
    let path = journal_path();
    fs.write_raw(&path, &base.journal);
    fs.write_raw(&sidecar_path(&path), &image);
    let (ix, report) = match Index::open_or_rebuild(&path, options(&fs, save)) {
        Ok(x) => x,
        Err(e) => panic!("a valid journal failed to open with a fuzzed sidecar: {e}"),
    };
    let got = render(&ix, &fs);
    if image == base.sidecar_full {
        assert_eq!(report.status, IndexStatus::Fresh, "valid sidecar not used");
    }
    if image == base.sidecar_prefix {
        assert!(
            matches!(report.status, IndexStatus::CaughtUp { .. }),
            "valid prefix sidecar not caught up: {:?}",
            report.status
        );
    }
    if !forged {
        assert_eq!(
            got, base.expected,
            "answered from a damaged sidecar ({report:?})"
        );
    }
    if save && report.save_error.is_none() {
        let (again, r2) = match Index::open_or_rebuild(&path, options(&fs, false)) {
            Ok(x) => x,
            Err(e) => panic!("reopen after a saving open failed: {e}"),
        };
        assert_eq!(
            r2.status,
            IndexStatus::Fresh,
            "saved sidecar not used ({report:?})"
        );
        let again = render(&again, &fs);
        assert_eq!(again, got, "saved sidecar answers differently");
    }
}
