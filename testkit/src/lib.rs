//! Test and benchmark support, shared by every integration test of the
//! workspace (`tests/`, the target's own tests) and by the benchmarks'
//! tools in the xtask (`cargo xtask forge`, `metrics-siege`,
//! `rtla-compare`, ...): running the
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
//! allocator ([`alloc`]), the fault harness ([`faults`]: network
//! namespaces, nftables, a small disk), rtla's timerlat output
//! ([`rtla`]), the recordings a board test keeps ([`kept_runs`]) and a
//! headless chromium that opens the host's HTML report ([`chromium`]).
//!
//! The emulated ARM boards (`tests/tests/board.rs`): running ARM binaries
//! under qemu and what the boards boot ([`qemu`]), the busybox image
//! ([`image`], from `testkit/image`), booting a board with its UARTs wired to the test
//! ([`boot`]) and checking the stream a board recorded ([`board`]).
pub mod alloc;
pub mod base64;
pub mod board;
pub mod boot;
pub mod callers;
pub mod chromium;
pub mod compat;
pub mod disturb;
pub mod faults;
pub mod fleet;
#[cfg(feature = "host")]
pub mod forge;
pub mod host;
pub mod image;
pub mod kept_runs;
pub mod poll;
pub mod precondition;
pub mod procs;
pub mod prometheus;
pub mod qemu;
pub mod rtla;
pub mod scratch;
pub mod siege;
pub mod target;
pub mod wait;

pub use precondition::{ci, have, is_root, missing, switched_off};
pub use scratch::Scratch;

use std::path::{Path, PathBuf};

/// The workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The cargo target directory used by this build: `CARGO_TARGET_DIR`,
/// else `target/` of the root.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), PathBuf::from)
}
