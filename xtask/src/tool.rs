//! `cargo xtask tool NAME [ARGS]`: the programs the benchmarks' launchers
//! and the board fixtures run. Each reads the raw outputs of a run (a
//! recording, a board's console, rtla's files) or drives one (a forged
//! stream, a paced line, hostile clients), with the test support of
//! `latscope-testkit`. Their arguments are their own (`key=value` lists
//! and positional numbers, as the launchers pass them).
//!
//! The helpers that tests exec themselves (the burster, the evictor,
//! fork_repro) stay binaries of the test crate.

use std::process::ExitCode;

use clap::{Args as ClapArgs, ValueEnum};

mod board_fixtures;
mod flood_figures;
mod forge;
mod link_meter;
mod metrics_siege;
mod rtla_compare;
mod timerlat_fixtures;
mod trace_rates;

pub use link_meter::frame_kinds;

/// The tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Tool {
    /// Capture the core's decoder fixtures from both emulated boards.
    BoardFixtures,
    /// The figures of the board's UART-flood recordings.
    FloodFigures,
    /// A forged stream on standard output (`bench/forged-memory`).
    Forge,
    /// A stream's load on a slow line; a paced pty relay.
    LinkMeter,
    /// `/metrics` under hostile clients, one round.
    MetricsSiege,
    /// rtla's timerlat beside latscope's explanations on the board.
    RtlaCompare,
    /// Capture the kernel's timerlat tracer and rtla's `timerlat hist` on the aarch64 board.
    TimerlatFixtures,
    /// The board's trace event rates under a console flood.
    TraceRates,
}

/// `cargo xtask tool`.
#[derive(ClapArgs)]
pub struct Args {
    /// The tool.
    #[arg(value_enum)]
    pub name: Tool,
    /// Its arguments.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Runs a tool; its exit status is the task's.
pub fn run(args: Args) -> ExitCode {
    match args.name {
        Tool::BoardFixtures => board_fixtures::main(args.args),
        Tool::FloodFigures => flood_figures::main(args.args),
        Tool::Forge => forge::main(args.args),
        Tool::LinkMeter => link_meter::main(args.args),
        Tool::MetricsSiege => metrics_siege::main(args.args),
        Tool::RtlaCompare => rtla_compare::main(args.args),
        Tool::TimerlatFixtures => timerlat_fixtures::main(args.args),
        Tool::TraceRates => trace_rates::main(args.args),
    }
}
