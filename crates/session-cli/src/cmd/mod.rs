//! One module per group of subcommands.

pub mod demo;
pub mod import;
pub mod read;
pub mod verify;
pub mod write;
