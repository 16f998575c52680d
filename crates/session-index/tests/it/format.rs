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

/// `docs/format.md` §3 reproduces a catalog record with every field, as the catalog's
/// wire types write it: renaming or adding a field changes the format, and this test
/// fails until the spec (and the catalog version) follow.
#[test]
fn format_doc_shows_the_catalog_record() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/format.md"),
    )
    .expect("docs/format.md");
    let record = session_index::catalog_record_example();
    let block = format!("```json\n{record}\n```");
    assert!(
        doc.contains(&block),
        "docs/format.md §3 must contain:\n{block}"
    );
}
