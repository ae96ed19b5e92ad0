//! The expiry-to-switch windows of a traced run (`bench/max-latency
//! trace`): from tracefs' text of `sched_switch`, `hrtimer_start`,
//! `hrtimer_expire_entry`, `irq_handler_entry` and `softirq_entry`, each
//! wake-up of a measuring thread (a `hrtimer_wakeup` timer expiring, then
//! the switch to a task of priority 19, SCHED_FIFO 80) with what ran on
//! its CPU in between, and how late each wake-up timer was handled.

use std::collections::HashMap;

use crate::stats::median;

/// One window: a wake-up timer expired on `cpu`, and `us` later the CPU
/// switched to the measuring thread.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The CPU.
    pub cpu: u32,
    /// Expiry handled to the switch, µs.
    pub us: f64,
    /// The task switched out.
    pub switched_out: String,
    /// The IRQs, softirqs and other switches on the CPU in between.
    pub between: Vec<String>,
}

/// Every window of one trace, and the latest wake-up timer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Windows {
    /// The windows, in trace order.
    pub windows: Vec<Window>,
    /// The largest lateness of a wake-up timer (expiry handled minus
    /// expiry due), µs, and its CPU.
    pub latest_timer: Option<(f64, u32)>,
}

/// The value of `key=` in `line` (up to the next space), where `key` starts
/// the line or follows a space.
fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = line[from..].find(key) {
        let start = from + at;
        let after = &line[start + key.len()..];
        if (start == 0 || line.as_bytes()[start - 1] == b' ') && after.starts_with('=') {
            return after[1..].split(' ').next();
        }
        from = start + key.len();
    }
    None
}

/// The CPU (`[NNN]`), the time (µs) and the event name of a trace line.
fn head(line: &str) -> Option<(u32, f64, &str)> {
    let open = line.find('[')?;
    let close = open + line[open..].find(']')?;
    let cpu = line[open + 1..close].parse().ok()?;
    let mut words = line[close + 1..].split_whitespace();
    let ts = words.find_map(|w| {
        let t = w.strip_suffix(':')?;
        let (s, frac) = t.split_once('.')?;
        let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
        (digits(s) && digits(frac)).then(|| t.parse::<f64>().ok())?
    })?;
    let event = words.next()?.strip_suffix(':')?;
    Some((cpu, ts * 1e6, event))
}

/// What an IRQ, softirq or switch line says, after its event name, with a
/// switch shortened to `prev_comm=A ... -> next_comm=B`.
fn what(line: &str, event: &str) -> String {
    let marker = format!("{event}: ");
    let t = line
        .find(&marker)
        .map_or(line, |at| &line[at + marker.len()..]);
    match (t.find(" prev_pid"), t.find("==> ")) {
        (Some(a), Some(b)) if a < b => {
            let next = &t[b + 4..];
            let next = next.find(" next_pid").map_or(next, |e| &next[..e]);
            format!("{} -> {next}", &t[..a])
        }
        _ => t.to_string(),
    }
}

impl Windows {
    /// The windows of a trace's text.
    pub fn parse(text: &str) -> Windows {
        let mut expires: HashMap<String, f64> = HashMap::new();
        let mut open: HashMap<u32, (f64, Vec<String>)> = HashMap::new();
        let mut w = Windows::default();
        for line in text.lines() {
            let Some((cpu, ts, event)) = head(line) else {
                continue;
            };
            let wakeup = line.contains("function=hrtimer_wakeup");
            match event {
                "hrtimer_start" if wakeup => {
                    if let (Some(h), Some(e)) = (field(line, "hrtimer"), field(line, "expires")) {
                        if let Ok(e) = e.parse() {
                            expires.insert(h.to_string(), e);
                        }
                    }
                }
                "hrtimer_expire_entry" if wakeup => {
                    open.insert(cpu, (ts, Vec::new()));
                    let due = field(line, "hrtimer").and_then(|h| expires.get(h));
                    let now = field(line, "now").and_then(|n| n.parse::<f64>().ok());
                    if let (Some(due), Some(now)) = (due, now) {
                        let late = (now - due) / 1000.0;
                        if w.latest_timer.is_none_or(|(l, _)| late > l) {
                            w.latest_timer = Some((late, cpu));
                        }
                    }
                }
                "sched_switch" if line.contains(" next_prio=19") => {
                    if let Some((at, between)) = open.remove(&cpu) {
                        w.windows.push(Window {
                            cpu,
                            us: ts - at,
                            switched_out: field(line, "prev_comm").unwrap_or("").to_string(),
                            between,
                        });
                    }
                }
                "irq_handler_entry" | "softirq_entry" | "sched_switch" => {
                    if let Some((_, between)) = open.get_mut(&cpu) {
                        between.push(what(line, event));
                    }
                }
                _ => {}
            }
        }
        w
    }

    /// The median window, µs.
    pub fn median_us(&self) -> Option<f64> {
        median(&self.windows.iter().map(|w| w.us).collect::<Vec<_>>())
    }

    /// The `n` longest windows, longest first (the earlier of two equal
    /// ones first).
    pub fn longest(&self, n: usize) -> Vec<&Window> {
        let mut v: Vec<&Window> = self.windows.iter().collect();
        v.sort_by(|a, b| b.us.total_cmp(&a.us));
        v.truncate(n);
        v
    }

    /// `bench/max-latency`'s lines for program `prog` whose histogram's
    /// maximum was `max_us`.
    pub fn report(&self, prog: &str, max_us: Option<f64>) -> String {
        let num = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.1}"));
        let (late, cpu) = self
            .latest_timer
            .map_or(("-".into(), "-".into()), |(l, c)| {
                (format!("{l:.1}"), c.to_string())
            });
        let mut s = format!(
            "- {prog}: {} wake-ups; max latency (its histogram) {} us; largest lateness of a wake-up timer (expiry handled minus expiry due) {late} us on CPU {cpu}; median expiry-to-switch window {} us; longest five:\n",
            self.windows.len(),
            max_us.map_or("-".into(), |m| format!("{m}")),
            num(self.median_us())
        );
        for w in self.longest(5) {
            let between = if w.between.is_empty() {
                "nothing".into()
            } else {
                w.between.join("; ")
            };
            s += &format!(
                "  - CPU {}, {:.1} us, switched out: {}; between: {between}\n",
                w.cpu, w.us, w.switched_out
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two wake-ups on CPU 1 (one with an IRQ and a switch of another task
    /// in its window), one on CPU 0, lines of other CPUs between.
    const TRACE: &str = "\
# tracer: nop
            rustc-100  [001] d.h1.  10.000000: hrtimer_start: hrtimer=00000000aa function=hrtimer_wakeup expires=9999000000 softexpires=9999000000 mode=ABS
            rustc-100  [001] d.h1.  10.000100: hrtimer_expire_entry: hrtimer=00000000aa function=hrtimer_wakeup now=10000100000
            rustc-100  [001] d.h1.  10.000105: irq_handler_entry: irq=36 name=virtio1-req.0
            rustc-100  [001] d..2.  10.000110: sched_switch: prev_comm=rustc prev_pid=100 prev_prio=120 prev_state=R ==> next_comm=kworker/1:1 next_pid=7 next_prio=120
        kworker/1-7    [001] d..2.  10.000150: sched_switch: prev_comm=kworker/1:1 prev_pid=7 prev_prio=120 prev_state=S ==> next_comm=latscope next_pid=200 next_prio=19
           <idle>-0    [000] d.h1.  10.000200: hrtimer_expire_entry: hrtimer=00000000bb function=hrtimer_wakeup now=10000200000
           <idle>-0    [000] d..2.  10.000208: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=latscope next_pid=201 next_prio=19
            rustc-100  [001] d.h1.  10.000300: hrtimer_expire_entry: hrtimer=00000000cc function=tick_sched_timer now=10000300000
            rustc-100  [001] d.h1.  10.000400: hrtimer_expire_entry: hrtimer=00000000aa function=hrtimer_wakeup now=10000400000
            rustc-100  [001] d..2.  10.000420: sched_switch: prev_comm=rustc prev_pid=100 prev_prio=120 prev_state=R ==> next_comm=latscope next_pid=200 next_prio=19
";

    #[test]
    fn windows_what_ran_between_and_the_latest_timer() {
        let w = Windows::parse(TRACE);
        assert_eq!(w.windows.len(), 3);
        let first = &w.windows[0];
        assert_eq!((first.cpu, first.switched_out.as_str()), (1, "kworker/1:1"));
        assert!((first.us - 50.0).abs() < 1e-6, "{first:?}");
        assert_eq!(
            first.between,
            vec![
                "irq=36 name=virtio1-req.0".to_string(),
                "prev_comm=rustc -> next_comm=kworker/1:1".to_string()
            ]
        );
        // the timer due at 9999 s was handled 1100 µs late, and its second
        // expiry (the expires= of its last start) 1400 µs late
        let (late, cpu) = w.latest_timer.unwrap();
        assert_eq!(cpu, 1);
        assert!((late - 1400.0).abs() < 1e-6, "{late}");
        // windows 50, 8 and 20 µs
        assert!((w.median_us().unwrap() - 20.0).abs() < 1e-6);
        let longest: Vec<f64> = w.longest(5).iter().map(|w| w.us.round()).collect();
        assert_eq!(longest, vec![50.0, 20.0, 8.0]);
    }

    #[test]
    fn the_report_names_the_longest_windows() {
        let r = Windows::parse(TRACE).report("latscope", Some(1479.0));
        assert!(
            r.starts_with("- latscope: 3 wake-ups; max latency (its histogram) 1479 us;"),
            "{r}"
        );
        assert!(r.contains("median expiry-to-switch window 20.0 us"), "{r}");
        assert!(
            r.contains("  - CPU 1, 50.0 us, switched out: kworker/1:1; between: irq=36 name=virtio1-req.0; prev_comm=rustc -> next_comm=kworker/1:1\n"),
            "{r}"
        );
        assert!(
            r.contains("  - CPU 0, 8.0 us, switched out: swapper/0; between: nothing\n"),
            "{r}"
        );
    }

    #[test]
    fn a_trace_without_wakeups_reports_dashes() {
        let r = Windows::parse("# tracer: nop\n").report("cyclictest", None);
        assert!(r.contains("0 wake-ups; max latency (its histogram) - us; largest lateness of a wake-up timer (expiry handled minus expiry due) - us on CPU -; median expiry-to-switch window - us"), "{r}");
    }

    #[test]
    fn fields_need_their_whole_key() {
        let l = "x softexpires=1 expires=2 hrtimer=h";
        assert_eq!(field(l, "expires"), Some("2"));
        assert_eq!(field(l, "hrtimer"), Some("h"));
        assert_eq!(field(l, "timer"), None);
    }
}
