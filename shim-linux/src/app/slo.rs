//! `--slo`: the run's latency goals decided at its end, each thread's
//! verdicts in `#` lines after the summary (core's [`decide`], the same
//! verdicts `latscope-host report --slo` gives from the recording).

use std::fmt::Write;

use latscope_core::decimal::Fixed;
use latscope_core::slo::{decide, worst, Goal, Goals, Observed, Outcome, Verdict, Why};

use crate::error::{EXIT_FAILED, EXIT_GOAL_FAILED, EXIT_GOAL_INCONCLUSIVE};
use crate::sender::View;

/// The verdicts of `views` on `goals` as `#` lines, and the exit status
/// they make of `status`: a failed goal 5 (over everything), else 1
/// stays, else an inconclusive goal 6, else `status`. `complete`: no
/// measuring thread failed and the self-check found no defect.
pub fn verdicts(goals: &Goals, views: &[View], complete: bool, status: i32) -> (String, i32) {
    let mut closed = Vec::with_capacity(views.len());
    for v in views {
        let mut e = v
            .exceedances
            .as_ref()
            .map(|(e, _)| e.clone())
            .unwrap_or_default();
        e.end_block();
        closed.push(e);
    }
    let mut observed = Vec::with_capacity(views.len());
    for (v, exceedances) in views.iter().zip(&closed) {
        observed.push(Observed {
            exceedances,
            max_ns: (v.counters.totals.count > 0).then_some(v.counters.totals.max),
            missed: v.counters.missed,
            majflt: v.faults.majflt,
            elapsed_ns: v.log.stats().elapsed_ns,
        });
    }
    let mut out = vec![Verdict::UNDECIDED; views.len() * goals.goals().len()];
    let n = decide(goals, &observed, complete, &mut out);
    out.truncate(n);
    let run_outcome = worst(out.iter().map(|v| v.outcome));
    let mut text = String::with_capacity(128 * (out.len() + 1));
    let _ = writeln!(
        text,
        "# Latency goals {goals} (for the run): {}",
        word(run_outcome)
    );
    for v in &out {
        line(&mut text, v, &observed[v.thread]);
    }
    let status = match run_outcome {
        Outcome::Fail => EXIT_GOAL_FAILED,
        _ if status == EXIT_FAILED => status,
        Outcome::Inconclusive => EXIT_GOAL_INCONCLUSIVE,
        Outcome::Pass => status,
    };
    (text, status)
}

/// The outcome's word in capitals, as the `#` lines give a verdict
/// (static strings: an uppercased copy of [`Outcome::name`] costs the
/// static binary 300 B more).
fn word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "PASS",
        Outcome::Fail => "FAIL",
        Outcome::Inconclusive => "INCONCLUSIVE",
    }
}

/// `share` as a percentage with 3 decimals.
fn pct(share: f64) -> Fixed {
    Fixed(share * 100.0, 3)
}

/// One verdict's `#` line.
fn line(out: &mut String, v: &Verdict, obs: &Observed<'_>) {
    let _ = write!(out, "# T:{} {}: {}", v.thread, v.goal, word(v.outcome));
    let _ = match v.goal {
        Goal::Max { .. } => match obs.max_ns {
            Some(ns) => write!(out, ", observed {} us", Fixed(ns as f64 / 1000.0, 1)),
            None => Ok(()),
        },
        Goal::Missed { .. } => write!(out, ", observed {}", obs.missed),
        Goal::Majflt { .. } => write!(out, ", observed {}", obs.majflt),
        Goal::Quantile { .. } => Ok(()),
    };
    if let Some(b) = v.bound {
        let _ = write!(
            out,
            ", share above the limit in [{} %, {} %], allowed {} %, {} % one-sided, {} blocks",
            pct(b.lower),
            pct(b.upper),
            pct(b.allowed),
            Fixed(b.level * 100.0, 2),
            b.blocks
        );
    }
    if v.why != Why::Interval {
        let _ = write!(out, " ({})", v.why.text());
    }
    if let Some(ns) = v.more_ns {
        let _ = write!(
            out,
            "; about {} s more would decide",
            ns.div_ceil(1_000_000_000)
        );
    }
    out.push('\n');
}
