//! Reading one line at a time with a bound: a line longer than the limit is never
//! held in memory; it is skipped to its end and reported with its length.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What the next read found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line (in the caller's buffer), without its `\n`.
    Full,
    /// A line longer than the limit (its length), skipped.
    TooLong(usize),
    /// The end of the input.
    Eof,
}

pub(crate) struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub(crate) fn new(inner: R, max: usize) -> Self {
        Self {
            inner: BufReader::with_capacity(64 << 10, inner),
            max,
        }
    }

    /// Reads the next line into `buf` (cleared first). A last line without `\n` is a
    /// line.
    pub(crate) async fn next(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Line> {
        buf.clear();
        let mut len = 0usize;
        loop {
            let avail = self.inner.fill_buf().await?;
            if avail.is_empty() {
                return Ok(match len {
                    0 => Line::Eof,
                    n if n > self.max => Line::TooLong(n),
                    _ => Line::Full,
                });
            }
            let (take, end) = match memchr::memchr(b'\n', avail) {
                Some(i) => (i, true),
                None => (avail.len(), false),
            };
            len = len.saturating_add(take);
            if len <= self.max {
                buf.extend_from_slice(&avail[..take]);
            } else {
                buf.clear();
            }
            self.inner.consume(take + usize::from(end));
            if end {
                return Ok(if len > self.max {
                    Line::TooLong(len)
                } else {
                    Line::Full
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<(Line, Vec<u8>)> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            let mut buf = Vec::new();
            let l = r.next(&mut buf).await.expect("reads");
            if l == Line::Eof {
                return out;
            }
            out.push((l, buf));
        }
    }

    #[tokio::test]
    async fn long_lines_are_skipped_and_the_next_line_is_read() {
        let got = lines(b"abc\n0123456789\nxy\nlast", 4).await;
        assert_eq!(
            got,
            vec![
                (Line::Full, b"abc".to_vec()),
                (Line::TooLong(10), vec![]),
                (Line::Full, b"xy".to_vec()),
                (Line::Full, b"last".to_vec()),
            ]
        );
        assert_eq!(lines(b"", 4).await, vec![]);
        assert_eq!(lines(b"12345", 4).await, vec![(Line::TooLong(5), vec![])]);
    }
}
