//! Every constant of the on-disk format, in one place.
//!
//! `docs/format.md` carries the same table (see [`constants_table`]); a test asserts
//! the two agree, so the spec and the code cannot drift apart.

/// The first 8 bytes of every journal: `\x89JNL\r\n\x1a\n`.
///
/// The high-bit first byte is neither `{` nor whitespace, so a journal can never be
/// mistaken for JSON text (and a legacy JSONL file never for a journal); `\r\n` catches
/// line-ending conversion, `\x1a` stops `type` on DOS.
pub const SIGNATURE: [u8; 8] = [0x89, b'J', b'N', b'L', b'\r', b'\n', 0x1a, b'\n'];

/// Size of the fixed frame header that precedes every payload.
pub const FRAME_HEADER_LEN: usize = 64;

/// The first 4 bytes of every frame header: `\x89JF1`. Never zero, never ASCII.
pub const FRAME_MAGIC: [u8; 4] = [0x89, b'J', b'F', b'1'];

/// Frame encoding version written by this crate; readers refuse newer versions.
pub const FRAME_VERSION: u8 = 1;

/// Journal format version written into the header frame's payload: 2 (the sealed
/// close). Version 1 journals are read as they are ([`OLDEST_FORMAT_VERSION`]).
pub const FORMAT_VERSION: u32 = 2;

/// The oldest journal format version this code reads (and appends to).
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// Frames start at multiples of this; payloads are zero-padded up to it.
pub const FRAME_ALIGN: u64 = 8;

/// Offset of the header frame: right after the signature.
pub const HEADER_FRAME_OFFSET: u64 = SIGNATURE.len() as u64;

/// Kind byte 0: reserved and never valid, so zero-filled bytes never parse as a frame.
pub const KIND_INVALID: u8 = 0;

/// Kind byte of the header frame (seq 0, offset 8).
pub const KIND_HEADER: u8 = 1;

/// Kind byte of the seal frame a clean close writes (format version 2): it attests
/// that every byte before it was synced and names the frame it follows.
pub const KIND_SEAL: u8 = 2;

/// Payload bytes of a seal: entries before it (u64), its own offset (u64), the body
/// check of the frame it follows (8 bytes).
pub const SEAL_PAYLOAD_LEN: u32 = 24;

/// Bytes a seal frame occupies on disk (header and payload; no padding).
pub const SEAL_FRAME_LEN: u64 = frame_len(SEAL_PAYLOAD_LEN as u64);

/// A file that ends with a seal-sized tail differing from the seal expected there in
/// at most this many bits, each in a different byte, holds a damaged seal (bit rot:
/// corruption), not a torn write.
pub const SEAL_DAMAGE_BITS: u32 = 8;

/// Kinds below this are reserved to the journal itself; an unknown one is refused as
/// written by a newer version.
pub const FIRST_ENTRY_KIND: u8 = 0x10;

/// `blake3::derive_key` context for the per-journal frame key.
pub const FRAME_KEY_CONTEXT: &str = "base-context-sessions 2025 journal frame v1";

/// Checksum algorithm id recorded in the header payload.
pub const CHECKSUM_ALGORITHM: &str = "blake3-keyed-v1";

/// The format name recorded in the header payload.
pub const FORMAT_NAME: &str = "base-context-sessions/journal";

/// Length of the truncated keyed-BLAKE3 header check.
pub const HEADER_CHECK_LEN: usize = 4;

/// Length of the truncated keyed-BLAKE3 body check.
pub const BODY_CHECK_LEN: usize = 8;

/// Default maximum entry payload (64 MiB), recorded per journal at creation.
pub const DEFAULT_MAX_PAYLOAD: u32 = 64 << 20;

/// Hard cap on any journal's maximum payload (1 GiB).
pub const MAX_PAYLOAD_CAP: u32 = 1 << 30;

/// Maximum payload of the header frame.
pub const MAX_HEADER_PAYLOAD: u32 = 4096;

/// Extra bytes beyond `max_payload` that a torn tail may span before the open refuses
/// to truncate it automatically (unless the region is all zeros).
pub const TAIL_REPAIR_SLACK: u64 = 8 << 20;

// Byte ranges inside the frame header.
pub(crate) const OFF_MAGIC: usize = 0;
pub(crate) const OFF_VERSION: usize = 4;
pub(crate) const OFF_KIND: usize = 5;
pub(crate) const OFF_FLAGS: usize = 6;
pub(crate) const OFF_LEN: usize = 8;
pub(crate) const OFF_HEADER_CHECK: usize = 12;
pub(crate) const OFF_SEQ: usize = 16;
pub(crate) const OFF_SYNCED_TO: usize = 24;
pub(crate) const OFF_TIME: usize = 32;
pub(crate) const OFF_TAG: usize = 40;
pub(crate) const OFF_BODY_CHECK: usize = 56;

/// Rounds a payload length up to the frame alignment.
pub const fn padded(len: u64) -> u64 {
    len.div_ceil(FRAME_ALIGN) * FRAME_ALIGN
}

/// Total bytes a frame with this payload length occupies on disk.
pub const fn frame_len(payload_len: u64) -> u64 {
    FRAME_HEADER_LEN as u64 + padded(payload_len)
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The constants as the `text` block that `docs/format.md` reproduces verbatim.
pub fn constants_table() -> String {
    let rows = [
        ("signature", hex(&SIGNATURE)),
        ("frame_header_len", FRAME_HEADER_LEN.to_string()),
        ("frame_magic", hex(&FRAME_MAGIC)),
        ("frame_version", FRAME_VERSION.to_string()),
        ("format_version", FORMAT_VERSION.to_string()),
        ("oldest_format_version", OLDEST_FORMAT_VERSION.to_string()),
        ("frame_align", FRAME_ALIGN.to_string()),
        ("header_frame_offset", HEADER_FRAME_OFFSET.to_string()),
        ("kind_invalid", format!("0x{KIND_INVALID:02x}")),
        ("kind_header", format!("0x{KIND_HEADER:02x}")),
        ("kind_seal", format!("0x{KIND_SEAL:02x}")),
        ("first_entry_kind", format!("0x{FIRST_ENTRY_KIND:02x}")),
        ("frame_key_context", format!("{FRAME_KEY_CONTEXT:?}")),
        ("checksum_algorithm", format!("{CHECKSUM_ALGORITHM:?}")),
        ("format_name", format!("{FORMAT_NAME:?}")),
        ("header_check_len", HEADER_CHECK_LEN.to_string()),
        ("body_check_len", BODY_CHECK_LEN.to_string()),
        ("default_max_payload", DEFAULT_MAX_PAYLOAD.to_string()),
        ("max_payload_cap", MAX_PAYLOAD_CAP.to_string()),
        ("max_header_payload", MAX_HEADER_PAYLOAD.to_string()),
        ("tail_repair_slack", TAIL_REPAIR_SLACK.to_string()),
        ("seal_payload_len", SEAL_PAYLOAD_LEN.to_string()),
        ("seal_frame_len", SEAL_FRAME_LEN.to_string()),
        ("seal_damage_bits", SEAL_DAMAGE_BITS.to_string()),
        (
            "field_offsets",
            format!(
                "magic={OFF_MAGIC} version={OFF_VERSION} kind={OFF_KIND} flags={OFF_FLAGS} \
                 payload_len={OFF_LEN} header_check={OFF_HEADER_CHECK} seq={OFF_SEQ} \
                 synced_to={OFF_SYNCED_TO} time_ms={OFF_TIME} tag={OFF_TAG} \
                 body_check={OFF_BODY_CHECK}"
            ),
        ),
    ];
    let mut out = String::new();
    for (name, value) in rows {
        out.push_str(&format!("{name:<21} = {value}\n"));
    }
    out
}
