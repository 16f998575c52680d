//! The reference's v1 → v2 → v3 migration (`legacy-pi-behaviour.md` §1.7), one line
//! at a time, with deterministic v1 ids.
//!
//! Key order follows JavaScript property semantics: assigning an existing key keeps
//! its position, a new key is appended, `delete` removes it (shift, not swap). Numbers
//! are printed as JavaScript prints them ([`session_types::json::js_normalized`]).

use std::collections::HashSet;

use serde_json::{Map, Value};
use session_types::EntryType;

use crate::outcome::IssueKind;

/// What one parsed record of a v1 file is, for `firstKeptEntryIndex` lookups.
#[derive(Debug, Clone)]
pub(crate) enum Slot {
    /// A `session` record (the header at index 0, or a later one).
    Session,
    /// An entry and the id migration gave it.
    Entry(String),
    /// A JSON value this import does not take (the reference would count it).
    Other,
}

/// Migration state of a v1 file.
pub(crate) struct V1State {
    source_hash: [u8; 32],
    assigned: HashSet<String>,
    /// One slot per JSON line of the file, header = index 0.
    pub(crate) slots: Vec<Slot>,
    prev: Option<String>,
}

impl V1State {
    pub(crate) fn new(source_hash: [u8; 32]) -> Self {
        Self {
            source_hash,
            assigned: HashSet::new(),
            slots: vec![Slot::Session],
            prev: None,
        }
    }

    /// The id of the entry on `line`: the first 8 hex digits of
    /// `blake3("session-import v1 id" ‖ source blake3 ‖ line (u64 LE) ‖ attempt (u32 LE))`,
    /// with `attempt` counting up from 0 until the id is unused in this file.
    pub(crate) fn derive_id(&mut self, line: u64) -> String {
        let mut attempt: u32 = 0;
        loop {
            let mut h = blake3::Hasher::new();
            h.update(b"session-import v1 id");
            h.update(&self.source_hash);
            h.update(&line.to_le_bytes());
            h.update(&attempt.to_le_bytes());
            let hex = h.finalize().to_hex();
            let id = hex[..8].to_owned();
            if self.assigned.insert(id.clone()) {
                return id;
            }
            attempt += 1;
        }
    }
}

/// The logical version of a header's `version` value, and the value's text when it
/// is odd (not absent, `null`, or the number 1, 2 or 3). `line` is the header's text,
/// `map` the record read from it.
///
/// The reference never refuses a version: `migrateToCurrentVersion` reads
/// `header.version ?? 1` and compares it with numbers, so JavaScript converts it
/// (`Number(value)`, [`session_types::js::to_number`]): `>= 3` is left as it is (3;
/// `"3"`, 4, `"0x3"`), `< 2` migrates from v1 (`0`, `true`, `"1"`, `[]`), `< 3` from v2
/// (2.5, `"2"`), and a value that is no number (`"v2"`, `{}`) compares false every way:
/// nothing is migrated, as for 3. A number beyond a double's range reads `null` in
/// `map` but is `±Infinity` to the reference, so its text is read from `line`:
/// `1e400` compares `>= 3`, `-1e400` `< 2`.
pub(crate) fn header_version(map: &Map<String, Value>, line: &[u8]) -> (u32, Option<String>) {
    let read = |x: f64| {
        if x < 2.0 {
            1
        } else if x < 3.0 {
            2
        } else {
            // `>= 3`, or NaN.
            3
        }
    };
    match map.get("version") {
        None => (1, None),
        Some(Value::Null) => {
            let infinite = session_types::js::raw_field(&String::from_utf8_lossy(line), "version")
                .and_then(|raw| {
                    let x = session_types::js::raw_number(&raw).filter(|x| x.is_infinite())?;
                    Some((read(x), raw.get().to_owned()))
                });
            match infinite {
                Some((version, found)) => (version, Some(found)),
                None => (1, None),
            }
        }
        Some(v) => match v.as_u64().filter(|n| (1..=3).contains(n)) {
            // 1..=3 fits.
            Some(n) => (u32::try_from(n).unwrap_or(3), None),
            None => (
                read(session_types::js::to_number(Some(v))),
                Some(v.to_string()),
            ),
        },
    }
}

/// Sets `version` to 3 the way the reference does: v1 appends `version` (2, then 3 in
/// place); v2 assigns in place.
pub(crate) fn migrate_header(map: &mut Map<String, Value>) {
    map.insert("version".to_owned(), Value::from(3u64));
}

/// Renames `message.role` `hookMessage` → `custom` in place; `true` if it did.
pub(crate) fn rename_hook_message(map: &mut Map<String, Value>) -> bool {
    if map.get("type").and_then(Value::as_str) != Some(EntryType::Message.as_str()) {
        return false;
    }
    match map.get_mut("message").and_then(Value::as_object_mut) {
        Some(m) if m.get("role").and_then(Value::as_str) == Some("hookMessage") => {
            // tidy: not an entry type (the message role `custom`)
            m.insert("role".to_owned(), Value::from("custom"));
            true
        }
        _ => false,
    }
}

/// Migrates one v1 entry (not a `session` record): appends `id` and `parentId`, converts
/// `firstKeptEntryIndex`, renames `hookMessage`. Returns the notes for the outcome.
pub(crate) fn migrate_v1_entry(
    map: &mut Map<String, Value>,
    line: u64,
    state: &mut V1State,
) -> Vec<IssueKind> {
    let mut notes = Vec::new();
    let id = state.derive_id(line);
    map.insert("id".to_owned(), Value::from(id.clone()));
    map.insert(
        "parentId".to_owned(),
        state.prev.clone().map_or(Value::Null, Value::from),
    );
    state.prev = Some(id.clone());
    state.slots.push(Slot::Entry(id));
    if map.get("type").and_then(Value::as_str) == Some(EntryType::Compaction.as_str())
        && let Some(Value::Number(n)) = map.get("firstKeptEntryIndex")
    {
        let shown = n.to_string();
        let target = n.as_f64().and_then(|x| {
            (x >= 0.0 && x.fract() == 0.0 && x < state.slots.len() as f64)
                .then(|| &state.slots[x as usize])
        });
        match target {
            Some(Slot::Session) => {
                notes.push(IssueKind::FirstKeptIndexDropped { index: shown });
            }
            Some(Slot::Entry(target_id)) => {
                map.insert(
                    "firstKeptEntryId".to_owned(),
                    Value::from(target_id.clone()),
                );
                notes.push(IssueKind::FirstKeptIndexConverted {
                    index: shown,
                    id: target_id.clone(),
                });
            }
            // A forward or out-of-range index, or a value without an id: JavaScript
            // assigns `undefined`, which JSON.stringify omits.
            Some(Slot::Other) | None => {
                map.shift_remove("firstKeptEntryId");
                notes.push(IssueKind::FirstKeptIndexDropped { index: shown });
            }
        }
        map.shift_remove("firstKeptEntryIndex");
    }
    if rename_hook_message(map) {
        notes.push(IssueKind::HookMessageRenamed);
    }
    notes
}

/// Compact JSON text of a migrated record, numbers as JavaScript prints them.
pub(crate) fn to_js_json(map: Map<String, Value>) -> String {
    let v = session_types::json::js_normalized(&Value::Object(map));
    serde_json::to_string(&v).unwrap_or_default()
}
