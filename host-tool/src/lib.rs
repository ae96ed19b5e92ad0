//! The library of `latscope-host`: every part of the host tool, so that the
//! binary is its command line only and the tests and fuzz targets can drive
//! the decoding directly (e.g. with a counting allocator, to bound the
//! memory a forged stream costs).
//!
//! Public is what the binary, the tests and the fuzz targets use; the rest
//! is `pub(crate)`:
//!
//! * [`cli`]: the command line (the binary is [`cli::main`]), and its clap
//!   [`cli::command`] for the man pages and completions;
//! * the subcommands, each a plan in and an exit status out:
//!   [`record::run`], [`report::run`], [`compare::run`], [`trend::run`],
//!   [`synth::run`], [`simulate::run`], [`explain::run`];
//! * [`session::Session`]: one input's decoding, bytes in, runs out, and
//!   [`report::render`] of what it decoded (the fuzz targets);
//! * [`explain::explain`]: a spike's causes from a trace.dat's bytes (the
//!   fuzz targets);
//! * [`synth::Synth`]: a synthetic target's frame stream (the tests);
//! * [`input::Source`], [`console`], [`error`]: inputs, the standard
//!   streams, the one error type;
//! * [`budget::STREAM_LIMIT`], [`aggregate::SERIES_POINTS`],
//!   [`trend::MAX_POINTS`] and [`trend::MAX_BOARDS`]: the memory bounds the
//!   tests check.
//!
//! Inside, [`session`] feeds [`aggregate`]; `summary` and `plot` make the
//! figures [`report`], [`compare`] and [`trend`] show.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod aggregate;
pub mod budget;
pub mod cli;
pub mod compare;
pub mod console;
pub mod error;
pub mod evidence;
pub mod explain;
pub mod gate;
pub mod input;
mod platform;
mod plot;
pub mod record;
pub mod report;
pub mod session;
pub mod simulate;
mod summary;
pub mod synth;
pub mod trend;
