//! Reading a legacy file: a first pass for its identity, then bounded line reads.

use std::io::Read;
use std::path::Path;
use std::sync::mpsc;

use session_journal::vfs::{OpenMode, Vfs, VfsFile, VfsReader};

use crate::error::ImportError;
use crate::format::MAX_LINE_LEN;

fn io<'p>(path: &'p Path, op: &'static str) -> impl FnOnce(std::io::Error) -> ImportError + 'p {
    move |source| ImportError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// What the first pass learns about a source without keeping any of it.
#[derive(Debug, Clone)]
pub(crate) struct SourceScan {
    pub(crate) blake3: blake3::Hash,
    pub(crate) bytes: u64,
    pub(crate) lines: u64,
    pub(crate) longest_line: u64,
    pub(crate) native_signature: bool,
    pub(crate) only_whitespace: bool,
}

/// Opens the source through the store's `Vfs`: a regular file (a link to one is
/// followed: the source is the caller's), never a FIFO or a device, which would block
/// the import or never end.
fn open_source(vfs: &dyn Vfs, path: &Path) -> Result<VfsReader, ImportError> {
    let file = vfs
        .open(path, OpenMode::ReadFollow)
        .map_err(io(path, "open"))?;
    Ok(VfsReader::new(file))
}

/// Hashes the source and measures its lines (memory: one 1 MiB buffer, two for a
/// source of [`BACKGROUND_HASH_MIN`] or more). A large source's BLAKE3 tree is hashed
/// in two halves at once: this thread hashes the left subtree as it measures every
/// line, a helper thread reads and hashes the right one, and the two chaining values
/// are merged into the root (`blake3::hazmat`), the same hash as one pass gives.
pub(crate) fn scan_source(vfs: &dyn Vfs, path: &Path) -> Result<SourceScan, ImportError> {
    let file = vfs
        .open(path, OpenMode::ReadFollow)
        .map_err(io(path, "open"))?;
    let len = file.len().map_err(io(path, "read"))?;
    if len < BACKGROUND_HASH_MIN {
        return scan_from(file.as_ref(), path, u64::MAX, None);
    }
    let split = blake3::hazmat::left_subtree_len(len);
    let file = file.as_ref();
    let (scan, right) = std::thread::scope(|s| {
        let right = s.spawn(move || hash_range(file, split, len));
        let mut left = blake3::Hasher::new();
        let scan = scan_from(file, path, split, Some(&mut left));
        (scan.map(|scan| (scan, left)), right.join())
    });
    let (mut scan, left) = scan?;
    let right = match right {
        Ok(r) => r.map_err(io(path, "read"))?,
        Err(_) => {
            return Err(io(path, "hash")(std::io::Error::other(
                "the hashing thread stopped",
            )));
        }
    };
    match right {
        // Both halves read what the length promised: the tree's root.
        Some(right) if scan.bytes == len => {
            use blake3::hazmat::{HasherExt, Mode, merge_subtrees_root};
            scan.blake3 = merge_subtrees_root(&left.finalize_non_root(), &right, Mode::Hash);
            Ok(scan)
        }
        // The source changed length while it was read: once more, on one thread.
        _ => scan_from(file, path, u64::MAX, None),
    }
}

/// BLAKE3's chaining value of the bytes `[from, to)` of `file` as the right subtree
/// of a tree split at `from`; `None` when the file ends before `to`.
fn hash_range(
    file: &dyn VfsFile,
    from: u64,
    to: u64,
) -> std::io::Result<Option<blake3::hazmat::ChainingValue>> {
    use blake3::hazmat::HasherExt;
    let mut hasher = blake3::Hasher::new();
    hasher.set_input_offset(from);
    let mut buf = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let want = buf.len().min((to - at) as usize);
        let n = match file.read_at(at, &mut buf[..want]) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        at += n as u64;
    }
    Ok(Some(hasher.finalize_non_root()))
}

/// Measures every line of `file` and hashes it: all of it into the returned scan's
/// hash when `left` is `None`, else only the bytes before `split`, into `left` (the
/// scan's hash is then the caller's to set).
fn scan_from(
    file: &dyn VfsFile,
    path: &Path,
    split: u64,
    mut left: Option<&mut blake3::Hasher>,
) -> Result<SourceScan, ImportError> {
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    let mut lines = 0u64;
    let mut current = 0u64;
    let mut longest = 0u64;
    let mut head = Vec::with_capacity(8);
    let mut only_whitespace = true;
    loop {
        let n = match file.read_at(bytes, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(path, "read")(e)),
        };
        let chunk = &buf[..n];
        match left.as_deref_mut() {
            None => {
                hasher.update(chunk);
            }
            Some(left) => {
                let mine = split.saturating_sub(bytes).min(n as u64) as usize;
                left.update(&chunk[..mine]);
            }
        }
        if head.len() < 8 {
            let take = (8 - head.len()).min(n);
            head.extend_from_slice(&chunk[..take]);
        }
        if only_whitespace && !chunk.iter().all(u8::is_ascii_whitespace) {
            only_whitespace = false;
        }
        let mut start = 0usize;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            current += (nl - start) as u64;
            longest = longest.max(current);
            current = 0;
            lines += 1;
            start = nl + 1;
        }
        current += (n - start) as u64;
        longest = longest.max(current);
        bytes += n as u64;
        if longest > MAX_LINE_LEN {
            return Err(ImportError::LineTooLong {
                path: path.to_path_buf(),
                line: lines + 1,
                max: MAX_LINE_LEN,
            });
        }
    }
    if current > 0 {
        lines += 1;
    }
    Ok(SourceScan {
        blake3: hasher.finalize(),
        bytes,
        lines,
        longest_line: longest,
        native_signature: head == session_journal::format::SIGNATURE,
        only_whitespace,
    })
}

/// One line as read: its bytes live in the caller's buffer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LineMeta {
    /// 1-based line number.
    pub(crate) number: u64,
    /// Whether the line ended with `\n` (only the last line may not).
    pub(crate) newline: bool,
    /// Whether a `\r` preceded the `\n` (it is not part of the line's content).
    pub(crate) crlf: bool,
}

/// Sources at least this long are hashed on a thread of their own as they are read.
pub(crate) const BACKGROUND_HASH_MIN: u64 = 4 << 20;

/// The hash of what a [`LineReader`] read: on the reading thread, or — for a large
/// source — on a thread of its own fed copies of each read (at most four 1 MiB reads in
/// flight), so that hashing costs the parse no time where a second core is free.
enum Hashing {
    Inline(Box<blake3::Hasher>),
    Background {
        chunks: mpsc::SyncSender<Vec<u8>>,
        spare: mpsc::Receiver<Vec<u8>>,
        thread: std::thread::JoinHandle<blake3::Hash>,
    },
}

impl Hashing {
    fn new(background: bool) -> Self {
        if !background {
            return Self::Inline(Box::default());
        }
        let (chunks, rx) = mpsc::sync_channel::<Vec<u8>>(4);
        let (give_back, spare) = mpsc::channel::<Vec<u8>>();
        let spawned = std::thread::Builder::new()
            .name("import-hash".to_owned())
            .spawn(move || {
                let mut hasher = blake3::Hasher::new();
                for chunk in rx {
                    hasher.update(&chunk);
                    // The reader may be gone; the buffer is then just dropped.
                    let _ = give_back.send(chunk);
                }
                hasher.finalize()
            });
        match spawned {
            Ok(thread) => Self::Background {
                chunks,
                spare,
                thread,
            },
            Err(_) => Self::Inline(Box::default()),
        }
    }

    fn update(&mut self, bytes: &[u8]) -> Result<(), ()> {
        match self {
            Self::Inline(h) => {
                h.update(bytes);
                Ok(())
            }
            Self::Background { chunks, spare, .. } => {
                let mut chunk = spare.try_recv().unwrap_or_default();
                chunk.clear();
                chunk.extend_from_slice(bytes);
                chunks.send(chunk).map_err(|_| ())
            }
        }
    }

    /// The hash of everything passed to `update`; `None` if the hashing thread died.
    fn finish(self) -> Option<blake3::Hash> {
        match self {
            Self::Inline(h) => Some(h.finalize()),
            Self::Background { chunks, thread, .. } => {
                drop(chunks);
                thread.join().ok()
            }
        }
    }
}

/// Streams lines through one buffer (1 MiB, grown only for a longer line, never past
/// [`MAX_LINE_LEN`]), hashing each read in bulk.
pub(crate) struct LineReader<'p> {
    path: &'p Path,
    file: VfsReader,
    buf: Vec<u8>,
    start: usize,
    scanned: usize,
    end: usize,
    eof: bool,
    hashing: Option<Hashing>,
    number: u64,
}

impl<'p> LineReader<'p> {
    /// Opens the source; `bytes` (its length at the scan) decides where it is hashed.
    pub(crate) fn open(vfs: &dyn Vfs, path: &'p Path, bytes: u64) -> Result<Self, ImportError> {
        let file = open_source(vfs, path)?;
        Ok(Self {
            path,
            file,
            buf: vec![0u8; 1 << 20],
            start: 0,
            scanned: 0,
            end: 0,
            eof: false,
            hashing: Some(Hashing::new(bytes >= BACKGROUND_HASH_MIN)),
            number: 0,
        })
    }

    /// The next line's bytes (without `\n` and `\r`), valid until the next call.
    pub(crate) fn next_line(&mut self) -> Result<Option<(LineMeta, &[u8])>, ImportError> {
        loop {
            let from = self.scanned.max(self.start);
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[from..self.end]) {
                let nl = from + pos;
                let begin = self.start;
                self.start = nl + 1;
                self.scanned = self.start;
                self.number += 1;
                let crlf = nl > begin && self.buf[nl - 1] == b'\r';
                let stop = if crlf { nl - 1 } else { nl };
                let meta = LineMeta {
                    number: self.number,
                    newline: true,
                    crlf,
                };
                return Ok(Some((meta, &self.buf[begin..stop])));
            }
            self.scanned = self.end;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let begin = self.start;
                self.start = self.end;
                self.number += 1;
                let meta = LineMeta {
                    number: self.number,
                    newline: false,
                    crlf: false,
                };
                return Ok(Some((meta, &self.buf[begin..self.end])));
            }
            if (self.end - self.start) as u64 > MAX_LINE_LEN {
                return Err(ImportError::LineTooLong {
                    path: self.path.to_path_buf(),
                    line: self.number + 1,
                    max: MAX_LINE_LEN,
                });
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.scanned -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let grown = (self.buf.len() * 2).min(MAX_LINE_LEN as usize + 2);
                self.buf.resize(grown, 0);
            }
            let n = match self.file.read(&mut self.buf[self.end..]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(io(self.path, "read")(e)),
            };
            if n == 0 {
                self.eof = true;
            } else {
                let fresh = &self.buf[self.end..self.end + n];
                let hashed = self.hashing.as_mut().map(|h| h.update(fresh));
                if hashed != Some(Ok(())) {
                    return Err(hash_failed(self.path));
                }
                self.end += n;
            }
        }
    }

    /// Lines read so far.
    pub(crate) fn lines(&self) -> u64 {
        self.number
    }

    /// The hash of everything read (once: the reader hashes nothing after it).
    pub(crate) fn finish_hash(&mut self) -> Result<blake3::Hash, ImportError> {
        self.hashing
            .take()
            .and_then(Hashing::finish)
            .ok_or_else(|| hash_failed(self.path))
    }
}

fn hash_failed(path: &Path) -> ImportError {
    ImportError::Io {
        path: path.to_path_buf(),
        op: "hash",
        source: std::io::Error::other("the source's hashing thread stopped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use session_journal::vfs::StdVfs;

    /// The split scan's hash is the one-pass hash, at and around the sizes where the
    /// tree splits differently.
    #[test]
    fn a_split_scan_hashes_as_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let min = BACKGROUND_HASH_MIN as usize;
        for len in [min - 1, min, min + 1, min + 1024 * 1024 + 7, 3 * min + 5] {
            let bytes: Vec<u8> = (0..len)
                .map(|k| {
                    if k % 97 == 96 {
                        b'\n'
                    } else {
                        b'a' + (k % 23) as u8
                    }
                })
                .collect();
            let path = dir.path().join(format!("s{len}"));
            std::fs::write(&path, &bytes).unwrap();
            let scan = scan_source(&StdVfs, &path).unwrap();
            assert_eq!(scan.blake3, blake3::hash(&bytes), "{len} bytes");
            assert_eq!(scan.bytes, len as u64);
            assert_eq!(scan.lines, (len as u64).div_ceil(97));
            assert_eq!(scan.longest_line, 96);
        }
    }
}
