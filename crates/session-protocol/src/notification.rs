//! Notifications: messages without an id that nobody answers, declared once in the
//! table of [`notifications!`] and expanded into [`Notification`] (with its method
//! names and typed params) and, with the `schema` feature, the schema's notification
//! map.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::envelope::RequestId;
use crate::error::Error;

/// `initialized` (client → owner, after the `initialize` answer): no params.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InitializedParams {}

/// `store/listProgress` (owner → client): how far a `store/list` or `store/listAll`
/// asked with `progress: true` has come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListProgressParams {
    /// The listing request.
    pub request_id: RequestId,
    /// Sessions loaded so far.
    pub loaded: u64,
    /// Sessions in all.
    pub total: u64,
}

/// Who sends a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The client sends it to the owner.
    ToOwner,
    /// The owner sends it to the client.
    ToClient,
}

/// Expands the notification table into [`Notification`].
macro_rules! notifications {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal ($params:ty) $dir:ident; )*) => {
        /// A notification with its typed params.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        pub enum Notification {
            $( $(#[doc = $doc])* $variant($params), )*
        }

        impl Notification {
            /// Every notification's method name, in table order.
            pub const METHODS: &'static [&'static str] = &[$($name),*];

            /// The method name.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Notification::$variant(_) => $name, )*
                }
            }

            /// Who sends it.
            pub fn direction(&self) -> Direction {
                match self {
                    $( Notification::$variant(_) => Direction::$dir, )*
                }
            }

            /// Reads a notification's params.
            pub fn from_params(method: &str, params: Option<&RawValue>) -> Result<Notification, Error> {
                let text = params.map_or("{}", RawValue::get);
                let invalid = |e: serde_json::Error| Error::InvalidParams {
                    method: method.to_owned(),
                    detail: e.to_string(),
                };
                match method {
                    $( $name => serde_json::from_str(text)
                        .map(Notification::$variant)
                        .map_err(invalid), )*
                    _ => Err(Error::MethodNotFound {
                        method: method.to_owned(),
                    }),
                }
            }

            /// The params as JSON text.
            pub fn params_json(&self) -> String {
                let r = match self {
                    $( Notification::$variant(p) => serde_json::to_string(p), )*
                };
                // Params are plain data: serializing them cannot fail.
                r.unwrap_or_else(|_| "{}".to_owned())
            }

            /// Every notification's name, description, sender and params schema (in
            /// table order), the types registered in `generator`'s definitions.
            #[cfg(feature = "schema")]
            pub(crate) fn schemas(
                generator: &mut schemars::SchemaGenerator,
            ) -> Vec<crate::schema::NotificationSchema> {
                vec![$(
                    crate::schema::NotificationSchema {
                        name: $name,
                        doc: &[$($doc),*],
                        direction: Direction::$dir,
                        params: generator.subschema_for::<$params>(),
                    },
                )*]
            }
        }
    };
}

notifications! {
    /// `initialized` (client → owner, optional): the client has read the `initialize`
    /// answer.
    Initialized = "initialized" (InitializedParams) ToOwner;
    /// `store/listProgress` (owner → client): progress of a `store/list` or
    /// `store/listAll` asked with `progress: true`, before its answer.
    ListProgress = "store/listProgress" (ListProgressParams) ToClient;
}
