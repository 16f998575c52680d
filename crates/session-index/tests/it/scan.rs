//! Observing a scanned record (`Scanned::parse`, `Index::observe_scanned`) against
//! parsing its payload (`Envelope::parse`, `Index::observe`): the same envelope, the
//! same index and sidecar bytes, and the scan declining what only a parse reads
//! exactly.

use std::path::Path;

use session_index::{Index, Scanned, kinds, sidecar_path};
use session_journal::vfs::Vfs;
use session_journal::{Capture, Durability};
use session_types::Envelope;

use crate::support::{fingerprint, fixtures, open, sim, write, writer};

const HEAD: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#;

/// Records of every type, plain and odd: repeated keys, numbers beyond a double,
/// non-string ids, escapes, non-object lines, content that makes the reference's
/// text extraction throw.
const LINES: &[&str] = &[
    // The first user message: its excerpt is kept (the scan leaves it to the parse).
    r#"{"type":"message","id":"u0","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":"AA==","mimeType":"image/png"}],"timestamp":1}}"#,
    r#"{"type":"message","id":"u1","parentId":"u0","timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"first \n text","timestamp":2}}"#,
    r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"x"},{"type":"toolCall","id":"c","name":"n","arguments":{"deep":[[[[{}]]]]}}],"stopReason":"stop","timestamp":1.5e12}}"#,
    r#"{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[{"type":"text","text":"out"}],"isError":false,"timestamp":3}}"#,
    r#"{"type":"message","id":"u2","parentId":"t1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"later","timestamp":1e400}}"#,
    r#"{"type":"message","id":"a2","parentId":"u2","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a"},null],"timestamp":4}}"#,
    r#"{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"assistant","content":{"text":"x"},"timestamp":5}}"#,
    r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:07.000Z","message":{"role":"assistant","content":null}}"#,
    r#"{"type":"message","id":"a5","parentId":"a4","timestamp":"2026-01-01T00:00:08.000Z","message":{"role":"assistant","content":7,"timestamp":"x"}}"#,
    r#"{"type":"message","id":"a6","parentId":"a5","timestamp":"2026-01-01T00:00:09.000Z","message":{"role":"assistant"}}"#,
    r#"{"type":"message","id":"m0","parentId":"a6","timestamp":"2026-01-01T00:00:10.000Z","message":null}"#,
    r#"{"type":"message","id":"m1","parentId":"m0","timestamp":"2026-01-01T00:00:11.000Z","message":"text"}"#,
    r#"{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-01-01T00:00:12.000Z"}"#,
    r#"{"type":"message","id":"m3","parentId":"m2","timestamp":"2026-01-01T00:00:13.000Z","message":{"role":"bashExecution","command":"ls","output":"","exitCode":null,"timestamp":4}}"#,
    r#"{"type":"message","id":"m4","parentId":"m3","timestamp":"2026-01-01T00:00:14.000Z","message":{"role":"hookMessage","content":"legacy"}}"#,
    r#"{"type":"message","id":"m5","parentId":"m4","message":{"role":5,"content":"x"}}"#,
    r#"{"type":"message","id":"m6","parentId":"m5","message":{"role":"assistant","role":"user","content":"x"}}"#,
    r#"{"type":"message","id":"m7","parentId":"m6","message":{"role":"assistant","content":"x","content":[null]}}"#,
    r#"{"type":"message","id":"m8","parentId":"m7","message":{"role":"assistant","content":[{"type":"text","type":"text","text":"x"}]}}"#,
    r#"{"type":"message","id":"m9","parentId":"m8","message":{"role":"assistant","content":[1e400]}}"#,
    r#"{"type":"label","id":"l1","parentId":"m9","timestamp":"2026-01-01T00:00:15.000Z","targetId":"u1","label":"start"}"#,
    r#"{"type":"label","id":"l2","parentId":"l1","timestamp":"2026-01-01T00:00:16.000Z","targetId":"a1","label":"x"}"#,
    r#"{"type":"label","id":"l3","parentId":"l2","timestamp":"2026-01-01T00:00:17.000Z","targetId":"a1"}"#,
    r#"{"type":"label","id":"l4","parentId":"l3","targetId":5,"label":{"k":1}}"#,
    r#"{"type":"label","id":"l5","parentId":"l4","targetId":1e400,"label":1e400}"#,
    r#"{"type":"label","id":"l6","parentId":"l5","label":"no target"}"#,
    r#"{"type":"label","id":"l7","parentId":"l6","targetId":"u1","label":"a","label":"b"}"#,
    r#"{"type":"label","id":"l8","parentId":"l7","targetId":"u\u0031","label":"esc\"aped"}"#,
    r#"{"type":"session_info","id":"n1","parentId":"l8","timestamp":"2026-01-01T00:00:18.000Z","name":"  named \ufeff"}"#,
    r#"{"type":"session_info","id":"n2","parentId":"n1","name":7}"#,
    r#"{"type":"session_state","id":"s1","parentId":"n2","state":"sleep"}"#,
    r#"{"type":"session_state","id":"s2","parentId":"s1","state":"sleep","state":"archived"}"#,
    r#"{"type":"agent_status","id":"as","parentId":"s2","status":{"summary":"s","n":1e400}}"#,
    r#"{"type":"child_usage_attributed","id":"c1","parentId":"as","targetId":"a1","childUsage":{"input":1}}"#,
    r#"{"type":"future","id":"f1","parentId":"c1","label":7}"#,
    r#"{"type":"future","id":"f2","parentId":"f1","message":{"role":"user","content":"?"}}"#,
    // Non-string ids and parents, absent ones, an empty parent, a self-parent.
    r#"{"type":"model_change","id":5,"parentId":"f2","provider":"p"}"#,
    r#"{"type":"model_change","id":1e400,"parentId":5,"provider":"p"}"#,
    r#"{"type":"model_change","id":true,"parentId":{"a":1},"provider":"p"}"#,
    r#"{"type":"model_change","id":{"a":1},"parentId":[1],"provider":"p"}"#,
    r#"{"type":"model_change","id":"e0","parentId":"","provider":"p"}"#,
    r#"{"type":"model_change","id":"e1","provider":"p"}"#,
    r#"{"type":"model_change","id":"self","parentId":"self"}"#,
    r#"{"type":"model_change","parentId":"e1"}"#,
    r#"{"type":"model_change","id":"o1","parentId":"ghost"}"#,
    r#"{"type":"model_change","id":"ghost","parentId":null}"#,
    r#"{"type":"model_change","id":"e1","parentId":"ghost"}"#,
    // Repeated envelope keys (JSON.parse keeps the last), escaped keys and values.
    r#"{"type":"model_change","id":"r1","id":"r2","parentId":"e1"}"#,
    r#"{"type":"model_change","type":"label","id":"r3","parentId":"r2","targetId":"u1","label":"t"}"#,
    r#"{"t\u0079pe":"model_change","i\u0064":"r4","parentId":"r\u0033"}"#,
    r#"{"type":"model_change","id":"r5","parentId":"r4","timestamp":1767225600000}"#,
    r#"{"type":"model_change","id":"r6","parentId":"r5","timestamp":null}"#,
    r#"{"type":"model_change","id":"r7","parentId":"r6","timestamp":"not a date"}"#,
    r#"{"type":5,"id":"r8","parentId":"r7"}"#,
    r#"{"type":null,"id":"r9","parentId":"r8"}"#,
    r#"{"id":"r10","parentId":"r9","big":1e400,"other":[1,{"x":null}]}"#,
    "\u{a0}{\"type\":\"model_change\",\"id\":\"w1\",\"parentId\":\"r10\"}\u{3000}",
    r#"{"type":"model_change","id":"\ud83d\ude00","parentId":"w1","note":"\ud800"}"#,
    // Not objects: kept as entries without an id (or skipped by an import).
    r#"5"#,
    r#""text""#,
    r#"[1,2]"#,
    r#"null"#,
    r#"{"type":"model_change","id":"bad""#,
    r#"{}"#,
];

/// Appends `lines` to a fresh journal, feeding one index each payload to parse and
/// another the scan of each line where it reads (and the payload elsewhere); returns
/// both, the journal's file system, and how many lines were scanned.
fn observe_both(
    lines: &[&[u8]],
    path: &Path,
) -> (
    Index,
    Index,
    std::sync::Arc<session_testkit::sim::SimFs>,
    usize,
) {
    let fs = sim();
    write(fs.clone(), path, HEAD);
    let (mut parsed, _) = open(fs.clone(), path);
    let mut scanned = parsed.clone();
    let mut w = writer(fs.clone(), path);
    let mut n = 0;
    for line in lines {
        let a = w.append(kinds::ENTRY, line, Durability::Buffered).unwrap();
        parsed.observe(kinds::ENTRY, &a, line).unwrap();
        let scan = std::str::from_utf8(line).ok().and_then(Scanned::parse);
        match scan {
            Some((env, scan)) => {
                let text = std::str::from_utf8(line).unwrap();
                let strict = Envelope::parse(text).unwrap();
                assert_eq!(format!("{env:?}"), format!("{strict:?}"), "{text}");
                scanned
                    .observe_scanned(kinds::ENTRY, &a, line, &scan)
                    .unwrap();
                n += 1;
            }
            None => scanned.observe(kinds::ENTRY, &a, line).unwrap(),
        }
    }
    w.sync().unwrap();
    (parsed, scanned, fs, n)
}

/// The sidecar `ix` saves, read back.
fn saved(ix: &Index, fs: &dyn Vfs, path: &Path) -> Vec<u8> {
    let capture = Capture {
        journal_id: ix.journal_id(),
        len: ix.covered_len(),
        last_seq: ix.covered_seq(),
    };
    ix.clone().save(capture).unwrap();
    let f = fs
        .open(&sidecar_path(path), session_journal::vfs::OpenMode::Read)
        .unwrap();
    let mut buf = vec![0; f.len().unwrap() as usize];
    f.read_exact_at(0, &mut buf).unwrap();
    buf
}

fn assert_same(lines: &[&[u8]], path: &Path) -> usize {
    let (parsed, scanned, fs, n) = observe_both(lines, path);
    assert_eq!(fingerprint(&scanned), fingerprint(&parsed));
    let (rebuilt, _) = open(fs.clone(), path);
    assert_eq!(fingerprint(&scanned), fingerprint(&rebuilt));
    let from_parsed = saved(&parsed, fs.as_ref(), path);
    assert_eq!(
        saved(&scanned, fs.as_ref(), path),
        from_parsed,
        "sidecar bytes"
    );
    n
}

#[test]
fn observing_scanned_records_gives_the_index_parsing_them_gives() {
    let lines: Vec<&[u8]> = LINES.iter().map(|l| l.as_bytes()).collect();
    let n = assert_same(&lines, Path::new("/s/a.jsonl"));
    assert!(n >= 40, "{n} of {} lines scanned", lines.len());
}

#[test]
fn the_scan_declines_what_only_a_parse_reads_exactly() {
    let declined: Vec<&str> = LINES
        .iter()
        .copied()
        .filter(|l| Scanned::parse(l).is_none())
        .collect();
    for odd in [
        // Repeated keys, at the top and in the message or a block.
        r#"{"type":"model_change","id":"r1","id":"r2","parentId":"e1"}"#,
        r#"{"type":"session_state","id":"s2","parentId":"s1","state":"sleep","state":"archived"}"#,
        r#"{"type":"message","id":"m6","parentId":"m5","message":{"role":"assistant","role":"user","content":"x"}}"#,
        // Numbers where the envelope reads a string, or beyond a double in content.
        r#"{"type":"model_change","id":1e400,"parentId":5,"provider":"p"}"#,
        r#"{"type":"message","id":"m5","parentId":"m4","message":{"role":5,"content":"x"}}"#,
        r#"{"type":"message","id":"m9","parentId":"m8","message":{"role":"assistant","content":[1e400]}}"#,
        // A message that is not an object, lone surrogates, not an object at all.
        r#"{"type":"message","id":"m1","parentId":"m0","timestamp":"2026-01-01T00:00:11.000Z","message":"text"}"#,
        r#"5"#,
        r#"{"type":"model_change","id":"bad""#,
    ] {
        assert!(declined.contains(&odd), "{odd}");
    }
    // Plain records of every kind are scanned.
    assert!(declined.len() <= 20, "{declined:#?}");
}

#[test]
fn invalid_utf8_and_every_fixture_read_alike() {
    // Invalid UTF-8 is never scanned (the scan takes text): the payload is parsed.
    let mut lines: Vec<Vec<u8>> = vec![
        b"{\"type\":\"model_change\",\"id\":\"x\xff\",\"parentId\":null}".to_vec(),
        b"{\"type\":\"message\",\"id\":\"y\",\"parentId\":\"x\xef\xbf\xbd\",\"message\":{\"role\":\"user\",\"content\":\"\xc3\"}}".to_vec(),
    ];
    for dir in ["legacy", "leniency", "edge", "generated"] {
        let mut files: Vec<_> = std::fs::read_dir(fixtures().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            let bytes = std::fs::read(&f).unwrap();
            lines.extend(
                bytes
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
    }
    let refs: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
    let n = assert_same(&refs, Path::new("/s/f.jsonl"));
    assert!(n > 100, "{n} of {} lines scanned", refs.len());
}

#[test]
fn a_scanned_record_is_not_parsed_again() {
    // White box: the bytes outside the scanned ranges are not read. A payload whose
    // other bytes do not parse is indexed whole from the scan of the intact text.
    let line =
        r#"{"type":"label","id":"l1","parentId":null,"targetId":"a","label":"x","pad":"...."}"#;
    let broken = line.replace("\"....\"", "!!!!!!");
    assert_eq!(broken.len(), line.len());
    let (_, scan) = Scanned::parse(line).unwrap();
    let path = Path::new("/s/w.jsonl");
    let fs = sim();
    write(fs.clone(), path, HEAD);
    let (mut ix, _) = open(fs.clone(), path);
    let mut w = writer(fs.clone(), path);
    let a = w
        .append(kinds::ENTRY, broken.as_bytes(), Durability::Buffered)
        .unwrap();
    ix.observe_scanned(kinds::ENTRY, &a, broken.as_bytes(), &scan)
        .unwrap();
    assert_eq!(ix.counts().unparsable, 0);
    assert_eq!(ix.labels().collect::<Vec<_>>(), [("a", "x")]);
    // Ranges that do not fit the payload: it is parsed (and found unparsable).
    let a = w.append(kinds::ENTRY, b"{", Durability::Buffered).unwrap();
    ix.observe_scanned(kinds::ENTRY, &a, b"{", &scan).unwrap();
    assert_eq!(ix.counts().unparsable, 1);
}

/// A small deterministic generator (no dependency): a linear congruential sequence.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

/// Values of every JSON kind, the odd ones included.
const VALUES: &[&str] = &[
    r#""a""#,
    r#""b""#,
    r#""""#,
    r#""e\u0073c""#,
    r#""\n\"q\"""#,
    r#""2026-01-01T00:00:00.000Z""#,
    r#""not a date""#,
    r#""user""#,
    r#""assistant""#,
    r#""message""#,
    r#""label""#,
    r#""session_info""#,
    "0",
    "-0",
    "1.0",
    "5",
    "1e400",
    "-1e400",
    "1767225600000",
    "null",
    "true",
    "false",
    "{}",
    r#"{"k":[1,{"x":null}]}"#,
    "[]",
    r#"[null]"#,
    r#"["a",["b"]]"#,
];

const TOP: &[&str] = &[
    "type",
    "id",
    "parentId",
    "timestamp",
    "message",
    "targetId",
    "label",
    "name",
    "state",
    "status",
    "other",
];

/// A `message` value: an object of role, content and timestamp (sometimes repeated or
/// missing), or another value.
fn message(g: &mut Lcg) -> String {
    if g.below(6) == 0 {
        return g.pick(VALUES).to_owned();
    }
    const CONTENT: &[&str] = &[
        r#""text""#,
        r#""""#,
        r#"[{"type":"text","text":"x"},{"type":"image","data":""}]"#,
        r#"[{"type":"text","text":"x"},null]"#,
        r#"[{"type":"text","type":"text","text":"x"}]"#,
        r#"[1,"s",[null]]"#,
        "[]",
        "null",
        "7",
        r#"{"text":"x"}"#,
    ];
    let mut parts = Vec::new();
    for _ in 0..g.below(5) {
        let part = match g.below(4) {
            0 => format!(
                r#""role":{}"#,
                g.pick(&[
                    r#""user""#,
                    r#""assistant""#,
                    r#""toolResult""#,
                    "5",
                    "null"
                ])
            ),
            1 => format!(r#""content":{}"#, g.pick(CONTENT)),
            2 => format!(
                r#""timestamp":{}"#,
                g.pick(&["1", "1.5e12", "1e400", r#""x""#, "null"])
            ),
            _ => format!(r#""extra":{}"#, g.pick(VALUES)),
        };
        parts.push(part);
    }
    format!("{{{}}}", parts.join(","))
}

/// A record of random keys and values (keys repeat now and then), or now and then not
/// an object.
fn record(g: &mut Lcg, i: usize) -> String {
    if g.below(40) == 0 {
        return g.pick(&["5", "null", r#""s""#, "[1]", "{"]).to_owned();
    }
    let mut parts = vec![format!(r#""id":"r{i}""#)];
    if g.below(2) == 0 {
        parts.push(r#""type":"message""#.to_owned());
        parts.push(format!(r#""message":{}"#, message(g)));
    }
    if g.below(3) > 0 {
        parts.push(format!(r#""parentId":"r{}""#, g.below(i + 1)));
    }
    for _ in 0..g.below(6) {
        let key = g.pick(TOP);
        let value = match key {
            "message" => message(g),
            "type" => g
                .pick(&[
                    r#""message""#,
                    r#""label""#,
                    r#""session_info""#,
                    r#""session_state""#,
                    r#""agent_status""#,
                    r#""child_usage_attributed""#,
                    r#""future""#,
                    "5",
                ])
                .to_owned(),
            _ => g.pick(VALUES).to_owned(),
        };
        parts.push(format!("{key:?}:{value}"));
    }
    // The first keys in a shuffled order.
    let k = g.below(parts.len());
    parts.swap(0, k);
    format!("{{{}}}", parts.join(","))
}

#[test]
fn generated_records_read_alike_scanned_or_parsed() {
    // Many short sessions: what a session keeps of its first records (its first
    // message, the first reason the reference would drop it) is compared each time.
    let mut scanned = 0;
    for seed in 1..=200u64 {
        let mut g = Lcg(seed);
        let lines: Vec<String> = (0..12).map(|i| record(&mut g, i)).collect();
        let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_bytes()).collect();
        scanned += assert_same(&refs, Path::new(&format!("/s/g{seed}.jsonl")));
    }
    // Enough records take the scan for the comparison to mean something.
    assert!(scanned > 600, "{scanned} of 2,400 scanned");
}

#[test]
fn a_reserved_index_answers_as_one_that_grew() {
    // Room made before any record, and in the middle (the id map rehashed), changes
    // no answer and no sidecar byte.
    let lines: Vec<&[u8]> = LINES.iter().map(|l| l.as_bytes()).collect();
    let path = Path::new("/s/r.jsonl");
    let fs = sim();
    write(fs.clone(), path, HEAD);
    let (mut grown, _) = open(fs.clone(), path);
    let mut reserved = grown.clone();
    reserved.reserve(3);
    let mut w = writer(fs.clone(), path);
    for (i, line) in lines.iter().enumerate() {
        let a = w.append(kinds::ENTRY, line, Durability::Buffered).unwrap();
        grown.observe(kinds::ENTRY, &a, line).unwrap();
        if i == 10 {
            reserved.reserve(10_000);
        }
        reserved.observe(kinds::ENTRY, &a, line).unwrap();
    }
    w.sync().unwrap();
    assert_eq!(fingerprint(&reserved), fingerprint(&grown));
    let from_grown = saved(&grown, fs.as_ref(), path);
    assert_eq!(
        saved(&reserved, fs.as_ref(), path),
        from_grown,
        "sidecar bytes"
    );
}
