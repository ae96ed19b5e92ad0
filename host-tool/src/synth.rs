//! A synthetic target: produces the frame stream a `latscope` run would
//! send, from pseudo-random samples, with the exact totals kept aside. Used
//! by the unit tests and by the hidden `synth` subcommand that makes large
//! recordings for benchmarks.

use latscope_core::layout::Layout;
use latscope_core::wire::{
    bounded, Body, Bye, ByeReason, ClockKind, Degraded, DeltaEntry, Encoder, Hello, HistDelta,
    Level, LogLine, Policy, RunConfig, SnapshotChunk, SnapshotEntry, SpikeFlags, SpikeRecord,
    StartAlign, TargetInfo, ThreadInfo, ThreadStats, WakeMode, CHUNK_ENTRIES, DELTA_ENTRIES,
    SCHEMA_KEY,
};

/// How the synthetic run looks.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Measuring threads.
    pub threads: u16,
    /// Samples per thread per report.
    pub samples_per_report: u32,
    /// Reports in the run.
    pub reports: u32,
    /// A snapshot every this many reports.
    pub snapshot_every: u32,
    /// Spike threshold (ns).
    pub spike_ns: u64,
    /// Histogram-text range (µs).
    pub hist_us: u32,
    /// Seed of the sample generator.
    pub seed: u64,
    /// Host name in the hello.
    pub hostname: String,
    /// Run id.
    pub run_id: u64,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            threads: 2,
            samples_per_report: 1000,
            reports: 20,
            snapshot_every: 5,
            spike_ns: 100_000,
            hist_us: 400,
            seed: 0x5eed,
            hostname: "synth".into(),
            run_id: 42,
        }
    }
}

/// The exact figures of one synthetic thread.
#[derive(Debug, Clone)]
pub struct SynthThread {
    /// Cumulative bucket counts.
    pub hist: Vec<u64>,
    /// Cumulative statistics.
    pub stats: ThreadStats,
    /// Counts at the last report (for deltas).
    prev: Vec<u64>,
}

/// A synthetic run in progress.
pub struct Synth {
    /// Its configuration.
    pub cfg: SynthConfig,
    /// Its layout.
    pub layout: Layout,
    /// Exact per-thread state.
    pub threads: Vec<SynthThread>,
    enc: Encoder,
    rng: u64,
    epoch: u32,
}

impl Synth {
    /// A run that has not started.
    pub fn new(cfg: SynthConfig) -> Self {
        let layout = Layout::DEFAULT;
        let threads = (0..cfg.threads)
            .map(|i| SynthThread {
                hist: vec![0; layout.len()],
                prev: vec![0; layout.len()],
                stats: ThreadStats {
                    thread: i,
                    min: u64::MAX,
                    ..ThreadStats::default()
                },
            })
            .collect();
        let rng = cfg.seed | 1;
        Synth {
            cfg,
            layout,
            threads,
            enc: Encoder::new(),
            rng,
            epoch: 0,
        }
    }

    /// The hello frame's body.
    pub fn hello(&self) -> Hello {
        let mut threads = heapless::Vec::new();
        for i in 0..self.cfg.threads {
            let _ = threads.push(ThreadInfo {
                index: i,
                cpu: Some(i),
                tid: 1000 + u32::from(i),
                priority: 80,
                interval_ns: 1_000_000,
            });
        }
        Hello {
            schema: SCHEMA_KEY,
            tool_version: bounded("0.1.0"),
            run_id: self.cfg.run_id,
            target: TargetInfo {
                hostname: bounded(&self.cfg.hostname),
                arch: bounded("aarch64"),
                kernel: bounded("6.6.0-rt15"),
                preempt_rt: true,
                preempt_model: bounded("PREEMPT_RT"),
                cpus: self.cfg.threads,
                cmdline: bounded("console=ttyAMA0"),
                clocksource: bounded("arch_sys_counter"),
                rt_runtime_us: -1,
                argv: bounded("latscope -t 2 -p 80 --stream -"),
                name: bounded(&self.cfg.hostname),
            },
            config: RunConfig {
                policy: Policy::Fifo,
                priority: 80,
                interval_ns: 1_000_000,
                distance_ns: 0,
                clock: ClockKind::Monotonic,
                mlock: true,
                dma_latency_us: Some(0),
                timer_slack_ns: 0,
                duration_ns: u64::from(self.cfg.reports) * 1_000_000_000,
                loops: 0,
                warmup_cycles: 0,
                report_ns: 1_000_000_000,
                spike_ns: self.cfg.spike_ns,
                break_ns: 0,
                hist_us: self.cfg.hist_us,
                layout: self.layout,
                degraded: Degraded::default(),
                self_check: false,
                threads,
                wake: WakeMode::Absolute,
                align: StartAlign::Own,
                smi: false,
            },
        }
    }

    fn next_rng(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    fn sample(&mut self) -> u64 {
        let x = self.next_rng();
        match x % 10_000 {
            0 => 100_000 + (x >> 20) % 2_000_000,
            1..=99 => 20_000 + (x >> 20) % 80_000,
            _ => 3_000 + (x >> 20) % 12_000,
        }
    }

    /// Encode one frame and hand its bytes to `out`.
    fn emit(&mut self, body: Body, out: &mut dyn FnMut(&[u8])) {
        if let Ok(bytes) = self.enc.frame(body) {
            out(bytes);
        }
    }

    /// The whole run: hello, an initial snapshot, the reports and the bye.
    pub fn run(&mut self, out: &mut dyn FnMut(&[u8])) {
        self.start(out);
        for _ in 0..self.cfg.reports {
            self.report(out);
        }
        self.end(out);
    }

    /// The hello, a log line, and the (empty) snapshot of epoch 0.
    pub fn start(&mut self, out: &mut dyn FnMut(&[u8])) {
        let h = self.hello();
        self.emit(Body::Hello(h), out);
        self.emit(
            Body::Log(LogLine {
                level: Level::Info,
                text: bounded("synthetic run"),
            }),
            out,
        );
        for t in 0..self.threads.len() {
            let s = self.threads[t].stats;
            self.emit(Body::Stats(s), out);
            self.snapshot(t, out);
        }
    }

    /// One report interval: samples, deltas, stats, spikes; a snapshot
    /// every `snapshot_every` reports; a hello every 10.
    pub fn report(&mut self, out: &mut dyn FnMut(&[u8])) {
        self.epoch += 1;
        let epoch = self.epoch;
        if epoch.is_multiple_of(10) {
            let h = self.hello();
            self.emit(Body::Hello(h), out);
        }
        for t in 0..self.threads.len() {
            let mut imax = 0;
            let mut spikes = Vec::new();
            for _ in 0..self.cfg.samples_per_report {
                let ns = self.sample();
                let layout = self.layout;
                let th = &mut self.threads[t];
                let b = layout.bucket_of(ns);
                th.hist[b] += 1;
                let s = &mut th.stats;
                s.cycles += 1;
                s.count += 1;
                s.sum += ns;
                s.min = s.min.min(ns);
                s.max = s.max.max(ns);
                s.last = ns as i64;
                imax = imax.max(ns);
                if ns >= self.cfg.spike_ns || ns >= u64::from(self.cfg.hist_us) * 1000 {
                    spikes.push(SpikeRecord {
                        thread: t as u16,
                        cycle: s.cycles - 1,
                        deadline_ns: (s.cycles as i64) * 1_000_000,
                        latency_ns: ns as i64,
                        missed: 0,
                        flags: SpikeFlags {
                            spike: ns >= self.cfg.spike_ns,
                            overflow: ns >= u64::from(self.cfg.hist_us) * 1000,
                            brk: false,
                        },
                    });
                }
            }
            // Delta parts.
            let th = &mut self.threads[t];
            let changed: Vec<DeltaEntry> = th
                .hist
                .iter()
                .zip(th.prev.iter())
                .enumerate()
                .filter(|(_, (c, p))| c != p)
                .map(|(i, (c, p))| DeltaEntry {
                    bucket: i as u16,
                    count: (c - p) as u32,
                })
                .collect();
            th.prev.copy_from_slice(&th.hist);
            th.stats.epoch = epoch;
            th.stats.elapsed_ns = u64::from(epoch) * 1_000_000_000;
            th.stats.interval_max = imax;
            th.stats.last_report = epoch == self.cfg.reports;
            let stats = th.stats;
            let parts = changed.chunks(DELTA_ENTRIES).count().max(1) as u16;
            let mut part = 0u16;
            loop {
                let lo = usize::from(part) * DELTA_ENTRIES;
                let mut entries = heapless::Vec::new();
                for e in changed.iter().skip(lo).take(DELTA_ENTRIES) {
                    let _ = entries.push(*e);
                }
                self.emit(
                    Body::Delta(HistDelta {
                        thread: t as u16,
                        epoch,
                        part,
                        parts,
                        entries,
                    }),
                    out,
                );
                part += 1;
                if part >= parts {
                    break;
                }
            }
            self.emit(Body::Stats(stats), out);
            if epoch.is_multiple_of(self.cfg.snapshot_every) || epoch == self.cfg.reports {
                self.snapshot(t, out);
            }
            for r in spikes {
                self.emit(Body::Spike(r), out);
            }
        }
    }

    fn snapshot(&mut self, t: usize, out: &mut dyn FnMut(&[u8])) {
        let nonzero: Vec<SnapshotEntry> = self.threads[t]
            .hist
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| SnapshotEntry {
                bucket: i as u16,
                count: c,
            })
            .collect();
        let total = nonzero.chunks(CHUNK_ENTRIES).count().max(1) as u16;
        for index in 0..total {
            let mut entries = heapless::Vec::new();
            for e in nonzero
                .iter()
                .skip(usize::from(index) * CHUNK_ENTRIES)
                .take(CHUNK_ENTRIES)
            {
                let _ = entries.push(*e);
            }
            self.emit(
                Body::Chunk(SnapshotChunk {
                    thread: t as u16,
                    epoch: self.epoch,
                    index,
                    total,
                    entries,
                }),
                out,
            );
        }
    }

    /// The bye.
    pub fn end(&mut self, out: &mut dyn FnMut(&[u8])) {
        let bye = Bye {
            reason: ByeReason::Completed,
            epoch: self.epoch,
            elapsed_ns: u64::from(self.epoch) * 1_000_000_000,
            threads: self.cfg.threads,
            cycles: self.threads.iter().map(|t| t.stats.cycles).sum(),
            max_ns: self.threads.iter().map(|t| t.stats.max).max().unwrap_or(0),
            frames_dropped: 0,
            defects: 0,
        };
        self.emit(Body::Bye(bye), out);
    }

    /// The whole run as bytes.
    #[cfg(test)]
    pub fn bytes(cfg: SynthConfig) -> (Vec<u8>, Synth) {
        let mut s = Synth::new(cfg);
        let mut v = Vec::new();
        s.run(&mut |b| v.extend_from_slice(b));
        (v, s)
    }
}
