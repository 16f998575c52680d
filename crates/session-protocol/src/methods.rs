//! Every method: its name on the wire, its params and its result, declared once in
//! the table of [`methods!`] and expanded into [`Method`] (the names), [`Request`]
//! (a request with its typed params) and one marker type per method in [`call`]
//! (implementing [`Call`], which ties the params to the result type).
//!
//! Method names follow the seed's SessionManager API in camelCase: the static methods
//! under `store/`, the instance methods under `session/`, where each names the open
//! session by `sessionId`. Params are JSON objects with camelCase keys; unknown keys
//! are refused (`-32602`), so a typo is never silently ignored.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use session_types::{
    AgentMessage, AgentStatus, Entry, EntryId, GitState, SessionState, Usage, UserContent,
};

use crate::error::Error;
use crate::types::*;
use crate::version::ProtocolVersion;

/// A method: its params and result types.
pub trait Call {
    /// The method.
    const METHOD: Method;
    /// Its params.
    type Params: Serialize + DeserializeOwned;
    /// Its result.
    type Result: Serialize + DeserializeOwned;

    /// The request of these params.
    fn request(params: Self::Params) -> Request;
}

/// Reads a present JSON value as `Some`, `null` included: an explicit `null` is kept
/// (`"data": null` is stored as written), an absent key is `None`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Declares a params struct: required fields, then optional ones (absent on the wire
/// when `None`).
macro_rules! params {
    (
        $(#[$m:meta])* $name:ident {
            $( $(#[$fm:meta])* $field:ident : $ty:ty ),* $(,)?
        }
        $( opt { $( $(#[$om:meta])* $ofield:ident : $oty:ty ),* $(,)? } )?
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $name {
            $( $(#[$fm])* pub $field: $ty, )*
            $($(
                $(#[$om])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $ofield: Option<$oty>,
            )*)?
        }
    };
}

params! {
    /// `initialize`: the first request of every connection.
    InitializeParams {
        /// The version the client speaks.
        protocol_version: ProtocolVersion,
    } opt {
        /// Who the client is.
        client_info: PeerInfo,
    }
}

/// The answer to `initialize`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitializeResult {
    /// The version the server speaks (same major as the client's).
    pub protocol_version: ProtocolVersion,
    /// Who the server is.
    pub server_info: PeerInfo,
}

params! {
    /// `store/create`: `SessionManager.create(cwd)`.
    CreateParams {
        /// The session's working directory.
        cwd: String,
    } opt {
        /// A caller-chosen id (a safe file name); default a new UUIDv7.
        session_id: String,
        /// The session this one continues (`parentSession` in the header).
        parent_session: String,
    }
}

params! {
    /// `store/open`: `SessionManager.open(path)`, by journal path or by session id
    /// (exactly one of the two). A session already open in the owner is shared.
    OpenParams {} opt {
        /// The journal's path.
        path: String,
        /// The session id (its journal in the store's sessions directory).
        session_id: String,
    }
}

params! {
    /// `store/continueRecent`: `SessionManager.continueRecent(cwd)`.
    ContinueRecentParams {
        /// The working directory whose newest session is continued (or created).
        cwd: String,
    }
}

params! {
    /// `store/forkFrom`: `SessionManager.forkFrom(source, targetCwd)`.
    ForkFromParams {
        /// The source journal's path.
        source: String,
        /// The new session's working directory.
        target_cwd: String,
    }
}

params! {
    /// `store/list`: `SessionManager.list(cwd)`.
    ListParams {
        /// The working directory.
        cwd: String,
    } opt {
        /// Send `store/listProgress` notifications.
        progress: bool,
    }
}

params! {
    /// `store/listAll`: `SessionManager.listAll()`.
    ListAllParams {} opt {
        /// Send `store/listProgress` notifications.
        progress: bool,
    }
}

params! {
    /// `store/follow` and `store/unfollow`: no params.
    StoreFollowParams {}
}

params! {
    /// `store/delete`: removes a session's journal, derived files and artifacts.
    DeleteParams {
        /// The session id.
        session_id: String,
    }
}

params! {
    /// `store/import`: imports a legacy JSONL file.
    ImportParams {
        /// The legacy file's path.
        path: String,
    }
}

params! {
    /// `store/importMany`: imports many legacy JSONL files in batches (each batch's
    /// journals made durable together, published with one directory sync).
    ImportManyParams {
        /// The legacy files' paths.
        paths: Vec<String>,
    }
}

params! {
    /// `store/export`: writes a session as v3 JSONL.
    ExportParams {
        /// The session id.
        session_id: String,
        /// The file to write.
        path: String,
    }
}

params! {
    /// Names an open session.
    SessionParams {
        /// The session id.
        session_id: String,
    }
}

params! {
    /// `session/newSession`: a new session in the same store and cwd.
    NewSessionParams {
        /// The session whose settings the new one takes.
        session_id: String,
    } opt {
        /// A caller-chosen id for the new session.
        new_session_id: String,
        /// The new session's `parentSession`.
        parent_session: String,
    }
}

params! {
    /// `session/setSessionFile`: this connection's handle moves to the session at
    /// `path` (it closes `sessionId` and opens `path`).
    SetSessionFileParams {
        /// The open session.
        session_id: String,
        /// The journal to open instead.
        path: String,
    }
}

params! {
    /// `session/createBranchedSession`: a new session holding the path to `leafId`.
    CreateBranchedSessionParams {
        /// The open session.
        session_id: String,
        /// The leaf whose path the new session holds.
        leaf_id: String,
    }
}

params! {
    /// `session/appendMessage`
    AppendMessageParams {
        /// The open session.
        session_id: String,
        /// The message, stored verbatim.
        message: AgentMessage,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendThinkingLevelChange`
    AppendThinkingLevelChangeParams {
        /// The open session.
        session_id: String,
        /// The level (not validated, as in the reference).
        thinking_level: String,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendServiceTierChange`
    AppendServiceTierChangeParams {
        /// The open session.
        session_id: String,
        /// The tier.
        service_tier: String,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendModelChange`
    AppendModelChangeParams {
        /// The open session.
        session_id: String,
        /// The provider.
        provider: String,
        /// The model id.
        model_id: String,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendCompaction`
    AppendCompactionParams {
        /// The open session.
        session_id: String,
        /// The summary.
        summary: String,
        /// The first entry kept after the summary (not validated).
        first_kept_entry_id: String,
        /// Tokens before compaction.
        tokens_before: u64,
    } opt {
        /// Extension details.
        #[serde(deserialize_with = "present")]
        details: Value,
        /// Whether a hook produced it.
        from_hook: bool,
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendCustomEntry`
    AppendCustomEntryParams {
        /// The open session.
        session_id: String,
        /// The extension's type name.
        custom_type: String,
    } opt {
        /// Its data.
        #[serde(deserialize_with = "present")]
        data: Value,
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendChildUsageAttribution`
    AppendChildUsageAttributionParams {
        /// The open session.
        session_id: String,
        /// The entry the usage is attributed to (not validated).
        target_id: String,
        /// The child's own usage.
        child_usage: Usage,
        /// The aggregate usage.
        aggregate_usage: Usage,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendSessionInfo`
    AppendSessionInfoParams {
        /// The open session.
        session_id: String,
        /// The name (trimmed; empty clears it).
        name: String,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendSessionState`
    AppendSessionStateParams {
        /// The open session.
        session_id: String,
        /// The lifecycle state.
        state: SessionState,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendAgentStatus`
    AppendAgentStatusParams {
        /// The open session.
        session_id: String,
        /// The agent status.
        status: AgentStatus,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendGitState`
    AppendGitStateParams {
        /// The open session.
        session_id: String,
        /// The git snapshot.
        git: GitState,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendCustomMessageEntry`
    AppendCustomMessageEntryParams {
        /// The open session.
        session_id: String,
        /// The extension's type name.
        custom_type: String,
        /// The message content.
        content: UserContent,
        /// Whether front-ends display it.
        display: bool,
    } opt {
        /// Extension details.
        #[serde(deserialize_with = "present")]
        details: Value,
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendLabelChange`
    AppendLabelChangeParams {
        /// The open session.
        session_id: String,
        /// The labelled entry (must exist).
        target_id: String,
    } opt {
        /// The label (absent or empty clears it).
        label: String,
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/appendEntry`: a caller-built entry of any type; missing `id`,
    /// `parentId`, `timestamp` are filled in.
    AppendEntryParams {
        /// The open session.
        session_id: String,
        /// The entry.
        entry: Entry,
    } opt {
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// `session/branch`: `branchTo(id | null)`.
    BranchParams {
        /// The open session.
        session_id: String,
        /// The new leaf (`null`: before any entry).
        entry_id: Option<EntryId>,
    }
}

params! {
    /// `session/branchWithSummary`
    BranchWithSummaryParams {
        /// The open session.
        session_id: String,
        /// Where the summary goes (`null`: a new root).
        from_id: Option<EntryId>,
        /// The summary.
        summary: String,
    } opt {
        /// Extension details.
        #[serde(deserialize_with = "present")]
        details: Value,
        /// Whether a hook produced it.
        from_hook: bool,
        /// Durable (default) or buffered.
        durability: Durability,
    }
}

params! {
    /// A bounded read of an open session.
    ReadParams {
        /// The open session.
        session_id: String,
    } opt {
        /// The read's limits (default: the seed's).
        limits: ReadLimits,
    }
}

params! {
    /// A bounded read of one entry.
    EntryReadParams {
        /// The open session.
        session_id: String,
        /// The entry.
        entry_id: String,
    } opt {
        /// The read's limits (default: the seed's).
        limits: ReadLimits,
    }
}

params! {
    /// `session/readBranch`
    ReadBranchParams {
        /// The open session.
        session_id: String,
    } opt {
        /// The path's end (default: the leaf).
        from_id: String,
        /// The read's limits (default: the seed's).
        limits: ReadLimits,
    }
}

params! {
    /// `session/readBranches`: several paths through one capture and one accounting.
    ReadBranchesParams {
        /// The open session.
        session_id: String,
        /// The paths' ends.
        leaf_ids: Vec<String>,
    } opt {
        /// The read's limits (default: the seed's).
        limits: ReadLimits,
    }
}

params! {
    /// `session/readEntryRetention`
    EntryParams {
        /// The open session.
        session_id: String,
        /// The entry.
        entry_id: String,
    }
}

/// Expands the method table into [`Method`], [`Request`] and [`call`].
macro_rules! methods {
    ($( $(#[doc = $doc:literal])* $variant:ident = $name:literal ($params:ty) -> $result:ty; )*) => {
        /// A method's name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Method {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl Method {
            /// Every method, in table order.
            pub const ALL: &'static [Method] = &[$(Method::$variant,)*];

            /// The name on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Method::$variant => $name, )*
                }
            }

            /// The method of a wire name.
            pub fn from_name(name: &str) -> Option<Method> {
                match name {
                    $( $name => Some(Method::$variant), )*
                    _ => None,
                }
            }

            /// Checks that `json` reads as this method's result type (for a client that
            /// dispatches on method names, and for the examples of `docs/rpc.md`).
            pub fn check_result(self, json: &str) -> Result<(), serde_json::Error> {
                match self {
                    $( Method::$variant => serde_json::from_str::<$result>(json).map(drop), )*
                }
            }
        }

        impl Method {
            /// Reads `json` as this method's result type and writes it back: what a
            /// client that types its results keeps of it (`docs/rpc.md`'s examples are
            /// checked to come through unchanged).
            pub fn reencode_result(self, json: &str) -> Result<String, serde_json::Error> {
                match self {
                    $( Method::$variant => serde_json::from_str::<$result>(json)
                        .and_then(|r| serde_json::to_string(&r)), )*
                }
            }
        }

        #[cfg(feature = "schema")]
        impl Method {
            /// Every method's name, description, params schema and result schema (in
            /// table order), the types registered in `generator`'s definitions.
            pub(crate) fn schemas(
                generator: &mut schemars::SchemaGenerator,
            ) -> Vec<crate::schema::MethodSchema> {
                vec![$(
                    crate::schema::MethodSchema {
                        name: $name,
                        doc: &[$($doc),*],
                        params: generator.subschema_for::<$params>(),
                        result: generator.subschema_for::<$result>(),
                    },
                )*]
            }
        }

        /// A request: a method with its params.
        #[derive(Debug, Clone, PartialEq)]
        #[non_exhaustive]
        #[allow(clippy::large_enum_variant)]
        pub enum Request {
            $( $(#[doc = $doc])* $variant($params), )*
        }

        impl Request {
            /// Its method.
            pub fn method(&self) -> Method {
                match self {
                    $( Request::$variant(_) => Method::$variant, )*
                }
            }

            /// Reads the params of `method` (absent params read as `{}`): as their
            /// derived `Deserialize` does, `appendMessage` and `appendEntry` read
            /// directly where the text allows (`direct`), the same params.
            pub fn from_params(method: Method, params: Option<&RawValue>) -> Result<Request, Error> {
                let text = params.map_or("{}", RawValue::get);
                let direct = match method {
                    Method::AppendMessage => crate::direct::append_message(text).map(Request::AppendMessage),
                    Method::AppendEntry => crate::direct::append_entry(text).map(Request::AppendEntry),
                    _ => None,
                };
                if let Some(request) = direct {
                    return Ok(request);
                }
                let invalid = |e: serde_json::Error| Error::InvalidParams {
                    method: method.as_str().to_owned(),
                    detail: e.to_string(),
                };
                Ok(match method {
                    $( Method::$variant => Request::$variant(serde_json::from_str(text).map_err(invalid)?), )*
                })
            }

            /// Writes the params as JSON text.
            pub fn params_json(&self) -> String {
                let r = match self {
                    $( Request::$variant(p) => serde_json::to_string(p), )*
                };
                // Params are plain data (strings, numbers, maps with string keys):
                // serializing them cannot fail.
                r.unwrap_or_else(|_| "{}".to_owned())
            }
        }

        /// One marker type per method, for typed calls: `call::AppendMessage` is a
        /// [`Call`] whose params are [`AppendMessageParams`] and whose result is
        /// [`Appended`].
        pub mod call {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[doc = $doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $variant;

                impl Call for $variant {
                    const METHOD: Method = Method::$variant;
                    type Params = $params;
                    type Result = $result;

                    fn request(params: $params) -> Request {
                        Request::$variant(params)
                    }
                }
            )*
        }
    };
}

methods! {
    /// `initialize`
    Initialize = "initialize" (InitializeParams) -> InitializeResult;
    /// `store/create`
    StoreCreate = "store/create" (CreateParams) -> SessionOpened;
    /// `store/open`
    StoreOpen = "store/open" (OpenParams) -> SessionOpened;
    /// `store/continueRecent`
    StoreContinueRecent = "store/continueRecent" (ContinueRecentParams) -> SessionOpened;
    /// `store/forkFrom`
    StoreForkFrom = "store/forkFrom" (ForkFromParams) -> SessionOpened;
    /// `store/list`
    StoreList = "store/list" (ListParams) -> Listing;
    /// `store/listAll`
    StoreListAll = "store/listAll" (ListAllParams) -> Listing;
    /// `store/delete`
    StoreDelete = "store/delete" (DeleteParams) -> Deleted;
    /// `store/import`
    StoreImport = "store/import" (ImportParams) -> Imported;
    /// `store/importMany`
    StoreImportMany = "store/importMany" (ImportManyParams) -> ImportedMany;
    /// `store/export`
    StoreExport = "store/export" (ExportParams) -> Exported;
    /// `store/follow`: `store/changed` notifications for sessions created, renamed,
    /// deleted, and their state and agent status (the agents view).
    StoreFollow = "store/follow" (StoreFollowParams) -> Empty;
    /// `store/unfollow`: no more `store/changed` notifications on this connection.
    StoreUnfollow = "store/unfollow" (StoreFollowParams) -> Empty;
    /// `session/close`: this connection no longer uses the session (the owner closes
    /// it when no connection does).
    SessionClose = "session/close" (SessionParams) -> Empty;
    /// `session/sync`: makes every buffered append so far durable.
    SessionSync = "session/sync" (SessionParams) -> Empty;
    /// `session/follow`: a `session/appended` notification for each entry appended
    /// to the session after this, by any client.
    SessionFollow = "session/follow" (SessionParams) -> Followed;
    /// `session/unfollow`: no more `session/appended` notifications of this session on
    /// this connection.
    SessionUnfollow = "session/unfollow" (SessionParams) -> Empty;
    /// `session/newSession`
    SessionNewSession = "session/newSession" (NewSessionParams) -> SessionOpened;
    /// `session/setSessionFile`
    SessionSetSessionFile = "session/setSessionFile" (SetSessionFileParams) -> SessionOpened;
    /// `session/createBranchedSession`
    SessionCreateBranchedSession = "session/createBranchedSession" (CreateBranchedSessionParams) -> SessionOpened;
    /// `session/appendMessage`
    AppendMessage = "session/appendMessage" (AppendMessageParams) -> Appended;
    /// `session/appendThinkingLevelChange`
    AppendThinkingLevelChange = "session/appendThinkingLevelChange" (AppendThinkingLevelChangeParams) -> Appended;
    /// `session/appendServiceTierChange`
    AppendServiceTierChange = "session/appendServiceTierChange" (AppendServiceTierChangeParams) -> Appended;
    /// `session/appendModelChange`
    AppendModelChange = "session/appendModelChange" (AppendModelChangeParams) -> Appended;
    /// `session/appendCompaction`
    AppendCompaction = "session/appendCompaction" (AppendCompactionParams) -> Appended;
    /// `session/appendCustomEntry`
    AppendCustomEntry = "session/appendCustomEntry" (AppendCustomEntryParams) -> Appended;
    /// `session/appendChildUsageAttribution`
    AppendChildUsageAttribution = "session/appendChildUsageAttribution" (AppendChildUsageAttributionParams) -> Appended;
    /// `session/appendSessionInfo`
    AppendSessionInfo = "session/appendSessionInfo" (AppendSessionInfoParams) -> Appended;
    /// `session/appendSessionState`
    AppendSessionState = "session/appendSessionState" (AppendSessionStateParams) -> Appended;
    /// `session/appendAgentStatus`
    AppendAgentStatus = "session/appendAgentStatus" (AppendAgentStatusParams) -> Appended;
    /// `session/appendGitState`
    AppendGitState = "session/appendGitState" (AppendGitStateParams) -> Appended;
    /// `session/appendCustomMessageEntry`
    AppendCustomMessageEntry = "session/appendCustomMessageEntry" (AppendCustomMessageEntryParams) -> Appended;
    /// `session/appendLabelChange`
    AppendLabelChange = "session/appendLabelChange" (AppendLabelChangeParams) -> Appended;
    /// `session/appendEntry`
    AppendEntry = "session/appendEntry" (AppendEntryParams) -> Appended;
    /// `session/branch`
    Branch = "session/branch" (BranchParams) -> Empty;
    /// `session/branchWithSummary`
    BranchWithSummary = "session/branchWithSummary" (BranchWithSummaryParams) -> Appended;
    /// `session/readLeafEntry`
    ReadLeafEntry = "session/readLeafEntry" (ReadParams) -> MaybeEntry;
    /// `session/readEntry`
    ReadEntry = "session/readEntry" (EntryReadParams) -> OneEntry;
    /// `session/readLabel`
    ReadLabel = "session/readLabel" (EntryReadParams) -> Label;
    /// `session/readBranch`
    ReadBranch = "session/readBranch" (ReadBranchParams) -> Entries;
    /// `session/readBranches`
    ReadBranches = "session/readBranches" (ReadBranchesParams) -> Branches;
    /// `session/readEntries`
    ReadEntries = "session/readEntries" (ReadParams) -> Entries;
    /// `session/readTree`
    ReadTree = "session/readTree" (ReadParams) -> Tree;
    /// `session/readEntryRetention`
    ReadEntryRetention = "session/readEntryRetention" (EntryParams) -> RetentionResult;
    /// `session/buildSessionContext`
    BuildSessionContext = "session/buildSessionContext" (ReadParams) -> SessionContext;
    /// `session/getHeader`
    GetHeader = "session/getHeader" (SessionParams) -> HeaderResult;
    /// `session/getMetadata`
    GetMetadata = "session/getMetadata" (SessionParams) -> Metadata;
    /// `session/getArtifactDir`
    GetArtifactDir = "session/getArtifactDir" (SessionParams) -> PathResult;
}
