//! The aggregates section's wire types (sidecar version 8): JSON of these structs,
//! converted from and to the index's internal [`Aggregates`]. Renaming an internal
//! field changes nothing on disk; a change here is a format change (a new
//! [`VERSION`](super::VERSION), `docs/format.md` §3, whose example a test decodes).

use serde::{Deserialize, Serialize};

use crate::state::{Aggregates, HeaderInfo, LabelMaps, LabelState, Labels, LazyMaps};

/// The aggregates section.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AggregatesWire {
    /// The session header record's fields (`null`: no header record).
    header: Option<HeaderWire>,
    /// Its record number.
    header_entry: Option<u32>,
    name: Option<String>,
    name_entry: Option<u32>,
    state: Option<String>,
    state_entry: Option<u32>,
    /// The latest `agent_status` entry's `status` value (absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_status: Option<serde_json::Value>,
    message_count: u64,
    last_activity: Option<f64>,
    first_message: Option<String>,
    first_message_truncated: bool,
    reference_would_drop: Option<String>,
    counts: CountsWire,
    leaf: Option<u32>,
}

/// The labels section: the aggregates that grow with the session, read when first
/// used.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LabelsWire {
    /// Current labels of string targets, in the reference's map order.
    labels: Vec<LabelWire>,
    /// Current labels of other targets (canonical JSON text, or `undefined`).
    labels_other: Vec<LabelWire>,
    /// Target id, record of its latest `child_usage_attributed`: in first-seen order.
    usage_latest: Vec<(String, u32)>,
}

impl LabelsWire {
    pub(super) fn from_maps(m: &LabelMaps) -> Self {
        let LabelMaps {
            labels,
            labels_other,
            usage_latest,
        } = m;
        Self {
            labels: labels_to_wire(labels),
            labels_other: labels_to_wire(labels_other),
            usage_latest: usage_latest.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        }
    }

    /// The record numbers the section names (each must be a record of the sidecar).
    pub(super) fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        self.labels
            .iter()
            .map(|l| l.entry)
            .chain(self.labels_other.iter().map(|l| l.entry))
            .chain(self.usage_latest.iter().map(|(_, e)| *e))
    }

    pub(super) fn into_maps(self) -> LabelMaps {
        LabelMaps {
            labels: labels_from_wire(self.labels),
            labels_other: labels_from_wire(self.labels_other),
            usage_latest: self.usage_latest.into_iter().collect(),
        }
    }
}

/// The header record's fields: a key is absent when the record has none, `null` when
/// it holds `null`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderWire {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    id: Option<serde_json::Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    cwd: Option<serde_json::Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    parent_session: Option<serde_json::Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    timestamp: Option<serde_json::Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    version: Option<serde_json::Value>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    crate::state::present(d)
}

/// One current label.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelWire {
    target: String,
    /// The label, or its JSON text when `json`.
    label: String,
    entry: u32,
    json: bool,
}

/// The entry counts.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CountsWire {
    entries: u64,
    unparsable: u64,
    no_id: u64,
    duplicate_ids: u64,
    label_entries: u64,
    other_kinds: u64,
}

fn labels_to_wire(map: &Labels) -> Vec<LabelWire> {
    map.iter()
        .map(|(target, l)| LabelWire {
            target: target.clone(),
            label: l.label.clone(),
            entry: l.entry,
            json: l.json,
        })
        .collect()
}

fn labels_from_wire(list: Vec<LabelWire>) -> Labels {
    list.into_iter()
        .map(|l| {
            let state = LabelState {
                label: l.label,
                entry: l.entry,
                json: l.json,
            };
            (l.target, state)
        })
        .collect()
}

impl AggregatesWire {
    /// The wire form of `a` (every internal field named: adding one does not compile
    /// until it is given a place here).
    pub(super) fn from_aggregates(a: &Aggregates) -> Self {
        let Aggregates {
            header,
            header_entry,
            maps: _,
            name,
            name_entry,
            state,
            state_entry,
            agent_status,
            message_count,
            last_activity,
            first_message,
            first_message_truncated,
            reference_would_drop,
            entries,
            unparsable,
            no_id,
            duplicate_ids,
            label_entries,
            other_kinds,
            leaf,
        } = a;
        Self {
            header: header.as_ref().map(|h| {
                let HeaderInfo {
                    id,
                    cwd,
                    parent_session,
                    timestamp,
                    version,
                } = h.clone();
                HeaderWire {
                    id,
                    cwd,
                    parent_session,
                    timestamp,
                    version,
                }
            }),
            header_entry: *header_entry,
            name: name.clone(),
            name_entry: *name_entry,
            state: state.clone(),
            state_entry: *state_entry,
            agent_status: agent_status.clone(),
            message_count: *message_count,
            last_activity: *last_activity,
            first_message: first_message.clone(),
            first_message_truncated: *first_message_truncated,
            reference_would_drop: reference_would_drop.clone(),
            counts: CountsWire {
                entries: *entries,
                unparsable: *unparsable,
                no_id: *no_id,
                duplicate_ids: *duplicate_ids,
                label_entries: *label_entries,
                other_kinds: *other_kinds,
            },
            leaf: *leaf,
        }
    }

    /// The record numbers the aggregates name (each must be a record of the sidecar).
    pub(super) fn positions(&self) -> impl Iterator<Item = u32> + '_ {
        [
            self.header_entry,
            self.name_entry,
            self.state_entry,
            self.leaf,
        ]
        .into_iter()
        .flatten()
    }

    pub(super) fn into_aggregates(self) -> Aggregates {
        Aggregates {
            header: self.header.map(|h| HeaderInfo {
                id: h.id,
                cwd: h.cwd,
                parent_session: h.parent_session,
                timestamp: h.timestamp,
                version: h.version,
            }),
            header_entry: self.header_entry,
            maps: LazyMaps::default(),
            name: self.name,
            name_entry: self.name_entry,
            state: self.state,
            state_entry: self.state_entry,
            agent_status: self.agent_status,
            message_count: self.message_count,
            last_activity: self.last_activity,
            first_message: self.first_message,
            first_message_truncated: self.first_message_truncated,
            reference_would_drop: self.reference_would_drop,
            entries: self.counts.entries,
            unparsable: self.counts.unparsable,
            no_id: self.counts.no_id,
            duplicate_ids: self.counts.duplicate_ids,
            label_entries: self.counts.label_entries,
            other_kinds: self.counts.other_kinds,
            leaf: self.leaf,
        }
    }
}
