//! The SessionManager API of Base Context sessions (layer 5): storage layout and
//! environment variables, single-owner sessions, bounded captured reads, resident
//! views, injected clocks and ids.

pub mod clock;
pub mod layout;

pub use clock::{Clock, FixedClock, IdSource, RandomIds, SeededIds, Sources, SystemClock};
pub use layout::{InvalidSessionId, Layout, LayoutError, SafeSessionId};
