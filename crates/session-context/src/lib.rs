//! Context reconstruction for Base Context sessions: from a session tree and a leaf to
//! what the model is sent.
//!
//! Layer 3 of the workspace. It depends on `session-types` only and does no I/O: no
//! files, no clock, no randomness. It must give the reference implementation's
//! `buildSessionContext()` output on every input where the reference terminates, and a
//! typed error where the reference hangs (parent cycles). `docs/context.md` states the
//! algorithm and every divergence.
//!
//! A tour:
//! - [`ContextSource`] is what contexts are built from: nodes (parent link and
//!   [`ContextKind`]) by handle, and whole entries loaded on demand. [`ResidentSource`] serves a slice of
//!   entries; [`TextSource`] serves JSON record texts and decodes only what it loads; an
//!   index serves its sidecar through a thin adapter.
//! - [`plan`] walks the path to a [`Leaf`] (O(depth), cycle-safe) and returns a
//!   [`ContextPlan`]: the path, where the settings come from, the window.
//! - [`context_entries`] gives the entries view ([`ContextEntries`]); [`build_context`]
//!   gives the messages view ([`SessionContext`]), whose
//!   [`SessionContext::to_reference_json`] is the reference's JSON.
//! - [`own_usage`] and [`UsageAttribution`] give child-usage accounting.
//!
//! ```
//! use session_context::{build_context, ContextOptions, Leaf, TextSource};
//! let records = [
//!     r#"{"type":"message","id":"1","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
//!     r#"{"type":"compaction","id":"2","parentId":"1","timestamp":"2025-01-01T00:00:00.000Z","summary":"S","firstKeptEntryId":"1","tokensBefore":100}"#,
//! ];
//! let source = TextSource::new(records);
//! let ctx = build_context(&source, Leaf::Default, &ContextOptions::default()).unwrap();
//! let roles: Vec<_> = ctx.messages.iter().map(|m| m.role().unwrap()).collect();
//! assert_eq!(roles, ["compactionSummary", "user"]);
//! assert_eq!(ctx.settings.thinking_level_str(), Some("off"));
//! ```

pub mod build;
pub mod error;
pub mod kind;
pub mod resident;
pub mod source;
pub mod text;
pub mod walk;

pub use build::{
    ContextEntries, ContextMessage, ContextOptions, ModelRef, SessionContext, Settings,
    build_context, context_entries, own_usage,
};
pub use error::{ContextError, ContextWarning};
pub use kind::{ContextKind, MessageRole};
pub use resident::{EntryNotFound, ResidentSource};
pub use source::{ContextSource, Node, Parent, PathMarks, UsageAttribution};
pub use text::{TextLoadError, TextSource};
pub use walk::{ContextPlan, Leaf, PathEntry, plan};
