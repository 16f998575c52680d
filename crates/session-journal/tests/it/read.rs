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

/// Frames that are not neighbours (every other one, as a context's frames lie between
/// the frames it skips) read with one read of the bytes from the first to the last,
/// into a buffer given back for the next read: each frame given is verified as a point
/// read verifies it; the frames between them are read but neither decoded nor trusted.
#[test]
fn spread_frames_are_read_with_one_read_into_a_reused_buffer() {
    let (env, spans) = journal(40);
    let counting = session_testkit::CountingVfs::new(env.vfs());
    let r = session_journal::Reader::open(
        &env.path,
        session_journal::ReaderOptions {
            vfs: std::sync::Arc::new(counting.clone()),
        },
    )
    .unwrap();
    let wanted: Vec<(Offset, Offset)> = spans[3..31].iter().step_by(2).copied().collect();
    let buf = Vec::with_capacity(1 << 20);
    let at = buf.as_ptr();
    counting.reset();
    let run = r.read_frames_into(&wanted, buf).unwrap();
    let reads = counting.reads_of(&env.path);
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(
        reads[0],
        (wanted[0].0.get(), wanted[13].1.get() - wanted[0].0.get())
    );
    assert_eq!(run.frames().len(), wanted.len());
    for (k, &(start, end)) in wanted.iter().enumerate() {
        let one = r.read_frame_within(start, end).unwrap();
        assert_eq!(run.frames()[k], one.info);
        assert_eq!(run.payload(k), Some(one.payload.as_slice()));
    }
    assert_eq!(run.payload(wanted.len()), None);
    // The buffer goes back to the caller with its allocation.
    let buf = run.into_buffer();
    assert_eq!(buf.as_ptr(), at);
    let again = r.read_frames_into(&wanted[..2], buf).unwrap();
    assert_eq!(again.frames().len(), 2);
    let buf = again.into_buffer();
    assert_eq!(buf.as_ptr(), at);
}

#[test]
fn spread_frames_are_verified_and_the_bytes_between_them_are_not() {
    let (env, spans) = journal(10);
    let mut bytes = env.bytes();
    // The 4th frame damaged: a read of the 3rd and 5th skips it; one that names it
    // fails there, as a point read of it fails.
    bytes[spans[3].0.get() as usize + 70] ^= 0x04;
    env.set_bytes(&bytes);
    let r = env.reader();
    let run = r
        .read_frames_into(&[spans[2], spans[4]], Vec::new())
        .unwrap();
    assert_eq!(run.frames().len(), 2);
    let err = r
        .read_frames_into(&[spans[2], spans[3], spans[4]], Vec::new())
        .unwrap_err();
    match &err {
        ReadError::Invalid { offset, fault, .. } => {
            assert_eq!(*offset, spans[3].0);
            assert!(matches!(fault, FrameFault::BodyCheck { .. }), "{fault:?}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        r.read_frame_within(spans[3].0, spans[3].1)
            .unwrap_err()
            .to_string(),
        err.to_string()
    );
}

#[test]
fn spread_frames_must_be_in_order_apart_and_inside_the_file() {
    let (env, spans) = journal(6);
    let r = env.reader();
    let len = r.len().unwrap();
    let out_of_range = |res: Result<_, ReadError>| matches!(res, Err(ReadError::OutOfRange { .. }));
    // None, out of order, repeated, overlapping, past the end, misaligned, before the
    // first frame.
    assert!(out_of_range(r.read_frames_into(&[], Vec::new())));
    assert!(out_of_range(
        r.read_frames_into(&[spans[3], spans[1]], Vec::new())
    ));
    assert!(out_of_range(
        r.read_frames_into(&[spans[2], spans[2]], Vec::new())
    ));
    assert!(out_of_range(r.read_frames_into(
        &[(spans[1].0, spans[2].1), spans[2]],
        Vec::new()
    )));
    assert!(out_of_range(r.read_frames_into(
        &[(spans[5].0, Offset(len.0 + 8))],
        Vec::new()
    )));
    assert!(out_of_range(r.read_frames_into(
        &[(Offset(spans[2].0.get() + 3), spans[2].1)],
        Vec::new()
    )));
    assert!(out_of_range(
        r.read_frames_into(&[(Offset(0), spans[0].1)], Vec::new())
    ));
    // Ending inside the frame: it is truncated there, as a point read says.
    match r.read_frames_into(
        &[spans[1], (spans[3].0, Offset(spans[3].1.get() - 8))],
        Vec::new(),
    ) {
        Err(ReadError::Invalid { offset, fault, .. }) => {
            assert_eq!(offset, spans[3].0);
            assert!(matches!(fault, FrameFault::Truncated { .. }), "{fault:?}");
        }
        other => panic!("{other:?}"),
    }
}
