//! The seeded generator of random legacy sessions (v1/v2/v3 JSONL) for the
//! differential fuzzer. `generate(seed)` is a pure function of the seed: changing
//! what it produces for a seed changes the meaning of every recorded seed, so the
//! CI replay commits the generated inputs themselves, not just the seeds.
//!
//! What it covers (weights in the code): headers v1/v2/v3 and odd versions; every
//! entry type and message role; branches, orphans, duplicate ids, second roots,
//! self-parents, forward parents (cycles), a leaf on an older branch; compaction and
//! branch-summary variants including `firstKeptEntryId`/`firstKeptEntryIndex` edge
//! cases; odd field types (numbers, booleans, null, arrays, objects where strings
//! are expected) and missing fields; every timestamp form V8 or we might read
//! differently; number spellings (`1.0`, `-0.0`, `1e400`, integers past 2^53);
//! duplicate JSON keys; UTF-8 BOMs, CRLF, blank and Unicode-whitespace lines,
//! malformed, truncated and invalid-UTF-8 lines; many siblings (sort order).

use serde_json::{Map, Value, json};

/// A small deterministic PRNG (SplitMix64).
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        let mut r = Self(seed ^ 0x5eed_d1ff_f022_0001);
        r.next();
        r
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        let n64 = u64::try_from(n.max(1)).unwrap_or(u64::MAX);
        usize::try_from(self.next() % n64).unwrap_or(0)
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent / 100`.
    pub(crate) fn pct(&mut self, percent: u32) -> bool {
        self.next() % 10_000 < u64::from(percent) * 100
    }

    /// True with probability `permille / 1000`.
    pub(crate) fn permille(&mut self, permille: u32) -> bool {
        self.next() % 1_000 < u64::from(permille)
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Index into `weights`, chosen in proportion to them.
    pub(crate) fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|w| u64::from(*w)).sum();
        let mut r = self.next() % total.max(1);
        for (i, w) in weights.iter().enumerate() {
            let w = u64::from(*w);
            if r < w {
                return i;
            }
            r -= w;
        }
        weights.len() - 1
    }

    fn hex(&mut self, n: usize) -> String {
        let mut s = String::new();
        while s.len() < n {
            s.push_str(&format!("{:016x}", self.next()));
        }
        s.truncate(n);
        s
    }

    fn uuid(&mut self) -> String {
        let h = self.hex(32);
        format!(
            "{}-{}-7{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[13..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

/// Text that stands for a raw JSON number token in the rendered line (serde_json
/// would respell it): `"\u0000RAW:<token>"` is replaced by `<token>`.
const RAW: &str = "\u{0}RAW:";

fn raw(token: &str) -> Value {
    Value::String(format!("{RAW}{token}"))
}

/// A value of an unexpected type (or a raw number spelling).
fn odd(r: &mut Rng) -> Value {
    match r.below(14) {
        0 => json!(42),
        1 => json!(true),
        2 => json!(false),
        3 => Value::Null,
        4 => json!([]),
        5 => json!(["a", 1]),
        6 => json!({}),
        7 => json!({"k": "v"}),
        8 => json!(""),
        9 => raw("1e400"),
        10 => raw("-0.0"),
        11 => raw("1.0"),
        12 => json!(0),
        _ => raw("9007199254740993"),
    }
}

/// A `message.timestamp`-style number (ms), sometimes spelled oddly.
fn ms_value(r: &mut Rng, ms: i64) -> Value {
    match r.weighted(&[85, 3, 3, 2, 2, 2, 1, 2]) {
        0 => json!(ms),
        1 => raw(&format!("{ms}.0")),
        2 => raw(&format!("{}e3", ms / 1000)),
        3 => json!(ms as f64 + 0.5),
        4 => raw("-0.0"),
        5 => raw("1e400"),
        6 => raw("12345678901234567890"),
        _ => odd(r),
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const LONG_MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// Civil date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, usize, usize) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        usize::try_from(m).unwrap_or(1),
        usize::try_from(d).unwrap_or(1),
    )
}

/// Timestamp forms. The session picks a main one; entries sometimes use another.
const FORMS: usize = 30;

/// `ms` (a UTC instant) written in form `form`, or an odd value for the non-string
/// forms.
fn timestamp(r: &mut Rng, ms: i64, form: usize) -> Value {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    let wd = DAYS[usize::try_from(days.rem_euclid(7)).unwrap_or(0)];
    let mon = MONTHS[mo - 1];
    let s = match form {
        0 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z"),
        1 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        2 => format!("{y:04}-{mo:02}-{d:02}t{h:02}:{mi:02}:{s:02}.{milli:03}z"),
        3 => format!(
            "{y:04}-{mo:02}-{d:02}T{:02}:{mi:02}:{s:02}.{milli:03}+02:00",
            (h + 2) % 24
        ),
        4 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}+0000"),
        5 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}"),
        6 => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}"),
        7 => format!("{y:04}-{mo:02}-{d:02}"),
        8 => format!("{wd}, {d:02} {mon} {y} {h:02}:{mi:02}:{s:02} GMT"),
        9 => format!("{wd}, {d} {mon} {y} {h:02}:{mi:02}:{s:02} +0000"),
        10 => format!(
            "{wd} {mon} {d:02} {y} {h:02}:{mi:02}:{s:02} GMT+0000 (Coordinated Universal Time)"
        ),
        11 => format!("{} {d}, {y} {h:02}:{mi:02}:{s:02}", LONG_MONTHS[mo - 1]),
        12 => format!("{d} {} {y}", LONG_MONTHS[mo - 1]),
        13 => format!("{y:04}/{mo:02}/{d:02} {h:02}:{mi:02}:{s:02}"),
        14 => format!("{y}-{mo}-{d}"),
        15 => format!("{y}-{mo}-{d}T{h}:{mi}:{s}Z"),
        16 => format!("{y:04}-02-30T{h:02}:{mi:02}:{s:02}Z"),
        17 => format!("{y:04}-{mo:02}-{d:02}T24:00:00Z"),
        18 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}+24:00"),
        19 => format!("+00{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z"),
        20 => format!("\u{a0}{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z"),
        21 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}123Z"),
        22 => format!("{y:04}-13-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        23 => r
            .pick(&["garbage", "", "now", "0", "2026", "-1", "T", "Z"])
            .to_string(),
        24 => format!("{mon} {d} {y}"),
        25 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}Z"),
        26 => return json!(ms),
        27 => return odd(r),
        28 => return Value::Null,
        _ => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}-05:00"),
    };
    Value::String(s)
}

/// The plan of one session, before rendering.
struct Plan {
    version: Version,
    /// The session's main timestamp form and how often (percent) entries stray.
    form: usize,
    stray: u32,
    /// Percent of entries that get one odd field.
    oddness: u32,
    /// The clock (ms) and its step.
    now: i64,
    /// Ids given out so far (v2/v3), in file order; and the chain tip.
    ids: Vec<String>,
    /// Ids decided in advance (forward parents and references).
    future: Vec<String>,
    tip: Option<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
    V3,
    /// An odd `version` value (4, "3", null, 0, 2.5…).
    Odd,
}

impl Plan {
    fn ts(&mut self, r: &mut Rng) -> Value {
        // Mostly forward, sometimes equal (ties) or backwards (clock skew).
        match r.weighted(&[80, 10, 8, 2]) {
            0 => self.now += i64::try_from(r.range(1, 90_000)).unwrap_or(1),
            1 => {}
            2 => self.now -= i64::try_from(r.range(1, 3_600_000)).unwrap_or(1),
            _ => self.now += 86_400_000 * i64::try_from(r.range(1, 400)).unwrap_or(1),
        }
        let form = if r.pct(self.stray) {
            r.below(FORMS)
        } else {
            self.form
        };
        timestamp(r, self.now, form)
    }

    fn fresh_id(&mut self, r: &mut Rng) -> String {
        if !self.future.is_empty() && r.pct(30) {
            return self.future.remove(0);
        }
        if r.pct(4) { r.uuid() } else { r.hex(8) }
    }

    /// The entry's id value.
    fn id(&mut self, r: &mut Rng) -> Option<Value> {
        let choice = r.weighted(&[92, 4, 2, 1, 1]);
        let id = match choice {
            1 if !self.ids.is_empty() => self.ids[r.below(self.ids.len())].clone(),
            2 => return Some(odd(r)),
            3 => return None,
            4 => "root".to_owned(),
            _ => self.fresh_id(r),
        };
        Some(Value::String(id))
    }

    /// The entry's parentId value (`None`: no key).
    fn parent(&mut self, r: &mut Rng) -> Option<Value> {
        let any = |p: &mut Self, r: &mut Rng| {
            if p.ids.is_empty() {
                Value::Null
            } else {
                Value::String(p.ids[r.below(p.ids.len())].clone())
            }
        };
        match r.weighted(&[72, 12, 5, 4, 2, 2, 3]) {
            0 => Some(self.tip.clone().map_or(Value::Null, Value::String)),
            1 => Some(any(self, r)),
            2 => Some(Value::Null),
            3 => Some(Value::String(
                r.pick(&["zzzzzzzz", "missing", "ROOT"]).to_string(),
            )),
            4 => {
                let f = r.hex(8);
                self.future.push(f.clone());
                Some(Value::String(f))
            }
            5 => None,
            _ => Some(match r.below(4) {
                0 => json!(""),
                1 => json!(7),
                2 => json!(["a"]),
                _ => odd(r),
            }),
        }
    }

    /// A reference to an entry (targetId, fromId, firstKeptEntryId).
    fn reference(&mut self, r: &mut Rng) -> Value {
        match r.weighted(&[60, 15, 8, 7, 5, 5]) {
            0 if !self.ids.is_empty() => {
                // Mostly recent entries (likely on the current path).
                let n = self.ids.len();
                let back = r.below(n.min(6));
                Value::String(self.ids[n - 1 - back].clone())
            }
            1 if !self.ids.is_empty() => Value::String(self.ids[r.below(self.ids.len())].clone()),
            2 => {
                let f = r.hex(8);
                self.future.push(f.clone());
                Value::String(f)
            }
            3 => Value::String("zzzzzzzz".into()),
            4 => Value::String("root".into()),
            _ => odd(r),
        }
    }
}

fn text(r: &mut Rng) -> String {
    const WORDS: [&str; 16] = [
        "hello",
        "world",
        "fix the bug",
        "ok",
        "λ",
        "日本語",
        "emoji 😀",
        "tab\there",
        "line\nbreak",
        "quote \" and \\",
        "\u{2028}sep",
        "  padded  ",
        "",
        "café",
        "\u{feff}bom",
        "x",
    ];
    let n = r.range(1, 3);
    (0..n)
        .map(|_| *r.pick(&WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

fn text_blocks(r: &mut Rng) -> Value {
    let n = r.range(0, 3);
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(match r.weighted(&[70, 10, 10, 5, 5]) {
            0 => json!({"type": "text", "text": text(r)}),
            1 => json!({"type": "image", "data": "aGk=", "mimeType": "image/png"}),
            2 => json!({"type": "text", "text": odd(r)}),
            3 => json!({"type": "thinking", "thinking": text(r)}),
            _ => odd(r),
        });
    }
    Value::Array(v)
}

fn content(r: &mut Rng) -> Value {
    match r.weighted(&[55, 38, 7]) {
        0 => Value::String(text(r)),
        1 => text_blocks(r),
        _ => odd(r),
    }
}

fn message(r: &mut Rng, p: &mut Plan) -> Value {
    let ms = p.now;
    let role = r.weighted(&[34, 30, 10, 8, 4, 4, 2, 2, 2, 1, 3]);
    let mut m = Map::new();
    match role {
        0 => {
            m.insert("role".into(), "user".into());
            m.insert("content".into(), content(r));
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        1 => {
            m.insert("role".into(), "assistant".into());
            let mut blocks = vec![];
            for _ in 0..r.range(0, 3) {
                blocks.push(match r.below(4) {
                    0 => json!({"type": "thinking", "thinking": text(r), "thinkingSignature": "sig"}),
                    1 => json!({"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}}),
                    _ => json!({"type": "text", "text": text(r)}),
                });
            }
            m.insert("content".into(), Value::Array(blocks));
            m.insert("api".into(), "anthropic-messages".into());
            if !r.pct(5) {
                m.insert(
                    "provider".into(),
                    (*r.pick(&["anthropic", "openai", "google"])).into(),
                );
            }
            if !r.pct(5) {
                m.insert(
                    "model".into(),
                    (*r.pick(&["claude-sonnet-4-5", "gpt-5", "gemini-2.5-pro"])).into(),
                );
            }
            m.insert(
                "usage".into(),
                json!({"input": r.below(5000), "output": r.below(900), "cacheRead": 0, "cacheWrite": 0,
                       "totalTokens": r.below(6000),
                       "cost": {"input": 0.003, "output": 0.015, "cacheRead": 0, "cacheWrite": 0, "total": 0.018}}),
            );
            m.insert(
                "stopReason".into(),
                (*r.pick(&["stop", "toolUse", "aborted", "error", "length"])).into(),
            );
            if r.pct(5) {
                m.insert("errorMessage".into(), "boom".into());
            }
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        2 => {
            m.insert("role".into(), "toolResult".into());
            m.insert("toolCallId".into(), "call_1".into());
            m.insert("toolName".into(), "bash".into());
            m.insert("content".into(), text_blocks(r));
            if r.pct(30) {
                m.insert("details".into(), json!({"exit": 0}));
            }
            m.insert("isError".into(), r.pct(20).into());
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        3 => {
            m.insert("role".into(), "bashExecution".into());
            m.insert("command".into(), "ls -la".into());
            m.insert("output".into(), text(r).into());
            m.insert(
                "exitCode".into(),
                if r.pct(10) {
                    Value::Null
                } else {
                    json!(r.below(3))
                },
            );
            m.insert("cancelled".into(), r.pct(10).into());
            m.insert("truncated".into(), r.pct(10).into());
            if r.pct(20) {
                m.insert("fullOutputPath".into(), "/tmp/out.txt".into());
            }
            if r.pct(20) {
                m.insert("excludeFromContext".into(), true.into());
            }
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        4 | 5 => {
            m.insert(
                "role".into(),
                if role == 4 { "custom" } else { "hookMessage" }.into(),
            );
            m.insert("customType".into(), "ext".into());
            m.insert("content".into(), content(r));
            m.insert("display".into(), r.pct(50).into());
            if r.pct(30) {
                m.insert("details".into(), json!({"k": 1}));
            }
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        6 => {
            m.insert("role".into(), "branchSummary".into());
            m.insert("summary".into(), text(r).into());
            m.insert("fromId".into(), p.reference(r));
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        7 => {
            m.insert("role".into(), "compactionSummary".into());
            m.insert("summary".into(), text(r).into());
            m.insert("tokensBefore".into(), json!(r.below(100_000)));
            m.insert("timestamp".into(), ms_value(r, ms));
        }
        8 => {
            m.insert("role".into(), "system".into());
            m.insert("content".into(), content(r));
        }
        9 => {
            m.insert("content".into(), content(r));
        }
        _ => return odd(r),
    }
    Value::Object(m)
}

/// One entry of a v2/v3 session (or a v1 one: `v1` drops ids and parents and uses
/// `firstKeptEntryIndex`). `line` is the entry's index in the file array (header 0).
fn entry(r: &mut Rng, p: &mut Plan, v1: bool, line: usize) -> Map<String, Value> {
    let kind = r.weighted(&[52, 5, 5, 6, 5, 4, 6, 6, 4, 2, 1, 1]);
    let mut e = Map::new();
    let mut tail = Map::new(); // custom and custom_message put the tree fields last
    let ts = p.ts(r);
    let (id, parent) = if v1 {
        (None, None)
    } else {
        (p.id(r), p.parent(r))
    };
    let put_base = |m: &mut Map<String, Value>| {
        if let Some(id) = &id {
            m.insert("id".into(), id.clone());
        }
        if let Some(pa) = &parent {
            m.insert("parentId".into(), pa.clone());
        }
        m.insert("timestamp".into(), ts.clone());
    };
    let type_name = [
        "message",
        "thinking_level_change",
        "model_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "mystery",
        "",
        "session",
    ][kind];
    if kind != 10 {
        e.insert("type".into(), type_name.into());
    }
    match kind {
        5 | 6 => {
            if kind == 5 {
                e.insert("customType".into(), "ext-state".into());
                if r.pct(80) {
                    e.insert("data".into(), json!({"n": r.below(10)}));
                }
            } else {
                e.insert("customType".into(), "ext".into());
                e.insert("content".into(), content(r));
                if !r.pct(5) {
                    e.insert("display".into(), r.pct(60).into());
                }
                if r.pct(30) {
                    e.insert("details".into(), json!({"k": 1}));
                }
            }
            put_base(&mut tail);
        }
        11 => {
            // A second header line.
            e.insert("version".into(), 3.into());
            e.insert("id".into(), r.uuid().into());
            e.insert("timestamp".into(), ts.clone());
            e.insert("cwd".into(), "/second".into());
        }
        _ => {
            put_base(&mut e);
            match kind {
                0 => {
                    if !r.pct(2) {
                        e.insert("message".into(), message(r, p));
                    }
                }
                1 => {
                    e.insert(
                        "thinkingLevel".into(),
                        (*r.pick(&["off", "minimal", "low", "medium", "high", "xhigh"])).into(),
                    );
                }
                2 => {
                    e.insert(
                        "provider".into(),
                        (*r.pick(&["anthropic", "openai"])).into(),
                    );
                    e.insert("modelId".into(), (*r.pick(&["claude", "gpt-5"])).into());
                }
                3 => {
                    e.insert("summary".into(), text(r).into());
                    if v1 {
                        let idx = match r.below(6) {
                            0 => json!(0),
                            1 => json!(line + 3),
                            2 => json!(999),
                            3 => odd(r),
                            _ => json!(r.range(1, line.max(1))),
                        };
                        e.insert("firstKeptEntryIndex".into(), idx);
                    } else if !r.pct(8) {
                        e.insert("firstKeptEntryId".into(), p.reference(r));
                    }
                    e.insert("tokensBefore".into(), json!(r.below(200_000)));
                    if r.pct(50) {
                        e.insert(
                            "details".into(),
                            json!({"readFiles": [], "modifiedFiles": []}),
                        );
                    }
                    if r.pct(60) {
                        e.insert("fromHook".into(), false.into());
                    }
                }
                4 => {
                    e.insert("fromId".into(), p.reference(r));
                    let s = match r.weighted(&[80, 12, 8]) {
                        0 => Value::String(text(r)),
                        1 => json!(""),
                        _ => Value::Null,
                    };
                    e.insert("summary".into(), s);
                    if r.pct(30) {
                        e.insert("details".into(), json!({"files": []}));
                    }
                    if r.pct(40) {
                        e.insert("fromHook".into(), r.pct(50).into());
                    }
                }
                7 => {
                    e.insert("targetId".into(), p.reference(r));
                    match r.weighted(&[70, 12, 10, 8]) {
                        0 => {
                            e.insert(
                                "label".into(),
                                (*r.pick(&["checkpoint", "bookmark", "  spaced  ", "ü"])).into(),
                            );
                        }
                        1 => {}
                        2 => {
                            e.insert("label".into(), "".into());
                        }
                        _ => {
                            e.insert("label".into(), odd(r));
                        }
                    }
                }
                8 => match r.weighted(&[65, 10, 10, 15]) {
                    0 => {
                        e.insert(
                            "name".into(),
                            (*r.pick(&["my session", "  trimmed  ", "名前", "x"])).into(),
                        );
                    }
                    1 => {
                        e.insert("name".into(), "".into());
                    }
                    2 => {}
                    _ => {
                        e.insert("name".into(), odd(r));
                    }
                },
                9 => {
                    e.insert("payload".into(), json!({"x": 1}));
                }
                _ => {
                    if r.pct(50) {
                        e.insert("message".into(), message(r, p));
                    }
                }
            }
        }
    }
    for (k, v) in tail {
        e.insert(k, v);
    }
    if let Some(Value::String(s)) = &id {
        p.ids.push(s.clone());
        if kind != 11 {
            p.tip = Some(s.clone());
        }
    }
    // One odd field.
    if r.pct(p.oddness) {
        let keys: Vec<String> = e.keys().cloned().collect();
        if !keys.is_empty() {
            let k = keys[r.below(keys.len())].clone();
            if r.pct(20) {
                e.shift_remove(&k);
            } else {
                e.insert(k, odd(r));
            }
        }
    }
    // An odd field inside the message.
    if r.pct(p.oddness)
        && let Some(Value::Object(m)) = e.get_mut("message")
    {
        let keys: Vec<String> = m.keys().cloned().collect();
        if !keys.is_empty() {
            let k = keys[r.below(keys.len())].clone();
            if r.pct(25) {
                m.shift_remove(&k);
            } else {
                m.insert(k, odd(r));
            }
        }
    }
    e
}

/// Renders a record as one compact line, with raw number tokens put back and,
/// sometimes, a duplicated key (JSON.parse keeps the last occurrence).
fn render(r: &mut Rng, v: &Value, dup_keys: u32) -> String {
    let mut s = v.to_string();
    while let Some(at) = s.find("\"\\u0000RAW:") {
        let Some(end) = s[at + 1..].find('"').map(|e| at + 1 + e) else {
            break;
        };
        let token = s[at + 11..end].to_owned();
        s.replace_range(at..=end, &token);
    }
    if r.pct(dup_keys) && s.starts_with('{') && s.len() > 2 {
        let key = *r.pick(&["parentId", "id", "type", "timestamp", "message", "label"]);
        let val = match r.below(4) {
            0 => "\"zzz\"".to_owned(),
            1 => "null".to_owned(),
            2 => "1".to_owned(),
            _ => "{\"role\":\"user\",\"content\":\"dup\"}".to_owned(),
        };
        if r.pct(70) {
            s.insert_str(1, &format!("\"{key}\":{val},"));
        } else {
            s.insert_str(s.len() - 1, &format!(",\"{key}\":{val}"));
        }
    }
    s
}

/// The legacy session file for `seed`.
pub(crate) fn generate(seed: u64) -> Vec<u8> {
    let mut r = Rng::new(seed);
    let version =
        [Version::V3, Version::V2, Version::V1, Version::Odd][r.weighted(&[50, 20, 22, 8])];
    let form = if r.pct(60) { 0 } else { r.below(FORMS) };
    let stray = *r.pick(&[0, 0, 5, 10, 30]);
    let oddness = *r.pick(&[0, 0, 0, 3, 8, 15]);
    let mut p = Plan {
        version,
        form,
        stray,
        oddness,
        now: 1_768_986_000_000 + i64::try_from(r.below(1 << 20)).unwrap_or(0) * 1000,
        ids: Vec::new(),
        future: Vec::new(),
        tip: None,
    };
    // Header.
    let mut h = Map::new();
    h.insert("type".into(), "session".into());
    match p.version {
        Version::V1 => {}
        Version::V2 => {
            h.insert("version".into(), 2.into());
        }
        Version::V3 => {
            h.insert("version".into(), 3.into());
        }
        Version::Odd => {
            let v = match r.below(7) {
                0 => json!(4),
                1 => json!("3"),
                2 => Value::Null,
                3 => json!(0),
                4 => json!(2.5),
                5 => json!(1),
                _ => json!("v2"),
            };
            h.insert("version".into(), v);
        }
    }
    let hid = match r.weighted(&[94, 2, 2, 2]) {
        0 => Value::String(r.uuid()),
        1 => json!(12345),
        2 => Value::String("../escape".into()),
        _ => Value::String(String::new()),
    };
    if !r.permille(5) {
        h.insert("id".into(), hid);
    }
    let hts = if r.pct(85) {
        let now = p.now;
        timestamp(&mut r, now, form)
    } else {
        let now = p.now;
        let f = r.below(FORMS);
        timestamp(&mut r, now, f)
    };
    h.insert("timestamp".into(), hts);
    h.insert(
        "cwd".into(),
        if r.pct(3) {
            odd(&mut r)
        } else {
            (*r.pick(&["/home/dev/project", "/tmp/x", "C:\\work"])).into()
        },
    );
    if r.pct(10) {
        h.insert(
            "parentSession".into(),
            if r.pct(80) {
                "/home/dev/.pi/agent/sessions/p.jsonl".into()
            } else {
                odd(&mut r)
            },
        );
    }
    if p.version == Version::V1 && r.pct(50) {
        h.insert("provider".into(), "anthropic".into());
        h.insert("modelId".into(), "claude".into());
        h.insert("thinkingLevel".into(), "off".into());
        if r.pct(30) {
            h.insert("branchedFrom".into(), "/old.jsonl".into());
        }
    }
    let v1 = p.version == Version::V1;
    // Entries.
    let wide = !v1 && r.pct(2);
    let n = if wide {
        r.range(60, 90)
    } else {
        match r.weighted(&[3, 20, 60, 17]) {
            0 => 0,
            1 => r.range(1, 4),
            2 => r.range(5, 15),
            _ => r.range(16, 40),
        }
    };
    let dup_keys = *r.pick(&[0, 0, 0, 2, 6]);
    let mut lines: Vec<Vec<u8>> = Vec::new();
    lines.push(render(&mut r, &Value::Object(h), 0).into_bytes());
    let mut hub: Option<String> = None;
    for i in 0..n {
        if wide && i > 0 {
            // Many children of one entry: the tree's sort order with odd timestamps.
            p.tip.clone_from(&hub);
        }
        let e = entry(&mut r, &mut p, v1, i + 1);
        if wide && i == 0 {
            hub = e.get("id").and_then(Value::as_str).map(str::to_owned);
        }
        lines.push(render(&mut r, &Value::Object(e), dup_keys).into_bytes());
    }
    // Line-level noise.
    if r.pct(8) {
        // malformed lines
        for _ in 0..r.range(1, 3) {
            let at = r.range(1, lines.len());
            let bad: Vec<u8> = match r.below(6) {
                0 => b"garbage".to_vec(),
                1 => b"{".to_vec(),
                2 => {
                    let src = &lines[r.below(lines.len())];
                    src[..src.len() / 2].to_vec()
                }
                3 => b"[1,2,3]".to_vec(),
                4 => b"\"just a string\"".to_vec(),
                _ => b"null".to_vec(),
            };
            lines.insert(at, bad);
        }
    }
    if r.pct(3) && lines.len() > 1 {
        // invalid UTF-8 inside a line
        let i = r.range(1, lines.len() - 1);
        let line = &mut lines[i];
        if let Some(q) = line.iter().rposition(|b| *b == b'"') {
            let choices: [&[u8]; 3] = [&[0xff], &[0xc3], &[0xed, 0xa0, 0x80]];
            let bytes = *r.pick(&choices);
            let q = q.saturating_sub(1).max(1);
            let mut v = line[..q].to_vec();
            v.extend_from_slice(bytes);
            v.extend_from_slice(&line[q..]);
            *line = v;
        }
    }
    if r.pct(4) {
        // garbage before the header (the reference accepts it), or no header
        if r.pct(70) {
            lines.insert(0, b"not json".to_vec());
        } else {
            lines.remove(0);
        }
    }
    let crlf = r.pct(6);
    let mut out = Vec::new();
    if r.pct(4) {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    if r.pct(3) {
        out.extend_from_slice(b"\n  \n");
    }
    let blank_between = r.pct(4);
    for (i, l) in lines.iter().enumerate() {
        out.extend_from_slice(l);
        if i + 1 < lines.len() {
            out.extend_from_slice(if crlf || r.pct(1) { b"\r\n" } else { b"\n" });
            if blank_between && r.pct(20) {
                let choices: [&[u8]; 4] = [b"\n", b" \n", b"\t\n", "\u{a0}\n".as_bytes()];
                let ws = *r.pick(&choices);
                out.extend_from_slice(ws);
            }
        }
    }
    // The end of the file.
    match r.weighted(&[82, 6, 5, 4, 3]) {
        0 => out.extend_from_slice(if crlf { b"\r\n" } else { b"\n" }),
        1 => {} // no final newline
        2 => {
            // Unicode whitespace after the last line, no newline
            let choices: [&str; 6] = [
                "\u{a0}", "\u{3000}", "\u{2028}", "\u{2029}", "\u{feff}", " \t",
            ];
            let ws = *r.pick(&choices);
            out.extend_from_slice(ws.as_bytes());
        }
        3 => {
            // a torn last line
            if let Some(last) = lines.last()
                && lines.len() > 1
            {
                out.push(b'\n');
                out.extend_from_slice(&last[..last.len() / 2]);
            }
        }
        _ => out.extend_from_slice(b"\n\n\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_deterministic() {
        for seed in [0, 1, 7, 12_345] {
            assert_eq!(generate(seed), generate(seed));
        }
        assert_ne!(generate(1), generate(2));
    }

    #[test]
    fn raw_number_tokens_are_put_back() {
        let mut r = Rng::new(1);
        let line = render(&mut r, &json!({"a": raw("1e400"), "b": raw("-0.0")}), 0);
        assert_eq!(line, r#"{"a":1e400,"b":-0.0}"#);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(20_474), (2026, 1, 21));
    }
}
