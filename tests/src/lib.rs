//! Helpers shared by the end-to-end tests.
pub mod compat;
pub mod host;
