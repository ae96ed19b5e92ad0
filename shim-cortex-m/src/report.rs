//! Thread mode, below every interrupt: the core's `Reporter` and `Pacer`
//! turn the shared histogram into frames on UART0, spikes are sent and explained,
//! and the run ends with the final report, the controls and the bye.

use core::fmt::Write as _;
use core::sync::atomic::Ordering::Relaxed;

use latscope_core::explain::{Attribution, Culprit, Untraced};
use latscope_core::layout::Layout;
use latscope_core::protocol::{line_budget, FrameSink, Pacer, Reporter, SideCounts};
use latscope_core::wire::{
    bounded, Body, Bye, ByeReason, ClockKind, Degraded, Hello, Level, LogLine, Platform, Policy,
    RunConfig, SpikeFlags, SpikeSample, StartAlign, TargetInfo, ThreadInfo, WakeMode, SCHEMA_KEY,
};

use crate::config::{self, TICK_NS};
use crate::device::{DualTimer, Uart0, TIMER_0, TIMER_1};
use crate::trace::{self, Handler};
use crate::{
    Log, SharedHistogram, Snap, Spike, Ticks64, BUCKETS, DISTURB_RUNS, DONE, LINEAR_US, SPIKES,
    SPIKES_DROPPED,
};

/// The serial line's rate: what a board's UART would run at, and what the
/// pacing and the reports' byte budget assume.
const BAUD: u32 = 115_200;
/// The stack's size (memory.x).
const STACK_BYTES: u32 = 16 * 1024;
/// Reports per second.
const REPORT_NS: u64 = 1_000_000_000;

/// UART0 as the stream's sink: frames leave when the pacer lets them.
struct Line {
    clock: Ticks64,
    pacer: Pacer,
}

impl FrameSink for Line {
    fn frame(&mut self, _seq: u32, bytes: &[u8]) {
        let at = self.pacer.ready_at(self.clock.now_ns(), bytes.len());
        while self.clock.now_ns() < at {
            cortex_m::asm::wfi();
        }
        self.pacer.sent(at, bytes.len());
        for &b in bytes {
            Uart0::write(b);
        }
    }
}

/// What the firmware says about itself.
fn hello() -> Hello {
    let mut threads = heapless::Vec::new();
    let _ = threads.push(ThreadInfo {
        index: 0,
        cpu: Some(0),
        tid: 0,
        priority: 0,
        interval_ns: config::INTERVAL_US * 1000,
        node: -1,
    });
    Hello {
        schema: SCHEMA_KEY,
        tool_version: bounded(env!("CARGO_PKG_VERSION")),
        run_id: u64::from(DualTimer::ticks()) | 0x4d43_5500_0000_0000,
        target: TargetInfo {
            hostname: bounded("mps2-an386"),
            arch: bounded("thumbv7em"),
            cpus: 1,
            name: bounded("mps2-an386"),
            platform: Platform::BareMetal,
            model: bounded("mps2-an386 (Cortex-M4F, bare metal)"),
            clock_hz: u64::from(config::CLOCK_HZ),
            clock_resolution_ns: TICK_NS as u32,
            ..TargetInfo::default()
        },
        config: RunConfig {
            policy: Policy::Fifo,
            priority: 0,
            interval_ns: config::INTERVAL_US * 1000,
            distance_ns: 0,
            clock: ClockKind::Monotonic,
            mlock: false,
            dma_latency_us: None,
            timer_slack_ns: 0,
            duration_ns: config::DURATION_MS * 1_000_000,
            loops: 0,
            warmup_cycles: 0,
            report_ns: REPORT_NS,
            spike_ns: config::SPIKE_NS,
            break_ns: 0,
            hist_us: 0,
            hist_all: false,
            nsecs: true,
            started: None,
            layout: Layout::new(LINEAR_US, BUCKETS),
            degraded: Degraded::default(),
            self_check: false,
            threads,
            tracefs_mounted: false,
            wake: WakeMode::Absolute,
            align: StartAlign::Own,
            smi: false,
        },
    }
}

/// A spike's sample and its explanation.
fn send_spike(reporter: &mut Reporter, line: &mut Line, s: &Spike) {
    let p = &s.sample;
    let sample = SpikeSample {
        thread: 0,
        cycle: p.cycle,
        deadline_ns: p.deadline,
        latency_ns: p.latency,
        missed: p.missed,
        flags: SpikeFlags {
            spike: p.flags.spike,
            overflow: p.flags.overflow,
            brk: p.flags.brk,
        },
    };
    reporter.send(Body::Spike(sample), line);
    let latency = p.latency.max(0) as u64;
    let mut a = Attribution::new(0, p.cycle, p.deadline.max(0) as u64, latency);
    let mut explained = 0u64;
    for h in trace::ALL {
        let share = s.split.handlers[h.index()];
        if share.count > 0 {
            let ns = u64::from(share.ticks) * TICK_NS;
            explained += ns;
            let handler = Culprit::Irq {
                irq: u32::from(h.irq() as u16),
                name: bounded(h.name()),
                thread: None,
            };
            a.add(handler, share.count, ns);
        }
    }
    if s.split.masked.count > 0 {
        let ns = u64::from(s.split.masked.ticks) * TICK_NS;
        explained += ns;
        a.add(Culprit::Masked, s.split.masked.count, ns);
    }
    // The rest: exception entry and the handler's own first instructions.
    let rest = latency.saturating_sub(explained);
    if rest > 0 {
        a.add(Culprit::Untraced(Untraced::Off), 1, rest);
    }
    a.causes.sort_unstable_by_key(|c| core::cmp::Reverse(c.ns));
    reporter.send(Body::Explain(a), line);
}

/// A log line.
fn log(reporter: &mut Reporter, line: &mut Line, text: &str) {
    reporter.send(
        Body::Log(LogLine {
            level: Level::Info,
            text: bounded(text),
        }),
        line,
    );
}

/// The reporting loop; ends the emulation (feature `semihosting`) or
/// sleeps after the bye.
pub fn run(
    clock: Ticks64,
    hist: &'static SharedHistogram,
    mut log_: Log,
    mut snap: Snap,
    reporter: &'static mut Option<Reporter>,
    hello_: &'static mut Option<Hello>,
) -> ! {
    let mut line = Line {
        clock,
        pacer: Pacer::for_line(BAUD),
    };
    let start = line.clock.now_ns();
    // In statics: a Reporter holds a frame buffer, a Hello a kilobyte.
    let hello = &*hello_.insert(hello());
    let reporter = reporter.insert(Reporter::new(start, REPORT_NS).with_budget(line_budget(BAUD)));
    reporter.hello(start, hello, &mut line);
    reporter.resend(&log_, &mut line);
    let extra = || SideCounts {
        dropped: u64::from(SPIKES_DROPPED.load(Relaxed)),
        ..SideCounts::default()
    };
    loop {
        while let Some(s) = trace::masked(|cs| SPIKES.borrow(cs).borrow_mut().pop_front()) {
            send_spike(reporter, &mut line, &s);
        }
        let now = line.clock.now_ns();
        if DONE.load(Relaxed) {
            break;
        }
        if reporter.hello_due(now) {
            reporter.hello(now, hello, &mut line);
        }
        if reporter.report_due(now) {
            reporter.begin_report(now);
            if hist.snapshot(&mut snap, 16).is_ok() {
                reporter.report(&mut log_, &snap, extra(), &mut line);
            }
        }
        cortex_m::asm::wfi();
    }
    let end = line.clock.now_ns();
    let epoch = reporter.begin_final(end);
    while hist.snapshot(&mut snap, 16).is_err() {}
    reporter.report(&mut log_, &snap, extra(), &mut line);
    closing_logs(reporter, &mut line);
    let stats = *log_.stats();
    reporter.send(
        Body::Bye(Bye {
            reason: ByeReason::Completed,
            epoch,
            elapsed_ns: (end - start).max(0) as u64,
            threads: 1,
            cycles: stats.cycles,
            max_ns: stats.max,
            frames_dropped: 0,
            defects: 0,
            ended: None,
        }),
        &mut line,
    );
    TIMER_0.stop();
    TIMER_1.stop();
    finish()
}

/// The run's last log lines: the disturbance's IRQ and runs, and the
/// stack used.
fn closing_logs(reporter: &mut Reporter, line: &mut Line) {
    let mut text: heapless::String<160> = heapless::String::new();
    let _ = write!(
        text,
        "irq {} {}: {} entries; disturbance {} (D {} us, offset {} us, every {} periods): ran {} times",
        Handler::Disturb.irq() as u16,
        Handler::Disturb.name(),
        trace::entries(Handler::Disturb),
        config::DISTURB.name(),
        config::DISTURB_US,
        config::OFFSET_US,
        config::DISTURB_EVERY,
        DISTURB_RUNS.load(Relaxed),
    );
    log(reporter, line, &text);
    text.clear();
    let _ = write!(
        text,
        "stack: {} of {} bytes used",
        crate::device::stack_used(),
        STACK_BYTES
    );
    log(reporter, line, &text);
}

/// After the bye: end the emulation (semihosting), else sleep.
fn finish() -> ! {
    #[cfg(feature = "semihosting")]
    cortex_m_semihosting::debug::exit(cortex_m_semihosting::debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}
