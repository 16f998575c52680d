//! Regressions of the reliability campaign (`docs/reliability.md`): the
//! `legacy_line` fuzz harness (`fuzz/harness/legacy_line.rs`) replayed over its
//! committed findings (`tests/regressions/legacy_line/`) and simple inputs, and the
//! bit-flip finding on imported journals.

#[path = "../../../../fuzz/harness/legacy_line.rs"]
#[allow(unreachable_pub, dead_code, clippy::expect_used)]
mod harness;

use std::path::Path;
use std::sync::Arc;

use session_journal::vfs::Vfs;
use session_journal::{OpenError, OpenOptions, Reader, ReaderOptions, Writer};
use session_testkit::sim::SimFs;

use crate::support::{fixtures, import_into};

#[test]
fn committed_findings_replay_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions/legacy_line");
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for entry in rd {
            harness::exercise(&std::fs::read(entry.unwrap().path()).unwrap());
        }
    }
}

#[test]
fn harness_holds_on_fixtures_and_garbage() {
    for name in ["legacy/v3-control.jsonl", "edge/malformed-lines.jsonl"] {
        let text = std::fs::read(fixtures().join(name)).unwrap();
        harness::exercise(&[&[0u8][..], &text].concat());
    }
    harness::exercise(b"\x01{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n\xff\x00\n");
    harness::exercise(b"\x01{\"type\":\"label\",\"id\":\"\\ud800\",\"targetId\":\"a\"}");
    harness::exercise(b"\x00");
}

/// The bit-flip sweep found that an import wrote every frame in one batch and synced
/// once, so no frame's `synced_to` covered an earlier one: one flipped bit in the
/// first entry made `Writer::open` cut the whole session as a torn tail. Now every
/// frame but the last is covered by a later one, and the import ends with the
/// journal's seal, which covers the last: damage anywhere is reported as corruption
/// (`OpenError::Corrupt` at that frame) and nothing is cut.
#[test]
fn damage_to_any_frame_of_an_import_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let out = import_into(&fixtures().join("legacy/v3-control.jsonl"), dir.path()).unwrap();
    let bytes = std::fs::read(&out.journal).unwrap();
    let path = Path::new("/j.jsonl");
    let fs = SimFs::new();
    fs.write_raw(path, &bytes);
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let frames: Vec<(u64, u64)> = Reader::open(path, ReaderOptions { vfs: vfs.clone() })
        .unwrap()
        .frames(None)
        .map(|f| {
            let f = f.unwrap();
            (f.info.offset.0, f.info.end().0)
        })
        .collect();
    assert!(frames.len() >= 4);
    for (k, &(offset, end)) in frames.iter().enumerate() {
        // A byte in the header, one in the payload.
        for at in [offset + 20, end - 1] {
            let mut image = bytes.clone();
            image[at as usize] ^= 0x10;
            let fs = SimFs::new();
            fs.write_raw(path, &image);
            let opened = Writer::open(
                path,
                OpenOptions {
                    vfs: Arc::new(fs.clone()),
                    ..OpenOptions::default()
                },
            );
            // The import ends with the journal's seal: the last frame is covered too.
            match opened {
                Err(OpenError::Corrupt { offset: o, .. }) => assert_eq!(o.0, offset),
                Ok((_, r)) => panic!("frame {k} at {offset}, byte {at}: opened: {:?}", r.tail),
                Err(e) => panic!("frame {k} at {offset}, byte {at}: {e}"),
            }
            assert_eq!(
                fs.read_raw(path).unwrap(),
                image,
                "the journal was modified"
            );
        }
    }
}
