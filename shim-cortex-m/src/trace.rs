//! What ran when: every interrupt handler goes through [`handler`], which
//! timestamps its entry and exit on the free-running clock, and every
//! critical section through [`masked`], which timestamps how long
//! interrupts were masked. A spike's window is then split by these
//! timestamps ([`attribute`]): measured, not inferred.

use core::cell::RefCell;
use core::sync::atomic::{compiler_fence, AtomicU32, Ordering::Relaxed, Ordering::SeqCst};

use cortex_m::interrupt::{CriticalSection, Mutex};

use crate::config;
use crate::device::{DualTimer, Interrupt};

/// Episodes kept per handler and masked sections kept: enough for the
/// few that can fall into one spike's window.
const KEPT: usize = 8;

/// The firmware's interrupt handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// APB timer 0, the measuring interrupt.
    Measure,
    /// APB timer 1, the disturbance.
    Disturb,
}

/// Number of [`Handler`]s.
pub const HANDLERS: usize = 2;

/// Every handler, in index order.
pub const ALL: [Handler; HANDLERS] = [Handler::Measure, Handler::Disturb];

impl Handler {
    /// Its index in the logs.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Its interrupt line.
    pub const fn irq(self) -> Interrupt {
        match self {
            Handler::Measure => Interrupt::TIMER0,
            Handler::Disturb => Interrupt::TIMER1,
        }
    }

    /// Its name, as the host prints it beside the IRQ number.
    pub const fn name(self) -> &'static str {
        match self {
            Handler::Measure => "TIMER0",
            Handler::Disturb => "TIMER1",
        }
    }

    /// Its NVIC priority (0 highest).
    pub const fn priority(self) -> u8 {
        match self {
            Handler::Measure => config::PRIO_MEASURE,
            Handler::Disturb => match config::DISTURB {
                config::Disturb::Below | config::Disturb::Masked => config::PRIO_BELOW,
                config::Disturb::Above | config::Disturb::Off => config::PRIO_ABOVE,
            },
        }
    }
}

/// One handler's episodes: a ring of entry and exit times, written only by
/// the handler itself (it cannot preempt itself), read by handlers of a
/// higher priority, which never see an episode half-written that could
/// matter to them: a handler that preempted it ranks above it.
struct Episodes {
    /// Entries so far (the ring's next slot is `entries % KEPT`).
    entries: AtomicU32,
    /// Exits so far: episodes below this index are complete.
    exits: AtomicU32,
    entry: [AtomicU32; KEPT],
    exit: [AtomicU32; KEPT],
}

impl Episodes {
    const fn new() -> Self {
        Episodes {
            entries: AtomicU32::new(0),
            exits: AtomicU32::new(0),
            entry: [const { AtomicU32::new(0) }; KEPT],
            exit: [const { AtomicU32::new(0) }; KEPT],
        }
    }
}

static EPISODES: [Episodes; HANDLERS] = [Episodes::new(), Episodes::new()];

/// Run the body of `h`'s handler, its entry and exit timestamped. `body`
/// gets the entry time (ticks).
#[inline(always)]
pub fn handler<R>(h: Handler, body: impl FnOnce(u32) -> R) -> R {
    let t0 = DualTimer::ticks();
    let log = &EPISODES[h.index()];
    let n = log.entries.load(Relaxed);
    let slot = n as usize % KEPT;
    log.entry[slot].store(t0, Relaxed);
    log.entries.store(n.wrapping_add(1), Relaxed);
    compiler_fence(SeqCst);
    let r = body(t0);
    compiler_fence(SeqCst);
    log.exit[slot].store(DualTimer::ticks(), Relaxed);
    log.exits.store(n.wrapping_add(1), Relaxed);
    r
}

/// How many times `h`'s handler was entered.
pub fn entries(h: Handler) -> u32 {
    EPISODES[h.index()].entries.load(Relaxed)
}

/// The last masked sections (start and end ticks), in a ring. Written
/// inside the critical section it times, so writers never overlap.
struct Masks {
    n: usize,
    at: [(u32, u32); KEPT],
}

static MASKS: Mutex<RefCell<Masks>> = Mutex::new(RefCell::new(Masks {
    n: 0,
    at: [(0, 0); KEPT],
}));

/// Run `f` with interrupts masked (PRIMASK), timestamped.
#[inline]
pub fn masked<R>(f: impl FnOnce(&CriticalSection) -> R) -> R {
    cortex_m::interrupt::free(|cs| {
        let t0 = DualTimer::ticks();
        let r = f(cs);
        let t1 = DualTimer::ticks();
        let mut m = MASKS.borrow(cs).borrow_mut();
        let i = m.n % KEPT;
        m.at[i] = (t0, t1);
        m.n = m.n.wrapping_add(1);
        r
    })
}

/// Time and episodes of one cause within a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Share {
    /// Ticks of the window.
    pub ticks: u32,
    /// Episodes that overlapped it.
    pub count: u32,
}

impl Share {
    /// Add the part of `[a, b]` inside the window `[from, from + len]`
    /// (ticks modulo 2^32; episodes are far shorter than the wrap).
    fn clip(&mut self, from: u32, len: u32, a: u32, b: u32) {
        let a = a.wrapping_sub(from) as i32 as i64;
        let b = b.wrapping_sub(from) as i32 as i64;
        let lo = a.max(0);
        let hi = b.min(i64::from(len));
        if hi > lo {
            self.ticks = self.ticks.saturating_add((hi - lo) as u32);
            self.count += 1;
        }
    }
}

/// Where a spike's window went, by the timestamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Split {
    /// Per handler (by index): its time in the window. Only handlers that
    /// rank at or above the measuring one: one below it cannot delay it
    /// (the measuring interrupt preempts it at once).
    pub handlers: [Share; HANDLERS],
    /// Interrupts masked.
    pub masked: Share,
}

/// Split the window of `len` ticks from `from` (the expiry) by the
/// completed episodes of every handler ranking at or above the measuring
/// one, and the masked sections. Called by the measuring handler, at its
/// priority, inside a critical section.
pub fn attribute(cs: &CriticalSection, from: u32, len: u32) -> Split {
    let mut s = Split::default();
    for h in ALL {
        if h == Handler::Measure || h.priority() > Handler::Measure.priority() {
            continue;
        }
        let log = &EPISODES[h.index()];
        let done = log.exits.load(Relaxed);
        for k in 1..=(done.min(KEPT as u32)) {
            let slot = done.wrapping_sub(k) as usize % KEPT;
            let (a, b) = (log.entry[slot].load(Relaxed), log.exit[slot].load(Relaxed));
            s.handlers[h.index()].clip(from, len, a, b);
        }
    }
    let m = MASKS.borrow(cs).borrow();
    for k in 1..=m.n.min(KEPT) {
        let (a, b) = m.at[m.n.wrapping_sub(k) % KEPT];
        s.masked.clip(from, len, a, b);
    }
    s
}
