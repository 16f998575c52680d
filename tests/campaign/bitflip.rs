//! Bit-flip sweep over a real native journal: `tests/fixtures/generated/1k.jsonl`
//! (written by the reference) imported with `session-import`. A seeded sample of
//! frames — always the journal header frame, the first and last entry frames, the
//! seal the import ends with and the largest frame — and, for every byte of each
//! sampled frame, one flipped bit (a seeded bit per byte; `BITFLIP_ALL_BITS=1`: all
//! eight). Each damaged image is checked on a `SimFs`:
//!
//! - `Writer::open` (default mode) refuses with `Corrupt` at the frame's offset — or,
//!   for the journal header frame, with any error; no frame is cut as a torn tail, the
//!   last ones included, since the journal ends with a seal (`docs/format.md` §2.5,
//!   §2.8);
//! - `Reader` yields exactly the intact frames before the damage, byte-identical, and
//!   `read_frame_at` of the damaged frame fails: no API returns the damaged payload;
//! - `salvage` returns every other frame, byte-identical;
//! - `Index::open_or_rebuild` never indexes the damaged frame or anything after it.
//!
//! The journal is the import of the file's first `BITFLIP_LINES` lines (default 300,
//! about 0.5 MB and 600 frames; `0`: all 1,001 lines, 2.1 MB). `cargo test` runs the 5
//! fixed frames with 6 bytes each spread over the frame. The full sweep (every byte
//! of 24 frames; `BITFLIP_SEED` picks the sample):
//! `BITFLIP_FRAMES=24 BITFLIP_PER_FRAME=0 cargo test --release -p session-tests
//! --test campaign bitflip -- --nocapture`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use session_index::{EntryIndex, Index, OpenIndexOptions};
use session_journal::vfs::Vfs;
use session_journal::{
    JournalId, OpenError, OpenOptions, Reader, ReaderOptions, TailState, VerifyOptions, Writer,
    salvage,
};
use session_testkit::sim::{SimFs, SimRng};

use crate::knob;

/// One frame of the sample journal.
#[derive(Debug, Clone)]
struct Span {
    offset: u64,
    end: u64,
    /// `None` for the journal header frame and the seal.
    payload: Option<Vec<u8>>,
}

struct Sample {
    bytes: Vec<u8>,
    id: JournalId,
    /// The journal header frame, then every entry frame in file order, then the seal.
    frames: Vec<Span>,
    /// Offsets of the frames a clean index holds, in order.
    indexed: Vec<u64>,
}

const PATH: &str = "/s/j.jsonl";

fn sim(bytes: &[u8]) -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new("/s")).unwrap();
    fs.write_raw(Path::new(PATH), bytes);
    fs
}

fn index_offsets(fs: &SimFs) -> Result<Vec<u64>, String> {
    let (ix, _) = Index::open_or_rebuild(
        Path::new(PATH),
        OpenIndexOptions {
            vfs: Arc::new(fs.clone()),
            save: false,
            sync_journal: false,
            ..OpenIndexOptions::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let n = u32::try_from(ix.len()).unwrap();
    Ok((0..n)
        .map(|i| ix.info(EntryIndex(i)).unwrap().offset.0)
        .collect())
}

fn sample() -> &'static Sample {
    static SAMPLE: OnceLock<Sample> = OnceLock::new();
    SAMPLE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let full =
            std::fs::read(crate::repo_root().join("tests/fixtures/generated/1k.jsonl")).unwrap();
        let lines = knob("BITFLIP_LINES", 300) as usize;
        let text: Vec<u8> = if lines == 0 {
            full
        } else {
            full.split_inclusive(|b| *b == b'\n')
                .take(lines)
                .flatten()
                .copied()
                .collect()
        };
        let source = dir.path().join("source.jsonl");
        std::fs::write(&source, &text).unwrap();
        let out = session_import::import(
            &source,
            &session_import::Destination::Journal(dir.path().join("j.jsonl")),
            &session_import::ImportOptions {
                clock: session_journal::Clock::fixed(0),
                ..session_import::ImportOptions::default()
            },
        )
        .unwrap();
        let bytes = std::fs::read(&out.journal).unwrap();
        let fs = sim(&bytes);
        let r = Reader::open(
            Path::new(PATH),
            ReaderOptions {
                vfs: Arc::new(fs.clone()),
            },
        )
        .unwrap();
        let mut frames = vec![Span {
            offset: 8,
            end: r.data_start().0,
            payload: None,
        }];
        for f in r.frames(None).with_seals() {
            let f = f.unwrap();
            let seal = f.info.kind.is_seal();
            frames.push(Span {
                offset: f.info.offset.0,
                end: f.info.end().0,
                payload: (!seal).then_some(f.payload),
            });
        }
        assert_eq!(frames.last().unwrap().end, bytes.len() as u64);
        assert!(
            frames.last().unwrap().payload.is_none(),
            "an import ends with a seal"
        );
        let indexed = index_offsets(&fs).unwrap();
        Sample {
            bytes,
            id: r.journal_id(),
            frames,
            indexed,
        }
    })
}

/// The sampled frame positions: header, first entry, the seal, the last entry,
/// largest, then seeded picks.
fn pick(s: &Sample, count: usize, seed: u64) -> Vec<usize> {
    let n = s.frames.len();
    let largest = (1..n)
        .max_by_key(|&i| s.frames[i].end - s.frames[i].offset)
        .unwrap();
    let mut out = vec![0, 1, n - 1, n - 2, largest];
    out.dedup();
    let mut rng = SimRng::new(seed);
    while out.len() < count.min(n) {
        let i = rng.below(n as u64) as usize;
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Checks one damaged image; returns the violated property, if any.
fn check(s: &Sample, k: usize, image: &[u8]) -> Vec<(&'static str, String)> {
    let mut bad = Vec::new();
    let f = &s.frames[k];
    let o = f.offset;
    let is_header = k == 0;
    let fs = sim(image);
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let path = Path::new(PATH);

    // Reader: only intact frames before the damage, byte-identical.
    match Reader::open(path, ReaderOptions { vfs: vfs.clone() }) {
        Err(e) if !is_header => bad.push(("reader open", e.to_string())),
        Err(_) => {}
        Ok(_) if is_header => bad.push(("reader open", "accepted a damaged header".into())),
        Ok(r) => {
            let mut seen = 0;
            for fr in r.frames(None) {
                let Ok(fr) = fr else { break };
                let orig = s.frames.get(seen + 1);
                if fr.info.offset.0 >= o || orig.map(|x| &x.payload) != Some(&Some(fr.payload)) {
                    bad.push((
                        "reader frames",
                        format!("frame at {} returned", fr.info.offset.0),
                    ));
                    break;
                }
                seen += 1;
            }
            if seen != k - 1 {
                bad.push((
                    "reader frames",
                    format!("{seen} frames before the damage, expected {}", k - 1),
                ));
            }
            if r.read_frame_at(session_journal::Offset(o)).is_ok() {
                bad.push(("read_frame_at", format!("damaged frame at {o} returned")));
            }
        }
    }

    // Salvage: every other frame.
    let opts = VerifyOptions {
        vfs: vfs.clone(),
        journal_id: Some(s.id),
    };
    match salvage(path, &opts) {
        Err(e) => bad.push(("salvage", e.to_string())),
        Ok(rep) => {
            let got: BTreeMap<u64, &[u8]> = rep
                .frames
                .iter()
                .map(|x| (x.info.offset.0, x.payload.as_slice()))
                .collect();
            let want: BTreeMap<u64, &[u8]> = s
                .frames
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != k)
                .filter_map(|(_, x)| x.payload.as_deref().map(|p| (x.offset, p)))
                .collect();
            if got != want {
                let missing: Vec<_> = want.keys().filter(|o| !got.contains_key(o)).collect();
                let extra: Vec<_> = got.keys().filter(|o| !want.contains_key(o)).collect();
                bad.push((
                    "salvage",
                    format!("missing {missing:?} extra {extra:?} (or payload differs)"),
                ));
            }
        }
    }

    // Index rebuild: nothing from the damaged frame or after it.
    match index_offsets(&fs) {
        Err(e) if !is_header => bad.push(("index", e)),
        Err(_) => {}
        Ok(got) => {
            let want: Vec<u64> = s.indexed.iter().copied().filter(|x| *x < o).collect();
            if got != want {
                bad.push((
                    "index",
                    format!("{} entries, expected {}", got.len(), want.len()),
                ));
            }
        }
    }

    // Writer::open, default mode (last: it may modify the image).
    let opened = Writer::open(
        path,
        OpenOptions {
            vfs,
            clock: session_journal::Clock::fixed(5),
            ..OpenOptions::default()
        },
    );
    match opened {
        Err(_) if is_header => {}
        Err(OpenError::Corrupt { offset, .. }) if offset.0 == o => {}
        Ok((_, rep)) => bad.push((
            "writer open",
            format!(
                "accepted: {:?} at offset {}",
                tail_name(&rep.tail),
                tail_offset(&rep.tail)
            ),
        )),
        Err(e) => bad.push(("writer open", e.to_string())),
    }
    bad
}

fn tail_name(t: &TailState) -> &'static str {
    match t {
        TailState::Clean => "clean",
        TailState::TornTail { .. } => "torn tail",
        TailState::Discarded { .. } => "discarded",
        _ => "other",
    }
}

fn tail_offset(t: &TailState) -> u64 {
    match t {
        TailState::TornTail { offset, .. } | TailState::Discarded { offset, .. } => offset.0,
        _ => 0,
    }
}

#[test]
fn every_flipped_bit_is_detected_and_contained() {
    let s = sample();
    let frames = knob("BITFLIP_FRAMES", 4) as usize;
    let per_frame = knob("BITFLIP_PER_FRAME", 6);
    let all_bits = knob("BITFLIP_ALL_BITS", 0) == 1;
    let seed = knob("BITFLIP_SEED", 0xB17_F11B);
    let mut rng = SimRng::new(seed ^ 1);
    let mut flips = 0u64;
    let mut failures: BTreeMap<String, (u64, String)> = BTreeMap::new();
    let mut image = s.bytes.clone();
    for k in pick(s, frames, seed) {
        let f = &s.frames[k];
        let len = f.end - f.offset;
        let positions: Vec<u64> = if per_frame == 0 || per_frame >= len {
            (f.offset..f.end).collect()
        } else {
            (0..per_frame)
                .map(|j| f.offset + (len - 1) * j / (per_frame - 1).max(1))
                .collect()
        };
        for pos in positions {
            let pos = pos as usize;
            let bits: Vec<u8> = if all_bits {
                (0..8).collect()
            } else {
                vec![rng.below(8) as u8]
            };
            for bit in bits {
                image[pos] ^= 1 << bit;
                flips += 1;
                for (what, detail) in check(s, k, &image) {
                    let class = format!("frame #{k} (offset {}): {what}", f.offset);
                    let e = failures.entry(class).or_insert((0, String::new()));
                    e.0 += 1;
                    if e.1.is_empty() {
                        e.1 = format!("byte {pos} bit {bit}: {detail}");
                    }
                }
                image[pos] ^= 1 << bit;
            }
        }
    }
    eprintln!(
        "bit-flip sweep: {} frames of {} ({} bytes), {flips} flips, {} failure classes",
        frames.min(s.frames.len()),
        s.frames.len(),
        s.bytes.len(),
        failures.len()
    );
    let report: Vec<String> = failures
        .iter()
        .map(|(c, (n, first))| format!("{c}: {n} flips, first {first}"))
        .collect();
    assert!(report.is_empty(), "{flips} flips:\n{}", report.join("\n"));
}
