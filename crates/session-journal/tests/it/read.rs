//! Runs: neighbouring frames read with one read, each verified as a point read
//! verifies it.

use session_journal::{FrameFault, Offset, ReadError};

use crate::{BUFFERED, Env, entry, payload};

/// A journal of `n` entry frames of assorted sizes; returns it and their offsets
/// and ends.
fn journal(n: u64) -> (Env, Vec<(Offset, Offset)>) {
    let env = Env::new();
    let mut w = env.create();
    let mut spans = Vec::new();
    for i in 0..n {
        let a = w
            .append(entry(), &payload(i, 1 + (i as usize * 37) % 5000), BUFFERED)
            .unwrap();
        spans.push((a.offset, a.end()));
    }
    w.sync().unwrap();
    drop(w);
    (env, spans)
}

#[test]
fn a_run_gives_each_frame_as_a_point_read_does() {
    let (env, spans) = journal(40);
    let r = env.reader();
    let run = r.read_run(spans[3].0, spans[30].1).unwrap();
    assert_eq!(run.frames().len(), 28);
    for (k, info) in run.frames().iter().enumerate() {
        let one = r.read_frame_within(spans[3 + k].0, spans[3 + k].1).unwrap();
        assert_eq!(*info, one.info);
        assert_eq!(run.payload(k), Some(one.payload.as_slice()));
    }
    assert_eq!(run.payload(28), None);
    // Several runs, one result each.
    let runs = r.read_runs(&[(spans[0].0, spans[1].1), (spans[5].0, spans[5].1)]);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].as_ref().unwrap().frames().len(), 2);
    assert_eq!(runs[1].as_ref().unwrap().frames().len(), 1);
}

#[test]
fn a_run_is_verified_frame_by_frame() {
    let (env, spans) = journal(10);
    // A flipped payload bit in the 6th frame fails the run there, with the fault a
    // point read of that frame gives; the runs around it still read.
    let mut bytes = env.bytes();
    bytes[spans[5].0.get() as usize + 70] ^= 0x04;
    env.set_bytes(&bytes);
    let r = env.reader();
    let runs = r.read_runs(&[
        (spans[0].0, spans[4].1),
        (spans[2].0, spans[8].1),
        (spans[6].0, spans[9].1),
    ]);
    assert!(runs[0].is_ok());
    match &runs[1] {
        Err(ReadError::Invalid { offset, fault, .. }) => {
            assert_eq!(*offset, spans[5].0);
            assert!(matches!(fault, FrameFault::BodyCheck { .. }), "{fault:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(runs[2].is_ok());
    assert_eq!(
        r.read_frame_within(spans[5].0, spans[5].1)
            .unwrap_err()
            .to_string(),
        runs[1].as_ref().unwrap_err().to_string()
    );
}

#[test]
fn a_run_must_start_and_end_on_frames_inside_the_file() {
    let (env, spans) = journal(5);
    let r = env.reader();
    let len = r.len().unwrap();
    let out_of_range = |res: Result<_, ReadError>| matches!(res, Err(ReadError::OutOfRange { .. }));
    // Past the end of the file, empty, misaligned, before the first frame.
    assert!(out_of_range(r.read_run(spans[4].0, Offset(len.0 + 8))));
    assert!(out_of_range(r.read_run(spans[2].0, spans[2].0)));
    assert!(out_of_range(
        r.read_run(Offset(spans[2].0.get() + 3), spans[2].1)
    ));
    assert!(out_of_range(r.read_run(Offset(0), spans[0].1)));
    // Ending inside a frame: that frame is truncated.
    match r.read_run(spans[1].0, Offset(spans[2].1.get() - 8)) {
        Err(ReadError::Invalid { offset, fault, .. }) => {
            assert_eq!(offset, spans[2].0);
            assert!(matches!(fault, FrameFault::Truncated { .. }), "{fault:?}");
        }
        other => panic!("{other:?}"),
    }
}
