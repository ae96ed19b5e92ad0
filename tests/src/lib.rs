//! Test support for every integration test of the workspace: running the
//! target ([`target`]) and calling it as cyclictest's callers do
//! ([`callers`]), decoding its stream, starting a recording host
//! ([`host`]), a listening recorder and its metrics ([`fleet`]), a private
//! Prometheus ([`prometheus`]), comparing the target's cyclictest outputs
//! with cyclictest's ([`compat`]), looking at a running process from
//! outside ([`procs`]), and deciding what a test does when the machine lacks
//! what it needs ([`precondition`]: under `CI=true` it fails, elsewhere it
//! says `skipped:`).
pub mod callers;
pub mod compat;
pub mod fleet;
pub mod host;
pub mod precondition;
pub mod procs;
pub mod prometheus;
pub mod target;

pub use precondition::{ci, have, is_root, missing, switched_off};
