//! Helpers shared by the end-to-end tests.
pub mod fleet;
pub mod host;
pub mod prometheus;
