//! `report --slo`: every run's verdicts on a list of latency goals, with
//! the interval that decided each, as a table, a JSON document, JUnit XML
//! and LAVA result lines.

use std::fmt::Write;

use latscope_core::slo::{self, Goal, Goals, Observed, Outcome, Verdict, Why};
use latscope_core::stats;
use latscope_core::wire::LinkStats;
use serde_json::{json, Value};

use crate::aggregate::Run;
use crate::record::{board_name, sanitize};
use crate::summary::us;

use super::markup;

/// One thread's verdict on one goal, with what was observed.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// The verdict (its `thread` is the thread's index).
    pub verdict: Verdict,
    /// The thread's CPU, if it was pinned.
    pub cpu: Option<u16>,
    /// What was observed: the quantile or the maximum (ns), or the count.
    pub observed: Option<u64>,
}

/// The verdicts of one run.
#[derive(Debug, Clone)]
pub(crate) struct RunVerdicts {
    /// The input it was read from.
    pub input: String,
    /// Its board.
    pub board: String,
    /// Its run id.
    pub run_id: u64,
    /// Whether it is complete and every thread's exceedances hold every sample.
    pub complete: bool,
    /// Thread by thread, in goal order.
    pub rows: Vec<Row>,
}

impl RunVerdicts {
    /// The run's outcome: fail if any goal failed, else inconclusive if
    /// any is, else pass (a run without threads is inconclusive).
    pub(crate) fn outcome(&self) -> Outcome {
        slo::worst(self.rows.iter().map(|r| r.verdict.outcome))
    }
}

/// The verdicts of `run`, read from `input` with link statistics `link`,
/// whose threads tallied `goals`.
pub(crate) fn of_run(input: &str, run: &Run, link: &LinkStats, goals: &Goals) -> RunVerdicts {
    let mut complete = super::run_ok(run, link);
    let tallies: Vec<_> = run
        .threads
        .iter()
        .map(|t| {
            let (exc, whole) = t
                .exceedances()
                .unwrap_or_else(|| (slo::Exceedances::new(), false));
            complete &= whole;
            exc
        })
        .collect();
    let observed: Vec<Observed<'_>> = run
        .threads
        .iter()
        .zip(&tallies)
        .map(|(t, exc)| {
            let s = t.stats().unwrap_or_default();
            Observed {
                exceedances: exc,
                max_ns: (s.count > 0).then_some(s.max),
                missed: s.missed,
                majflt: s.majflt,
                elapsed_ns: s.elapsed_ns,
            }
        })
        .collect();
    let mut out = vec![Verdict::UNDECIDED; observed.len() * goals.goals().len()];
    let n = slo::decide(goals, &observed, complete, &mut out);
    out.truncate(n);
    let rows = out
        .into_iter()
        .map(|verdict| {
            let t = &run.threads[verdict.thread];
            let s = t.stats().unwrap_or_default();
            let observed = match verdict.goal {
                Goal::Quantile { q, .. } => {
                    stats::quantile(&run.layout, &t.hist(), q, s.max).filter(|_| s.count > 0)
                }
                Goal::Max { .. } => (s.count > 0).then_some(s.max),
                Goal::Missed { .. } => Some(s.missed),
                Goal::Majflt { .. } => Some(s.majflt),
            };
            Row {
                verdict,
                cpu: t.info.and_then(|i| i.cpu),
                observed,
            }
        })
        .collect();
    RunVerdicts {
        input: input.into(),
        board: board_name(&run.hello).into(),
        run_id: run.hello.run_id,
        complete,
        rows,
    }
}

/// Why, as a JSON key.
fn why_key(w: Why) -> &'static str {
    match w {
        Why::Observed => "observed",
        Why::Interval => "interval",
        Why::Undecided => "undecided",
        Why::AtLimit => "at_limit",
        Why::TooFewBlocks => "too_few_blocks",
        Why::NoSamples => "no_samples",
        Why::Incomplete => "incomplete",
    }
}

/// The observed value with its unit.
fn observed_text(g: Goal, v: Option<u64>) -> String {
    match (v, g.is_latency()) {
        (None, _) => "-".into(),
        (Some(ns), true) => format!("{} µs", us(ns)),
        (Some(n), false) => n.to_string(),
    }
}

/// A share as a percentage.
fn pct(x: f64) -> String {
    format!("{:.3} %", x * 100.0)
}

/// The evidence of a verdict, in one line.
pub(crate) fn evidence(v: &Verdict) -> String {
    let mut s = String::new();
    if let (Goal::Quantile { limit_ns, .. }, Some(b)) = (v.goal, v.bound) {
        let lim = format!("{} µs", us(limit_ns));
        let _ = match v.outcome {
            Outcome::Pass => write!(s, "share above {lim} <= {}", pct(b.upper)),
            Outcome::Fail => write!(s, "share above {lim} >= {}", pct(b.lower)),
            Outcome::Inconclusive => write!(
                s,
                "share above {lim} in [{}, {}]",
                pct(b.lower),
                pct(b.upper)
            ),
        };
        let _ = write!(
            s,
            ", allowed {}; {:.2} % one-sided; {} blocks, {} samples, spread x{:.1}",
            pct(b.allowed),
            b.level * 100.0,
            b.blocks,
            b.samples,
            b.design_effect
        );
    }
    if v.why != Why::Interval {
        if !s.is_empty() {
            s.push_str("; ");
        }
        s.push_str(v.why.text());
    }
    if let Some(ns) = v.more_ns {
        let _ = write!(
            s,
            "; about {} s more would decide",
            (ns as f64 / 1e9).ceil()
        );
    }
    s
}

/// The table of one run's verdicts, as the text report ends.
pub(crate) fn text(out: &mut String, goals: &Goals, r: &RunVerdicts) {
    let _ = writeln!(
        out,
        "\nLatency goals {goals} ({} for the run: Holm over every thread's quantile goals)",
        pct_conf(goals)
    );
    let _ = writeln!(
        out,
        "run {:016x} of {}: {}",
        r.run_id,
        r.board,
        r.outcome().name().to_uppercase()
    );
    let _ = writeln!(
        out,
        "{:<8} {:<16} {:>12}  {:<13} evidence",
        "thread", "goal", "observed", "verdict"
    );
    for row in &r.rows {
        let v = &row.verdict;
        let _ = writeln!(
            out,
            "{:<8} {:<16} {:>12}  {:<13} {}",
            thread_label(v.thread, row.cpu),
            v.goal.to_string(),
            observed_text(v.goal, row.observed),
            v.outcome.name().to_uppercase(),
            evidence(v)
        );
    }
}

fn pct_conf(goals: &Goals) -> String {
    let c = f64::from(goals.confidence().0) / 1e4;
    format!("{c} %")
}

fn thread_label(i: usize, cpu: Option<u16>) -> String {
    match cpu {
        Some(c) => format!("T{i}/cpu{c}"),
        None => format!("T{i}"),
    }
}

/// The JSON verdict document of every run.
pub(crate) fn json(goals: &Goals, runs: &[RunVerdicts]) -> Value {
    let outcome = slo::worst(runs.iter().map(RunVerdicts::outcome));
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            let verdicts: Vec<Value> = r.rows.iter().map(row_json).collect();
            json!({
                "input": r.input,
                "board": r.board,
                "run_id": format!("{:016x}", r.run_id),
                "complete": r.complete,
                "outcome": r.outcome().name(),
                "verdicts": verdicts,
            })
        })
        .collect();
    json!({
        "goals": goals.to_string(),
        "confidence": f64::from(goals.confidence().0) / 1e6,
        "confidence_holds_for": "run",
        "method": "per-block shares, batch-means spread, Hall's skewness correction, Holm",
        "outcome": outcome.name(),
        "runs": runs,
    })
}

fn row_json(row: &Row) -> Value {
    let v = &row.verdict;
    let mut o = json!({
        "thread": v.thread,
        "cpu": row.cpu,
        "goal": v.goal.to_string(),
        "metric": v.goal.metric().to_string(),
        "outcome": v.outcome.name(),
        "why": why_key(v.why),
        "more_s": v.more_ns.map(|ns| ns as f64 / 1e9),
    });
    if v.goal.is_latency() {
        o["limit_ns"] = json!(v.goal.limit());
        o["observed_ns"] = json!(row.observed);
    } else {
        o["limit"] = json!(v.goal.limit());
        o["observed"] = json!(row.observed);
    }
    if let Some(b) = v.bound {
        o["interval"] = json!({
            "share_above": b.share,
            "allowed": b.allowed,
            "lower": b.lower,
            "upper": b.upper,
            "level": b.level,
            "design_effect": b.design_effect,
            "blocks": b.blocks,
            "samples": b.samples,
        });
    }
    o
}

/// JUnit XML: a test suite per run, a test case per thread and goal; a
/// failed goal is a `failure`, an inconclusive one `skipped`, each with
/// the figures in its message and in `system-out` (GitLab shows those),
/// and in properties (Jenkins shows those).
pub(crate) fn junit(goals: &Goals, runs: &[RunVerdicts]) -> String {
    let count =
        |r: &RunVerdicts, o: Outcome| r.rows.iter().filter(|x| x.verdict.outcome == o).count();
    let (tests, failures, skipped) = runs.iter().fold((0, 0, 0), |(t, f, s), r| {
        (
            t + r.rows.len(),
            f + count(r, Outcome::Fail),
            s + count(r, Outcome::Inconclusive),
        )
    });
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"latscope {}\" tests=\"{tests}\" failures=\"{failures}\" skipped=\"{skipped}\">",
        markup(&goals.to_string())
    );
    for r in runs {
        let _ = writeln!(
            x,
            "  <testsuite name=\"latscope.{}.{:016x}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" errors=\"0\">",
            markup(&r.board),
            r.run_id,
            r.rows.len(),
            count(r, Outcome::Fail),
            count(r, Outcome::Inconclusive)
        );
        for row in &r.rows {
            junit_case(&mut x, r, row);
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

fn junit_case(x: &mut String, r: &RunVerdicts, row: &Row) {
    let v = &row.verdict;
    let name = format!("{} {}", thread_label(v.thread, row.cpu), v.goal);
    let figures = format!(
        "{}: observed {}; {}",
        v.outcome.name(),
        observed_text(v.goal, row.observed),
        evidence(v)
    );
    let _ = writeln!(
        x,
        "    <testcase classname=\"latscope.{}\" name=\"{}\" time=\"0\">",
        markup(&r.board),
        markup(&name)
    );
    x.push_str("      <properties>\n");
    let mut prop = |k: &str, val: String| {
        let _ = writeln!(
            x,
            "        <property name=\"{k}\" value=\"{}\"/>",
            markup(&val)
        );
    };
    prop("outcome", v.outcome.name().into());
    prop("observed", observed_text(v.goal, row.observed));
    if let Some(b) = v.bound {
        prop("share_above", format!("{:e}", b.share));
        prop("lower", format!("{:e}", b.lower));
        prop("upper", format!("{:e}", b.upper));
        prop("allowed", format!("{:e}", b.allowed));
    }
    x.push_str("      </properties>\n");
    match v.outcome {
        Outcome::Fail => {
            let _ = writeln!(
                x,
                "      <failure message=\"{}\" type=\"latency goal\">{}</failure>",
                markup(&figures),
                markup(&figures)
            );
        }
        Outcome::Inconclusive => {
            let _ = writeln!(x, "      <skipped message=\"{}\"/>", markup(&figures));
        }
        Outcome::Pass => {}
    }
    let _ = writeln!(x, "      <system-out>{}</system-out>", markup(&figures));
    x.push_str("    </testcase>\n");
}

/// LAVA result lines, as Linaro's test definitions' `send-to-lava.sh`
/// reads them: `NAME pass|fail|skip [MEASUREMENT UNITS]`, names of
/// `[A-Za-z0-9_.-]` only (inconclusive is `skip`).
pub(crate) fn lava(runs: &[RunVerdicts]) -> String {
    let mut out = String::new();
    for r in runs {
        let prefix = if runs.len() > 1 {
            format!("{}-{:08x}-", sanitize(&r.board), r.run_id >> 32)
        } else {
            String::new()
        };
        for row in &r.rows {
            let v = &row.verdict;
            let name = sanitize(&format!(
                "{prefix}{}-{}",
                thread_label(v.thread, row.cpu),
                v.goal.to_string().replace("<=", "-le-")
            ));
            let result = match v.outcome {
                Outcome::Pass => "pass",
                Outcome::Fail => "fail",
                Outcome::Inconclusive => "skip",
            };
            let _ = match (row.observed, v.goal.is_latency()) {
                (Some(ns), true) => writeln!(out, "{name} {result} {} us", us(ns)),
                (Some(n), false) => writeln!(out, "{name} {result} {n} count"),
                (None, _) => writeln!(out, "{name} {result}"),
            };
        }
    }
    out
}
