//! The hidden `simulate` subcommand: many synthetic targets over TCP into
//! one listening recorder, each at a real target's pace (one report per
//! second, 2 threads, 1000 samples per thread and report), encoded with
//! the core's own encoder. It reads the recorder's acks like a target and
//! waits for the ack of each bye. The exact figures of every run go to a
//! JSON file, for the fleet benchmark's exactness check.

use std::io::{self, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::thread;
use std::time::{Duration, Instant};

use latscope_core::wire::{AckReader, MAX_ACK_FRAME};
use serde_json::{json, Value};

use crate::console;
use crate::error::{Error, Result, EXIT_FAILED, EXIT_OK};
use crate::synth::{Synth, SynthConfig};

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimPlan {
    /// The recorder's `ADDR:PORT`.
    pub addr: String,
    /// Targets.
    pub targets: u32,
    /// Reports (seconds) per run.
    pub reports: u32,
    /// Board names are PREFIX-N.
    pub prefix: String,
    /// Where the exact figures go.
    pub truth: PathBuf,
}

/// One simulated target.
struct Sim {
    synth: Synth,
    stream: TcpStream,
    acks: AckReader,
    acked: Option<u32>,
    sent: u32,
    next: Instant,
}

impl Sim {
    fn send(&mut self, f: impl FnOnce(&mut Synth, &mut dyn FnMut(&[u8]))) -> io::Result<()> {
        let mut buf = Vec::with_capacity(4096);
        let mut frames = 0u32;
        f(&mut self.synth, &mut |b| {
            buf.extend_from_slice(b);
            frames += 1;
        });
        self.sent += frames;
        self.stream.write_all(&buf)
    }

    /// Take the acks that arrived, without waiting.
    fn poll_acks(&mut self) {
        let mut buf = [0u8; 16 * MAX_ACK_FRAME];
        while let Ok(n) = crate::platform::recv_nowait(&self.stream, &mut buf) {
            if n == 0 {
                return;
            }
            let acked = &mut self.acked;
            self.acks.feed_all(&buf[..n], |a| *acked = Some(a.seq));
        }
    }

    fn truth(&self) -> Value {
        let threads: Vec<Value> = self
            .synth
            .threads
            .iter()
            .map(|t| {
                let buckets: serde_json::Map<String, Value> = t
                    .hist
                    .iter()
                    .enumerate()
                    .filter(|(_, &c)| c > 0)
                    .map(|(i, &c)| (i.to_string(), json!(c)))
                    .collect();
                json!({
                    "count": t.stats.count,
                    "min_ns": t.stats.min,
                    "max_ns": t.stats.max,
                    "sum_ns": t.stats.sum,
                    "buckets": buckets,
                })
            })
            .collect();
        json!({
            "name": self.synth.cfg.hostname,
            "threads": threads,
            "frames": self.sent,
            "acked": self.acked,
        })
    }
}

/// Run the simulation; exit status 0 when every bye was acknowledged.
pub fn run(p: &SimPlan) -> Result<u8> {
    let io_err = |source| Error::Input {
        what: p.addr.clone(),
        source,
    };
    let start = Instant::now();
    let mut sims = Vec::new();
    for i in 0..p.targets {
        let stream = TcpStream::connect(&p.addr).map_err(io_err)?;
        let _ = stream.set_nodelay(true);
        let cfg = SynthConfig {
            threads: 2,
            samples_per_report: 1000,
            reports: p.reports,
            // `-h 1000` with no --spike: only samples above 1 ms are sent
            // one by one, as a real target does.
            spike_ns: 1_000_000,
            hist_us: 1000,
            seed: 0x5eed ^ u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            hostname: format!("{}-{i}", p.prefix),
            run_id: 0x51_0000_0000 | u64::from(i) | (u64::from(std::process::id()) << 40),
            ..SynthConfig::default()
        };
        // Spread the reports over the second, as unsynchronised boards are.
        let offset = Duration::from_secs(1) * i / p.targets.max(1);
        let mut sim = Sim {
            synth: Synth::new(cfg),
            stream,
            acks: AckReader::new(),
            acked: None,
            sent: 0,
            next: start + offset + Duration::from_secs(1),
        };
        sim.send(|s, out| s.start(out)).map_err(io_err)?;
        sims.push(sim);
    }
    pace(&mut sims, p.reports).map_err(io_err)?;
    let ok = wait_for_acks(&mut sims, Duration::from_secs(10));
    let truth: serde_json::Map<String, Value> = sims
        .iter()
        .map(|s| (format!("{:016x}", s.synth.cfg.run_id), s.truth()))
        .collect();
    let text = serde_json::to_string_pretty(&Value::Object(truth)).unwrap_or_default();
    std::fs::write(&p.truth, text).map_err(|source| Error::Output {
        what: p.truth.clone(),
        source,
    })?;
    Ok(if ok { EXIT_OK } else { EXIT_FAILED })
}

/// Send one report per target per second, then the byes.
fn pace(sims: &mut [Sim], reports: u32) -> io::Result<()> {
    let mut done = 0;
    while done < sims.len() {
        done = 0;
        let now = Instant::now();
        for s in sims.iter_mut() {
            s.poll_acks();
            let epoch = s.synth.threads.first().map_or(0, |t| t.stats.epoch);
            if epoch >= reports {
                done += 1;
                continue;
            }
            if now >= s.next {
                s.next += Duration::from_secs(1);
                s.send(|sy, out| sy.report(out))?;
                if epoch + 1 >= reports {
                    s.send(|sy, out| sy.end(out))?;
                }
            }
        }
        thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Wait until every target's last frame (its bye) is acknowledged.
fn wait_for_acks(sims: &mut [Sim], limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let mut all = true;
        for s in sims.iter_mut() {
            s.poll_acks();
            all &= s.acked == s.sent.checked_sub(1);
        }
        if all {
            return true;
        }
        if Instant::now() >= deadline {
            let missing = sims
                .iter()
                .filter(|s| s.acked != s.sent.checked_sub(1))
                .count();
            console::say(format_args!(
                "simulate: {missing} target(s) saw no ack of their bye"
            ));
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
}
