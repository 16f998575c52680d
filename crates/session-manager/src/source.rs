//! Reading entries of an owned session through its index, bounded by a capture and
//! counted against read limits; and the [`ContextSource`] adapter that makes resume
//! cost what the context needs.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;

use serde_json::value::RawValue;
use session_context::{ContextKind, ContextSource, Node, Parent, PathMarks, UsageAttribution};
use session_index::{Derived, EntryIndex, Index, kinds};
use session_journal::{Capture, FrameRun, Offset, Reader};
use session_types::{Entry, Record};

use crate::error::ReadError;
use crate::read::Accounting;

/// A consistent, committed prefix of an owned session: what one read sees.
///
/// Taken with [`OwnedSession::snapshot`](crate::OwnedSession::snapshot); every read
/// takes its own unless given one. Entries appended after it are invisible to reads
/// through it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub(crate) capture: Capture,
    /// Index records (frames) covered.
    pub(crate) frames: u32,
}

impl Snapshot {
    /// The journal bytes the snapshot covers (its committed length).
    pub fn committed_bytes(&self) -> u64 {
        self.capture.len.0
    }

    /// The frames (records) the snapshot covers, the session header's included.
    pub fn frames(&self) -> u32 {
        self.frames
    }
}

/// The index, the journal reader and a snapshot: everything a captured read needs.
pub(crate) struct SnapshotReader<'a> {
    pub(crate) index: &'a Index,
    pub(crate) reader: &'a Reader,
    pub(crate) snapshot: Snapshot,
    pub(crate) path: &'a Path,
    /// The reading planned for the entries about to be loaded ([`Records::prefetch`]).
    pub(crate) prefetched: RefCell<Prefetched>,
}

/// The most bytes one read ahead fetches: neighbouring frames are read together up to
/// this, then a new read starts. Below glibc's threshold for serving an allocation
/// with a fresh `mmap` (128 KiB), so a run's buffer comes from the heap, and each
/// run reads into the buffer of the one before it (kept once all its entries are
/// loaded): a context's bytes are faulted in once, in one buffer, rather than once per
/// page of a buffer as large as the context. A frame larger than this is a run alone.
const MAX_RUN: u64 = 64 << 10;

/// The most bytes between two frames of a run that are read and skipped (the frames
/// of other branches, an import's provenance frames): less than a page costs less to
/// copy than another read.
const MAX_GAP: u64 = 4 << 10;

/// The entries a context is about to load, grouped in runs of nearby frames
/// ([`Records::prefetch`]): a run is read (one read, every frame of it verified:
/// [`Reader::read_frames_into`]) when the first of its entries is loaded, and its
/// buffer is kept for the next run once every one of them has been, so no more than a
/// run's bytes wait in memory.
#[derive(Debug, Default)]
pub(crate) struct Prefetched {
    runs: Vec<Run>,
    /// Record → (run, frame within the run).
    at: HashMap<EntryIndex, (usize, usize)>,
    /// Buffers of runs already loaded, for the next reads.
    spare: Vec<Vec<u8>>,
}

/// Nearby frames read with one read.
#[derive(Debug)]
struct Run {
    /// Where its frames start and end, in file order.
    frames: Vec<(Offset, Offset)>,
    /// Its frames, once read (`Some(None)`: the read failed, or every entry was
    /// loaded; an entry is then loaded alone, and reports what it finds).
    read: Option<Option<FrameRun>>,
    /// How many of its entries are still to be loaded.
    left: usize,
}

impl SnapshotReader<'_> {
    /// Whether index record `i` lies inside the snapshot.
    pub(crate) fn visible(&self, i: EntryIndex) -> bool {
        i.0 < self.snapshot.frames
    }

    /// The entry with this id, inside the snapshot.
    pub(crate) fn find(&self, id: &str) -> Option<EntryIndex> {
        self.index.find(id).filter(|i| self.visible(*i))
    }

    pub(crate) fn payload_len(&self, i: EntryIndex) -> u64 {
        self.index.info(i).map_or(0, |x| u64::from(x.payload_len))
    }

    /// Reads and verifies the frame of record `i` (no accounting).
    pub(crate) fn load_raw(&self, i: EntryIndex) -> Result<Vec<u8>, ReadError> {
        let info = self.index.info(i).ok_or_else(|| ReadError::EntryNotFound {
            session: self.path.display().to_string(),
            id: format!("#{}", i.0),
        })?;
        if !self.visible(i) || info.offset.0 >= self.snapshot.capture.len.0 {
            return Err(ReadError::EntryNotFound {
                session: self.path.display().to_string(),
                id: info.id.unwrap_or_default().to_owned(),
            });
        }
        // Exactly the frame's bytes (the index knows its length): a context reads each
        // journal byte it needs once, never the read-ahead of a neighbour.
        let end = session_journal::Offset(
            info.offset.0 + session_journal::format::frame_len(u64::from(info.payload_len)),
        );
        let frame = self
            .reader
            .read_frame_within(info.offset, end)
            .map_err(ReadError::from)?;
        if frame.info.seq != info.seq || frame.info.kind.get() != info.kind {
            return Err(ReadError::IndexMismatch {
                path: self.path.to_path_buf(),
                offset: info.offset.0,
                expected_seq: info.seq.0,
                found_seq: frame.info.seq.0,
            });
        }
        Ok(frame.payload)
    }

    /// Plans the reading of the frames of `entries` (those inside the snapshot), at
    /// most `max_entries` of them and `max_bytes` of payload, in the order given:
    /// neighbours are read together, up to [`MAX_RUN`] bytes a read.
    fn prefetch_frames(&self, entries: &[EntryIndex], max_entries: u64, max_bytes: u64) {
        let mut spans = Vec::with_capacity(entries.len());
        let mut bytes = 0u64;
        for &i in entries
            .iter()
            .take(usize::try_from(max_entries).unwrap_or(usize::MAX))
        {
            let Some(info) = self.index.info(i) else {
                continue;
            };
            let end =
                info.offset.0 + session_journal::format::frame_len(u64::from(info.payload_len));
            if !self.visible(i) || end > self.snapshot.capture.len.0 {
                continue;
            }
            bytes = bytes.saturating_add(u64::from(info.payload_len));
            if bytes > max_bytes {
                break;
            }
            spans.push((info.offset.0, end, i));
        }
        spans.sort_unstable_by_key(|s| s.0);
        spans.dedup_by_key(|s| s.0);
        let mut p = self.prefetched.borrow_mut();
        let Prefetched { runs, at, .. } = &mut *p;
        for (start, end, i) in spans {
            let n = runs.len();
            match runs.last_mut() {
                Some(run)
                    if run
                        .frames
                        .last()
                        .is_some_and(|&(_, last)| start >= last.0 && start - last.0 <= MAX_GAP)
                        && run
                            .frames
                            .first()
                            .is_some_and(|&(first, _)| end - first.0 <= MAX_RUN) =>
                {
                    at.insert(i, (n - 1, run.frames.len()));
                    run.frames.push((Offset(start), Offset(end)));
                    run.left += 1;
                }
                _ => {
                    at.insert(i, (n, 0));
                    runs.push(Run {
                        frames: vec![(Offset(start), Offset(end))],
                        read: None,
                        left: 1,
                    });
                }
            }
        }
    }

    /// The entry of record `i` from its run, read now if it was not yet (`None`: no
    /// run holds it, or its run could not be read; load it alone). Checked against the
    /// index as [`load_raw`](Self::load_raw) checks a frame.
    fn prefetched_entry(&self, i: EntryIndex) -> Option<Result<Entry, ReadError>> {
        let mut p = self.prefetched.borrow_mut();
        let (r, k) = p.at.remove(&i)?;
        let Prefetched { runs, spare, .. } = &mut *p;
        let run = runs.get_mut(r)?;
        let read = run.read.get_or_insert_with(|| {
            // A run whose frames are not the ones planned (an index that disagrees
            // with its journal) is not used: each load then reports the mismatch.
            self.reader
                .read_frames_into(&run.frames, spare.pop().unwrap_or_default())
                .ok()
        });
        let entry = match (read.as_ref(), self.index.info(i)) {
            (Some(read), Some(info)) => match (read.frames().get(k), read.payload(k)) {
                (Some(frame), _) if frame.seq != info.seq || frame.kind.get() != info.kind => {
                    Some(Err(ReadError::IndexMismatch {
                        path: self.path.to_path_buf(),
                        offset: info.offset.0,
                        expected_seq: info.seq.0,
                        found_seq: frame.seq.0,
                    }))
                }
                (Some(_), Some(raw)) => Some(parse_entry(raw, self.path, info.offset.0, false)),
                _ => None,
            },
            _ => None,
        };
        run.left -= 1;
        if run.left == 0 {
            // Every entry of the run was loaded: its buffer serves the next run.
            if let Some(Some(done)) = run.read.replace(None) {
                spare.push(done.into_buffer());
            }
            run.frames = Vec::new();
        }
        entry
    }

    /// Reads and parses the entry of record `i` (no accounting). A payload of a known
    /// type with an unexpected shape is returned as [`Entry::Unknown`] rather than lost.
    pub(crate) fn load_entry(&self, i: EntryIndex) -> Result<Entry, ReadError> {
        let raw = self.load_raw(i)?;
        let offset = self.index.info(i).map_or(0, |x| x.offset.0);
        parse_entry(&raw, self.path, offset, true)
    }
}

/// Parses an entry payload; with `lenient`, a known type of unexpected shape becomes
/// [`Entry::Unknown`].
pub(crate) fn parse_entry(
    raw: &[u8],
    path: &Path,
    offset: u64,
    lenient: bool,
) -> Result<Entry, ReadError> {
    let err = |source: session_types::ParseError| ReadError::Parse {
        path: path.to_path_buf(),
        offset,
        source,
    };
    match Record::read_payload(raw) {
        Ok(Record::Entry(e)) => Ok(e),
        Ok(Record::Header(_)) => Err(ReadError::NotAnEntry {
            path: path.to_path_buf(),
            offset,
        }),
        Err(e) => {
            if lenient
                && let Ok(serde_json::Value::Object(map)) =
                    session_types::json::from_str_lossy(&String::from_utf8_lossy(raw))
            {
                return Ok(Entry::Unknown(map));
            }
            Err(err(e))
        }
    }
}

/// Where the entries of a context read come from, besides the derived state that
/// answers every question about them: the journal through a snapshot ([`SnapshotReader`]), or
/// memory ([`Memory`], resident sessions).
pub(crate) trait Records {
    /// The session's derived state.
    fn derived(&self) -> &Derived;
    /// Whether record `i` lies inside what this read sees.
    fn visible(&self, i: EntryIndex) -> bool;
    /// The number of records this read sees.
    fn frames(&self) -> u32;
    /// The source bytes reading record `i` costs.
    fn payload_len(&self, i: EntryIndex) -> u64;
    /// The entry of record `i`.
    fn entry(&self, i: EntryIndex) -> Result<Cow<'_, Entry>, ReadError>;
    /// The records whose entries are about to be read (at most `max_entries` of them
    /// and `max_bytes` of payload): a source that reads storage may read them ahead.
    fn prefetch(&self, entries: &[EntryIndex], max_entries: u64, max_bytes: u64) {
        let _ = (entries, max_entries, max_bytes);
    }
    /// How errors name the session.
    fn session(&self) -> String;
    /// The record's own text, where the source keeps it (`None`: typed entries only).
    fn raw(&self, i: EntryIndex) -> Option<Vec<u8>> {
        let _ = i;
        None
    }
}

impl Records for SnapshotReader<'_> {
    fn derived(&self) -> &Derived {
        self.index
    }

    fn visible(&self, i: EntryIndex) -> bool {
        SnapshotReader::visible(self, i)
    }

    fn frames(&self) -> u32 {
        self.snapshot.frames
    }

    fn payload_len(&self, i: EntryIndex) -> u64 {
        SnapshotReader::payload_len(self, i)
    }

    fn raw(&self, i: EntryIndex) -> Option<Vec<u8>> {
        self.load_raw(i).ok()
    }

    fn entry(&self, i: EntryIndex) -> Result<Cow<'_, Entry>, ReadError> {
        if let Some(entry) = self.prefetched_entry(i) {
            return entry.map(Cow::Owned);
        }
        let raw = self.load_raw(i)?;
        let offset = self.index.info(i).map_or(0, |x| x.offset.0);
        parse_entry(&raw, self.path, offset, false).map(Cow::Owned)
    }

    fn prefetch(&self, entries: &[EntryIndex], max_entries: u64, max_bytes: u64) {
        self.prefetch_frames(entries, max_entries, max_bytes);
    }

    fn session(&self) -> String {
        self.path.display().to_string()
    }
}

/// Sentinel of [`Memory::slots`]: the record has no entry (the header record, or a
/// payload that is not an entry).
pub(crate) const NO_ENTRY: u32 = u32::MAX;

/// A resident session's records: its derived state and its entries in memory.
pub(crate) struct Memory<'a> {
    pub(crate) derived: &'a Derived,
    pub(crate) entries: &'a [Entry],
    /// Per record of `derived`, the position of its entry in `entries`.
    pub(crate) slots: &'a [u32],
    /// The text of the records a typed entry cannot hold whole (`1e400`).
    pub(crate) raw: &'a HashMap<u32, Box<[u8]>>,
    pub(crate) session: &'a str,
}

impl<'a> Memory<'a> {
    /// The entry of record `i`, if it has one.
    pub(crate) fn get(&self, i: EntryIndex) -> Option<&'a Entry> {
        let slot = *self.slots.get(i.0 as usize)?;
        self.entries.get(slot as usize)
    }
}

impl Records for Memory<'_> {
    fn derived(&self) -> &Derived {
        self.derived
    }

    fn visible(&self, i: EntryIndex) -> bool {
        (i.0 as usize) < self.slots.len()
    }

    fn frames(&self) -> u32 {
        u32::try_from(self.slots.len()).unwrap_or(u32::MAX)
    }

    fn payload_len(&self, _: EntryIndex) -> u64 {
        0
    }

    fn entry(&self, i: EntryIndex) -> Result<Cow<'_, Entry>, ReadError> {
        self.get(i)
            .map(Cow::Borrowed)
            .ok_or_else(|| ReadError::EntryNotFound {
                session: self.session.to_owned(),
                id: format!("#{}", i.0),
            })
    }

    fn session(&self) -> String {
        self.session.to_owned()
    }

    fn raw(&self, i: EntryIndex) -> Option<Vec<u8>> {
        self.raw.get(&i.0).map(|text| text.to_vec())
    }
}

/// [`ContextSource`] over a session's derived state: the path walk reads parents and
/// kinds from it; only the entries the context holds are loaded (from the journal:
/// verified frame reads), each counted against the read's limits. Owned sessions,
/// read-only views and resident sessions all build their contexts through it.
pub(crate) struct IndexSource<'a, R> {
    pub(crate) records: R,
    pub(crate) acct: &'a Accounting,
    /// A limit error met where the trait cannot return one (usage attribution); the
    /// caller fails the read with it.
    pub(crate) deferred: std::cell::RefCell<Option<ReadError>>,
}

impl<R: Records> ContextSource for IndexSource<'_, R> {
    type Handle = EntryIndex;
    type Error = ReadError;

    fn last_entry(&self) -> Option<EntryIndex> {
        // The last entry record this read sees.
        let derived = self.records.derived();
        let leaf = derived.leaf()?;
        if self.records.visible(leaf) {
            return Some(leaf);
        }
        (0..self.records.frames()).rev().map(EntryIndex).find(|i| {
            derived
                .info(*i)
                .is_some_and(|x| x.kind == kinds::ENTRY_KIND)
        })
    }

    fn find(&self, id: &str) -> Option<EntryIndex> {
        let derived = self.records.derived();
        derived
            .find(id)
            .filter(|i| self.records.visible(*i) && !derived.is_unparsable(*i))
    }

    fn node(&self, entry: EntryIndex) -> Node<'_, EntryIndex> {
        let index = self.records.derived();
        let Some((entry_type, role)) = index.kind_of(entry) else {
            return Node {
                parent: Parent::Root,
                kind: ContextKind::Unknown,
            };
        };
        let parent = match index.parent_id_of(entry) {
            // A truthy `parentId` that is not a string (`1`, `true`) leads to the
            // entry whose id has the same value, as `byId.get` does; where there is
            // none, the path starts here, without a warning (as in `ResidentSource`,
            // whose ids are strings only).
            None => match index
                .json_parent(entry)
                .and_then(|(_, found)| found)
                .filter(|i| self.records.visible(*i) && !index.is_unparsable(*i))
            {
                Some(i) => Parent::Node(i),
                None => Parent::Root,
            },
            // A self-parent resolves to itself, which the context reports as a cycle.
            Some(p) if Some(p) == index.id_of(entry) => match self.find(p) {
                Some(i) => Parent::Node(i),
                None => Parent::Missing(Cow::Borrowed(p)),
            },
            // The index resolved the parent when it indexed the entry, so the walk
            // needs no id lookups (and resume builds no id map).
            Some(p) => match index
                .parent(entry)
                .filter(|i| self.records.visible(*i) && !index.is_unparsable(*i))
            {
                Some(i) => Parent::Node(i),
                None => Parent::Missing(Cow::Borrowed(p)),
            },
        };
        Node {
            parent,
            kind: ContextKind::of_type(Some(entry_type).filter(|t| !t.is_empty()), role),
        }
    }

    fn id(&self, entry: EntryIndex) -> Cow<'_, str> {
        Cow::Borrowed(self.records.derived().id_of(entry).unwrap_or(""))
    }

    fn load(&self, entry: EntryIndex) -> Result<Cow<'_, Entry>, ReadError> {
        self.acct.charge(self.records.payload_len(entry))?;
        self.records.entry(entry)
    }

    fn id_value(&self, entry: EntryIndex) -> Option<serde_json::Value> {
        self.records.derived().id_value(entry)
    }

    /// From the id's key, without loading the entry: a `1e400` id is `Infinity`.
    fn id_is_null(&self, entry: EntryIndex) -> bool {
        self.records.derived().id_json(entry) == Some("null")
    }

    /// The index read each record's `timestamp` from its own text, where a `1e400` is
    /// `Infinity` (NaN as a date), which the loaded entry reads as `null` (0): when the
    /// index found no valid time, that is the answer (`Some(None)`); otherwise the
    /// loaded entry's reading stands.
    fn time_ms(&self, entry: EntryIndex) -> Option<Option<i64>> {
        let info = self.records.derived().info(entry)?;
        info.timestamp_ms.is_none().then_some(None)
    }

    /// The record's own text, read as the reference reads its line: a field of
    /// `1e400` is `Infinity` there though the loaded entry reads `null`.
    fn raw_field(&self, entry: EntryIndex, key: &str) -> Option<Box<RawValue>> {
        session_types::js::raw_field(&String::from_utf8_lossy(&self.records.raw(entry)?), key)
    }

    /// The index's key of an id that is not a string (`Infinity` for `1e400`).
    fn id_key(&self, entry: EntryIndex) -> Option<Cow<'_, str>> {
        self.records.derived().id_json(entry).map(Cow::Borrowed)
    }

    fn entry_count(&self) -> usize {
        usize::try_from(self.records.derived().counts().entries).unwrap_or(usize::MAX)
    }

    /// The index's path marks (kept while its resolved parents are exact, which are
    /// the parents [`node`](ContextSource::node) follows): a resume walks only what
    /// the context holds. Marks name ancestors, which come before the entry in
    /// append order, so they are inside the read's snapshot when the entry is.
    fn path_marks(&self, entry: EntryIndex) -> Option<PathMarks<EntryIndex>> {
        if !self.records.visible(entry) {
            return None;
        }
        let m = self.records.derived().path_marks(entry)?;
        Some(PathMarks {
            thinking_level_change: m.thinking_level_change,
            service_tier_change: m.service_tier_change,
            model_source: m.model_source,
            top: m.top,
        })
    }

    /// A loaded sidecar stores them: the walk stops at the context's window.
    fn path_marks_ready(&self) -> bool {
        self.records.derived().path_marks_ready()
    }

    /// The latest `child_usage_attributed` entry for the target (the index keeps only
    /// the latest): its aggregate is exact; `children`/`count` describe that entry
    /// only, which is all the messages view uses.
    /// The frames of the entries the context loads, read ahead within what the read's
    /// limits still allow (each load is still counted when it happens).
    fn prefetch(&self, entries: &[EntryIndex]) {
        let (max_entries, max_bytes) = self.acct.headroom();
        self.records.prefetch(entries, max_entries, max_bytes);
    }

    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        let i = self.records.derived().latest_aggregate_usage(target)?;
        if !self.records.visible(i) {
            return None;
        }
        if let Err(e) = self.acct.charge(self.records.payload_len(i)) {
            self.deferred.borrow_mut().get_or_insert(e);
            return None;
        }
        match self.records.entry(i).ok()?.as_ref() {
            Entry::ChildUsageAttributed(c) => {
                Some(UsageAttribution::first(&c.child_usage, &c.aggregate_usage))
            }
            _ => None,
        }
    }
}
