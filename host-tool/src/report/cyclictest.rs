//! cyclictest-compatible outputs of a recorded run, made by the same
//! formatter the target uses (`latscope_core::cyclictest`): the end-of-run
//! text with the `-h`/`-H` histogram and the `--json` document. For a run
//! the host received completely, both equal what the target printed, byte
//! for byte, apart from the fields listed in `docs/cyclictest.md`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use latscope_core::cyclictest::{
    self, EndText, HistShape, JsonDoc, Options, SpikeTotals, Thread, Uname,
};
use latscope_core::hist::Totals;
use latscope_core::seqlock::Counters;
use latscope_core::tz::WallTime;
use latscope_core::wire::{ByeReason, SpikeSample};

use crate::aggregate::{Run, ThreadAgg};
use crate::error::{Error, Result};

/// The histogram range in µs: the explicit one, else the run's `-h`, else
/// the linear 1 µs range. Refuses a range past the 1 µs buckets.
pub(crate) fn range_us(run: &Run, explicit: Option<u32>) -> Result<u32> {
    let linear = run.layout.linear_us;
    let r = explicit
        .or((run.hello.config.hist_us > 0).then_some(run.hello.config.hist_us))
        .unwrap_or(linear);
    check_range(run, r)?;
    Ok(r)
}

/// The `--json` histogram range: the explicit one, else the run's `-h`
/// (0: none, as the target's document).
pub(crate) fn json_range_us(run: &Run, explicit: Option<u32>) -> Result<u32> {
    let r = explicit.unwrap_or(run.hello.config.hist_us);
    if r > 0 {
        check_range(run, r)?;
    }
    Ok(r)
}

fn check_range(run: &Run, r: u32) -> Result<()> {
    let linear = run.layout.linear_us;
    if r == 0 || r > linear {
        return Err(Error::Usage(format!(
            "--hist-us {r}: cyclictest's text needs 1 µs buckets, and this recording has them up to {linear} µs"
        )));
    }
    Ok(())
}

/// The statistics of a thread as the target's record held them.
fn counters(t: &ThreadAgg) -> Counters {
    let s = t.stats().unwrap_or_default();
    Counters {
        totals: Totals {
            count: s.count,
            sum: s.sum,
            min: if s.count == 0 { u64::MAX } else { s.min },
            max: s.max,
        },
        cycles: s.cycles,
        missed: s.missed,
        early: s.early,
        last: s.last,
    }
}

/// Every thread's cumulative histogram, one count per bucket.
fn hists(run: &Run) -> Vec<Vec<u64>> {
    run.threads.iter().map(ThreadAgg::hist).collect()
}

/// The formatter's view of every thread of the run (`hists` from
/// [`hists`]).
fn threads<'a>(run: &'a Run, hists: &'a [Vec<u64>]) -> Vec<Thread<'a>> {
    run.threads
        .iter()
        .zip(hists)
        .enumerate()
        .map(|(i, (t, hist))| {
            let info = t.info;
            let s = t.stats().unwrap_or_default();
            Thread {
                index: i as u16,
                tid: info.map_or(0, |x| x.tid as i32),
                priority: info.map_or(0, |x| u32::from(x.priority)),
                interval_us: info.map_or(0, |x| x.interval_ns / 1000),
                cpu: info.and_then(|x| x.cpu).map_or(-1, i32::from),
                node: info.map_or(-1, |x| i32::from(x.node)),
                counters: counters(t),
                minflt: s.minflt,
                majflt: s.majflt,
                dropped: s.dropped,
                hist,
                overflow_cycles: &t.spikes.overflow_cycles,
            }
        })
        .collect()
}

/// The formats of the run: its `-H` (or the host's `--histofall`), `-N`,
/// and the histogram's shape (the host's `--hist-shape`).
fn options(run: &Run, hist_us: u32, histofall: bool, shape: HistShape) -> Options {
    let c = &run.hello.config;
    Options {
        layout: run.layout,
        hist_us,
        hist_all: histofall || c.hist_all,
        nsecs: c.nsecs,
        hist_shape: shape,
    }
}

/// The `--spike` records of the run in print order, and how many there were.
fn spikes(run: &Run) -> Option<(Vec<SpikeSample>, u64)> {
    if run.hello.config.spike_ns == 0 {
        return None;
    }
    let mut all: Vec<SpikeSample> = run
        .threads
        .iter()
        .flat_map(|t| t.spikes.spike_lines.iter().copied())
        .collect();
    cyclictest::sort_spikes(&mut all);
    let total = run.threads.iter().map(|t| t.spikes.spike_total).sum();
    Some((all, total))
}

/// Whether the run came from a protocol version 1 recording: its hello
/// has no start time (a version 2 target always sends one).
fn from_version_1(run: &Run) -> bool {
    run.hello.config.started.is_none()
}

/// The target's end-of-run text of one run, with the `-h US` (or `-H US`
/// with `histofall`) histogram in rt-tests `shape`. Of a version 1
/// recording, the histogram alone, as the host has always printed it.
pub(crate) fn hist_text(
    out: &mut String,
    run: &Run,
    range: u32,
    histofall: bool,
    shape: HistShape,
) {
    let h = hists(run);
    let t = threads(run, &h);
    let v1 = from_version_1(run);
    let spikes = if v1 { None } else { spikes(run) };
    let broke = match run.bye.map(|b| b.reason) {
        Some(ByeReason::Break { thread, latency_ns }) => Some((thread, latency_ns)),
        _ => None,
    };
    let e = EndText {
        threads: &t,
        opts: options(run, range, histofall, shape),
        status_lines: false,
        extras: !v1,
        spikes: spikes.as_ref().map(|(s, n)| (s.as_slice(), *n)),
        break_armed: !v1 && run.hello.config.break_ns > 0,
        broke,
    };
    // a String takes every write
    let _ = cyclictest::end_text(out, &e);
}

fn wall(t: SystemTime) -> WallTime {
    let unix_s = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    WallTime {
        unix_s,
        utc_offset_s: 0,
    }
}

/// When the run started and ended, in the target's local time: as its
/// hello and bye say, else (a version 1 recording, a stream cut before the
/// bye) `end` (the recording's modification time) and that minus the run
/// time, in UTC.
pub(crate) fn times(run: &Run, end: SystemTime) -> (WallTime, WallTime) {
    let elapsed = run.bye.map(|b| b.elapsed_ns).unwrap_or_else(|| {
        let s = run.threads.iter().filter_map(|t| t.stats());
        s.map(|s| s.elapsed_ns).max().unwrap_or(0)
    });
    let start = end
        .checked_sub(Duration::from_nanos(elapsed))
        .unwrap_or(end);
    let ended = run.bye.and_then(|b| b.ended).unwrap_or_else(|| wall(end));
    let started = run.hello.config.started.unwrap_or_else(|| wall(start));
    (started, ended)
}

/// What became of the run's spikes, as the target's `--json` says it: the
/// latest aggregate's totals of every thread, where the stream has
/// aggregates (version 3 with a spike threshold).
fn spike_totals(run: &Run) -> Option<SpikeTotals> {
    let mut sum = None::<SpikeTotals>;
    for a in run.threads.iter().filter_map(|t| t.spike_account.latest) {
        let s = sum.get_or_insert_with(SpikeTotals::default);
        // a forged stream's counts may be anything
        s.spikes = s.spikes.saturating_add(a.spikes);
        s.sent = s.sent.saturating_add(a.spikes_sent);
        s.explained = s.explained.saturating_add(a.spikes_explained);
        s.aggregated = s.aggregated.saturating_add(a.spikes_aggregated);
        s.dropped = s.dropped.saturating_add(a.spikes_dropped);
    }
    sum
}

/// The target's `--json` document of one run; `end` as in [`times`].
pub(crate) fn json(
    run: &Run,
    range: u32,
    end: SystemTime,
    return_code: i32,
    shape: HistShape,
) -> String {
    let h = &run.hello;
    let (start, end) = times(run, end);
    let doc = JsonDoc {
        cmdline: &h.target.argv,
        tool_version: &h.tool_version,
        start,
        end,
        return_code,
        uname: Uname {
            sysname: "Linux",
            nodename: &h.target.hostname,
            release: &h.target.kernel,
            version: &h.target.kernel_version,
            machine: &h.target.arch,
        },
        realtime: h.target.preempt_rt,
        wake: h.config.wake,
        spikes: spike_totals(run),
        // the stream does not carry the trace's totals
        trace: None,
        windows: None,
        timerlat: &[],
    };
    let h = hists(run);
    let t = threads(run, &h);
    let mut out = String::new();
    let _ = cyclictest::json(&mut out, &doc, &t, &options(run, range, false, shape));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;
    use crate::synth::{Synth, SynthConfig};
    use serde_json::Value;

    /// A line's shape: every run of digits becomes `N<len>`.
    fn shape(line: &str) -> String {
        let mut out = String::new();
        let mut digits = 0;
        for ch in line.chars() {
            if ch.is_ascii_digit() {
                digits += 1;
                continue;
            }
            if digits > 0 {
                out.push_str(&format!("N{digits}"));
                digits = 0;
            }
            out.push(ch);
        }
        if digits > 0 {
            out.push_str(&format!("N{digits}"));
        }
        out
    }

    fn session(cfg: SynthConfig) -> Session {
        let (bytes, _) = Synth::bytes(cfg);
        let mut s = Session::new("golden");
        s.feed(&bytes);
        s.finish();
        s
    }

    fn run_text(threads: u16, hist_us: u32, histofall: bool) -> String {
        let s = session(SynthConfig {
            threads,
            hist_us,
            spike_ns: 0,
            ..SynthConfig::default()
        });
        let run = s.agg.current().unwrap();
        let mut out = String::new();
        hist_text(
            &mut out,
            run,
            range_us(run, None).unwrap(),
            histofall,
            HistShape::V2_4,
        );
        // latscope's own `# T:` lines are a documented extra
        out.lines()
            .filter(|l| !l.starts_with("# T:"))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// Compare with real cyclictest 2.4 output line by line: the same
    /// lines in the same order with the same field widths; the overflow
    /// cycle lists may differ in length.
    fn assert_same_shape(ours: &str, golden: &str, rows_too: bool) {
        let keep = |l: &&str| rows_too || l.starts_with('#') || l.is_empty();
        let a: Vec<&str> = ours.lines().filter(keep).collect();
        let b: Vec<&str> = golden.lines().filter(keep).collect();
        assert_eq!(
            a.len(),
            b.len(),
            "line count\nours:\n{ours}\ngolden:\n{golden}"
        );
        for (x, y) in a.iter().zip(&b) {
            if y.starts_with("# Thread ") {
                let (sx, sy) = (shape(x), shape(y));
                assert_eq!(sx.split(':').next(), sy.split(':').next());
                let list = |s: &str| {
                    let rest = s.split_once(':').map(|p| p.1).unwrap_or("");
                    let (entries, others) = rest.split_once(" # ").unwrap_or((rest, ""));
                    assert!(entries.split(' ').skip(1).all(|e| e == "N5"), "{s}");
                    assert!(others.is_empty() || others == "N5 others", "{s}");
                };
                list(&sx);
                list(&sy);
            } else {
                assert_eq!(shape(x), shape(y), "{x:?} vs {y:?}");
            }
        }
        assert!(ours.ends_with("\n\n"), "ends with a blank line");
    }

    #[test]
    fn hist_text_has_cyclictest_2_4_shape() {
        let golden = include_str!("../golden/cyclictest-2.4-h20-t2.txt");
        assert_same_shape(&run_text(2, 20, false), golden, true);
        let golden = include_str!("../golden/cyclictest-2.4-H30-t2.txt");
        assert_same_shape(&run_text(2, 30, true), golden, true);
        // One thread: the summary lines (its rows go to 2000 µs).
        let golden = include_str!("../golden/cyclictest-2.4-h2000-t1.txt");
        let ours = run_text(1, 1000, false);
        let rows = ours
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty());
        assert_eq!(rows.count(), 1000, "every row, zeros included");
        let summary = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("# ") && !l.starts_with("# Thread"))
                .map(shape)
                .collect()
        };
        assert_eq!(summary(&ours), summary(golden));
    }

    #[test]
    fn overflow_cycles_count_from_zero() {
        let s = session(SynthConfig {
            threads: 1,
            hist_us: 20,
            ..SynthConfig::default()
        });
        let run = s.agg.current().unwrap();
        let t = &run.threads[0];
        assert!(!t.spikes.overflow_cycles.is_empty());
        let mut out = String::new();
        hist_text(&mut out, run, 20, false, HistShape::V2_4);
        let line = out.lines().find(|l| l.starts_with("# Thread 0:")).unwrap();
        let first = t.spikes.overflow_cycles[0];
        assert!(
            line.starts_with(&format!("# Thread 0: {first:05}")),
            "{line}"
        );
    }

    #[test]
    fn json_has_cyclictest_2_4_keys_in_order() {
        let golden: Value =
            serde_json::from_str(include_str!("../golden/cyclictest-2.4.json")).unwrap();
        let s = session(SynthConfig {
            hist_us: 20,
            ..SynthConfig::default()
        });
        let run = s.agg.current().unwrap();
        let text = json(
            run,
            20,
            UNIX_EPOCH + Duration::from_secs(1_795_997_122),
            0,
            HistShape::V2_4,
        );
        let ours: Value = serde_json::from_str(&text).unwrap();
        let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
        let gk = keys(&golden);
        assert_eq!(keys(&ours)[..gk.len()], gk[..]);
        assert_eq!(keys(&ours["sysinfo"]), keys(&golden["sysinfo"]));
        let gt = keys(&golden["thread"]["0"]);
        assert_eq!(keys(&ours["thread"]["0"])[..gt.len()], gt[..]);
        for k in ["cycles", "min", "max", "cpu"] {
            assert!(ours["thread"]["0"][k].is_u64(), "{k}");
        }
        assert!(ours["thread"]["0"]["node"].is_i64());
        assert!(ours["thread"]["0"]["avg"].is_f64());
        assert_eq!(ours["rt_test_version:"], "2.40");
        // the times of the hello and the bye, in the target's zone
        assert_eq!(ours["start_time"], "Mon, 30 Nov 2026 13:24:35 +0100");
        assert_eq!(ours["end_time"], "Mon, 30 Nov 2026 13:24:55 +0100");
        assert_eq!(
            ours["sysinfo"]["version"],
            run.hello.target.kernel_version.as_str()
        );
        // Histogram keys are the rows below the range with samples.
        let h = ours["thread"]["0"]["histogram"].as_object().unwrap();
        assert!(!h.is_empty());
        assert!(h.keys().all(|k| k.parse::<u32>().unwrap() < 20));
        assert!(h.values().all(|v| v.as_u64().unwrap() > 0));
        // Without -h: an empty histogram object per thread, as cyclictest.
        let text = json(run, 0, UNIX_EPOCH, 0, HistShape::V2_4);
        assert!(text.contains("      \"histogram\": {      },\n"));
    }
}
