//! A [`ContextSource`] over JSON record texts that decodes entries only when loaded.

use std::borrow::Cow;
use std::collections::HashMap;

use session_types::json::replace_lone_surrogates;
use session_types::{Entry, Envelope, ParseError};

use crate::kind::EntryKind;
use crate::source::{ContextSource, Node, UsageAttribution};

/// Records given as JSON text (one entry each, file order), indexed by reading only
/// their envelopes (`type`, `id`, `parentId`, `message.role`). A record is decoded into
/// an [`Entry`] only when context building loads it, which is what an index over a
/// journal does: building a context then costs what the context holds, not the session.
///
/// Header records (`type: "session"`) are skipped. A record that is not a JSON object
/// is skipped and reported by [`TextSource::skipped`]. A lone UTF-16 surrogate escape,
/// which a Rust string cannot hold, reads as U+FFFD in the typed view.
#[derive(Debug, Clone)]
pub struct TextSource<'a> {
    records: Vec<TextRecord<'a>>,
    by_id: HashMap<Cow<'a, str>, usize>,
    last: Option<usize>,
    attributions: HashMap<String, UsageAttribution>,
    skipped: Vec<(usize, ParseError)>,
}

#[derive(Debug, Clone)]
struct TextRecord<'a> {
    text: &'a str,
    id: Option<Cow<'a, str>>,
    parent: Option<Cow<'a, str>>,
    kind: EntryKind,
}

impl<'a> TextSource<'a> {
    /// Indexes the records (0-based positions are used in [`TextSource::skipped`]).
    pub fn new(records: impl IntoIterator<Item = &'a str>) -> Self {
        let mut src = TextSource {
            records: Vec::new(),
            by_id: HashMap::new(),
            last: None,
            attributions: HashMap::new(),
            skipped: Vec::new(),
        };
        for (pos, text) in records.into_iter().enumerate() {
            let head = match envelope_of(text) {
                Ok(head) => head,
                Err(e) => {
                    src.skipped.push((pos, e));
                    continue;
                }
            };
            let Some((kind, id, parent, attribution)) = head else {
                continue;
            };
            if attribution {
                let (clean, _) = replace_lone_surrogates(text);
                if let Ok(Entry::ChildUsageAttributed(c)) = Entry::parse(&clean) {
                    src.attributions
                        .entry(c.target_id.0.clone())
                        .and_modify(|a| a.record(&c.child_usage, &c.aggregate_usage))
                        .or_insert_with(|| {
                            UsageAttribution::first(&c.child_usage, &c.aggregate_usage)
                        });
                }
            }
            let index = src.records.len();
            if let Some(id) = &id {
                src.by_id.insert(id.clone(), index);
            }
            src.last = Some(index);
            src.records.push(TextRecord {
                text,
                id,
                parent,
                kind,
            });
        }
        src
    }

    /// Records that were not JSON objects: their 0-based position and the parse error.
    pub fn skipped(&self) -> &[(usize, ParseError)] {
        &self.skipped
    }

    /// How many records were indexed.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether no record was indexed.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// What the index keeps of one record: kind, id, parent, and whether it is a
/// `child_usage_attributed` entry. `None` for a header.
type Head<'a> = Option<(EntryKind, Option<Cow<'a, str>>, Option<Cow<'a, str>>, bool)>;

fn envelope_of(text: &str) -> Result<Head<'_>, ParseError> {
    let (clean, _) = replace_lone_surrogates(text);
    Ok(match clean {
        // Nothing replaced: the envelope borrows from `text` itself.
        Cow::Borrowed(t) => head(Envelope::parse(t)?),
        Cow::Owned(t) => head(Envelope::parse(&t)?).map(|(k, id, parent, a)| {
            let own = |c: Option<Cow<'_, str>>| c.map(|s| Cow::Owned(s.into_owned()));
            (k, own(id), own(parent), a)
        }),
    })
}

fn head(env: Envelope<'_>) -> Head<'_> {
    if env.entry_type.as_deref() == Some("session") {
        return None;
    }
    let attribution = env.entry_type.as_deref() == Some("child_usage_attributed");
    Some((
        EntryKind::of_envelope(&env),
        env.id,
        env.parent_id,
        attribution,
    ))
}

/// A record of a [`TextSource`] could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TextLoadError {
    /// No record has this id.
    #[error("no entry with id `{id}`")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// The record's JSON does not match its entry type.
    #[error("entry `{id}` does not decode: {source}")]
    Decode {
        /// The entry's id.
        id: String,
        /// What was wrong.
        source: ParseError,
    },
}

impl ContextSource for TextSource<'_> {
    type Error = TextLoadError;

    fn last_entry(&self) -> Option<Cow<'_, str>> {
        let r = &self.records[self.last?];
        r.id.as_deref().map(Cow::Borrowed)
    }

    fn node(&self, id: &str) -> Option<Node<'_>> {
        let r = &self.records[*self.by_id.get(id)?];
        Some(Node {
            parent: r.parent.as_deref().map(Cow::Borrowed),
            kind: r.kind,
        })
    }

    fn load(&self, id: &str) -> Result<Cow<'_, Entry>, TextLoadError> {
        let r = self
            .by_id
            .get(id)
            .map(|&i| &self.records[i])
            .ok_or_else(|| TextLoadError::NotFound { id: id.to_owned() })?;
        let (clean, _) = replace_lone_surrogates(r.text);
        Entry::parse(&clean)
            .map(Cow::Owned)
            .map_err(|source| TextLoadError::Decode {
                id: id.to_owned(),
                source,
            })
    }

    fn entry_count(&self) -> usize {
        self.records.len()
    }

    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        self.attributions.get(target).cloned()
    }
}
