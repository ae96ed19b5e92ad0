//! cyclictest-compatible outputs: the `-h`/`-H` histogram text as Debian's
//! rt-tests 2.4 prints it (every row, OSADL's plot scripts depend on that)
//! and the `--json` schema, with latscope's extra fields beside.

use std::fmt::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::aggregate::Run;
use crate::error::{Error, Result};
use crate::summary::{summarize, Summary};

/// The histogram range in µs: the explicit one, else the run's `-h`, else
/// the linear 1 µs range. Refuses a range past the 1 µs buckets.
pub fn range_us(run: &Run, explicit: Option<u32>) -> Result<u32> {
    let linear = run.layout.linear_us;
    let r = explicit
        .or((run.hello.config.hist_us > 0).then_some(run.hello.config.hist_us))
        .unwrap_or(linear);
    if r == 0 || r > linear {
        return Err(Error::Usage(format!(
            "--hist-us {r}: cyclictest's text needs 1 µs buckets, and this recording has them up to {linear} µs"
        )));
    }
    Ok(r)
}

fn in_range(s: &Summary, range: u32) -> u64 {
    s.hist.iter().take(range as usize).sum()
}

/// cyclictest `-h US` (or `-H US` with `histofall`) text of one run.
pub fn hist_text(out: &mut String, run: &Run, range: u32, histofall: bool) {
    let (per, _) = summarize(run);
    let sum_col = histofall && per.len() > 1;
    out.push_str("# Histogram\n");
    for i in 0..range as usize {
        let _ = write!(out, "{i:06}");
        let mut total = 0u64;
        for (k, s) in per.iter().enumerate() {
            let c = s.hist.get(i).copied().unwrap_or(0);
            total += c;
            out.push(if k == 0 { ' ' } else { '\t' });
            let _ = write!(out, "{c:06}");
        }
        if sum_col {
            let _ = write!(out, "\t{total:06}");
        }
        out.push('\n');
    }
    let totals: Vec<u64> = per.iter().map(|s| in_range(s, range)).collect();
    out.push_str("# Total:");
    for t in &totals {
        let _ = write!(out, " {t:09}");
    }
    if sum_col {
        let _ = write!(out, " {:09}", totals.iter().sum::<u64>());
    }
    out.push('\n');
    out.push_str("# Min Latencies:");
    for s in &per {
        let _ = write!(out, " {:05}", s.min_ns.unwrap_or(0) / 1000);
    }
    out.push_str("\n# Avg Latencies:");
    for s in &per {
        let avg = if s.count > 0 {
            s.avg_ns.unwrap_or(0.0) as u64 / 1000
        } else {
            0
        };
        let _ = write!(out, " {avg:05}");
    }
    out.push_str("\n# Max Latencies:");
    for s in &per {
        let _ = write!(out, " {:05}", s.max_ns.unwrap_or(0) / 1000);
    }
    if sum_col {
        let m = per.iter().filter_map(|s| s.max_ns).max().unwrap_or(0);
        let _ = write!(out, " {:05}", m / 1000);
    }
    out.push_str("\n# Histogram Overflows:");
    let overflows: Vec<u64> = per
        .iter()
        .zip(&totals)
        .map(|(s, t)| s.hist.iter().sum::<u64>() - t)
        .collect();
    for o in &overflows {
        let _ = write!(out, " {o:05}");
    }
    if sum_col {
        let _ = write!(out, " {:05}", overflows.iter().sum::<u64>());
    }
    out.push_str("\n# Histogram Overflow at cycle number:\n");
    for (k, s) in per.iter().enumerate() {
        let _ = write!(out, "# Thread {k}:");
        let cycles: &[u64] = s
            .thread
            .and_then(|t| run.threads.get(usize::from(t)))
            .map(|t| t.spikes.overflow_cycles.as_slice())
            .unwrap_or(&[]);
        let shown = cycles.len().min(range as usize);
        for c in cycles.iter().take(shown) {
            let _ = write!(out, " {c:05}");
        }
        let o = overflows.get(k).copied().unwrap_or(0);
        if o > shown as u64 {
            let _ = write!(out, " # {:05} others", o - shown as u64);
        }
        out.push('\n');
    }
    out.push('\n');
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// cyclictest `--json` document of one run, with latscope's extra fields.
/// `end` is when the stream ended (the recording's modification time).
pub fn json(run: &Run, range: u32, end: SystemTime, return_code: i32) -> Value {
    let (per, all) = summarize(run);
    let elapsed = run
        .bye
        .map(|b| b.elapsed_ns)
        .unwrap_or_else(|| per.iter().map(|s| s.elapsed_ns).max().unwrap_or(0));
    let start = end
        .checked_sub(Duration::from_nanos(elapsed))
        .unwrap_or(end);
    let mut threads = Map::new();
    for (k, s) in per.iter().enumerate() {
        let mut hist = Map::new();
        for (i, &c) in s.hist.iter().take(range as usize).enumerate() {
            if c > 0 {
                hist.insert(i.to_string(), json!(c));
            }
        }
        let mut t = Map::new();
        t.insert("histogram".into(), Value::Object(hist));
        t.insert("cycles".into(), json!(s.cycles));
        t.insert("min".into(), json!(s.min_ns.unwrap_or(0) / 1000));
        t.insert("max".into(), json!(s.max_ns.unwrap_or(0) / 1000));
        t.insert(
            "avg".into(),
            json!(round2(s.avg_ns.unwrap_or(0.0) / 1000.0)),
        );
        t.insert("cpu".into(), json!(s.cpu.map(i64::from).unwrap_or(-1)));
        t.insert("node".into(), json!(0));
        extras(&mut t, s);
        threads.insert(k.to_string(), Value::Object(t));
    }
    let h = &run.hello;
    let mut all_map = Map::new();
    extras(&mut all_map, &all);
    json!({
        "file_version": 1,
        "cmdline:": h.target.argv.as_str(),
        "rt_test_version:": format!("latscope {}", h.tool_version),
        "start_time": rfc2822(start),
        "end_time": rfc2822(end),
        "return_code": return_code,
        "sysinfo": {
            "sysname": "Linux",
            "nodename": h.target.hostname.as_str(),
            "release": h.target.kernel.as_str(),
            "version": h.target.preempt_model.as_str(),
            "machine": h.target.arch.as_str(),
            "realtime": i32::from(h.target.preempt_rt),
        },
        "num_threads": per.len(),
        "resolution_in_ns": 0,
        "thread": Value::Object(threads),
        "latscope": {
            "run_id": format!("{:016x}", h.run_id),
            "exact": run.exact_at_end(),
            "exact_epoch": run.exact_epoch(),
            "bye": run.bye.is_some(),
            "all": Value::Object(all_map),
        },
    })
}

fn extras(t: &mut Map<String, Value>, s: &Summary) {
    t.insert("count".into(), json!(s.count));
    t.insert("min_ns".into(), json!(s.min_ns));
    t.insert("max_ns".into(), json!(s.max_ns));
    t.insert("avg_ns".into(), json!(s.avg_ns));
    for (n, v) in &s.quantiles {
        t.insert(format!("{}_ns", n.replace('.', "_")), json!(v));
    }
    t.insert("median_ns".into(), json!(s.median_ns));
    t.insert("mode_ns".into(), json!(s.mode_ns));
    t.insert("mad_ns".into(), json!(s.mad_ns));
    t.insert("stddev_ns".into(), json!(s.stddev_ns));
    t.insert("missed".into(), json!(s.missed));
    t.insert("early".into(), json!(s.early));
    t.insert("minflt".into(), json!(s.minflt));
    t.insert("majflt".into(), json!(s.majflt));
    t.insert("dropped".into(), json!(s.dropped));
    t.insert("exact".into(), json!(s.exact));
}

/// RFC 2822 date in UTC, as cyclictest writes it (it uses local time).
pub fn rfc2822(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let wd = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][(days % 7) as usize];
    let mon = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ][(m - 1) as usize];
    format!(
        "{wd}, {d:02} {mon} {y} {:02}:{:02}:{:02} +0000",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;
    use crate::synth::{Synth, SynthConfig};

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

    fn run_text(threads: u16, hist_us: u32, histofall: bool) -> String {
        let (bytes, _) = Synth::bytes(SynthConfig {
            threads,
            hist_us,
            ..SynthConfig::default()
        });
        let mut s = Session::new("golden");
        s.feed(&bytes);
        s.finish();
        let run = s.agg.current().unwrap();
        let mut out = String::new();
        hist_text(&mut out, run, range_us(run, None).unwrap(), histofall);
        out
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
        let sum: Vec<&str> = ours.lines().filter(|l| l.starts_with("# T")).collect();
        assert!(sum[0].starts_with("# Total: ") && shape(sum[0]) == "# Total: N9");
        let g: Vec<String> = golden
            .lines()
            .filter(|l| l.starts_with("# ") && !l.starts_with("# Thread"))
            .map(shape)
            .collect();
        let o: Vec<String> = ours
            .lines()
            .filter(|l| l.starts_with("# ") && !l.starts_with("# Thread"))
            .map(shape)
            .collect();
        assert_eq!(o, g);
    }

    #[test]
    fn json_has_cyclictest_2_4_keys_in_order() {
        let golden: Value =
            serde_json::from_str(include_str!("../golden/cyclictest-2.4.json")).unwrap();
        let (bytes, _) = Synth::bytes(SynthConfig {
            hist_us: 20,
            ..SynthConfig::default()
        });
        let mut s = Session::new("golden");
        s.feed(&bytes);
        s.finish();
        let run = s.agg.current().unwrap();
        let ours = json(run, 20, UNIX_EPOCH + Duration::from_secs(1_795_997_122), 0);
        let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
        let gk = keys(&golden);
        assert_eq!(keys(&ours)[..gk.len()], gk[..]);
        assert_eq!(keys(&ours["sysinfo"]), keys(&golden["sysinfo"]));
        let gt = keys(&golden["thread"]["0"]);
        assert_eq!(keys(&ours["thread"]["0"])[..gt.len()], gt[..]);
        for k in ["cycles", "min", "max", "cpu", "node"] {
            assert!(ours["thread"]["0"][k].is_u64(), "{k}");
        }
        assert!(ours["thread"]["0"]["avg"].is_f64());
        assert!(ours["start_time"].as_str().unwrap().ends_with("+0000"));
        // Histogram keys are the rows below the range with samples.
        let h = ours["thread"]["0"]["histogram"].as_object().unwrap();
        assert!(h.keys().all(|k| k.parse::<u32>().unwrap() < 20));
        assert!(h.values().all(|v| v.as_u64().unwrap() > 0));
    }

    #[test]
    fn dates() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_997_122);
        // 2026-11-30 00:05:22 UTC was a Monday.
        assert_eq!(rfc2822(t), "Mon, 30 Nov 2026 00:05:22 +0000");
        assert_eq!(rfc2822(UNIX_EPOCH), "Thu, 01 Jan 1970 00:00:00 +0000");
    }
}
