//! `latscope-host compare --gate`: baseline runs against candidate runs,
//! quantile by quantile, with core's [`gate`](latscope_core::slo::gate):
//! pass (any regression within the tolerance), fail (a regression beyond
//! it) or inconclusive, at a confidence that holds for the whole gate.

use std::fmt::Write;
use std::path::PathBuf;

use latscope_core::slo::gate::{gate, Comparison};
use latscope_core::slo::{worst, Outcome};
use latscope_core::stats::Ppm;
use serde_json::json;

use crate::console;
use crate::error::{Result, EXIT_FAILED, EXIT_OK};
use crate::input::Source;
use crate::report::{create_out, decode, goal_status, say_run};
use crate::summary::summarize;

/// The quantiles the gate compares (all CPUs of each run).
const QUANTILES: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// What `compare --gate` was asked to do.
#[derive(Debug, Clone)]
pub struct GatePlan {
    /// Baseline recordings (every complete run in them counts).
    pub baseline: Vec<String>,
    /// Candidate recordings.
    pub candidate: Vec<String>,
    /// The regression allowed, as a fraction (0.1 for 10 %).
    pub tolerance: f64,
    /// The confidence for the whole gate.
    pub confidence: Ppm,
    /// The JSON verdict document to this file.
    pub verdicts: Option<PathBuf>,
}

/// Every complete run's quantiles of `inputs`, and whether a run or input
/// was left out (unreadable or incomplete: said on standard error).
fn runs_of(inputs: &[String]) -> (Vec<[u64; QUANTILES.len()]>, bool) {
    let (mut runs, mut left_out) = (Vec::new(), false);
    for name in inputs {
        let d = match decode(&Source::from_arg(name)) {
            Ok(d) => d,
            Err(e) => {
                console::say(&e);
                left_out = true;
                continue;
            }
        };
        let link = d.session.link();
        for run in &d.session.agg.runs {
            if !say_run(name, run, &link) {
                left_out = true;
                continue;
            }
            let (_, all) = summarize(run);
            let q = |n: &str| {
                all.quantiles
                    .iter()
                    .find(|(k, _)| k == n)
                    .and_then(|(_, v)| *v)
            };
            match QUANTILES.map(q) {
                [Some(a), Some(b), Some(c), Some(d)] => runs.push([a, b, c, d]),
                _ => left_out = true,
            }
        }
    }
    (runs, left_out)
}

/// `latscope-host compare --gate`: the table on standard output, the
/// JSON document if asked for, and the exit status: 5 when a quantile
/// regressed beyond the tolerance, 1 when a run or input was left out, 6
/// when the gate is inconclusive, 0 when it passed.
pub fn run(plan: &GatePlan) -> Result<u8> {
    let out = plan
        .verdicts
        .as_ref()
        .map(|p| create_out(p).map(|f| (p, f)))
        .transpose()?;
    let (base, left_a) = runs_of(&plan.baseline);
    let (cand, left_b) = runs_of(&plan.candidate);
    let cols: Vec<(Vec<u64>, Vec<u64>)> = (0..QUANTILES.len())
        .map(|k| {
            (
                base.iter().map(|r| r[k]).collect(),
                cand.iter().map(|r| r[k]).collect(),
            )
        })
        .collect();
    let q: Vec<(&[u64], &[u64])> = cols
        .iter()
        .map(|(a, b)| (a.as_slice(), b.as_slice()))
        .collect();
    let mut cmp = [Comparison::NONE; QUANTILES.len()];
    gate(&q, plan.tolerance, plan.confidence, &mut cmp);
    let mut outcome = worst(cmp.iter().map(|c| c.outcome));
    if (left_a || left_b) && outcome == Outcome::Pass {
        outcome = Outcome::Inconclusive;
    }
    console::Std::Out.write(table(plan, &cmp, outcome, base.len(), cand.len()).as_bytes());
    if let Some((p, f)) = out {
        let doc = json!({
            "tolerance": plan.tolerance,
            "confidence": f64::from(plan.confidence.0) / 1e6,
            "confidence_holds_for": "gate",
            "method": "runs as the unit; Welch's t on log quantiles; Holm over the quantiles",
            "baseline_runs": base.len(),
            "candidate_runs": cand.len(),
            "left_out": left_a || left_b,
            "outcome": outcome.name(),
            "quantiles": QUANTILES.iter().zip(&cmp).map(|(n, c)| json!({
                "quantile": n,
                "outcome": c.outcome.name(),
                "ratio": finite(c.ratio),
                "lower": finite(c.lower),
                "upper": finite(c.upper),
                "level": c.level,
                "enough_runs": c.enough_runs,
            })).collect::<Vec<_>>(),
        });
        crate::report::write_text(Some((p, f)), &format!("{doc:#}\n"))?;
    }
    let code = if left_a || left_b {
        EXIT_FAILED
    } else {
        EXIT_OK
    };
    Ok(goal_status(outcome, code))
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// A geometric mean (ns) in µs, or `-`.
fn us(ns: f64) -> String {
    if ns.is_finite() {
        format!("{:.1}", ns / 1000.0)
    } else {
        "-".into()
    }
}

fn table(plan: &GatePlan, cmp: &[Comparison], outcome: Outcome, nb: usize, nc: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Gate: {nc} candidate run(s) against {nb} baseline run(s), all CPUs; tolerance +{} %, {} % for the gate (Holm over {} quantiles)",
        plan.tolerance * 100.0,
        f64::from(plan.confidence.0) / 1e4,
        QUANTILES.len()
    );
    let _ = writeln!(
        s,
        "{:<8} {:>14} {:>14} {:>8}  {:<18} verdict",
        "quantile", "baseline µs", "candidate µs", "ratio", "interval"
    );
    let mut decided_by = None;
    for (name, c) in QUANTILES.iter().zip(cmp) {
        let interval = if c.lower.is_finite() {
            format!("[{:.2}, {:.2}]", c.lower, c.upper)
        } else {
            "-".into()
        };
        let why = if c.enough_runs {
            ""
        } else {
            " (fewer than 2 runs a side)"
        };
        let _ = writeln!(
            s,
            "{:<8} {:>14} {:>14} {:>8}  {:<18} {}{why}",
            name,
            us(c.baseline_ns),
            us(c.candidate_ns),
            if c.ratio.is_finite() {
                format!("{:.2}x", c.ratio)
            } else {
                "-".into()
            },
            interval,
            c.outcome.name().to_uppercase()
        );
        if c.outcome == outcome && decided_by.is_none() {
            decided_by = Some((name, c));
        }
    }
    let _ = match (outcome, decided_by) {
        (Outcome::Fail, Some((n, c))) => writeln!(
            s,
            "gate: FAIL: {n} is {:.2}x the baseline, at least {:.2}x at {:.2} % (over +{} %)",
            c.ratio,
            c.lower,
            c.level * 100.0,
            plan.tolerance * 100.0
        ),
        (o, _) => writeln!(s, "gate: {}", o.name().to_uppercase()),
    };
    s
}
