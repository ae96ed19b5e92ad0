//! latscope's development tool, run as `cargo xtask`: the benchmarks'
//! figures as typed results ([`results`]) and their statistics
//! ([`stats`]), the README's scorecard built from those results
//! ([`scorecard`]), the man pages ([`docgen`]) and the release check
//! ([`release_check`]), and the programs the benchmarks' launchers run
//! ([`tool`]).
//!
//! The benchmarks that drive other programs (`bench/`) stay launchers:
//! they run the programs and keep their raw outputs, and every figure and
//! statistic is computed here, from those outputs.
//!
//! None of this is linked into latscope or latscope-host.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bench;
pub mod compare;
pub mod docgen;
mod error;
pub mod exit_stall;
pub mod explain_overhead;
pub mod fleet;
pub mod footprint;
pub mod fork;
pub mod frame_instructions;
pub mod histfile;
pub mod instructions;
pub mod machine;
pub mod mcu;
pub mod meta;
pub mod process;
pub mod release_check;
pub mod results;
pub mod samples;
pub mod scorecard;
pub mod soak;
pub mod stats;
pub mod storm;
pub mod sync_cost;
pub mod throughput;
pub mod tool;
pub mod windows;

pub use error::Error;

use std::path::PathBuf;

/// The workspace's root: the xtask's parent directory.
pub fn root() -> PathBuf {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR`, else `target/` of the
/// root.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}
