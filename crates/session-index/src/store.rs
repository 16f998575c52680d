//! Where an index state's records and id pool live: in memory, or — after a load —
//! in the sidecar's pages for the covered prefix ([`Base`], read and checked page by
//! page on first use) and in memory for what was indexed since.

use std::sync::Arc;

use crate::marks::MarkInfo;
use crate::sidecar::Base;
use crate::state::{NO_POS, Rec, Span};

/// What a record reads as when its page could not be had at all (neither from the
/// sidecar nor from a rebuild of the journal): a frame of no kind this crate
/// records, so no query takes it for an entry.
pub(crate) const PLACEHOLDER: Rec = Rec {
    offset: 0,
    seq: 0,
    body_check: [0; 8],
    ts: f64::NAN,
    id: Span::NONE,
    parent: Span::NONE,
    payload_len: 0,
    type_code: 0,
    role_code: 0,
    kind: 0,
    flags: 0,
    parent_pos: NO_POS,
};

/// The records, in append order: the sidecar's prefix (if loaded from one), then the
/// records indexed since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Recs {
    base: Option<Arc<Base>>,
    base_len: u32,
    tail: Vec<Rec>,
}

impl Recs {
    /// Records `0..base.rec_count()` in `base`, with room for `spare` more.
    pub(crate) fn paged(base: Arc<Base>, spare: usize) -> Self {
        Self {
            base_len: base.rec_count(),
            base: Some(base),
            tail: Vec::with_capacity(spare),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.base_len as usize + self.tail.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many records come from the sidecar.
    pub(crate) fn base_len(&self) -> u32 {
        self.base_len
    }

    /// Room without reallocating (the sidecar's prefix is not held in a vector).
    pub(crate) fn capacity(&self) -> usize {
        self.base_len as usize + self.tail.capacity()
    }

    /// Has the sidecar's prefix read whole (records, marks and pool, once), for a
    /// query that reads every record anyway; a resume never asks for it.
    pub(crate) fn read_whole(&self) {
        if let Some(b) = &self.base {
            b.load_whole();
        }
    }

    /// Record `i`.
    pub(crate) fn get(&self, i: usize) -> Option<Rec> {
        match i.checked_sub(self.base_len as usize) {
            Some(t) => self.tail.get(t).copied(),
            None => {
                let b = self.base.as_ref()?;
                // Held as one slice (read whole for a query that reads every
                // record, or rebuilt): an index; otherwise through its page.
                Some(match b.recs_slice() {
                    Some(all) => all.get(i).copied().unwrap_or(PLACEHOLDER),
                    None => b.rec(i as u32).map_or(PLACEHOLDER, |(r, _)| r),
                })
            }
        }
    }

    /// Record `i`, or [`PLACEHOLDER`] past the end.
    pub(crate) fn at(&self, i: u32) -> Rec {
        self.get(i as usize).unwrap_or(PLACEHOLDER)
    }

    /// The path marks the sidecar stored for record `i` of its prefix (`None` for
    /// records indexed since).
    pub(crate) fn stored_mark(&self, i: u32) -> Option<MarkInfo> {
        if i >= self.base_len {
            return None;
        }
        Some(
            self.base
                .as_ref()
                .and_then(|b| b.rec(i))
                .map_or(MarkInfo::NONE, |(_, m)| m),
        )
    }

    pub(crate) fn last(&self) -> Option<Rec> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    pub(crate) fn push(&mut self, r: Rec) {
        self.tail.push(r);
    }

    /// Sets the resolved parent of record `i`, one indexed since the load.
    pub(crate) fn set_parent_pos(&mut self, i: u32, pos: u32) {
        if let Some(t) = (i as usize).checked_sub(self.base_len as usize)
            && let Some(r) = self.tail.get_mut(t)
        {
            r.parent_pos = pos;
        }
    }

    /// Sets the role code of the last record, one indexed since the load.
    pub(crate) fn set_last_role(&mut self, code: u16) {
        if let Some(r) = self.tail.last_mut() {
            r.role_code = code;
        }
    }

    /// Every record, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Rec> + '_ {
        (0..self.len()).map(|i| self.get(i).unwrap_or(PLACEHOLDER))
    }
}

/// The id pool: the sidecar's (if loaded from one), then the strings added since.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool {
    base: Option<Arc<Base>>,
    base_len: u64,
    tail: Vec<u8>,
}

impl Pool {
    /// The pool of `base`, with room for `spare` more bytes.
    pub(crate) fn paged(base: Arc<Base>, spare: usize) -> Self {
        Self {
            base_len: base.pool_len(),
            base: Some(base),
            tail: Vec::with_capacity(spare),
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.base_len + self.tail.len() as u64
    }

    #[cfg(feature = "testing")]
    pub(crate) fn capacity(&self) -> usize {
        self.base_len as usize + self.tail.capacity()
    }

    /// The bytes of `span` (`None`: no string, or outside the pool).
    pub(crate) fn get(&self, span: Span) -> Option<&[u8]> {
        if span.is_none() {
            return None;
        }
        match span.start.checked_sub(self.base_len) {
            Some(t) => {
                let t = usize::try_from(t).ok()?;
                self.tail.get(t..t.checked_add(span.len as usize)?)
            }
            None => {
                let end = span.start + u64::from(span.len);
                if end > self.base_len {
                    return None;
                }
                let b = self.base.as_ref()?;
                match b.pool_slice() {
                    Some(all) => all.get(span.start as usize..end as usize),
                    None => b.pool(span.start, span.len),
                }
            }
        }
    }

    /// Appends `s`; its span.
    pub(crate) fn push(&mut self, s: &[u8]) -> Span {
        let start = self.len();
        self.tail.extend_from_slice(s);
        Span {
            start,
            len: s.len() as u32,
        }
    }

    /// The whole pool's bytes, in order, as pieces.
    pub(crate) fn pieces(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.base
            .iter()
            .flat_map(|b| b.pool_pieces())
            .chain(std::iter::once(&self.tail[..]))
    }
}
