//! explain-overhead's result: does `--explain` change what latscope
//! measures? Alternating runs without and with it, every figure from the
//! raw outputs the launcher (`bench/explain-overhead`) keeps:
//!
//! - `off-P.json`, `on-P.json`: each run's `--json` (pair `P`);
//! - `on-P.explained`: the attributions the on run's stream carried
//!   (`xtask stats explained` of its `latscope-host report`);
//! - `commands`: the two command lines;
//! - `meta`: `PAIRS`, `SECS`, `EXPLAIN`, `ELAPSED`, the load averages and
//!   the commit.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::stats::{g3, median, PairStats};
use crate::Error;

/// `cargo xtask explain-overhead-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where explain-overhead.json and explain-overhead.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its markdown.
///
/// # Errors
///
/// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for raw outputs that
/// cannot be read; [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = ExplainOverhead::from_raw(&args.raw)?;
    let md = results::write(&args.out, &r)?;
    print!("{}", fs::read_to_string(&md).map_err(Error::io(&md))?);
    Ok(())
}

/// A run's p99, p99.9 and maximum of one thread, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tail {
    /// p99, µs.
    pub p99_us: f64,
    /// p99.9, µs.
    pub p999_us: f64,
    /// The maximum, µs.
    pub max_us: f64,
}

impl Tail {
    /// The three figures, in the table's order.
    pub fn figures(&self) -> [f64; 3] {
        [self.p99_us, self.p999_us, self.max_us]
    }

    fn from_figures([p99_us, p999_us, max_us]: [f64; 3]) -> Tail {
        Tail {
            p99_us,
            p999_us,
            max_us,
        }
    }
}

/// One run's threads, in thread order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Each thread's tail, `threads[i]` the `i`-th thread of the result.
    pub threads: Vec<Tail>,
}

/// The on run's trace reader.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reader {
    /// The reader's CPU time per second of the run, ms.
    pub cpu_ms_per_s: f64,
    /// Events recorded per second.
    pub events_per_s: f64,
}

/// One alternating pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    /// Without `--explain`.
    pub off: Run,
    /// With it.
    pub on: Run,
    /// The attributions the on run's stream carried.
    pub explained: Option<u64>,
    /// The on run's trace reader, if its JSON has one.
    pub reader: Option<Reader>,
}

/// One thread over the pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thread {
    /// The thread's number.
    pub thread: u32,
    /// The medians of the off runs.
    pub off: Tail,
    /// The medians of the on runs.
    pub on: Tail,
    /// The per-pair ratios on / off of p99, p99.9 and the maximum, with
    /// their interval and sign test.
    pub ratios: [Option<PairStats>; 3],
    /// The spread of the off runs alone (max / min, the min at least 1 µs):
    /// how far two runs without `--explain` differ.
    pub off_spread: Tail,
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainOverhead {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// `--explain US`.
    pub explain_us: u64,
    /// Seconds per run.
    pub secs: u64,
    /// The whole run's time, s.
    pub elapsed_s: u64,
    /// The command lines, off then on.
    pub commands: Vec<String>,
    /// The threads' numbers, in the runs' order.
    pub thread_ids: Vec<u32>,
    /// Every pair, in the order they ran.
    pub pairs: Vec<Pair>,
    /// Each thread over the pairs.
    pub threads: Vec<Thread>,
}

fn parse_err(path: &Path, why: impl Into<String>) -> Error {
    Error::Parse {
        what: path.display().to_string(),
        why: why.into(),
    }
}

fn json(path: &Path) -> Result<Value, Error> {
    let text = fs::read_to_string(path).map_err(Error::io(path))?;
    serde_json::from_str(&text).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })
}

/// A run's `--json`: each thread's number and tail, in thread order.
fn run_of(path: &Path) -> Result<Vec<(u32, Tail)>, Error> {
    let v = json(path)?;
    let threads = v["thread"]
        .as_object()
        .ok_or_else(|| parse_err(path, "no \"thread\" object"))?;
    let mut out = Vec::with_capacity(threads.len());
    for (id, t) in threads {
        let id: u32 = id
            .parse()
            .map_err(|_| parse_err(path, format!("thread {id:?} is not a number")))?;
        let ns = |v: &Value, what: &str| {
            v.as_f64()
                .map(|n| n / 1000.0)
                .ok_or_else(|| parse_err(path, format!("thread {id}: no {what}")))
        };
        out.push((
            id,
            Tail {
                p99_us: ns(&t["quantiles_ns"]["p99"], "p99")?,
                p999_us: ns(&t["quantiles_ns"]["p99.9"], "p99.9")?,
                max_us: ns(&t["max_ns"], "max_ns")?,
            },
        ));
    }
    out.sort_by_key(|&(id, _)| id);
    Ok(out)
}

/// The on run's trace reader per second of `secs`; `None` when its JSON
/// has no trace.
fn reader_of(path: &Path, secs: u64) -> Option<Reader> {
    let v = json(path).ok()?;
    let t = &v["latscope"]["trace"];
    let secs = secs as f64;
    Some(Reader {
        cpu_ms_per_s: t["reader_cpu_ms"].as_f64()? / secs,
        events_per_s: t["events"].as_f64()? / secs,
    })
}

/// The sum of every run's `explained.total` in a host report's JSON.
///
/// # Errors
///
/// [`Error::Json`] when it is not JSON, [`Error::Parse`] without runs or
/// a run without the count.
pub fn explained(text: &str, path: &Path) -> Result<u64, Error> {
    let v: Value = serde_json::from_str(text).map_err(|source| Error::Json {
        path: path.to_path_buf(),
        source,
    })?;
    let runs = v["runs"]
        .as_array()
        .ok_or_else(|| parse_err(path, "no \"runs\" array"))?;
    runs.iter().try_fold(0u64, |sum, r| {
        r["explained"]["total"]
            .as_u64()
            .map(|n| sum + n)
            .ok_or_else(|| parse_err(path, "a run without explained.total"))
    })
}

impl ExplainOverhead {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for a file that
    /// is missing or not what the launcher writes, or runs whose threads
    /// differ.
    pub fn from_raw(raw: &Path) -> Result<ExplainOverhead, Error> {
        let meta = MetaFile::read(raw)?;
        let machine = meta.machine()?;
        let pairs_n: usize = meta.num("PAIRS")?;
        let secs: u64 = meta.num("SECS")?;
        let commands_path = raw.join("commands");
        let commands = fs::read_to_string(&commands_path)
            .map_err(Error::io(&commands_path))?
            .lines()
            .map(|l| l.trim_start_matches("- ").to_string())
            .collect();
        let mut thread_ids: Option<Vec<u32>> = None;
        let mut pairs = Vec::with_capacity(pairs_n);
        for p in 1..=pairs_n {
            let mut runs = [Run { threads: vec![] }, Run { threads: vec![] }];
            for (run, side) in runs.iter_mut().zip(["off", "on"]) {
                let path = raw.join(format!("{side}-{p}.json"));
                let threads = run_of(&path)?;
                let ids: Vec<u32> = threads.iter().map(|t| t.0).collect();
                match &thread_ids {
                    Some(first) if *first != ids => {
                        return Err(parse_err(
                            &path,
                            format!("threads {ids:?}, the first run's were {first:?}"),
                        ))
                    }
                    Some(_) => {}
                    None => thread_ids = Some(ids),
                }
                run.threads = threads.into_iter().map(|t| t.1).collect();
            }
            let [off, on] = runs;
            let explained = fs::read_to_string(raw.join(format!("on-{p}.explained")))
                .ok()
                .and_then(|t| t.trim().parse().ok());
            pairs.push(Pair {
                off,
                on,
                explained,
                reader: reader_of(&raw.join(format!("on-{p}.json")), secs),
            });
        }
        let thread_ids = thread_ids.unwrap_or_default();
        let threads = thread_ids
            .iter()
            .enumerate()
            .map(|(i, &thread)| summary(thread, i, &pairs))
            .collect();
        Ok(ExplainOverhead {
            machine,
            explain_us: meta.num("EXPLAIN")?,
            secs,
            elapsed_s: meta.num("ELAPSED")?,
            commands,
            thread_ids,
            pairs,
            threads,
        })
    }
}

/// Thread `i` (number `thread`) over the pairs.
fn summary(thread: u32, i: usize, pairs: &[Pair]) -> Thread {
    let column = |side: fn(&Pair) -> &Run, k: usize| -> Vec<f64> {
        pairs
            .iter()
            .map(|p| side(p).threads[i].figures()[k])
            .collect()
    };
    fn off(p: &Pair) -> &Run {
        &p.off
    }
    fn on(p: &Pair) -> &Run {
        &p.on
    }
    let medians = |side: fn(&Pair) -> &Run| {
        Tail::from_figures(std::array::from_fn(|k| {
            median(&column(side, k)).unwrap_or(0.0)
        }))
    };
    let ratios = std::array::from_fn(|k| {
        let pairs: Vec<(Option<f64>, Option<f64>)> = column(on, k)
            .into_iter()
            .zip(column(off, k))
            .map(|(a, b)| (Some(a), Some(b)))
            .collect();
        PairStats::of(&pairs)
    });
    let off_spread = Tail::from_figures(std::array::from_fn(|k| {
        let c = column(off, k);
        let max = c.iter().copied().fold(f64::MIN, f64::max);
        let min = c.iter().copied().fold(f64::MAX, f64::min);
        max / min.max(1.0)
    }));
    Thread {
        thread,
        off: medians(off),
        on: medians(on),
        ratios,
        off_spread,
    }
}

/// A tail as the table writes it: `p99 / p99.9 / max`, whole µs.
fn tail_cell(t: &Tail) -> String {
    format!("{:.0} / {:.0} / {:.0}", t.p99_us, t.p999_us, t.max_us)
}

impl Report for ExplainOverhead {
    const NAME: &'static str = "explain-overhead";

    fn markdown(&self) -> String {
        let mut s = format!(
            "# --explain {} on and off\n\n{} alternating pairs, {} s; commands in `commands`. Per thread: p99 / p99.9 / max in µs.\n\n",
            self.explain_us,
            self.pairs.len(),
            self.elapsed_s
        );
        let heads = |side: &str| {
            self.thread_ids
                .iter()
                .map(|t| format!("{side} T{t}"))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        s += &format!(
            "| pair | {} | {} | explained | reader CPU (ms/s) | events/s |\n",
            heads("off"),
            heads("on")
        );
        s += &"|---".repeat(2 * self.thread_ids.len() + 4);
        s += "|\n";
        for (p, pair) in self.pairs.iter().enumerate() {
            let cells = |r: &Run| {
                r.threads
                    .iter()
                    .map(tail_cell)
                    .collect::<Vec<_>>()
                    .join(" | ")
            };
            let reader = pair.reader.map_or("- | -".into(), |r| {
                format!("{:.2} | {:.0}", r.cpu_ms_per_s, r.events_per_s)
            });
            s += &format!(
                "| {} | {} | {} | {} | {reader} |\n",
                p + 1,
                cells(&pair.off),
                cells(&pair.on),
                pair.explained.map_or("-".into(), |n| n.to_string()),
            );
        }
        s += "\nMedians over the pairs, on / off:\n\n\
              | thread | p99 off | p99 on | ratio | p99.9 off | p99.9 on | ratio | max off | max on | ratio |\n\
              |---|---|---|---|---|---|---|---|---|---|\n";
        for t in &self.threads {
            let (off, on) = (t.off.figures(), t.on.figures());
            let cells: Vec<String> = (0..3)
                .flat_map(|k| {
                    let ratio = if off[k] == 0.0 {
                        "-".into()
                    } else {
                        format!("{:.2}", on[k] / off[k])
                    };
                    [format!("{:.0}", off[k]), format!("{:.0}", on[k]), ratio]
                })
                .collect();
            s += &format!("| T{} | {} |\n", t.thread, cells.join(" | "));
        }
        s += "\nPaired ratios on / off: the median of the per-pair ratios, its 95 % bootstrap \
              interval and the two-sided sign test (pairs below 1 : above 1):\n\n\
              | thread | figure | median ratio | 95 % interval | below : above | p | claim |\n\
              |---|---|---|---|---|---|---|\n";
        for t in &self.threads {
            for (k, name) in ["p99", "p99.9", "max"].into_iter().enumerate() {
                s += &match &t.ratios[k] {
                    Some(r) => format!(
                        "| T{} | {name} | {:.2} | {:.2} – {:.2} | {} : {} | {} | {} |\n",
                        t.thread,
                        r.median,
                        r.lo,
                        r.hi,
                        r.below,
                        r.above,
                        g3(r.p),
                        r.claim().label()
                    ),
                    None => format!("| T{} | {name} | - | - | - | - | - |\n", t.thread),
                };
            }
        }
        s += "\nNoise: the spread (max / min) of the off runs alone, per thread:\n\n";
        for t in &self.threads {
            let [a, b, c] = t.off_spread.figures();
            s += &format!("- T{}: p99 {a:.2}x, p99.9 {b:.2}x, max {c:.2}x\n", t.thread);
        }
        s += "\n## Machine\n\n";
        s += &self.machine.markdown();
        s += "\n";
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        fs::write(dir.join(name), text).unwrap();
    }

    fn run_json(tails: &[(u32, [u64; 3])], trace: Option<(f64, u64)>) -> String {
        let threads: Vec<String> = tails
            .iter()
            .map(|(id, [p99, p999, max])| {
                format!(
                    "\"{id}\": {{\"max_ns\": {max}, \"quantiles_ns\": {{\"p99\": {p99}, \"p99.9\": {p999}}}}}"
                )
            })
            .collect();
        let trace = trace.map_or(String::new(), |(ms, ev)| {
            format!(", \"latscope\": {{\"trace\": {{\"reader_cpu_ms\": {ms}, \"events\": {ev}}}}}")
        });
        format!("{{\"thread\": {{{}}}{trace}}}", threads.join(", "))
    }

    /// A raw directory of three pairs, two threads (listed out of order),
    /// the second pair's explained count missing.
    fn raw() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "xtask-explain-overhead-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        write(
            &dir,
            "meta",
            "PAIRS=3\nSECS=10\nEXPLAIN=100\nELAPSED=62\nLOAD_START=\"1 2 3\"\nLOAD_END=\"1 1 1\"\nCOMMIT=\"abc\"\n",
        );
        write(
            &dir,
            "commands",
            "- off: `latscope -S`\n- on: `latscope -S --explain 100`\n",
        );
        let offs = [
            [100_000, 1_000_000, 5_000_000],
            [50_000, 900_000, 2_000_000],
            [80_000, 1_100_000, 3_000_000],
        ];
        let ons = [
            [110_000, 1_000_000, 4_000_000],
            [60_000, 800_000, 2_500_000],
            [90_000, 1_000_000, 3_500_000],
        ];
        for p in 0..3 {
            let off = run_json(&[(1, offs[p]), (0, offs[p])], None);
            let on = run_json(&[(0, ons[p]), (1, ons[p])], Some((7.0, 100_000)));
            write(&dir, &format!("off-{}.json", p + 1), &off);
            write(&dir, &format!("on-{}.json", p + 1), &on);
            if p != 1 {
                write(
                    &dir,
                    &format!("on-{}.explained", p + 1),
                    &format!("{}\n", 10 * (p + 1)),
                );
            }
        }
        dir
    }

    #[test]
    fn the_figures_are_the_runs_medians_ratios_and_spreads() {
        let dir = raw();
        let r = ExplainOverhead::from_raw(&dir).unwrap();
        assert_eq!(r.thread_ids, vec![0, 1]);
        assert_eq!(r.machine.commit, "abc");
        assert_eq!(r.machine.load_start, [1.0, 2.0, 3.0]);
        assert_eq!(r.pairs[0].explained, Some(10));
        assert_eq!(r.pairs[1].explained, None);
        let reader = r.pairs[2].reader.unwrap();
        assert!((reader.cpu_ms_per_s - 0.7).abs() < 1e-12 && reader.events_per_s == 10_000.0);
        let t = &r.threads[0];
        // off p99 50, 80, 100 µs; on 60, 90, 110
        assert_eq!((t.off.p99_us, t.on.p99_us), (80.0, 90.0));
        assert_eq!(t.off.max_us, 3000.0);
        // max / min of the off runs: 5000 / 2000
        assert_eq!(t.off_spread.max_us, 2.5);
        let p99 = t.ratios[0].as_ref().unwrap();
        assert_eq!((p99.below, p99.above, p99.n), (0, 3, 3));
        assert!((p99.median - 1.125).abs() < 1e-12, "{p99:?}");
        let md = r.markdown();
        assert!(md.contains("| 1 | 100 / 1000 / 5000 | 100 / 1000 / 5000 | 110 / 1000 / 4000 | 110 / 1000 / 4000 | 10 | 0.70 | 10000 |"), "{md}");
        assert!(
            md.contains("| T0 | 80 | 90 | 1.12 | 1000 | 1000 | 1.00 | 3000 | 3500 | 1.17 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| 2 | 50 / 900 / 2000 | 50 / 900 / 2000 | 60 / 800 / 2500 | 60 / 800 / 2500 | - |"
            ),
            "{md}"
        );
        assert!(
            md.contains("- T1: p99 2.00x, p99.9 1.22x, max 2.50x"),
            "{md}"
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn runs_whose_threads_differ_fail_and_name_the_file() {
        let dir = raw();
        write(&dir, "on-2.json", &run_json(&[(0, [1, 2, 3])], None));
        let e = ExplainOverhead::from_raw(&dir).unwrap_err().to_string();
        assert!(e.contains("on-2.json") && e.contains("threads [0]"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_explained_count_sums_every_run() {
        let p = Path::new("-");
        let two = r#"{"runs": [{"explained": {"total": 3}}, {"explained": {"total": 4}}]}"#;
        assert_eq!(explained(two, p).unwrap(), 7);
        assert!(explained(r#"{"runs": [{"explained": {}}]}"#, p).is_err());
        assert!(explained("not json", p).is_err());
    }
}
