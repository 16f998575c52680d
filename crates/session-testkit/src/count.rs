//! An I/O-counting file system: every byte read or written through it is counted, per file.
//!
//! Tests wrap the real or simulated [`Vfs`] in a [`CountingVfs`] and pass it to the
//! index so they can assert how many journal bytes an operation read.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use session_journal::vfs::{FileStatus, Vfs, VfsFile};

use crate::interpose::{Interpose, Interposed};

#[derive(Debug, Default)]
struct Counters {
    opens: Mutex<HashMap<PathBuf, u64>>,
    bytes: Mutex<HashMap<PathBuf, Arc<AtomicU64>>>,
    /// Bytes written per path (through files this wrapper opened).
    written: Mutex<HashMap<PathBuf, Arc<AtomicU64>>>,
    /// Every read as (path, offset, bytes returned), in order.
    reads: Arc<Mutex<Vec<(PathBuf, u64, u64)>>>,
}

/// A [`Vfs`] wrapper that counts opens and bytes read per path. Cloning shares the
/// counters.
pub type CountingVfs = Interposed<Counting>;

/// The counters of a [`CountingVfs`], shared by its clones.
#[derive(Debug, Clone, Default)]
pub struct Counting {
    counters: Arc<Counters>,
}

impl CountingVfs {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Vfs>) -> Self {
        Interposed::wrap(inner, Counting::default())
    }

    fn counters(&self) -> &Counters {
        &self.hook().counters
    }

    /// Bytes read from `path` since the last [`reset`](Self::reset).
    pub fn bytes_read(&self, path: &Path) -> u64 {
        let map = self
            .counters()
            .bytes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.get(path).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Bytes read from every file whose name ends with `suffix` (e.g. `.jsonl`).
    pub fn bytes_read_matching(&self, suffix: &str) -> u64 {
        sum_matching(&self.counters().bytes, suffix)
    }

    /// Bytes written to every file whose name ends with `suffix`, through files
    /// opened with [`Vfs::open`] (not temporary files made by `create_temp`).
    pub fn bytes_written_matching(&self, suffix: &str) -> u64 {
        sum_matching(&self.counters().written, suffix)
    }

    /// How many times files whose name ends with `suffix` were opened.
    pub fn opens_matching(&self, suffix: &str) -> u64 {
        let map = self
            .counters()
            .opens
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        map.iter()
            .filter(|(p, _)| p.to_string_lossy().ends_with(suffix))
            .map(|(_, n)| *n)
            .sum()
    }

    /// The byte ranges `(offset, len)` read from `path`, in order, since the last
    /// [`reset`](Self::reset).
    pub fn reads_of(&self, path: &Path) -> Vec<(u64, u64)> {
        self.counters()
            .reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(p, _, _)| p == path)
            .map(|(_, o, n)| (*o, *n))
            .collect()
    }

    /// How many bytes of `path` were read more than once since the last reset (the
    /// sum over every byte of its reads beyond the first).
    pub fn bytes_reread(&self, path: &Path) -> u64 {
        let mut ranges = self.reads_of(path);
        ranges.sort_unstable();
        let mut covered_to = 0u64;
        let mut again = 0u64;
        for (offset, len) in ranges {
            let end = offset + len;
            if offset < covered_to {
                again += covered_to.min(end) - offset;
            }
            covered_to = covered_to.max(end);
        }
        again
    }

    /// Zeroes every counter.
    pub fn reset(&self) {
        self.counters()
            .reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.counters()
            .opens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let map = self
            .counters()
            .bytes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for c in map.values() {
            c.store(0, Ordering::Relaxed);
        }
        drop(map);
        let written = self
            .counters()
            .written
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for c in written.values() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// The sum of the byte counters of every path whose name ends with `suffix`.
fn sum_matching(map: &Mutex<HashMap<PathBuf, Arc<AtomicU64>>>, suffix: &str) -> u64 {
    map.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter(|(p, _)| p.to_string_lossy().ends_with(suffix))
        .map(|(_, c)| c.load(Ordering::Relaxed))
        .sum()
}

#[derive(Debug)]
struct CountingFile {
    inner: Box<dyn VfsFile>,
    read: Arc<AtomicU64>,
    written: Arc<AtomicU64>,
    path: PathBuf,
    reads: Arc<Mutex<Vec<(PathBuf, u64, u64)>>>,
}

impl VfsFile for CountingFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read_at(offset, buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        self.reads.lock().unwrap_or_else(|e| e.into_inner()).push((
            self.path.clone(),
            offset,
            n as u64,
        ));
        Ok(n)
    }
    fn write_all_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all_at(offset, buf)?;
        self.written.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.inner.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.inner.sync_all()
    }
    fn status(&self) -> io::Result<FileStatus> {
        self.inner.status()
    }
    fn try_lock(&self) -> io::Result<bool> {
        self.inner.try_lock()
    }
    fn preallocate(&self, offset: u64, len: u64) -> io::Result<bool> {
        self.inner.preallocate(offset, len)
    }
}

impl Interpose for Counting {
    fn opened(&self, path: &Path, inner: Box<dyn VfsFile>) -> Box<dyn VfsFile> {
        let c = &self.counters;
        *c.opens
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(path.to_path_buf())
            .or_default() += 1;
        let counter = |map: &Mutex<HashMap<PathBuf, Arc<AtomicU64>>>| {
            map.lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(path.to_path_buf())
                .or_default()
                .clone()
        };
        Box::new(CountingFile {
            inner,
            read: counter(&c.bytes),
            written: counter(&c.written),
            path: path.to_path_buf(),
            reads: c.reads.clone(),
        })
    }
}
