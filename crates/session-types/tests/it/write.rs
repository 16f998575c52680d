//! `Entry::write_json` / `to_json` write exactly serde_json's bytes for every corpus
//! entry (the hand-written shapes of `src/write.rs` and the serde path alike), and so
//! does a message entry in parts (`EntryRef::Message`).

use session_types::{Entry, EntryRef, Record};

use crate::corpus_files;

#[test]
fn every_corpus_entry_is_written_as_serde_json_writes_it() {
    let mut entries = 0;
    let mut messages = 0;
    let mut split_messages = 0;
    for (file, lines) in corpus_files() {
        for (i, line) in lines.iter().enumerate() {
            // Both readings: the lenient one keeps odd shapes whole as `Unknown`.
            let read = [
                Record::parse(line.trim_end_matches('\r')).ok(),
                Entry::read(line.trim_end_matches('\r'))
                    .ok()
                    .map(Record::Entry),
            ];
            for record in read.into_iter().flatten() {
                let Record::Entry(entry) = record else {
                    continue;
                };
                let theirs = serde_json::to_vec(&entry).expect("serde_json writes every entry");
                let mut ours = Vec::new();
                entry.write_json(&mut ours).expect("a vector takes it");
                assert_eq!(
                    String::from_utf8_lossy(&ours),
                    String::from_utf8_lossy(&theirs),
                    "{file}:{}",
                    i + 1
                );
                assert_eq!(entry.to_json().as_bytes(), theirs.as_slice());
                // A message entry in parts (the message borrowed from its appender)
                // writes the same bytes, unmodelled fields aside.
                if let Entry::Message(m) = &entry
                    && m.extra.is_empty()
                {
                    let split = EntryRef::Message {
                        base: &m.base,
                        message: &m.message,
                    };
                    assert_eq!(split.to_json().as_bytes(), theirs.as_slice(), "{file}");
                    split_messages += 1;
                }
                entries += 1;
                messages += usize::from(matches!(entry, Entry::Message(_)));
            }
        }
    }
    // The corpus holds hundreds of entries; most are messages.
    assert!(
        entries > 200 && messages > 100 && split_messages > 100,
        "{entries} entries, {messages} messages, {split_messages} in parts"
    );
}
