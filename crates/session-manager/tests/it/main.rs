//! Integration tests of session-manager, one module per source module plus the
//! reference's black-box tests re-expressed against this API.

mod agree;
mod append_bytes;
mod conformance;
mod errors;
mod layout;
mod listing;
mod owned;
mod process;
mod reference_bb;
mod resident;
mod resume_bytes;
mod seams;
mod store;
mod support;
