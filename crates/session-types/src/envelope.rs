//! A cheap, borrowed view of the tree fields of one record, for indexing and import.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, Visitor};

/// The fields that place a record in the tree, read without building the whole entry.
///
/// Strings that are not strings (a numeric `id`, say) read as `None`, so a hostile
/// record cannot make this fail after the JSON itself is valid.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Envelope<'a> {
    /// `type`
    #[serde(rename = "type", default, borrow, deserialize_with = "lenient_str")]
    pub entry_type: Option<Cow<'a, str>>,
    /// `id`
    #[serde(default, borrow, deserialize_with = "lenient_str")]
    pub id: Option<Cow<'a, str>>,
    /// `parentId` (`None` for `null`, absent or not a string).
    #[serde(rename = "parentId", default, borrow, deserialize_with = "lenient_str")]
    pub parent_id: Option<Cow<'a, str>>,
    /// `timestamp`
    #[serde(default, borrow, deserialize_with = "lenient_str")]
    pub timestamp: Option<Cow<'a, str>>,
    /// `message.role` for `message` entries.
    #[serde(default, borrow)]
    pub message: Option<MessageEnvelope<'a>>,
}

/// The role of a stored message.
#[derive(Debug, Clone, Default)]
pub struct MessageEnvelope<'a> {
    /// `role`
    pub role: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for MessageEnvelope<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Inner<'a> {
            #[serde(default, borrow, deserialize_with = "lenient_str")]
            role: Option<Cow<'a, str>>,
        }
        // A non-object `message` is data too: it has no role.
        let v = LenientObject::<Inner<'a>>::deserialize(d)?;
        Ok(MessageEnvelope {
            role: v.0.and_then(|i| i.role),
        })
    }
}

struct LenientObject<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for LenientObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = LenientObject<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(|t| LenientObject(Some(t)))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LenientObject(None))
            }
            fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
                Ok(LenientObject(None))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LenientObject(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LenientObject(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LenientObject(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LenientObject(None))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(LenientObject(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

fn lenient_str<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'a, str>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(s)))
        }
        fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s.to_owned())))
        }
        fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(s)))
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
    }
    d.deserialize_any(V)
}

impl<'a> Envelope<'a> {
    /// Reads the envelope of one JSON object.
    ///
    /// ```
    /// use session_types::Envelope;
    /// let e = Envelope::parse(r#"{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"hi"}}"#).unwrap();
    /// assert_eq!(e.parent_id.as_deref(), Some("a"));
    /// assert_eq!(e.role(), Some("user"));
    /// ```
    pub fn parse(text: &'a str) -> Result<Self, crate::ParseError> {
        // Surrounding JavaScript whitespace (a BOM, U+00A0…) is ignored, as the
        // reference's `trim()` ignores it.
        let text = crate::js::trim(text);
        if text.as_bytes().first() != Some(&b'{') {
            return Err(crate::Record::parse(text).err().unwrap_or_else(|| {
                crate::ParseError::from_serde(
                    text,
                    &serde::de::Error::custom("expected a JSON object"),
                )
            }));
        }
        let strict = match crate::json::from_str(text) {
            Ok(e) => return Ok(e),
            Err(e) => crate::ParseError::from_serde(text, &e),
        };
        // A repeated key (the last one wins, as in `JSON.parse`) or a number beyond
        // the range of a double: read the object as a value instead.
        if !matches!(
            strict.kind,
            crate::ParseErrorKind::WrongShape | crate::ParseErrorKind::Syntax
        ) {
            return Err(strict);
        }
        // A record past serde_json's 128 levels is read again without that limit, on
        // a thread of its own (`json::read_deep`), as `Entry::read` reads it.
        let view = crate::js::finite_view(text);
        crate::json::read_deep(&view, || match crate::json::value_or(&view, &strict)? {
            serde_json::Value::Object(m) => Ok(Envelope::of_map(&m)),
            _ => Err(strict.clone()),
        })
    }

    /// The envelope of an object already read as a value (owned strings).
    pub fn of_map(m: &serde_json::Map<String, serde_json::Value>) -> Envelope<'static> {
        let s = |k: &str| {
            m.get(k)
                .and_then(serde_json::Value::as_str)
                .map(|s| Cow::Owned(s.to_owned()))
        };
        Envelope {
            entry_type: s("type"),
            id: s("id"),
            parent_id: s("parentId"),
            timestamp: s("timestamp"),
            message: m.get("message").map(|msg| MessageEnvelope {
                role: msg
                    .get("role")
                    .and_then(serde_json::Value::as_str)
                    .map(|s| Cow::Owned(s.to_owned())),
            }),
        }
    }

    /// The entry type its `type` names, `None` for a header, a type this version does
    /// not model, or a `type` that is not a string.
    pub fn known_type(&self) -> Option<crate::EntryType> {
        self.entry_type
            .as_deref()
            .and_then(crate::EntryType::from_name)
    }

    /// Whether this is a session header record (`type` is
    /// [`SessionHeader::TYPE`](crate::SessionHeader::TYPE)).
    pub fn is_header(&self) -> bool {
        self.entry_type.as_deref() == Some(crate::SessionHeader::TYPE)
    }

    /// `message.role`, if this is a message with a string role.
    pub fn role(&self) -> Option<&str> {
        self.message.as_ref().and_then(|m| m.role.as_deref())
    }
}
