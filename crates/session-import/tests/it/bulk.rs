//! `import_many`: batches made durable together (issue 16 point 7) — the same
//! journals as one import after another, a bounded number of syncs, and under a crash
//! at any point nothing published that is not durable, no source touched, and a re-run
//! that converges.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use session_import::{
    BulkOptions, Destination, ImportError, ImportOptions, ImportOutcome, format::is_record, import,
    import_many, leftover_imports,
};
use session_journal::vfs::{DirEntry, FileId, FileStatus, OpenMode, PathStatus, Vfs, VfsFile};
use session_journal::{Clock, Reader, ReaderOptions};
use session_testkit::sim::SimFs;

use super::support::fixtures;

/// The sources: three that share a header id, one listed twice under two names, one
/// the import refuses.
const SOURCES: [(&str, &str); 8] = [
    ("a.jsonl", "legacy/v3-control.jsonl"),
    ("b.jsonl", "legacy/v1-compaction-index-forward.jsonl"),
    ("c.jsonl", "legacy/v1-compaction-index-header.jsonl"),
    ("d.jsonl", "legacy/v2-hookmessage.jsonl"),
    ("e.jsonl", "legacy/v1-compaction-index-oob.jsonl"),
    ("f.jsonl", "legacy/v3-control.jsonl"),
    ("g.jsonl", "edge/empty-file.jsonl"),
    ("h.jsonl", "edge/malformed-lines.jsonl"),
];

const DIR: &str = "/s";

fn sources_on(fs: &SimFs) -> Vec<PathBuf> {
    SOURCES
        .iter()
        .map(|(name, fixture)| {
            let path = Path::new("/src").join(name);
            fs.write_raw(&path, &std::fs::read(fixtures().join(fixture)).unwrap());
            path
        })
        .collect()
}

fn options(vfs: Arc<dyn Vfs>) -> ImportOptions {
    ImportOptions {
        clock: Clock::fixed(1_700_000_000_000),
        vfs,
        ..ImportOptions::default()
    }
}

fn small_batches(threads: usize) -> BulkOptions {
    BulkOptions {
        max_files: 3,
        sync_threads: threads,
        ..BulkOptions::default()
    }
}

fn many(
    vfs: Arc<dyn Vfs>,
    sources: &[PathBuf],
    bulk: &BulkOptions,
) -> Vec<Result<ImportOutcome, ImportError>> {
    let mut seen = vec![0; sources.len()];
    let results = import_many(sources, Path::new(DIR), &options(vfs), bulk, &mut |i, _| {
        seen[i] += 1;
    });
    assert_eq!(seen, vec![1; sources.len()], "on_done once per source");
    results
}

/// The record payloads of a journal, `None` unless it reads to its end cleanly.
fn complete_records(vfs: Arc<dyn Vfs>, journal: &Path) -> Option<Vec<Vec<u8>>> {
    let reader = Reader::open(journal, ReaderOptions { vfs }).ok()?;
    let mut frames = reader.frames(None);
    let mut out = Vec::new();
    for f in frames.by_ref() {
        let f = f.ok()?;
        if is_record(f.info.kind) {
            out.push(f.payload);
        }
    }
    frames.stop().is_none().then_some(out)
}

/// The published journals of `DIR` (not hidden), by name.
fn journals(fs: &SimFs) -> Vec<String> {
    fs.list()
        .into_iter()
        .filter(|p| p.parent() == Some(Path::new(DIR)))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".jsonl") && !n.starts_with('.'))
        .collect()
}

/// (session id, already imported, records) per source, or the refusal.
type Summary = Vec<Result<(String, bool, Vec<Vec<u8>>), String>>;

fn summary(fs: &SimFs, results: &[Result<ImportOutcome, ImportError>]) -> Summary {
    results
        .iter()
        .map(|r| match r {
            Ok(o) => Ok((
                o.session_id.clone(),
                o.already_imported,
                complete_records(Arc::new(fs.clone()), &o.journal).expect("a complete journal"),
            )),
            Err(e) => Err(e.to_string()),
        })
        .collect()
}

#[test]
fn a_bulk_import_equals_one_import_after_another() {
    let one = SimFs::new();
    let sources = sources_on(&one);
    let results: Vec<_> = sources
        .iter()
        .map(|s| {
            import(
                s,
                &Destination::Dir(PathBuf::from(DIR)),
                &options(Arc::new(one.clone())),
            )
        })
        .collect();
    let expected = summary(&one, &results);
    for threads in [1, 4] {
        let fs = SimFs::new();
        let sources = sources_on(&fs);
        let results = many(Arc::new(fs.clone()), &sources, &small_batches(threads));
        assert_eq!(summary(&fs, &results), expected, "{threads} threads");
        assert_eq!(journals(&fs), journals(&one));
        assert!(
            leftover_imports(&fs, Path::new(DIR)).unwrap().is_empty(),
            "{:?}",
            fs.list()
        );
        for r in results.iter().flatten().filter(|o| !o.already_imported) {
            let durable = r.durable.expect("a new journal's durable capture");
            assert_eq!(durable.len.0, fs.read_raw(&r.journal).unwrap().len() as u64);
        }
        // Again: every source is found already imported (the registry's lines).
        let again = many(Arc::new(fs.clone()), &sources, &small_batches(threads));
        assert!(again.iter().flatten().all(|o| o.already_imported));
        assert_eq!(again.iter().filter(|r| r.is_err()).count(), 1);
    }
}

#[test]
fn a_batch_syncs_its_journals_twice_and_its_directory_once() {
    let fs = SimFs::new();
    let mut sources = sources_on(&fs);
    // (A source whose content is already in the batch would publish the batch first.)
    sources.retain(|s| !s.ends_with("f.jsonl"));
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let before = fs.stats();
    let bulk = BulkOptions {
        max_files: 100,
        sync_threads: 1,
        ..BulkOptions::default()
    };
    let results = many(Arc::new(fs.clone()), &sources, &bulk);
    let new = results
        .iter()
        .flatten()
        .filter(|o| !o.already_imported)
        .count() as u64;
    assert_eq!(new, 6);
    let after = fs.stats();
    // Two rounds over the new journals, one registry append.
    assert_eq!(after.syncs - before.syncs, 2 * new + 1);
    assert_eq!(after.dir_syncs - before.dir_syncs, 1);
}

/// A file system that loses power at its `n`-th mutating operation: that operation
/// and every later one (reads too) fail, as in a process that died there.
#[derive(Debug)]
struct Gate {
    fs: SimFs,
    left: AtomicU64,
    crashed: AtomicBool,
    seed: u64,
}

impl Gate {
    fn tick(&self) -> io::Result<()> {
        self.check()?;
        if self.left.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.fs.crash(self.seed);
            self.crashed.store(true, Ordering::SeqCst);
            return Err(io::Error::other("power lost"));
        }
        Ok(())
    }

    fn check(&self) -> io::Result<()> {
        if self.crashed.load(Ordering::SeqCst) {
            return Err(io::Error::other("power lost"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
struct CrashAt(Arc<Gate>);

#[derive(Debug)]
struct CrashFile(Box<dyn VfsFile>, Arc<Gate>);

impl VfsFile for CrashFile {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.1.check()?;
        self.0.read_at(offset, buf)
    }
    fn write_all_at(&self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.1.tick()?;
        self.0.write_all_at(offset, buf)
    }
    fn len(&self) -> io::Result<u64> {
        self.1.check()?;
        self.0.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.1.tick()?;
        self.0.set_len(len)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.1.tick()?;
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.1.tick()?;
        self.0.sync_all()
    }
    fn status(&self) -> io::Result<FileStatus> {
        self.1.check()?;
        self.0.status()
    }
    fn try_lock(&self) -> io::Result<bool> {
        self.1.check()?;
        self.0.try_lock()
    }
}

impl Vfs for CrashAt {
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Box<dyn VfsFile>> {
        match mode {
            OpenMode::CreateNew | OpenMode::CreateOrOpen => self.0.tick()?,
            _ => self.0.check()?,
        }
        Ok(Box::new(CrashFile(
            self.0.fs.open(path, mode)?,
            self.0.clone(),
        )))
    }
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.0.tick()?;
        self.0.fs.create_dir_all(path)
    }
    fn sync_dir(&self, path: &Path) -> io::Result<()> {
        self.0.tick()?;
        self.0.fs.sync_dir(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.tick()?;
        self.0.fs.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.0.tick()?;
        self.0.fs.remove_file(path)
    }
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.0.check()?;
        self.0.fs.exists(path)
    }
    fn identity(&self, path: &Path) -> io::Result<Option<FileId>> {
        self.0.check()?;
        self.0.fs.identity(path)
    }
    fn stat(&self, path: &Path) -> io::Result<Option<PathStatus>> {
        self.0.check()?;
        self.0.fs.stat(path)
    }
    fn hard_link(&self, existing: &Path, new: &Path) -> io::Result<()> {
        self.0.tick()?;
        self.0.fs.hard_link(existing, new)
    }
    fn create_temp(&self, dir: &Path, prefix: &str) -> io::Result<(PathBuf, Box<dyn VfsFile>)> {
        self.0.tick()?;
        let (path, f) = self.0.fs.create_temp(dir, prefix)?;
        Ok((path, Box::new(CrashFile(f, self.0.clone()))))
    }
    fn read_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        self.0.check()?;
        self.0.fs.read_dir(dir)
    }
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.0.tick()?;
        self.0.fs.remove_dir_all(path)
    }
}

/// Power lost at every mutating operation of a bulk import in turn: the sources are
/// untouched, every journal in place is complete (what the import of its source gives),
/// and a re-run finishes the job with the same ids and no duplicate.
#[test]
fn a_crash_at_any_point_of_a_bulk_import_publishes_nothing_torn_and_a_rerun_converges() {
    let clean = SimFs::new();
    let sources = sources_on(&clean);
    let counted = Arc::new(Gate {
        fs: clean.clone(),
        left: AtomicU64::new(u64::MAX),
        crashed: AtomicBool::new(false),
        seed: 0,
    });
    let results = many(
        Arc::new(CrashAt(counted.clone())),
        &sources,
        &small_batches(1),
    );
    let expected = summary(&clean, &results);
    let ops = u64::MAX - counted.left.load(Ordering::SeqCst);
    assert!(ops > 40, "{ops} operations");
    let by_content: Vec<Vec<Vec<u8>>> = expected
        .iter()
        .flatten()
        .map(|(_, _, records)| records.clone())
        .collect();
    for n in 1..=ops {
        let fs = SimFs::new();
        let sources = sources_on(&fs);
        let originals: Vec<Vec<u8>> = sources.iter().map(|s| fs.read_raw(s).unwrap()).collect();
        let gate = Arc::new(Gate {
            fs: fs.clone(),
            left: AtomicU64::new(n),
            crashed: AtomicBool::new(false),
            seed: n,
        });
        let _ = many(Arc::new(CrashAt(gate)), &sources, &small_batches(1));
        for (s, original) in sources.iter().zip(&originals) {
            assert_eq!(fs.read_raw(s).as_ref(), Some(original), "crash at {n}");
        }
        for name in journals(&fs) {
            let path = Path::new(DIR).join(&name);
            let records = complete_records(Arc::new(fs.clone()), &path);
            assert!(
                records.as_ref().is_some_and(|r| by_content.contains(r)),
                "crash at {n}: {name} is in place but not a complete import"
            );
        }
        let rerun = many(Arc::new(fs.clone()), &sources, &small_batches(1));
        let got: Summary = summary(&fs, &rerun)
            .into_iter()
            .map(|r| r.map(|(id, _, records)| (id, false, records)))
            .collect();
        let want: Summary = expected
            .iter()
            .cloned()
            .map(|r| r.map(|(id, _, records)| (id, false, records)))
            .collect();
        assert_eq!(got, want, "crash at {n}");
        assert_eq!(journals(&fs), journals(&clean), "crash at {n}");
    }
}
