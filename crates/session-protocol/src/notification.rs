//! Notifications: messages without an id that nobody answers, declared once in the
//! table of [`notifications!`] and expanded into [`Notification`] (with its method
//! names and typed params) and, with the `schema` feature, the schema's notification
//! map.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use session_types::{AgentStatus, Entry, SessionState};

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

/// `session/appended` (owner → follower): an entry appended to a followed session,
/// once acknowledged (durable when asked durable), in journal order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppendedParams {
    /// The followed session.
    pub session_id: String,
    /// The entry as stored.
    pub entry: Entry,
}

/// `session/lagged` (owner → follower): notifications of this session were dropped
/// because the follower read too slowly; re-read (`session/readEntries`) after the
/// last entry seen. Notifications resume after this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionLaggedParams {
    /// The followed session.
    pub session_id: String,
}

/// What happened to a session, for `store/changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum StoreChange {
    /// A session was created (`store/create`, `store/forkFrom`, `store/import`,
    /// `session/newSession`, `session/createBranchedSession`).
    Created {
        /// Its working directory (absent for an import, whose header is not read).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// A `session_info` entry named (or, with `null`, unnamed) the session.
    Renamed {
        /// The name now.
        name: Option<String>,
    },
    /// The session was deleted (`store/delete`).
    Deleted,
    /// A `session_state` entry: the lifecycle state now.
    #[serde(rename = "sessionState")]
    State {
        /// The state.
        state: SessionState,
    },
    /// An `agent_status` entry: the agent's status now.
    AgentStatus {
        /// The status.
        status: AgentStatus,
    },
}

/// `store/changed` (owner → store follower): a session of the store changed through
/// this owner (changes made by direct file access while no owner ran are not seen).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoreChangedParams {
    /// The session.
    pub session_id: String,
    /// Its journal's path (lossy UTF-8).
    pub session_file: String,
    /// What changed.
    pub change: StoreChange,
}

/// `store/lagged` (owner → store follower): `store/changed` notifications were dropped
/// because the follower read too slowly; re-list (`store/listAll`). Notifications
/// resume after this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StoreLaggedParams {}

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
    /// `session/appended` (owner → follower): an entry appended to a followed
    /// session, once acknowledged, in journal order (boxed: an entry is large beside
    /// the other notifications).
    Appended = "session/appended" (Box<AppendedParams>) ToClient;
    /// `session/lagged` (owner → follower): this session's notifications were
    /// dropped; re-read after the last entry seen.
    SessionLagged = "session/lagged" (SessionLaggedParams) ToClient;
    /// `store/changed` (owner → store follower): a session was created, renamed,
    /// deleted, or its state or agent status changed.
    StoreChanged = "store/changed" (StoreChangedParams) ToClient;
    /// `store/lagged` (owner → store follower): store changes were dropped; re-list.
    StoreLagged = "store/lagged" (StoreLaggedParams) ToClient;
}
