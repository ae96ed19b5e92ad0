//! latscope-core on a bare-metal target, run here on the host:
//!
//! * a [`Clock`] (on a microcontroller: a free-running timer and a compare
//!   interrupt; here a simulated one that wakes 2 to 40 µs late, now and
//!   then much later);
//! * a [`Cycle`] that turns wake-ups into samples, recorded into a static
//!   [`SharedHistogram`] (the measuring context's only memory);
//! * a [`Reporter`] in the reporting context that reads the shared histogram once a
//!   second and writes the protocol's frames into a buffer (on a
//!   microcontroller, the UART's DMA buffer), paced by a [`Pacer`] as on a
//!   115200-baud line, its reports within that line's byte budget
//!   ([`line_budget`]).
//!
//! It then decodes its own output with a [`Decoder`] and an [`Assembler`],
//! as latscope-host does, and shows that the histogram round-trips exactly.
//!
//! `cargo run -p latscope-core --example bare_metal`

use latscope_core::cycle::{Clock, Cycle, CycleConfig, SleepError, Step};
use latscope_core::layout::{buckets_for, Layout, MIN_TOP_US};
use latscope_core::protocol::{
    line_budget, ArrayStore, Assembler, FrameSink, Pacer, Reporter, SideCounts, SliceSink,
    ThreadLog,
};
use latscope_core::seqlock::{SharedHistogram, Snapshot};
use latscope_core::stats::Ppm;
use latscope_core::wire::{
    bounded, Body, Bye, ByeReason, Decoder, Hello, Policy, RunConfig, TargetInfo, ThreadInfo,
    MAX_FRAME, SCHEMA_KEY,
};

/// 200 µs at 1 µs resolution, then ≤ 1 % buckets up to 60 s.
const LINEAR_US: u32 = 200;
const N: usize = buckets_for(LINEAR_US, MIN_TOP_US);
const INTERVAL_NS: u64 = 1_000_000;
const SEC: i64 = 1_000_000_000;

/// The measuring context's shared histogram: in a static, no allocator needed.
static RECORD: SharedHistogram<N> = SharedHistogram::new(LINEAR_US);

/// A simulated timer: sleeping moves time to the deadline plus a wake-up
/// latency. It honours the [`Clock`] contract: monotonic, and it may wake
/// late (and would be allowed to wake early).
struct SimClock {
    now: i64,
    rng: u64,
}

impl SimClock {
    fn latency(&mut self) -> i64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let base = 2_000 + (self.rng % 38_000) as i64;
        if self.rng.is_multiple_of(997) {
            base * 50
        } else {
            base
        }
    }
}

impl Clock for SimClock {
    fn now(&mut self) -> i64 {
        self.now
    }

    fn sleep_until(&mut self, deadline: i64) -> Result<(), SleepError> {
        let wake = deadline + self.latency();
        self.now = self.now.max(wake);
        Ok(())
    }
}

/// What the target says about itself.
fn hello() -> Hello {
    let mut threads = heapless::Vec::new();
    let _ = threads.push(ThreadInfo {
        index: 0,
        cpu: Some(0),
        tid: 0,
        priority: 0,
        interval_ns: INTERVAL_NS,
        node: -1,
    });
    Hello {
        schema: SCHEMA_KEY,
        tool_version: bounded("example"),
        run_id: 0x00C0_FFEE,
        target: TargetInfo {
            hostname: bounded("mcu"),
            arch: bounded("thumbv7em"),
            cpus: 1,
            ..TargetInfo::default()
        },
        config: RunConfig {
            policy: Policy::Fifo,
            interval_ns: INTERVAL_NS,
            duration_ns: 3 * SEC as u64,
            report_ns: SEC as u64,
            layout: Layout::new(LINEAR_US, N),
            threads,
            ..RunConfig::unknown()
        },
    }
}

/// A sink that holds frames back while the line's budget is spent, as a
/// UART driver would, by moving the simulated time on.
struct PacedLine<'a, 'b> {
    out: &'a mut SliceSink<'b>,
    pacer: Pacer,
    now: i64,
}

impl FrameSink for PacedLine<'_, '_> {
    fn frame(&mut self, seq: u32, bytes: &[u8]) {
        self.now = self.pacer.ready_at(self.now, bytes.len());
        self.pacer.sent(self.now, bytes.len());
        self.out.frame(seq, bytes);
    }
}

/// The measuring loop, with the reporting context's turns in between
/// (on a microcontroller: the timer interrupt and the main loop). Returns
/// when the run's duration is over.
fn measure(
    clock: &mut SimClock,
    reporter: &mut Reporter,
    log: &mut ThreadLog<N>,
    line: &mut PacedLine,
) {
    let cfg = CycleConfig {
        interval_ns: INTERVAL_NS,
        duration_ns: 3 * SEC as u64,
        ..CycleConfig::DEFAULT
    };
    let mut cycle = Cycle::new(cfg, clock.now()).expect("a valid cycle");
    let mut writer = RECORD.writer().expect("the one writer");
    let mut snap = Box::new(Snapshot::<N>::new());
    loop {
        let now = cycle.sleep(clock).expect("the simulated clock never fails");
        let Step::Sample { sample, stop } = cycle.on_wake(now) else {
            continue;
        };
        writer.publish(sample.latency, sample.missed);
        if reporter.report_due(now) {
            line.now = now;
            reporter.begin_report(now);
            RECORD
                .snapshot(&mut snap, 16)
                .expect("the writer is not running");
            reporter.report(log, &snap, SideCounts::default(), line);
        }
        if stop.is_some() {
            return;
        }
    }
}

fn main() {
    let mut clock = SimClock {
        now: 0,
        rng: 0x5EED,
    };
    let start = clock.now();
    // The reporting context's state: fixed size, made once.
    let mut reporter = Reporter::new(start, SEC as u64).with_budget(line_budget(115_200));
    let mut log = Box::new(ThreadLog::<N>::new(0, LINEAR_US));
    let mut buf = vec![0u8; 64 * 1024];
    let mut sink = SliceSink::new(&mut buf);
    let mut line = PacedLine {
        out: &mut sink,
        pacer: Pacer::for_line(115_200),
        now: start,
    };
    reporter.hello(start, &hello(), &mut line);
    reporter.resend(&log, &mut line);
    measure(&mut clock, &mut reporter, &mut log, &mut line);

    // The end: the final report with the full histogram, and the bye.
    let end = clock.now();
    line.now = end;
    let epoch = reporter.begin_final(end);
    let mut snap = Box::new(Snapshot::<N>::new());
    RECORD.snapshot(&mut snap, 16).expect("the writer is done");
    reporter.report(&mut log, &snap, SideCounts::default(), &mut line);
    let bye = Bye {
        reason: ByeReason::Completed,
        epoch,
        elapsed_ns: (end - start) as u64,
        threads: 1,
        cycles: log.stats().cycles,
        max_ns: log.stats().max,
        frames_dropped: 0,
        defects: 0,
        ended: None,
    };
    reporter.send(Body::Bye(bye), &mut line);
    let paced_until = line.now;
    let bytes = sink.filled().to_vec();
    println!(
        "target: {} samples, {} reports, {} frames in {} bytes ({} did not fit), \
         the last left {:.2} s after the end",
        log.stats().count,
        epoch,
        reporter.next_seq(),
        bytes.len(),
        sink.overflow,
        (paced_until - end) as f64 / SEC as f64,
    );
    receive(&bytes, log.hist().counts());
}

/// The host's side: decode every frame and assemble the histogram.
fn receive(bytes: &[u8], sent: &[u64]) {
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let store = ArrayStore::<N>::new();
    let mut asm = Assembler::new(Layout::new(LINEAR_US, N), store).expect("a legal layout");
    let mut bye = None;
    for frame in dec.frames(bytes) {
        let frame = frame.expect("a clean buffer decodes");
        match &frame.body {
            Body::Bye(b) => bye = Some(*b),
            body => {
                asm.apply(body);
            }
        }
    }
    let stats = asm.stats().expect("statistics arrived");
    let counts = asm.counts().counts();
    let p99 = latscope_core::stats::quantile(asm.layout(), counts, Ppm::P99, stats.max);
    println!(
        "host:   {} frames, exact {}, {} samples, min {} ns, max {} ns, p99 {} ns, bye {:?}",
        dec.stats().frames,
        asm.exact_now(),
        stats.count,
        stats.min,
        stats.max,
        p99.unwrap_or(0),
        bye.map(|b| b.reason),
    );
    assert!(asm.exact_now(), "the histogram did not round-trip");
    assert_eq!(counts, sent, "the histogram did not round-trip");
    println!("round trip: the host's histogram equals the target's, bucket for bucket");
}
