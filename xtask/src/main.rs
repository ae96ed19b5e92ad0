//! `cargo xtask TASK`: latscope's development tasks (see the crate's
//! documentation and `bench/README.md`).
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use xtask::{
    bench, compare, docgen, exit_stall, explain_overhead, fleet, footprint, fork, instructions,
    mcu, release_check, scorecard, soak, stats, storm, sync_cost, throughput, tool, Error,
};

/// latscope's development tasks.
#[derive(Parser)]
#[command(name = "cargo xtask", version)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Run a benchmark: the Rust ones here, the launchers of bench/ with
    /// this program beside them for their statistics.
    Bench(bench::Args),
    /// The footprint scorecard: the README's table from the typed results
    /// of one run of compare-cyclictest, footprint and host-throughput.
    Scorecard(scorecard::Args),
    /// The man pages and shell completions (default OUTDIR target/doc-gen).
    Docgen {
        /// Where to write man/ and completions/.
        #[arg(default_value = "target/doc-gen")]
        out: PathBuf,
    },
    /// Check every artefact of a release directory (scripts/release's).
    ReleaseCheck(release_check::Args),
    /// Statistics for the launchers of bench/ (reads standard input or
    /// the files named).
    #[command(subcommand)]
    Stats(stats::cli::Stats),
    /// compare-cyclictest's typed result and table from its raw outputs.
    CompareTable(compare::Args),
    /// explain-overhead's typed result and table from its raw outputs.
    #[command(hide = true)]
    ExplainOverheadTable(explain_overhead::Args),
    /// fleet's typed result and table from its raw outputs.
    #[command(hide = true)]
    FleetTable(fleet::Args),
    /// storm's typed result and table from its raw outputs.
    #[command(hide = true)]
    StormTable(storm::Args),
    /// sync-cost's typed result and table from its raw outputs.
    #[command(hide = true)]
    SyncCostTable(sync_cost::Args),
    /// soak's typed result and verdict from its raw outputs (exit status
    /// 1: FAIL).
    #[command(hide = true)]
    SoakTable(soak::Args),
    /// mcu's typed result and table from its raw outputs.
    #[command(hide = true)]
    McuTable(mcu::Args),
    /// instructions' typed result and table from callgrind's profiles.
    #[command(hide = true)]
    InstructionsTable(instructions::Args),
    /// exit-stall's typed result and table from its raw outputs.
    #[command(hide = true)]
    ExitStallTable(exit_stall::Args),
    /// fork-repro's typed result and table from its raw outputs.
    #[command(hide = true)]
    ForkTable(fork::Args),
    /// The footprint of the target binary (`bench footprint` runs it).
    #[command(hide = true)]
    Footprint(footprint::Args),
    /// latscope-host report's throughput (`bench host-throughput` runs it).
    #[command(hide = true)]
    HostThroughput(throughput::Args),
    /// The programs bench/'s launchers and the board fixtures run.
    Tool(tool::Args),
}

fn run(task: Task) -> Result<ExitCode, Error> {
    match task {
        Task::Bench(args) => bench::run(args),
        Task::Scorecard(args) => scorecard::run(&args),
        Task::Docgen { out } => {
            let files = docgen::generate(&out).map_err(Error::io(&out))?;
            for f in files {
                println!("{}", f.display());
            }
            Ok(())
        }
        Task::ReleaseCheck(args) => release_check::run(&args),
        Task::Stats(s) => stats::cli::run(s),
        Task::CompareTable(args) => compare::run(&args),
        Task::ExplainOverheadTable(args) => explain_overhead::run(&args),
        Task::FleetTable(args) => fleet::run(&args),
        Task::StormTable(args) => storm::run(&args),
        Task::SyncCostTable(args) => sync_cost::run(&args),
        Task::SoakTable(args) => {
            return soak::run(&args).map(|pass| {
                if pass {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            })
        }
        Task::McuTable(args) => mcu::run(&args),
        Task::InstructionsTable(args) => instructions::run(&args),
        Task::ExitStallTable(args) => exit_stall::run(&args),
        Task::ForkTable(args) => fork::run(&args),
        Task::Footprint(args) => footprint::run(&args),
        Task::HostThroughput(args) => throughput::run(&args),
        // a tool's exit status is its own
        Task::Tool(args) => return Ok(tool::run(args)),
    }
    .map(|()| ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    run(cli.task).unwrap_or_else(|e| {
        eprintln!("xtask: {e}");
        ExitCode::FAILURE
    })
}
