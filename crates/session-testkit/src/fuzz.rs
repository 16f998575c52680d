//! The journal decoder's fuzz harness, shared by the cargo-fuzz target
//! (`fuzz/fuzz_targets/decode.rs`) and the session-journal test that replays its
//! committed findings; and, re-exported from `session_journal::testing` (they need the
//! journal's internals), frames forged with valid checks.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use session_journal::vfs::Vfs;
use session_journal::{
    Clock, CreateOptions, Durability, FrameKind, JournalId, Offset, OpenOptions, Reader,
    ReaderOptions, TailState, VerifyOptions, Writer, salvage, verify,
};

use crate::sim::SimFs;

pub use session_journal::testing::{forge_frame, forge_frame_header};

fn base_journal() -> &'static [u8] {
    static BASE: OnceLock<Vec<u8>> = OnceLock::new();
    BASE.get_or_init(|| {
        let fs = SimFs::new();
        let path = Path::new("/base.jsonl");
        let opts = CreateOptions {
            max_payload: 4096,
            clock: Clock::fixed(1),
            vfs: Arc::new(fs.clone()),
            ..CreateOptions::default()
        };
        if let Ok(mut w) = Writer::create(path, JournalId([0x42; 16]), opts) {
            for (i, n) in [1usize, 7, 8, 9, 100].iter().enumerate() {
                let payload = vec![b'a' + i as u8; *n];
                let _ = w.append(FrameKind::FIRST_CALLER, &payload, Durability::Buffered);
            }
            let _ = w.close();
        }
        fs.read_raw(path).unwrap_or_default()
    })
}

/// Builds a file image from fuzz input: byte 0 selects raw bytes, a valid journal with
/// the input appended, or a valid journal with the input overwriting part of it.
pub fn file_image(data: &[u8]) -> Vec<u8> {
    let Some((&mode, rest)) = data.split_first() else {
        return Vec::new();
    };
    let base = base_journal();
    match mode % 3 {
        0 => rest.to_vec(),
        1 => {
            let mut v = base.to_vec();
            v.extend_from_slice(rest);
            v
        }
        _ => {
            let mut v = base.to_vec();
            if let Some((&at, patch)) = rest.split_first() {
                let start = (usize::from(at) * 4).min(v.len());
                for (i, b) in patch.iter().enumerate() {
                    match v.get_mut(start + i) {
                        Some(slot) => *slot ^= *b,
                        None => v.push(*b),
                    }
                }
            }
            v
        }
    }
}

/// Runs every read path over the image built from `data`. Panics only if an invariant
/// breaks (which is what the fuzzer looks for): a writer that recovered a journal must
/// be able to append, and the journal must then reopen cleanly with one more frame.
pub fn exercise_decoder(data: &[u8]) {
    let image = file_image(data);
    let fs = SimFs::new();
    let path = Path::new("/fuzz.jsonl");
    fs.write_raw(path, &image);
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    if let Ok(r) = Reader::open(path, ReaderOptions { vfs: vfs.clone() }) {
        let mut offsets = Vec::new();
        let mut frames = r.frames(None);
        for f in frames.by_ref().flatten() {
            offsets.push(f.info.offset);
        }
        let _ = frames.stop();
        for o in offsets
            .iter()
            .chain([Offset(0), Offset(8), Offset(u64::MAX - 7)].iter())
        {
            let _ = r.read_frame_at(*o);
            let _ = r.verify_frame_at(*o);
        }
    }
    let opts = VerifyOptions {
        vfs: vfs.clone(),
        journal_id: None,
    };
    let verified = verify(path, &opts);
    let _ = salvage(path, &opts);
    let open = OpenOptions {
        clock: Clock::fixed(2),
        vfs: vfs.clone(),
        ..OpenOptions::default()
    };
    if let Ok((mut w, report)) = Writer::open(path, open.clone()) {
        assert!(
            verified.is_ok(),
            "verify refused what the writer's open accepted: {verified:?}"
        );
        let appended = w.append(
            FrameKind::FIRST_CALLER,
            b"after recovery",
            Durability::Durable,
        );
        assert!(
            appended.is_ok(),
            "append after recovery failed: {appended:?}"
        );
        drop(w);
        let reopened = Writer::open(path, open);
        match reopened {
            Ok((_, again)) => {
                assert_eq!(again.frames, report.frames + 1, "lost a frame on reopen");
                assert_eq!(again.tail, TailState::Clean);
            }
            Err(e) => panic!("reopen after recovery failed: {e}"),
        }
    }
}
