//! latscope, the target program: a real-time wake-up latency measuring
//! process on rustix, compatible with cyclictest where they overlap.
//!
//! The folders follow the threads of a run:
//!
//! * `config`: what the command line asks for, and which
//!   measuring thread runs where;
//! * `app`: the main thread: set-up, start, signals, the end;
//! * `rt`: the measuring threads: set-up, start handshake, hot loop;
//! * `sender`: the sender thread: publishing the frame stream, the live
//!   view, spike attribution, `-v`;
//! * `output`: cyclictest's text and `--json`, and which standard stream
//!   the human output goes to;
//! * `link`: where the stream goes (stdout, file, TCP, serial);
//! * `linux`: the system below all of them (raw syscalls, the only
//!   `unsafe`; clock, procfs, seccomp, PID 1, the exit discipline, tracefs);
//! * `bench`: hidden options for the proof scripts and tests.
//!
//! Dependencies point one way, each module using only those before it:
//! `error`, `linux`, `bench`, `config`, `output`, `link`, `rt`, `sender`,
//! `app`, then the two public interfaces. Inside `config`, the option
//! table and the number readers come before the parser that uses them.
//! A test (`layering.rs`) reads the sources and holds them to it.
//!
//! The binary is a thin `main` over [`main`]. The only other public items
//! are the [`testing`] interface, for the integration tests and the fuzz
//! targets, and [`option_docs`], the option table read-only, for the
//! generator of the man page and the shell completions.
#![deny(unsafe_code)]
#![deny(missing_docs)]

mod app;
mod bench;
mod config;
mod error;
#[cfg(test)]
mod layering;
mod link;
mod linux;
pub mod option_docs;
mod output;
mod rt;
mod sender;
pub mod testing;

pub use app::main;
pub use error::Error;
