//! The build-time configuration, all of it in one place.
//!
//! Each setting is an environment variable read when the firmware is
//! compiled (cargo rebuilds when one changes), with the default in brackets:
//!
//! | variable | meaning |
//! |---|---|
//! | `LATSCOPE_MCU_INTERVAL_US` | the measuring timer's period, µs \[1000\] |
//! | `LATSCOPE_MCU_DURATION_MS` | how long to measure, ms; then the bye \[3000\] |
//! | `LATSCOPE_MCU_SPIKE_NS` | latencies above this are spikes, explained, ns \[2000\] |
//! | `LATSCOPE_MCU_DISTURB` | the disturbance: `off`, `above` or `below` the measuring interrupt's priority, or `masked` (below it, in a critical section) \[off\] |
//! | `LATSCOPE_MCU_DISTURB_US` | D: how long the disturbance's handler busy-runs, µs \[30\] |
//! | `LATSCOPE_MCU_OFFSET_US` | how long before a measuring expiry the disturbance's timer expires, µs \[10\] |
//! | `LATSCOPE_MCU_DISTURB_EVERY` | the disturbance fires every this many measuring periods \[50\] |
//!
//! A bad value fails the build with the variable's name.

/// Ticks of every AN386 timer per second (SYSCLK).
pub const CLOCK_HZ: u32 = 25_000_000;
/// Nanoseconds per tick.
pub const TICK_NS: u64 = 1_000_000_000 / CLOCK_HZ as u64;

/// Where the disturbance runs relative to the measuring interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disturb {
    /// No disturbance.
    Off,
    /// At a higher priority: it delays the measuring interrupt.
    Above,
    /// At a lower priority: the measuring interrupt preempts it.
    Below,
    /// At a lower priority, busy-running with interrupts masked: the
    /// measuring interrupt waits for the critical section.
    Masked,
}

impl Disturb {
    /// The word used in the configuration and the log line.
    pub const fn name(self) -> &'static str {
        match self {
            Disturb::Off => "off",
            Disturb::Above => "above",
            Disturb::Below => "below",
            Disturb::Masked => "masked",
        }
    }
}

/// A decimal number from an environment variable, or `default`.
const fn num(v: Option<&str>, default: u64, name: &str) -> u64 {
    let Some(s) = v else { return default };
    let b = s.as_bytes();
    if b.is_empty() {
        panic!("{}", name);
    }
    let mut n: u64 = 0;
    let mut i = 0;
    while i < b.len() {
        let d = b[i];
        if d < b'0' || d > b'9' || n > u64::MAX / 100 {
            panic!("{}", name);
        }
        n = n * 10 + (d - b'0') as u64;
        i += 1;
    }
    n
}

/// Whether two strings are equal (in a const context).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn disturb(v: Option<&str>) -> Disturb {
    match v {
        None => Disturb::Off,
        Some(s) if same(s, "off") => Disturb::Off,
        Some(s) if same(s, "above") => Disturb::Above,
        Some(s) if same(s, "below") => Disturb::Below,
        Some(s) if same(s, "masked") => Disturb::Masked,
        Some(_) => panic!("LATSCOPE_MCU_DISTURB must be off, above, below or masked"),
    }
}

/// The measuring period, µs.
pub const INTERVAL_US: u64 = num(
    option_env!("LATSCOPE_MCU_INTERVAL_US"),
    1000,
    "LATSCOPE_MCU_INTERVAL_US must be a number",
);
/// The run's length, ms.
pub const DURATION_MS: u64 = num(
    option_env!("LATSCOPE_MCU_DURATION_MS"),
    3000,
    "LATSCOPE_MCU_DURATION_MS must be a number",
);
/// The spike threshold, ns.
pub const SPIKE_NS: u64 = num(
    option_env!("LATSCOPE_MCU_SPIKE_NS"),
    2000,
    "LATSCOPE_MCU_SPIKE_NS must be a number",
);
/// The disturbance's place.
pub const DISTURB: Disturb = disturb(option_env!("LATSCOPE_MCU_DISTURB"));
/// D, µs.
pub const DISTURB_US: u64 = num(
    option_env!("LATSCOPE_MCU_DISTURB_US"),
    30,
    "LATSCOPE_MCU_DISTURB_US must be a number",
);
/// The disturbance's lead on the measuring expiry, µs.
pub const OFFSET_US: u64 = num(
    option_env!("LATSCOPE_MCU_OFFSET_US"),
    10,
    "LATSCOPE_MCU_OFFSET_US must be a number",
);
/// Measuring periods per disturbance.
pub const DISTURB_EVERY: u64 = num(
    option_env!("LATSCOPE_MCU_DISTURB_EVERY"),
    50,
    "LATSCOPE_MCU_DISTURB_EVERY must be a number",
);

/// The measuring period in ticks.
pub const PERIOD_TICKS: u32 = (INTERVAL_US * 1000 / TICK_NS) as u32;
/// The disturbance's period in ticks.
pub const DISTURB_PERIOD_TICKS: u32 = PERIOD_TICKS * DISTURB_EVERY as u32;

const _: () = {
    assert!(
        INTERVAL_US >= 50 && INTERVAL_US <= 100_000,
        "LATSCOPE_MCU_INTERVAL_US: 50 to 100000"
    );
    assert!(
        DURATION_MS >= 10 && DURATION_MS <= 3_600_000,
        "LATSCOPE_MCU_DURATION_MS: 10 to 3600000"
    );
    assert!(
        DISTURB_EVERY >= 2 && DISTURB_EVERY <= 1000,
        "LATSCOPE_MCU_DISTURB_EVERY: 2 to 1000"
    );
    assert!(
        OFFSET_US < INTERVAL_US / 2,
        "LATSCOPE_MCU_OFFSET_US: below half the interval"
    );
    assert!(
        DISTURB_US < INTERVAL_US / 2,
        "LATSCOPE_MCU_DISTURB_US: below half the interval"
    );
};

/// NVIC priorities (0 highest; the upper bits count, at least 2 on any
/// Cortex-M): the disturbance above, the measuring interrupt, the
/// disturbance below. The UART work runs in thread mode, below all.
pub const PRIO_ABOVE: u8 = 0x00;
/// The measuring interrupt's priority.
pub const PRIO_MEASURE: u8 = 0x40;
/// The disturbance's priority when below.
pub const PRIO_BELOW: u8 = 0x80;
