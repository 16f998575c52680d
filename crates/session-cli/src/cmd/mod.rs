//! One module per group of subcommands.

pub(crate) mod demo;
pub(crate) mod follow;
pub(crate) mod import;
pub(crate) mod owner;
pub(crate) mod read;
pub(crate) mod serve;
pub(crate) mod verify;
pub(crate) mod write;
