//! `cargo xtask bench NAME [ARGS]`: one entry for every benchmark. The
//! typed ones run here; the launchers of `bench/` run with `XTASK` set
//! to this program, which computes their figures and statistics.

use std::process::Command;

use clap::{Args as ClapArgs, Parser, ValueEnum};

use crate::process::status;
use crate::{footprint, frame_instructions, throughput, Error};

/// The benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Bench {
    /// latscope against cyclictest in alternating pairs.
    CompareCyclictest,
    /// The target binary's size, by crate and function.
    Footprint,
    /// latscope-host report's throughput.
    HostThroughput,
    /// Whether latscope adds latency of its own against cyclictest.
    MaxLatency,
    /// Instructions per loop of the measuring thread (callgrind).
    Instructions,
    /// The std floor's size.
    StdFloor,
    /// An RT thread beside a fork loop.
    ForkRepro,
    /// latscope's exit beside cyclictest.
    ExitStall,
    /// Does attribution change what it measures?
    ExplainOverhead,
    /// The stream's load on a 115200-baud line.
    LinkBudget,
    /// A spike storm on a slow line.
    Storm,
    /// N targets into one recorder.
    Fleet,
    /// The host's memory under forged streams.
    ForgedMemory,
    /// `/metrics` under hostile clients.
    MetricsSiege,
    /// The Cortex-M firmware's footprint and latency.
    Mcu,
    /// The PREEMPT_RT board's UART-flood figures.
    FloodFigures,
    /// rtla beside latscope on the board.
    RtlaCompare,
    /// One hour at 10 kHz.
    Soak,
    /// The cost of durable acknowledgements.
    SyncCost,
    /// The fault harness's soak.
    FaultsSoak,
    /// The board's trace event rates.
    TraceRates,
    /// The sender's stack.
    SenderStack,
    /// Instructions per frame of the encoder.
    FrameInstructions,
    /// The regression gate's false alarms over A/A gates.
    GateAa,
}

/// `cargo xtask bench`.
#[derive(ClapArgs)]
pub struct Args {
    /// The benchmark.
    #[arg(value_enum)]
    pub name: Bench,
    /// Its arguments (`--help` for its own).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct FootprintCli {
    #[command(flatten)]
    args: footprint::Args,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct ThroughputCli {
    #[command(flatten)]
    args: throughput::Args,
}

#[derive(Parser)]
#[command(no_binary_name = true)]
struct FrameInstructionsCli {
    #[command(flatten)]
    args: frame_instructions::Args,
}

fn usage(e: clap::Error) -> Error {
    Error::Usage(e.to_string())
}

/// Run one benchmark.
///
/// # Errors
///
/// Its arguments, or the benchmark's own failure.
pub fn run(args: Args) -> Result<(), Error> {
    match args.name {
        Bench::Footprint => {
            let cli = FootprintCli::try_parse_from(&args.args).map_err(usage)?;
            footprint::run(&cli.args)
        }
        Bench::HostThroughput => {
            let cli = ThroughputCli::try_parse_from(&args.args).map_err(usage)?;
            throughput::run(&cli.args)
        }
        Bench::FrameInstructions => {
            let cli = FrameInstructionsCli::try_parse_from(&args.args).map_err(usage)?;
            frame_instructions::run(&cli.args)
        }
        launcher => launch(launcher, &args.args),
    }
}

/// Run `bench/NAME` with this program as its `XTASK`.
fn launch(bench: Bench, args: &[String]) -> Result<(), Error> {
    let name = bench
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let script = crate::root().join("bench").join(&name);
    let me = std::env::current_exe().map_err(Error::io("the xtask's own path"))?;
    status(
        Command::new("bash")
            .arg(&script)
            .args(args)
            .env("XTASK", me),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_launcher_has_its_script_and_every_script_a_name() {
        let dir = crate::root().join("bench");
        let mut names = Vec::new();
        for b in Bench::value_variants() {
            let name = b
                .to_possible_value()
                .expect("a name")
                .get_name()
                .to_string();
            assert!(dir.join(&name).is_file(), "bench/{name} is missing");
            names.push(name);
        }
        for entry in std::fs::read_dir(&dir).expect("bench/") {
            let entry = entry.expect("an entry");
            let file = entry.file_name().to_string_lossy().to_string();
            let skip = ["README.md", "lib.sh", "scorecard", "results"];
            if !skip.contains(&file.as_str()) {
                assert!(
                    names.contains(&file),
                    "bench/{file} is not a `cargo xtask bench` name"
                );
            }
        }
    }
}
