//! Read-only verification and salvage.

use session_journal::{Offset, OpenError, Seq, salvage, verify};

use crate::{BUFFERED, DURABLE, Env, entry};

#[test]
fn verify_reports_what_open_would_find_without_modifying_anything() {
    let env = Env::new();
    let mut w = env.create();
    w.append(entry(), b"one", DURABLE).unwrap();
    let two = w.append(entry(), b"two", BUFFERED).unwrap();
    drop(w);
    let report = verify(&env.path, &env.verify_opts()).unwrap();
    assert_eq!(
        (report.frames, report.last_seq, report.torn_tail.clone()),
        (2, Seq(2), None)
    );
    assert_eq!(report.last_frame.unwrap().body_check, two.body_check);
    let mut bytes = env.bytes();
    bytes.truncate(bytes.len() - 1);
    env.set_bytes(&bytes);
    let report = verify(&env.path, &env.verify_opts()).unwrap();
    assert_eq!(report.torn_tail.unwrap().0, two.offset);
    assert_eq!(env.bytes(), bytes);
}

#[test]
fn salvage_returns_every_intact_frame_and_the_gaps() {
    let env = Env::new();
    let mut w = env.create();
    let fs: Vec<_> = (0..6u8)
        .map(|i| w.append(entry(), &[i; 40], DURABLE).unwrap())
        .collect();
    drop(w);
    let mut bytes = env.bytes();
    for k in [1usize, 2, 4] {
        bytes[fs[k].offset.get() as usize + 64 + 3] ^= 0x80;
    }
    env.set_bytes(&bytes);
    assert!(matches!(env.open(), Err(OpenError::Corrupt { offset, .. }) if offset == fs[1].offset));
    let s = salvage(&env.path, &env.verify_opts()).unwrap();
    let got: Vec<u8> = s.frames.iter().map(|f| f.payload[0]).collect();
    assert_eq!(got, vec![0, 3, 5]);
    let gaps: Vec<(Offset, Offset)> = s.gaps.iter().map(|g| (g.start, g.end)).collect();
    assert_eq!(
        gaps,
        vec![(fs[1].offset, fs[2].end()), (fs[4].offset, fs[4].end())]
    );
    assert_eq!(env.bytes(), bytes);
}
