//! Forged streams, built with the core's own encoder: frames every decoder
//! accepts (good CRC, right version) whose content no latscope target
//! would send, to show what a hostile peer or a crafted file costs the host.

use latscope_core::layout::Layout;
use latscope_core::wire::{
    Body, Bye, ByeReason, Encoder, Hello, RunWriter, SnapshotChunk, SpikeFlags, SpikeSample,
    ThreadInfo, ThreadStats, MAX_THREADS, RUN_BYTES,
};
use latscope_host::synth::{Synth, SynthConfig};

/// One forged run: its hello, and which buckets its snapshots fill.
#[derive(Debug, Clone, Copy)]
pub struct ForgedRun {
    /// Run id (a new id starts a new run).
    pub run_id: u64,
    /// Threads the hello declares (at most [`MAX_THREADS`]).
    pub threads: u16,
    /// The layout the hello declares, legal or not.
    pub layout: Layout,
    /// Every `stride`-th bucket of every thread gets a count (1: all).
    pub stride: u16,
    /// Snapshot chunks per thread at most (the rest of the buckets are
    /// left out).
    pub max_chunks: u16,
    /// Statistics frames per thread, one per report (more fill the
    /// host's max-over-time series).
    pub reports: u32,
    /// Spike records per thread, each over `--spike` and past the
    /// histogram's range (more fill the host's lists of them).
    pub spikes: u32,
    /// End the run with its bye.
    pub bye: bool,
}

impl ForgedRun {
    /// A run of `threads` threads with `layout`, every bucket filled.
    pub fn full(run_id: u64, threads: u16, layout: Layout) -> ForgedRun {
        ForgedRun {
            run_id,
            threads,
            layout,
            stride: 1,
            max_chunks: u16::MAX,
            reports: 1,
            spikes: 0,
            bye: true,
        }
    }

    /// The run's frames, appended to `out`.
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut enc = Encoder::new();
        let mut put = |b: Body| {
            if let Ok(bytes) = enc.frame(b) {
                out.extend_from_slice(bytes);
            }
        };
        put(Body::Hello(self.hello()));
        let buckets: Vec<u16> = (0..self.layout.buckets)
            .step_by(usize::from(self.stride.max(1)))
            .collect();
        let chunks: Vec<(u16, u16, &[u16])> = chunks(&buckets, self.layout.buckets)
            .into_iter()
            .take(usize::from(self.max_chunks))
            .collect();
        for t in 0..self.threads {
            for &(start, end, c) in &chunks {
                put(Body::Chunk(chunk(t, start, end, c)));
            }
            let n = chunks.iter().map(|c| c.2.len() as u64).sum();
            for epoch in 1..=self.reports.max(1) {
                put(Body::Stats(stats(t, epoch, n)));
            }
            for cycle in 0..u64::from(self.spikes) {
                put(Body::Spike(spike(t, cycle)));
            }
        }
        if self.bye {
            put(Body::Bye(Bye {
                reason: ByeReason::Completed,
                epoch: 1,
                elapsed_ns: 1_000_000_000,
                threads: self.threads,
                cycles: 0,
                max_ns: 0,
                frames_dropped: 0,
                defects: 0,
                ended: None,
            }));
        }
    }

    /// A real hello (the synthetic target's) with this run's id, layout
    /// and threads.
    pub fn hello(&self) -> Hello {
        let mut h = Synth::new(SynthConfig::default()).hello();
        h.run_id = self.run_id;
        h.config.layout = self.layout;
        // -h as wide as the layout, and --spike 1 µs: every spike record
        // is kept as an overflow and a --spike line
        h.config.hist_us = self.layout.linear_us;
        h.config.spike_ns = 1000;
        h.config.threads.clear();
        for i in 0..self.threads.min(MAX_THREADS as u16) {
            let _ = h.config.threads.push(ThreadInfo {
                index: i,
                cpu: Some(i),
                tid: 1000 + u32::from(i),
                priority: 80,
                interval_ns: 1_000_000,
                node: -1,
            });
        }
        h
    }
}

/// `buckets` (increasing) split into the ranges of snapshot chunks whose
/// runs (a count of 1 each) fit a frame: `(start, end, buckets)`, the
/// last range ending at `len`.
fn chunks(buckets: &[u16], len: u16) -> Vec<(u16, u16, &[u16])> {
    let mut out = Vec::new();
    let (mut from, mut start) = (0, 0u16);
    let mut w = RunWriter::new(start, RUN_BYTES);
    for (i, &b) in buckets.iter().enumerate() {
        if !w.push(b, 1) {
            out.push((start, b, &buckets[from..i]));
            (from, start) = (i, b);
            w = RunWriter::new(start, RUN_BYTES);
            w.push(b, 1);
        }
    }
    if from < buckets.len() {
        out.push((start, len, &buckets[from..]));
    }
    out
}

fn chunk(thread: u16, start: u16, end: u16, buckets: &[u16]) -> SnapshotChunk {
    let mut w = RunWriter::new(start, RUN_BYTES);
    for &b in buckets {
        w.push(b, 1);
    }
    SnapshotChunk {
        thread,
        epoch: 1,
        start,
        end,
        runs: w.finish(),
    }
}

fn spike(thread: u16, cycle: u64) -> SpikeSample {
    SpikeSample {
        thread,
        cycle,
        deadline_ns: cycle as i64 * 1_000_000,
        latency_ns: 100_000 + cycle as i64,
        missed: 0,
        flags: SpikeFlags {
            spike: true,
            overflow: true,
            brk: false,
        },
    }
}

fn stats(thread: u16, epoch: u32, count: u64) -> ThreadStats {
    ThreadStats {
        thread,
        epoch,
        elapsed_ns: u64::from(epoch) * 1_000_000_000,
        cycles: count,
        count,
        sum: count,
        min: 1,
        max: 1,
        interval_max: u64::from(epoch),
        last: 1,
        last_report: true,
        ..ThreadStats::default()
    }
}

/// `runs` runs one after the other, each [`ForgedRun::full`] with
/// `threads` threads and `layout`: the most a stream can ask the host to
/// keep.
pub fn many_full_runs(runs: u64, threads: u16, layout: Layout) -> Vec<u8> {
    let mut out = Vec::new();
    for r in 0..runs {
        ForgedRun::full(0xF0_0000 + r, threads, layout).write(&mut out);
    }
    out
}

/// The stream of the original finding: hellos that each declare
/// [`MAX_THREADS`] threads of a 65 535-bucket layout, followed by one
/// snapshot chunk per thread (a new run each), `runs` times.
pub fn wide_hellos(runs: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for r in 0..runs {
        ForgedRun {
            run_id: 0xBAD0_0000 + r,
            threads: MAX_THREADS as u16,
            layout: Layout {
                linear_us: 1000,
                buckets: u16::MAX,
            },
            stride: u16::MAX,
            max_chunks: 1,
            reports: 1,
            spikes: 0,
            bye: false,
        }
        .write(&mut out);
    }
    out
}
