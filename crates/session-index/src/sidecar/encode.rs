//! Encoding an index state as a sidecar.

use session_journal::JournalId;

use super::wire::AggregatesWire;
use super::{Field, HEADER_LEN, ID_LEN, MAGIC, NONE, REC_LEN, VERSION, head, rec, trailer};
use crate::state::{NO_POS, State};

/// Writes `bytes` into the field `f` of `buf` (`bytes` is the field's width: the
/// callers pass the `to_le_bytes` of the field's type).
fn put(buf: &mut [u8], f: Field, bytes: &[u8]) {
    buf[f.range()].copy_from_slice(bytes);
}

/// The parent position written for record `i`: exact even when the in-memory
/// positions went stale (a later duplicate id), so a loaded index can trust them.
fn parent_pos(state: &State, i: u32) -> u32 {
    if state.parents_exact {
        state.recs[i as usize].parent_pos
    } else {
        state.resolve_parent(i).unwrap_or(NO_POS)
    }
}

/// Encodes `state` (bound to `journal_id`, whose first entry frame starts at
/// `data_start`). O(n) in the records, plus sorting the ids indexed since the state
/// was loaded (the id table merges them into the loaded one).
pub(crate) fn encode(state: &State, journal_id: JournalId, data_start: u64) -> Vec<u8> {
    let agg = serde_json::to_vec(&AggregatesWire::from_aggregates(&state.agg)).unwrap_or_default();
    let ids = state.ids.table(&state.recs, &state.pool);
    let mut out = Vec::with_capacity(
        HEADER_LEN + state.recs.len() * (REC_LEN + ID_LEN) + state.pool.len() + agg.len() + 256,
    );
    let mut h = [0u8; HEADER_LEN];
    let (last_off, last_check) = state.last_frame.unwrap_or((0, [0; 8]));
    let types_len = |t: &[Box<str>]| u32::try_from(t.len()).unwrap_or(u32::MAX);
    put(&mut h, head::MAGIC, &MAGIC);
    put(&mut h, head::VERSION, &VERSION.to_le_bytes());
    put(&mut h, head::FLAGS, &0u32.to_le_bytes());
    put(&mut h, head::JOURNAL_ID, journal_id.as_bytes());
    put(&mut h, head::COVERED_LEN, &state.covered_len.to_le_bytes());
    put(&mut h, head::COVERED_SEQ, &state.covered_seq.to_le_bytes());
    put(&mut h, head::LAST_OFFSET, &last_off.to_le_bytes());
    put(&mut h, head::LAST_BODY_CHECK, &last_check);
    put(&mut h, head::DATA_START, &data_start.to_le_bytes());
    put(
        &mut h,
        head::REC_COUNT,
        &(state.recs.len() as u64).to_le_bytes(),
    );
    put(
        &mut h,
        head::POOL_LEN,
        &(state.pool.len() as u64).to_le_bytes(),
    );
    put(
        &mut h,
        head::TYPES_COUNT,
        &types_len(&state.types).to_le_bytes(),
    );
    put(
        &mut h,
        head::ROLES_COUNT,
        &types_len(&state.roles).to_le_bytes(),
    );
    put(&mut h, head::AGG_LEN, &(agg.len() as u64).to_le_bytes());
    put(
        &mut h,
        head::IDS_COUNT,
        &(ids.order.len() as u64).to_le_bytes(),
    );
    put(
        &mut h,
        head::IDS_UNDEFINED,
        &ids.undefined.unwrap_or(NONE).to_le_bytes(),
    );
    put(&mut h, head::RESERVED, &0u32.to_le_bytes());
    out.extend_from_slice(&h);
    for (i, r) in state.recs.iter().enumerate() {
        let mut b = [0u8; REC_LEN];
        put(&mut b, rec::OFFSET, &r.offset.to_le_bytes());
        put(&mut b, rec::SEQ, &r.seq.to_le_bytes());
        put(&mut b, rec::BODY_CHECK, &r.body_check);
        put(&mut b, rec::TIMESTAMP_MS, &r.ts.to_le_bytes());
        put(&mut b, rec::ID_START, &r.id.start.to_le_bytes());
        put(&mut b, rec::ID_LEN, &r.id.len.to_le_bytes());
        put(&mut b, rec::PARENT_START, &r.parent.start.to_le_bytes());
        put(&mut b, rec::PARENT_LEN, &r.parent.len.to_le_bytes());
        put(&mut b, rec::PAYLOAD_LEN, &r.payload_len.to_le_bytes());
        put(&mut b, rec::TYPE_CODE, &r.type_code.to_le_bytes());
        put(&mut b, rec::ROLE_CODE, &r.role_code.to_le_bytes());
        put(&mut b, rec::KIND, &[r.kind]);
        put(&mut b, rec::FLAGS, &[r.flags]);
        put(&mut b, rec::PADDING, &[0, 0]);
        put(
            &mut b,
            rec::PARENT,
            &parent_pos(state, i as u32).to_le_bytes(),
        );
        out.extend_from_slice(&b);
    }
    for h in &ids.hashes {
        out.extend_from_slice(&h.to_le_bytes());
    }
    for i in &ids.order {
        out.extend_from_slice(&i.to_le_bytes());
    }
    out.extend_from_slice(&state.pool);
    for table in [&state.types, &state.roles] {
        for s in table.iter() {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
    }
    out.extend_from_slice(&agg);
    let t = trailer(&out);
    out.extend_from_slice(&t);
    out
}
