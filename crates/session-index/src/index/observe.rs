//! Keeping an index current while appending: the frames the caller just appended,
//! observed without re-reading the journal.

use std::borrow::Cow;

use session_journal::{Appended, FrameInfo, FrameKind, Offset, Seq, Tag, UnixMillis};
use session_types::{Entry, EntryRef};

use super::Index;
use crate::error::ObserveError;

impl Index {
    /// Adds a frame the caller just appended (the manager keeps the index current
    /// without re-reading). `payload` is the frame's payload as appended.
    pub fn observe(
        &mut self,
        kind: FrameKind,
        appended: &Appended,
        payload: &[u8],
    ) -> Result<(), ObserveError> {
        let info = self.appended_info(kind, appended, payload)?;
        self.derived.state.observe(&info, payload);
        Ok(())
    }

    /// [`observe`](Self::observe) for an entry frame ([`kinds::ENTRY`](crate::kinds::ENTRY))
    /// whose payload the caller serialized from `entry` (`serde_json` of the
    /// [`Entry`], as [`Entry::to_json`] writes it): the index takes what it needs from
    /// the typed entry instead of parsing the payload again. The result is the same
    /// as [`observe`](Self::observe) of the payload (a replay of the journal gives the
    /// same index); for the few entries whose text could read differently from their
    /// types (unknown entry types or roles, `extra` fields repeating a modelled key),
    /// the payload is parsed.
    ///
    /// ```
    /// # use std::{path::Path, sync::Arc};
    /// # use session_index::{Index, OpenIndexOptions, kinds};
    /// # use session_journal::{Durability, OpenOptions, Writer};
    /// # use session_testkit::{legacy, sim::SimFs};
    /// # use session_types::{Entry, EntryBase, EntryId, Timestamp};
    /// # let fs = Arc::new(SimFs::new());
    /// # let path = Path::new("/s/a.jsonl");
    /// # let head = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
    /// # legacy::write_journal_from_jsonl(path, legacy::fixture_journal_id("a"), head, fs.clone())?;
    /// # let (mut index, _) = Index::open_or_rebuild(path, OpenIndexOptions { vfs: fs.clone(), ..OpenIndexOptions::default() })?;
    /// # let (mut writer, _) = Writer::open(path, OpenOptions { vfs: fs.clone(), ..OpenOptions::default() })?;
    /// let base = EntryBase::new(EntryId::new("a1"), None, Timestamp::new("2025-01-01T00:00:01.000Z"));
    /// let entry = Entry::session_info(base, "named");
    /// let (appended, payload) = writer.append_encoded(
    ///     kinds::ENTRY,
    ///     kinds::id_tag("a1"),
    ///     Durability::Buffered,
    ///     |buf| serde_json::to_writer(buf, &entry).expect("entries serialize"),
    /// )?;
    /// index.observe_entry(&appended, payload, &entry)?;
    /// assert_eq!(index.name(), Some("named"));
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// ```
    pub fn observe_entry(
        &mut self,
        appended: &Appended,
        payload: &[u8],
        entry: &Entry,
    ) -> Result<(), ObserveError> {
        self.observe_entry_timed(appended, payload, entry, None)
    }

    /// [`observe_entry`](Self::observe_entry) of an entry whose timestamp the
    /// caller formatted from `timestamp_ms`, known to read back as exactly that
    /// (`Timestamp::from_unix_ms_read_back`): the index takes those milliseconds
    /// instead of parsing the text back. `None` is `observe_entry`. The entry may be
    /// a whole one (`&Entry`) or a message entry in parts ([`EntryRef::Message`]: a
    /// message its appender keeps).
    pub fn observe_entry_timed<'e>(
        &mut self,
        appended: &Appended,
        payload: &[u8],
        entry: impl Into<EntryRef<'e>>,
        timestamp_ms: Option<i64>,
    ) -> Result<(), ObserveError> {
        let info = self.appended_info(crate::kinds::ENTRY, appended, payload)?;
        self.derived
            .state
            .observe_entry(&info, entry.into(), timestamp_ms, || Cow::Borrowed(payload));
        Ok(())
    }

    /// [`observe`](Self::observe) for a frame whose payload the caller read with
    /// [`Scanned::parse`](crate::Scanned::parse) (an import, which reads each record
    /// once): the index takes what it needs from the scan instead of parsing the
    /// payload again. `scanned` must come from this `payload`'s text; the result is
    /// the same as [`observe`](Self::observe) of the payload (the payload is parsed
    /// where the scan cannot tell: header frames, a user message that may become the
    /// first message, ranges that do not fit the payload).
    ///
    /// ```
    /// # use std::{path::Path, sync::Arc};
    /// # use session_index::{Index, OpenIndexOptions, Scanned, kinds};
    /// # use session_journal::{Durability, OpenOptions, Writer};
    /// # use session_testkit::{legacy, sim::SimFs};
    /// # let fs = Arc::new(SimFs::new());
    /// # let path = Path::new("/s/a.jsonl");
    /// # let head = r#"{"type":"session","version":3,"id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#;
    /// # legacy::write_journal_from_jsonl(path, legacy::fixture_journal_id("a"), head, fs.clone())?;
    /// # let (mut index, _) = Index::open_or_rebuild(path, OpenIndexOptions { vfs: fs.clone(), ..OpenIndexOptions::default() })?;
    /// # let (mut writer, _) = Writer::open(path, OpenOptions { vfs: fs.clone(), ..OpenOptions::default() })?;
    /// let line = r#"{"type":"session_info","id":"a1","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","name":"named"}"#;
    /// let (envelope, scanned) = Scanned::parse(line).expect("a plain record");
    /// assert_eq!(envelope.id.as_deref(), Some("a1"));
    /// let appended = writer.append(kinds::ENTRY, line.as_bytes(), Durability::Buffered)?;
    /// index.observe_scanned(kinds::ENTRY, &appended, line.as_bytes(), &scanned)?;
    /// assert_eq!(index.name(), Some("named"));
    /// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
    /// ```
    pub fn observe_scanned(
        &mut self,
        kind: FrameKind,
        appended: &Appended,
        payload: &[u8],
        scanned: &crate::Scanned,
    ) -> Result<(), ObserveError> {
        let info = self.appended_info(kind, appended, payload)?;
        self.derived.state.observe_scanned(&info, payload, scanned);
        Ok(())
    }

    /// Makes room for about `records` more frames to be observed (a hint, as
    /// `Vec::reserve`: the id map takes 8 bytes a record now instead of rehashing
    /// every id each time it doubles; an import passes its source's line count,
    /// capped). Changes no answer.
    pub fn reserve(&mut self, records: usize) {
        self.derived.state.reserve(records);
    }

    /// Covers the journal's seal the caller's writer just wrote (`Writer::seal` or a
    /// close; the writer's `last_frame()`), so that the index saved next covers the
    /// journal to its end and its witness is the seal. A seal the index already
    /// covers is a no-op.
    pub fn observe_seal(&mut self, seal: &FrameInfo) -> Result<(), ObserveError> {
        let state = &self.derived.state;
        if seal.kind.is_seal() && seal.end().0 == state.covered_len {
            return Ok(());
        }
        if !seal.kind.is_seal()
            || seal.seq.0 != state.covered_seq
            || seal.offset.0 != state.covered_len
        {
            return Err(ObserveError::OutOfOrder {
                expected_seq: Seq(state.covered_seq),
                expected_offset: Offset(state.covered_len),
                found_seq: seal.seq,
                found_offset: seal.offset,
            });
        }
        self.derived.state.observe(seal, &[]);
        Ok(())
    }

    fn appended_info(
        &self,
        kind: FrameKind,
        appended: &Appended,
        payload: &[u8],
    ) -> Result<FrameInfo, ObserveError> {
        if appended.seq.0 != self.derived.state.covered_seq + 1
            || appended.offset.0 != self.derived.state.covered_len
        {
            return Err(ObserveError::OutOfOrder {
                expected_seq: Seq(self.derived.state.covered_seq + 1),
                expected_offset: Offset(self.derived.state.covered_len),
                found_seq: appended.seq,
                found_offset: appended.offset,
            });
        }
        Ok(FrameInfo {
            offset: appended.offset,
            kind,
            seq: appended.seq,
            tag: Tag::default(),
            time: UnixMillis(0),
            synced_to: Offset(0),
            payload_len: payload.len() as u32,
            body_check: appended.body_check,
        })
    }
}
