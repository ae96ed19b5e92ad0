//! Helpers for the fleet tests: a listening recorder whose stderr is read
//! line by line, its metrics, and waiting for conditions with a deadline.

use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::host::{bins, http_get, stderr_lines, wait_for_line, Reaper};
use crate::wait::holds;

/// A listening recorder started by a test.
pub struct Recorder {
    /// The process.
    pub proc: Reaper,
    /// Its stderr, line by line.
    pub stderr: Receiver<String>,
    /// Where targets connect.
    pub addr: String,
    /// Its metrics address, if it serves metrics.
    pub metrics: Option<String>,
}

impl Recorder {
    /// `latscope-host record --listen 127.0.0.1:0 --out-dir OUT --metrics
    /// ADDR EXTRA...`; returns once it listens and its metrics answer.
    pub fn start(out: &std::path::Path, extra: &[&str]) -> Recorder {
        Self::start_on("127.0.0.1:0", out, extra)
    }

    /// As [`Recorder::start`], listening on `listen`. The metrics port is
    /// the one the recorder's own bind of port 0 got, read from its
    /// `metrics at` line: a port picked free beforehand can be handed to
    /// another test's socket before the recorder binds it.
    pub fn start_on(listen: &str, out: &std::path::Path, extra: &[&str]) -> Recorder {
        let mut proc = Reaper::new(
            Command::new(bins().host)
                .args([
                    "record",
                    "--listen",
                    listen,
                    "--metrics",
                    "127.0.0.1:0",
                    "--out-dir",
                ])
                .arg(out)
                .args(extra)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run latscope-host"),
        );
        let stderr = stderr_lines(proc.child());
        // the metrics server starts first
        let metrics = wait_for_line(&stderr, "metrics at http://", Duration::from_secs(10));
        let maddr = metrics.trim().trim_end_matches("/metrics").to_string();
        let addr = wait_for_line(&stderr, "listening on ", Duration::from_secs(10));
        let addr = addr.split(',').next().unwrap_or("").trim().to_string();
        holds(Duration::from_secs(10), "metrics answer", || {
            http_get(&maddr, "/").is_ok()
        });
        Recorder {
            proc,
            stderr,
            addr,
            metrics: Some(maddr),
        }
    }

    /// The current `/metrics` text.
    pub fn metrics(&self) -> String {
        let m = self.metrics.as_deref().expect("metrics address");
        http_get(m, "/metrics").map(|(_, b)| b).unwrap_or_default()
    }

    /// The value of the first series line starting with `prefix`.
    pub fn metric(&self, prefix: &str) -> Option<f64> {
        self.metrics()
            .lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    /// Send the recorder `sig`.
    pub fn signal(&mut self, sig: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.proc.child().id() as i32).expect("pid");
        rustix::process::kill_process(pid, sig).expect("kill");
    }
}

/// Collect stderr lines that arrive within `limit` after the process
/// exited (the reader thread ends with the pipe).
pub fn drain(rx: &Receiver<String>, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    let mut v = Vec::new();
    while let Ok(l) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        v.push(l);
    }
    v
}
