//! sync-cost's result: what durable acknowledgements cost, the
//! recorder's fdatasync and fsync calls against the frames it recorded.
//! Every figure from the raw outputs the launcher (`bench/sync-cost`)
//! keeps:
//!
//! - `counts`: `strace -f --seccomp-bpf -c -e trace=fdatasync,fsync` of
//!   the recorder;
//! - `rec/*.lsr.json`: `latscope-host report --format json` of each
//!   recording (its `link.frames`);
//! - `meta`: `SECS` and `TARGETS` asked, `T0` and `T1` (the simulation's
//!   wall-clock ends, s), `DATE`, the load averages and the commit.

use std::fs;
use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::machine::Machine;
use crate::meta::MetaFile;
use crate::results::{self, Report};
use crate::samples::strace_calls;
use crate::Error;

/// `cargo xtask sync-cost-table`.
#[derive(ClapArgs)]
pub struct Args {
    /// The raw outputs of the run.
    #[arg(long)]
    pub raw: PathBuf,
    /// Where sync-cost.json and sync-cost.md are written.
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the result of `args.raw` and prints its table.
///
/// # Errors
///
/// [`Error::Io`] or [`Error::Parse`] for raw outputs that cannot be read;
/// [`Error::Io`] for results that cannot be written.
pub fn run(args: &Args) -> Result<(), Error> {
    let r = SyncCost::from_raw(&args.raw)?;
    results::write(&args.out, &r)?;
    print!("{}", r.table());
    Ok(())
}

/// The result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyncCost {
    /// The machine and the commit measured.
    pub machine: Machine,
    /// The day it ran (UTC).
    pub date: String,
    /// `--secs`: reports per simulated target.
    pub secs: u64,
    /// Simulated targets.
    pub targets: u64,
    /// The simulation's wall-clock time, s.
    pub seconds: f64,
    /// The recorder's fdatasync calls.
    pub fdatasync: u64,
    /// Its fsync calls (directories).
    pub fsync: u64,
    /// Frames in every recording (the host's `link.frames`); recordings
    /// whose report could not be read count none.
    pub frames: u64,
    /// Recordings whose report could not be read.
    pub unread_recordings: u64,
}

impl SyncCost {
    /// The result of the raw outputs in `raw`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] or [`Error::Parse`] for `meta` or `counts` missing or
    /// not what the launcher writes.
    pub fn from_raw(raw: &Path) -> Result<SyncCost, Error> {
        let meta = MetaFile::read(raw)?;
        let counts_path = raw.join("counts");
        let counts = fs::read_to_string(&counts_path).map_err(Error::io(&counts_path))?;
        let calls = |name: &str| strace_calls(&counts, name).unwrap_or(0.0) as u64;
        let (t0, t1): (f64, f64) = (meta.num("T0")?, meta.num("T1")?);
        if t1 <= t0 {
            return Err(Error::Parse {
                what: raw.join("meta").display().to_string(),
                why: format!("T1 {t1} is not after T0 {t0}"),
            });
        }
        let (mut frames, mut unread) = (0, 0);
        let rec = raw.join("rec");
        let mut reports: Vec<PathBuf> = fs::read_dir(&rec)
            .map_err(Error::io(&rec))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".lsr.json"))
            .collect();
        reports.sort();
        for p in reports {
            let n = fs::read_to_string(&p)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .and_then(|v| v["link"]["frames"].as_u64());
            match n {
                Some(n) => frames += n,
                None => unread += 1,
            }
        }
        Ok(SyncCost {
            machine: meta.machine()?,
            date: meta.need("DATE")?,
            secs: meta.num("SECS")?,
            targets: meta.num("TARGETS")?,
            seconds: t1 - t0,
            fdatasync: calls("fdatasync"),
            fsync: calls("fsync"),
            frames,
            unread_recordings: unread,
        })
    }

    /// The table: a header and one row.
    pub fn table(&self) -> String {
        let s = self.seconds;
        let a = self.fdatasync as f64;
        let per_frame = if self.frames == 0 {
            "-".into()
        } else {
            format!("{:.2}", a / self.frames as f64)
        };
        format!(
            "| targets | seconds | fdatasync | fdatasync / s | fsync (directories) | frames / s | syncs / s per target | syncs per frame |\n\
             |---|---|---|---|---|---|---|---|\n\
             | {} | {s:.1} | {} | {:.1} | {} | {:.1} | {:.1} | {per_frame} |\n",
            self.targets,
            self.fdatasync,
            a / s,
            self.fsync,
            self.frames as f64 / s,
            a / s / self.targets.max(1) as f64,
        )
    }
}

impl Report for SyncCost {
    const NAME: &'static str = "sync-cost";

    fn markdown(&self) -> String {
        let mut s = format!(
            "# Cost of durable acknowledgements\n\n\
             `bench/sync-cost --secs {} --targets {}` ({}): one listening recorder, {}\n\
             targets simulated by `latscope-host simulate` (2 threads, a report a second), the\n\
             recorder's fdatasync and fsync calls counted by `strace -f --seccomp-bpf -c`.\n\
             A recording is synced before the acknowledgement that covers it, in batches:\n\
             at most every 250 ms per run while frames keep coming, at once for a run's bye,\n\
             and when a connection goes quiet (500 ms); the directory once per new recording.\n\
             Figures: `cargo xtask sync-cost-table` (`sync-cost.json`).\n\n",
            self.secs, self.targets, self.date, self.targets
        );
        s += &self.table();
        if self.unread_recordings > 0 {
            s += &format!(
                "\n{} recordings' reports could not be read; their frames are not counted.\n",
                self.unread_recordings
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

    #[test]
    fn the_row_from_strace_counts_and_reports() {
        let dir = std::env::temp_dir().join(format!("xtask-sync-cost-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("rec")).unwrap();
        fs::write(
            dir.join("meta"),
            "SECS=30\nTARGETS=2\nT0=100.0\nT1=110.0\nDATE=2026-12-02\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        fs::write(
            dir.join("counts"),
            "% time     seconds  usecs/call     calls    errors syscall\n\
             ------ ----------- ----------- --------- --------- ----------------\n\
              99.90    0.123456          15        50           fdatasync\n\
               0.10    0.000123           1         2           fsync\n\
             ------ ----------- ----------- --------- --------- ----------------\n\
             100.00    0.123579          14        52           total\n",
        )
        .unwrap();
        fs::write(dir.join("rec/a.lsr.json"), r#"{"link": {"frames": 120}}"#).unwrap();
        fs::write(dir.join("rec/b.lsr.json"), r#"{"link": {"frames": 80}}"#).unwrap();
        fs::write(dir.join("rec/c.lsr.json"), "cut short").unwrap();
        let r = SyncCost::from_raw(&dir).unwrap();
        assert_eq!(
            (r.fdatasync, r.fsync, r.frames, r.unread_recordings),
            (50, 2, 200, 1)
        );
        let t = r.table();
        assert!(
            t.contains("| 2 | 10.0 | 50 | 5.0 | 2 | 20.0 | 2.5 | 0.25 |"),
            "{t}"
        );
        assert!(r
            .markdown()
            .contains("1 recordings' reports could not be read"));
        fs::write(
            dir.join("meta"),
            "SECS=30\nTARGETS=2\nT0=110.0\nT1=110.0\nDATE=x\nCOMMIT=\"abc\"\n",
        )
        .unwrap();
        assert!(SyncCost::from_raw(&dir).is_err());
        let _ = fs::remove_dir_all(&dir);
    }
}
