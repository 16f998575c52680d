//! `docs/format.md` §4 reproduces the constants table.

use super::support::fixtures;

#[test]
fn format_doc_lists_the_constants() {
    let doc = std::fs::read_to_string(fixtures().join("../../docs/format.md")).unwrap();
    let table = session_import::format::constants_table();
    assert!(
        doc.contains(&table),
        "docs/format.md §4 must contain:\n{table}"
    );
}
