//! The classifier: turns the events of one CPU into exclusive cause lines.
//!
//! See the [module documentation](super) for the rules.

use core::cmp::Reverse;

use super::cause::{add_cause, Culprit, PrioClass, Softirq, Task, Untraced};
use super::parse::{parse_line, Event, EventKind};
use super::{bounded, Attribution, Cause, Loss, Name, PRIO_UNKNOWN};

/// Cause lines collected before the largest [`super::MAX_CAUSES`] are kept.
const WORK: usize = 48;

/// IRQ names learnt from handler entries, for the exits whose entry the
/// trace lost.
const NAMES: usize = 16;

/// Deepest nesting of IRQ/softirq/vector contexts tracked.
const STACK: usize = 8;

/// Slack for timestamps printed with microsecond resolution: a wake-up
/// stamped up to this much before the deadline still counts as ours.
const TS_SLACK_NS: u64 = 1_000;

/// The spike to explain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Measured CPU; events of other CPUs are ignored.
    pub cpu: u32,
    /// Cycle number of the late sample.
    pub cycle: u64,
    /// Deadline, in the trace clock's nanoseconds (`CLOCK_MONOTONIC` with
    /// `trace_clock` = `mono`).
    pub deadline_ns: u64,
    /// Time the measuring thread woke, same clock.
    pub wake_ns: u64,
    /// Thread id of the measuring thread (0 if unknown).
    pub pid: u32,
}

/// A running IRQ, softirq or vector context.
#[derive(Debug, Clone)]
struct IrqContext {
    /// Its line: [`Culprit::Irq`], [`Culprit::Softirq`] or
    /// [`Culprit::Vector`].
    culprit: Culprit,
    counted: bool,
}

/// Which context an entry or exit event is about: the kind and number an
/// exit names (an exit does not carry the IRQ's name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContextId {
    Irq(u32),
    Softirq(u32),
    Vector(u32),
}

impl ContextId {
    fn of(c: &Culprit) -> Option<Self> {
        match c {
            Culprit::Irq { irq, .. } => Some(ContextId::Irq(*irq)),
            Culprit::Softirq(s) => Some(ContextId::Softirq(s.vector())),
            Culprit::Vector { vector, .. } => Some(ContextId::Vector(*vector)),
            _ => None,
        }
    }
}

/// Who was current between events.
#[derive(Debug, Clone)]
struct Current {
    pid: u32,
    comm: Name,
    prio: i32,
}

/// Streaming classifier: feed it the events of one CPU in trace order
/// (starting before the deadline, ending at or after the wake-up), then
/// call [`Classifier::finish`]. If the events start after the deadline or
/// end before the wake-up, the uncovered part is [`Culprit::Untraced`]
/// and the result is `partial`.
///
/// ```
/// use latscope_core::explain::{Classifier, CauseKind, Window, parse_line};
/// let w = Window { cpu: 0, cycle: 7, deadline_ns: 1_000_000_000, wake_ns: 1_000_010_000, pid: 42 };
/// let mut c = Classifier::new(w);
/// for l in [
///     " t-42 [000] ..s1. 0.999998: softirq_entry: vec=3 [action=NET_RX]",
///     " t-42 [000] ..s1. 1.000006: softirq_exit: vec=3 [action=NET_RX]",
/// ] {
///     c.feed(&parse_line(l).unwrap());
/// }
/// let a = c.finish();
/// assert_eq!(a.find(CauseKind::Softirq, "NET_RX").unwrap().ns, 6_000);
/// assert_eq!(a.total_ns(), 10_000);
/// ```
#[derive(Debug, Clone)]
pub struct Classifier {
    window: Window,
    out: Attribution,
    work: heapless::Vec<Cause, WORK>,
    stack: heapless::Vec<IrqContext, STACK>,
    /// Frames lost to a full stack (their exits are ignored).
    overflow: u32,
    cur: Option<Current>,
    /// The current task's run (or the current base stretch) was counted.
    base_counted: bool,
    last_ts: Option<u64>,
    /// The measuring thread is runnable: woken by its timer, running, or
    /// preempted (it never slept because its deadline had already passed).
    runnable: bool,
    /// The measuring thread's kernel priority, once the trace shows it.
    prio: i32,
    /// Time given to the current IRQ thread while its priority was not
    /// known (met by its events, not by a switch); settled when its
    /// switch-out shows the priority.
    unsure: Option<UnsettledIrq>,
    /// The trace lost events since the last one (or before the first):
    /// the gap to the next event is untraced, for this reason.
    lost: Option<Loss>,
    /// Events the trace says it lost inside the window
    /// ([`Loss::Events`]): the count of the "trace lost" line.
    lost_events: u64,
    /// The trace was recording up to here (see
    /// [`Classifier::recorded_to`]).
    recorded_to: u64,
    /// Hard IRQ names seen in handler entries, by IRQ number.
    names: heapless::Vec<(u32, Name), NAMES>,
}

impl Classifier {
    /// A classifier for `window`.
    pub fn new(window: Window) -> Self {
        let latency = window.wake_ns.saturating_sub(window.deadline_ns);
        Self {
            window,
            out: Attribution::new(window.cpu, window.cycle, window.deadline_ns, latency),
            work: heapless::Vec::new(),
            stack: heapless::Vec::new(),
            overflow: 0,
            cur: None,
            base_counted: false,
            last_ts: None,
            runnable: false,
            prio: PRIO_UNKNOWN,
            unsure: None,
            lost: None,
            lost_events: 0,
            recorded_to: 0,
            names: heapless::Vec::new(),
        }
    }

    /// The events between the last one fed (or the window's start, before
    /// the first) and the next are gone, as `loss` says: that stretch is
    /// [`Culprit::Untraced`] for its reason, and the result `partial`.
    /// Losses before the next event add up: their counts sum, and a loss of
    /// unknown count, or of what the history no longer holds, prevails.
    pub fn lost(&mut self, loss: Loss) {
        if self.done() {
            return;
        }
        self.lost = Some(match (self.lost, loss) {
            (Some(Loss::Events(a)), Loss::Events(b)) => Loss::Events(a.saturating_add(b)),
            (Some(a), b) => a.max(b),
            (None, b) => b,
        });
    }

    /// The trace was recording up to `ns`: where the events end before the
    /// wake-up and `ns` is past it, no event came (irqs or preemption off,
    /// [`Untraced::Off`]); without it the rest is beyond what was read
    /// ([`Untraced::Beyond`]).
    pub fn recorded_to(&mut self, ns: u64) {
        self.recorded_to = self.recorded_to.max(ns);
    }

    /// True once an event at or after the wake-up has been seen: later
    /// events cannot change the result.
    pub fn done(&self) -> bool {
        self.last_ts.is_some_and(|t| t >= self.window.wake_ns)
    }

    /// Feeds one event. Events of other CPUs are ignored; timestamps that go
    /// backwards are treated as equal to the previous one.
    pub fn feed(&mut self, e: &Event<'_>) {
        if e.kind == EventKind::Lost {
            // The text says events are gone, not how many.
            self.lost(Loss::Unknown);
            return;
        }
        if e.cpu != self.window.cpu {
            return;
        }
        let ts = match self.last_ts {
            Some(l) if e.ts_ns < l => l,
            _ => e.ts_ns,
        };
        match self.last_ts {
            None => {
                // The trace does not reach back to the deadline: its
                // oldest events were overwritten, unless told otherwise.
                let loss = self.lost.take().unwrap_or(Loss::Unknown);
                self.add_loss(self.window.deadline_ns, ts, loss);
            }
            Some(last) if self.lost.is_some() => {
                let loss = self.lost.take().unwrap_or(Loss::Unknown);
                self.add_loss(last, ts, loss);
            }
            Some(last) => {
                let owner = self.gap_owner(&e.kind);
                self.add_time(last, ts, owner);
            }
        }
        self.last_ts = Some(ts);
        self.follow_header(e, ts);
        self.apply(e, ts);
    }

    /// Attributes the rest of the window and returns the result.
    pub fn finish(mut self) -> Attribution {
        let end = self.window.wake_ns;
        match self.last_ts {
            // Nothing of the window is in the trace: its events are gone
            // (or were never recorded; without events we cannot tell).
            None => {
                let loss = self.lost.take().unwrap_or(Loss::Unknown);
                self.add_loss(self.window.deadline_ns, end, loss);
            }
            // The trace stops before the wake-up while the measuring thread
            // runs outside any IRQ: the rest is its own way out.
            Some(last) if last < end && self.own_way_out() => {
                self.add_time(last, end, StretchOwner::Current);
            }
            // Otherwise: lost, or no event came while the trace recorded,
            // or the trace as read ends before the wake-up.
            Some(last) if last < end => match self.lost.take() {
                Some(loss) => self.add_loss(last, end, loss),
                None if self.recorded_to >= end => {
                    self.add_time(last, end, StretchOwner::Unknown(Untraced::Off));
                }
                None => self.add_time(last, end, StretchOwner::Unknown(Untraced::Beyond)),
            },
            Some(last) => self.add_time(last, end, StretchOwner::Current),
        }
        let mut work = self.work;
        let lost = u32::try_from(self.lost_events).unwrap_or(u32::MAX);
        for c in &mut work {
            if let Culprit::Untraced(Untraced::Lost { events }) = &mut c.culprit {
                *events = lost;
            }
        }
        // A handler met only by its exit has no name; another of its
        // entries may have told it: one line per handler, not two.
        let named = |c: &Cause| match &c.culprit {
            Culprit::Irq { irq, name, .. } if name.is_empty() => self
                .names
                .iter()
                .find(|(i, _)| i == irq)
                .map(|(_, n)| n.clone()),
            _ => None,
        };
        while let Some((i, known)) = work
            .iter()
            .enumerate()
            .find_map(|(i, c)| Some((i, named(c)?)))
        {
            let mut c = work.swap_remove(i);
            if let Culprit::Irq { name, .. } = &mut c.culprit {
                *name = known;
            }
            add_cause(&mut work, c.culprit, c.count, c.ns);
        }
        if !self.runnable {
            // Without our wake-up in the trace "timer delay" is a guess.
            while let Some(i) = work
                .iter()
                .position(|c| matches!(c.culprit, Culprit::TimerDelay { .. }))
            {
                let c = work.swap_remove(i);
                add_cause(&mut work, Culprit::Untraced(Untraced::Off), c.count, c.ns);
            }
        }
        // largest first; kind and number last make the key total
        crate::sort::by_key(&mut work, |c| {
            (
                Reverse(c.ns),
                Reverse(c.count),
                order_id(&c.culprit),
                c.kind(),
            )
        });
        let mut out = self.out;
        for c in work {
            out.add(c.culprit, c.count, c.ns);
        }
        out
    }

    /// True if the measuring thread is current, runnable, outside any IRQ
    /// context: nothing but its own return path can be running.
    fn own_way_out(&self) -> bool {
        self.runnable
            && self.stack.is_empty()
            && self.overflow == 0
            && self.lost.is_none()
            && self.cur.as_ref().is_some_and(|c| self.is_ours(c.pid))
    }

    /// Who owns the time between the previous event and `kind`.
    fn gap_owner(&self, kind: &EventKind<'_>) -> StretchOwner {
        // An exit whose entry we never saw: that context was running.
        let orphan = match *kind {
            EventKind::IrqExit { irq } => Some(irq_culprit(irq, "")),
            EventKind::SoftirqExit { vec } => Some(Culprit::Softirq(Softirq::from_vector(vec))),
            EventKind::VectorExit { name, vector } => Some(Culprit::Vector {
                vector,
                name: bounded(name),
            }),
            _ => None,
        };
        if let Some(c) = orphan {
            let id = ContextId::of(&c);
            let known = self.stack.iter().any(|f| ContextId::of(&f.culprit) == id);
            if !known && self.overflow == 0 {
                return StretchOwner::Orphan(c);
            }
        }
        StretchOwner::Current
    }

    /// Updates the current task from the line's header (catches switches
    /// the trace missed and comm changes on exec).
    fn follow_header(&mut self, e: &Event<'_>, ts: u64) {
        if self.is_ours(e.task.pid) {
            self.set_runnable(true, ts);
        }
        match &mut self.cur {
            Some(c) if c.pid == e.task.pid => {
                if !e.task.comm.is_empty() && e.task.comm != "<...>" {
                    c.comm = bounded(e.task.comm);
                }
            }
            _ => {
                self.cur = Some(Current {
                    pid: e.task.pid,
                    comm: bounded(e.task.comm),
                    prio: PRIO_UNKNOWN,
                });
                self.base_counted = false;
            }
        }
    }

    fn in_window(&self, ts: u64) -> bool {
        ts >= self.window.deadline_ns && ts <= self.window.wake_ns
    }

    fn push(&mut self, culprit: Culprit, ts: u64) {
        let counted = self.in_window(ts);
        if counted {
            add_cause(&mut self.work, culprit.clone(), 1, 0);
        }
        let f = IrqContext { culprit, counted };
        if self.stack.push(f).is_err() {
            self.overflow = self.overflow.saturating_add(1);
        }
        self.base_counted = false;
    }

    fn pop(&mut self, id: ContextId) {
        if let Some(i) = self
            .stack
            .iter()
            .rposition(|f| ContextId::of(&f.culprit) == Some(id))
        {
            // Exits that never came for inner frames: drop those too.
            self.stack.truncate(i);
        } else if self.overflow > 0 {
            self.overflow -= 1;
        }
        self.base_counted = false;
    }

    /// True if `pid` is the measuring thread (when the window names it).
    fn is_ours(&self, pid: u32) -> bool {
        self.window.pid != 0 && pid == self.window.pid
    }

    /// Sets whether the measuring thread is runnable, as of `ts`. After
    /// the wake-up the state no longer matters and stays as it was then.
    fn set_runnable(&mut self, runnable: bool, ts: u64) {
        if self.runnable != runnable && ts <= self.window.wake_ns {
            self.runnable = runnable;
            self.base_counted = false;
        }
    }

    fn learn_prio(&mut self, prio: i32) {
        if prio != PRIO_UNKNOWN {
            self.prio = prio;
        }
    }

    /// Follows the measuring thread through a switch: switched in, or
    /// switched out preempted (`R`, `R+`), it is runnable; switched out
    /// in any other state it blocked.
    fn follow_switch(&mut self, sw: &Switch<'_>, ts: u64) {
        if self.is_ours(sw.prev) {
            self.learn_prio(sw.prev_prio);
            if !sw.prev_state.is_empty() {
                self.set_runnable(sw.prev_state.starts_with('R'), ts);
            }
        }
        if self.is_ours(sw.next) {
            self.learn_prio(sw.next_prio);
            self.set_runnable(true, ts);
        }
    }

    /// True if the task of kernel priority `prio` ranks below the
    /// measuring thread, so it cannot have been chosen over it.
    fn ranks_below_ours(&self, prio: i32) -> bool {
        prio != PRIO_UNKNOWN && self.prio != PRIO_UNKNOWN && prio > self.prio
    }

    fn apply(&mut self, e: &Event<'_>, ts: u64) {
        match e.kind {
            EventKind::IrqEntry { irq, name } => {
                if !name.is_empty() && !self.names.iter().any(|(i, _)| *i == irq) {
                    let _ = self.names.push((irq, bounded(name)));
                }
                self.push(irq_culprit(irq, name), ts);
            }
            EventKind::IrqExit { irq } => self.pop(ContextId::Irq(irq)),
            EventKind::SoftirqEntry { vec } => {
                self.push(Culprit::Softirq(Softirq::from_vector(vec)), ts);
            }
            EventKind::SoftirqExit { vec } => self.pop(ContextId::Softirq(vec)),
            EventKind::VectorEntry { name, vector } => {
                let name = bounded(name);
                self.push(Culprit::Vector { vector, name }, ts);
            }
            EventKind::VectorExit { vector, .. } => self.pop(ContextId::Vector(vector)),
            EventKind::Switch {
                prev,
                prev_prio,
                prev_state,
                next,
                next_prio,
            } => {
                let sw = Switch {
                    prev: prev.pid,
                    prev_prio,
                    prev_state,
                    next: next.pid,
                    next_prio,
                };
                self.follow_switch(&sw, ts);
                self.settle(prev.pid, prev_prio);
                // The switch out tells the priority of a task we met by
                // its header only.
                for c in &mut self.work {
                    if let Culprit::Task(t) | Culprit::TimerDelay { running: Some(t) } =
                        &mut c.culprit
                    {
                        if t.pid == prev.pid && t.prio.is_none() {
                            t.prio = PrioClass::from_kernel(prev_prio);
                        }
                    }
                }
                self.cur = Some(Current {
                    pid: next.pid,
                    comm: bounded(next.comm),
                    prio: next_prio,
                });
                self.base_counted = false;
                // A switch happens outside any IRQ context.
                self.stack.clear();
                self.overflow = 0;
            }
            EventKind::Wakeup { task, prio } => {
                if self.is_ours(task.pid) {
                    self.learn_prio(prio);
                    if ts.saturating_add(TS_SLACK_NS) >= self.window.deadline_ns {
                        self.set_runnable(true, ts);
                    }
                }
            }
            EventKind::HrtimerExpire { .. }
            | EventKind::CpuIdle { .. }
            | EventKind::Marker { .. }
            | EventKind::Lost
            | EventKind::Other { .. } => {}
        }
    }

    /// Adds `[from, to]` clipped to the window to `owner`.
    fn add_time(&mut self, from: u64, to: u64, owner: StretchOwner) {
        let s = from.max(self.window.deadline_ns);
        let e = to.min(self.window.wake_ns);
        self.add_clipped(s, e, owner);
    }

    /// Adds `[from, to]` clipped to the window as untraced for `loss`;
    /// the events of a [`Loss::Events`] count if any of it was inside.
    fn add_loss(&mut self, from: u64, to: u64, loss: Loss) {
        if let Loss::Events(n) = loss {
            if to > self.window.deadline_ns && from < self.window.wake_ns {
                self.lost_events = self.lost_events.saturating_add(n);
            }
        }
        self.add_time(from, to, StretchOwner::Unknown(loss.untraced()));
    }

    /// Adds `[s, e]` (already clipped) to `owner`.
    fn add_clipped(&mut self, s: u64, e: u64, owner: StretchOwner) {
        if e <= s {
            return;
        }
        let ns = e - s;
        match owner {
            StretchOwner::Unknown(why) => {
                // Part of the window is not in the trace.
                self.out.partial = true;
                self.add_base(Culprit::Untraced(why), ns);
            }
            StretchOwner::Orphan(culprit) => add_cause(&mut self.work, culprit, 1, ns),
            StretchOwner::Current => {
                if let Some(top) = self.stack.last_mut() {
                    let count = u32::from(!top.counted);
                    top.counted = true;
                    let culprit = top.culprit.clone();
                    add_cause(&mut self.work, culprit, count, ns);
                    return;
                }
                match self.cur.clone() {
                    None => self.add_base(Culprit::Untraced(Untraced::Off), ns),
                    Some(c) if c.pid == 0 => self.add_base(Culprit::IdleExit, ns),
                    // The timer is late: say what ran on the CPU meanwhile.
                    Some(c) if !self.runnable => {
                        let running = Some(c.task());
                        self.add_base(Culprit::TimerDelay { running }, ns);
                    }
                    Some(c) if self.is_ours(c.pid) => {
                        self.add_base(Culprit::Untraced(Untraced::Off), ns);
                    }
                    Some(c) => self.add_task(&c, ns),
                }
            }
        }
    }

    /// Time another task `c` was current while the measuring thread was
    /// runnable. A `PREEMPT_RT` IRQ thread counts as its IRQ (named by the
    /// thread's comm, `irq/13-uart-pl0`, with the thread's priority when
    /// known) if it ranked at or above the
    /// measuring thread; one that ranked below was only on its way off the
    /// CPU (the kernel's return and switch path, irqs or preemption off),
    /// so the IRQ is not blamed for it.
    fn add_task(&mut self, c: &Current, ns: u64) {
        match irq_thread(&c.comm) {
            Some(_) if self.ranks_below_ours(c.prio) => {
                self.add_base(Culprit::Untraced(Untraced::Off), ns);
            }
            Some(irq) => {
                let counted = u32::from(!self.base_counted);
                let thread = Culprit::Irq {
                    irq,
                    name: c.comm.clone(),
                    thread: PrioClass::from_kernel(c.prio),
                };
                self.add_base(thread, ns);
                if c.prio == PRIO_UNKNOWN {
                    let u = self.unsure.get_or_insert(UnsettledIrq {
                        pid: c.pid,
                        irq,
                        comm: c.comm.clone(),
                        count: 0,
                        ns: 0,
                    });
                    u.count += counted;
                    u.ns += ns;
                }
            }
            None => self.add_base(Culprit::Task(c.task()), ns),
        }
    }

    /// Task `pid` left the CPU with kernel priority `prio`. If it is the
    /// IRQ thread whose time was unsure and it ranked below the measuring
    /// thread, that time moves from its IRQ to the untraced line (see
    /// [`Classifier::add_task`]).
    fn settle(&mut self, pid: u32, prio: i32) {
        let Some(u) = self.unsure.take() else {
            return;
        };
        if u.pid != pid {
            return;
        }
        if !self.ranks_below_ours(prio) {
            // It ranked at or above: its line keeps the time and now shows
            // the priority (one line per thread, not one with and one
            // without).
            if let Some(Culprit::Irq { thread, .. }) = self
                .work
                .iter_mut()
                .map(|c| &mut c.culprit)
                .find(|c| u.is(c))
            {
                if let Some(p) = PrioClass::from_kernel(prio) {
                    *thread = Some(p);
                }
            }
            return;
        }
        if let Some(i) = self.work.iter().position(|c| u.is(&c.culprit)) {
            let line = &mut self.work[i];
            line.ns = line.ns.saturating_sub(u.ns);
            line.count = line.count.saturating_sub(u.count);
            if line.ns == 0 && line.count == 0 {
                self.work.swap_remove(i);
            }
        }
        add_cause(
            &mut self.work,
            Culprit::Untraced(Untraced::Off),
            u.count,
            u.ns,
        );
    }

    fn add_base(&mut self, culprit: Culprit, ns: u64) {
        let count = u32::from(!self.base_counted);
        self.base_counted = true;
        add_cause(&mut self.work, culprit, count, ns);
    }
}

/// The pids, priorities and leaving state of a `sched_switch`.
struct Switch<'a> {
    prev: u32,
    prev_prio: i32,
    prev_state: &'a str,
    next: u32,
    next_prio: i32,
}

/// Time an IRQ thread of unknown priority was given (see
/// [`Classifier::settle`]).
#[derive(Debug, Clone)]
struct UnsettledIrq {
    pid: u32,
    irq: u32,
    comm: Name,
    /// Episodes and time added to its IRQ's line.
    count: u32,
    ns: u64,
}

impl UnsettledIrq {
    /// True if `c` is the line of its IRQ thread.
    fn is(&self, c: &Culprit) -> bool {
        matches!(c, Culprit::Irq { irq, name, .. } if *irq == self.irq && *name == self.comm)
    }
}

impl Current {
    /// It, as a cause line names a task.
    fn task(&self) -> Task {
        Task {
            pid: self.pid,
            comm: self.comm.clone(),
            prio: PrioClass::from_kernel(self.prio),
        }
    }
}

/// Who owns a stretch of time.
#[derive(Clone)]
enum StretchOwner {
    /// The innermost context, else the current task or state.
    Current,
    /// Nothing is known, for this reason.
    Unknown(Untraced),
    /// A context whose entry is missing.
    Orphan(Culprit),
}

/// A hard IRQ handler's line.
fn irq_culprit(irq: u32, name: &str) -> Culprit {
    Culprit::Irq {
        irq,
        name: bounded(name),
        thread: None,
    }
}

/// The number that orders lines of equal time and count: the IRQ,
/// vector or softirq number, the pid, or the untraced reason's rank.
fn order_id(c: &Culprit) -> u32 {
    match c {
        Culprit::Irq { irq, .. } => *irq,
        Culprit::Vector { vector, .. } => *vector,
        Culprit::Softirq(s) => s.vector(),
        Culprit::Task(t) | Culprit::TimerDelay { running: Some(t) } => t.pid,
        Culprit::Untraced(u) => match u {
            Untraced::Off => 0,
            Untraced::Paused => 1,
            Untraced::Lost { .. } => 2,
            Untraced::LostUnknown => 3,
            Untraced::Beyond => 4,
        },
        Culprit::TimerDelay { running: None }
        | Culprit::IdleExit
        | Culprit::Masked
        | Culprit::Other => 0,
    }
}

/// `irq/36-virtio1-r` → `36`: the IRQ of a `PREEMPT_RT` IRQ thread.
fn irq_thread(comm: &str) -> Option<u32> {
    let rest = comm.strip_prefix("irq/")?;
    let n = rest.split_once('-').map_or(rest, |(n, _)| n);
    n.parse().ok()
}

/// Classifies a sequence of events for `window`; see [`Classifier`].
pub(crate) fn classify<'a, I>(window: &Window, events: I) -> Attribution
where
    I: IntoIterator<Item = Event<'a>>,
{
    let mut c = Classifier::new(*window);
    for e in events {
        c.feed(&e);
    }
    c.finish()
}

/// Parses tracefs text (one CPU's `trace` file, or any text whose lines
/// [`parse_line`] reads) and classifies it for `window`.
pub fn classify_text(window: &Window, text: &str) -> Attribution {
    classify(window, text.lines().filter_map(parse_line))
}

#[cfg(test)]
mod tests {
    use super::super::{CauseKind, PRIO_UNKNOWN, UNTRACED_LABEL};
    use super::*;
    use proptest::prelude::*;
    use std::println;

    /// A line's number: IRQ, vector, softirq vector or pid (see
    /// [`order_id`]).
    fn id(c: &Cause) -> u32 {
        order_id(&c.culprit)
    }

    /// The kernel priority of the task a line names, as `sched_switch`
    /// prints it, or [`PRIO_UNKNOWN`].
    fn prio(c: &Cause) -> i32 {
        match c.culprit.prio() {
            Some(PrioClass::Deadline) => -1,
            Some(PrioClass::RealTime(p)) => 99 - i32::from(p),
            Some(PrioClass::Normal(n)) => 120 + i32::from(n),
            None => PRIO_UNKNOWN,
        }
    }

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    /// Reads `deadline=`, `wake=`, `cycle=` and `cpu=` from the marker the
    /// recording wrote after the spike, and the writer's pid.
    fn window_from_marker(text: &str) -> Window {
        for l in text.lines() {
            if let Some(e) = parse_line(l) {
                if let EventKind::Marker { text } = e.kind {
                    let get = |k: &str| -> u64 {
                        text.split(' ')
                            .find_map(|kv| kv.strip_prefix(k))
                            .and_then(|v| v.parse().ok())
                            .unwrap()
                    };
                    return Window {
                        cpu: get("cpu=") as u32,
                        cycle: get("cycle="),
                        deadline_ns: get("deadline="),
                        wake_ns: get("wake="),
                        pid: e.task.pid,
                    };
                }
            }
        }
        panic!("no marker");
    }

    /// A window on CPU 0, cycle 1, for `pid`.
    fn window(deadline_ns: u64, wake_ns: u64, pid: u32) -> Window {
        Window {
            cpu: 0,
            cycle: 1,
            deadline_ns,
            wake_ns,
            pid,
        }
    }

    /// Classify trace `lines` in `w`, printing the result.
    fn classify_lines(w: &Window, lines: &[&str]) -> Attribution {
        let a = classify(w, lines.iter().filter_map(|l| parse_line(l)));
        print(&a);
        a
    }

    fn print(a: &Attribution) {
        println!(
            "spike {} ns CPU{} cycle {} partial {}",
            a.latency_ns, a.cpu, a.cycle, a.partial
        );
        for c in &a.causes {
            println!(
                "  {:?} {} {} x{} {} ns prio {:?}",
                c.kind(),
                id(c),
                c.label(),
                c.count,
                c.ns,
                c.culprit.prio()
            );
        }
    }

    #[test]
    fn seed_shaped_fixture_names_net_rx_and_adds_up() {
        let text = include_str!("fixtures/seed_2421us_cpu0.txt");
        let w = window_from_marker(text);
        assert_eq!(w.wake_ns - w.deadline_ns, 2421 * US);
        let a = classify_text(&w, text);
        print(&a);
        assert!(!a.partial);
        assert_eq!(a.latency_ns, 2421 * US);
        assert_eq!(a.total_ns(), 2421 * US);
        let net_rx = a.find(CauseKind::Softirq, "NET_RX").unwrap();
        let eth0 = a.find(CauseKind::Irq, "eth0").unwrap();
        assert_eq!((net_rx.count, eth0.count), (13, 13));
        assert_eq!(net_rx.ns + eth0.ns, 1202 * US);
        let audio = a.find(CauseKind::Irq, "snd_intel8x0").unwrap();
        assert_eq!((audio.count, audio.ns), (2, 119 * US));
        let timer = a.find(CauseKind::Vector, "local_timer").unwrap();
        assert_eq!((timer.count, timer.ns), (1, 23 * US));
        let rest = a.find(CauseKind::Untraced, UNTRACED_LABEL).unwrap();
        assert_eq!(rest.ns, 1077 * US);
        // After the task's own run, the network's softirq leads.
        let first_cause = a.causes.iter().find(|c| c.kind() != CauseKind::Untraced);
        assert_eq!(first_cause.unwrap().label(), "NET_RX");
    }

    #[test]
    fn real_netrx_flood_fixture() {
        // Recorded on the development VM: a loopback UDP flood and a
        // SCHED_FIFO 1 ms sleeper both pinned to CPU 0, instance with
        // trace_clock mono, spike marker written by the sleeper.
        let text = include_str!("fixtures/netrx_flood_cpu0.txt");
        let w = window_from_marker(text);
        let a = classify_text(&w, text);
        print(&a);
        assert!(!a.partial);
        assert_eq!(a.total_ns(), a.latency_ns);
        assert_eq!(a.latency_ns, 32_974);
        // deadline .843624477; NET_RX .628-.634 and .644-.646 (one
        // episode, interrupted by the timer), local timer .634-.644.
        let net = a.find(CauseKind::Softirq, "NET_RX").unwrap();
        assert_eq!((net.count, net.ns), (1, 8 * US));
        let lt = a.find(CauseKind::Vector, "local_timer").unwrap();
        assert_eq!((lt.count, lt.ns), (1, 10 * US));
        // Timer not yet expired: .624477-.628.
        let td = a
            .causes
            .iter()
            .find(|c| c.kind() == CauseKind::TimerDelay)
            .unwrap();
        assert_eq!(td.ns, 3_523);
        // The flooder kept the CPU .646-.650 after we were woken.
        let flood = a
            .causes
            .iter()
            .find(|c| c.kind() == CauseKind::Task)
            .unwrap();
        assert_eq!(
            (id(flood), flood.label(), flood.ns),
            (5558, "python3", 4 * US)
        );
        assert_eq!(prio(flood), 120);
        // Our own way out: .650-.657451.
        let rest = a.find(CauseKind::Untraced, UNTRACED_LABEL).unwrap();
        assert_eq!(rest.ns, 7_451);
    }

    #[test]
    fn real_preempt_off_fixture() {
        // A freshly exec'd grep kept CPU 0 for 89 us after our wake-up.
        let text = include_str!("fixtures/preempt_off_cpu0.txt");
        let w = window_from_marker(text);
        let a = classify_text(&w, text);
        print(&a);
        assert_eq!(a.total_ns(), a.latency_ns);
        let top = a.top().unwrap();
        assert_eq!(top.kind(), CauseKind::Task);
        assert_eq!((id(top), top.label(), top.ns), (3909, "grep", 89 * US));
        assert_eq!(top.count, 1);
        let lt = a.find(CauseKind::Vector, "local_timer").unwrap();
        assert_eq!(lt.ns, 7 * US);
    }

    #[test]
    fn real_storm_fixture_names_the_burster() {
        // A FIFO 95 burster (pid 21290) was switched in on CPU 0 before
        // the deadline and ran until it switched to our thread (21292),
        // which had no marker of its own (rate-limited).
        let text = include_str!("fixtures/storm_burster_cpu0.txt");
        let w = Window {
            cpu: 0,
            cycle: 128,
            deadline_ns: 4_926_256_336_160,
            wake_ns: 4_926_256_594_697,
            pid: 21292,
        };
        let a = classify_text(&w, text);
        print(&a);
        assert_eq!(a.total_ns(), a.latency_ns);
        assert!(!a.partial);
        let top = a.top().unwrap();
        assert_eq!(top.kind(), CauseKind::Task);
        assert_eq!((id(top), top.label(), prio(top)), (21290, "burster", 4));
        // from its timer's wake-up at .256344 to the switch at .256594,
        // less the rest of the local_timer vector (to .256349)
        assert_eq!(top.ns, 245 * US);
        // the timer interrupt came 5.84 us late, while the burster ran
        let late = a
            .causes
            .iter()
            .find(|c| c.kind() == CauseKind::TimerDelay)
            .unwrap();
        assert_eq!((id(late), late.ns), (21290, 5_840));
        assert_eq!(a.find(CauseKind::Vector, "local_timer").unwrap().ns, 7 * US);
        // Not knowing which thread is ours, the classifier cannot tell when
        // it became runnable: nothing is blamed, all is "untraced".
        let blind = classify_text(&Window { pid: 0, ..w }, text);
        assert_eq!(blind.top().unwrap().kind(), CauseKind::Untraced);
        assert!(blind.causes.iter().all(|c| c.kind() != CauseKind::Task));
    }

    #[test]
    fn real_idle_fixture() {
        // CPU 1 was idle at the deadline; the switch from idle is not in
        // this kernel's trace, the marker's header shows who ran next.
        let text = include_str!("fixtures/idle_wake_cpu1.txt");
        let w = window_from_marker(text);
        let a = classify_text(&w, text);
        print(&a);
        assert_eq!(a.total_ns(), a.latency_ns);
        let idle = a
            .causes
            .iter()
            .find(|c| c.kind() == CauseKind::IdleExit)
            .unwrap();
        // deadline .769308050 → timer at .769339, then .769346 → wake.
        assert_eq!(idle.ns, 30_950 + 19_170);
        assert!(a.find(CauseKind::Vector, "local_timer").is_some());
    }

    #[test]
    fn real_block_irq_fixture_window() {
        // A window chosen inside a real disk-I/O trace on CPU 1.
        let text = include_str!("fixtures/block_irq_cpu1.txt");
        let w = Window {
            cpu: 1,
            cycle: 0,
            deadline_ns: 290_394_650_000,
            wake_ns: 290_394_900_000,
            pid: 4341,
        };
        let a = classify_text(&w, text);
        print(&a);
        assert_eq!(a.total_ns(), 250 * US);
        let irq = a.find(CauseKind::Irq, "virtio1-req.0").unwrap();
        assert_eq!((id(irq), irq.count, irq.ns), (36, 2, 4 * US));
        let block = a.find(CauseKind::Softirq, "BLOCK").unwrap();
        assert_eq!((block.count, block.ns), (2, 8 * US + 10 * US));
        // Our dd (4341) was woken in the first BLOCK softirq; the kworker
        // ran before it.
        let kw = a.causes.iter().find(|c| id(c) == 33).unwrap();
        assert_eq!((kw.kind(), kw.ns), (CauseKind::Task, 10 * US));
    }

    #[test]
    fn irq_nested_in_softirq_counts_once() {
        let w = window(10 * MS, 10 * MS + 100 * US, 7);
        let lines = [
            " t-9 [000] ..s1. 0.009990: softirq_entry: vec=3 [action=NET_RX]",
            " t-9 [000] d.H1. 0.010020: irq_handler_entry: irq=19 name=eth0",
            " t-9 [000] d.H1. 0.010030: irq_handler_exit: irq=19 ret=handled",
            " t-9 [000] ..s1. 0.010050: softirq_exit: vec=3 [action=NET_RX]",
            " t-9 [000] d.h1. 0.010050: hrtimer_expire_entry: hrtimer=0 function=hrtimer_wakeup now=1",
            " t-9 [000] d.h1. 0.010051: sched_wakeup: comm=me pid=7 prio=19 target_cpu=000",
            " t-9 [000] d..2. 0.010060: sched_switch: prev_comm=t prev_pid=9 prev_prio=120 prev_state=R ==> next_comm=me next_pid=7 next_prio=19",
        ];
        let a = classify_lines(&w, &lines);
        assert_eq!(a.total_ns(), 100 * US);
        assert_eq!(a.find(CauseKind::Softirq, "NET_RX").unwrap().ns, 40 * US);
        assert_eq!(a.find(CauseKind::Irq, "eth0").unwrap().ns, 10 * US);
        let t = a
            .causes
            .iter()
            .find(|c| c.kind() == CauseKind::Task)
            .unwrap();
        assert_eq!((id(t), t.ns), (9, 9 * US));
        assert_eq!(
            a.find(CauseKind::Untraced, UNTRACED_LABEL).unwrap().ns,
            40 * US
        );
    }

    #[test]
    fn rt_irq_threads_count_as_irqs_and_orphans_are_kept() {
        let w = window(10 * MS, 10 * MS + 50 * US, 7);
        let lines = [
            " t-9 [000] d.h1. 0.010005: irq_handler_exit: irq=19 ret=handled",
            " t-9 [000] d.h1. 0.010006: sched_wakeup: comm=me pid=7 prio=59 target_cpu=000",
            " t-9 [000] d..2. 0.010010: sched_switch: prev_comm=t prev_pid=9 prev_prio=120 prev_state=R ==> next_comm=irq/19-eth0 next_pid=99 next_prio=49",
            " irq/19-eth0-99 [000] d..2. 0.010030: sched_switch: prev_comm=irq/19-eth0 prev_pid=99 prev_prio=49 prev_state=S ==> next_comm=me next_pid=7 next_prio=59",
        ];
        let a = classify_lines(&w, &lines);
        assert_eq!(a.total_ns(), 50 * US);
        // 5 us before the orphan exit (first event: untraced up to it, then
        // the orphan exit owns nothing since there is no gap).
        let irqs: u64 = a
            .causes
            .iter()
            .filter(|c| c.kind() == CauseKind::Irq && id(c) == 19)
            .map(|c| c.ns)
            .sum();
        assert_eq!(irqs, 20 * US);
        // The thread's line is named after it and carries its priority.
        let thread = a.find(CauseKind::Irq, "irq/19-eth0").unwrap();
        assert_eq!((prio(thread), thread.ns), (49, 20 * US));
    }

    #[test]
    fn an_irq_thread_met_by_its_events_is_settled_by_its_switch_out() {
        // The trace resumes while irq/13-uart-pl0 runs (no switch-in: its
        // priority is unknown). The measuring thread (prio 19) is woken and
        // preempts it at once: the thread's 30 us after the wake-up are not
        // the IRQ's; with the thread at 49 ranking below 19 they are the
        // switch path.
        let w = window(10 * MS, 10 * MS + 60 * US, 7);
        let below = [
            " irq/13-uart-pl0-95 [000] d..h1.. 0.009990: irq_handler_entry: irq=11 name=arch_timer",
            " irq/13-uart-pl0-95 [000] dn.h4.. 0.010010: sched_wakeup: comm=me pid=7 prio=19 target_cpu=000",
            " irq/13-uart-pl0-95 [000] dn.h1.. 0.010020: irq_handler_exit: irq=11 ret=handled",
            " irq/13-uart-pl0-95 [000] d...2.. 0.010050: sched_switch: prev_comm=irq/13-uart-pl0 prev_pid=95 prev_prio=49 prev_state=R+ ==> next_comm=me next_pid=7 next_prio=19",
        ];
        let a = classify_lines(&w, &below);
        assert_eq!(a.total_ns(), 60 * US);
        assert!(a.causes.iter().all(|c| id(c) != 13), "{:?}", a.causes);
        let rest = a.find(CauseKind::Untraced, UNTRACED_LABEL).unwrap();
        assert_eq!(rest.ns, 30 * US + 10 * US);
        // The same thread above the measuring thread (prio 59): its time
        // stays the IRQ's.
        let above = below.map(|l| {
            l.replace("prio=19", "prio=59")
                .replace("next_prio=19", "next_prio=59")
        });
        let lines: std::vec::Vec<&str> = above.iter().map(|l| l.as_str()).collect();
        let a = classify_lines(&w, &lines);
        assert_eq!(a.total_ns(), 60 * US);
        let irq = a.find(CauseKind::Irq, "irq/13-uart-pl0").unwrap();
        assert_eq!(irq.ns, 30 * US);
        // Its switch-out told the priority: the line shows it.
        assert_eq!(prio(irq), 49);
    }

    /// The window of `cycle` in a board fixture whose measuring thread is
    /// pid 108 on CPU 0.
    fn board_window(cycle: u64, deadline_ns: u64, wake_ns: u64) -> Window {
        Window {
            cpu: 0,
            cycle,
            deadline_ns,
            wake_ns,
            pid: 108,
        }
    }

    #[test]
    fn real_rt_board_irq_thread_above_the_measuring_thread() {
        // PREEMPT_RT board, console UART flooded, latscope at FIFO 40
        // (kernel priority 59) below the IRQ thread (49).
        let text = include_str!("fixtures/rt_uart_flood_p40_cpu0.txt");
        // Cycle 9: the timer fired 520 us late, then the IRQ thread took
        // the CPU from the woken thread twice.
        let a = classify_text(&board_window(9, 2_979_975_248, 2_984_649_040), text);
        print(&a);
        assert!(!a.partial);
        assert_eq!(a.total_ns(), a.latency_ns);
        let top = a.top().unwrap();
        assert_eq!(
            (top.kind(), id(top), top.label()),
            (CauseKind::Irq, 13, "irq/13-uart-pl0")
        );
        assert_eq!((prio(top), top.ns), (49, 3_507 * US));
        // Its hard handler (waking the thread) is a line of its own.
        let hard = a.find(CauseKind::Irq, "uart-pl011").unwrap();
        assert_eq!(
            (id(hard), hard.count, hard.ns, prio(hard)),
            (13, 4, 23 * US, PRIO_UNKNOWN)
        );
        let td = a.causes.iter().find(|c| c.kind() == CauseKind::TimerDelay);
        assert_eq!(td.unwrap().ns, 519_752);
        // The sender (SCHED_OTHER) was current between the wake-up and the
        // switch: the return path of the timer interrupt.
        let send = a
            .causes
            .iter()
            .find(|c| c.kind() == CauseKind::Task)
            .unwrap();
        assert_eq!(
            (id(send), send.label(), send.ns),
            (109, "latscope-send", 106 * US)
        );

        // Cycle 10 never slept: its deadline passed while the IRQ thread
        // kept preempting it (switched out `R`), so there is no wake-up in
        // the trace and the thread's time is still the IRQ's.
        let a = classify_text(&board_window(10, 2_985_975_248, 3_018_502_608), text);
        print(&a);
        assert!(!a.partial);
        assert_eq!(a.total_ns(), a.latency_ns);
        let top = a.top().unwrap();
        assert_eq!((top.kind(), id(top), prio(top)), (CauseKind::Irq, 13, 49));
        assert_eq!((top.count, top.ns), (32, 25_312 * US));
        assert!(a.causes.iter().all(|c| c.kind() != CauseKind::TimerDelay));
    }

    #[test]
    fn real_rt_board_irq_thread_below_the_measuring_thread() {
        // Same board and flood, latscope at FIFO 80 (kernel priority 19),
        // above the IRQ thread: the timer interrupt woke it while the IRQ
        // thread ran, and the thread stayed current 31 us more, on its way
        // off the CPU. That is not the IRQ delaying the measuring thread.
        let text = include_str!("fixtures/rt_uart_flood_p80_cpu0.txt");
        let a = classify_text(&board_window(4, 2_232_394_720, 2_233_624_944), text);
        print(&a);
        assert!(!a.partial);
        assert_eq!(a.total_ns(), a.latency_ns);
        assert!(
            a.causes
                .iter()
                .all(|c| id(c) != 13 && c.kind() != CauseKind::Task),
            "{:?}",
            a.causes
        );
        // Sleeping while the IRQ thread ran: the timer fired 1060 us late,
        // and the line names what ran on the CPU meanwhile (the task the
        // last switch before the deadline put there), not its IRQ.
        let td = a.causes.iter().find(|c| c.kind() == CauseKind::TimerDelay);
        let td = td.unwrap();
        assert_eq!(td.ns, 1_060_280);
        let Culprit::TimerDelay { running: Some(ran) } = &td.culprit else {
            panic!("{td:?}")
        };
        assert_eq!(
            (id(td), ran.comm.as_str(), prio(td)),
            (95, "irq/13-uart-pl0", 49)
        );
        assert_eq!(td.label(), "timer expiry delay");
        assert_eq!(a.find(CauseKind::Irq, "arch_timer").unwrap().ns, 103 * US);
        let rest = a.find(CauseKind::Untraced, UNTRACED_LABEL).unwrap();
        assert_eq!(rest.ns, 31 * US + 35_944);
    }

    #[test]
    fn lost_events_and_an_overwritten_start_are_trace_lost() {
        // The p80 board trace, cut so that it begins 30 us after the
        // deadline of cycle 4 (the ring buffer overwrote the rest), and
        // with the kernel's "[LOST n EVENTS]" line where the IRQ thread's
        // switch-in was.
        let text = include_str!("fixtures/rt_uart_flood_p80_cpu0.txt");
        let w = board_window(4, 2_232_394_720, 2_233_624_944);
        let mut cut = std::string::String::new();
        for l in text.lines() {
            match parse_line(l) {
                Some(e) if e.ts_ns < 2_232_424_720 => continue,
                _ => {}
            }
            if l.contains("2.233589: sched_switch") {
                cut += "CPU:0 [LOST 3 EVENTS]\n";
                continue;
            }
            cut += l;
            cut += "\n";
        }
        let a = classify_text(&w, &cut);
        print(&a);
        assert!(a.partial);
        assert_eq!(a.total_ns(), a.latency_ns);
        // From the deadline to the first event left, and from the event
        // before the lost ones to the next: the trace lost it.
        let first = cut.lines().find_map(parse_line).unwrap().ts_ns;
        let lost_from = 2_233_558_000; // the timer IRQ's exit
        let lost_to = 2_233_875_000; // next event after the lost ones
        assert_eq!(
            a.lost_ns(),
            (first - w.deadline_ns) + (w.wake_ns.min(lost_to) - lost_from)
        );
        // Text does not carry the count as the pages do.
        let lost = a
            .find(CauseKind::Untraced, "trace lost (count unknown)")
            .unwrap();
        assert_eq!(lost.culprit, Culprit::Untraced(Untraced::LostUnknown));
        // Nothing of it is called "untraced".
        assert!(a.find(CauseKind::Untraced, UNTRACED_LABEL).is_none());
        assert_eq!(a.paused_ns(), 0);
    }

    #[test]
    fn an_irq_thread_met_by_its_header_and_then_switched_in_is_one_line() {
        // The trace begins inside irq/13-uart-pl0 (no switch-in: priority
        // unknown), it is preempted by the hard IRQ and switched in again
        // with its priority, all above the measuring thread (59): one line,
        // with the priority, not one with and one without.
        let w = window(10 * MS, 10 * MS + 100 * US, 7);
        let lines = [
            " irq/13-uart-pl0-95 [000] d..2. 0.009990: sched_wakeup: comm=ksoftirqd/0 pid=14 prio=49 target_cpu=000",
            " irq/13-uart-pl0-95 [000] d..2. 0.010000: sched_wakeup: comm=me pid=7 prio=59 target_cpu=000",
            " irq/13-uart-pl0-95 [000] d..2. 0.010020: sched_switch: prev_comm=irq/13-uart-pl0 prev_pid=95 prev_prio=49 prev_state=R+ ==> next_comm=ksoftirqd/0 next_pid=14 next_prio=49",
            " ksoftirqd/0-14 [000] d..2. 0.010030: sched_switch: prev_comm=ksoftirqd/0 prev_pid=14 prev_prio=49 prev_state=S ==> next_comm=irq/13-uart-pl0 next_pid=95 next_prio=49",
            " irq/13-uart-pl0-95 [000] d..2. 0.010080: sched_switch: prev_comm=irq/13-uart-pl0 prev_pid=95 prev_prio=49 prev_state=S ==> next_comm=me next_pid=7 next_prio=59",
            " me-7 [000] ..... 0.010100: print: tracing_mark_write: latscope spike",
        ];
        let a = classify_lines(&w, &lines);
        assert_eq!(a.total_ns(), 100 * US);
        let lines13: std::vec::Vec<&Cause> = a
            .causes
            .iter()
            .filter(|c| c.kind() == CauseKind::Irq && id(c) == 13)
            .collect();
        assert_eq!(lines13.len(), 1, "{:?}", a.causes);
        assert_eq!(
            (lines13[0].label(), prio(lines13[0]), lines13[0].ns),
            ("irq/13-uart-pl0", 49, 70 * US)
        );
    }

    #[test]
    fn a_handler_met_by_its_exit_first_is_one_line_with_its_name() {
        // The trace begins inside the timer's handler (its exit has no
        // name); its next entry names it.
        let w = window(10 * MS, 10 * MS + 100 * US, 7);
        let lines = [
            " t-9 [000] d.h1. 0.009990: sched_wakeup: comm=k pid=5 prio=120 target_cpu=000",
            " t-9 [000] d.h1. 0.010010: irq_handler_exit: irq=11 ret=handled",
            " t-9 [000] d.h1. 0.010040: irq_handler_entry: irq=11 name=arch_timer",
            " t-9 [000] d.h1. 0.010050: irq_handler_exit: irq=11 ret=handled",
        ];
        let a = classify_lines(&w, &lines);
        let timer: std::vec::Vec<&Cause> = a
            .causes
            .iter()
            .filter(|c| c.kind() == CauseKind::Irq && id(c) == 11)
            .collect();
        assert_eq!(timer.len(), 1, "{:?}", a.causes);
        assert_eq!(
            (timer[0].label(), timer[0].count, timer[0].ns),
            ("arch_timer", 2, 20 * US)
        );
        assert_eq!(a.total_ns(), 100 * US);
    }

    #[test]
    fn empty_trace_is_all_untraced_and_partial() {
        let w = window(5, 105, 1);
        let a = classify(&w, core::iter::empty());
        assert!(a.partial);
        assert_eq!(a.total_ns(), 100);
        assert_eq!(a.causes.len(), 1);
        // Inverted window: nothing to explain.
        let w = Window {
            deadline_ns: 100,
            wake_ns: 5,
            ..w
        };
        assert_eq!(classify(&w, core::iter::empty()).total_ns(), 0);
    }

    #[test]
    fn many_irqs_merge_into_other_and_still_add_up() {
        let w = window(0, 1_000 * US, 7);
        let mut text = std::string::String::new();
        for i in 0..60u32 {
            let t = u64::from(i) * 10 + 1;
            text += &std::format!(
                " t-9 [000] d.h1. 0.{:06}: irq_handler_entry: irq={i} name=dev{i}\n",
                t
            );
            text += &std::format!(
                " t-9 [000] d.h1. 0.{:06}: irq_handler_exit: irq={i} ret=handled\n",
                t + 5
            );
        }
        let a = classify_text(&w, &text);
        print(&a);
        assert_eq!(a.causes.len(), super::super::MAX_CAUSES);
        assert_eq!(a.total_ns(), 1_000 * US);
        assert_eq!(a.causes.last().unwrap().kind(), CauseKind::Other);
        // The 59 gaps between the handlers nobody explains survived.
        let off = a.find(CauseKind::Untraced, UNTRACED_LABEL).unwrap();
        assert_eq!((off.count, off.ns), (59, 295 * US));
    }

    proptest! {

        #![proptest_config(crate::proptest_cases::config(256))]
        #[test]
        fn lines_always_add_up(
            deadline in 0u64..2_000_000,
            len in 0u64..2_000_000,
            evs in proptest::collection::vec((0u64..4_000_000, 0u8..12, 0u32..4), 0..80),
        ) {
            let w = Window { cpu: 0, cycle: 0, deadline_ns: deadline, wake_ns: deadline + len, pid: 3 };
            let mut sorted = evs;
            sorted.sort_by_key(|e| e.0);
            let mut c = Classifier::new(w);
            for (ts, k, id) in sorted {
                let kind = match k {
                    0 => EventKind::IrqEntry { irq: id, name: "x" },
                    1 => EventKind::IrqExit { irq: id },
                    2 => EventKind::SoftirqEntry { vec: id },
                    3 => EventKind::SoftirqExit { vec: id },
                    4 => EventKind::VectorEntry { name: "local_timer", vector: id },
                    5 => EventKind::VectorExit { name: "local_timer", vector: id },
                    6 => EventKind::Wakeup { task: super::super::TaskRef { comm: "me", pid: 3 }, prio: 19 },
                    7 => EventKind::Switch {
                        prev: super::super::TaskRef { comm: "a", pid: id },
                        prev_prio: 120,
                        prev_state: if id % 2 == 0 { "R" } else { "S" },
                        next: super::super::TaskRef { comm: "b", pid: id + 1 },
                        next_prio: 120,
                    },
                    8 => EventKind::Lost,
                    _ => EventKind::Other { name: "x" },
                };
                let e = Event { task: super::super::TaskRef { comm: "c", pid: id }, cpu: (k == 11) as u32, ts_ns: ts, kind };
                c.feed(&e);
            }
            let a = c.finish();
            prop_assert_eq!(a.total_ns(), len);
            prop_assert!(a.causes.len() <= super::super::MAX_CAUSES);
        }

        #[test]
        fn garbage_text_never_panics(s in "\\PC*", d in any::<u64>(), l in any::<u64>()) {
            let w = Window { cpu: 0, cycle: 0, deadline_ns: d, wake_ns: l, pid: 0 };
            let a = classify_text(&w, &s);
            prop_assert_eq!(a.total_ns(), l.saturating_sub(d));
        }
    }
}
