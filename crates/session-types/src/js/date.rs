//! `Date.parse` as V8 (node 20) runs it, for any string.
//!
//! The reference reads entry timestamps with `new Date(s).getTime()`. V8 first tries
//! the ECMA-262 date-time string format (`YYYY-MM-DDTHH:mm:ss.sssZ` and its shorter
//! forms, expanded years `±YYYYYY`, plus V8's extensions: any number of fraction
//! digits, `±hhmm` offsets, lower-case `t` and `z`), and whatever that does not finish
//! goes on through its legacy parser, which accepts month names, `2026/01/21`,
//! `2026-01-21 09:00:00`, RFC 2822 and `Date.prototype.toString()` output, unpadded
//! fields, am/pm, a few North American zone names and parenthesised comments. Fields are
//! range-checked one by one (a day of 1 to 31 in any month), then combined the way
//! `MakeDay` does, so `2026-02-30` is 2 March. This module is our own implementation of
//! those rules (V8's `src/date/dateparser*`), checked against a table node produced
//! (`tests/data/js_date.json`).
//!
//! **Local time.** Date-time forms without an offset (and every legacy form without a
//! zone) are local time in JavaScript. We read them as UTC: the result must not depend
//! on the machine, and the reference's oracle runs with `TZ=UTC`.

/// A field V8 has not seen yet (`kNone`).
const NONE: i32 = i32::MAX;
/// `new Date` accepts times up to 8.64e15 ms either side of the epoch.
const MAX_TIME_MS: i64 = 8_640_000_000_000_000;
/// `MakeDay` gives `NaN` for years outside ±1,000,000.
const MAX_YEAR: i64 = 1_000_000;
/// Digits past the ninth significant one of a numeral are read but ignored.
const MAX_SIGNIFICANT_DIGITS: usize = 9;

/// Milliseconds since the Unix epoch for what `Date.parse(s)` accepts, `None` where
/// it gives `NaN` (see the module docs; times without a zone are read as UTC).
///
/// ```
/// use session_types::js::date::parse;
/// assert_eq!(parse("2026-01-21T09:00:00.000Z"), Some(1_768_986_000_000));
/// assert_eq!(parse("2026-01-21t09:00:00+0100"), Some(1_768_982_400_000));
/// assert_eq!(parse("Wed, 21 Jan 2026 09:00:00 GMT"), Some(1_768_986_000_000));
/// assert_eq!(parse("2026-02-30"), parse("2026-03-02"));
/// assert_eq!(parse("2026-01-21T09:00:00+24:00"), None);
/// ```
pub fn parse(s: &str) -> Option<i64> {
    match canonical(s.as_bytes()) {
        Some(ms) => Some(ms),
        None => parse_general(s),
    }
}

/// `YYYY-MM-DDTHH:mm:ss.sssZ` exactly (what `toISOString()` writes, and every
/// timestamp an append stamps), read without the general parser: the same fields,
/// range-checked as it checks them, combined the same way. `None` for anything else
/// (then the general parser decides).
fn canonical(b: &[u8]) -> Option<i64> {
    let [
        y0,
        y1,
        y2,
        y3,
        b'-',
        m0,
        m1,
        b'-',
        d0,
        d1,
        b'T',
        h0,
        h1,
        b':',
        n0,
        n1,
        b':',
        s0,
        s1,
        b'.',
        f0,
        f1,
        f2,
        b'Z',
    ] = *b
    else {
        return None;
    };
    let digit = |c: u8| c.is_ascii_digit().then(|| i32::from(c - b'0'));
    let two = |a: u8, b: u8| Some(digit(a)? * 10 + digit(b)?);
    let year = two(y0, y1)? * 100 + two(y2, y3)?;
    let (month, day) = (two(m0, m1)?, two(d0, d1)?);
    let (hour, minute, second) = (two(h0, h1)?, two(n0, n1)?, two(s0, s1)?);
    let millisecond = two(f0, f1)? * 10 + digit(f2)?;
    if !(is_month(month) && is_day(day) && is_hour(hour) && is_minute(minute) && is_minute(second))
    {
        return None;
    }
    let day = make_day(year, month, day)?;
    let time = i64::from(hour) * 3_600_000
        + i64::from(minute) * 60_000
        + i64::from(second) * 1000
        + i64::from(millisecond);
    let t = day * 86_400_000 + time;
    (-MAX_TIME_MS..=MAX_TIME_MS).contains(&t).then_some(t)
}

/// [`parse`] by the general parser alone.
fn parse_general(s: &str) -> Option<i64> {
    let fields = parse_fields(s)?;
    let day = make_day(fields.year, fields.month, fields.day)?;
    let time = i64::from(fields.hour) * 3_600_000
        + i64::from(fields.minute) * 60_000
        + i64::from(fields.second) * 1000
        + i64::from(fields.millisecond);
    let mut t = day * 86_400_000 + time;
    if let Some(offset_s) = fields.utc_offset_s {
        t -= i64::from(offset_s) * 1000;
    }
    (-MAX_TIME_MS..=MAX_TIME_MS).contains(&t).then_some(t)
}

/// What the parser found: a calendar date (month 1-based, day 1–31 in any month), a
/// time of day (hour up to 24 at midnight) and an offset in seconds (`None`: local).
struct Fields {
    year: i32,
    month: i32,
    day: i32,
    hour: i32,
    minute: i32,
    second: i32,
    millisecond: i32,
    utc_offset_s: Option<i32>,
}

/// Days from 1970-01-01 to `year`-`month`-`day` as `MakeDay` counts them (day numbers
/// past the month's end roll over), `None` for years `MakeDay` refuses.
fn make_day(year: i32, month: i32, day: i32) -> Option<i64> {
    let y = i64::from(year);
    if !(-MAX_YEAR..=MAX_YEAR).contains(&y) {
        return None;
    }
    // Howard Hinnant's days_from_civil (proleptic Gregorian), for the 1st of the month.
    let m = i64::from(month);
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    Some(era * 146_097 + doe - 719_468 + i64::from(day) - 1)
}

/// `x` in `lo..=hi`.
fn between(x: i32, lo: i32, hi: i32) -> bool {
    (lo..=hi).contains(&x)
}
fn is_month(x: i32) -> bool {
    between(x, 1, 12)
}
fn is_day(x: i32) -> bool {
    between(x, 1, 31)
}
fn is_hour(x: i32) -> bool {
    between(x, 0, 23)
}
fn is_minute(x: i32) -> bool {
    between(x, 0, 59)
}
fn is_hour12(x: i32) -> bool {
    between(x, 0, 12)
}
fn is_millisecond(x: i32) -> bool {
    between(x, 0, 999)
}

/// JavaScript's WhiteSpace (not LineTerminator) among characters from `A` up: these
/// end a word; U+2028/U+2029 do not.
fn is_high_white_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{feff}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// What a word means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keyword {
    /// Not a word the parser knows.
    Unknown,
    /// `jan`…`dec` (any word starting with one), value 1–12.
    Month,
    /// `ut`, `utc`, `z`, `gmt`, and the North American zones; value in hours.
    Zone,
    /// `t`.
    TimeSeparator,
    /// `am` (0) or `pm` (12).
    AmPm,
}

/// Known words by their first three lower-case letters (`\0` past the end).
const KEYWORDS: [([u8; 3], Keyword, i32); 27] = [
    (*b"jan", Keyword::Month, 1),
    (*b"feb", Keyword::Month, 2),
    (*b"mar", Keyword::Month, 3),
    (*b"apr", Keyword::Month, 4),
    (*b"may", Keyword::Month, 5),
    (*b"jun", Keyword::Month, 6),
    (*b"jul", Keyword::Month, 7),
    (*b"aug", Keyword::Month, 8),
    (*b"sep", Keyword::Month, 9),
    (*b"oct", Keyword::Month, 10),
    (*b"nov", Keyword::Month, 11),
    (*b"dec", Keyword::Month, 12),
    (*b"am\0", Keyword::AmPm, 0),
    (*b"pm\0", Keyword::AmPm, 12),
    (*b"ut\0", Keyword::Zone, 0),
    (*b"utc", Keyword::Zone, 0),
    (*b"z\0\0", Keyword::Zone, 0),
    (*b"gmt", Keyword::Zone, 0),
    (*b"cdt", Keyword::Zone, -5),
    (*b"cst", Keyword::Zone, -6),
    (*b"edt", Keyword::Zone, -4),
    (*b"est", Keyword::Zone, -5),
    (*b"mdt", Keyword::Zone, -6),
    (*b"mst", Keyword::Zone, -7),
    (*b"pdt", Keyword::Zone, -7),
    (*b"pst", Keyword::Zone, -8),
    (*b"t\0\0", Keyword::TimeSeparator, 0),
];

/// One token of the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A run of ASCII digits: the value of its first nine significant digits (leading
    /// zeros skipped), and its length.
    Number {
        value: i32,
        len: usize,
    },
    /// One of `:` `-` `+` `.` `)`.
    Symbol(char),
    /// A run of characters from `A` up (white space excepted).
    Word {
        kind: Keyword,
        value: i32,
        len: usize,
    },
    WhiteSpace,
    /// A parenthesised comment or any other character.
    Unknown,
    End,
}

impl Token {
    fn number(self) -> Option<i32> {
        match self {
            Token::Number { value, .. } => Some(value),
            _ => None,
        }
    }
    fn is_number_of_len(self, n: usize) -> bool {
        matches!(self, Token::Number { len, .. } if len == n)
    }
    fn is_sign(self) -> bool {
        matches!(self, Token::Symbol('+' | '-'))
    }
    fn sign(self) -> i32 {
        if self == Token::Symbol('-') { -1 } else { 1 }
    }
    fn is_z(self) -> bool {
        matches!(
            self,
            Token::Word {
                kind: Keyword::Zone,
                value: 0,
                len: 1
            }
        )
    }
}

/// The tokenizer, one token of look-ahead. A NUL character ends the input, as in V8.
struct Scanner<'a> {
    rest: std::str::Chars<'a>,
    next: Token,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a str) -> Self {
        let mut sc = Self {
            rest: s.chars(),
            next: Token::End,
        };
        sc.next = sc.scan();
        sc
    }

    fn peek(&self) -> Token {
        self.next
    }

    fn next(&mut self) -> Token {
        let t = self.next;
        self.next = self.scan();
        t
    }

    fn skip_symbol(&mut self, c: char) -> bool {
        if self.next == Token::Symbol(c) {
            self.next = self.scan();
            true
        } else {
            false
        }
    }

    fn peek_char(&self) -> Option<char> {
        self.rest.clone().next().filter(|&c| c != '\0')
    }

    fn scan(&mut self) -> Token {
        let Some(c) = self.peek_char() else {
            return Token::End;
        };
        if c.is_ascii_digit() {
            // Leading zeros count towards the length, not towards the nine digits.
            let mut len = 0usize;
            while self.peek_char() == Some('0') {
                len += 1;
                self.rest.next();
            }
            let (mut value, mut significant) = (0i32, 0usize);
            while let Some(d) = self.peek_char().filter(char::is_ascii_digit) {
                if significant < MAX_SIGNIFICANT_DIGITS {
                    value = value * 10 + (d as i32 - '0' as i32);
                }
                significant += 1;
                self.rest.next();
            }
            return Token::Number {
                value,
                len: len + significant,
            };
        }
        if matches!(c, ':' | '-' | '+' | '.' | ')') {
            self.rest.next();
            return Token::Symbol(c);
        }
        if c >= 'A' && !is_high_white_space(c) {
            let mut prefix = [0u32; 3];
            let mut len = 0;
            while let Some(w) = self
                .peek_char()
                .filter(|&w| w >= 'A' && !is_high_white_space(w))
            {
                if len < 3 {
                    // V8 lower-cases by setting bit 5, whatever the character.
                    prefix[len] = u32::from(w) | 0x20;
                }
                // Lengths count UTF-16 code units, as V8 does.
                len += w.len_utf16();
                self.rest.next();
            }
            let (kind, value) = KEYWORDS
                .iter()
                .find(|(k, kind, _)| {
                    k.iter().zip(prefix).all(|(&a, b)| u32::from(a) == b)
                        && (len <= 3 || *kind == Keyword::Month)
                })
                .map_or((Keyword::Unknown, 0), |&(_, kind, value)| (kind, value));
            return Token::Word { kind, value, len };
        }
        if matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ') || is_high_white_space(c) {
            self.rest.next();
            return Token::WhiteSpace;
        }
        if c == '(' {
            let mut depth = 0u64;
            loop {
                match self.rest.next() {
                    Some(')') => depth = depth.saturating_sub(1),
                    Some('(') => depth += 1,
                    _ => {}
                }
                if depth == 0 || self.peek_char().is_none() {
                    break;
                }
            }
            return Token::Unknown;
        }
        self.rest.next();
        Token::Unknown
    }
}

/// The first three significant digits of a fraction, from its value and length.
fn milliseconds(t: Token) -> i32 {
    let Token::Number { value, len } = t else {
        return 0;
    };
    match len {
        1 => value * 100,
        2 => value * 10,
        3 => value,
        _ => value / 10i32.pow(len.min(MAX_SIGNIFICANT_DIGITS) as u32 - 3),
    }
}

/// Up to three date numbers, and a month given by name.
struct DayComposer {
    comp: [i32; 3],
    len: usize,
    named_month: i32,
    is_iso: bool,
}

impl DayComposer {
    fn add(&mut self, n: i32) -> bool {
        if self.len < 3 {
            self.comp[self.len] = n;
            self.len += 1;
            true
        } else {
            false
        }
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// (year, month 1-based, day), read in the order the numbers allow.
    fn write(mut self) -> Option<(i32, i32, i32)> {
        if self.len < 1 {
            return None;
        }
        while self.len < 3 {
            self.comp[self.len] = 1;
            self.len += 1;
        }
        let c = self.comp;
        // After the padding above there are always three numbers, as in V8.
        let (mut year, month, day) = if self.named_month == NONE {
            if self.is_iso || !is_day(c[0]) {
                (c[0], c[1], c[2])
            } else {
                (c[2], c[0], c[1])
            }
        } else if !is_day(c[0]) {
            (c[0], self.named_month, c[1])
        } else {
            (c[1], self.named_month, c[0])
        };
        if !self.is_iso {
            if between(year, 0, 49) {
                year += 2000;
            } else if between(year, 50, 99) {
                year += 1900;
            }
        }
        (is_month(month) && is_day(day)).then_some((year, month, day))
    }
}

/// Hour, minute, second, millisecond, and an am/pm shift.
struct TimeComposer {
    comp: [i32; 4],
    len: usize,
    hour_offset: i32,
}

impl TimeComposer {
    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn is_expecting(&self, n: i32) -> bool {
        (self.len == 1 && is_minute(n))
            || (self.len == 2 && is_minute(n))
            || (self.len == 3 && is_millisecond(n))
    }

    fn add(&mut self, n: i32) -> bool {
        if self.len < 4 {
            self.comp[self.len] = n;
            self.len += 1;
            true
        } else {
            false
        }
    }

    fn add_final(&mut self, n: i32) -> bool {
        if !self.add(n) {
            return false;
        }
        while self.len < 4 {
            self.comp[self.len] = 0;
            self.len += 1;
        }
        true
    }

    fn write(mut self) -> Option<[i32; 4]> {
        while self.len < 4 {
            self.comp[self.len] = 0;
            self.len += 1;
        }
        let [mut hour, minute, second, ms] = self.comp;
        if self.hour_offset != NONE {
            if !is_hour12(hour) {
                return None;
            }
            hour = hour % 12 + self.hour_offset;
        }
        let in_range =
            is_hour(hour) && is_minute(minute) && is_minute(second) && is_millisecond(ms);
        // 24:00:00.000 is the end of the day.
        (in_range || (hour == 24 && minute == 0 && second == 0 && ms == 0))
            .then_some([hour, minute, second, ms])
    }
}

/// A UTC offset: sign, hours, minutes.
struct ZoneComposer {
    sign: i32,
    hour: i32,
    minute: i32,
}

impl ZoneComposer {
    fn set(&mut self, offset_hours: i32) {
        self.sign = if offset_hours < 0 { -1 } else { 1 };
        self.hour = offset_hours.abs();
        self.minute = 0;
    }

    fn is_expecting(&self, n: i32) -> bool {
        self.hour != NONE && self.minute == NONE && is_minute(n)
    }

    fn is_utc(&self) -> bool {
        self.hour == 0 && self.minute == 0
    }

    fn is_empty(&self) -> bool {
        self.hour == NONE
    }

    /// The offset in seconds; `Some(None)` for none given, `None` if out of range.
    fn write(&self) -> Option<Option<i32>> {
        if self.sign == NONE {
            return Some(None);
        }
        let h = if self.hour == NONE { 0 } else { self.hour };
        let m = if self.minute == NONE { 0 } else { self.minute };
        // V8 computes this in 32-bit unsigned arithmetic and refuses what exceeds its
        // small-integer range (2^31 - 1 on 64-bit node).
        let total = (h as u32)
            .wrapping_mul(3600)
            .wrapping_add((m as u32).wrapping_mul(60));
        let total = i32::try_from(total).ok()?;
        Some(Some(if self.sign < 0 { -total } else { total }))
    }
}

/// The outcome of the ISO pass.
enum Iso {
    /// Parsed to the end.
    Done,
    /// Not an ISO string from here on: the legacy parser continues with this token.
    Continue(Token),
    /// Broken after a `T`: `NaN`.
    Invalid,
}

fn parse_fields(s: &str) -> Option<Fields> {
    let mut sc = Scanner::new(s);
    let mut day = DayComposer {
        comp: [0; 3],
        len: 0,
        named_month: NONE,
        is_iso: false,
    };
    let mut time = TimeComposer {
        comp: [0; 4],
        len: 0,
        hour_offset: NONE,
    };
    let mut tz = ZoneComposer {
        sign: NONE,
        hour: NONE,
        minute: NONE,
    };
    let first = match parse_iso(&mut sc, &mut day, &mut time, &mut tz) {
        Iso::Invalid => return None,
        Iso::Done => Token::End,
        Iso::Continue(t) => t,
    };
    let mut has_read_number = !day.is_empty();
    let mut token = first;
    while token != Token::End {
        match token {
            Token::Number { value: n, .. } => {
                has_read_number = true;
                if sc.skip_symbol(':') {
                    if sc.skip_symbol(':') {
                        // `n::`
                        if !time.is_empty() {
                            return None;
                        }
                        time.add(n);
                        time.add(0);
                    } else {
                        // `n:`
                        if !time.add(n) {
                            return None;
                        }
                        if sc.peek() == Token::Symbol('.') {
                            sc.next();
                        }
                    }
                } else if sc.skip_symbol('.') && time.is_expecting(n) {
                    time.add(n);
                    let frac = sc.peek();
                    frac.number()?;
                    sc.next();
                    time.add_final(milliseconds(frac));
                } else if tz.is_expecting(n) {
                    tz.minute = n;
                } else if time.is_expecting(n) {
                    time.add_final(n);
                    // The time must be followed by the end, a space, `Z` or a sign.
                    let p = sc.peek();
                    if !(p == Token::End || p == Token::WhiteSpace || p.is_z() || p.is_sign()) {
                        return None;
                    }
                } else {
                    if !day.add(n) {
                        return None;
                    }
                    sc.skip_symbol('-');
                }
            }
            Token::Word { kind, value, .. } => {
                if kind == Keyword::AmPm && !time.is_empty() {
                    time.hour_offset = value;
                } else if kind == Keyword::Month {
                    day.named_month = value;
                    sc.skip_symbol('-');
                } else if kind == Keyword::Zone && has_read_number {
                    tz.set(value);
                } else {
                    // Words are allowed only before the first number, and must be
                    // separated from it.
                    if has_read_number || sc.peek().number().is_some() {
                        return None;
                    }
                }
            }
            t if t.is_sign() && (tz.is_utc() || !time.is_empty()) => {
                // A UTC offset, after a zone name or a time.
                tz.sign = t.sign();
                let (mut n, mut len) = (0, 0);
                if let Token::Number { value, len: l } = sc.peek() {
                    sc.next();
                    (n, len) = (value, l);
                }
                has_read_number = true;
                if sc.peek() == Token::Symbol(':') {
                    tz.hour = n;
                    tz.minute = NONE;
                } else if len == 1 || len == 2 {
                    tz.hour = n;
                    tz.minute = 0;
                } else if len == 3 || len == 4 {
                    tz.hour = n / 100;
                    tz.minute = n % 100;
                } else {
                    return None;
                }
            }
            t if (t.is_sign() || t == Token::Symbol(')')) && has_read_number => return None,
            _ => {}
        }
        token = sc.next();
    }
    let (year, month, d) = day.write()?;
    let [hour, minute, second, millisecond] = time.write()?;
    let utc_offset_s = tz.write()?;
    Some(Fields {
        year,
        month,
        day: d,
        hour,
        minute,
        second,
        millisecond,
        utc_offset_s,
    })
}

/// The ECMA-262 date-time string format with V8's extensions:
/// `[±YY]YYYY[-MM[-DD]][THH:mm[:ss[.s…]][Z|±hh:mm|±hhmm]]`.
fn parse_iso(
    sc: &mut Scanner<'_>,
    day: &mut DayComposer,
    time: &mut TimeComposer,
    tz: &mut ZoneComposer,
) -> Iso {
    if sc.peek().is_sign() {
        let sign = sc.next();
        if !sc.peek().is_number_of_len(6) {
            return Iso::Continue(sign);
        }
        let year = sc.next().number().unwrap_or(0);
        if sign.sign() < 0 && year == 0 {
            // -000000 is not a year (and V8 has used up its digits).
            return Iso::Continue(sign);
        }
        day.add(sign.sign() * year);
    } else if sc.peek().is_number_of_len(4) {
        day.add(sc.next().number().unwrap_or(0));
    } else {
        return Iso::Continue(sc.next());
    }
    if sc.skip_symbol('-') {
        match sc.next() {
            Token::Number { value, len: 2 } if is_month(value) => day.add(value),
            t => return Iso::Continue(t),
        };
        if sc.skip_symbol('-') {
            match sc.next() {
                Token::Number { value, len: 2 } if is_day(value) => day.add(value),
                t => return Iso::Continue(t),
            };
        }
    }
    if !matches!(
        sc.peek(),
        Token::Word {
            kind: Keyword::TimeSeparator,
            ..
        }
    ) {
        if sc.peek() != Token::End {
            return Iso::Continue(sc.next());
        }
    } else {
        sc.next();
        let hour = match sc.peek() {
            Token::Number { value, len: 2 } if between(value, 0, 24) => value,
            _ => return Iso::Invalid,
        };
        let hour_is_24 = hour == 24;
        sc.next();
        time.add(hour);
        if !sc.skip_symbol(':') {
            return Iso::Invalid;
        }
        match sc.peek() {
            Token::Number { value, len: 2 } if is_minute(value) && !(hour_is_24 && value > 0) => {
                sc.next();
                time.add(value);
            }
            _ => return Iso::Invalid,
        }
        if sc.skip_symbol(':') {
            match sc.peek() {
                Token::Number { value, len: 2 }
                    if is_minute(value) && !(hour_is_24 && value > 0) =>
                {
                    sc.next();
                    time.add(value);
                }
                _ => return Iso::Invalid,
            }
            if sc.skip_symbol('.') {
                match sc.peek() {
                    t @ Token::Number { value, .. } if !(hour_is_24 && value > 0) => {
                        sc.next();
                        time.add(milliseconds(t));
                    }
                    _ => return Iso::Invalid,
                }
            }
        }
        if sc.peek().is_z() {
            sc.next();
            tz.set(0);
        } else if sc.peek().is_sign() {
            tz.sign = sc.next().sign();
            match sc.peek() {
                Token::Number { value, len: 4 } => {
                    // The `hhmm` extension.
                    let (h, m) = (value / 100, value % 100);
                    if !is_hour(h) || !is_minute(m) {
                        return Iso::Invalid;
                    }
                    sc.next();
                    tz.hour = h;
                    tz.minute = m;
                }
                Token::Number { value, len: 2 } if is_hour(value) => {
                    sc.next();
                    tz.hour = value;
                    if !sc.skip_symbol(':') {
                        return Iso::Invalid;
                    }
                    match sc.peek() {
                        Token::Number { value, len: 2 } if is_minute(value) => {
                            sc.next();
                            tz.minute = value;
                        }
                        _ => return Iso::Invalid,
                    }
                }
                _ => return Iso::Invalid,
            }
        }
        if sc.peek() != Token::End {
            return Iso::Invalid;
        }
    }
    // Date-only forms are UTC; date-time forms without an offset are local time.
    if tz.is_empty() && time.is_empty() {
        tz.set(0);
    }
    day.is_iso = true;
    Iso::Done
}

#[cfg(test)]
mod tests {
    use super::{canonical, parse_general};

    /// The canonical form's shortcut agrees with the general parser wherever it
    /// answers: every day of years around leap rules (days 29–31 of every month
    /// included, which roll over), the ends of each field's range and past them.
    #[test]
    fn the_canonical_shortcut_agrees_with_the_general_parser() {
        let mut checked = 0;
        for year in [
            0, 1, 4, 99, 100, 400, 1900, 1969, 1970, 2000, 2024, 2026, 2100, 9999,
        ] {
            for month in 0..=13 {
                for day in 0..=32 {
                    for (h, m, s, f) in [
                        (0, 0, 0, 0),
                        (23, 59, 59, 999),
                        (24, 0, 0, 0),
                        (12, 60, 7, 5),
                        (1, 2, 60, 3),
                    ] {
                        let t =
                            format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{f:03}Z");
                        let fast = canonical(t.as_bytes());
                        if fast.is_some() {
                            checked += 1;
                        }
                        assert!(fast.is_none() || fast == parse_general(&t), "{t}");
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
        for odd in [
            "2026-01-21T09:00:00.000z",
            "2026-01-21t09:00:00.000Z",
            "+02026-01-21T09:00:00.000Z",
            "2026-01-21T09:00:00.00Z",
            "2026-01-21T09:00:00.0000Z",
            "2026-0a-21T09:00:00.000Z",
            "２026-01-21T09:00:00.000Z",
        ] {
            assert_eq!(canonical(odd.as_bytes()), None, "{odd}");
        }
    }
}
