//! `latscope-host compare A B`: two runs side by side, the before/after
//! view of a kernel or configuration change.

use std::fmt::Write;
use std::path::PathBuf;

use crate::aggregate::Run;
use crate::console;
use crate::error::{Result, EXIT_FAILED, EXIT_OK};
use crate::input::Source;
use crate::plot;
use crate::report::{decode, say_run};
use crate::summary::{avg_us, or_dash, summarize, timerlat_summaries, us_opt, Summary};

/// What `compare` was asked to do.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The "before" recording, as given.
    pub a: String,
    /// The "after" recording, as given.
    pub b: String,
    /// Also draw both histograms overlaid into this file (.svg or .png).
    pub plot: Option<PathBuf>,
}

/// `latscope-host compare A B`: the last run of each recording side by
/// side on standard output (and both histograms in a plot), and the exit
/// status: 0 when both runs ended well, 1 when either did not or either
/// recording holds no run. An input that cannot be read is an error.
pub fn run(plan: &Plan) -> Result<u8> {
    if let Some(file) = &plan.plot {
        plot::check(file)?;
    }
    let da = decode(&Source::from_arg(&plan.a))?;
    let db = decode(&Source::from_arg(&plan.b))?;
    for d in [&da, &db] {
        if let Some(e) = d.session.fatal() {
            return Err(e);
        }
        for w in d.session.warnings() {
            console::warn(&w);
        }
    }
    let (Some(ra), Some(rb)) = (da.session.agg.runs.last(), db.session.agg.runs.last()) else {
        return Ok(EXIT_FAILED);
    };
    console::Std::Out.write(render(&plan.a, ra, &plan.b, rb).as_bytes());
    if let Some(file) = &plan.plot {
        let series = [
            plot::run_all(ra, &format!("A: {}", ra.hostname())),
            plot::run_all(rb, &format!("B: {}", rb.hostname())),
        ];
        plot::draw(file, "latscope: A vs B, all CPUs", &series, false)?;
        console::say(format_args!("wrote {}", file.display()));
    }
    let a_ok = say_run(&plan.a, ra, &da.session.link());
    let b_ok = say_run(&plan.b, rb, &db.session.link());
    Ok(if a_ok && b_ok { EXIT_OK } else { EXIT_FAILED })
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => format!("{:.2}×", b / a),
        _ => "-".into(),
    }
}

fn row(out: &mut String, name: &str, a: Option<u64>, b: Option<u64>) {
    let _ = writeln!(
        out,
        "{:<10} {:>12} {:>12} {:>9}",
        name,
        us_opt(a),
        us_opt(b),
        ratio(a.map(|x| x as f64), b.map(|x| x as f64))
    );
}

fn count_row(out: &mut String, name: &str, a: u64, b: u64) {
    let _ = writeln!(
        out,
        "{:<10} {:>12} {:>12} {:>9}",
        name,
        a,
        b,
        ratio(Some(a as f64), Some(b as f64))
    );
}

fn block(out: &mut String, title: &str, a: &Summary, b: &Summary) {
    let _ = writeln!(
        out,
        "\n{title}\n{:<10} {:>12} {:>12} {:>9}",
        "(µs)", "A", "B", "B/A"
    );
    count_row(out, "cycles", a.cycles, b.cycles);
    row(out, "min", a.min_ns, b.min_ns);
    let _ = writeln!(
        out,
        "{:<10} {:>12} {:>12} {:>9}",
        "avg",
        avg_us(a.avg_ns),
        avg_us(b.avg_ns),
        ratio(a.avg_ns, b.avg_ns)
    );
    for ((n, qa), (_, qb)) in a.quantiles.iter().zip(&b.quantiles) {
        row(out, n, *qa, *qb);
    }
    row(out, "max", a.max_ns, b.max_ns);
    let _ = writeln!(
        out,
        "{:<10} {:>12.1} {:>12.1} {:>9}",
        "stddev",
        a.stddev_ns / 1000.0,
        b.stddev_ns / 1000.0,
        ratio(Some(a.stddev_ns), Some(b.stddev_ns))
    );
    count_row(out, "missed", a.missed, b.missed);
    count_row(out, "majflt", a.majflt, b.majflt);
    count_row(out, "minflt", a.minflt, b.minflt);
}

/// The comparison table of two runs: all CPUs, then thread by thread.
pub(crate) fn render(name_a: &str, a: &Run, name_b: &str, b: &Run) -> String {
    let mut out = String::new();
    for (side, name, run) in [("A", name_a, a), ("B", name_b, b)] {
        let _ = writeln!(
            out,
            "{side}: {name}: {} ({}, {}), run {:016x}",
            run.hostname(),
            run.hello.target.arch,
            crate::report::text::system_words(&run.hello.target),
            run.hello.run_id
        );
    }
    let (pa, aa) = summarize(a);
    let (pb, ab) = summarize(b);
    block(&mut out, "all CPUs", &aa, &ab);
    for (x, y) in pa.iter().zip(&pb) {
        block(
            &mut out,
            &format!("{} (CPU {} vs {})", x.label, or_dash(x.cpu), or_dash(y.cpu)),
            x,
            y,
        );
    }
    timerlat(&mut out, a, b);
    causes(&mut out, a, b);
    out
}

/// The timerlat figures of the threads both runs have them for (protocol
/// version 6): per thread and context, A against B.
fn timerlat(out: &mut String, a: &Run, b: &Run) {
    let (ta, tb) = (timerlat_summaries(a), timerlat_summaries(b));
    match (ta.is_empty(), tb.is_empty()) {
        (true, true) => return,
        (false, true) | (true, false) => {
            let side = if ta.is_empty() { "B" } else { "A" };
            let _ = writeln!(
                out,
                "\ntimerlat: only {side} has the kernel's timerlat figures"
            );
            return;
        }
        (false, false) => {}
    }
    for x in &ta {
        let Some(y) = tb.iter().find(|y| y.thread == x.thread) else {
            continue;
        };
        for (cx, cy) in x.contexts.iter().zip(&y.contexts) {
            let _ = writeln!(
                out,
                "\n{} timerlat {} (CPU {} vs {})\n{:<10} {:>12} {:>12} {:>9}",
                x.label,
                cx.context,
                or_dash(x.cpu),
                or_dash(y.cpu),
                "(µs)",
                "A",
                "B",
                "B/A"
            );
            count_row(out, "count", cx.count, cy.count);
            row(out, "min", cx.min_ns, cy.min_ns);
            let _ = writeln!(
                out,
                "{:<10} {:>12} {:>12} {:>9}",
                "avg",
                avg_us(cx.avg_ns),
                avg_us(cy.avg_ns),
                ratio(cx.avg_ns, cy.avg_ns)
            );
            for ((n, qa), (_, qb)) in cx.quantiles.iter().zip(&cy.quantiles) {
                row(out, n, *qa, *qb);
            }
            row(out, "max", cx.max_ns, cy.max_ns);
            count_row(out, "lost", cx.lost, cy.lost);
        }
    }
}

/// How the causes of explained spikes changed from A to B.
fn causes(out: &mut String, a: &Run, b: &Run) {
    if a.explained.total == 0 && b.explained.total == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "\nexplained spikes: A {} , B {}\n{:<48} {:>12} {:>12} {:>9}",
        a.explained.total, b.explained.total, "cause (total µs)", "A", "B", "B/A"
    );
    let ra = a.explained.ranked();
    let rb = b.explained.ranked();
    let mut labels: Vec<&str> = ra.iter().map(|c| c.label.as_str()).collect();
    for c in &rb {
        if !labels.contains(&c.label.as_str()) {
            labels.push(c.label.as_str());
        }
    }
    for l in labels.into_iter().take(20) {
        let x = ra.iter().find(|c| c.label == l).map(|c| c.ns);
        let y = rb.iter().find(|c| c.label == l).map(|c| c.ns);
        let _ = writeln!(
            out,
            "{:<48} {:>12} {:>12} {:>9}",
            l,
            us_opt(x),
            us_opt(y),
            ratio(x.map(|v| v as f64), y.map(|v| v as f64))
        );
    }
}
