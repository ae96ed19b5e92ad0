//! latscope on a Cortex-M: the interrupt latency of Arm's MPS2 AN386
//! (qemu's `mps2-an386`), measured by latscope-core and streamed over UART0
//! in latscope's frames, for `latscope-host` to store, report and compare
//! with a Linux board.
//!
//! * **Measuring**: APB timer 0 expires every interval. Its handler's first
//!   instruction reads the timer's own count, which says how many ticks ago
//!   it expired: the latency. The dual timer, free-running and extended in
//!   software ([`Ticks64`]), says which period that was, so that late and
//!   missed periods count as on Linux; the handler hands that `now` to the
//!   core's `Cycle::on_wake` and publishes the sample in a static
//!   `SharedHistogram`.
//! * **Reporting**: thread mode, below every interrupt, runs the core's
//!   `Reporter` and a `Pacer` and writes the frames to UART0.
//! * **Explaining**: [`trace`] timestamps every handler and every masked
//!   critical section; a spike's window is split by those timestamps into the
//!   core's `Attribution`.
//! * **A disturbance** (build-time [`config`]): APB timer 1, phase-locked to
//!   timer 0, expires a fixed offset before a measuring expiry and busy-runs
//!   D, above or below the measuring priority, or below it with interrupts
//!   masked.
//!
//! Everything lives in statics: no heap, every size fixed at build time.
#![no_std]
#![no_main]
#![deny(unsafe_code)]

mod config;
mod device;
mod report;
mod trace;

use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};

use cortex_m::interrupt::Mutex;
use cortex_m_rt::{entry, interrupt};
use heapless::Deque;
use latscope_core::cycle::{Cycle, CycleConfig, Sample, Step};
use latscope_core::layout::{buckets_for, Layout};
use latscope_core::protocol::{Reporter, ThreadLogIn};
use latscope_core::seqlock::{SharedHistogramIn, SnapshotIn, Writer};
use latscope_core::wire::Hello;
use panic_halt as _;

use crate::config::{PERIOD_TICKS, TICK_NS};
use crate::device::{interrupt, ApbTimer, DualTimer, Interrupt, TIMER_0, TIMER_1};
use crate::trace::{Handler, Split};

/// 1 µs buckets up to this, then the core's log-linear buckets (≤ 1 %).
pub const LINEAR_US: u32 = 100;
/// The bounded buckets reach past this (1 s, where Linux's reach past
/// 60 s); everything above is counted in the open last bucket, and the
/// maximum stays exact. An interval is at most 100 ms, so this is ten
/// missed periods: 760 buckets fewer, 15 KiB of RAM.
pub const TOP_US: u64 = 1_000_000;
/// Buckets of the histogram.
pub const BUCKETS: usize = buckets_for(LINEAR_US, TOP_US);

/// The measuring interrupt's shared histogram: its counters (all zero,
/// so in `.bss`, not copied from flash) and the histogram over them.
static RECORD_COUNTERS: [AtomicU32; BUCKETS] = [const { AtomicU32::new(0) }; BUCKETS];
/// The shared histogram's type.
pub type SharedHistogram = SharedHistogramIn<&'static [AtomicU32; BUCKETS]>;
/// The reporting context's log of the shared histogram.
pub type Log = ThreadLogIn<&'static mut [u32; BUCKETS], &'static mut [u64; BUCKETS]>;
/// A seqlock snapshot of the shared histogram.
pub type Snap = SnapshotIn<&'static mut [u32; BUCKETS]>;

/// A spike, for thread mode to send and explain.
#[derive(Debug, Clone, Copy)]
pub struct Spike {
    /// The sample.
    pub sample: Sample,
    /// Where its window went.
    pub split: Split,
}

/// Spikes waiting for thread mode (a full queue drops the newest).
static SPIKES: Mutex<RefCell<Deque<Spike, 8>>> = Mutex::new(RefCell::new(Deque::new()));
/// Spikes the queue had no room for.
static SPIKES_DROPPED: AtomicU32 = AtomicU32::new(0);
/// Set by the measuring interrupt after its last sample.
static DONE: AtomicBool = AtomicBool::new(false);
/// Times the disturbance's body ran (its own count, beside the wrapper's).
static DISTURB_RUNS: AtomicU32 = AtomicU32::new(0);
/// The measuring interrupt's start, handed over once.
static START: Mutex<RefCell<Option<Start>>> = Mutex::new(RefCell::new(None));

/// The dual timer's ticks extended past its 32-bit wrap, for one context
/// that reads it at least once a wrap (171 s): each context that needs a
/// 64-bit time keeps its own.
#[derive(Debug, Clone, Copy)]
pub struct Ticks64 {
    high: u32,
    last: u32,
}

impl Ticks64 {
    /// Extending from a first reading.
    pub fn new(first: u32) -> Self {
        Ticks64 {
            high: 0,
            last: first,
        }
    }

    /// `raw` (a reading of [`DualTimer::ticks`] no older than the last)
    /// as 64-bit ticks.
    #[inline(always)]
    pub fn extend(&mut self, raw: u32) -> u64 {
        if raw < self.last {
            self.high = self.high.wrapping_add(1);
        }
        self.last = raw;
        (u64::from(self.high) << 32) | u64::from(raw)
    }

    /// The time now, ns.
    pub fn now_ns(&mut self) -> i64 {
        (self.extend(DualTimer::ticks()) * TICK_NS) as i64
    }
}

/// What the measuring interrupt starts from.
struct Start {
    /// The extender as of the start.
    ticks: Ticks64,
    /// Timer 0's first expiry, in extended ticks (to a tick or two).
    first_expiry: u64,
    /// The cycle, started one period before the first expiry.
    cycle: Cycle,
    /// The shared histogram's writer.
    writer: Writer<'static, &'static [AtomicU32; BUCKETS]>,
}

/// The measuring interrupt's own state.
struct Measure {
    start: Start,
    done: bool,
}

#[interrupt]
fn TIMER0() {
    static mut STATE: Option<Measure> = None;
    // The first instruction that matters: the timer's own count.
    let count = TIMER_0.value();
    trace::handler(Handler::Measure, |entry| {
        TIMER_0.clear();
        let st = match STATE.as_mut() {
            Some(s) => s,
            None => {
                let Some(start) = trace::masked(|cs| START.borrow(cs).borrow_mut().take()) else {
                    return;
                };
                STATE.insert(Measure { start, done: false })
            }
        };
        if st.done {
            return;
        }
        measure(st, count, entry);
    });
}

/// Ticks since the last expiry, from the count the handler read: the
/// timer reloads to `PERIOD_TICKS - 1` one tick after reaching 0.
#[inline(always)]
fn since_expiry(count: u32) -> u32 {
    if count == 0 {
        0
    } else {
        PERIOD_TICKS - count
    }
}

fn measure(st: &mut Measure, count: u32, entry: u32) {
    let lat = since_expiry(count);
    let coarse = st.start.ticks.extend(entry);
    // The latest expiry: the free-running clock says which period, the
    // timer's count says exactly when in it.
    let approx = coarse.saturating_sub(u64::from(lat));
    let periods = (approx.saturating_sub(st.start.first_expiry) + u64::from(PERIOD_TICKS / 2))
        / u64::from(PERIOD_TICKS);
    let expiry = st.start.first_expiry + periods * u64::from(PERIOD_TICKS);
    let now = ((expiry + u64::from(lat)) * TICK_NS) as i64;
    let Step::Sample { sample, stop } = st.start.cycle.on_wake(now) else {
        return;
    };
    st.start.writer.publish(sample.latency, sample.missed);
    if sample.flags.spike {
        let window = sample.latency.max(0) as u64 / TICK_NS;
        let from = (sample.deadline as u64 / TICK_NS) as u32;
        trace::masked(|cs| {
            let split = trace::attribute(cs, from, window.min(u64::from(u32::MAX)) as u32);
            if SPIKES
                .borrow(cs)
                .borrow_mut()
                .push_back(Spike { sample, split })
                .is_err()
            {
                SPIKES_DROPPED.fetch_add(1, Relaxed);
            }
        });
    }
    if stop.is_some() {
        st.done = true;
        DONE.store(true, Relaxed);
    }
}

#[interrupt]
fn TIMER1() {
    trace::handler(Handler::Disturb, |entry| {
        TIMER_1.clear();
        let d = (config::DISTURB_US * 1000 / TICK_NS) as u32;
        let busy = || while DualTimer::ticks().wrapping_sub(entry) < d {};
        if config::DISTURB == config::Disturb::Masked {
            trace::masked(|_| busy());
        } else {
            busy();
        }
        DISTURB_RUNS.fetch_add(1, Relaxed);
    });
}

/// Start the clock, the measuring timer and (if configured) the
/// disturbance, phase-locked to it; returns the thread-mode clock.
fn start_timers(
    nvic: &mut cortex_m::peripheral::NVIC,
    writer: Writer<'static, &'static [AtomicU32; BUCKETS]>,
) -> Ticks64 {
    DualTimer::start();
    let mut ticks = Ticks64::new(DualTimer::ticks());
    TIMER_0.setup(PERIOD_TICKS - 1, PERIOD_TICKS - 1);
    let phase_lock = |t: ApbTimer, at: u64, mut ticks: Ticks64| {
        // `at` in extended ticks; the count is set from a fresh reading
        // just before starting, so the lock is good to an instruction.
        let now = ticks.extend(DualTimer::ticks());
        t.set_value(at.saturating_sub(now) as u32);
        t.start();
    };
    let t0 = ticks.extend(DualTimer::ticks());
    // The count runs from PERIOD_TICKS - 1 down to 0.
    let first_expiry = t0 + u64::from(PERIOD_TICKS) - 1;
    let cycle_start = ((first_expiry - u64::from(PERIOD_TICKS)) * TICK_NS) as i64;
    let cfg = CycleConfig {
        interval_ns: config::INTERVAL_US * 1000,
        duration_ns: config::DURATION_MS * 1_000_000,
        spike_ns: config::SPIKE_NS,
        ..CycleConfig::DEFAULT
    };
    let Ok(cycle) = Cycle::new(cfg, cycle_start) else {
        panic!("the configuration's interval is checked at build time");
    };
    trace::masked(|cs| {
        *START.borrow(cs).borrow_mut() = Some(Start {
            ticks,
            first_expiry,
            cycle,
            writer,
        });
    });
    device::enable(nvic, Interrupt::TIMER0, Handler::Measure.priority());
    phase_lock(TIMER_0, first_expiry, ticks);
    if config::DISTURB != config::Disturb::Off {
        // Its first expiry: OFFSET before the measuring expiry
        // DISTURB_EVERY periods in, then every DISTURB_EVERY periods.
        let period = config::DISTURB_PERIOD_TICKS;
        TIMER_1.setup(period - 1, period - 1);
        device::enable(nvic, Interrupt::TIMER1, Handler::Disturb.priority());
        let offset = config::OFFSET_US * 1000 / TICK_NS;
        let at = first_expiry + u64::from(period) - u64::from(PERIOD_TICKS) - offset;
        phase_lock(TIMER_1, at, ticks);
    }
    ticks.extend(DualTimer::ticks());
    ticks
}

#[entry]
fn main() -> ! {
    // The reporting context's memory (cortex-m-rt hands these to `main`
    // as `&'static mut`, once).
    // All zero: in `.bss`.
    static mut PREV: [u32; BUCKETS] = [0; BUCKETS];
    static mut HIST: [u64; BUCKETS] = [0; BUCKETS];
    static mut SNAP: [u32; BUCKETS] = [0; BUCKETS];
    static mut REC: Option<SharedHistogram> = None;
    static mut REPORTER: Option<Reporter> = None;
    static mut HELLO: Option<Hello> = None;
    let Some(mut cp) = cortex_m::Peripherals::take() else {
        panic!("the core peripherals are taken once");
    };
    let layout = Layout::new(LINEAR_US, BUCKETS);
    let (Ok(rec), Ok(log), snap) = (
        SharedHistogramIn::with_buckets(layout, &RECORD_COUNTERS),
        ThreadLogIn::with_memory(0, layout, PREV, HIST),
        SnapshotIn::with_buckets(SNAP),
    ) else {
        panic!("the memory is sized for the layout");
    };
    let rec: &'static SharedHistogram = REC.insert(rec);
    let Some(writer) = rec.writer() else {
        panic!("the shared histogram has one writer");
    };
    device::Uart0::init();
    let clock = start_timers(&mut cp.NVIC, writer);
    report::run(clock, rec, log, snap, REPORTER, HELLO)
}
