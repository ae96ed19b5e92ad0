//! Decoding a recorded latscope stream and checking a run end to end: the
//! hello, per-thread cycle accounting, link errors and the bye.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use latscope_core::wire::{Body, Bye, Decoder, Hello, LinkStats, ThreadStats, MAX_FRAME};

/// How much longer than requested a run may take (the last wake-up's
/// lateness and the final report) before the check fails.
pub const RUN_TIME_SLACK_NS: u64 = 1_000_000_000;

/// What a stream held, as the host sees it.
#[derive(Default)]
pub struct Summary {
    pub hello: Option<Hello>,
    /// The latest statistics of each thread (by thread index).
    pub stats: BTreeMap<u16, ThreadStats>,
    pub bye: Option<Bye>,
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
                Body::Delta(_) | Body::Chunk(_) | Body::Spike(_) | Body::Explain(_) => {}
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
}

/// Checks a decoded run; returns the list of failures (empty: all good).
pub fn check(sum: &Summary, want: &Expect<'_>) -> Vec<String> {
    let mut bad = Vec::new();
    match &sum.hello {
        None => bad.push("no hello frame".to_string()),
        Some(h) => {
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
        // The final report comes at the requested run time, give or take the
        // lateness of the last wake-up (lenient: emulated timing is noisy).
        if s.elapsed_ns < want.duration_ns.saturating_sub(interval)
            || s.elapsed_ns > want.duration_ns + RUN_TIME_SLACK_NS
        {
            bad.push(format!(
                "thread {t}: ran {} ns, expected {} ns (+ at most {RUN_TIME_SLACK_NS} ns)",
                s.elapsed_ns, want.duration_ns
            ));
        }
        if !s.last_report {
            bad.push(format!(
                "thread {t}: final statistics not marked last_report"
            ));
        }
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
