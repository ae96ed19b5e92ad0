//! # latscope-core
//!
//! The `no_std`, allocation-free heart of latscope, a real-time latency
//! measurement tool:
//!
//! * [`layout`]: the histogram's bucket edges (1 µs linear, then ≤ 1 %
//!   log-linear buckets up to past 60 s; nothing overflows);
//! * [`seqlock`]: the measuring thread's shared histogram (one RT writer,
//!   seqlock readers);
//! * [`hist`] and [`stats`]: plain histograms, merging, quantiles and spread;
//! * [`cycle`]: deadlines, latency and missed periods, driven by a [`cycle::Clock`];
//! * [`explain`]: a tracefs text parser and a classifier that attributes a
//!   spike's time to IRQs, softirqs and tasks, exactly;
//! * [`ringbuf`]: the kernel's binary trace (`trace_pipe_raw` pages)
//!   decoded into the classifier's events;
//! * [`tracedat`]: trace.dat files (version 6) of a spike's window, written
//!   and read, for trace-cmd, KernelShark and the host;
//! * [`slo`]: latency goals, and their verdicts with a stated confidence
//!   from blocks of the run;
//! * [`cyclictest`]: cyclictest's text and JSON formats, for target and host;
//! * [`rtla`]: rtla's `timerlat hist` text, for latscope invoked as `rtla`;
//! * `console`: the rule both programs' standard streams follow after a
//!   failed write (where the target has 64-bit atomics);
//! * [`tz`]: UTC offsets from TZif data and `TZ` rules, and the calendar;
//! * [`wire`]: frames (postcard + CRC-32 + COBS) and a streaming decoder;
//! * [`protocol`]: the state machines on top of the frames: a
//!   [`protocol::Reporter`] that turns shared histograms into frames on the
//!   protocol's schedule, and a [`protocol::Assembler`] that turns frames
//!   back into exact histograms.
//!
//! All memory is sized at compile time and every type that a measuring
//! thread holds is const-constructible.
//!
//! ## Example
//!
//! A frame as a target sends it, and back as a host decodes it:
//!
//! ```
//! use latscope_core::wire::{
//!     self, Body, Decoder, Frame, Level, LogLine, MAX_FRAME, PROTOCOL_VERSION,
//! };
//!
//! let frame = Frame {
//!     version: PROTOCOL_VERSION,
//!     seq: 1,
//!     body: Body::Log(LogLine {
//!         level: Level::Info,
//!         text: wire::bounded("hello from the target"),
//!     }),
//! };
//! let mut line = [0u8; MAX_FRAME];
//! let n = wire::encode(&frame, &mut line)?;
//! let mut decoder = Decoder::<MAX_FRAME>::new();
//! let mut frames = decoder.frames(&line[..n]);
//! assert_eq!(frames.next().map(|f| f.map(|f| f.body)), Some(Ok(frame.body)));
//! assert!(frames.next().is_none());
//! # Ok::<(), latscope_core::Error>(())
//! ```
//!
//! ## Features
//!
//! * `defmt`: `defmt::Format` on the public types, for bare-metal targets
//!   that log with defmt;
//! * `std`: the decoder's CRC picks the CPU's carry-less multiply at run
//!   time (hosts).
//!
//! Neither is on by default: the crate builds for `thumbv7em-none-eabihf`
//! as it is.
//!
//! ## Minimum Rust
//!
//! Rust 1.88 (the workspace's `rust-version`).
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::missing_errors_doc)]

#[cfg(target_has_atomic = "64")]
pub mod console;
pub mod cycle;
pub mod cyclictest;
pub mod decimal;
pub mod error;
pub mod explain;
pub mod hist;
pub mod layout;
#[cfg(test)]
mod proptest_cases;
pub mod protocol;
pub mod ringbuf;
pub mod rtla;
pub mod seqlock;
pub mod slo;
pub mod sort;
pub mod stats;
pub mod timerlat;
pub mod tracedat;
pub mod tz;
pub mod wire;

pub use error::Error;
