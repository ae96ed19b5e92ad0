//! The library of `latscope-host`: every part of the host tool, so that the
//! binary is its command line only and the tests and fuzz targets can drive
//! the decoding directly (e.g. with a counting allocator, to bound the
//! memory a forged stream costs).
//!
//! * [`session`]: one input's decoding, bytes in, runs out ([`aggregate`]);
//! * [`record`]: recording one stream or a fleet, the live view, metrics;
//! * [`report`], [`summary`], [`plot`], [`compare`]: the outputs;
//! * [`input`], [`console`], [`error`]: inputs, the standard streams, the
//!   one error type;
//! * [`synth`], [`simulate`]: synthetic recordings and targets.
#![forbid(unsafe_code)]

pub mod aggregate;
pub mod budget;
pub mod compare;
pub mod console;
pub mod error;
pub mod input;
pub mod plot;
pub mod record;
pub mod report;
pub mod session;
pub mod simulate;
pub mod summary;
pub mod synth;
