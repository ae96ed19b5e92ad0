//! `--slo`: the run's latency goals decided at its end, each thread's
//! verdicts in `#` lines after the summary (core's [`decide`], the same
//! verdicts `latscope-host report --slo` gives from the recording).

use std::fmt::Write;

use latscope_core::decimal::Fixed;
use latscope_core::slo::{decide, Goal, Goals, Observed, Outcome, Verdict, Why};

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
    let blank = Verdict {
        thread: 0,
        goal: Goal::Missed { limit: 0 },
        outcome: Outcome::Inconclusive,
        why: Why::NoSamples,
        bound: None,
        more_ns: None,
    };
    let mut out = vec![blank; views.len() * goals.goals().len()];
    let n = decide(goals, &observed, complete, &mut out);
    out.truncate(n);
    let worst = out.iter().fold(Outcome::Pass, |w, v| match (w, v.outcome) {
        (Outcome::Fail, _) | (_, Outcome::Fail) => Outcome::Fail,
        (Outcome::Inconclusive, _) | (_, Outcome::Inconclusive) => Outcome::Inconclusive,
        _ => Outcome::Pass,
    });
    let mut text = String::with_capacity(128 * (out.len() + 1));
    let _ = writeln!(
        text,
        "# Latency goals {goals} (for the run): {}",
        word(worst)
    );
    for v in &out {
        line(&mut text, v, &observed[v.thread]);
    }
    let status = match worst {
        Outcome::Fail => EXIT_GOAL_FAILED,
        _ if status == EXIT_FAILED => status,
        Outcome::Inconclusive => EXIT_GOAL_INCONCLUSIVE,
        Outcome::Pass => status,
    };
    (text, status)
}

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
    let why = match v.why {
        Why::Observed => " (as observed)",
        Why::Interval => "",
        Why::Undecided => " (the interval holds the allowance)",
        Why::AtLimit => " (at the allowance: no run length decides)",
        Why::TooFewBlocks => " (fewer than 10 blocks)",
        Why::NoSamples => " (no samples)",
        Why::Incomplete => " (the run did not end well)",
    };
    out.push_str(why);
    if let Some(ns) = v.more_ns {
        let _ = write!(
            out,
            "; about {} s more would decide",
            ns.div_ceil(1_000_000_000)
        );
    }
    out.push('\n');
}
