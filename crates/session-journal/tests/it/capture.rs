//! Captures bound readers to a consistent prefix while the owner appends.

use std::sync::mpsc;

use session_journal::{
    Capture, CreateOptions, Durability, FrameKind, JournalId, Reader, ReaderOptions, Writer,
};

use crate::payload;

fn expected(seq: u64) -> Vec<u8> {
    payload(seq, 1 + (seq as usize * 97) % 5000)
}

#[test]
fn readers_on_captures_see_neither_later_nor_torn_frames_while_a_writer_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("concurrent.jsonl");
    let mut w = Writer::create(&path, JournalId([8; 16]), CreateOptions::default()).unwrap();
    let n = crate::scale(400, "JOURNAL_CAPTURE_FRAMES");
    let (tx, rx) = mpsc::channel::<Capture>();
    let reader_path = path.clone();
    let reader = std::thread::spawn(move || {
        let r = Reader::open(&reader_path, ReaderOptions::default()).unwrap();
        let mut checked = 0u64;
        for capture in rx {
            // Bounded: exactly the captured frames, all valid.
            let frames: Vec<_> = r.frames(Some(capture)).collect::<Result<_, _>>().unwrap();
            assert_eq!(frames.len() as u64, capture.last_seq.get());
            if let Some(last) = frames.last() {
                assert_eq!(last.info.end(), capture.len);
            }
            for f in &frames {
                assert_eq!(f.payload, expected(f.info.seq.get()));
            }
            // Unbounded: a prefix of what was appended, never an error; a frame being
            // written ends the iteration quietly.
            let mut it = r.frames(None);
            for f in it.by_ref() {
                let f = f.unwrap();
                assert_eq!(f.payload, expected(f.info.seq.get()));
            }
            assert!(it.position() >= capture.len);
            checked += 1;
        }
        checked
    });
    for seq in 1..=n {
        w.append(
            FrameKind::FIRST_CALLER,
            &expected(seq),
            Durability::Buffered,
        )
        .unwrap();
        if seq % 3 == 0 {
            tx.send(w.capture()).unwrap();
        }
    }
    drop(tx);
    assert_eq!(reader.join().unwrap(), n / 3);
}
