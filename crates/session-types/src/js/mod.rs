//! The places where the reference leans on its JavaScript engine (V8, as in node 20),
//! reproduced exactly: [`date`] is `Date.parse`, [`sort`] is `Array.prototype.sort`,
//! [`stringify`](mod@stringify) is `JSON.stringify`'s number spelling, and [`value`] is how its code
//! reads JSON values (`String.prototype.trim`, truthiness, `new Date(value)`),
//! re-exported here (`js::trim`, `js::truthy`, …).
//!
//! Each is our own implementation of the engine's observable behaviour, checked
//! against tables that node produced (`tests/data/`).

pub mod date;
pub mod sort;
pub mod stringify;
pub mod value;

pub use value::{
    date_of, finite_view, is_blank, is_whitespace, map_numbers, may_hold_infinite_number,
    raw_field, raw_key, raw_number, raw_truthy, string_to_number, to_number, trim, trim_end_bytes,
    trim_start_bytes, truthy,
};
