//! The wire protocol of the Base Context session owner: JSON-RPC 2.0, one JSON value
//! per line, versioned, with typed errors.
//!
//! It sits beside the engine, on `session-types` only: a client links this crate (and
//! the logical model its messages carry), never the journal or the manager. The owner
//! (`session-owner`) serves it; `docs/rpc.md` documents every method with an example.
//!
//! Tour:
//! - [`Method`], [`Request`] and [`call`]: every method of the seed's API with its
//!   params struct (camelCase on the wire) and, through [`Call`], its result type.
//! - [`Incoming::parse`] reads a line (after [`check_line`]: the size limit and a
//!   nesting-depth bound applied before any parser runs); [`encode_request`],
//!   [`encode_result`], [`encode_error`], [`encode_notification`] write one.
//! - [`Error`] with stable [`code`]s, [`ErrorObject`] its wire form.
//! - [`ProtocolVersion`] and [`PROTOCOL_VERSION`]: `initialize` negotiates them.
//! - With the `schema` feature, `schema::bundle()`: the JSON Schema of every message,
//!   from which the committed schema and TypeScript definitions are generated.
//!
//! ```
//! use session_protocol::{
//!     Call, Incoming, LineLimits, PROTOCOL_VERSION, RequestId, call, encode_request,
//!     typed_request, InitializeParams,
//! };
//!
//! let request = call::Initialize::request(InitializeParams {
//!     protocol_version: PROTOCOL_VERSION,
//!     client_info: None,
//! });
//! let line = encode_request(&RequestId::Number(1), &request);
//! assert_eq!(
//!     line,
//!     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":{"major":1,"minor":1}}}"#
//! );
//! let Ok(Incoming::Request { id, method, params }) = Incoming::parse(line.as_bytes(), LineLimits::default()) else {
//!     panic!("a request");
//! };
//! assert_eq!(id, RequestId::Number(1));
//! assert_eq!(typed_request(&method, params)?, request);
//! # Ok::<(), session_protocol::Error>(())
//! ```

mod direct;
mod envelope;
mod error;
mod line;
mod methods;
mod notification;
#[cfg(feature = "schema")]
pub mod schema;
mod types;
mod version;

pub use envelope::{
    Incoming, JSONRPC, Refusal, RequestId, encode_appended, encode_error, encode_notification,
    encode_request, encode_result, parse_request, typed_request,
};
pub use error::{Error, ErrorObject, LimitKind, code};
pub use line::{
    LineError, LineLimits, MAX_DEPTH, MAX_LINE_BYTES, check_line, read_lone_surrogates,
};
pub use methods::*;
pub use notification::{
    AppendedParams, Direction, InitializedParams, ListProgressParams, Notification,
    SessionLaggedParams, StoreChange, StoreChangedParams, StoreLaggedParams,
};
pub use types::*;
pub use version::{PROTOCOL_VERSION, ProtocolVersion};
