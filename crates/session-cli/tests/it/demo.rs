//! `bcs demo`: imports the bundled samples, lists them, prints a tree and a context;
//! idempotent.

use crate::support::Bcs;

#[test]
fn demo_lists_and_prints_a_tree_and_a_context_and_is_idempotent() {
    let b = Bcs::new();
    let first = b.run(&["demo"]);
    let text = b.redact(first.ok());
    for part in [
        "== bcs import",
        "== bcs list --all",
        "== bcs tree ",
        "== bcs context ",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert!(text.contains("refused   edge/empty-file.jsonl"), "{text}");
    insta::assert_snapshot!("demo_first_run", text);
    let second = b.redact(b.run(&["demo"]).ok());
    assert!(
        second.contains("already imported  legacy/v2-hookmessage.jsonl"),
        "{second}"
    );
    assert!(!second.contains("\nimported "), "{second}");
}

/// Issue 16 point 4: the demo's three samples whose headers share one id list as
/// three ids, each of which every command takes, and each exports to what the
/// import of that sample alone exports (the original header id).
#[test]
fn the_demo_samples_sharing_a_header_id_have_one_id_each_everywhere() {
    const SHARED: &str = "c0ffee00-1111-4222-8333-444455556666";
    let b = Bcs::new();
    b.run(&["demo"]).ok();
    let listed = b.run(&["list", "--all", "--json"]).json();
    let rows: Vec<&serde_json::Value> = listed
        .as_array()
        .expect("a list")
        .iter()
        .filter(|r| r["id"].as_str().is_some_and(|id| id.starts_with(SHARED)))
        .collect();
    let mut ids: Vec<&str> = rows.iter().filter_map(|r| r["id"].as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let human = b.run(&["list", "--all"]);
    for row in &rows {
        let id = row["id"].as_str().expect("an id");
        let path = std::path::Path::new(row["path"].as_str().expect("a path"));
        assert_eq!(
            path.file_name().expect("a name"),
            format!("{id}.jsonl").as_str()
        );
        assert!(human.ok().contains(&format!("  {id}  ")), "{id}");
        let show = b.run(&["show", id, "--json"]).json();
        assert_eq!(show["id"], id);
        assert_eq!(show["header"]["id"], id);
        let imported = &show["imported"];
        let original = (id != SHARED).then_some(SHARED);
        assert_eq!(imported["originalId"].as_str(), original, "{id}");
        let source = std::path::PathBuf::from(imported["source"].as_str().expect("a source"));
        let text = b.run(&["show", id]);
        assert!(
            text.ok().contains(&format!("session  {id}\n")),
            "{}",
            text.stdout
        );
        if let Some(o) = original {
            assert!(
                text.ok().contains(&format!("orig id  {o}")),
                "{}",
                text.stdout
            );
        }
        let context = b.run(&["context", id, "--json"]).json();
        assert!(
            context["messages"]
                .as_array()
                .is_some_and(|m| !m.is_empty())
        );
        // Export: what importing that sample alone into a fresh store exports.
        let alone = Bcs::new();
        alone.run(&["import", source.to_str().expect("utf-8")]).ok();
        let exported = b.run(&["export", id]);
        let exported_alone = alone.run(&["export", SHARED]);
        assert_eq!(exported.ok(), exported_alone.ok(), "{id}");
        assert!(exported.ok().contains(&format!("\"id\":\"{SHARED}\"")));
    }
}
