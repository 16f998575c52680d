//! What a replay of one session's records derives — ids, parents, tree, labels,
//! name, leaf, counts, the listing summary — with or without a journal.
//!
//! [`Derived`] is the one implementation of these rules: an [`Index`](crate::Index)
//! holds one fed from its journal's frames (and dereferences to it), and a session
//! held in memory builds one from its records ([`Derived::push_payload`],
//! [`Derived::push_entry`]) through the same `observe` path, so every view of a
//! session answers from the same code.

use std::borrow::Cow;

use session_journal::{BodyCheck, FrameInfo, FrameKind, Offset, Seq, Tag, UnixMillis};
use session_types::Entry;

use crate::state::{REC_UNPARSABLE, State};
use crate::summary::SessionSummary;

/// Position of an indexed frame in append order (0: the header record's frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryIndex(pub u32);

/// Where an indexed entry lives and what it is, without decoding it.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct EntryInfo<'a> {
    /// Its position in append order.
    pub index: EntryIndex,
    /// `id` (`None` if absent or not a string).
    pub id: Option<&'a str>,
    /// `parentId` (`None` for null, absent, empty or not a string).
    pub parent_id: Option<&'a str>,
    /// `parentId` as compact JSON text when it is present but neither `null` nor a
    /// non-empty string (`""`, `5`, `{…}`): it names no parent, and the reference's
    /// tree shows it as is.
    pub parent_json: Option<&'a str>,
    /// `type` (`""` if absent).
    pub entry_type: &'a str,
    /// `message.role` for messages.
    pub role: Option<&'a str>,
    /// `Date.parse(timestamp)`, `None` when invalid.
    pub timestamp_ms: Option<i64>,
    /// Frame offset in the journal.
    pub offset: Offset,
    /// Frame seq.
    pub seq: Seq,
    /// Payload length.
    pub payload_len: u32,
    /// The frame's kind byte.
    pub kind: u8,
}

impl EntryInfo<'_> {
    /// The entry type `entry_type` names, `None` for a type this version does not
    /// model.
    pub fn known_type(&self) -> Option<session_types::EntryType> {
        session_types::EntryType::from_name(self.entry_type)
    }
}

/// What the index knows of the path from the root to an entry without walking it
/// ([`Derived::path_marks`]): the nearest settings changes on it and where it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathMarks {
    /// The nearest `thinking_level_change` on the path (the entry itself included).
    pub thinking_level_change: Option<EntryIndex>,
    /// The nearest `service_tier_change` on the path (the entry itself included).
    pub service_tier_change: Option<EntryIndex>,
    /// The nearest `model_change` or `message` whose role is `assistant` on the path
    /// (the entry itself included).
    pub model_source: Option<EntryIndex>,
    /// The path's first entry: the one whose parent did not resolve (a root, an
    /// orphan, a self-parent).
    pub top: EntryIndex,
}

/// Entry counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Counts {
    /// Entry frames (header record excluded).
    pub entries: u64,
    /// `message` entries, all roles, all branches.
    pub messages: u64,
    /// `label` entries.
    pub label_entries: u64,
    /// Entries whose payload is not a JSON object (located, not in the tree).
    pub unparsable: u64,
    /// Entries without a string id (located, not in the tree).
    pub without_id: u64,
    /// Entries whose id an earlier entry already had (the later one wins lookups).
    pub duplicate_ids: u64,
    /// Frames of kinds this crate does not know.
    pub other_kinds: u64,
}

/// The state a replay of one session's records derives, and its queries.
///
/// Without a journal ([`Derived::new`]), records are pushed in append order: the
/// header record's text, then each entry's (as [`Derived::push_payload`]), or the
/// typed entry ([`Derived::push_entry`], which parses nothing unless the entry's text
/// could read differently from its types). The queries then answer exactly what an
/// [`Index`](crate::Index) of a journal holding those records answers; only the
/// journal locations in [`EntryInfo`] (offset, seq, payload length) are placeholders.
///
/// ```
/// use session_index::{Derived, kinds};
/// use session_types::{Entry, EntryBase, EntryId, Timestamp};
///
/// let mut d = Derived::new();
/// d.push_payload(kinds::SESSION_HEADER, br#"{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#);
/// let base = EntryBase::new(EntryId::new("a1"), None, Timestamp::new("2025-01-01T00:00:01.000Z"));
/// d.push_entry(&Entry::session_info(base, "\u{feff} named "));
/// assert_eq!(d.name(), Some("named"));
/// assert_eq!(d.leaf(), d.find("a1"));
/// ```
#[derive(Debug, Clone)]
pub struct Derived {
    pub(crate) state: State,
}

impl Default for Derived {
    fn default() -> Self {
        Self::new()
    }
}

impl Derived {
    /// An empty state, fed without a journal.
    pub fn new() -> Self {
        Self {
            state: State::new(Offset(0)),
        }
    }

    pub(crate) fn from_state(state: State) -> Self {
        Self { state }
    }

    /// The frame this state's next record would be, were it in a journal: records
    /// are numbered; offsets, seqs and lengths are placeholders.
    fn next_frame(&self, kind: FrameKind, payload_len: usize) -> FrameInfo {
        FrameInfo {
            offset: Offset(self.state.covered_len),
            kind,
            seq: Seq(self.state.covered_seq + 1),
            tag: Tag::default(),
            time: UnixMillis(0),
            synced_to: Offset(0),
            payload_len: u32::try_from(payload_len).unwrap_or(u32::MAX),
            body_check: BodyCheck([0; 8]),
        }
    }

    /// Adds one record as a replay of a journal frame of `kind` with this payload
    /// would ([`kinds::SESSION_HEADER`](crate::kinds::SESSION_HEADER) for the header
    /// record, [`kinds::ENTRY`](crate::kinds::ENTRY) for an entry's JSON text).
    pub fn push_payload(&mut self, kind: FrameKind, payload: &[u8]) {
        let info = self.next_frame(kind, payload.len());
        self.state.observe(&info, payload);
    }

    /// Adds one entry record from the typed entry: the same result as
    /// [`push_payload`](Self::push_payload) of its JSON text, which is written only
    /// where the text could read differently from the types.
    pub fn push_entry(&mut self, entry: &Entry) {
        let info = self.next_frame(crate::kinds::ENTRY, 0);
        self.state.observe_entry(&info, entry.into(), None, || {
            Cow::Owned(entry.to_json().into_bytes())
        });
    }

    /// Entry counts.
    pub fn counts(&self) -> Counts {
        let a = &self.state.agg;
        Counts {
            entries: a.entries,
            messages: a.message_count,
            label_entries: a.label_entries,
            unparsable: a.unparsable,
            without_id: a.no_id,
            duplicate_ids: a.duplicate_ids,
            other_kinds: a.other_kinds,
        }
    }

    /// Ids inserted into id maps since this state was built or loaded: what the id
    /// lookups cost in CPU, counted (tests compare it across session sizes).
    #[cfg(feature = "testing")]
    pub fn ids_mapped(&self) -> u64 {
        self.state.ids_mapped()
    }

    /// The capacities of the records and of the id pool: an append that changes
    /// them reallocated (copied) what the state holds.
    #[cfg(feature = "testing")]
    pub fn capacities(&self) -> (usize, usize) {
        (self.state.recs.capacity(), self.state.pool.capacity())
    }

    /// Number of indexed frames (header record included).
    pub fn len(&self) -> usize {
        self.state.recs.len()
    }

    /// Whether no frame is indexed.
    pub fn is_empty(&self) -> bool {
        self.state.recs.is_empty()
    }

    /// The entry with this id (the last one, if the id repeats).
    pub fn find(&self, id: &str) -> Option<EntryIndex> {
        self.state.find_id(id).map(EntryIndex)
    }

    /// Location and envelope of an indexed frame.
    pub fn info(&self, i: EntryIndex) -> Option<EntryInfo<'_>> {
        let s = &self.state;
        let r = s.recs.get(i.0 as usize)?;
        Some(EntryInfo {
            index: i,
            id: s.id_in(&r),
            parent_id: s.parent_id_in(&r),
            parent_json: s.parent_json_in(&r),
            entry_type: s.type_in(&r),
            role: s.role_in(&r),
            timestamp_ms: (!r.ts.is_nan()).then_some(r.ts as i64),
            offset: Offset(r.offset),
            seq: Seq(r.seq),
            payload_len: r.payload_len,
            kind: r.kind,
        })
    }

    /// The entry the reference resumes at: the last appended entry.
    pub fn leaf(&self) -> Option<EntryIndex> {
        self.state.agg.leaf.map(EntryIndex)
    }

    /// The resolved parent of an entry (by the reference's rules: the last entry with
    /// that id; `None` for roots, self-parents and orphans).
    pub fn parent(&self, i: EntryIndex) -> Option<EntryIndex> {
        if i.0 as usize >= self.state.recs.len() {
            return None;
        }
        self.state.parent_pos(i.0).map(EntryIndex)
    }

    /// Where the reference's context walk goes from an entry whose `parentId` is not a
    /// string (a number, `true`, an object): `current.parentId ?
    /// byId.get(current.parentId) : undefined`, by the value's key, a self-parent
    /// included. `None` for a string, `null`, absent or falsy (`0`, `false`)
    /// `parentId`; otherwise its JSON text and the entry, if one has that id.
    pub fn json_parent(&self, i: EntryIndex) -> Option<(&str, Option<EntryIndex>)> {
        if i.0 as usize >= self.state.recs.len() {
            return None;
        }
        let text = self.state.parent_json_of(i.0)?;
        let key = self.state.parent_key_of(i.0).filter(|k| k.truthy())?;
        Some((text, self.state.find_key(key).map(EntryIndex)))
    }

    /// The path marks of entry `i`: the nearest `thinking_level_change`,
    /// `service_tier_change` and model source (`model_change` or assistant message)
    /// on its path to the root and the path's first entry, by
    /// the resolved parents ([`Derived::parent`]); O(log m) in the number of such
    /// entries, without walking the path. `None` for a record that is no tree entry,
    /// and while a duplicate id has made the resolved parents stale (until the next
    /// load): then only a walk tells.
    ///
    /// ```
    /// use session_index::{Derived, EntryIndex, kinds};
    /// let mut d = Derived::new();
    /// d.push_payload(kinds::SESSION_HEADER, br#"{"type":"session","id":"s"}"#);
    /// d.push_payload(kinds::ENTRY, br#"{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}"#);
    /// d.push_payload(kinds::ENTRY, br#"{"type":"thinking_level_change","id":"b","parentId":"a","thinkingLevel":"high"}"#);
    /// d.push_payload(kinds::ENTRY, br#"{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"go"}}"#);
    /// let m = d.path_marks(d.find("c").unwrap()).unwrap();
    /// assert_eq!(m.thinking_level_change, d.find("b"));
    /// assert_eq!(m.service_tier_change, None);
    /// assert_eq!(m.model_source, None);
    /// assert_eq!(Some(m.top), d.find("a"));
    /// ```
    pub fn path_marks(&self, i: EntryIndex) -> Option<PathMarks> {
        let m = self.state.marks_of(i.0)?;
        let at = |p: u32| (p != crate::state::NO_POS).then_some(EntryIndex(p));
        Some(PathMarks {
            thinking_level_change: at(m.thinking),
            service_tier_change: at(m.service_tier),
            model_source: at(m.model),
            top: EntryIndex(m.top),
        })
    }

    /// Whether [`path_marks`](Self::path_marks) answers without a pass over the
    /// records: a loaded sidecar stores every record's (those indexed since are
    /// marked from them), or they were computed already. A walk that would read more
    /// of the path than the context holds to learn what the marks tell should ask
    /// them instead.
    pub fn path_marks_ready(&self) -> bool {
        self.state.marks_ready()
    }

    /// Why this index's records were rebuilt from the journal after it was opened:
    /// a page of its sidecar, read on first use, failed its check (or named what the
    /// sidecar does not hold). The queries answered from the rebuild from then on;
    /// the next save writes a sound sidecar. `None`: nothing failed.
    pub fn sidecar_fault(&self) -> Option<&str> {
        self.state.sidecar_fault()
    }

    /// Reads and checks every page of the loaded sidecar that no query has read yet
    /// (an open reads only its head): what a verification of the sidecar does. The
    /// fault if a page failed (as [`sidecar_fault`](Self::sidecar_fault): the
    /// answers come from a rebuild then); `None` when every page is sound or there
    /// is no loaded sidecar.
    pub fn check_sidecar_pages(&self) -> Option<&str> {
        self.state.base.as_ref().and_then(|b| b.check_all())
    }

    /// Current labels: target id → label, in the reference's map order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.state
            .agg
            .maps
            .get()
            .labels
            .iter()
            .filter(|(_, v)| !v.json)
            .map(|(k, v)| (k.as_str(), v.label.as_str()))
    }

    /// The current label of an entry id, if it is a string (see [`Derived::label_value`]).
    pub fn label(&self, id: &str) -> Option<&str> {
        self.state
            .agg
            .maps
            .get()
            .labels
            .get(id)
            .filter(|l| !l.json)
            .map(|l| l.label.as_str())
    }

    /// The current label of an entry id as the reference holds it: any truthy JSON
    /// value of the latest label entry (`"start"`, but also `42` or `{…}`), or `None`.
    pub fn label_value(&self, id: &str) -> Option<serde_json::Value> {
        let l = self.state.agg.maps.get().labels.get(id)?;
        if l.json {
            Some(crate::fields::value_of(&l.label))
        } else {
            Some(serde_json::Value::String(l.label.clone()))
        }
    }

    /// The current label of entry `i` as the reference's `labelsById.get(entry.id)`
    /// gives it: by the id's key, whatever its JSON type (`targetId: 5` labels the
    /// entry whose `id` is the number 5, not `"5"`).
    pub fn label_of(&self, i: EntryIndex) -> Option<serde_json::Value> {
        use crate::state::Key;
        let a = self.state.agg.maps.get();
        let l = match self.state.key_of(i.0)? {
            Key::Str(b) => a.labels.get(std::str::from_utf8(b).ok()?)?,
            Key::Json(t) => a.labels_other.get(std::str::from_utf8(t).ok()?)?,
            Key::Undefined => a.labels_other.get(crate::fields::UNDEFINED)?,
            Key::Unique(_) => return None,
        };
        if l.json {
            Some(crate::fields::value_of(&l.label))
        } else {
            Some(serde_json::Value::String(l.label.clone()))
        }
    }

    /// The entry's `id` as the reference holds it, any JSON value; `None` when it
    /// has none (`undefined`: no `id` key, or a record that is not an object).
    pub fn id_value(&self, i: EntryIndex) -> Option<serde_json::Value> {
        self.state.recs.get(i.0 as usize)?;
        self.state.id_value(i.0)
    }

    /// The entry's `parentId` as the reference holds it (`null` included); `None`
    /// when it has no `parentId` key.
    pub fn parent_value(&self, i: EntryIndex) -> Option<serde_json::Value> {
        self.state.recs.get(i.0 as usize)?;
        self.state.parent_value(i.0)
    }

    /// The entry's `type` as the reference holds it, any JSON value; `None` when it
    /// has no `type` key.
    pub fn type_value(&self, i: EntryIndex) -> Option<serde_json::Value> {
        self.state.recs.get(i.0 as usize)?;
        self.state.type_value(i.0)
    }

    /// The label entry that set the current label of an entry id (reference 0.73.1
    /// reports its timestamp as the tree node's `labelTimestamp` and re-uses it in
    /// `createBranchedSession`).
    pub fn label_entry(&self, id: &str) -> Option<EntryIndex> {
        self.state
            .agg
            .maps
            .get()
            .labels
            .get(id)
            .map(|l| EntryIndex(l.entry))
    }

    /// The session name: the latest `session_info` in append order, trimmed; an empty
    /// name clears it (reference 0.73.1).
    pub fn name(&self) -> Option<&str> {
        self.state.agg.name.as_deref()
    }

    /// The latest `session_state` entry's state, as written.
    pub fn lifecycle_state(&self) -> Option<&str> {
        self.state.agg.state.as_deref()
    }

    /// The latest `child_usage_attributed` entry for a target message id.
    pub fn latest_aggregate_usage(&self, target_id: &str) -> Option<EntryIndex> {
        self.state
            .agg
            .maps
            .get()
            .usage_latest
            .get(target_id)
            .map(|i| EntryIndex(*i))
    }

    /// The listing summary (the reference's `SessionInfo` fields).
    pub fn summary(&self) -> SessionSummary {
        SessionSummary::from_aggregates(&self.state.agg)
    }

    /// The entry's id, without building an [`EntryInfo`] (the hot path of walks).
    pub fn id_of(&self, i: EntryIndex) -> Option<&str> {
        self.state.recs.get(i.0 as usize)?;
        self.state.id_of(i.0)
    }

    /// The entry's `id` as canonical JSON text when it is not a string (`1` for `1.0`,
    /// `Infinity` for `1e400`, which [`Derived::id_value`] shows as `null`) or a
    /// string holding a lone surrogate (`"\ud800"`, shown with U+FFFD); `None` for
    /// another string id or none.
    pub fn id_json(&self, i: EntryIndex) -> Option<&str> {
        self.state.recs.get(i.0 as usize)?;
        self.state.id_json_of(i.0)
    }

    /// The entry's `parentId` string (`None` for null, absent, empty or not a string).
    pub fn parent_id_of(&self, i: EntryIndex) -> Option<&str> {
        self.state.recs.get(i.0 as usize)?;
        self.state.parent_id_of(i.0)
    }

    /// The entry's `type` and `message.role`, from interned codes (no decoding).
    pub fn kind_of(&self, i: EntryIndex) -> Option<(&str, Option<&str>)> {
        self.state.recs.get(i.0 as usize)?;
        Some((self.state.type_of(i.0), self.state.role_of(i.0)))
    }

    /// Whether the entry's payload was not a JSON object.
    pub fn is_unparsable(&self, i: EntryIndex) -> bool {
        self.state
            .recs
            .get(i.0 as usize)
            .is_some_and(|r| r.flags & REC_UNPARSABLE != 0)
    }
}
