//! Turning decoded frames into runs: per-thread histograms and statistics,
//! spikes, log lines and the bye, in memory that does not grow with the
//! length of the stream.

mod explain;
mod paged;
mod series;
mod spikes;
mod thread;

pub(crate) use explain::{cause_label, gap_line, Explained};
pub(crate) use series::Point;
pub use thread::SERIES_POINTS;
pub(crate) use thread::{SpikeAccount, ThreadAgg};

use std::sync::Arc;

use latscope_core::layout::{Layout, MAX_LINEAR_US};
use latscope_core::wire::{
    Body, Bye, Frame, Hello, Level, LogLine, TimerlatChunk, TimerlatDelta, TimerlatStats, WakeMode,
    MAX_THREADS, PROTOCOL_VERSION, SCHEMA_KEY,
};

use latscope_core::slo::Goals;

use crate::budget::{Budget, Charge, RUN_FIXED};

/// Log lines kept per run; later ones are counted.
const LOGS_KEPT: usize = 64;

/// Overflow cycle numbers kept per thread: cyclictest prints at most `-h`
/// of them, and a target's `-h` is at most [`MAX_LINEAR_US`].
fn overflow_keep(hello: &Hello) -> usize {
    hello.config.hist_us.min(MAX_LINEAR_US) as usize
}

/// One run of the target: everything between its hellos and its bye.
#[derive(Debug)]
pub(crate) struct Run {
    /// The latest hello of the run.
    pub hello: Hello,
    /// Its histogram layout.
    pub layout: Layout,
    /// Threads by index.
    pub threads: Vec<ThreadAgg>,
    /// Log lines, the first [`LOGS_KEPT`].
    pub logs: Vec<LogLine>,
    /// Log lines received.
    pub logs_total: u64,
    /// The bye, if it arrived.
    pub bye: Option<Bye>,
    /// Frames that belonged to this run.
    pub frames: u64,
    /// Frames naming a thread the run does not have.
    pub unknown_thread: u64,
    /// Explained spikes.
    pub explained: Explained,
    /// Whether the hello was never decoded: [`Run::hello`] is a stand-in
    /// whose target and configuration must not be shown as facts.
    pub hello_lost: bool,
    /// Frames of threads the stream's memory budget refused.
    pub refused_frames: u64,
    /// The spikes' evidence the stream carried (version 4).
    pub evidence: crate::evidence::Evidence,
    /// The latency goals whose limits each thread counts the samples above.
    goals: Option<Arc<Goals>>,
    budget: Arc<Budget>,
    _charge: Charge,
}

impl Run {
    /// The run a possible hello ([`Hello::is_possible`]) starts, with a
    /// run's budget inside its stream's `stream`; `None` if the budget
    /// refuses it.
    fn new(hello: Hello, stream: &Arc<Budget>, goals: Option<Arc<Goals>>) -> Option<Self> {
        let budget = Budget::run(stream);
        let charge = Charge::take(&budget, RUN_FIXED)?;
        let layout = hello.config.layout;
        let n = hello
            .config
            .threads
            .iter()
            .map(|t| usize::from(t.index) + 1)
            .max()
            .unwrap_or(0)
            .min(MAX_THREADS);
        let mut run = Run {
            hello,
            layout,
            threads: Vec::new(),
            logs: Vec::new(),
            logs_total: 0,
            bye: None,
            frames: 1,
            unknown_thread: 0,
            explained: Explained::default(),
            hello_lost: false,
            refused_frames: 0,
            evidence: crate::evidence::Evidence::default(),
            goals,
            budget,
            _charge: charge,
        };
        if n > 0 {
            let _ = run.thread(n as u16 - 1);
        }
        for t in run.hello.config.threads.clone() {
            if let Some(agg) = run.threads.get_mut(usize::from(t.index)) {
                agg.info = Some(t);
            }
        }
        Some(run)
    }

    /// The run's host name.
    pub(crate) fn hostname(&self) -> &str {
        self.hello.target.hostname.as_str()
    }

    fn thread(&mut self, index: u16) -> Option<&mut ThreadAgg> {
        let i = usize::from(index);
        if i >= MAX_THREADS {
            self.unknown_thread += 1;
            return None;
        }
        while self.threads.len() <= i {
            let keep = overflow_keep(&self.hello);
            let spike_ns = self.hello.config.spike_ns;
            match ThreadAgg::new(&self.layout, None, keep, spike_ns, &self.budget) {
                Ok(Some(t)) => self.threads.push(t.with_goals(self.goals.as_deref())),
                Ok(None) => {
                    self.refused_frames += 1;
                    return None;
                }
                // cannot happen: the run's layout is legal
                Err(_) => return None,
            }
        }
        self.threads.get_mut(i)
    }

    /// Counts and frames the stream's memory budget refused (the
    /// histograms are incomplete when it is not 0).
    pub(crate) fn refused(&self) -> u64 {
        self.refused_frames + self.threads.iter().map(ThreadAgg::refused).sum::<u64>()
    }

    fn apply(&mut self, body: &Body) {
        self.frames += 1;
        match body {
            Body::Hello(h) => self.hello = h.clone(),
            Body::Stats(s) => {
                if let Some(t) = self.thread(s.thread) {
                    t.on_stats(s);
                }
            }
            Body::Delta(d) => {
                if let Some(t) = self.thread(d.thread) {
                    t.on_delta(d);
                }
            }
            Body::Chunk(c) => {
                if let Some(t) = self.thread(c.thread) {
                    t.on_chunk(c);
                }
            }
            Body::Spike(r) => {
                if let Some(t) = self.thread(r.thread) {
                    t.spike(r);
                }
            }
            Body::Log(l) => {
                self.logs_total += 1;
                if self.logs.len() < LOGS_KEPT {
                    self.logs.push(l.clone());
                }
            }
            Body::Bye(b) => self.bye = Some(*b),
            Body::Explain(a) => self.explained.push(a),
            Body::Aggregate(a) => {
                if let Some(t) = self.thread(a.thread) {
                    t.spike_account.on_aggregate(a);
                }
            }
            Body::EvidenceHead(h) => self.evidence.on_head(h, &self.budget),
            Body::EvidencePart(p) => self.evidence.on_part(p),
            Body::TimerlatStats(TimerlatStats { thread, .. })
            | Body::TimerlatDelta(TimerlatDelta { thread, .. })
            | Body::TimerlatChunk(TimerlatChunk { thread, .. }) => {
                let layout = self.layout;
                if let Some(t) = self.thread(*thread) {
                    t.on_timerlat(&layout, body);
                }
            }
        }
    }

    /// Whether the run is of the timerlat mode: each thread's timerlat
    /// histograms are then part of its figures.
    pub(crate) fn timerlat_mode(&self) -> bool {
        self.hello.config.wake == WakeMode::Timerlat
    }

    /// Whether the bye arrived and every thread's histogram is exact as of
    /// its final statistics, and so are its timerlat histograms if it has
    /// them or the run is of the timerlat mode.
    pub(crate) fn exact_at_end(&self) -> bool {
        let timerlat = self.timerlat_mode();
        self.bye.is_some()
            && self.threads.iter().all(|t| {
                t.exact_now()
                    && t.stats().is_some_and(|s| s.last_report)
                    && t.timerlat_exact_at_end(timerlat)
            })
    }

    /// The earliest epoch as of which every thread's histogram is exact,
    /// and its timerlat histograms if it has them or the run is of the
    /// timerlat mode.
    pub(crate) fn exact_epoch(&self) -> Option<u32> {
        let timerlat = self.timerlat_mode();
        self.threads
            .iter()
            .flat_map(|t| {
                let tl = (timerlat || t.has_timerlat()).then(|| t.timerlat_exact_epoch());
                core::iter::once(t.exact_epoch()).chain(tl)
            })
            .try_fold(u32::MAX, |acc, e| e.map(|e| acc.min(e)))
            .filter(|&e| e != u32::MAX)
    }

    /// Warnings and errors the target logged.
    pub(crate) fn warnings(&self) -> impl Iterator<Item = &LogLine> {
        self.logs.iter().filter(|l| l.level != Level::Info)
    }
}

/// Frames held while no hello has arrived (about 10 s of a large run).
const PENDING_KEPT: usize = 2048;

/// Frames in, runs out, within one stream's memory budget.
#[derive(Debug)]
pub(crate) struct Aggregator {
    /// Runs in the order they started; the last one is current.
    pub runs: Vec<Run>,
    /// Frames that arrived before any hello and could not be held.
    pub before_hello: u64,
    /// Whether the first run was made up because no hello ever arrived.
    pub hello_lost: bool,
    pending: std::collections::VecDeque<Frame>,
    /// A hello whose schema differs from this build's, described.
    pub schema_mismatch: Option<String>,
    /// Hellos no latscope target can send, rejected with their runs.
    pub impossible: u64,
    /// Runs not kept because the stream's memory budget was used up.
    pub refused_runs: u64,
    /// Frames ignored after a schema mismatch, an impossible hello or a
    /// run the budget refused.
    pub ignored: u64,
    ignoring: bool,
    budget: Arc<Budget>,
    /// The latency goals whose limits every run's threads count samples above (`report --slo`).
    goals: Option<Arc<Goals>>,
    /// Keep the bytes of every run's evidence done, to be taken.
    keep_evidence: bool,
}

impl Default for Aggregator {
    fn default() -> Self {
        Aggregator::with_budget(Budget::stream())
    }
}

impl Aggregator {
    /// An aggregator that has seen nothing, charging what it keeps to
    /// `budget`.
    pub(crate) fn with_budget(budget: Arc<Budget>) -> Self {
        Aggregator {
            runs: Vec::new(),
            before_hello: 0,
            hello_lost: false,
            pending: std::collections::VecDeque::new(),
            schema_mismatch: None,
            impossible: 0,
            refused_runs: 0,
            ignored: 0,
            ignoring: false,
            budget,
            goals: None,
            keep_evidence: false,
        }
    }

    /// Keep each spike's evidence the stream carries, whole, until taken
    /// ([`Aggregator::take_evidence`]): a recorder writes it out.
    pub(crate) fn keep_evidence(&mut self) {
        self.keep_evidence = true;
        for r in &mut self.runs {
            r.evidence.keep = true;
        }
    }

    /// The evidence put together whole since the last call, of every run.
    pub(crate) fn take_evidence(&mut self) -> Vec<crate::evidence::Done> {
        self.runs
            .iter_mut()
            .flat_map(|r| r.evidence.take_done())
            .collect()
    }

    /// Count the samples above the limits of `goals` in every run from now on.
    pub(crate) fn set_goals(&mut self, goals: Arc<Goals>) {
        self.goals = Some(goals);
    }

    /// The stream's memory budget.
    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }

    /// Account one decoded frame.
    pub(crate) fn frame(&mut self, frame: &Frame) {
        if let Body::Hello(h) = &frame.body {
            if !h.is_possible() {
                // the decoder rejects these already; nothing sized by it
                self.impossible += 1;
                self.ignoring = true;
                self.ignored += 1;
                return;
            }
            if h.schema != SCHEMA_KEY {
                self.schema_mismatch = Some(format!(
                    "stream from latscope {} uses another frame schema ({}) than this \
                     latscope-host {} ({}), protocol version {PROTOCOL_VERSION}; \
                     frames after it are ignored",
                    h.tool_version,
                    hex(&h.schema),
                    env!("CARGO_PKG_VERSION"),
                    hex(&SCHEMA_KEY)
                ));
                self.ignoring = true;
                self.ignored += 1;
                return;
            }
            self.ignoring = false;
            let same = self.runs.last().is_some_and(|r| r.hello.run_id == h.run_id);
            if !same {
                match Run::new(h.clone(), &self.budget, self.goals.clone()) {
                    Some(mut run) => {
                        run.evidence.keep = self.keep_evidence;
                        self.runs.push(run);
                        self.replay();
                    }
                    None => {
                        self.refused_runs += 1;
                        self.ignoring = true;
                        self.ignored += 1;
                    }
                }
                return;
            }
        }
        if self.ignoring {
            self.ignored += 1;
            return;
        }
        match self.runs.last_mut() {
            Some(run) => run.apply(&frame.body),
            None => {
                // The hello may have been hit on the line: hold the frames
                // until one arrives (it is resent about every 10 s).
                if self.pending.len() >= PENDING_KEPT {
                    self.pending.pop_front();
                    self.before_hello += 1;
                }
                self.pending.push_back(frame.clone());
                // No hello follows a bye: the run ended without one.
                if matches!(frame.body, Body::Bye(_)) {
                    self.adopt_unknown();
                }
            }
        }
    }

    fn replay(&mut self) {
        let held = std::mem::take(&mut self.pending);
        if let Some(run) = self.runs.last_mut() {
            for f in &held {
                run.apply(&f.body);
            }
        }
    }

    /// End of input. Frames held for a hello that never came make a run of
    /// an unknown target with the default bucket layout.
    pub(crate) fn finish(&mut self) {
        self.adopt_unknown();
        for r in &mut self.runs {
            r.evidence.finish();
        }
    }

    /// Frames held for a hello that never came become a run of an unknown
    /// target with the default bucket layout.
    fn adopt_unknown(&mut self) {
        if self.runs.is_empty() && !self.pending.is_empty() && !self.ignoring {
            let Some(mut run) = Run::new(unknown_hello(), &self.budget, self.goals.clone()) else {
                self.refused_runs += 1;
                return;
            };
            self.hello_lost = true;
            run.hello_lost = true;
            self.runs.push(run);
            self.replay();
        }
    }

    /// The current run.
    pub(crate) fn current(&self) -> Option<&Run> {
        self.runs.last()
    }
}

/// The stand-in hello of a run whose hello was never decoded.
fn unknown_hello() -> Hello {
    use latscope_core::wire::{bounded, RunConfig, TargetInfo};
    Hello {
        schema: SCHEMA_KEY,
        tool_version: bounded("?"),
        run_id: 0,
        target: TargetInfo {
            hostname: bounded("unknown"),
            arch: bounded("?"),
            kernel: bounded("?"),
            preempt_model: bounded("?"),
            ..TargetInfo::default()
        },
        config: RunConfig::default(),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests;
