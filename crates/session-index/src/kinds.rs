//! The frame kinds and tags a session journal uses for its records.
//!
//! A session journal carries, as frame payloads, the JSON text of its records verbatim:
//! first the session header record (`{"type":"session",...}`) in a frame of kind
//! [`SESSION_HEADER`], then one frame of kind [`ENTRY`] per entry in append order.
//! Both kinds lie in the journal's caller range (`0x10..=0xff`).

use session_journal::{FrameKind, Tag};

/// Kind byte of the frame holding the session header record (`0x10`).
pub const SESSION_HEADER_KIND: u8 = 0x10;
/// Kind byte of the frames holding entries (`0x11`).
pub const ENTRY_KIND: u8 = 0x11;

/// The frame kind of the session header record.
pub const SESSION_HEADER: FrameKind = match FrameKind::new(SESSION_HEADER_KIND) {
    Some(k) => k,
    None => panic!("0x10 is in the caller range"),
};

/// The frame kind of an entry record.
pub const ENTRY: FrameKind = match FrameKind::new(ENTRY_KIND) {
    Some(k) => k,
    None => panic!("0x11 is in the caller range"),
};

/// The tag writers put on an entry frame: the first 16 bytes of BLAKE3 of the entry id
/// (all zeros for the header record and for entries without an id). The index does not
/// rely on it (it reads the id from the payload); it lets tools find an entry's frame
/// without parsing JSON.
pub fn id_tag(id: &str) -> Tag {
    let h = blake3::hash(id.as_bytes());
    let mut t = [0u8; 16];
    t.copy_from_slice(&h.as_bytes()[..16]);
    Tag(t)
}
