//! Identities and timestamps as they appear in the logical model.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The id of one entry in a session tree (the reference writes 8 lowercase hex
/// characters; any string is accepted on read).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct EntryId(pub String);

impl EntryId {
    /// Wraps a string as an entry id.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for EntryId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<String> for EntryId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl AsRef<str> for EntryId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for EntryId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// The id of a session, as carried by its header (a UUID in practice; any
/// string is accepted on read, validation of file-name safety is the manager's job).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct SessionId(pub String);

impl SessionId {
    /// Wraps a string as a session id.
    pub fn new(id: impl Into<String>) -> Self {
        Self(id.into())
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An entry timestamp: an ISO-8601 string such as `2025-12-03T14:00:00.000Z`.
///
/// The string is kept exactly as read; [`Timestamp::unix_ms`] interprets it the
/// way V8's `Date.parse` does (every form it accepts), and gives `None` where
/// `Date.parse` gives `NaN`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Timestamp(pub String);

impl Timestamp {
    /// Wraps a string as a timestamp (no validation: invalid ones are data too).
    pub fn new(ts: impl Into<String>) -> Self {
        Self(ts.into())
    }

    /// Formats milliseconds since the Unix epoch as the reference does
    /// (`toISOString()`: UTC, millisecond precision, `Z`).
    ///
    /// ```
    /// use session_types::Timestamp;
    /// assert_eq!(Timestamp::from_unix_ms(0).as_str(), "1970-01-01T00:00:00.000Z");
    /// ```
    pub fn from_unix_ms(ms: i64) -> Self {
        // Every append stamps its entry: years 0000–9999 are written by hand (a
        // strftime pattern is re-parsed on each call); the rest goes through chrono.
        if let Some(s) = iso_4_digit_year(ms) {
            return Self(s);
        }
        let dt = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms).unwrap_or_default();
        Self(dt.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
    }

    /// [`from_unix_ms`](Self::from_unix_ms), and what [`unix_ms`](Self::unix_ms)
    /// reads back from it when that is known without parsing: `ms` itself for years
    /// 0000–9999 (`toISOString()`'s own shape, which `Date.parse` reads back
    /// exactly), `None` otherwise. What lets an index take an appended entry's time
    /// without parsing the text just formatted.
    ///
    /// ```
    /// use session_types::Timestamp;
    /// let (ts, ms) = Timestamp::from_unix_ms_read_back(1_735_689_600_000);
    /// assert_eq!(ts.as_str(), "2025-01-01T00:00:00.000Z");
    /// assert_eq!(ms, ts.unix_ms());
    /// ```
    pub fn from_unix_ms_read_back(ms: i64) -> (Self, Option<i64>) {
        match iso_4_digit_year(ms) {
            Some(s) => (Self(s), Some(ms)),
            None => (Self::from_unix_ms(ms), None),
        }
    }

    /// The timestamp as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Milliseconds since the Unix epoch, or `None` for what `Date.parse` rejects.
    ///
    /// ```
    /// use session_types::Timestamp;
    /// assert_eq!(Timestamp::new("2025-01-01T00:00:00.000Z").unix_ms(), Some(1735689600000));
    /// assert_eq!(Timestamp::new("garbage").unix_ms(), None);
    /// ```
    pub fn unix_ms(&self) -> Option<i64> {
        parse_js_date(&self.0)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `YYYY-MM-DDTHH:mm:ss.sssZ` for years 0000 to 9999 (`None` outside them).
fn iso_4_digit_year(ms: i64) -> Option<String> {
    // 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
    const MIN: i64 = -62_167_219_200_000;
    const MAX: i64 = 253_402_300_799_999;
    if !(MIN..=MAX).contains(&ms) {
        return None;
    }
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Howard Hinnant's civil_from_days (proleptic Gregorian, as toISOString).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, rest) = (ms_of_day / 3_600_000, ms_of_day % 3_600_000);
    // `YYYY-MM-DDTHH:MM:SS.mmmZ`, digits written in place.
    let mut out = *b"0000-00-00T00:00:00.000Z";
    put_digits(&mut out[0..4], year);
    put_digits(&mut out[5..7], month);
    put_digits(&mut out[8..10], day);
    put_digits(&mut out[11..13], h);
    put_digits(&mut out[14..16], rest / 60_000);
    put_digits(&mut out[17..19], (rest % 60_000) / 1000);
    put_digits(&mut out[20..23], rest % 1000);
    // Every byte is an ASCII digit or separator.
    String::from_utf8(out.to_vec()).ok()
}

/// The last `out.len()` decimal digits of a non-negative `v`, zero-padded, into `out`.
fn put_digits(out: &mut [u8], v: i64) {
    let mut v = v;
    for d in out.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// `Date.parse(s)` as V8 (node 20) computes it, in milliseconds since the Unix epoch;
/// `None` where it gives `NaN`. Every form V8 accepts is read (ISO, its extensions and
/// the legacy forms); times without a zone are read as UTC (the reference uses local
/// time; its oracle runs with `TZ=UTC`). See [`crate::js::date`].
///
/// ```
/// use session_types::parse_js_date;
/// assert_eq!(parse_js_date("2026-01-21 09:00:00"), Some(1_768_986_000_000));
/// assert_eq!(parse_js_date("garbage"), None);
/// ```
pub fn parse_js_date(s: &str) -> Option<i64> {
    crate::js::date::parse(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_date_forms() {
        assert_eq!(
            parse_js_date("2025-01-01T00:00:00.000Z"),
            Some(1_735_689_600_000)
        );
        assert_eq!(parse_js_date("2025-01-01"), Some(1_735_689_600_000));
        assert_eq!(
            parse_js_date("2025-01-01T01:00:00+01:00"),
            Some(1_735_689_600_000)
        );
        assert_eq!(
            parse_js_date("2025-01-01T00:00:00.5Z"),
            Some(1_735_689_600_500)
        );
        assert_eq!(parse_js_date("2025-13-01"), None);
        assert_eq!(parse_js_date(""), None);
        assert_eq!(parse_js_date("garbage"), None);
        assert_eq!(parse_js_date("2025-01-01T00:00:00.000Zjunk"), None);
    }

    /// Milliseconds to probe the formatting with: the edges (a leap day, the last
    /// 4-digit year's last millisecond and the next, the extremes of `i64`) and 20,000
    /// pseudo-random instants across ±10,000 years (xorshift from `seed`).
    fn ms_probes(seed: u64) -> Vec<i64> {
        let mut probes = vec![
            0,
            -1,
            1,
            951_782_400_000,   // 2000-02-29
            4_107_542_399_999, // 2100-02-28T23:59:59.999
            -62_167_219_200_000,
            -62_167_219_200_001,
            253_402_300_799_999,
            253_402_300_800_000,
            i64::MIN,
            i64::MAX,
        ];
        let mut x = seed;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            probes.push((x % 320_000_000_000_000) as i64 - 64_000_000_000_000);
        }
        probes
    }

    #[test]
    fn iso_formatting_by_hand_matches_chrono() {
        let chrono_iso = |ms: i64| {
            chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)
                .unwrap_or_default()
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string()
        };
        for ms in ms_probes(0x9E37_79B9_7F4A_7C15) {
            assert_eq!(Timestamp::from_unix_ms(ms).0, chrono_iso(ms), "{ms}");
        }
    }

    /// What `from_unix_ms_read_back` says `Date.parse` reads back is what it reads
    /// back, wherever it says anything (and it says it for every 4-digit year).
    #[test]
    fn read_back_is_what_date_parse_reads() {
        for ms in ms_probes(0x2545_F491_4F6C_DD1D) {
            let (ts, back) = Timestamp::from_unix_ms_read_back(ms);
            assert_eq!(ts, Timestamp::from_unix_ms(ms), "{ms}");
            let four_digits = (-62_167_219_200_000..=253_402_300_799_999).contains(&ms);
            assert_eq!(back.is_some(), four_digits, "{ms}");
            if let Some(back) = back {
                assert_eq!(Some(back), ts.unix_ms(), "{ms}");
                assert_eq!(back, ms);
            }
        }
    }

    #[test]
    fn iso_formatting_round_trips() {
        let ts = Timestamp::from_unix_ms(1_735_689_600_123);
        assert_eq!(ts.as_str(), "2025-01-01T00:00:00.123Z");
        assert_eq!(ts.unix_ms(), Some(1_735_689_600_123));
    }
}
