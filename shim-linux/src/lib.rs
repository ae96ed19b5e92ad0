//! latscope, the target program: a real-time wake-up latency measuring
//! process on rustix, compatible with cyclictest where they overlap.
//!
//! The binary is a thin `main` over [`run::main_entry`]; the modules are
//! public so that integration tests can drive the measuring loop.
//!
//! * [`cli`], [`cpus`]: the command line and the thread plan;
//! * [`sys`]: the raw syscalls rustix lacks (the only `unsafe` code);
//! * [`clock`], [`measure`]: the Linux clock and the measuring threads;
//! * [`sender`], [`stream`]: the non-RT sender thread and the stream links;
//! * [`human`], [`json`]: cyclictest's output formats;
//! * [`procfs`]: fault counts and system facts;
//! * [`exit`]: the exit discipline and the panic hook;
//! * [`explain`]: spike attribution through a private tracefs instance;
//! * [`selfcheck`]: `--self-check` (seccomp);
//! * [`init`]: PID 1 mode;
//! * [`run`]: one run, start to end.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod cli;
pub mod clock;
pub mod cpus;
pub mod error;
pub mod exit;
pub mod explain;
pub mod human;
pub mod init;
pub mod json;
pub mod measure;
pub mod procfs;
pub mod run;
pub mod selfcheck;
pub mod sender;
pub mod stream;
pub mod sys;

pub use error::Error;
