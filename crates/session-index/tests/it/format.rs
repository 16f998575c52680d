//! `docs/format.md` §3 reproduces the derived files' constants.

#[test]
fn format_doc_lists_the_constants() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format.md"),
    )
    .expect("docs/format.md");
    let table = session_index::constants_table();
    assert!(
        doc.contains(&table),
        "docs/format.md §3 must contain:\n{table}"
    );
}
