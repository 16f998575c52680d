//! Replays the fuzz corpus findings committed under `tests/regressions/fuzz/`.

use std::path::PathBuf;

use session_testkit::fuzz::exercise_decoder;

#[test]
fn committed_fuzz_findings_replay_without_panics() {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/regressions/fuzz"
    ));
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        exercise_decoder(&std::fs::read(&path).unwrap());
        n += 1;
    }
    assert!(n > 0, "no fuzz inputs in {}", dir.display());
}

#[test]
fn decoder_survives_pseudo_random_inputs() {
    let mut rng = session_testkit::sim::SimRng::new(77);
    for i in 0..crate::scale(300, "JOURNAL_FUZZ_ITERS") {
        let len = rng.below(600) as usize;
        let mut data = vec![0u8; len];
        rng.fill(&mut data);
        if let Some(b) = data.first_mut() {
            *b = (i % 3) as u8;
        }
        exercise_decoder(&data);
    }
}
