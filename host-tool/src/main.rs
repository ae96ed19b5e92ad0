//! `latscope-host`: records, decodes, reports and plots the frame stream of
//! the `latscope` latency measurement program.
//!
//! This file is the entry point only: the command line is the library's
//! [`latscope_host::cli`].
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    latscope_host::cli::main()
}
