//! Integration tests of the `bcs` binary: every subcommand run as a process, success
//! and error paths, insta snapshots of the human and JSON outputs, the golden corpus
//! against the reference's oracles, kill -9 during `append`, torn tails, garbage
//! inputs and the writer lock.

mod cli;
mod corpus;
mod crash;
mod demo;
mod follow;
mod garbage;
mod hostile;
mod import;
mod owner;
mod owner_faults;
mod read;
mod routing;
mod serve;
mod sharing;
mod support;
mod verify;
mod write;
