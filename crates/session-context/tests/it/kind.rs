//! `ContextKind` from an envelope and from the typed entry agree.

use session_context::ContextKind;
use session_types::{Envelope, Record};

use crate::{load_jsonl, repo_root};

#[test]
fn envelope_and_typed_kinds_agree_on_the_corpus_and_1k() {
    let mut files = vec![repo_root().join("tests/fixtures/generated/1k.jsonl")];
    for dir in ["legacy", "edge"] {
        for e in std::fs::read_dir(repo_root().join("tests/fixtures").join(dir)).expect("dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "jsonl") {
                files.push(p);
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("file");
        for r in load_jsonl(&text) {
            let env = Envelope::parse(&r).expect("envelope");
            let Ok(Record::Entry(entry)) = Record::parse(&r) else {
                panic!("{}: does not decode: {r}", f.display());
            };
            assert_eq!(
                ContextKind::of_envelope(&env),
                ContextKind::of(&entry),
                "{r}"
            );
            seen.insert(ContextKind::of(&entry).to_string());
        }
    }
    assert!(seen.len() >= 8, "{seen:?}");
}

#[test]
fn every_known_type_has_a_kind() {
    for t in session_types::EntryType::ALL {
        assert_ne!(
            ContextKind::of_type(Some(t.as_str()), Some("user")),
            ContextKind::Unknown,
            "{t}"
        );
    }
    assert_eq!(
        ContextKind::of_type(Some("future"), None),
        ContextKind::Unknown
    );
}
