//! cyclictest's text formats (Debian rt-tests 2.4), byte for byte where
//! they overlap: the `T:` status lines, the `-h/-H` histogram text, `-v`,
//! `--spike` and `-b` lines. Everything writes into a caller's `String`, so
//! a sender with a pre-sized buffer formats without allocating.

use std::fmt::Write;

use latscope_core::hist::Histogram;
use latscope_core::record::Counters;
use latscope_core::stats::Ppm;
use latscope_core::wire::SpikeRecord;

use crate::linux::procfs::Faults;
use latscope_core::layout::DEFAULT_BUCKETS as N;

/// What the formats need to know about one measuring thread.
pub struct Row<'a> {
    /// Thread index.
    pub index: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Priority.
    pub priority: u32,
    /// Interval in µs.
    pub interval_us: u64,
    /// Statistics.
    pub counters: &'a Counters,
    /// The cumulative histogram (u64 counts).
    pub hist: &'a Histogram<N>,
    /// 1-based cycle numbers of the first `-h` overflows (as cyclictest).
    pub overflow_cycles: &'a [u64],
    /// Faults since measuring started.
    pub faults: Faults,
    /// Spike records that could not be queued.
    pub dropped: u64,
}

fn us(ns: u64) -> u64 {
    ns / 1000
}

/// Minimum in ns (0 while empty).
pub fn min_ns(c: &Counters) -> u64 {
    if c.totals.count > 0 {
        c.totals.min
    } else {
        0
    }
}

/// Integer average in ns (0 while empty).
pub fn avg_ns(c: &Counters) -> u64 {
    c.totals.sum.checked_div(c.totals.count).unwrap_or(0)
}

/// `policy: fifo: loadavg: ...` and the blank line of the live view.
pub fn header(out: &mut String, policy: &str, loadavg: &str) {
    let _ = write!(out, "policy: {policy}: loadavg: {loadavg}          \n\n");
}

/// One `T:` line, as cyclictest prints it (µs, or ns with `-N`), without
/// the newline.
pub fn thread_line(out: &mut String, r: &Row<'_>, nsecs: bool) {
    let c = r.counters;
    let _ = write!(
        out,
        "T:{:2} ({:5}) P:{:2} I:{} C:{:7} ",
        r.index, r.tid, r.priority, r.interval_us, c.cycles
    );
    if nsecs {
        let _ = write!(
            out,
            "Min:{:7} Act:{:8} Avg:{:8} Max:{:8}",
            min_ns(c),
            c.last,
            avg_ns(c),
            c.totals.max
        );
    } else {
        let _ = write!(
            out,
            "Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            us(min_ns(c)),
            c.last / 1000,
            us(avg_ns(c)),
            us(c.totals.max)
        );
    }
}

/// latscope's own summary line for a thread (a `#` comment, so scripts
/// that parse cyclictest's lines skip it).
pub fn extra_line(out: &mut String, r: &Row<'_>) {
    let c = r.counters;
    let _ = write!(
        out,
        "# T:{:2} missed: {} early: {} minflt: {} majflt: {} dropped: {}",
        r.index, c.missed, c.early, r.faults.minflt, r.faults.majflt, r.dropped
    );
    for (q, name) in Ppm::REPORTED {
        match r.hist.quantile(q) {
            Some(v) => {
                let _ = write!(out, " {name}: {}", us(v));
            }
            None => {
                let _ = write!(out, " {name}: -");
            }
        }
    }
    out.push('\n');
}

/// Samples below `hist_us` µs (the rows of the text).
fn in_range(h: &Histogram<N>, hist_us: u32) -> u64 {
    h.counts().iter().take(hist_us as usize).sum()
}

/// The `-h`/`-H` histogram text, with every row 0..US-1 (zeros included,
/// as rt-tests 2.4 and the OSADL plot scripts expect).
pub fn histogram(out: &mut String, rows: &[Row<'_>], hist_us: u32, all: bool) {
    // rt-tests adds the all-threads column only with more than one thread.
    let all = all && rows.len() > 1;
    out.push_str("# Histogram\n");
    for i in 0..hist_us as usize {
        let _ = write!(out, "{i:06} ");
        let mut sum = 0u64;
        for (j, r) in rows.iter().enumerate() {
            let n = r.hist.counts().get(i).copied().unwrap_or(0);
            sum += n;
            if j > 0 {
                out.push('\t');
            }
            let _ = write!(out, "{n:06}");
        }
        if all {
            let _ = write!(out, "\t{sum:06}");
        }
        out.push('\n');
    }
    let total: u64 = rows.iter().map(|r| in_range(r.hist, hist_us)).sum();
    out.push_str("# Total:");
    for r in rows {
        let _ = write!(out, " {:09}", in_range(r.hist, hist_us));
    }
    if all {
        let _ = write!(out, " {total:09}");
    }
    out.push_str("\n# Min Latencies:");
    for r in rows {
        let _ = write!(out, " {:05}", us(min_ns(r.counters)));
    }
    out.push_str("\n# Avg Latencies:");
    for r in rows {
        let _ = write!(out, " {:05}", us(avg_ns(r.counters)));
    }
    out.push_str("\n# Max Latencies:");
    let mut max = 0;
    for r in rows {
        max = max.max(r.counters.totals.max);
        let _ = write!(out, " {:05}", us(r.counters.totals.max));
    }
    if all {
        let _ = write!(out, " {:05}", us(max));
    }
    out.push_str("\n# Histogram Overflows:");
    let mut overflows = 0;
    for r in rows {
        let o = r.hist.count_at_or_above_us(hist_us as u64);
        overflows += o;
        let _ = write!(out, " {o:05}");
    }
    if all {
        let _ = write!(out, " {overflows:05}");
    }
    out.push_str("\n# Histogram Overflow at cycle number:\n");
    for r in rows {
        let _ = write!(out, "# Thread {}:", r.index);
        let shown = r.overflow_cycles.len().min(hist_us as usize);
        for c in &r.overflow_cycles[..shown] {
            let _ = write!(out, " {c:05}");
        }
        let o = r.hist.count_at_or_above_us(hist_us as u64);
        if o > shown as u64 {
            let _ = write!(out, " # {:05} others", o - shown as u64);
        }
        out.push('\n');
    }
    out.push('\n');
}

/// One `-v` line: `thread:cycle:value`.
pub fn verbose_line(out: &mut String, thread: usize, cycle: u64, latency_ns: i64, nsecs: bool) {
    let v = if nsecs { latency_ns } else { latency_ns / 1000 };
    let _ = writeln!(out, "{thread:8}:{cycle:8}:{v:8}");
}

/// The `--spike` lines and their count.
pub fn spikes(out: &mut String, spikes: &[SpikeRecord], total: u64, nsecs: bool) {
    for s in spikes {
        let wake = s.deadline_ns.saturating_add(s.latency_ns);
        let (v, ts) = if nsecs {
            (s.latency_ns, wake)
        } else {
            (s.latency_ns / 1000, wake / 1000)
        };
        let _ = writeln!(out, "T:{:2} Spike:{v:8}: TS: {ts:12}", s.thread);
    }
    let _ = writeln!(out, "spikes = {total}");
}

/// The `-b` lines after a break.
pub fn break_lines(out: &mut String, tids: &[i32], break_tid: i32, value: u64) {
    out.push_str("# Thread Ids:");
    for t in tids {
        let _ = write!(out, " {t:05}");
    }
    let _ = write!(
        out,
        "\n# Break thread: {break_tid}\n# Break value: {value}\n"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_core::hist::Totals;
    use latscope_core::layout::DEFAULT_LINEAR_US;

    fn hist(samples_us: &[u64]) -> (Box<Histogram<N>>, Counters) {
        let mut h = Box::new(Histogram::<N>::new(DEFAULT_LINEAR_US));
        let mut c = Counters::ZERO;
        let mut t = Totals::EMPTY;
        for &s in samples_us {
            h.record(s * 1000 + 400);
            t.add(s * 1000 + 400);
            c.cycles += 1;
            c.last = (s * 1000 + 400) as i64;
        }
        c.totals = t;
        (h, c)
    }

    /// The shape of rt-tests 2.4's `cyclictest -q -H 5 -t 2` output.
    #[test]
    fn histogram_text_matches_rt_tests_2_4_shape() {
        let (h0, c0) = hist(&[1, 1, 3, 7, 9]);
        let (h1, c1) = hist(&[2, 4]);
        let rows = [
            Row {
                index: 0,
                tid: 100,
                priority: 80,
                interval_us: 1000,
                counters: &c0,
                hist: &h0,
                overflow_cycles: &[4, 5],
                faults: Faults::default(),
                dropped: 0,
            },
            Row {
                index: 1,
                tid: 101,
                priority: 80,
                interval_us: 1000,
                counters: &c1,
                hist: &h1,
                overflow_cycles: &[],
                faults: Faults::default(),
                dropped: 0,
            },
        ];
        let mut s = String::new();
        histogram(&mut s, &rows, 5, true);
        let expected = "# Histogram\n\
000000 000000\t000000\t000000\n\
000001 000002\t000000\t000002\n\
000002 000000\t000001\t000001\n\
000003 000001\t000000\t000001\n\
000004 000000\t000001\t000001\n\
# Total: 000000003 000000002 000000005\n\
# Min Latencies: 00001 00002\n\
# Avg Latencies: 00004 00003\n\
# Max Latencies: 00009 00004 00009\n\
# Histogram Overflows: 00002 00000 00002\n\
# Histogram Overflow at cycle number:\n\
# Thread 0: 00004 00005\n\
# Thread 1:\n\
\n";
        assert_eq!(s, expected);

        // -h: no sum column, no overall max; more overflows than US shown
        let mut s = String::new();
        let cycles: Vec<u64> = (1..=3).collect();
        let (h, c) = hist(&[7, 8, 9, 10, 11]);
        let row = Row {
            index: 0,
            tid: 1,
            priority: 80,
            interval_us: 1000,
            counters: &c,
            hist: &h,
            overflow_cycles: &cycles,
            faults: Faults::default(),
            dropped: 0,
        };
        histogram(&mut s, &[row], 2, false);
        assert!(s.starts_with("# Histogram\n000000 000000\n000001 000000\n# Total: 000000000\n"));
        assert!(s.contains("# Max Latencies: 00011\n# Histogram Overflows: 00005\n"));
        assert!(s.ends_with("# Thread 0: 00001 00002 # 00003 others\n\n"));
    }

    #[test]
    fn status_line_matches_cyclictest() {
        let (h, c) = hist(&[12, 30, 22]);
        let r = Row {
            index: 0,
            tid: 13913,
            priority: 80,
            interval_us: 1000,
            counters: &c,
            hist: &h,
            overflow_cycles: &[],
            faults: Faults::default(),
            dropped: 0,
        };
        let mut s = String::new();
        thread_line(&mut s, &r, false);
        assert_eq!(
            s,
            "T: 0 (13913) P:80 I:1000 C:      3 Min:     12 Act:   22 Avg:   21 Max:      30"
        );
        let mut s = String::new();
        thread_line(&mut s, &r, true);
        assert_eq!(
            s,
            "T: 0 (13913) P:80 I:1000 C:      3 Min:  12400 Act:   22400 Avg:   21733 Max:   30400"
        );
    }

    #[test]
    fn verbose_spike_and_break_lines() {
        let mut s = String::new();
        verbose_line(&mut s, 0, 3, 4_900, false);
        assert_eq!(s, "       0:       3:       4\n");
        let mut s = String::new();
        let r = SpikeRecord {
            thread: 0,
            cycle: 1,
            deadline_ns: 636_435_620_000,
            latency_ns: 27_500,
            missed: 0,
            flags: Default::default(),
        };
        spikes(&mut s, &[r], 65, false);
        assert_eq!(s, "T: 0 Spike:      27: TS:    636435647\nspikes = 65\n");
        let mut s = String::new();
        break_lines(&mut s, &[13926], 13926, 8967);
        assert_eq!(
            s,
            "# Thread Ids: 13926\n# Break thread: 13926\n# Break value: 8967\n"
        );
    }
}
