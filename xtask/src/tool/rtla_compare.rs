//! rtla beside latscope on the board's UART-flood runs: for each kept run
//! (`NAME=DIR/flood-pNN`, the stem of the board test's kept
//! `flood-pNN.lsr` and `flood-pNN.console.txt`), rtla's verdict per run
//! and in all, what latscope's explained spikes blame, how well the two
//! agree, and latscope's cause totals, as markdown, then rtla's outputs.
//!
//! Usage: `xtask tool rtla-compare [--irq N] NAME=STEM...`
//!
//! Test helper, never part of the target program.

use std::collections::BTreeMap;
use std::process::ExitCode;

use latscope_core::explain::Culprit;
use latscope_testkit::board::decode;
use latscope_testkit::kept_runs::{self, KeptRuns};
use latscope_testkit::rtla;

fn report(name: &str, stem: &str, irq: u32) -> Result<String, String> {
    let read = |ext: &str| {
        let p = format!("{stem}.{ext}");
        std::fs::read(&p).map_err(|e| format!("{p}: {e}"))
    };
    let console = String::from_utf8_lossy(&read("console.txt")?).into_owned();
    let sum = decode(&read("lsr")?);
    let runs = rtla::runs(&console);
    let mut out = format!("### {name}\n\n| rtla run | verdict | blames |\n|---|---|---|\n");
    for (i, r) in runs.iter().enumerate() {
        let v = r.verdict();
        let blames = v.as_deref().map_or("-".to_string(), |v| {
            format!("{:?}", rtla::rtla_blame(v, irq))
        });
        out += &format!(
            "| {} | {} | {blames} |\n",
            i + 1,
            v.as_deref().unwrap_or("(no sample over the threshold)"),
        );
    }
    let theirs = rtla::run_blames(&runs, irq);
    // rtla measures CPU 0 (`-c 0`), where the console IRQ goes
    let (ours, on_cpu0) = rtla::spike_blames(&sum.explained, 0, irq);
    let tally = |b: &[rtla::Blame]| {
        rtla::tally(b)
            .iter()
            .map(|(b, n)| format!("{b:?} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out += &format!(
        "\nrtla's {} runs over the threshold blame: {}; latscope's {} spikes on CPU 0 explained \
         from the trace (of {} explained there) blame: {}; agreement p = {:.3} with the flood's \
         two effects (late timer, IRQ thread) as one (below 1e-4 they disagree), {:.2e} with \
         them apart\n\n",
        theirs.len(),
        tally(&theirs),
        ours.len(),
        on_cpu0,
        tally(&ours),
        rtla::agreement(&rtla::flood_blames(&theirs), &rtla::flood_blames(&ours)),
        rtla::agreement(&theirs, &ours),
    );
    // latscope's totals by cause, with the untraced reasons apart.
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut all = 0u64;
    for a in sum.explained.iter().filter(|a| !a.coarse) {
        all += a.latency_ns;
        for c in &a.causes {
            let key = match &c.culprit {
                // irqs or preemption off, trace paused, lost, lost (count
                // unknown), beyond the history
                Culprit::Untraced(_) => c.label().to_string(),
                Culprit::Irq { irq, name, .. } => format!("irq {irq} {name}"),
                Culprit::Task(t) => format!("task {}", t.comm),
                Culprit::TimerDelay { running: Some(t) } => {
                    format!("{:?} {}", c.kind(), t.comm)
                }
                Culprit::Vector { name, .. } => format!("{:?} {name}", c.kind()),
                Culprit::Softirq(s) => format!("{:?} {}", c.kind(), s.name()),
                _ => format!("{:?}", c.kind()),
            };
            *totals.entry(key).or_default() += c.ns;
        }
    }
    let mut ranked: Vec<(String, u64)> = totals.into_iter().collect();
    ranked.sort_by_key(|r| std::cmp::Reverse(r.1));
    out += "| latscope cause | time | share of the explained time |\n|---|---|---|\n";
    for (k, ns) in ranked.iter().take(8) {
        out += &format!(
            "| {k} | {:.1} µs | {:.1} % |\n",
            *ns as f64 / 1e3,
            if all > 0 {
                100.0 * *ns as f64 / all as f64
            } else {
                0.0
            }
        );
    }
    out += "\n<details><summary>rtla's outputs</summary>\n\n```\n";
    for r in &runs {
        out += &r.text;
        out += "\n";
    }
    out += "```\n\n</details>\n";
    Ok(out)
}

/// `cargo xtask tool rtla-compare ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let KeptRuns { irq, runs } = match kept_runs::parse("xtask tool rtla-compare", "STEM", args) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    for (name, stem) in runs {
        match report(&name, &stem, irq) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("xtask tool rtla-compare: {e}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}
