//! The places where the reference leans on its JavaScript engine (V8, as in node 20),
//! reproduced exactly: [`date`] is `Date.parse`, [`sort`] is `Array.prototype.sort`,
//! [`stringify`] is `JSON.stringify`'s number spelling.
//!
//! Each is our own implementation of the engine's observable behaviour, checked
//! against tables that node produced (`tests/data/`).

pub mod date;
pub mod sort;
pub mod stringify;
