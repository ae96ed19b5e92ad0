//! `--json FILE`: cyclictest's results schema (rt-tests 2.4), quirky keys
//! `"cmdline:"` and `"rt_test_version:"` included, plus latscope's extra
//! per-thread fields (quantiles, missed periods, early wake-ups, faults,
//! dropped records, exact ns figures).

use std::fmt::Write;

use latscope_core::stats::Ppm;
use latscope_core::wire::WakeMode;

use super::text::{avg_ns, min_ns, Row};
use crate::linux::procfs::Uname;

/// The run-wide facts of the JSON document.
pub struct Doc<'a> {
    /// Command line.
    pub cmdline: &'a str,
    /// Start, seconds since the epoch.
    pub start_s: i64,
    /// End, seconds since the epoch.
    pub end_s: i64,
    /// Exit status.
    pub return_code: i32,
    /// uname.
    pub uname: &'a Uname,
    /// `/sys/kernel/realtime`.
    pub realtime: bool,
    /// `-N`.
    pub nsecs: bool,
    /// `-h` range (0 = no histograms).
    pub hist_us: u32,
    /// CPU of each thread (-1 = unpinned).
    pub cpus: &'a [i64],
    /// How each cycle waited (`-r`, `-s`, `-x`).
    pub wake: WakeMode,
}

/// `s` as a JSON string literal.
pub fn quote(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// RFC 2822 date in UTC, as cyclictest prints local time
/// (`Sun, 29 Nov 2026 22:47:47 +0000`).
pub fn rfc2822(epoch_s: i64) -> String {
    let days = epoch_s.div_euclid(86_400);
    let secs = epoch_s.rem_euclid(86_400);
    // civil-from-days (H. Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} +0000",
        WD[days.rem_euclid(7) as usize],
        d,
        MON[(m - 1).clamp(0, 11) as usize],
        y,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// `num / den` rounded to two decimals, printed without floating point
/// (keeps float formatting out of the static binary).
struct Hundredths(u128);

impl Hundredths {
    fn of(num: u64, den: u64) -> Self {
        if den == 0 {
            return Hundredths(0);
        }
        let (n, d) = (num as u128 * 100, den as u128);
        Hundredths((n + d / 2) / d)
    }
}

impl std::fmt::Display for Hundredths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{:02}", self.0 / 100, self.0 % 100)
    }
}

/// The whole document.
pub fn document(doc: &Doc<'_>, rows: &[Row<'_>]) -> String {
    let mut o = String::with_capacity(4096);
    header(&mut o, doc);
    let _ = write!(
        o,
        ",\n  \"num_threads\": {},\n  \"resolution_in_ns\": {},\n  \"thread\": {{\n",
        rows.len(),
        u8::from(doc.nsecs)
    );
    for (k, r) in rows.iter().enumerate() {
        thread(&mut o, doc, k, r);
        let _ = write!(
            o,
            "\n      }}\n    }}{}\n",
            if k + 1 < rows.len() { "," } else { "" }
        );
    }
    o.push_str("  }\n}\n");
    o
}

/// The run-wide keys, up to `sysinfo`.
fn header(o: &mut String, doc: &Doc<'_>) {
    o.push_str("{\n  \"file_version\": 1,\n  \"cmdline:\": ");
    quote(o, doc.cmdline);
    o.push_str(",\n  \"rt_test_version:\": \"2.40\",\n  \"latscope_version\": ");
    quote(o, env!("CARGO_PKG_VERSION"));
    o.push_str(",\n  \"wake_mode\": ");
    quote(o, doc.wake.name());
    if let Some(caveat) = doc.wake.caveat() {
        o.push_str(",\n  \"wake_mode_caveat\": ");
        quote(o, caveat);
    }
    o.push_str(",\n  \"start_time\": ");
    quote(o, &rfc2822(doc.start_s));
    o.push_str(",\n  \"end_time\": ");
    quote(o, &rfc2822(doc.end_s));
    let _ = write!(
        o,
        ",\n  \"return_code\": {},\n  \"sysinfo\": {{\n    \"sysname\": ",
        doc.return_code
    );
    let u = doc.uname;
    quote(o, &u.sysname);
    o.push_str(",\n    \"nodename\": ");
    quote(o, &u.nodename);
    o.push_str(",\n    \"release\": ");
    quote(o, &u.release);
    o.push_str(",\n    \"version\": ");
    quote(o, &u.version);
    o.push_str(",\n    \"machine\": ");
    quote(o, &u.machine);
    let _ = write!(o, ",\n    \"realtime\": {}\n  }}", u8::from(doc.realtime));
}

/// One thread's object, up to its quantiles (the caller closes it).
fn thread(o: &mut String, doc: &Doc<'_>, k: usize, r: &Row<'_>) {
    let c = r.counters;
    let scale = if doc.nsecs { 1 } else { 1000 };
    let _ = writeln!(o, "    \"{}\": {{", r.index);
    if doc.hist_us > 0 {
        histogram(o, r, doc.hist_us);
    }
    let avg = Hundredths::of(c.totals.sum, c.totals.count.saturating_mul(scale));
    let _ = write!(
        o,
        "      \"cycles\": {},\n      \"min\": {},\n      \"max\": {},\n      \"avg\": {avg},\n      \"cpu\": {},\n      \"node\": 0,\n",
        c.cycles,
        min_ns(c) / scale,
        c.totals.max / scale,
        doc.cpus.get(k).copied().unwrap_or(-1)
    );
    let _ = write!(
        o,
        "      \"count\": {},\n      \"min_ns\": {},\n      \"max_ns\": {},\n      \"avg_ns\": {},\n      \"missed\": {},\n      \"early\": {},\n      \"minflt\": {},\n      \"majflt\": {},\n      \"dropped\": {},\n      \"overflows\": {},\n      \"quantiles_ns\": {{",
        c.totals.count,
        min_ns(c),
        c.totals.max,
        avg_ns(c),
        c.missed,
        c.early,
        r.faults.minflt,
        r.faults.majflt,
        r.dropped,
        if doc.hist_us > 0 {
            r.hist.count_at_or_above_us(doc.hist_us as u64)
        } else {
            0
        }
    );
    for (j, (q, name)) in Ppm::REPORTED.iter().enumerate() {
        let sep = if j == 0 { "" } else { "," };
        match r.hist.quantile(*q) {
            Some(v) => {
                let _ = write!(o, "{sep}\n        \"{name}\": {v}");
            }
            None => {
                let _ = write!(o, "{sep}\n        \"{name}\": null");
            }
        }
    }
}

/// The rows of the histogram text that are not zero, as an object.
fn histogram(o: &mut String, r: &Row<'_>, hist_us: u32) {
    o.push_str("      \"histogram\": {");
    let mut first = true;
    for (i, &n) in r.hist.counts().iter().take(hist_us as usize).enumerate() {
        if n > 0 {
            let _ = write!(o, "{}\n        \"{i}\": {n}", if first { "" } else { "," });
            first = false;
        }
    }
    o.push_str(if first { "},\n" } else { "\n      },\n" });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linux::procfs::Faults;
    use latscope_core::hist::Histogram;
    use latscope_core::layout::DEFAULT_BUCKETS as N;
    use latscope_core::layout::DEFAULT_LINEAR_US;
    use latscope_core::record::Counters;

    #[test]
    fn dates() {
        assert_eq!(rfc2822(0), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(1_795_992_467), "Sun, 29 Nov 2026 22:47:47 +0000");
        assert_eq!(rfc2822(951_782_400), "Tue, 29 Feb 2000 00:00:00 +0000");
    }

    #[test]
    fn document_has_cyclictest_keys_and_extras() {
        let mut h = Box::new(Histogram::<N>::new(DEFAULT_LINEAR_US));
        let mut c = Counters::ZERO;
        for ns in [5_100, 5_900, 48_000, 13_496_000] {
            h.record(ns);
            c.totals.add(ns);
            c.cycles += 1;
        }
        let u = Uname {
            sysname: "Linux".into(),
            nodename: "vm".into(),
            release: "6.18".into(),
            version: "#1 \"x\"".into(),
            machine: "x86_64".into(),
        };
        let row = Row {
            index: 0,
            tid: 1,
            priority: 80,
            interval_us: 1000,
            counters: &c,
            hist: &h,
            overflow_cycles: &[],
            faults: Faults {
                minflt: 0,
                majflt: 0,
            },
            dropped: 0,
        };
        let doc = Doc {
            cmdline: "latscope -h 50",
            start_s: 0,
            end_s: 1,
            return_code: 0,
            uname: &u,
            realtime: false,
            nsecs: false,
            hist_us: 50,
            cpus: &[0],
            wake: WakeMode::PosixTimer { relative: false },
        };
        let s = document(&doc, &[row]);
        for key in [
            "\"file_version\": 1",
            "\"cmdline:\": \"latscope -h 50\"",
            "\"rt_test_version:\": \"2.40\"",
            "\"version\": \"#1 \\\"x\\\"\"",
            "\"num_threads\": 1",
            "\"resolution_in_ns\": 0",
            "\"histogram\": {\n        \"5\": 2,\n        \"48\": 1\n      }",
            "\"cycles\": 4",
            "\"min\": 5,",
            "\"max\": 13496,",
            "\"avg\": 3388.75",
            "\"cpu\": 0",
            "\"overflows\": 1",
            "\"p99.999\": 13496000",
            "\"wake_mode\": \"posix_timer\",\n  \"wake_mode_caveat\": \"POSIX timer: ",
        ] {
            assert!(s.contains(key), "missing {key} in\n{s}");
        }
    }
}
