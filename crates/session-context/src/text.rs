//! A [`ContextSource`] over JSON record texts that decodes entries only when loaded.

use std::borrow::Cow;
use std::collections::HashMap;

use session_types::json::replace_lone_surrogates;
use session_types::{Entry, EntryType, Envelope, ParseError};

use crate::kind::ContextKind;
use crate::source::{ContextSource, Node, Parent, UsageAttribution};

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
    /// The parent's record, resolved once all ids are known.
    parent_index: Option<usize>,
    kind: ContextKind,
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
                if let Ok(Entry::ChildUsageAttributed(c)) = Entry::read(&clean) {
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
                parent: parent.filter(|p| !p.is_empty()),
                parent_index: None,
                kind,
            });
        }
        for i in 0..src.records.len() {
            let parent = src.records[i].parent.as_deref();
            let resolved = parent.and_then(|p| src.by_id.get(p).copied());
            src.records[i].parent_index = resolved;
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
type Head<'a> = Option<(
    ContextKind,
    Option<Cow<'a, str>>,
    Option<Cow<'a, str>>,
    bool,
)>;

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
    if env.is_header() {
        return None;
    }
    let attribution = env.known_type() == Some(EntryType::ChildUsageAttributed);
    Some((
        ContextKind::of_envelope(&env),
        env.id,
        env.parent_id,
        attribution,
    ))
}

/// A record of a [`TextSource`] could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TextLoadError {
    /// No record at this position.
    #[error("no record at position {position}")]
    NotFound {
        /// The position asked for.
        position: usize,
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
    type Handle = usize;
    type Error = TextLoadError;

    fn last_entry(&self) -> Option<usize> {
        self.last
    }

    fn find(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    fn node(&self, entry: usize) -> Node<'_, usize> {
        let r = &self.records[entry];
        Node {
            parent: match (&r.parent, r.parent_index) {
                (None, _) => Parent::Root,
                (Some(_), Some(i)) => Parent::Node(i),
                (Some(p), None) => Parent::Missing(Cow::Borrowed(p)),
            },
            kind: r.kind,
        }
    }

    fn id(&self, entry: usize) -> Cow<'_, str> {
        Cow::Borrowed(self.records[entry].id.as_deref().unwrap_or(""))
    }

    fn load(&self, entry: usize) -> Result<Cow<'_, Entry>, TextLoadError> {
        let r = self
            .records
            .get(entry)
            .ok_or(TextLoadError::NotFound { position: entry })?;
        let (clean, _) = replace_lone_surrogates(r.text);
        Entry::read(&clean)
            .map(Cow::Owned)
            .map_err(|source| TextLoadError::Decode {
                id: r.id.as_deref().unwrap_or("").to_owned(),
                source,
            })
    }

    /// The record's own line: a field of `1e400` is `Infinity` there (D11).
    fn raw_field(&self, entry: usize, key: &str) -> Option<Box<serde_json::value::RawValue>> {
        session_types::js::raw_field(self.records.get(entry)?.text, key)
    }

    fn entry_count(&self) -> usize {
        self.records.len()
    }

    fn usage_attribution(&self, target: &str) -> Option<UsageAttribution> {
        self.attributions.get(target).cloned()
    }
}
