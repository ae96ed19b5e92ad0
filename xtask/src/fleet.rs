//! fleet's result: N targets into one recorder on loopback, every figure
//! from the raw outputs the launcher (`bench/fleet`) keeps, per size
//! `nN/`:
//!
//! - `cpu-ticks`: the recorder's utime+stime at the start and the end of
//!   the steady window, the window's wall-clock ends (s) and `CLK_TCK`;
//! - `samples`: one line a second, `t_s rss_kB fds scrape_s` (the scrape
//!   time as `curl -w %{time_total}` writes it, 0 when it failed);
//! - `rec/*.lsr.json`: `latscope-host report --format json` of each
//!   recording, `json/real-K.json` the real targets' own `--json` and
//!   `truth.json` the simulator's exact figures (deleted once the result
//!   is written; the result keeps the verdict);
//! - `meta` (top): `SECS`, `SIZES`, `REAL`, the load averages and the
//!   commit.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::stats::median;
use crate::Error;

/// `cargo xtask fleet-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where fleet.json and fleet.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its table.
///
/// # Errors
///
/// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for raw outputs that
/// cannot be read; [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = Fleet::from_raw(&args.raw)?;
    results::write(&args.out, &r)?;
    print!("{}", r.table());
    Ok(())
}

/// `/metrics` scrape times, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scrapes {
    /// Scrapes that answered.
    pub answered: usize,
    /// Their median, ms.
    pub median_ms: f64,
    /// Their maximum, ms.
    pub max_ms: f64,
}

/// One fleet size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Size {
    /// Targets in all.
    pub targets: u32,
    /// Of them, real `latscope` processes.
    pub real: u32,
    /// The recorder's utime+stime over the steady window, % of one core.
    pub recorder_cpu_percent: f64,
    /// The largest VmRSS sampled, MiB.
    pub peak_rss_mib: f64,
    /// The most open descriptors sampled.
    pub peak_fds: u64,
    /// The samples (one a second).
    pub samples: usize,
    /// The scrapes that answered, if any did.
    pub scrapes: Option<Scrapes>,
    /// Recordings the recorder wrote (whose report could be read).
    pub recordings: u32,
    /// Of them, those whose final figures equal the target's own or the
    /// simulator's.
    pub exact: u32,
    /// The recordings that were not exact, by file name.
    pub not_exact: Vec<String>,
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// Seconds each size ran.
    pub secs: u64,
    /// Every size, in the order they ran.
    pub sizes: Vec<Size>,
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

/// The recorder's CPU share of `cpu-ticks`: `c0 c1 t0 t1 hz`.
fn cpu_percent(path: &Path) -> Result<f64, Error> {
    let text = fs::read_to_string(path).map_err(Error::io(path))?;
    let v: Vec<f64> = text
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .map_err(|_| parse_err(path, "not five numbers"))?;
    let [c0, c1, t0, t1, hz] = v[..] else {
        return Err(parse_err(path, "not five numbers"));
    };
    if t1 <= t0 || hz <= 0.0 {
        return Err(parse_err(path, "an empty window or no CLK_TCK"));
    }
    Ok((c1 - c0) / hz / (t1 - t0) * 100.0)
}

/// A sample line: `t_s rss_kB fds scrape_s`.
struct Sample {
    rss_kb: u64,
    fds: u64,
    scrape_s: f64,
}

fn samples(path: &Path) -> Result<Vec<Sample>, Error> {
    let text = fs::read_to_string(path).map_err(Error::io(path))?;
    Ok(text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [_, rss, fds, scrape] = f[..] else {
                return None;
            };
            Some(Sample {
                rss_kb: rss.parse().ok()?,
                fds: fds.parse().ok()?,
                scrape_s: scrape.parse().ok()?,
            })
        })
        .collect())
}

/// A JSON number as u64 (the counts and nanoseconds of both documents).
fn n(v: &Value) -> Option<u64> {
    v.as_u64()
}

/// Whether the report's run equals the target's own `--json`: per thread
/// cycles, count, min, max and every histogram row below 1000 µs.
fn exact_vs_target(run: &Value, target: &Value) -> bool {
    let (Some(threads), Some(own)) = (run["threads"].as_array(), target["thread"].as_object())
    else {
        return false;
    };
    run["exact_at_end"].as_bool() == Some(true)
        && threads.len() == own.len()
        && threads.iter().enumerate().all(|(i, h)| {
            let x = &own[&i.to_string()];
            let same = ["cycles", "count", "min_ns", "max_ns"]
                .iter()
                .all(|k| n(&h[k]).is_some() && n(&h[k]) == n(&x[k]));
            let rows: Option<BTreeMap<String, u64>> = h["buckets"].as_array().map(|b| {
                b.iter()
                    .filter_map(|b| Some((n(&b["lower_us"])?, n(&b["count"])?)))
                    .filter(|&(lower, _)| lower < 1000)
                    .map(|(lower, count)| (lower.to_string(), count))
                    .collect()
            });
            let hist: Option<BTreeMap<String, u64>> = x["histogram"].as_object().map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), n(v)?)))
                    .collect()
            });
            same && rows.is_some() && rows == hist
        })
}

/// Whether the report's run equals the simulator's exact figures: per
/// thread count, min, max and every bucket.
fn exact_vs_truth(run: &Value, truth: &Value) -> bool {
    let (Some(threads), Some(want)) = (run["threads"].as_array(), truth["threads"].as_array())
    else {
        return false;
    };
    run["exact_at_end"].as_bool() == Some(true)
        && threads.len() == want.len()
        && threads.iter().zip(want).all(|(h, x)| {
            let same = ["count", "min_ns", "max_ns"]
                .iter()
                .all(|k| n(&h[k]).is_some() && n(&h[k]) == n(&x[k]));
            let buckets: Option<BTreeMap<String, u64>> = h["buckets"].as_array().map(|b| {
                b.iter()
                    .filter_map(|b| Some((n(&b["bucket"])?.to_string(), n(&b["count"])?)))
                    .collect()
            });
            let truth: Option<BTreeMap<String, u64>> = x["buckets"].as_object().map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), n(v)?)))
                    .collect()
            });
            same && buckets.is_some() && buckets == truth
        })
}

/// The `--json=FILE` of a target's command line.
fn json_option(argv: &str) -> Option<&str> {
    argv.split_whitespace()
        .find_map(|a| a.strip_prefix("--json="))
}

/// The exactness of the recordings of size directory `dir`: recordings
/// read, exact, and the names of those that were not.
fn exactness(dir: &Path) -> Result<(u32, u32, Vec<String>), Error> {
    let truth_path = dir.join("truth.json");
    let truth = if truth_path.exists() {
        json(&truth_path)?
    } else {
        Value::Null
    };
    let rec = dir.join("rec");
    let mut files: Vec<PathBuf> = match fs::read_dir(&rec) {
        Ok(d) => d
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".lsr.json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
        Err(e) => return Err(Error::io(&rec)(e)),
    };
    files.sort();
    let (mut read, mut exact, mut not_exact) = (0, 0, vec![]);
    for f in files {
        let Ok(report) = json(&f) else { continue };
        let run = &report["runs"][0];
        if run.is_null() {
            continue;
        }
        read += 1;
        let id = match &run["run_id"] {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let ok = if let Some(t) = truth.get(&id) {
            exact_vs_truth(run, t)
        } else {
            run["target"]["argv"]
                .as_str()
                .and_then(json_option)
                .and_then(|p| json(Path::new(p)).ok())
                .is_some_and(|target| exact_vs_target(run, &target))
        };
        if ok {
            exact += 1;
        } else {
            let name = f
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            not_exact.push(name);
        }
    }
    Ok((read, exact, not_exact))
}

impl Fleet {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`], [`Error::Json`] or [`Error::Parse`] for a file that
    /// is missing or not what the launcher writes.
    pub fn from_raw(raw: &Path) -> Result<Fleet, Error> {
        let meta = MetaFile::read(raw)?;
        let machine = meta.machine()?;
        let real_max: u32 = meta.num("REAL")?;
        let mut sizes = vec![];
        for size in meta.need("SIZES")?.split_whitespace() {
            let targets: u32 = size
                .parse()
                .map_err(|_| parse_err(&raw.join("meta"), format!("size {size:?}")))?;
            let dir = raw.join(format!("n{targets}"));
            let s = samples(&dir.join("samples"))?;
            let scrapes_ms: Vec<f64> = s
                .iter()
                .filter(|x| x.scrape_s > 0.0)
                .map(|x| x.scrape_s * 1e3)
                .collect();
            let scrapes = median(&scrapes_ms).map(|median_ms| Scrapes {
                answered: scrapes_ms.len(),
                median_ms,
                max_ms: scrapes_ms.iter().copied().fold(0.0, f64::max),
            });
            let (recordings, exact, not_exact) = exactness(&dir)?;
            sizes.push(Size {
                targets,
                real: targets.min(real_max),
                recorder_cpu_percent: cpu_percent(&dir.join("cpu-ticks"))?,
                peak_rss_mib: s.iter().map(|x| x.rss_kb).max().unwrap_or(0) as f64 / 1024.0,
                peak_fds: s.iter().map(|x| x.fds).max().unwrap_or(0),
                samples: s.len(),
                scrapes,
                recordings,
                exact,
                not_exact,
            });
        }
        Ok(Fleet {
            machine,
            secs: meta.num("SECS")?,
            sizes,
        })
    }

    /// The table, a row per size.
    pub fn table(&self) -> String {
        let mut s = String::from(
            "| targets (real + simulated) | recorder CPU, % of one core | peak RSS, MiB | peak fds | /metrics scrape, ms (median / max) | exact recordings |\n\
             |---|---|---|---|---|---|\n",
        );
        for z in &self.sizes {
            let scrapes = z.scrapes.map_or("- / -".into(), |x| {
                format!("{:.1} / {:.1}", x.median_ms, x.max_ms)
            });
            s += &format!(
                "| {} ({} + {}) | {:.2} | {:.1} | {} | {scrapes} | {} of {} |\n",
                z.targets,
                z.real,
                z.targets - z.real,
                z.recorder_cpu_percent,
                z.peak_rss_mib,
                z.peak_fds,
                z.exact,
                z.targets
            );
        }
        s
    }
}

impl Report for Fleet {
    const NAME: &'static str = "fleet";

    fn markdown(&self) -> String {
        let sizes: Vec<String> = self.sizes.iter().map(|z| z.targets.to_string()).collect();
        let mut s = format!(
            "# Fleet: N targets into one recorder on loopback\n\n\
             Command: `bench/fleet --secs {} --sizes \"{}\"`.\n\n",
            self.secs,
            sizes.join(" ")
        );
        s += "How: the recorder's utime+stime over the steady window (5 s after the\n\
              start to 5 s before the end) per wall second; peak VmRSS and open\n\
              descriptors of one sample a second; one `curl` of /metrics a second\n\
              (median and max); a recording is exact when its final figures equal\n\
              the target's own --json (count, min, max, every histogram row) or the\n\
              simulator's exact figures (count, min, max, every bucket). Real\n\
              targets: `latscope -t 2 -i 1000 -h 1000`; simulated ones send the same\n\
              frames at the same rate. Raw samples and logs: `bench/results/fleet/`;\n\
              figures: `cargo xtask fleet-table` (`fleet.json`).\n\n";
        s += &self.table();
        for z in self.sizes.iter().filter(|z| !z.not_exact.is_empty()) {
            s += &format!(
                "\nNot exact at {} targets: {}\n",
                z.targets,
                z.not_exact.join(", ")
            );
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

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("xtask-fleet-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("n2/rec")).unwrap();
        fs::create_dir_all(d.join("n2/json")).unwrap();
        d
    }

    fn report(run_id: &str, argv: &str, count: u64, exact: bool) -> String {
        format!(
            r#"{{"runs": [{{"run_id": "{run_id}", "exact_at_end": {exact}, "target": {{"argv": "{argv}"}},
            "threads": [{{"cycles": 10, "count": {count}, "min_ns": 1000, "max_ns": 2000000,
              "buckets": [{{"lower_us": 1, "bucket": 1, "count": 9}}, {{"lower_us": 2000, "bucket": 99, "count": 1}}]}}]}}]}}"#
        )
    }

    /// Size 2: one real target (its own --json), one simulated (truth).
    fn raw(name: &str, real_count: u64) -> PathBuf {
        let d = dir(name);
        fs::write(
            d.join("meta"),
            "SECS=40\nSIZES=\"2\"\nREAL=1\nLOAD_START=\"1 1 1\"\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        fs::write(d.join("n2/cpu-ticks"), "100 130 10.0 40.0 100\n").unwrap();
        fs::write(
            d.join("n2/samples"),
            "0 4096 10 0.0005\n1 6144 12 0.0009\n2 5120 11 0\n3 5120 11 0.0007\nbroken\n",
        )
        .unwrap();
        let own = d.join("n2/json/real-1.json");
        fs::write(
            &own,
            r#"{"thread": {"0": {"cycles": 10, "count": 10, "min_ns": 1000, "max_ns": 2000000, "histogram": {"1": 9}}}}"#,
        )
        .unwrap();
        let argv = format!("latscope -t 2 --json={}", own.display());
        fs::write(
            d.join("n2/rec/a.lsr.json"),
            report("r1", &argv, real_count, true),
        )
        .unwrap();
        fs::write(
            d.join("n2/rec/b.lsr.json"),
            report("s1", "simulate", 10, true),
        )
        .unwrap();
        fs::write(
            d.join("n2/truth.json"),
            r#"{"s1": {"threads": [{"count": 10, "min_ns": 1000, "max_ns": 2000000, "buckets": {"1": 9, "99": 1}}]}}"#,
        )
        .unwrap();
        d
    }

    #[test]
    fn the_figures_come_from_the_samples_ticks_and_recordings() {
        let d = raw("exact", 10);
        let f = Fleet::from_raw(&d).unwrap();
        let z = &f.sizes[0];
        // 30 ticks of 100 Hz over 30 s: 1 %
        assert!((z.recorder_cpu_percent - 1.0).abs() < 1e-12);
        assert_eq!((z.peak_rss_mib, z.peak_fds, z.samples), (6.0, 12, 4));
        let s = z.scrapes.unwrap();
        assert_eq!(s.answered, 3);
        assert!((s.median_ms - 0.7).abs() < 1e-9 && (s.max_ms - 0.9).abs() < 1e-9);
        assert_eq!((z.recordings, z.exact, z.real), (2, 2, 1));
        assert!(
            f.table()
                .contains("| 2 (1 + 1) | 1.00 | 6.0 | 12 | 0.7 / 0.9 | 2 of 2 |"),
            "{}",
            f.table()
        );
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_recording_that_differs_is_not_exact_and_named() {
        let d = raw("differs", 11);
        let f = Fleet::from_raw(&d).unwrap();
        assert_eq!(f.sizes[0].exact, 1);
        assert_eq!(f.sizes[0].not_exact, vec!["a.lsr.json".to_string()]);
        assert!(f.markdown().contains("Not exact at 2 targets: a.lsr.json"));
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_run_without_exact_figures_at_its_end_is_not_exact() {
        let run: Value = serde_json::from_str(&report("s1", "x", 10, false)).unwrap();
        let truth: Value = serde_json::from_str(
            r#"{"threads": [{"count": 10, "min_ns": 1000, "max_ns": 2000000, "buckets": {"1": 9, "99": 1}}]}"#,
        )
        .unwrap();
        assert!(!exact_vs_truth(&run["runs"][0], &truth));
        let exact: Value = serde_json::from_str(&report("s1", "x", 10, true)).unwrap();
        assert!(exact_vs_truth(&exact["runs"][0], &truth));
    }

    #[test]
    fn bad_ticks_are_an_error() {
        let d = dir("ticks");
        fs::write(d.join("t"), "1 2 3\n").unwrap();
        assert!(cpu_percent(&d.join("t")).is_err());
        fs::write(d.join("t"), "1 2 5 5 100\n").unwrap();
        assert!(cpu_percent(&d.join("t")).is_err());
        let _ = fs::remove_dir_all(&d);
    }
}
