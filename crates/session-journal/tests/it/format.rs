//! `docs/format.md` and the code describe the same bytes.

use session_journal::format::{self, constants_table};

fn spec() -> String {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/format.md");
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn docs_carry_the_constants_table_verbatim() {
    let doc = spec();
    let block = format!("```text\n{}```", constants_table());
    assert!(
        doc.contains(&block),
        "docs/format.md must contain this block verbatim:\n{block}"
    );
}

#[test]
fn signature_cannot_be_mistaken_for_json_text() {
    let first = format::SIGNATURE[0];
    assert!(first != b'{' && !first.is_ascii_whitespace() && !first.is_ascii());
    assert!(!format::FRAME_MAGIC.contains(&0) || format::FRAME_MAGIC[0] != 0);
    assert_eq!(format::KIND_INVALID, 0);
}

#[test]
fn frame_lengths_are_aligned() {
    for n in [1u64, 7, 8, 9, 100, 5 * 1024, 2 << 20] {
        let l = format::frame_len(n);
        assert_eq!(l % format::FRAME_ALIGN, 0);
        assert!(l >= 64 + n && l < 64 + n + 8);
    }
}
