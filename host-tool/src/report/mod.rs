//! `latscope-host report`: the outputs made from decoded runs, and the
//! subcommand itself ([`run`] with a [`Plan`]).

mod accounting;
pub(crate) mod completeness;
pub(crate) mod cyclictest;
mod html;
mod pretty;
mod run;
pub(crate) mod slo;
pub(crate) mod text;

#[cfg(test)]
mod golden;
#[cfg(test)]
mod tests;

use std::fmt::Write;
use std::io;
use std::time::SystemTime;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use latscope_core::cyclictest::HistShape;
use latscope_core::wire::LinkStats;

use crate::aggregate::Run;
use crate::console;
use crate::error::Result;
use crate::session::Session;
use crate::summary::{
    summarize, timerlat_summaries, Summary, TimerlatContextSummary, TimerlatSummary,
};
use latscope_core::wire::Platform;

/// The goals' exit statuses, where they were named first (all of them are
/// in [`crate::error`]).
pub use crate::error::{EXIT_GOAL_FAILED, EXIT_GOAL_INCONCLUSIVE};
pub(crate) use run::{create_out, decode, goal_status, write_out as write_text};
pub use run::{run, Plan, SloPlan};

/// The report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A summary for people: per thread and all CPUs.
    Text,
    /// cyclictest's `-h` histogram text, every row (OSADL-compatible).
    CyclictestHist,
    /// cyclictest's `--json` schema plus latscope's fields.
    CyclictestJson,
    /// Everything, as JSON.
    Json,
    /// Histogram buckets per thread and the spikes, as CSV.
    Csv,
}

/// Options shared by the formats.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Format.
    pub format: Format,
    /// Histogram-text range (µs) overriding the run's.
    pub hist_us: Option<u32>,
    /// cyclictest `-H`: add a column summing all threads.
    pub histofall: bool,
    /// Which rt-tests release's histogram shape the cyclictest formats
    /// take.
    pub hist_shape: HistShape,
}

/// One decoded input with when it ended.
pub struct Decoded {
    /// The decoding.
    pub session: Session,
    /// When the stream ended (a file's modification time, or now).
    pub end: SystemTime,
}

/// `s` escaped for HTML and XML, text and attribute values alike: the
/// five markup characters as references, and the control characters XML
/// 1.0 does not allow (all but tab and newline) as spaces.
pub(crate) fn markup(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c < ' ' && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// Whether a run is complete (for the exit status): nothing of
/// [`completeness::losses`], read from an input with link statistics `link`.
pub(crate) fn run_ok(run: &Run, link: &LinkStats) -> bool {
    completeness::complete(run, link)
}

/// Say on standard error why a run of input `name` is incomplete, if it
/// is; whether it is complete.
pub(crate) fn say_run(name: &str, run: &Run, link: &LinkStats) -> bool {
    let losses = completeness::losses(run, link);
    if !losses.is_empty() {
        let why: Vec<String> = losses.iter().map(completeness::Loss::message).collect();
        console::say(format_args!(
            "{name}: run {:016x} incomplete: {}",
            run.hello.run_id,
            why.join("; ")
        ));
    }
    losses.is_empty()
}

/// [`say_run`] for every run of `s`; whether all are complete.
pub(crate) fn say_incomplete(s: &Session) -> bool {
    let link = s.link();
    s.agg
        .runs
        .iter()
        .fold(true, |ok, r| say_run(&s.name, r, &link) & ok)
}

/// Render every run of every input in `opts.format`.
pub fn render(inputs: &[Decoded], opts: Options) -> Result<String> {
    let mut out = String::new();
    match opts.format {
        Format::Text => {
            for d in inputs {
                for w in d.session.warnings() {
                    let _ = writeln!(out, "warning: {w}");
                }
                for run in &d.session.agg.runs {
                    text::render(&mut out, &d.session.name, run, &d.session.link());
                }
            }
        }
        Format::CyclictestHist => {
            for d in inputs {
                for run in &d.session.agg.runs {
                    let r = cyclictest::range_us(run, opts.hist_us)?;
                    cyclictest::hist_text(&mut out, run, r, opts.histofall, opts.hist_shape);
                }
            }
        }
        Format::CyclictestJson => {
            let mut docs = Vec::new();
            for d in inputs {
                for run in &d.session.agg.runs {
                    let r = cyclictest::json_range_us(run, opts.hist_us)?;
                    let rc = if run_ok(run, &d.session.link()) { 0 } else { 1 };
                    docs.push(cyclictest::json(run, r, d.end, rc, opts.hist_shape));
                }
            }
            // one run: the target's document; several: an array of them
            out = if docs.len() == 1 {
                docs.pop().unwrap_or_default()
            } else {
                format!("[\n{}]\n", docs.join(","))
            };
        }
        Format::Json => {
            let mut bytes = Vec::new();
            out = write_json(inputs, &mut bytes)
                .ok()
                .and_then(|()| String::from_utf8(bytes).ok())
                .unwrap_or_default();
        }
        Format::Csv => {
            out.push_str(
                "record,input,run,thread,cpu,bucket,lower_us,upper_us,count,cycle,deadline_ns,latency_ns,missed,complete\n",
            );
            for d in inputs {
                let link = d.session.link();
                for run in &d.session.agg.runs {
                    csv_run(&mut out, &d.session.name, run, run_ok(run, &link));
                }
            }
        }
    }
    Ok(out)
}

/// Write the JSON report of every run of every input to `w` as it is
/// serialised: one input's document, or an array of them, and a newline.
/// Nothing report-sized is held: a 64-thread run's buckets go straight to
/// `w` (give it a buffer).
pub(crate) fn write_json(inputs: &[Decoded], mut w: impl io::Write) -> io::Result<()> {
    let docs: Vec<InputJson> = inputs.iter().map(InputJson).collect();
    let mut s = serde_json::Serializer::with_formatter(&mut w, pretty::Pretty::default());
    match docs.as_slice() {
        [one] => one.serialize(&mut s),
        all => all.serialize(&mut s),
    }?;
    w.write_all(b"\n")
}

/// A CSV field, quoted when it must be (RFC 4180: a comma, a quote or a
/// line break in it).
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The rows of one run; `complete` (whether the run is complete) ends every row.
fn csv_run(out: &mut String, name: &str, run: &Run, complete: bool) {
    let name = csv_field(name);
    let id = format!("{:016x}", run.hello.run_id);
    for (i, t) in run.threads.iter().enumerate() {
        let cpu = t
            .info
            .and_then(|x| x.cpu)
            .map(|c| c.to_string())
            .unwrap_or_default();
        for (b, c) in t.hist().into_iter().enumerate() {
            if c == 0 {
                continue;
            }
            let upper = run
                .layout
                .upper_us(b)
                .map(|u| u.to_string())
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "bucket,{name},{id},{i},{cpu},{b},{},{upper},{c},,,,,{complete}",
                run.layout.lower_us(b)
            );
        }
        for r in &t.spikes.largest {
            let _ = writeln!(
                out,
                "spike,{name},{id},{i},{cpu},,,,,{},{},{},{},{complete}",
                r.cycle, r.deadline_ns, r.latency_ns, r.missed
            );
        }
    }
}

/// A summary's JSON: its figures, then `buckets`, every non-empty bucket,
/// written as they are serialised (a tree of them was most of a 64-thread
/// report's memory; the figures go straight through too).
#[derive(Serialize)]
struct SummaryJson<'a> {
    #[serde(flatten)]
    figures: &'a Summary,
    buckets: BucketsJson<'a>,
}

impl<'a> SummaryJson<'a> {
    fn new(sum: &'a Summary, run: &'a Run) -> Self {
        SummaryJson {
            figures: sum,
            buckets: BucketsJson(&sum.hist, run),
        }
    }
}

/// The non-empty buckets of a histogram.
struct BucketsJson<'a>(&'a [u64], &'a Run);

/// One bucket as the JSON report shows it.
#[derive(Serialize)]
struct BucketJson {
    bucket: usize,
    lower_us: u64,
    upper_us: Option<u64>,
    count: u64,
}

impl Serialize for BucketsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let BucketsJson(hist, run) = *self;
        let n = hist.iter().filter(|&&c| c > 0).count();
        let mut seq = s.serialize_seq(Some(n))?;
        for (b, &c) in hist.iter().enumerate().filter(|(_, &c)| c > 0) {
            seq.serialize_element(&BucketJson {
                bucket: b,
                lower_us: run.layout.lower_us(b),
                upper_us: run.layout.upper_us(b),
                count: c,
            })?;
        }
        seq.end()
    }
}

/// Serialise the object `head` with the entries named in `lazy` written
/// by the given function instead of the placeholder `head` holds for them
/// (so the key order stays the one `head` was built in).
fn with_lazy<S: Serializer>(
    head: &Value,
    s: S,
    mut lazy: impl FnMut(&str, &mut S::SerializeMap) -> Option<std::result::Result<(), S::Error>>,
) -> std::result::Result<S::Ok, S::Error> {
    let Value::Object(m) = head else {
        return head.serialize(s);
    };
    let mut map = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        match lazy(k, &mut map) {
            Some(r) => r?,
            None => map.serialize_entry(k, v)?,
        }
    }
    map.end()
}

/// One input's JSON document, its runs serialised one at a time.
struct InputJson<'a>(&'a Decoded);

impl Serialize for InputJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let d = self.0;
        with_lazy(&json_input(d), s, |k, map| {
            (k == "runs").then(|| {
                let link = d.session.link();
                let runs: Vec<RunJson> = d
                    .session
                    .agg
                    .runs
                    .iter()
                    .map(|r| RunJson(r, link))
                    .collect();
                map.serialize_entry(k, &runs)
            })
        })
    }
}

/// One run's JSON (of an input with these link statistics), its
/// summaries computed when it is serialised.
struct RunJson<'a>(&'a Run, LinkStats);

impl Serialize for RunJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let run = self.0;
        let (per, all) = summarize(run);
        with_lazy(&json_run(run, &self.1), s, |k, map| match k {
            "threads" => {
                let t: Vec<SummaryJson> = per.iter().map(|x| SummaryJson::new(x, run)).collect();
                Some(map.serialize_entry(k, &t))
            }
            "all" => Some(map.serialize_entry(k, &SummaryJson::new(&all, run))),
            "spikes" => Some(map.serialize_entry(k, &SpikesJson(run))),
            "timerlat" => {
                let t: Vec<TimerlatJson> = timerlat_summaries(run)
                    .into_iter()
                    .map(|t| TimerlatJson(t, run))
                    .collect();
                Some(map.serialize_entry(k, &t))
            }
            _ => None,
        })
    }
}

/// A thread's timerlat figures (protocol version 6) as JSON: its own, then
/// `contexts`, each with its figures and `buckets`, written as they are
/// serialised.
struct TimerlatJson<'a>(TimerlatSummary, &'a Run);

/// One context of [`TimerlatJson`].
#[derive(Serialize)]
struct TimerlatContextJson<'a> {
    #[serde(flatten)]
    figures: &'a TimerlatContextSummary,
    buckets: BucketsJson<'a>,
}

impl Serialize for TimerlatJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let TimerlatJson(t, run) = self;
        let head = serde_json::to_value(t).map_err(serde::ser::Error::custom)?;
        with_lazy(&head, s, |k, map| {
            (k == "contexts").then(|| {
                let c: Vec<TimerlatContextJson> = t
                    .contexts
                    .iter()
                    .map(|c| TimerlatContextJson {
                        figures: c,
                        buckets: BucketsJson(&c.hist, run),
                    })
                    .collect();
                map.serialize_entry(k, &c)
            })
        })
    }
}

/// Every thread's largest spike records, written as they are serialised.
struct SpikesJson<'a>(&'a Run);

/// One spike record as the JSON report shows it.
#[derive(Serialize)]
struct SpikeJson {
    thread: u16,
    cycle: u64,
    deadline_ns: i64,
    latency_ns: i64,
    missed: u64,
    spike: bool,
    overflow: bool,
    #[serde(rename = "break")]
    brk: bool,
}

impl Serialize for SpikesJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let records = self.0.threads.iter().flat_map(|t| t.spikes.largest.iter());
        s.collect_seq(records.map(|r| SpikeJson {
            thread: r.thread,
            cycle: r.cycle,
            deadline_ns: r.deadline_ns,
            latency_ns: r.latency_ns,
            missed: r.missed,
            spike: r.flags.spike,
            overflow: r.flags.overflow,
            brk: r.flags.brk,
        }))
    }
}

/// An input's JSON with `runs` a placeholder ([`InputJson`] writes them).
fn json_input(d: &Decoded) -> Value {
    let s = &d.session;
    let l = s.link();
    json!({
        "input": s.name,
        "warnings": s.warnings(),
        "link": {
            "bytes": l.bytes, "frames": l.frames, "crc_errors": l.crc_errors,
            "oversize": l.oversize, "unknown_version": l.unknown_version,
            "malformed": l.malformed, "seq_gaps": l.seq_gaps, "frames_lost": l.frames_lost,
            "restarts": l.restarts, "bytes_skipped": l.bytes_skipped,
            "truncated_bytes": s.truncated,
        },
        "runs": Value::Null,
    })
}

/// A run's JSON with `threads`, `all` and `spikes` placeholders
/// ([`RunJson`] writes them); `complete` and `incomplete` (the causes) by
/// [`completeness::losses`] with the input's `link` statistics.
fn json_run(run: &Run, link: &LinkStats) -> Value {
    let losses: Vec<String> = completeness::losses(run, link)
        .iter()
        .map(completeness::Loss::message)
        .collect();
    let h = &run.hello;
    let c = &h.config;
    let mut v = json!({
        "run_id": format!("{:016x}", h.run_id),
        "tool_version": h.tool_version.as_str(),
        "target": {
            "hostname": h.target.hostname.as_str(), "arch": h.target.arch.as_str(),
            "kernel": h.target.kernel.as_str(), "preempt_rt": h.target.preempt_rt,
            "preempt_model": h.target.preempt_model.as_str(), "cpus": h.target.cpus,
            "cmdline": h.target.cmdline.as_str(), "clocksource": h.target.clocksource.as_str(),
            "rt_runtime_us": h.target.rt_runtime_us, "argv": h.target.argv.as_str(),
        },
        "config": {
            "policy": c.policy.name(), "priority": c.priority, "interval_ns": c.interval_ns,
            "distance_ns": c.distance_ns, "mlock": c.mlock, "dma_latency_us": c.dma_latency_us,
            "duration_ns": c.duration_ns, "loops": c.loops, "report_ns": c.report_ns,
            "spike_ns": c.spike_ns, "break_ns": c.break_ns, "hist_us": c.hist_us,
            "linear_us": run.layout.linear_us, "buckets": run.layout.buckets,
            "degraded": text::degraded(run),
        },
        "end": text::ending(run),
        "bye": run.bye.map(|b| json!({
            "epoch": b.epoch, "elapsed_ns": b.elapsed_ns, "threads": b.threads,
            "cycles": b.cycles, "max_ns": b.max_ns, "frames_dropped": b.frames_dropped,
            "defects": b.defects,
        })),
        "exact_at_end": run.exact_at_end(),
        "exact_epoch": run.exact_epoch(),
        "complete": losses.is_empty(),
        "incomplete": losses,
        "threads": Value::Null,
        "all": Value::Null,
        "spikes": Value::Null,
        "explained": {
            "total": run.explained.total,
            "spikes": run.explained.largest.iter().map(|a| json!({
                "cpu": a.cpu, "cycle": a.cycle, "deadline_ns": a.deadline_ns,
                "latency_ns": a.latency_ns, "coarse": a.coarse, "partial": a.partial,
                "causes": a.causes.iter().map(|c| json!({
                    "cause": crate::aggregate::cause_label(c), "count": c.count, "ns": c.ns,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "causes": run.explained.ranked().iter().map(|c| json!({
                "cause": c.label, "count": c.count, "ns": c.ns, "spikes": c.spikes,
            })).collect::<Vec<_>>(),
        },
        "logs": run.logs.iter().map(|l| json!({"level": text::level(l.level), "text": l.text.as_str()})).collect::<Vec<_>>(),
    });
    json_notes(&mut v, run);
    v
}

/// The keys a run's JSON has only when there is something to say, so that
/// reports of other runs read as they always did.
fn json_notes(v: &mut Value, run: &Run) {
    if run.hello_lost {
        // a stand-in hello: nothing of it is a fact
        v["hello_lost"] = Value::Bool(true);
        v["tool_version"] = Value::Null;
        v["target"] = Value::Null;
        v["config"] = Value::Null;
        return;
    }
    let missing = text::missing_devices(run);
    if !missing.is_empty() {
        v["config"]["missing_devices"] = json!(missing);
    }
    if run.hello.config.tracefs_mounted {
        v["config"]["tracefs_mounted"] = json!(true);
    }
    let wake = run.hello.config.wake;
    if let Some(caveat) = wake.caveat() {
        v["config"]["wake_mode"] = json!(wake.name());
        v["config"]["wake_mode_caveat"] = json!(caveat);
    }
    let t = &run.hello.target;
    if t.platform == Platform::BareMetal {
        // no kernel: its facts are not zero, they do not exist
        v["target"]["platform"] = json!(t.platform.name());
        for k in [
            "kernel",
            "preempt_rt",
            "preempt_model",
            "cmdline",
            "clocksource",
            "rt_runtime_us",
        ] {
            v["target"][k] = Value::Null;
        }
    }
    if !t.model.is_empty() {
        v["target"]["model"] = json!(t.model.as_str());
    }
    // versions 1 and 2 did not say (their upgrade leaves the resolution 0)
    if t.clock_resolution_ns > 0 || t.platform != Platform::Linux {
        v["target"]["clock_hz"] = json!(t.clock_hz);
        v["target"]["clock_resolution_ns"] = json!(t.clock_resolution_ns);
    }
    if let Some(a) = accounting::json(run) {
        v["spike_account"] = a;
    }
    if run.threads.iter().any(|t| t.timerlat_stats().is_some()) || run.timerlat_mode() {
        // written by [`RunJson`], one thread at a time
        v["timerlat"] = Value::Null;
    }
}
