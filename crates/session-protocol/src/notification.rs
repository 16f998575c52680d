//! Notifications: messages without an id that nobody answers.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::envelope::RequestId;
use crate::error::Error;

/// `initialized` (client → owner, after the `initialize` answer): no params.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitializedParams {}

/// `store/listProgress` (owner → client): how far a `store/list` or `store/listAll`
/// asked with `progress: true` has come.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListProgressParams {
    /// The listing request.
    pub request_id: RequestId,
    /// Sessions loaded so far.
    pub loaded: u64,
    /// Sessions in all.
    pub total: u64,
}

/// A notification with its typed params.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Notification {
    /// `initialized`
    Initialized(InitializedParams),
    /// `store/listProgress`
    ListProgress(ListProgressParams),
}

impl Notification {
    /// Every notification's method name.
    pub const METHODS: &'static [&'static str] = &["initialized", "store/listProgress"];

    /// The method name.
    pub fn method(&self) -> &'static str {
        match self {
            Notification::Initialized(_) => "initialized",
            Notification::ListProgress(_) => "store/listProgress",
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
            "initialized" => serde_json::from_str(text)
                .map(Notification::Initialized)
                .map_err(invalid),
            "store/listProgress" => serde_json::from_str(text)
                .map(Notification::ListProgress)
                .map_err(invalid),
            _ => Err(Error::MethodNotFound {
                method: method.to_owned(),
            }),
        }
    }

    /// The params as JSON text.
    pub fn params_json(&self) -> String {
        let r = match self {
            Notification::Initialized(p) => serde_json::to_string(p),
            Notification::ListProgress(p) => serde_json::to_string(p),
        };
        r.unwrap_or_else(|_| "{}".to_owned())
    }
}
