//! Decoding a recorded latscope stream and checking a run end to end: the
//! hello, per-thread cycle accounting, link errors and the bye; and the
//! shares of the explained spikes' time by cause.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use latscope_core::explain::{Attribution, CauseKind, Culprit, Untraced};
use latscope_core::wire::{
    Aggregate, Body, Bye, Decoder, Hello, LinkStats, TargetInfo, ThreadStats, MAX_FRAME,
};

/// How much longer than requested a run may take (the last wake-up's
/// lateness and the final report) before the check fails.
pub const RUN_TIME_SLACK_NS: u64 = 1_000_000_000;

/// The slack of an `--explain` run on an emulated board: before its final
/// report the non-real-time sender reads the trace of every explained
/// spike (tens of ms each under emulation), and under an interrupt flood
/// the IRQ thread and the measuring threads leave it little CPU time.
pub const EXPLAIN_SLACK_NS: u64 = 10_000_000_000;

/// What a stream held, as the host sees it.
#[derive(Default)]
pub struct Summary {
    pub hello: Option<Hello>,
    /// The latest statistics of each thread (by thread index).
    pub stats: BTreeMap<u16, ThreadStats>,
    /// The latest spike aggregate of each thread (by thread index).
    pub aggregates: BTreeMap<u16, Aggregate>,
    /// Each report interval's largest spike, of each thread that had one:
    /// (thread, epoch, cycle, deadline; 0 if the sender never took it).
    pub peaks: Vec<(u16, u32, u64, i64)>,
    pub bye: Option<Bye>,
    /// The explained spikes, in stream order.
    pub explained: Vec<Attribution>,
    /// The earliest and latest deadline of the spike frames (clock ns).
    pub spike_span: Option<(i64, i64)>,
    /// Each spike frame's deadline, by thread and cycle.
    pub spike_deadlines: BTreeMap<(u16, u64), i64>,
    /// Log and warning lines the target sent.
    pub logs: Vec<String>,
    pub link: LinkStats,
    /// Bytes of a frame cut off at the end of the stream.
    pub truncated: usize,
    /// Decode errors in order (for the failure message).
    pub errors: Vec<String>,
}

/// Decodes a whole recorded stream.
pub fn decode(stream: &[u8]) -> Summary {
    let mut dec = Box::new(Decoder::<MAX_FRAME>::new());
    let mut sum = Summary::default();
    for frame in dec.frames(stream) {
        match frame {
            Err(e) => sum.errors.push(e.to_string()),
            Ok(f) => match f.body {
                Body::Hello(h) => sum.hello = Some(h),
                Body::Stats(s) => {
                    sum.stats.insert(s.thread, s);
                }
                Body::Bye(b) => sum.bye = Some(b),
                Body::Log(l) => sum.logs.push(format!("{:?}: {}", l.level, l.text)),
                Body::Explain(a) => sum.explained.push(a),
                Body::Aggregate(a) => {
                    if a.above > 0 {
                        sum.peaks
                            .push((a.thread, a.epoch, a.max_cycle, a.max_deadline_ns));
                    }
                    sum.aggregates.insert(a.thread, a);
                }
                Body::Spike(s) => {
                    let d = s.deadline_ns;
                    sum.spike_deadlines.insert((s.thread, s.cycle), d);
                    sum.spike_span = Some(
                        sum.spike_span
                            .map_or((d, d), |(lo, hi)| (lo.min(d), hi.max(d))),
                    );
                }
                Body::Delta(_)
                | Body::Chunk(_)
                | Body::EvidenceHead(_)
                | Body::EvidencePart(_)
                | Body::TimerlatStats(_)
                | Body::TimerlatDelta(_)
                | Body::TimerlatChunk(_) => {}
            },
        }
    }
    sum.link = *dec.stats();
    sum.truncated = dec.pending();
    sum
}

/// What the run was asked to do.
pub struct Expect<'a> {
    /// The architecture the hello must name (prefix of `uname -m`).
    pub arch_prefix: &'a str,
    pub threads: usize,
    pub interval_ns: u64,
    pub duration_ns: u64,
    /// How much later than `duration_ns` the final report may come
    /// ([`RUN_TIME_SLACK_NS`] unless the run is under a load).
    pub slack_ns: u64,
    /// Whether the kernel the hello names must be PREEMPT_RT (`Some(true)`:
    /// the RT board), must not be (`Some(false)`), or may be either
    /// (`None`: qemu-user runs on the machine's own kernel).
    pub preempt_rt: Option<bool>,
    /// The kernel release (`uname -r`) the hello must name: the pinned
    /// kernel's ([`crate::qemu::expected_release`]); `None`: any.
    pub kernel_release: Option<&'a str>,
}

/// Checks a decoded run; returns the list of failures (empty: all good).
pub fn check(sum: &Summary, want: &Expect<'_>) -> Vec<String> {
    let mut bad = Vec::new();
    match &sum.hello {
        None => bad.push("no hello frame".to_string()),
        Some(h) => check_hello(h, want, &mut bad),
    }
    if sum.stats.len() != want.threads {
        bad.push(format!(
            "statistics for {} threads, expected {}",
            sum.stats.len(),
            want.threads
        ));
    }
    for (t, s) in &sum.stats {
        // The thread's own interval (cyclictest's -d distance adds to it).
        let interval = sum
            .hello
            .as_ref()
            .and_then(|h| h.config.threads.iter().find(|i| i.index == *t))
            .map(|i| i.interval_ns)
            .filter(|&i| i > 0)
            .unwrap_or(want.interval_ns);
        check_thread(*t, s, interval, want, &mut bad);
    }
    if sum.link.crc_errors != 0 || !sum.link.is_clean() {
        bad.push(format!("link errors: {:?} {:?}", sum.link, sum.errors));
    }
    match &sum.bye {
        None => bad.push("no bye frame".to_string()),
        Some(b) => {
            if usize::from(b.threads) != want.threads {
                bad.push(format!(
                    "bye reports {} threads, expected {}",
                    b.threads, want.threads
                ));
            }
            let total: u64 = sum.stats.values().map(|s| s.cycles).sum();
            if b.cycles != total {
                bad.push(format!(
                    "bye cycles {} != sum of thread cycles {total}",
                    b.cycles
                ));
            }
        }
    }
    bad
}

/// The hello's architecture, kernel, interval, duration and thread count.
fn check_hello(h: &Hello, want: &Expect<'_>, bad: &mut Vec<String>) {
    if let Some(why) = want.preempt_rt.and_then(|rt| kernel_problem(&h.target, rt)) {
        bad.push(why);
    }
    if let Some(why) = want
        .kernel_release
        .and_then(|r| release_problem(&h.target, r))
    {
        bad.push(why);
    }
    if !h.target.arch.starts_with(want.arch_prefix) {
        bad.push(format!(
            "hello names arch {:?}, expected {}*",
            h.target.arch.as_str(),
            want.arch_prefix
        ));
    }
    if h.config.interval_ns != want.interval_ns {
        bad.push(format!(
            "hello interval {} ns, expected {}",
            h.config.interval_ns, want.interval_ns
        ));
    }
    if h.config.duration_ns != want.duration_ns {
        bad.push(format!(
            "hello duration {} ns, expected {}",
            h.config.duration_ns, want.duration_ns
        ));
    }
    if h.config.threads.len() != want.threads {
        bad.push(format!(
            "hello lists {} threads, expected {}",
            h.config.threads.len(),
            want.threads
        ));
    }
}

/// Whether the booted kernel is PREEMPT_RT as `rt` says, by both of what
/// the target reads: `/sys/kernel/realtime` (the hello's `preempt_rt`) and
/// the build string of `uname -v` (`#1 SMP PREEMPT_RT ...`). A board that
/// booted another kernel has no IRQ threads, and a check that latscope
/// runs above them would pass trivially.
pub fn kernel_problem(t: &TargetInfo, rt: bool) -> Option<String> {
    let by_build = t
        .kernel_version
        .split_whitespace()
        .any(|w| w == "PREEMPT_RT");
    (t.preempt_rt != rt || by_build != rt).then(|| {
        format!(
            "kernel {} ({:?}): /sys/kernel/realtime says preempt_rt={}, uname -v {} PREEMPT_RT; \
             expected {}a PREEMPT_RT kernel",
            t.kernel.as_str(),
            t.kernel_version.as_str(),
            t.preempt_rt,
            if by_build { "names" } else { "does not name" },
            if rt { "" } else { "not " },
        )
    })
}

/// Whether the booted kernel is the pinned one (`testkit/image/kernels`),
/// by the release its hello names.
pub fn release_problem(t: &TargetInfo, release: &str) -> Option<String> {
    (t.kernel.as_str() != release).then(|| {
        format!(
            "hello names kernel {:?}, expected the pinned {release:?} (testkit/image/kernels)",
            t.kernel.as_str()
        )
    })
}

/// Thread `t`'s cycle accounting and run time (period `interval` ns).
fn check_thread(t: u16, s: &ThreadStats, interval: u64, want: &Expect<'_>, bad: &mut Vec<String>) {
    // Every period of the requested run time is either measured or
    // counted as missed, so this holds (±1 for the edges) even under
    // emulation, where single wake-ups are late by many periods.
    let periods = want.duration_ns / interval;
    let seen = s.cycles + s.missed;
    if seen.abs_diff(periods) > 1 {
        bad.push(format!(
            "thread {t}: cycles {} + missed {} = {seen}, expected {periods} ± 1 (run {} ns / interval {interval} ns; final report at {} ns)",
            s.cycles, s.missed, want.duration_ns, s.elapsed_ns
        ));
    }
    // The final report comes at the requested run time, never before (the
    // run's start is read before any thread's), and late by the lateness
    // of the last wake-up (lenient: emulated timing is noisy).
    if s.elapsed_ns < want.duration_ns || s.elapsed_ns > want.duration_ns + want.slack_ns {
        bad.push(format!(
            "thread {t}: ran {} ns, expected {} ns (+ at most {} ns)",
            s.elapsed_ns, want.duration_ns, want.slack_ns
        ));
    }
    if !s.last_report {
        bad.push(format!(
            "thread {t}: final statistics not marked last_report"
        ));
    }
}

/// A short human description of a decoded run, for test output.
pub fn describe(sum: &Summary) -> String {
    let mut s = String::new();
    if let Some(h) = &sum.hello {
        let _ = writeln!(
            s,
            "target: {} {} kernel {} preempt_rt={} ({}) cpus={} clocksource={}",
            h.target.hostname,
            h.target.arch,
            h.target.kernel,
            h.target.preempt_rt,
            h.target.preempt_model,
            h.target.cpus,
            h.target.clocksource
        );
    }
    for (t, st) in &sum.stats {
        let avg = st.sum.checked_div(st.count).unwrap_or(0);
        let _ = writeln!(
            s,
            "T:{t} C:{} missed:{} elapsed:{} min:{} avg:{} max:{} ns faults:{}/{} dropped:{}",
            st.cycles,
            st.missed,
            st.elapsed_ns,
            if st.count == 0 { 0 } else { st.min },
            avg,
            st.max,
            st.minflt,
            st.majflt,
            st.dropped
        );
    }
    if let Some(b) = &sum.bye {
        let _ = writeln!(s, "bye: {:?} after {} ns", b.reason, b.elapsed_ns);
    }
    let _ = writeln!(
        s,
        "link: {} frames, {} bytes, crc errors {}, truncated {}",
        sum.link.frames, sum.link.bytes, sum.link.crc_errors, sum.truncated
    );
    for l in &sum.logs {
        let _ = writeln!(s, "log: {l}");
    }
    s
}

impl Summary {
    /// Explained spikes whose deadline is in the second half of the spike
    /// frames' time span: explanations that kept coming while the spikes
    /// did, not only at the start.
    /// The report intervals' largest spikes, as in [`Summary::peaks`],
    /// that no explanation in the stream is of (by cycle and deadline).
    /// The deadline of one whose record the sender had not taken by the
    /// report comes from its spike frame, which follows later; one with
    /// no spike frame at all is left out ([`Summary::worsts_never_sent`]).
    pub fn worsts_unexplained(&self) -> Vec<(u16, u32, u64, i64)> {
        self.peaks
            .iter()
            .filter_map(|&(t, epoch, cycle, deadline)| {
                let deadline = match deadline {
                    0 => *self.spike_deadlines.get(&(t, cycle))?,
                    d => d,
                };
                Some((t, epoch, cycle, deadline))
            })
            .filter(|&(_, _, cycle, deadline)| {
                !self.explained.iter().any(|a| {
                    a.cycle == cycle && i64::try_from(a.deadline_ns).is_ok_and(|d| d == deadline)
                })
            })
            .collect()
    }

    /// The report intervals' largest spikes whose record the sender had
    /// not taken by the report (deadline 0 in the aggregate) and never
    /// sent: their record was lost to a full queue, which is counted.
    pub fn worsts_never_sent(&self) -> usize {
        self.peaks
            .iter()
            .filter(|p| p.3 == 0 && !self.spike_deadlines.contains_key(&(p.0, p.2)))
            .count()
    }

    pub fn explained_late(&self) -> usize {
        let Some((lo, hi)) = self.spike_span else {
            return 0;
        };
        let mid = lo + (hi - lo) / 2;
        self.explained
            .iter()
            .filter(|a| i64::try_from(a.deadline_ns).is_ok_and(|d| d >= mid))
            .count()
    }
}

/// How the explained spikes' time splits, for one IRQ of interest.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Shares {
    /// Explained spikes, how many of them are coarse (`/proc` counts), and
    /// how many are all untraced (the trace was off for their whole
    /// window, e.g. frozen for an earlier spike).
    pub spikes: usize,
    pub coarse: usize,
    pub blind: usize,
    /// Explained spikes that carry a line for the IRQ.
    pub with_irq: usize,
    /// Sum of the traced spikes' latencies, ns.
    pub total_ns: u64,
    /// Time of the IRQ: its hard handler and its `PREEMPT_RT` thread.
    pub irq_ns: u64,
    /// The part of `irq_ns` its thread ran (lines named `irq/N-...`).
    pub irq_thread_ns: u64,
    /// Every untraced line: irqs or preemption off, and the trace's own
    /// losses.
    pub untraced_ns: u64,
    /// Of it, the trace's own losses: events lost, beyond latscope's
    /// history, or (older targets) not recorded.
    pub trace_loss_ns: u64,
    /// Task lines named after the IRQ's thread (`irq/N-...`): IRQ thread
    /// time counted as some task's.
    pub irq_as_task_ns: u64,
}

impl Shares {
    /// Adds up the traced (not coarse) attributions for IRQ `irq`.
    pub fn of(explained: &[Attribution], irq: u32) -> Shares {
        let thread = format!("irq/{irq}-");
        let mut s = Shares::default();
        for a in explained {
            s.spikes += 1;
            if a.coarse {
                s.coarse += 1;
                continue;
            }
            s.total_ns += a.latency_ns;
            s.blind += usize::from(a.causes.iter().all(|c| c.kind() == CauseKind::Untraced));
            let mut hit = false;
            for c in &a.causes {
                match &c.culprit {
                    Culprit::Irq { irq: n, name, .. } if *n == irq => {
                        hit = true;
                        s.irq_ns += c.ns;
                        if name.starts_with(&thread) {
                            s.irq_thread_ns += c.ns;
                        }
                    }
                    Culprit::Task(t) if t.comm.starts_with(&thread) => s.irq_as_task_ns += c.ns,
                    Culprit::Untraced(why) => {
                        s.untraced_ns += c.ns;
                        if *why != Untraced::Off {
                            s.trace_loss_ns += c.ns;
                        }
                    }
                    _ => {}
                }
            }
            s.with_irq += usize::from(hit);
        }
        s
    }

    /// `part` as a share of the traced spikes' time.
    pub fn share(&self, part: u64) -> f64 {
        part as f64 / self.total_ns.max(1) as f64
    }

    /// One line for test output.
    pub fn line(&self, irq: u32) -> String {
        format!(
            "{} explained spikes ({} coarse, {} all untraced, {} with irq {irq}), {:.1} ms: \
             irq {irq} {:.2} % (its thread {:.2} %), untraced {:.1} % (lost by the trace {:.1} %), \
             irq thread as task {:.2} %",
            self.spikes,
            self.coarse,
            self.blind,
            self.with_irq,
            self.total_ns as f64 / 1e6,
            100.0 * self.share(self.irq_ns),
            100.0 * self.share(self.irq_thread_ns),
            100.0 * self.share(self.untraced_ns),
            100.0 * self.share(self.trace_loss_ns),
            100.0 * self.share(self.irq_as_task_ns),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(realtime: bool, version: &str) -> TargetInfo {
        let mut t = TargetInfo {
            preempt_rt: realtime,
            ..TargetInfo::default()
        };
        t.kernel_version.push_str(version).expect("short version");
        t
    }

    #[test]
    fn the_rt_board_must_boot_a_preempt_rt_kernel() {
        let rt = target(true, "#1 SMP PREEMPT_RT Debian 6.1.158-1 (2025-11-09)");
        let plain = target(false, "#1 SMP Debian 6.1.158-1 (2025-11-09)");
        assert_eq!(kernel_problem(&rt, true), None);
        assert_eq!(kernel_problem(&plain, false), None);
        let why = kernel_problem(&plain, true).expect("a non-RT kernel is caught");
        assert!(why.contains("expected a PREEMPT_RT kernel"), "{why}");
        assert!(kernel_problem(&rt, false).is_some());
        // both sources must agree: one alone is not enough
        assert!(kernel_problem(&target(true, "#1 SMP PREEMPT"), true).is_some());
        assert!(kernel_problem(&target(false, "#1 SMP PREEMPT_RT"), true).is_some());
    }

    #[test]
    fn a_board_that_booted_another_kernel_than_the_pin_is_caught() {
        let mut t = TargetInfo::default();
        t.kernel.push_str("6.1.0-57-rt-arm64").expect("short");
        let why = release_problem(&t, "6.12.95+deb12-rt-arm64").expect("caught");
        assert!(
            why.contains("expected the pinned \"6.12.95+deb12-rt-arm64\""),
            "{why}"
        );
        assert_eq!(release_problem(&t, "6.1.0-57-rt-arm64"), None);
    }
}
