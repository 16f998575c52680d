//! Encoding an index state as a sidecar.

use session_journal::JournalId;

use super::wire::{AggregatesWire, LabelsWire};
use super::{
    Field, HASH_PAGE, HEADER_LEN, MAGIC, NONE, ORDER_PAGE, POOL_CHUNK, REC_LEN, REC_PAGE,
    TRAILER_LEN, VERSION, head, page_check, rec, trailer,
};
use crate::ids::Cols;
use crate::state::{NO_POS, State};

/// Writes `bytes` into the field `f` of `buf` (`bytes` is the field's width: the
/// callers pass the `to_le_bytes` of the field's type).
fn put(buf: &mut [u8], f: Field, bytes: &[u8]) {
    buf[f.range()].copy_from_slice(bytes);
}

/// The parent position written for record `i`: exact even when the in-memory
/// positions went stale (a later duplicate id), so a loaded index can trust them.
fn parent_pos(state: &State, i: u32) -> u32 {
    state.parent_pos(i).unwrap_or(NO_POS)
}

/// Where the pool's chunks start: at the first start of a (non-empty) string at or
/// past [`POOL_CHUNK`] bytes into a chunk (so no string spans two chunks and no
/// chunk is empty), 0 first.
fn chunk_starts(state: &State) -> Vec<u64> {
    let mut starts = vec![0u64];
    let mut max_end = 0u64;
    for r in state.recs.iter() {
        for s in [r.id, r.parent] {
            if s.is_none() {
                continue;
            }
            let from = *starts.last().unwrap_or(&0);
            if s.len > 0 && s.start >= max_end && s.start - from >= POOL_CHUNK as u64 {
                starts.push(s.start);
            }
            max_end = max_end.max(s.start + u64::from(s.len));
        }
    }
    starts
}

/// Encodes `state` (bound to `journal_id`, whose first entry frame starts at
/// `data_start`). O(n) in the records (reading a loaded sidecar's pages), plus
/// sorting the ids indexed since the state was loaded (the id table merges them into
/// the loaded one).
pub(crate) fn encode(state: &State, journal_id: JournalId, data_start: u64) -> Vec<u8> {
    let agg = serde_json::to_vec(&AggregatesWire::from_aggregates(&state.agg)).unwrap_or_default();
    let labels =
        serde_json::to_vec(&LabelsWire::from_maps(state.agg.maps.get())).unwrap_or_default();
    let table = state.ids.table(&state.recs, &state.pool);
    let (hashes, order) = match table.cols {
        Cols::Mem { hashes, order } => (hashes, order),
        Cols::Paged(_) => (Vec::new(), Vec::new()),
    };
    let marks = state.marks_resolved();
    let orphans = state.orphans();
    let n = state.recs.len();
    let ids = hashes.len().min(order.len());
    let pool_len = state.pool.len();
    let mut starts = chunk_starts(state);
    if pool_len == 0 {
        starts.clear();
    }
    let chunks = starts.len();
    let strings = |t: &[Box<str>]| t.iter().map(|s| 4 + s.len()).sum::<usize>();
    let head_len = HEADER_LEN
        + n.div_ceil(REC_PAGE) * 8
        + ids.div_ceil(HASH_PAGE) * 16
        + ids.div_ceil(ORDER_PAGE) * 8
        + chunks * 12
        + 8
        + strings(&state.types)
        + strings(&state.roles)
        + orphans.iter().map(|(_, k)| 5 + k.len()).sum::<usize>()
        + agg.len()
        + TRAILER_LEN;
    let total = head_len + n * REC_LEN + ids * 12 + pool_len as usize + labels.len();
    let mut out = Vec::with_capacity(total);
    out.resize(head_len, 0);
    // The pages.
    let recs_at = out.len();
    for (i, r) in state.recs.iter().enumerate() {
        let mut b = [0u8; REC_LEN];
        let m = marks
            .get(i)
            .copied()
            .unwrap_or(crate::marks::MarkInfo::NONE);
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
        put(&mut b, rec::MARK_THINKING, &m.thinking.to_le_bytes());
        put(
            &mut b,
            rec::MARK_SERVICE_TIER,
            &m.service_tier.to_le_bytes(),
        );
        put(&mut b, rec::MARK_MODEL, &m.model.to_le_bytes());
        put(&mut b, rec::MARK_TOP, &m.top.to_le_bytes());
        out.extend_from_slice(&b);
    }
    let hashes_at = out.len();
    for h in &hashes[..ids] {
        out.extend_from_slice(&h.to_le_bytes());
    }
    let order_at = out.len();
    for i in &order[..ids] {
        out.extend_from_slice(&i.to_le_bytes());
    }
    let pool_at = out.len();
    for piece in state.pool.pieces() {
        out.extend_from_slice(piece);
    }
    let labels_at = out.len();
    out.extend_from_slice(&labels);
    // The head: the header, the checks of the pages, then the rest.
    let mut h = Vec::with_capacity(head_len);
    h.resize(HEADER_LEN, 0);
    let checks = |h: &mut Vec<u8>, at: usize, len: usize, per: usize, fence: bool| {
        for (p, page) in out[at..at + len].chunks(per).enumerate() {
            if fence {
                h.extend_from_slice(&page[..8]);
            }
            let off = (at + p * per) as u64;
            h.extend_from_slice(&page_check(page, off).to_le_bytes());
        }
    };
    checks(&mut h, recs_at, n * REC_LEN, REC_PAGE * REC_LEN, false);
    checks(&mut h, hashes_at, ids * 8, HASH_PAGE * 8, true);
    checks(&mut h, order_at, ids * 4, ORDER_PAGE * 4, false);
    for (k, from) in starts.iter().enumerate() {
        let to = starts.get(k + 1).copied().unwrap_or(pool_len);
        let at = pool_at + *from as usize;
        let chunk = &out[at..pool_at + to as usize];
        h.extend_from_slice(&((to - from) as u32).to_le_bytes());
        h.extend_from_slice(&page_check(chunk, at as u64).to_le_bytes());
    }
    h.extend_from_slice(&page_check(&labels, labels_at as u64).to_le_bytes());
    for table in [&state.types, &state.roles] {
        for s in table.iter() {
            h.extend_from_slice(&(s.len() as u32).to_le_bytes());
            h.extend_from_slice(s.as_bytes());
        }
    }
    for (json, k) in &orphans {
        h.push(u8::from(*json));
        h.extend_from_slice(&(k.len() as u32).to_le_bytes());
        h.extend_from_slice(k);
    }
    h.extend_from_slice(&agg);
    let (last_off, last_check) = state.last_frame.unwrap_or((0, [0; 8]));
    let count = |t: &[Box<str>]| u32::try_from(t.len()).unwrap_or(u32::MAX);
    let hd = &mut h[..HEADER_LEN];
    put(hd, head::MAGIC, &MAGIC);
    put(hd, head::VERSION, &VERSION.to_le_bytes());
    put(hd, head::FLAGS, &0u32.to_le_bytes());
    put(hd, head::JOURNAL_ID, journal_id.as_bytes());
    put(hd, head::COVERED_LEN, &state.covered_len.to_le_bytes());
    put(hd, head::COVERED_SEQ, &state.covered_seq.to_le_bytes());
    put(hd, head::LAST_OFFSET, &last_off.to_le_bytes());
    put(hd, head::LAST_BODY_CHECK, &last_check);
    put(hd, head::DATA_START, &data_start.to_le_bytes());
    put(hd, head::HEAD_LEN, &(head_len as u64).to_le_bytes());
    put(hd, head::REC_COUNT, &(n as u64).to_le_bytes());
    put(hd, head::IDS_COUNT, &(ids as u64).to_le_bytes());
    put(hd, head::POOL_LEN, &pool_len.to_le_bytes());
    put(hd, head::POOL_CHUNKS, &(chunks as u32).to_le_bytes());
    put(
        hd,
        head::IDS_UNDEFINED,
        &table.undefined.unwrap_or(NONE).to_le_bytes(),
    );
    put(hd, head::TYPES_COUNT, &count(&state.types).to_le_bytes());
    put(hd, head::ROLES_COUNT, &count(&state.roles).to_le_bytes());
    put(
        hd,
        head::ORPHAN_COUNT,
        &(orphans.len() as u32).to_le_bytes(),
    );
    put(hd, head::AGG_LEN, &(agg.len() as u32).to_le_bytes());
    put(hd, head::LABELS_LEN, &(labels.len() as u64).to_le_bytes());
    let t = trailer(&h);
    h.extend_from_slice(&t);
    debug_assert_eq!(h.len(), head_len);
    out[..head_len].copy_from_slice(&h);
    out
}
