//! Integration tests of session-manager.
