//! The owner's integration tests: a client over an in-memory duplex (or the Unix
//! socket) speaking the protocol to a real owner.

mod dispatch;
mod docs;
mod durability;
mod follow;
mod fuzz;
mod hostile;
mod pipeline;
mod reads;
mod server;
mod sharing;
mod socket;
mod support;
