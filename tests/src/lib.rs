//! Test support for every integration test of the workspace: running the
//! target ([`target`]) and calling it as cyclictest's callers do
//! ([`callers`]), decoding its stream, starting a recording host
//! ([`host`]), a listening recorder and its metrics ([`fleet`]), a private
//! Prometheus ([`prometheus`]), comparing the target's cyclictest outputs
//! with cyclictest's ([`compat`]), looking at a running process from
//! outside ([`procs`]), deciding what a test does when the machine lacks
//! what it needs ([`precondition`]: under `CI=true` it fails, elsewhere it
//! says `skipped:`), waiting for conditions with timeouts ([`wait`]), the
//! disturbances tests make themselves ([`disturb`]), forged streams
//! ([`forge`]), hostile clients of `/metrics` ([`siege`]), a counting
//! allocator ([`alloc`]) and the fault harness ([`faults`]: network
//! namespaces, nftables, a small disk).
//!
//! The emulated ARM boards (`tests/tests/board.rs`): running ARM binaries
//! under qemu and what the boards boot ([`qemu`]), the busybox image
//! ([`image`]), booting a board with its UARTs wired to the test
//! ([`boot`]) and checking the stream a board recorded ([`board`]).
pub mod alloc;
pub mod board;
pub mod boot;
pub mod callers;
pub mod compat;
pub mod disturb;
pub mod faults;
pub mod fleet;
#[cfg(feature = "host")]
pub mod forge;
pub mod host;
pub mod image;
pub mod kept_runs;
pub mod precondition;
pub mod procs;
pub mod prometheus;
pub mod qemu;
pub mod rtla;
pub mod siege;
pub mod target;
pub mod wait;

pub use precondition::{ci, have, is_root, missing, switched_off};
