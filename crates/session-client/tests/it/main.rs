//! The client against a scripted owner: a test plays the owner's side of the wire
//! line by line (the real owner is exercised in `session-tests`' `client` tests and
//! `session-cli`'s `owner` tests, which may link it).

mod fake;
mod planted;
mod timeout;
mod wire;
