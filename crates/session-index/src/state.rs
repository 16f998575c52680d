//! The in-memory index: one compact record per frame, the id map, and the aggregates
//! a replay of the journal in append order produces.

use std::borrow::Cow;
use std::collections::HashMap;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use session_journal::{FrameInfo, Offset};
use session_types::{EntryRef, EntryType, EntryTypeMap, parse_js_date};

use crate::fields::{Fields, Message};
use crate::ids::Ids;
use crate::kinds::{ENTRY_KIND, SESSION_HEADER_KIND};
use crate::marks::{MarkInfo, Marks, model_change, setting_of};
use crate::probe::{FIRST_MESSAGE_MAX_BYTES, Probe, Text};
use crate::store::{Pool, Recs};

/// Sentinel for "no string" in a span.
pub(crate) const NO_SPAN: u32 = u32::MAX;

/// A byte range of the string pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub(crate) start: u64,
    pub(crate) len: u32,
}

impl Span {
    pub(crate) const NONE: Span = Span {
        start: 0,
        len: NO_SPAN,
    };
    pub(crate) fn is_none(self) -> bool {
        self.len == NO_SPAN
    }
}

/// One indexed frame (header record or entry), 64 bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rec {
    pub(crate) offset: u64,
    pub(crate) seq: u64,
    pub(crate) body_check: [u8; 8],
    /// `Date.parse(timestamp)` in ms; NaN when invalid or absent.
    pub(crate) ts: f64,
    pub(crate) id: Span,
    pub(crate) parent: Span,
    pub(crate) payload_len: u32,
    /// Interned `type` string (0: none).
    pub(crate) type_code: u16,
    /// Interned `message.role` string (0: none).
    pub(crate) role_code: u16,
    /// The frame kind byte.
    pub(crate) kind: u8,
    /// `REC_*` flags.
    pub(crate) flags: u8,
    /// The record the parent id resolves to by the reference's rules (the last entry
    /// with that id); [`NO_POS`] for roots, self-parents and orphans. Exact only while
    /// [`State::parents_exact`] holds.
    pub(crate) parent_pos: u32,
}

/// Sentinel for "no record" in [`Rec::parent_pos`].
pub(crate) const NO_POS: u32 = u32::MAX;

/// The payload was not a JSON object (kept as a location, not a tree node).
pub(crate) const REC_UNPARSABLE: u8 = 1;

/// The record's parent span holds its `parentId` as canonical JSON text (`""`, `5`,
/// `{…}`; see [`crate::fields::canonical`]): no string parent, but the reference's
/// maps are keyed by the raw value.
pub(crate) const REC_PARENT_JSON: u8 = 2;

/// The record's id span holds its `id` as canonical JSON text (`5`, `false`, `null`,
/// `{…}`, or a string holding a lone surrogate, which no UTF-8 holds): the id is no
/// string the index can hold, and the reference keys its maps by the value.
pub(crate) const REC_ID_JSON: u8 = 4;

/// The entry has no `parentId` key (`undefined`, not `null`, to the reference).
pub(crate) const REC_PARENT_ABSENT: u8 = 8;

/// The record's `type_code` interns its `type` as canonical JSON text: the type is
/// present but not a string.
pub(crate) const REC_TYPE_JSON: u8 = 16;

/// An entry's `id` (or a `parentId`, `targetId`) as a key of the reference's `Map`s
/// (SameValueZero): strings and other values never meet, numbers meet by value
/// (canonical text), an object or array only itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key<'a> {
    /// `undefined`: no `id` key, or a record that is not a JSON object.
    Undefined,
    /// A string.
    Str(&'a [u8]),
    /// A number, boolean or `null`, as canonical JSON text; or a string holding a
    /// lone surrogate, which no Rust string holds, as its canonical JSON text
    /// (`session_types::json::lone_surrogate_key`, quotes included: it meets no
    /// string key, whose bytes are the decoded text, and no number).
    Json(&'a [u8]),
    /// An object or array: equal to nothing else (the record holding it).
    Unique(u32),
}

impl<'a> Key<'a> {
    /// The key of a value kept as canonical JSON text (`record`: whose value it is).
    pub(crate) fn of_json(text: &'a [u8], record: u32) -> Key<'a> {
        match text.first() {
            // Among strings, only `""` and those holding a lone surrogate are kept as
            // JSON text.
            Some(b'"') if text == b"\"\"" => Key::Str(&[]),
            Some(b'{' | b'[') => Key::Unique(record),
            _ => Key::Json(text),
        }
    }

    /// Whether JavaScript reads the key as true (`if (x)`).
    pub(crate) fn truthy(self) -> bool {
        match self {
            Key::Undefined => false,
            Key::Str(s) => !s.is_empty(),
            Key::Json(t) => !matches!(t, b"null" | b"false" | b"0"),
            Key::Unique(_) => true,
        }
    }
}

/// What the header record says, kept as raw JSON values: `None` where the key is
/// absent (JavaScript's `undefined`), `Some(Null)` where it is `null` — the two differ
/// to the reference (`new Date(null)` is 1970, a `null` parentSession is listed).
/// (The sidecar stores it through its own wire type, `sidecar::wire`.)
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct HeaderInfo {
    pub(crate) id: Option<serde_json::Value>,
    pub(crate) cwd: Option<serde_json::Value>,
    pub(crate) parent_session: Option<serde_json::Value>,
    pub(crate) timestamp: Option<serde_json::Value>,
    pub(crate) version: Option<serde_json::Value>,
}

/// A JSON value that is present, `null` included (serde reads `null` as `None` for an
/// `Option` otherwise); absence is the field's default.
pub(crate) fn present<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// A current label.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LabelState {
    /// The label string, or the label's JSON text when `json` is set.
    pub(crate) label: String,
    pub(crate) entry: u32,
    /// The label is a truthy non-string JSON value (`42`, `{…}`), kept as JSON text.
    pub(crate) json: bool,
}

/// Everything the replay accumulates besides the per-frame records. (An internal
/// type: the sidecar stores it through its own wire type, `sidecar::wire`.)
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Aggregates {
    pub(crate) header: Option<HeaderInfo>,
    pub(crate) header_entry: Option<u32>,
    /// The current labels and usage attributions (a loaded sidecar's are read when
    /// first used: they grow with the session).
    pub(crate) maps: LazyMaps,
    pub(crate) name: Option<String>,
    pub(crate) name_entry: Option<u32>,
    pub(crate) state: Option<String>,
    pub(crate) state_entry: Option<u32>,
    /// The latest `agent_status` entry's `status` value.
    pub(crate) agent_status: Option<serde_json::Value>,
    pub(crate) message_count: u64,
    pub(crate) last_activity: Option<f64>,
    /// An excerpt: at most [`FIRST_MESSAGE_MAX_BYTES`] of the text.
    pub(crate) first_message: Option<String>,
    /// Whether the first message is longer than its excerpt.
    pub(crate) first_message_truncated: bool,
    pub(crate) reference_would_drop: Option<String>,
    pub(crate) entries: u64,
    pub(crate) unparsable: u64,
    pub(crate) no_id: u64,
    pub(crate) duplicate_ids: u64,
    pub(crate) label_entries: u64,
    pub(crate) other_kinds: u64,
    /// The last entry frame (the leaf the reference resumes at).
    pub(crate) leaf: Option<u32>,
}

/// Target id → latest label, in the reference's map insertion order. Hashed with
/// foldhash seeded per map, as the id map is (a tree looks up every entry's label;
/// see `ids.rs` for why that seeding suffices for ids read from files).
pub(crate) type Labels = IndexMap<String, LabelState, foldhash::fast::RandomState>;

/// The aggregates that grow with the session: labels and usage attributions.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LabelMaps {
    /// target id → latest label, in the reference's map insertion order.
    pub(crate) labels: Labels,
    /// The same for targets that are not strings: canonical JSON text of a number,
    /// boolean or `null`, or `undefined` for a label entry without `targetId`.
    pub(crate) labels_other: Labels,
    /// target id → latest `child_usage_attributed` entry index.
    pub(crate) usage_latest: IndexMap<String, u32>,
}

/// [`LabelMaps`], in memory or in a loaded sidecar's labels section (read and
/// checked on first use).
#[derive(Debug, Clone, Default)]
pub(crate) struct LazyMaps {
    cell: std::sync::OnceLock<LabelMaps>,
    base: Option<std::sync::Arc<crate::sidecar::Base>>,
}

impl LazyMaps {
    /// The labels section of `base`.
    pub(crate) fn paged(base: std::sync::Arc<crate::sidecar::Base>) -> Self {
        Self {
            cell: std::sync::OnceLock::new(),
            base: Some(base),
        }
    }

    pub(crate) fn get(&self) -> &LabelMaps {
        self.cell.get_or_init(|| {
            self.base
                .as_ref()
                .map(|b| b.label_maps())
                .unwrap_or_default()
        })
    }

    pub(crate) fn get_mut(&mut self) -> &mut LabelMaps {
        self.get();
        self.cell.get_mut().expect("initialized just above")
    }
}

impl PartialEq for LazyMaps {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// What the replay does with an entry of each type, beyond its tree record.
#[derive(Debug, Clone, Copy)]
enum Observe {
    /// Counts it and feeds the listing summary.
    Message,
    /// Sets or clears its target's label.
    Label,
    /// Sets the session name.
    Name,
    /// Sets the lifecycle state.
    State,
    /// Sets the agent status.
    Status,
    /// Remembers the latest attribution to its target.
    UsageTarget,
    /// Nothing (unknown types too).
    Nothing,
}

/// The index's reading of every entry type. A new entry type does not compile until
/// it is given one here.
const OBSERVE: EntryTypeMap<Observe> = EntryTypeMap {
    message: Observe::Message,
    thinking_level_change: Observe::Nothing,
    model_change: Observe::Nothing,
    service_tier_change: Observe::Nothing,
    compaction: Observe::Nothing,
    branch_summary: Observe::Nothing,
    custom: Observe::Nothing,
    child_usage_attributed: Observe::UsageTarget,
    custom_message: Observe::Nothing,
    label: Observe::Label,
    session_info: Observe::Name,
    session_state: Observe::State,
    agent_status: Observe::Status,
    git_state: Observe::Nothing,
};

/// The in-memory index state.
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    pub(crate) recs: Recs,
    pub(crate) pool: Pool,
    pub(crate) types: Vec<Box<str>>,
    pub(crate) roles: Vec<Box<str>>,
    pub(crate) type_codes: HashMap<Box<str>, u16>,
    pub(crate) role_codes: HashMap<Box<str>, u16>,
    /// id → record index (the last entry with that id), keyed by the pool's strings:
    /// a loaded index searches the sidecar's sorted table and maps only what was
    /// appended since, so a resume builds no map at all.
    pub(crate) ids: Ids,
    /// Whether every record's `parent_pos` is the reference's resolution. A later
    /// duplicate id, or an id that an earlier entry already named as a missing parent,
    /// makes them stale; lookups then go through the id map until the next load.
    pub(crate) parents_exact: bool,
    /// Parent ids not found when their child was indexed (orphans, so far).
    /// (whether JSON text, key bytes).
    pub(crate) unresolved_parents: std::collections::HashSet<(bool, Box<[u8]>)>,
    pub(crate) agg: Aggregates,
    /// The path marks (settings changes, model source and the path's top) of the
    /// records indexed since the load (of every record, without a sidecar), for
    /// walks that stop where the context does; exact while `parents_exact` holds.
    /// Computed from the records on first use (an O(n) pass that costs about what a
    /// walk of as many entries does), then kept in step by every record indexed. A
    /// loaded sidecar's records carry their own.
    pub(crate) marks: std::sync::OnceLock<Marks>,
    /// The loaded sidecar whose pages hold the prefix of the records, the pool and
    /// the id table (`None`: everything is in memory).
    pub(crate) base: Option<std::sync::Arc<crate::sidecar::Base>>,
    /// End of the last observed frame (journal bytes covered).
    pub(crate) covered_len: u64,
    pub(crate) covered_seq: u64,
    pub(crate) last_frame: Option<(u64, [u8; 8])>,
}

/// Up to this many codes, [`intern`] finds a string by comparing, not hashing.
const SCAN_CODES: usize = 16;

fn intern(table: &mut Vec<Box<str>>, codes: &mut HashMap<Box<str>, u16>, s: &str) -> u16 {
    if table.is_empty() {
        table.push("".into());
    }
    // A session uses a handful of types and roles, and every entry (every append)
    // interns one or two: comparing a few short strings beats hashing one. Code 0
    // is the empty placeholder, not an interned string.
    if table.len() <= SCAN_CODES {
        if let Some(i) = table.iter().skip(1).position(|t| **t == *s) {
            return (i + 1) as u16;
        }
    } else if let Some(c) = codes.get(s) {
        return *c;
    }
    if table.len() >= usize::from(u16::MAX) {
        return u16::MAX;
    }
    let code = table.len() as u16;
    table.push(s.into());
    codes.insert(s.into(), code);
    code
}

/// The key of entry record `i`'s id in the reference's maps; `None` for records
/// that are not entries.
pub(crate) fn id_key<'p>(recs: &Recs, pool: &'p Pool, i: u32) -> Option<Key<'p>> {
    let r = recs.get(i as usize)?;
    if r.kind != ENTRY_KIND {
        return None;
    }
    if r.flags & REC_UNPARSABLE != 0 {
        return Some(Key::Undefined);
    }
    let Some(b) = pool.get(r.id) else {
        return Some(Key::Undefined);
    };
    Some(if r.flags & REC_ID_JSON != 0 {
        Key::of_json(b, i)
    } else {
        Key::Str(b)
    })
}

impl State {
    /// Ids inserted into id maps so far.
    #[cfg(feature = "testing")]
    pub(crate) fn ids_mapped(&self) -> u64 {
        self.ids.mapped()
    }

    /// The last entry with this id.
    pub(crate) fn find_id(&self, id: &str) -> Option<u32> {
        self.find_key(Key::Str(id.as_bytes()))
    }

    /// The last entry whose id is this key (`byId.get(key)`), for a single lookup
    /// (O(log n) at most, building nothing).
    pub(crate) fn find_key(&self, key: Key<'_>) -> Option<u32> {
        self.ids.find(&self.recs, &self.pool, key)
    }

    /// [`find_id`](Self::find_id) for queries that look up every entry: through a
    /// map of every record, built once.
    pub(crate) fn find_id_bulk(&self, id: &str) -> Option<u32> {
        self.find_key_bulk(Key::Str(id.as_bytes()))
    }

    /// [`find_key`](Self::find_key) for queries that look up every entry.
    pub(crate) fn find_key_bulk(&self, key: Key<'_>) -> Option<u32> {
        self.ids
            .all(&self.recs, &self.pool)
            .find(&self.recs, &self.pool, key)
    }

    /// The last entry whose id is record `i`'s (`nodeMap.get(entry.id)`), for
    /// queries that look up every entry: `None` for records that are not entries.
    pub(crate) fn find_own_bulk(&self, i: u32) -> Option<u32> {
        if self.agg.duplicate_ids == 0 {
            // No id repeats: every entry owns its id but `undefined`, which the last
            // entry without one owns (no map of every record needed).
            return match self.key_of(i)? {
                Key::Undefined => self.find_key(Key::Undefined),
                _ => Some(i),
            };
        }
        self.ids.find_own_bulk(&self.recs, &self.pool, i)
    }

    /// Record `i`'s id as a key (`None` for records that are not entries).
    pub(crate) fn key_of(&self, i: u32) -> Option<Key<'_>> {
        id_key(&self.recs, &self.pool, i)
    }

    /// Record `i`'s `parentId` as a key: `None` for `null` (and for records that are
    /// not entries); `undefined` when absent.
    pub(crate) fn parent_key_of(&self, i: u32) -> Option<Key<'_>> {
        let r = self.recs.get(i as usize)?;
        if r.kind != ENTRY_KIND {
            return None;
        }
        if r.flags & (REC_PARENT_ABSENT | REC_UNPARSABLE) != 0 {
            return Some(Key::Undefined);
        }
        let b = self.pool.get(r.parent)?;
        Some(if r.flags & REC_PARENT_JSON != 0 {
            Key::of_json(b, NO_POS)
        } else {
            Key::Str(b)
        })
    }

    /// The resolved parent of record `i` (the reference's rules).
    pub(crate) fn parent_pos(&self, i: u32) -> Option<u32> {
        if self.parents_exact {
            let p = self.recs.get(i as usize)?.parent_pos;
            return (p != NO_POS).then_some(p);
        }
        self.resolve_parent(i)
    }

    /// Resolves record `i`'s parent through the id map as the reference's context
    /// walk does (`current.parentId ? byId.get(current.parentId) : undefined`), a
    /// self-parent excepted.
    /// Used once `parent_pos` went stale, for every parent a walk or a save asks
    /// for: through the map of every record.
    pub(crate) fn resolve_parent(&self, i: u32) -> Option<u32> {
        let p = self.parent_key_of(i).filter(|k| k.truthy())?;
        if Some(p) == self.key_of(i) {
            return None;
        }
        self.find_key_bulk(p)
    }

    /// Maps the id of record `index` (already pushed) to it; `true` if an earlier
    /// record had that id.
    fn insert_id(&mut self, index: u32) -> bool {
        self.ids.insert(&self.recs, &self.pool, index)
    }

    /// The parents that entries name and no entry has (orphans) by the resolved
    /// parents, sorted: what a sidecar stores, so that after a load an entry
    /// appended with such an id makes their `parent_pos` stale as it does during a
    /// replay. One pass over the records; only orphans are hashed.
    pub(crate) fn orphans(&self) -> Vec<(bool, Box<[u8]>)> {
        let mut out = std::collections::BTreeSet::new();
        for i in 0..self.recs.len() as u32 {
            if self.parent_pos(i).is_some() {
                continue;
            }
            if let Some(p) = self.parent_key_of(i).filter(|k| k.truthy())
                && Some(p) != self.key_of(i)
                && let Some(k) = owned_key(p)
            {
                out.insert(k);
            }
        }
        out.into_iter().collect()
    }

    /// Whether record `i`'s type is a setting change and a model source (an entry
    /// whose `type` is not a string is neither).
    fn settings_of(&self, i: u32, r: &Rec) -> (Option<crate::marks::Setting>, bool) {
        if r.flags & REC_TYPE_JSON != 0 {
            return (None, false);
        }
        let t = self.type_of(i);
        let model = model_change(t)
            || t == EntryType::Message.as_str() && self.role_of(i) == Some("assistant");
        (setting_of(t), model)
    }

    /// The marks of record `i` given its parent's (`parent`: `None` when it has no
    /// resolved parent).
    fn mark_for(&self, i: u32, r: &Rec, parent: Option<MarkInfo>) -> MarkInfo {
        let entry = r.kind == ENTRY_KIND && r.flags & REC_UNPARSABLE == 0;
        if !entry {
            return MarkInfo::NONE;
        }
        let (setting, model) = self.settings_of(i, r);
        MarkInfo::of_record(i, true, parent, setting, model)
    }

    /// Every record's path marks by the resolved parents (exact or not): what a
    /// sidecar stores. One pass, O(n).
    pub(crate) fn marks_resolved(&self) -> Vec<MarkInfo> {
        let n = self.recs.len();
        let mut out: Vec<MarkInfo> = Vec::with_capacity(n);
        for i in 0..n as u32 {
            let r = self.recs.at(i);
            // A parent after the entry (a later duplicate id took its id) has no
            // marks yet: nor has the entry then (only a walk tells).
            let parent = self
                .parent_pos(i)
                .map(|p| out.get(p as usize).copied().unwrap_or(MarkInfo::NONE));
            out.push(self.mark_for(i, &r, parent));
        }
        out
    }

    /// The marks of record `p` while computing those from `m.end()` on.
    fn mark_at(&self, m: &Marks, p: u32) -> MarkInfo {
        m.get(p)
            .or_else(|| self.recs.stored_mark(p))
            .unwrap_or(MarkInfo::NONE)
    }

    /// The path marks of the records indexed since the load (all, without a
    /// sidecar), from the records' (exact) parents: one pass.
    fn compute_marks(&self) -> Marks {
        let start = self.recs.base_len();
        let n = self.recs.len();
        let mut marks =
            Marks::with_capacity(start, self.recs.capacity().saturating_sub(start as usize));
        for i in start..n as u32 {
            let r = self.recs.at(i);
            let parent = (r.parent_pos != NO_POS).then(|| self.mark_at(&marks, r.parent_pos));
            let m = self.mark_for(i, &r, parent);
            marks.push(m);
        }
        marks
    }

    /// Marks the record pushed last, if the marks are in use.
    fn mark_last(&mut self) {
        if self.marks.get().is_none() {
            // Not in use: nothing to keep (the append path pays nothing for them).
            return;
        }
        let n = self.recs.len();
        let Some(r) = self.recs.last() else {
            return;
        };
        let i = n as u32 - 1;
        let parent = self
            .marks
            .get()
            .map(|m| (r.parent_pos != NO_POS).then(|| self.mark_at(m, r.parent_pos)))
            .unwrap_or_default();
        let m = self.mark_for(i, &r, parent);
        let Some(marks) = self.marks.get_mut() else {
            return;
        };
        if marks.end() + 1 != n {
            // Out of step (never expected): computed afresh on the next use.
            self.marks = std::sync::OnceLock::new();
            return;
        }
        marks.push(m);
    }

    /// What the path marks of record `i` know, while they are exact (computing those
    /// of the records indexed since the load on first use).
    pub(crate) fn marks_of(&self, i: u32) -> Option<MarkInfo> {
        if !self.parents_exact {
            return None;
        }
        let m = match self.recs.stored_mark(i) {
            Some(m) => m,
            None => {
                let marks = self.marks.get_or_init(|| self.compute_marks());
                if marks.end() != self.recs.len() {
                    return None;
                }
                marks.get(i)?
            }
        };
        (m.top != NO_POS).then_some(m)
    }

    /// Whether path marks cost no pass over the records: stored in a loaded
    /// sidecar's records (those indexed since are few), or computed already.
    pub(crate) fn marks_ready(&self) -> bool {
        self.parents_exact && (self.recs.base_len() > 0 || self.marks.get().is_some())
    }

    /// What a sidecar's pages hold, from this state (built from the journal's
    /// frames the sidecar covers): the records with their resolved parents, their
    /// path marks, the pool and the id table.
    pub(crate) fn into_resident(self) -> crate::sidecar::Resident {
        let n = self.recs.len() as u32;
        let marks = self.marks_resolved();
        let recs = (0..n)
            .map(|i| Rec {
                parent_pos: self.parent_pos(i).unwrap_or(NO_POS),
                ..self.recs.at(i)
            })
            .collect();
        let (hashes, order) = match self.ids.table(&self.recs, &self.pool).cols {
            crate::ids::Cols::Mem { hashes, order } => (hashes, order),
            crate::ids::Cols::Paged(_) => (Vec::new(), Vec::new()),
        };
        let pool = self.pool.pieces().flatten().copied().collect();
        crate::sidecar::Resident {
            labels: self.agg.maps.get().clone(),
            recs,
            marks,
            pool,
            hashes,
            order,
        }
    }

    /// Why the loaded sidecar's prefix was rebuilt from the journal after the open
    /// (a page failed its check), if it was.
    pub(crate) fn sidecar_fault(&self) -> Option<&str> {
        self.base.as_ref().and_then(|b| b.fault())
    }

    /// An empty index of a journal whose first entry frame starts at `data_start`.
    pub(crate) fn new(data_start: Offset) -> Self {
        let mut s = State {
            covered_len: data_start.0,
            parents_exact: true,
            ..State::default()
        };
        s.types.push("".into());
        s.roles.push("".into());
        s
    }

    pub(crate) fn str_at(&self, span: Span) -> Option<&str> {
        if span.is_none() {
            return None;
        }
        std::str::from_utf8(self.pool.get(span)?).ok()
    }

    fn push_str(&mut self, s: &str) -> Span {
        if s.len() >= NO_SPAN as usize {
            return Span::NONE;
        }
        self.pool.push(s.as_bytes())
    }

    pub(crate) fn type_of(&self, i: u32) -> &str {
        self.type_in(&self.recs.at(i))
    }

    /// [`type_of`](Self::type_of) of a record read already.
    pub(crate) fn type_in(&self, r: &Rec) -> &str {
        if r.flags & REC_TYPE_JSON != 0 {
            return "";
        }
        self.types.get(usize::from(r.type_code)).map_or("", |s| s)
    }

    /// The `type` as the reference holds it: `None` when absent.
    pub(crate) fn type_value(&self, i: u32) -> Option<serde_json::Value> {
        let r = self.recs.at(i);
        if r.type_code == 0 {
            return None;
        }
        let t = self.types.get(usize::from(r.type_code))?;
        if r.flags & REC_TYPE_JSON != 0 {
            Some(crate::fields::value_of(t))
        } else {
            Some(serde_json::Value::String(t.to_string()))
        }
    }

    pub(crate) fn role_of(&self, i: u32) -> Option<&str> {
        self.role_in(&self.recs.at(i))
    }

    /// [`role_of`](Self::role_of) of a record read already.
    pub(crate) fn role_in(&self, r: &Rec) -> Option<&str> {
        let c = r.role_code;
        if c == 0 {
            return None;
        }
        self.roles.get(usize::from(c)).map(|s| &**s)
    }

    pub(crate) fn id_of(&self, i: u32) -> Option<&str> {
        self.id_in(&self.recs.at(i))
    }

    /// [`id_of`](Self::id_of) of a record read already.
    pub(crate) fn id_in(&self, r: &Rec) -> Option<&str> {
        if r.flags & REC_ID_JSON != 0 {
            return None;
        }
        self.str_at(r.id)
    }

    /// The `id` as canonical JSON text when it is not a string.
    pub(crate) fn id_json_of(&self, i: u32) -> Option<&str> {
        let r = self.recs.at(i);
        (r.flags & REC_ID_JSON != 0)
            .then(|| self.str_at(r.id))
            .flatten()
    }

    /// The `id` as the reference holds it: `None` when `undefined`.
    pub(crate) fn id_value(&self, i: u32) -> Option<serde_json::Value> {
        let r = self.recs.at(i);
        let s = self.str_at(r.id)?;
        if r.flags & REC_ID_JSON != 0 {
            Some(crate::fields::value_of(s))
        } else {
            Some(serde_json::Value::String(s.to_owned()))
        }
    }

    /// The `parentId` as the reference holds it: `None` when absent.
    pub(crate) fn parent_value(&self, i: u32) -> Option<serde_json::Value> {
        let r = self.recs.at(i);
        if r.flags & (REC_PARENT_ABSENT | REC_UNPARSABLE) != 0 {
            return None;
        }
        let Some(s) = self.str_at(r.parent) else {
            return Some(serde_json::Value::Null);
        };
        if r.flags & REC_PARENT_JSON != 0 {
            Some(crate::fields::value_of(s))
        } else {
            Some(serde_json::Value::String(s.to_owned()))
        }
    }

    pub(crate) fn parent_id_of(&self, i: u32) -> Option<&str> {
        self.parent_id_in(&self.recs.at(i))
    }

    /// [`parent_id_of`](Self::parent_id_of) of a record read already.
    pub(crate) fn parent_id_in(&self, r: &Rec) -> Option<&str> {
        if r.flags & REC_PARENT_JSON != 0 {
            return None;
        }
        self.str_at(r.parent)
    }

    /// The `parentId` as JSON text when it is neither `null` nor a non-empty string.
    pub(crate) fn parent_json_of(&self, i: u32) -> Option<&str> {
        self.parent_json_in(&self.recs.at(i))
    }

    /// [`parent_json_of`](Self::parent_json_of) of a record read already.
    pub(crate) fn parent_json_in(&self, r: &Rec) -> Option<&str> {
        (r.flags & REC_PARENT_JSON != 0)
            .then(|| self.str_at(r.parent))
            .flatten()
    }

    /// Restores the interning maps after a load.
    pub(crate) fn rebuild_lookups(&mut self) {
        self.type_codes = self
            .types
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, s)| (s.clone(), i as u16))
            .collect();
        self.role_codes = self
            .roles
            .iter()
            .enumerate()
            .skip(1)
            .map(|(i, s)| (s.clone(), i as u16))
            .collect();
    }

    /// Starts the record of one verified frame (in append order): the frame is
    /// covered from here on. `None` for frames of kinds that are counted, not recorded.
    fn begin(&mut self, info: &FrameInfo) -> Option<(u32, Rec)> {
        let rec = Rec {
            offset: info.offset.0,
            seq: info.seq.0,
            body_check: info.body_check.0,
            ts: f64::NAN,
            id: Span::NONE,
            parent: Span::NONE,
            payload_len: info.payload_len,
            type_code: 0,
            role_code: 0,
            kind: info.kind.get(),
            flags: 0,
            parent_pos: NO_POS,
        };
        self.covered_len = info.end().0;
        self.covered_seq = info.seq.0;
        self.last_frame = Some((info.offset.0, info.body_check.0));
        if rec.kind != ENTRY_KIND && rec.kind != SESSION_HEADER_KIND {
            // Frames of other kinds (an import's provenance, future kinds) are counted,
            // not recorded: nothing is looked up through them, and an imported
            // journal has one after every entry.
            self.agg.other_kinds += 1;
            return None;
        }
        Some((self.recs.len() as u32, rec))
    }

    /// Adds one verified frame (in append order) to the index, reading its payload.
    pub(crate) fn observe(&mut self, info: &FrameInfo, payload: &[u8]) {
        if info.kind.is_seal() {
            // The journal's seal (a clean close): covered, so that coverage ends
            // where the file does and the seal is the witness, but no record and no
            // count. Its seq repeats the last entry's. A seal with no entry before it
            // (seq 0) is not covered: a sidecar covering no entry ends at the data start.
            if self.covered_seq > 0 {
                self.covered_len = info.end().0;
                self.last_frame = Some((info.offset.0, info.body_check.0));
            }
            return;
        }
        let Some((index, mut rec)) = self.begin(info) else {
            return;
        };
        // Read as the reference reads a line: invalid UTF-8 as U+FFFD (Node's
        // decoding), JavaScript whitespace around the object ignored (`trim()`).
        let decoded = String::from_utf8_lossy(payload);
        let text = Some(session_types::js::trim(&decoded));
        // A key holding a lone surrogate (no Rust string holds it, so no key of the
        // record, its message or a block could be matched with a field) is read with
        // U+FFFD, in keys only: no key the probe reads is such a key, and values keep
        // their text (an id holding one is keyed exactly, D6).
        let keys_read = text.map(session_types::json::replace_lone_surrogates_in_keys);
        let text = keys_read.as_deref();
        let mut probe = text
            .filter(|t| t.starts_with('{'))
            .and_then(|t| serde_json::from_str::<Probe<'_>>(t).ok());
        // A repeated key (JSON.parse keeps the last value) or a number beyond a
        // double's range: probe the object as `JSON.parse` reads it instead.
        let reread;
        if probe.is_none()
            && let Some(t) = text.filter(|t| t.starts_with('{'))
            && let Some(r) = reread_as_javascript(t)
        {
            reread = r;
            probe = serde_json::from_str::<Probe<'_>>(&reread).ok();
        }
        let Some(p) = probe else {
            rec.flags |= REC_UNPARSABLE;
            let entry = rec.kind == ENTRY_KIND;
            if entry {
                self.agg.unparsable += 1;
                self.agg.entries += 1;
                self.agg.no_id += 1;
                self.agg.leaf = Some(index);
                if text.is_some_and(|t| t.trim() == "null") {
                    self.note_drop("an entry is null");
                }
            } else {
                self.agg.other_kinds += 1;
            }
            self.recs.push(rec);
            self.mark_last();
            if entry {
                // A JSON value that is not an object is an entry keyed `undefined`.
                self.insert_id(index);
            }
            return;
        };
        let fields = Fields::from_probe(&p);
        match rec.kind {
            SESSION_HEADER_KIND => {
                if let Some(t) = fields.entry_type.as_deref() {
                    rec.type_code = intern(&mut self.types, &mut self.type_codes, t);
                }
                if self.agg.header.is_none() {
                    // Lone surrogates (which no Rust string holds) read as U+FFFD, as
                    // every typed view reads them (D6).
                    use session_types::json::from_str_lossy;
                    let v = |r: Option<&RawValue>| r.and_then(|r| from_str_lossy(r.get()).ok());
                    // As JSON.parse reads it: a number beyond a double's range
                    // elsewhere in the header does not hide the other fields.
                    let raw: serde_json::Map<String, serde_json::Value> = text
                        .and_then(|t| from_str_lossy(&session_types::js::finite_view(t)).ok())
                        .unwrap_or_default();
                    self.agg.header = Some(HeaderInfo {
                        id: v(p.id),
                        cwd: raw.get("cwd").cloned(),
                        parent_session: raw.get("parentSession").cloned(),
                        // `1e400` is Infinity to the reference (an Invalid Date), not
                        // `null` (1970): read from the probe's raw text, which does
                        // not parse (None, Invalid Date) where it is out of range.
                        timestamp: match p.timestamp {
                            Some(r) if r.get() != "null" => v(Some(r)),
                            _ => raw.get("timestamp").cloned(),
                        },
                        version: raw.get("version").cloned(),
                    });
                    self.agg.header_entry = Some(index);
                }
                self.recs.push(rec);
                self.mark_last();
            }
            // `begin` records only header and entry frames: this is an entry.
            _ => self.observe_fields(index, rec, fields),
        }
    }

    /// Adds one entry frame the caller just appended, whose payload is `entry`
    /// serialized: the fields come from the typed entry, so nothing is parsed (unless
    /// only the text gives them exactly; see [`Fields::from_entry`]).
    /// `payload` gives that text when it must be read.
    /// `timestamp_ms`, when given, is what `Date.parse` reads from the entry's
    /// timestamp (the caller formatted it from those milliseconds).
    pub(crate) fn observe_entry<'p>(
        &mut self,
        info: &FrameInfo,
        entry: EntryRef<'_>,
        timestamp_ms: Option<i64>,
        payload: impl FnOnce() -> Cow<'p, [u8]>,
    ) {
        let fields = match Fields::from_entry(entry) {
            Some(f) if info.kind.get() == ENTRY_KIND => Fields {
                timestamp_ms: timestamp_ms.filter(|_| f.timestamp.is_some()),
                ..f
            },
            _ => return self.observe(info, &payload()),
        };
        let Some((index, rec)) = self.begin(info) else {
            return;
        };
        self.observe_fields(index, rec, fields);
    }

    /// Room in the id map for `records` more records (a hint), so that a bulk build
    /// does not rehash every id as the map doubles.
    pub(crate) fn reserve(&mut self, records: usize) {
        self.ids.reserve(&self.recs, &self.pool, records);
    }

    /// Adds one entry frame the caller just appended, whose payload `scanned` read
    /// ([`Scanned::parse`](crate::Scanned::parse) of the same bytes): the fields come
    /// from the scan's ranges, so the payload is not parsed again (unless the scan
    /// cannot give them: a header frame, ranges that do not fit the payload, a user
    /// message that may be the first message, whose excerpt only a parse keeps).
    pub(crate) fn observe_scanned(
        &mut self,
        info: &FrameInfo,
        payload: &[u8],
        scanned: &crate::Scanned,
    ) {
        if info.kind.get() != ENTRY_KIND {
            return self.observe(info, payload);
        }
        let first_message_open = self.agg.first_message.is_none();
        let Some(fields) = scanned.fields(payload, first_message_open) else {
            return self.observe(info, payload);
        };
        let Some((index, rec)) = self.begin(info) else {
            return;
        };
        self.observe_fields(index, rec, fields);
    }

    /// Records an entry (a JSON object) from its fields: the id map, the parent, the
    /// aggregates its type feeds.
    fn observe_fields(&mut self, index: u32, mut rec: Rec, f: Fields<'_>) {
        self.agg.entries += 1;
        let before = self.agg.leaf.replace(index);
        if let Some(ms) = f.timestamp_ms {
            debug_assert_eq!(f.timestamp.as_deref().and_then(parse_js_date), Some(ms));
            rec.ts = ms as f64;
        } else if let Some(ts) = f.timestamp.as_deref() {
            rec.ts = parse_js_date(ts).map_or(f64::NAN, |ms| ms as f64);
        } else if let Some(ms) = f.timestamp_other {
            rec.ts = ms as f64;
        }
        if let Some(t) = f.entry_type.as_deref() {
            rec.type_code = intern(&mut self.types, &mut self.type_codes, t);
        } else if let Some(t) = f.type_json.as_deref() {
            rec.type_code = intern(&mut self.types, &mut self.type_codes, t);
            rec.flags |= REC_TYPE_JSON;
        }
        match (f.id.as_deref(), f.id_json.as_deref()) {
            (Some(id), _) => rec.id = self.push_str(id),
            (None, Some(json)) => {
                rec.id = self.push_str(json);
                rec.flags |= REC_ID_JSON;
                self.agg.no_id += 1;
            }
            (None, None) => self.agg.no_id += 1,
        }
        if let Some(json) = f.parent_json.as_deref() {
            rec.parent = self.push_str(json);
            rec.flags |= REC_PARENT_JSON;
        } else if let Some(parent) = f.parent_id.as_deref()
            && !parent.is_empty()
        {
            rec.parent = self.push_str(parent);
        } else if f.parent_absent {
            rec.flags |= REC_PARENT_ABSENT;
        }
        // The record must be in place for the map to read its id.
        self.recs.push(rec);
        if self.insert_id(index) {
            self.agg.duplicate_ids += 1;
            // Earlier children of this id now resolve to this entry.
            self.parents_exact = false;
        }
        if !self.unresolved_parents.is_empty()
            && let Some(k) = self.key_of(index).and_then(owned_key)
            && self.unresolved_parents.contains(&k)
        {
            // An earlier entry named this id as its (then missing) parent.
            self.parents_exact = false;
        }
        // The context walk's parent: `parentId ? byId.get(parentId) : undefined`.
        let missing = match self.parent_key_of(index).filter(|k| k.truthy()) {
            // Most entries are appended to the previous one, the last with its id:
            // found without a lookup (which, after a load, reads the id table's pages).
            Some(p) if Some(p) != self.key_of(index) => match before
                .filter(|l| matches!(p, Key::Str(_) | Key::Json(_)) && self.key_of(*l) == Some(p))
                .or_else(|| self.find_key(p))
            {
                Some(pos) => {
                    self.recs.set_parent_pos(index, pos);
                    None
                }
                None => owned_key(p),
            },
            _ => None,
        };
        if let Some(k) = missing {
            self.unresolved_parents.insert(k);
        }
        if let Message::Object(m) = &f.message
            && let Some(role) = m.role.as_deref()
        {
            let code = intern(&mut self.roles, &mut self.role_codes, role);
            self.recs.set_last_role(code);
        }
        self.mark_last();
        let observe = f
            .entry_type
            .as_deref()
            .and_then(EntryType::from_name)
            .map_or(Observe::Nothing, |t| *OBSERVE.get(t));
        match observe {
            Observe::Message => {
                self.observe_message(&f.message, f.timestamp.as_deref(), f.timestamp_ms);
            }
            Observe::Label => {
                self.agg.label_entries += 1;
                let (map, target) = match (f.target_id, f.target_json) {
                    (Some(t), _) => (&mut self.agg.maps.get_mut().labels, t.into_owned()),
                    // An object target is only itself: no entry's id is it.
                    (None, Some(t)) if !t.starts_with(['{', '[']) => {
                        (&mut self.agg.maps.get_mut().labels_other, t)
                    }
                    _ => return,
                };
                {
                    let label = match (f.label, f.label_json) {
                        (Some(l), _) => Some((l.into_owned(), false)),
                        (None, Some(j)) => Some((j, true)),
                        (None, None) => None,
                    };
                    match label {
                        Some((label, json)) => {
                            let st = LabelState {
                                label,
                                entry: index,
                                json,
                            };
                            if let Some(cur) = map.get_mut(&target) {
                                *cur = st;
                            } else {
                                map.insert(target, st);
                            }
                        }
                        None => {
                            map.shift_remove(&target);
                        }
                    }
                }
            }
            Observe::Name => {
                let name = f
                    .name
                    .map(|n| session_types::js::trim(&n).to_owned())
                    .filter(|n| !n.is_empty());
                self.agg.name = name;
                self.agg.name_entry = Some(index);
            }
            Observe::State => {
                self.agg.state = f.state.map(Cow::into_owned);
                self.agg.state_entry = Some(index);
            }
            Observe::Status => {
                self.agg.agent_status = f
                    .status
                    .and_then(|r| serde_json::from_str::<serde_json::Value>(r.get()).ok());
            }
            Observe::UsageTarget => {
                if let Some(target) = f.target_id {
                    self.agg
                        .maps
                        .get_mut()
                        .usage_latest
                        .insert(target.into_owned(), index);
                }
            }
            Observe::Nothing => {}
        }
    }

    fn note_drop(&mut self, why: &str) {
        if self.agg.reference_would_drop.is_none() {
            self.agg.reference_would_drop = Some(why.to_owned());
        }
    }

    /// The listing bookkeeping of one `message` entry (§3.8 of the behaviour spec).
    fn observe_message(
        &mut self,
        message: &Message<'_>,
        entry_ts: Option<&str>,
        entry_ms: Option<i64>,
    ) {
        self.agg.message_count += 1;
        let m = match message {
            Message::Missing => {
                self.note_drop("a message entry has no message object");
                return;
            }
            Message::Unreadable => return,
            Message::Object(m) => m,
        };
        // isMessageWithContent: a string role and a `content` key.
        let Some(role) = m.role.as_deref() else {
            return;
        };
        let Some(content) = &m.content else { return };
        if role != "user" && role != "assistant" {
            return;
        }
        // getLastActivityTime
        if let Some(n) = m.timestamp {
            // `1e400` is Infinity: kept as the largest double, which the sidecar's JSON
            // can hold and which `Math.max`, `> 0` and `new Date` answer alike for.
            let n = n.clamp(f64::MIN, f64::MAX);
            self.agg.last_activity = Some(self.agg.last_activity.unwrap_or(0.0).max(n));
        } else if let Some(t) = entry_ms.or_else(|| entry_ts.and_then(parse_js_date)) {
            self.agg.last_activity = Some(self.agg.last_activity.unwrap_or(0.0).max(t as f64));
        }
        // firstMessage (assistant text is extracted too: a throw there drops the
        // session), kept as a bounded excerpt.
        let want = role == "user" && self.agg.first_message.is_none();
        let limit = if want { FIRST_MESSAGE_MAX_BYTES } else { 0 };
        match content.extract_text(limit) {
            Text::Throws(why) => self.note_drop(why),
            Text::Ok(text) => {
                if want && text.nonempty {
                    self.agg.first_message = Some(text.text);
                    self.agg.first_message_truncated = text.truncated;
                }
            }
        }
    }
}

/// A key as owned (whether JSON text, bytes), for keys a lookup may find later.
fn owned_key(k: Key<'_>) -> Option<(bool, Box<[u8]>)> {
    match k {
        Key::Str(b) => Some((false, Box::from(b))),
        Key::Json(b) => Some((true, Box::from(b))),
        Key::Undefined | Key::Unique(_) => None,
    }
}

/// The object in `text` re-serialized as `JSON.parse` reads it (the last of repeated
/// keys, in the first one's place), or `None` if it is no object. A number beyond a
/// double's range stays one (`1e400`, which the probe reads as `Infinity` as on a
/// line without a repeated key): it stands in as the largest double while serde
/// reads the object, unless the line holds that double itself (then it is `null`).
pub(crate) fn reread_as_javascript(text: &str) -> Option<String> {
    reread_exact(text).or_else(|| {
        // A string value holding a lone surrogate, which no `Value` holds: read with
        // U+FFFD, as every typed view reads it.
        let (clean, found) = session_types::json::replace_lone_surrogates(text);
        if found.is_empty() {
            return None;
        }
        reread_exact(&clean)
    })
}

/// [`reread_as_javascript`] of text without lone surrogates (`None` otherwise). Read
/// as deep as a stored record is read (`session_types::json::value_deep`).
fn reread_exact(text: &str) -> Option<String> {
    let object = |t: &str| match session_types::json::value_deep(t)? {
        serde_json::Value::Object(o) => serde_json::to_string(&o).ok(),
        _ => None,
    };
    let infinite = |x: f64| match x {
        f64::INFINITY => Some("1.7976931348623157e308"),
        f64::NEG_INFINITY => Some("-1.7976931348623157e308"),
        _ => None,
    };
    if !any_number(text, |x| x.abs() == f64::MAX)
        && let std::borrow::Cow::Owned(marked) = session_types::js::map_numbers(text, infinite)
    {
        let out = object(&marked)?;
        let restored = session_types::js::map_numbers(&out, |x| match x {
            f64::MAX => Some("1e400"),
            f64::MIN => Some("-1e400"),
            _ => None,
        });
        return Some(restored.into_owned());
    }
    object(&session_types::js::finite_view(text))
}

/// Whether a number token of JSON `text` (outside strings) satisfies `pred`.
fn any_number(text: &str, pred: impl Fn(f64) -> bool) -> bool {
    let mut found = false;
    let _ = session_types::js::map_numbers(text, |x| {
        found |= pred(x);
        None
    });
    found
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{SCAN_CODES, intern};

    /// Scanning the first codes and hashing the later ones give one code per distinct
    /// string, the same one every time; the empty string gets a code of its own, not
    /// the placeholder 0.
    #[test]
    fn interned_codes_are_one_per_string_across_the_scan_limit() {
        let (mut table, mut codes) = (Vec::new(), HashMap::new());
        let names: Vec<String> = (0..SCAN_CODES * 3).map(|i| format!("t{i}")).collect();
        let first: Vec<u16> = names
            .iter()
            .map(|n| intern(&mut table, &mut codes, n))
            .collect();
        let empty = intern(&mut table, &mut codes, "");
        assert_ne!(empty, 0);
        assert_eq!(intern(&mut table, &mut codes, ""), empty);
        for (n, c) in names.iter().zip(&first) {
            assert_eq!(intern(&mut table, &mut codes, n), *c, "{n}");
            assert_eq!(&*table[usize::from(*c)], n.as_str());
        }
        let mut distinct = first.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), names.len());
    }
}
