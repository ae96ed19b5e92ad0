//! A synthetic target: produces the frame stream a `latscope` run would
//! send, from pseudo-random samples, through core's [`Reporter`] (as the
//! target does), with the exact totals kept aside. Used by the unit tests
//! and by the hidden `synth` subcommand that makes large recordings for
//! benchmarks.

use latscope_core::hist::HistogramIn;
use latscope_core::layout::{Layout, DEFAULT_BUCKETS, DEFAULT_LINEAR_US};
use latscope_core::protocol::{Reporter, SideCounts, ThreadLog, TimerlatLogIn};
use latscope_core::seqlock::Snapshot;
use latscope_core::timerlat::{Context, Entry, Pairing};
use latscope_core::wire::{
    bounded, Body, Bye, ByeReason, Hello, Level, LogLine, Platform, Policy, RunConfig, SpikeFlags,
    SpikeSample, TargetInfo, ThreadInfo, ThreadStats, WakeMode, WallTime, NS_CLOCK_HZ, SCHEMA_KEY,
};

use std::io::{self, Write};
use std::path::Path;

use crate::error::{Error, Result, EXIT_OK};

const SEC: i64 = 1_000_000_000;

/// A synthetic run's default start: 2026-11-30 12:24:35 UTC.
const STARTED_UNIX_S: i64 = 1_796_041_475;
/// The synthetic target's offset from UTC.
const UTC_OFFSET_S: i32 = 3600;

/// `latscope-host synth`: the synthetic run `cfg` describes, as a
/// recording in `output` (standard output when `None`); exit status 0. A
/// failed write is an error.
pub fn run(cfg: SynthConfig, output: Option<&Path>) -> Result<u8> {
    let mut s = Synth::new(cfg);
    let what = output.unwrap_or(Path::new("stdout")).to_path_buf();
    let mut out: Box<dyn Write> = match output {
        Some(p) => Box::new(io::BufWriter::new(std::fs::File::create(p).map_err(
            |source| Error::Output {
                what: p.to_path_buf(),
                source,
            },
        )?)),
        None => Box::new(io::BufWriter::new(io::stdout().lock())),
    };
    let mut failed = None;
    s.run(&mut |b| {
        if failed.is_none() {
            if let Err(e) = out.write_all(b) {
                failed = Some(e);
            }
        }
    });
    if let Some(source) = failed.or_else(|| out.flush().err()) {
        return Err(Error::Output { what, source });
    }
    Ok(EXIT_OK)
}

/// How the synthetic run looks.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// Measuring threads.
    pub threads: u16,
    /// Samples per thread per report.
    pub samples_per_report: u32,
    /// Reports in the run.
    pub reports: u32,
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
    /// When the run started, in seconds since 1970 (UTC+1 local time).
    pub started_unix_s: i64,
    /// Every sample scaled by this many percent (a board that got slower).
    pub scale_pct: u32,
    /// Whether the run ends with a bye (without one, it is incomplete).
    pub bye: bool,
    /// How the samples follow one another.
    pub model: SampleModel,
    /// The timerlat mode (`--timerlat`): each sample is the user-space
    /// wake latency of a period whose kernel entries (IRQ, thread, return
    /// to user space) go into each thread's timerlat histograms, streamed
    /// as protocol version 6 has them.
    pub timerlat: bool,
    /// In the timerlat mode, every this many periods one is lost by the
    /// trace (0: none): its entries and the previous period's return are
    /// counted as lost.
    pub timerlat_lost_every: u32,
}

/// How a synthetic run's samples follow one another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum SampleModel {
    /// Each sample drawn on its own: 98.99 % from 3 to 15 µs, 1 % from 20
    /// to 100 µs, 0.01 % from 100 µs to 2.1 ms.
    #[default]
    Independent,
    /// Markov-modulated: the independent samples, interrupted by storms
    /// (entered with a chance of 1 in 2,500 per sample, left with 1 in
    /// 25: about 1 % of the samples) whose samples lie from 100 to 400 µs.
    /// Storms make samples above 100 µs come in clusters.
    Bursty,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            threads: 2,
            samples_per_report: 1000,
            reports: 20,
            spike_ns: 100_000,
            hist_us: 400,
            seed: 0x5eed,
            hostname: "synth".into(),
            run_id: 42,
            started_unix_s: STARTED_UNIX_S,
            scale_pct: 100,
            bye: true,
            model: SampleModel::Independent,
            timerlat: false,
            timerlat_lost_every: 0,
        }
    }
}

/// What a target's trace reader holds of one thread's CPU in the
/// timerlat mode, and the reporter's log of it.
#[derive(Debug, Clone)]
pub(crate) struct SynthTimerlat {
    /// Each context's histogram, in [`Context::ALL`]'s order.
    pub hists: [HistogramIn<Box<[u64]>>; 3],
    /// The entries' pairing.
    pub pairing: Pairing,
    log: TimerlatLogIn<Box<[u64]>>,
    /// The next period's sequence number.
    seq: u32,
    /// The last period's (sequence number, return-to-user latency), taken
    /// with the next period.
    pending_ret: Option<(u32, u64)>,
}

impl SynthTimerlat {
    fn new(index: u16, layout: Layout) -> Self {
        let mem = || vec![0u64; layout.len()].into_boxed_slice();
        let hist = || HistogramIn::with_counts(layout, mem()).expect("the layout's length");
        SynthTimerlat {
            hists: [hist(), hist(), hist()],
            pairing: Pairing::new(),
            log: TimerlatLogIn::with_memory(index, layout, [mem(), mem(), mem()])
                .expect("the layout's length"),
            seq: 1,
            pending_ret: None,
        }
    }

    fn take(&mut self, seqnum: u32, context: Context, latency_ns: u64) {
        self.pairing.take(&Entry {
            seqnum,
            context,
            latency_ns,
            ts_ns: 0,
        });
        self.hists[context.index()].add(latency_ns);
    }

    /// One period whose user-space wake latency is `wake_ns`: the kernel
    /// stamped its IRQ at a quarter of it and its thread at three
    /// quarters, and its return to user space comes a microsecond after
    /// the wake-up, at the next period. `lost`: the trace lost its entries.
    fn period(&mut self, wake_ns: u64, lost: bool) {
        let seq = self.seq;
        self.seq = self.seq.wrapping_add(1);
        if lost {
            self.pending_ret = None;
            return;
        }
        self.take(seq, Context::Irq, wake_ns / 4);
        self.take(seq, Context::Thread, wake_ns / 4 * 3);
        if let Some((s, ret)) = self.pending_ret.replace((seq, wake_ns + 1_000)) {
            self.take(s, Context::UserRet, ret);
        }
    }
}

/// The exact figures of one synthetic thread.
#[derive(Debug, Clone)]
pub(crate) struct SynthThread {
    /// Cumulative bucket counts, kept apart from the reporter's.
    pub hist: Vec<u64>,
    /// Cumulative statistics as last sent.
    pub stats: ThreadStats,
    /// What the thread's record would hold now.
    snap: Box<Snapshot<DEFAULT_BUCKETS>>,
    log: Box<ThreadLog<DEFAULT_BUCKETS>>,
    /// The timerlat mode's histograms of its CPU.
    pub timerlat: Option<SynthTimerlat>,
}

/// A synthetic run in progress.
pub struct Synth {
    /// Its configuration.
    pub(crate) cfg: SynthConfig,
    /// Its layout.
    pub(crate) layout: Layout,
    /// Exact per-thread state.
    pub(crate) threads: Vec<SynthThread>,
    rep: Reporter,
    rng: u64,
    /// Whether a storm is on ([`SampleModel::Bursty`]).
    storm: bool,
    now: i64,
}

impl Synth {
    /// A run that has not started.
    pub fn new(cfg: SynthConfig) -> Self {
        let layout = Layout::DEFAULT;
        let threads = (0..cfg.threads)
            .map(|i| {
                let log = Box::new(ThreadLog::new(i, DEFAULT_LINEAR_US));
                SynthThread {
                    hist: vec![0; layout.len()],
                    stats: *log.stats(),
                    snap: Box::new(Snapshot::new()),
                    log,
                    timerlat: cfg.timerlat.then(|| SynthTimerlat::new(i, layout)),
                }
            })
            .collect();
        let rng = cfg.seed | 1;
        Synth {
            cfg,
            layout,
            threads,
            rep: Reporter::new(0, SEC as u64),
            rng,
            storm: false,
            now: 0,
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
                node: 0,
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
                kernel_version: bounded("#1 SMP PREEMPT_RT Mon Nov 30 12:00:00 UTC 2026"),
                preempt_rt: true,
                preempt_model: bounded("PREEMPT_RT"),
                cpus: self.cfg.threads,
                cmdline: bounded("console=ttyAMA0"),
                clocksource: bounded("arch_sys_counter"),
                rt_runtime_us: -1,
                argv: bounded(if self.cfg.timerlat {
                    "latscope --timerlat -t 2 -a 0,1 -p 80 --stream -"
                } else {
                    "latscope -t 2 -p 80 --stream -"
                }),
                name: bounded(&self.cfg.hostname),
                platform: Platform::Linux,
                model: heapless::String::new(),
                clock_hz: NS_CLOCK_HZ,
                clock_resolution_ns: 1,
            },
            config: RunConfig {
                policy: Policy::Fifo,
                priority: 80,
                interval_ns: 1_000_000,
                mlock: true,
                dma_latency_us: Some(0),
                duration_ns: u64::from(self.cfg.reports) * 1_000_000_000,
                report_ns: 1_000_000_000,
                spike_ns: self.cfg.spike_ns,
                hist_us: self.cfg.hist_us,
                started: Some(WallTime {
                    unix_s: self.cfg.started_unix_s,
                    utc_offset_s: UTC_OFFSET_S,
                }),
                layout: self.layout,
                threads,
                wake: if self.cfg.timerlat {
                    WakeMode::Timerlat
                } else {
                    WakeMode::Absolute
                },
                ..RunConfig::default()
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
        if self.cfg.model == SampleModel::Bursty {
            let turn = self.next_rng() % 2_500;
            self.storm = if self.storm { turn >= 100 } else { turn == 0 };
        }
        let x = self.next_rng();
        if self.storm {
            return (100_000 + (x >> 20) % 300_000) * u64::from(self.cfg.scale_pct) / 100;
        }
        let ns = match x % 10_000 {
            0 => 100_000 + (x >> 20) % 2_000_000,
            1..=99 => 20_000 + (x >> 20) % 80_000,
            _ => 3_000 + (x >> 20) % 12_000,
        };
        ns * u64::from(self.cfg.scale_pct) / 100
    }

    /// Encode one frame and hand its bytes to `out`.
    fn emit(&mut self, body: Body, out: &mut dyn FnMut(&[u8])) {
        self.rep.send(body, &mut |b: &[u8]| out(b));
    }

    /// The whole run: hello, an initial snapshot, the reports and the bye.
    pub fn run(&mut self, out: &mut dyn FnMut(&[u8])) {
        self.start(out);
        for _ in 0..self.cfg.reports {
            self.report(out);
        }
        self.end(out);
    }

    /// The hello, a log line, and every thread's (empty) state of epoch 0,
    /// as at the start of a connection.
    pub(crate) fn start(&mut self, out: &mut dyn FnMut(&[u8])) {
        let h = self.hello();
        self.rep.hello(self.now, &h, &mut |b: &[u8]| out(b));
        self.emit(
            Body::Log(LogLine {
                level: Level::Info,
                text: bounded("synthetic run"),
            }),
            out,
        );
        for t in &self.threads {
            self.rep.resend(&t.log, &mut |b: &[u8]| out(b));
            if let Some(tl) = &t.timerlat {
                self.rep.resend_timerlat(&tl.log, &mut |b: &[u8]| out(b));
            }
        }
    }

    /// One report interval: samples, then the report of every thread
    /// (delta, statistics, snapshot chunk) and its spikes; a hello every
    /// 10 s; the last report is the final one.
    pub(crate) fn report(&mut self, out: &mut dyn FnMut(&[u8])) {
        self.now += SEC;
        if self.rep.hello_due(self.now) {
            let h = self.hello();
            self.rep.hello(self.now, &h, &mut |b: &[u8]| out(b));
        }
        let last = self.rep.epoch() + 1 == self.cfg.reports;
        if last {
            self.rep.begin_final(self.now);
        } else {
            self.rep.begin_report(self.now);
        }
        for t in 0..self.threads.len() {
            let spikes = self.sample_thread(t);
            let th = &mut self.threads[t];
            self.rep.report(
                &mut th.log,
                &th.snap,
                SideCounts::default(),
                &mut |b: &[u8]| out(b),
            );
            th.stats = *th.log.stats();
            if let Some(tl) = &mut th.timerlat {
                let r =
                    self.rep
                        .timerlat(&mut tl.log, &tl.hists, &tl.pairing, 0, &mut |b: &[u8]| {
                            out(b)
                        });
                debug_assert!(r.is_ok(), "one layout");
            }
            for r in spikes {
                self.emit(Body::Spike(r), out);
            }
        }
    }

    /// A report interval's samples of thread `t`, into its record and its
    /// exact histogram; returns the spike records they make.
    fn sample_thread(&mut self, t: usize) -> Vec<SpikeSample> {
        let mut spikes = Vec::new();
        for _ in 0..self.cfg.samples_per_report {
            let ns = self.sample();
            let b = self.layout.bucket_of(ns);
            let (spike_ns, hist_ns) = (self.cfg.spike_ns, u64::from(self.cfg.hist_us) * 1000);
            let every = u64::from(self.cfg.timerlat_lost_every);
            let th = &mut self.threads[t];
            if let Some(tl) = &mut th.timerlat {
                let lost = every > 0 && u64::from(tl.seq) % every == 0;
                tl.period(ns, lost);
            }
            th.hist[b] += 1;
            th.snap.buckets[b] = th.snap.buckets[b].wrapping_add(1);
            let c = &mut th.snap.counters;
            c.totals.add(ns);
            c.cycles += 1;
            c.last = ns as i64;
            if ns >= spike_ns || ns >= hist_ns {
                spikes.push(SpikeSample {
                    thread: t as u16,
                    cycle: c.cycles - 1,
                    deadline_ns: (c.cycles as i64) * 1_000_000,
                    latency_ns: ns as i64,
                    missed: 0,
                    flags: SpikeFlags {
                        spike: ns >= spike_ns,
                        overflow: ns >= hist_ns,
                        brk: false,
                    },
                });
            }
        }
        spikes
    }

    /// The bye (none if the configuration says so: the run is then
    /// incomplete).
    pub(crate) fn end(&mut self, out: &mut dyn FnMut(&[u8])) {
        if !self.cfg.bye {
            return;
        }
        let bye = Bye {
            reason: ByeReason::Completed,
            epoch: self.rep.epoch(),
            elapsed_ns: self.now as u64,
            threads: self.cfg.threads,
            cycles: self.threads.iter().map(|t| t.stats.cycles).sum(),
            max_ns: self.threads.iter().map(|t| t.stats.max).max().unwrap_or(0),
            frames_dropped: 0,
            defects: 0,
            ended: Some(WallTime {
                unix_s: self.cfg.started_unix_s + self.now / SEC,
                utc_offset_s: UTC_OFFSET_S,
            }),
        };
        self.emit(Body::Bye(bye), out);
    }

    /// The whole run as bytes.
    #[cfg(test)]
    pub(crate) fn bytes(cfg: SynthConfig) -> (Vec<u8>, Synth) {
        let mut s = Synth::new(cfg);
        let mut v = Vec::new();
        s.run(&mut |b| v.extend_from_slice(b));
        (v, s)
    }
}
