//! The text against rtla 6.12's printf formats: each expected text was
//! written out from `timerlat_hist.c`'s formats (`"%-6d"`, `"%9d "`,
//! `"%9llu "`, `"%9c "`, `"   IRQ-%03d"`, `"%3d %02d:%02d:%02d"`) for
//! the same samples, and is compared line by line.

use std::string::String;
use std::vec::Vec;

use super::*;

/// rteval's shape: `-u --no-summary`, two CPUs.
const RTEVAL_SHAPE: &[&str] = &[
    "# RTLA timerlat histogram",
    "# Time unit is microseconds (us)",
    "# Duration:   0 00:00:10",
    "Index   IRQ-000   Thr-000   Usr-000   IRQ-001   Thr-001   Usr-001",
    "0             0         0         0         1         0         0 ",
    "1             2         0         0         1         0         0 ",
    "2             2         0         0         0         2         0 ",
    "3             0         2         0         0         0         1 ",
    "4             0         1         1         0         0         0 ",
    "5             0         0         2         0         0         0 ",
    "7             0         0         0         0         0         1 ",
    "9             0         1         0         0         0         0 ",
    "over:         1         0         1         0         0         0 ",
];
/// `-b 2`, the summary and the `ALL:` block; CPU 1 has no IRQ or thread sample
/// (no columns), CPU 3 no thread sample (`-`).
const SUMMARY_AND_ALL: &[&str] = &[
    "# RTLA timerlat histogram",
    "# Time unit is microseconds (us)",
    "# Duration:   1 01:01:01",
    "Index   IRQ-000   Thr-000   IRQ-003   Thr-003",
    "0             2         0         2         0 ",
    "2             1         0         0         0 ",
    "4             1         1         0         0 ",
    "6             0         1         0         0 ",
    "over:         0         1         0         0 ",
    "count:        4         3         2         0 ",
    "min:          1         5         0         - ",
    "avg:          2        12         0         - ",
    "max:          4        25         0         - ",
    "ALL:        IRQ       Thr",
    "count:        6         3 ",
    "min:          0         5 ",
    "avg:          1        12 ",
    "max:          4        25 ",
];
/// `-n -b 1000 -u`: CPU 2 has only user samples, so no columns.
const NANOSECONDS_AND_USER: &[&str] = &[
    "# RTLA timerlat histogram",
    "# Time unit is nanoseconds (ns)",
    "# Duration:   0 00:00:59",
    "Index   IRQ-000   Thr-000   Usr-000",
    "1000          1         0         0 ",
    "2000          1         0         0 ",
    "3000          0         3         0 ",
    "4000          0         0         1 ",
    "over:         0         0         1 ",
    "count:        2         3         2 ",
    "min:       1500      3100      4100 ",
    "avg:       2000      3400      9550 ",
    "max:       2500      3900     15000 ",
    "ALL:        IRQ       Thr       Usr",
    "count:        2         3         2 ",
    "min:       1500      3100      4100 ",
    "avg:       2000      3400      9550 ",
    "max:       2500      3900     15000 ",
];
/// `--no-index --with-zeros --no-header --no-irq`, `-E 4`.
const NO_INDEX_NO_HEADER_NO_IRQ: &[&str] = &[
    "        0 ",
    "        0 ",
    "        1 ",
    "        0 ",
    "        0 ",
    "        1 ",
    "        2 ",
    "        2 ",
    "        2 ",
    "       Thr",
    "        1 ",
    "        2 ",
    "        2 ",
    "        2 ",
];
/// Nothing measured.
const NO_SAMPLES: &[&str] = &[
    "# RTLA timerlat histogram",
    "# Time unit is microseconds (us)",
    "# Duration:   0 00:00:00",
    "Index",
    "over: ",
    "count:",
    "min:  ",
    "avg:  ",
    "max:  ",
    "ALL:        IRQ       Thr",
    "count:        0         0 ",
    "min:          -         - ",
    "avg:          -         - ",
    "max:          -         - ",
];

/// One column's buckets and figures, from samples in ns counted as rtla
/// counts them.
fn column(samples_ns: &[u64], entries: usize, bucket_size: u64, unit: Unit) -> (Vec<u64>, Stats) {
    let mut buckets = std::vec![0; entries];
    let mut stats = Stats::EMPTY;
    for &ns in samples_ns {
        stats.add(&mut buckets, bucket_size, unit.of_ns(ns));
    }
    (buckets, stats)
}

/// A CPU's three columns, owned.
struct Owned {
    cpu: u32,
    cols: [(Vec<u64>, Stats); 3],
}

fn owned(cpu: u32, samples: [&[u64]; 3], entries: usize, bucket_size: u64, unit: Unit) -> Owned {
    Owned {
        cpu,
        cols: samples.map(|s| column(s, entries, bucket_size, unit)),
    }
}

fn borrow(o: &Owned) -> Cpu<'_> {
    let c = |i: usize| Column {
        buckets: &o.cols[i].0,
        stats: o.cols[i].1,
    };
    Cpu {
        cpu: o.cpu,
        irq: c(0),
        thread: c(1),
        user: c(2),
    }
}

fn text(cpus: &[Owned], entries: usize, bucket_size: u64, duration_s: u64, o: &Options) -> String {
    let cpus: Vec<Cpu<'_>> = cpus.iter().map(borrow).collect();
    let h = Hist {
        cpus: &cpus,
        entries,
        bucket_size,
        duration_s,
    };
    let mut s = String::new();
    histogram(&mut s, &h, o).unwrap();
    s
}

/// `ours` against the expected lines, line by line, then whole.
fn same(ours: &str, expected: &[&str]) {
    let theirs: String = expected.iter().map(|l| std::format!("{l}\n")).collect();
    for (n, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(a, b, "line {}", n + 1);
    }
    assert_eq!(ours, theirs);
}

#[test]
fn rtevals_shape_has_user_columns_and_no_summary() {
    let cpus = [
        owned(
            0,
            [
                &[1200, 1900, 2100, 2999, 45_000],
                &[3500, 3999, 4001, 9999],
                &[4200, 5100, 5200, 12_000],
            ],
            10,
            1,
            Unit::Micros,
        ),
        owned(
            1,
            [&[800, 1100], &[2500, 2600], &[3100, 7100]],
            10,
            1,
            Unit::Micros,
        ),
    ];
    let o = Options {
        user: true,
        no_summary: true,
        ..Options::DEFAULT
    };
    same(&text(&cpus, 10, 1, 10, &o), RTEVAL_SHAPE);
}

#[test]
fn summary_and_all_leave_out_cpus_without_irq_or_thread_samples() {
    let cpus = [
        owned(
            0,
            [&[1000, 1500, 3999, 4000], &[5000, 6000, 25_000], &[]],
            10,
            2,
            Unit::Micros,
        ),
        owned(1, [&[], &[], &[7000]], 10, 2, Unit::Micros),
        owned(3, [&[0, 999], &[], &[]], 10, 2, Unit::Micros),
    ];
    same(
        &text(&cpus, 10, 2, 90_061, &Options::DEFAULT),
        SUMMARY_AND_ALL,
    );
}

#[test]
fn nanoseconds_with_user_columns() {
    let ns = Unit::Nanos;
    let cpus = [
        owned(
            0,
            [&[1500, 2500], &[3100, 3200, 3900], &[4100, 15_000]],
            10,
            1000,
            ns,
        ),
        owned(2, [&[], &[], &[7000]], 10, 1000, ns),
    ];
    let o = Options {
        unit: ns,
        user: true,
        ..Options::DEFAULT
    };
    same(&text(&cpus, 10, 1000, 59, &o), NANOSECONDS_AND_USER);
}

#[test]
fn no_index_no_header_no_irq_with_zeros() {
    let cpus = [owned(5, [&[1000, 3000], &[2000], &[]], 4, 1, Unit::Micros)];
    let o = Options {
        no_index: true,
        with_zeros: true,
        no_header: true,
        no_irq: true,
        ..Options::DEFAULT
    };
    same(&text(&cpus, 4, 1, 3600, &o), NO_INDEX_NO_HEADER_NO_IRQ);
}

#[test]
fn nothing_measured_prints_dashes() {
    let cpus = [owned(0, [&[], &[], &[]], 10, 1, Unit::Micros)];
    same(&text(&cpus, 10, 1, 0, &Options::DEFAULT), NO_SAMPLES);
}

#[test]
fn averages_are_of_truncated_samples() {
    // 1999 ns and 2001 ns: rtla keeps 1 µs and 2 µs, so the average is
    // 3 / 2 = 1 µs, not the 2 µs of the ns average
    let (buckets, s) = column(&[1999, 2001], 4, 1, Unit::Micros);
    assert_eq!(buckets, [0, 1, 1, 0]);
    assert_eq!(
        (s.count, s.min(), s.avg(), s.max()),
        (2, Some(1), Some(1), Some(2))
    );
    // the last bucket ends the rows; past it is over
    let (buckets, s) = column(&[3999, 4000, 1_000_000], 4, 1, Unit::Micros);
    assert_eq!((buckets, s.over), (std::vec![0, 0, 0, 1], 2));
    // wide buckets: value / size
    let (buckets, s) = column(&[0, 4999, 5000], 2, 5, Unit::Micros);
    assert_eq!((buckets, s.over), (std::vec![2, 1], 0));
    let e = Stats::EMPTY;
    assert_eq!((e.min(), e.avg(), e.max()), (None, None, None));
}

#[test]
fn durations_are_gmtime_day_of_year_and_clock() {
    // written from "%3d %02d:%02d:%02d" of gmtime(): tm_yday, then the clock
    for (secs, want) in [
        (0, "  0 00:00:00"),
        (65, "  0 00:01:05"),
        (90_061, "  1 01:01:01"),
        // 1971-01-01: the day of the year starts again
        (365 * 86_400, "  0 00:00:00"),
        // 1972-09-27 (1972 is a leap year): day 270
        (1000 * 86_400 + 3661, "270 01:01:01"),
        (1 << 40, " 50 00:36:16"),
    ] {
        let mut s = String::new();
        duration(&mut s, secs).unwrap();
        assert_eq!(s, want, "{secs} s");
    }
}

#[test]
fn stop_tracing_names_the_trace_file() {
    let mut s = String::new();
    stop_tracing(&mut s, None).unwrap();
    assert_eq!(s, "rtla timerlat hit stop tracing\n");
    s.clear();
    stop_tracing(&mut s, Some(DEFAULT_TRACE_FILE)).unwrap();
    assert_eq!(
        s,
        "rtla timerlat hit stop tracing\n  Saving trace to timerlat_trace.txt\n"
    );
}

/// rteval 3.10's reading of the text: rows that start with a number, with
/// the columns `i*3+1 ..= i*3+3` of the `i`-th CPU; every other line
/// skipped.
fn rteval_rows(text: &str, ncpus: usize) -> Vec<(u64, Vec<[u64; 3]>)> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let skip = [
            "#", "Index", "over:", "count:", "min:", "avg:", "max:", "ALL:",
        ];
        if skip.iter().any(|p| line.starts_with(p)) {
            continue;
        }
        let vals: Vec<&str> = line.split_whitespace().collect();
        let Some(Ok(index)) = vals.first().map(|v| v.parse::<u64>()) else {
            continue;
        };
        let cols = (0..ncpus)
            .map(|i| [1, 2, 3].map(|k| vals.get(i * 3 + k).map_or(0, |v| v.parse().unwrap())))
            .collect();
        rows.push((index, cols));
    }
    rows
}

#[test]
fn rteval_reads_every_sample_back() {
    let cpus = [
        owned(
            0,
            [&[1200, 1900], &[3500], &[4200, 5100]],
            10,
            1,
            Unit::Micros,
        ),
        owned(1, [&[800], &[2500, 2600], &[7100]], 10, 1, Unit::Micros),
    ];
    let o = Options {
        user: true,
        no_summary: true,
        ..Options::DEFAULT
    };
    let rows = rteval_rows(&text(&cpus, 10, 1, 10, &o), 2);
    for (k, cpu) in cpus.iter().enumerate() {
        for (ctx, (buckets, stats)) in cpu.cols.iter().enumerate() {
            let read: u64 = rows.iter().map(|(_, cols)| cols[k][ctx]).sum();
            assert_eq!(read, stats.count, "CPU {} context {ctx}", cpu.cpu);
            for (index, cols) in &rows {
                assert_eq!(cols[k][ctx], buckets[*index as usize]);
            }
        }
    }
    // and the duration as rteval joins its two words
    let text = text(&cpus, 10, 1, 10, &o);
    let line = text.lines().find(|l| l.starts_with("# Duration:")).unwrap();
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(std::format!("{}{}", words[2], words[3]), "000:00:10");
}

/// rtla 6.12's real output (fixtures/README.md): the file, and whether
/// it was run with `--no-summary`.
const REAL: [(&str, &str, bool); 3] = [
    (
        "rtla-hist-no-summary.txt",
        include_str!("fixtures/rtla-hist-no-summary.txt"),
        true,
    ),
    (
        "rtla-hist-summary.txt",
        include_str!("fixtures/rtla-hist-summary.txt"),
        false,
    ),
    (
        "rtla-hist-empty-arg.txt",
        include_str!("fixtures/rtla-hist-empty-arg.txt"),
        true,
    ),
];

/// The figures of rtla's text, read back: per shown column (CPU by CPU,
/// IRQ, thread, user) its rows, `over:` and, where printed, the
/// summary's `count:`, `min:`, `avg:`, `max:`; the `ALL:` block's
/// `count:` and `avg:`.
#[derive(Default)]
struct Figures {
    duration_s: u64,
    cpus: Vec<u32>,
    rows: Vec<(usize, Vec<u64>)>,
    over: Vec<u64>,
    summary: [Vec<u64>; 4],
    all: [Vec<u64>; 4],
}

fn numbers(words: &[&str]) -> Vec<u64> {
    words.iter().map(|w| w.parse().unwrap()).collect()
}

fn read_back(text: &str) -> Figures {
    let mut f = Figures::default();
    let mut in_all = false;
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some((&first, rest)) = words.split_first() else {
            continue;
        };
        match first {
            "#" if line.starts_with("# Duration:") => {
                let days: u64 = rest[1].parse().unwrap();
                let clock = numbers(&rest[2].split(':').collect::<Vec<_>>());
                f.duration_s = days * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2];
            }
            "#" => {}
            "Index" => {
                for (k, label) in rest.iter().enumerate() {
                    let (ctx, cpu) = label.split_once('-').unwrap();
                    assert_eq!(ctx, ["IRQ", "Thr", "Usr"][k % 3], "{label}");
                    if k % 3 == 0 {
                        f.cpus.push(cpu.parse().unwrap());
                    }
                }
            }
            "over:" => f.over = numbers(rest),
            "ALL:" => in_all = true,
            "count:" | "min:" | "avg:" | "max:" => {
                let k = ["count:", "min:", "avg:", "max:"]
                    .iter()
                    .position(|l| *l == first)
                    .unwrap();
                let to = if in_all { &mut f.all } else { &mut f.summary };
                to[k] = numbers(rest);
            }
            index => f.rows.push((index.parse().unwrap(), numbers(rest))),
        }
    }
    f
}

/// The sum of each column: one that gives the column's `avg:` and,
/// added up per context, the `ALL:` block's `avg:` (rtla prints only the
/// truncated quotients, so any sum in both ranges prints the same).
fn sums(f: &Figures) -> Vec<u64> {
    let [count, _, avg, _] = &f.summary;
    let mut sums: Vec<u64> = count.iter().zip(avg).map(|(c, a)| c * a).collect();
    for ctx in 0..3 {
        let cols: Vec<usize> = (ctx..sums.len()).step_by(3).collect();
        let total: u64 = cols.iter().map(|&k| sums[k]).sum();
        let want = f.all[2][ctx] * f.all[0][ctx];
        let mut short = want.saturating_sub(total);
        for &k in &cols {
            let slack = count[k] - 1;
            let add = short.min(slack);
            sums[k] += add;
            short -= add;
        }
        assert_eq!(short, 0, "no sums give ALL's avg of context {ctx}");
    }
    sums
}

#[test]
fn rtla_6_12s_own_text_comes_back_byte_for_byte() {
    const ENTRIES: usize = 50;
    for (name, real, no_summary) in REAL {
        let f = read_back(real);
        let ncols = f.cpus.len() * 3;
        assert_eq!(
            (f.cpus.as_slice(), f.over.len()),
            (&[0, 1][..], ncols),
            "{name}"
        );
        let sums = (!no_summary).then(|| sums(&f));
        let cols: Vec<(Vec<u64>, Stats)> = (0..ncols)
            .map(|k| {
                let mut buckets = std::vec![0; ENTRIES];
                for (index, values) in &f.rows {
                    buckets[*index] = values[k];
                }
                let in_rows: u64 = buckets.iter().sum();
                let over = f.over[k];
                let stats = match &sums {
                    Some(sums) => Stats {
                        count: f.summary[0][k],
                        min: f.summary[1][k],
                        sum: sums[k],
                        max: f.summary[3][k],
                        over,
                    },
                    // not printed: any figures that agree with the rows
                    None => Stats {
                        count: in_rows + over,
                        min: 0,
                        sum: 0,
                        max: 0,
                        over,
                    },
                };
                (buckets, stats)
            })
            .collect();
        let cpus: Vec<Owned> = f
            .cpus
            .iter()
            .enumerate()
            .map(|(i, &cpu)| Owned {
                cpu,
                cols: [0, 1, 2].map(|c| cols[i * 3 + c].clone()),
            })
            .collect();
        let o = Options {
            user: true,
            no_summary,
            ..Options::DEFAULT
        };
        let ours = text(&cpus, ENTRIES, 1, f.duration_s, &o);
        let expected: Vec<&str> = real.lines().collect();
        same(&ours, &expected);
        assert_eq!(ours, real, "{name}");
    }
}
