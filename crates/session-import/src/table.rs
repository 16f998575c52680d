//! The retention table: the source line of every record an import wrote, run-length
//! encoded, in one frame (or a few) after the import's last record
//! (`docs/format.md` §4, "The retention table").
//!
//! A payload is a 24-byte head and 16-byte runs, little-endian:
//! `version` u8 (1), 7 zero bytes, `first_seq` u64 (the `seq` of the first record it
//! covers), `records` u64 (how many consecutive records it covers), then one run per
//! stretch of records whose lines follow each other with the same `changed` flag:
//! `start` u64 (the run's first record, counted from `first_seq`) and `line` u64 (that
//! record's 1-based source line; bit 63 set when the record is not the line's bytes).

use crate::format::{
    RETENTION_TABLE_RUNS_PER_FRAME as TABLE_RUNS_PER_FRAME,
    RETENTION_TABLE_VERSION as TABLE_VERSION,
};

/// Bytes before the runs.
pub(crate) const TABLE_HEAD_LEN: usize = 24;
/// Bytes per run.
pub(crate) const TABLE_RUN_LEN: usize = 16;

const CHANGED: u64 = 1 << 63;

/// One run: records `start..` (until the next run) come from lines `line..`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    start: u64,
    line: u64,
    changed: bool,
}

/// The table an import builds as it queues records (one push per record, in order).
#[derive(Debug, Default)]
pub(crate) struct TableBuilder {
    runs: Vec<Run>,
    records: u64,
}

impl TableBuilder {
    /// Notes the next record: it came from source line `line` (1-based), changed or not.
    pub(crate) fn push(&mut self, line: u64, changed: bool) {
        let extends = self.runs.last().is_some_and(|r| {
            r.changed == changed && r.line.checked_add(self.records - r.start) == Some(line)
        });
        if !extends {
            self.runs.push(Run {
                start: self.records,
                line,
                changed,
            });
        }
        self.records += 1;
    }

    /// The payloads of the table's frames (`format::KIND_RETENTION_TABLE`), the first record
    /// being the frame of seq `first_seq`: none when no record was pushed.
    pub(crate) fn payloads(&self, first_seq: u64) -> Vec<Vec<u8>> {
        let chunks: Vec<&[Run]> = self.runs.chunks(TABLE_RUNS_PER_FRAME).collect();
        let mut out = Vec::with_capacity(chunks.len());
        for (k, chunk) in chunks.iter().enumerate() {
            let base = chunk[0].start;
            let end = chunks.get(k + 1).map_or(self.records, |next| next[0].start);
            let mut p = Vec::with_capacity(TABLE_HEAD_LEN + chunk.len() * TABLE_RUN_LEN);
            p.push(TABLE_VERSION);
            p.extend_from_slice(&[0; 7]);
            p.extend_from_slice(&(first_seq + base).to_le_bytes());
            p.extend_from_slice(&(end - base).to_le_bytes());
            for r in chunk.iter() {
                p.extend_from_slice(&(r.start - base).to_le_bytes());
                let flag = if r.changed { CHANGED } else { 0 };
                p.extend_from_slice(&(r.line | flag).to_le_bytes());
            }
            out.push(p);
        }
        out
    }
}

/// A decoded, checked table frame.
#[derive(Debug)]
pub(crate) struct Table<'a> {
    /// The seq of the first record it covers.
    pub(crate) first_seq: u64,
    /// How many records it covers.
    pub(crate) records: u64,
    runs: &'a [u8],
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

impl<'a> Table<'a> {
    /// Reads a table payload, checking every rule of its encoding: a payload that breaks
    /// one is an error (a reason), never a wrong answer.
    pub(crate) fn decode(p: &'a [u8]) -> Result<Self, &'static str> {
        if p.len() < TABLE_HEAD_LEN + TABLE_RUN_LEN
            || !(p.len() - TABLE_HEAD_LEN).is_multiple_of(TABLE_RUN_LEN)
        {
            return Err("its length is not 24 bytes plus 16 per run");
        }
        if p[0] != TABLE_VERSION {
            return Err("its version is not 1");
        }
        if p[1..8].iter().any(|&b| b != 0) {
            return Err("its reserved bytes are not zero");
        }
        let first_seq = u64_at(p, 8);
        let records = u64_at(p, 16);
        if first_seq == 0 || records == 0 || first_seq.checked_add(records).is_none() {
            return Err("its first seq or record count is out of range");
        }
        let t = Table {
            first_seq,
            records,
            runs: &p[TABLE_HEAD_LEN..],
        };
        // Runs start at 0, strictly increase, stay below `records`; lines are 1-based
        // and strictly increase from record to record, within and across runs.
        let mut min_line = 1u64;
        let n = t.runs();
        for k in 0..n {
            let (start, line, _) = t.run(k);
            if (k == 0 && start != 0) || start >= records {
                return Err("its runs do not start in order within its records");
            }
            if line < min_line {
                return Err("its lines do not increase");
            }
            let end = if k + 1 < n { t.run(k + 1).0 } else { records };
            if end <= start {
                return Err("its runs do not start in order within its records");
            }
            // The run's last line, which must stay below bit 63.
            let last = line
                .checked_add(end - start - 1)
                .filter(|l| *l < CHANGED)
                .ok_or("its lines overflow")?;
            min_line = last + 1;
        }
        Ok(t)
    }

    fn runs(&self) -> usize {
        self.runs.len() / TABLE_RUN_LEN
    }

    /// Run `k`: its start, line and flag.
    fn run(&self, k: usize) -> (u64, u64, bool) {
        let at = k * TABLE_RUN_LEN;
        let start = u64_at(self.runs, at);
        let word = u64_at(self.runs, at + 8);
        (start, word & !CHANGED, word & CHANGED != 0)
    }

    /// Whether the record of seq `seq` is one this table covers.
    pub(crate) fn covers(&self, seq: u64) -> bool {
        seq >= self.first_seq && seq - self.first_seq < self.records
    }

    /// The source line and changed flag of the record of seq `seq` (a binary search
    /// over the runs); `None` when the table does not cover it.
    pub(crate) fn lookup(&self, seq: u64) -> Option<(u64, bool)> {
        if !self.covers(seq) {
            return None;
        }
        let o = seq - self.first_seq;
        // The last run starting at or before `o` (run 0 starts at 0).
        let (mut lo, mut hi) = (0usize, self.runs());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.run(mid).0 <= o {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (start, line, changed) = self.run(lo);
        Some((line + (o - start), changed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(lines: &[(u64, bool)]) -> TableBuilder {
        let mut b = TableBuilder::default();
        for &(l, c) in lines {
            b.push(l, c);
        }
        b
    }

    #[test]
    fn consecutive_lines_are_one_run() {
        let b = build(&[(2, false), (3, false), (4, false), (5, false)]);
        let p = b.payloads(3);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].len(), TABLE_HEAD_LEN + TABLE_RUN_LEN);
        let t = Table::decode(&p[0]).unwrap();
        assert_eq!((t.first_seq, t.records), (3, 4));
        assert_eq!(t.lookup(3), Some((2, false)));
        assert_eq!(t.lookup(6), Some((5, false)));
        assert_eq!(t.lookup(2), None);
        assert_eq!(t.lookup(7), None);
    }

    #[test]
    fn gaps_and_flags_start_runs_and_every_record_reads_back() {
        let lines = [
            (2, false),
            (3, false),
            (5, false),
            (6, true),
            (7, true),
            (9, false),
            (10, true),
        ];
        let p = build(&lines).payloads(4);
        assert_eq!(p.len(), 1);
        assert_eq!((p[0].len() - TABLE_HEAD_LEN) / TABLE_RUN_LEN, 5);
        let t = Table::decode(&p[0]).unwrap();
        for (k, &want) in lines.iter().enumerate() {
            assert_eq!(t.lookup(4 + k as u64), Some(want), "record {k}");
        }
    }

    #[test]
    fn a_long_table_continues_in_the_next_frame() {
        // Every other line: one run per record.
        let n = TABLE_RUNS_PER_FRAME as u64 + 3;
        let b = build(&(0..n).map(|k| (2 + 2 * k, false)).collect::<Vec<_>>());
        let p = b.payloads(3);
        assert_eq!(p.len(), 2);
        let (a, c) = (Table::decode(&p[0]).unwrap(), Table::decode(&p[1]).unwrap());
        assert_eq!(a.first_seq + a.records, c.first_seq);
        assert_eq!(a.records + c.records, n);
        assert_eq!(c.lookup(3 + n - 1), Some((2 + 2 * (n - 1), false)));
        assert_eq!(a.lookup(3 + 5), Some((12, false)));
    }

    #[test]
    fn broken_payloads_are_errors() {
        let good = build(&[(2, false), (4, false), (5, true)])
            .payloads(3)
            .remove(0);
        assert!(Table::decode(&good).is_ok());
        let mut cases: Vec<Vec<u8>> = Vec::new();
        cases.push(good[..good.len() - 1].to_vec()); // length
        let mut v = good.clone();
        v[0] = 2; // version
        cases.push(v);
        let mut v = good.clone();
        v[3] = 1; // reserved
        cases.push(v);
        let mut v = good.clone();
        v[16..24].copy_from_slice(&0u64.to_le_bytes()); // no records
        cases.push(v);
        let mut v = good.clone();
        v[16..24].copy_from_slice(&1u64.to_le_bytes()); // fewer records than runs
        cases.push(v);
        let mut v = good.clone();
        v[24..32].copy_from_slice(&1u64.to_le_bytes()); // first run not at 0
        cases.push(v);
        let mut v = good.clone();
        v[48..56].copy_from_slice(&2u64.to_le_bytes()); // lines go back
        cases.push(v);
        let mut v = good.clone();
        v[32..40].copy_from_slice(&0u64.to_le_bytes()); // line 0
        cases.push(v);
        for (k, c) in cases.iter().enumerate() {
            assert!(Table::decode(c).is_err(), "case {k}");
        }
    }
}
