//! Parser for the tracefs text format.
//!
//! A line of `trace` or `trace_pipe` looks like
//!
//! ```text
//!          python3-5558    [000] d.H1.   352.843634: local_timer_entry: vector=236
//! ```
//!
//! that is `<comm>-<pid>`, optionally `(<tgid>)`, `[cpu]`, optionally the
//! irq-info flags, the timestamp followed by `:`, the event name followed by
//! `:`, and the event's own fields. Comm may contain spaces and dashes. The
//! parser never allocates and never panics; lines it does not understand
//! (comments, stack traces, garbage) give `None`.

/// A task as a trace line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskRef<'a> {
    /// Command name (at most 15 bytes in the kernel, `<idle>` for pid 0,
    /// `<...>` when the kernel no longer knows it).
    pub comm: &'a str,
    /// Thread id.
    pub pid: u32,
}

/// One parsed trace line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The task that was current when the event was recorded.
    pub task: TaskRef<'a>,
    /// CPU that recorded the event.
    pub cpu: u32,
    /// Timestamp in nanoseconds of the instance's trace clock.
    pub ts_ns: u64,
    /// What happened.
    pub kind: EventKind<'a>,
}

/// The events the classifier understands; everything else is
/// [`EventKind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind<'a> {
    /// `irq:irq_handler_entry`.
    IrqEntry {
        /// IRQ number.
        irq: u32,
        /// Action name (`eth0`, `virtio1-req.0`, ...).
        name: &'a str,
    },
    /// `irq:irq_handler_exit`.
    IrqExit {
        /// IRQ number.
        irq: u32,
    },
    /// `irq:softirq_entry`.
    SoftirqEntry {
        /// Softirq vector (3 is `NET_RX`).
        vec: u32,
    },
    /// `irq:softirq_exit`.
    SoftirqExit {
        /// Softirq vector.
        vec: u32,
    },
    /// `irq_vectors:<name>_entry` (`local_timer`, `reschedule`,
    /// `call_function`, `call_function_single`, `irq_work`, ...).
    VectorEntry {
        /// Vector name without the `_entry` suffix.
        name: &'a str,
        /// Vector number.
        vector: u32,
    },
    /// `irq_vectors:<name>_exit`.
    VectorExit {
        /// Vector name without the `_exit` suffix.
        name: &'a str,
        /// Vector number.
        vector: u32,
    },
    /// `timer:hrtimer_expire_entry`.
    HrtimerExpire {
        /// Callback, e.g. `hrtimer_wakeup` for a sleeping task.
        function: &'a str,
    },
    /// `power:cpu_idle`; `state` is `u32::MAX` (printed 4294967295) on exit.
    CpuIdle {
        /// Idle state entered, or `u32::MAX` on exit from idle.
        state: u32,
    },
    /// `sched:sched_switch`.
    Switch {
        /// Task leaving the CPU.
        prev: TaskRef<'a>,
        /// Its kernel priority.
        prev_prio: i32,
        /// Its state as the kernel prints it: `R` or `R+` if it was
        /// preempted (still runnable), `S`, `D`, `I`, ... if it blocked;
        /// empty if the line lacks the field.
        prev_state: &'a str,
        /// Task entering the CPU.
        next: TaskRef<'a>,
        /// Its kernel priority.
        next_prio: i32,
    },
    /// `sched:sched_wakeup`.
    Wakeup {
        /// Task woken.
        task: TaskRef<'a>,
        /// Its kernel priority.
        prio: i32,
    },
    /// `ftrace:print` (`tracing_mark_write:`), a `trace_marker` write.
    Marker {
        /// The text written.
        text: &'a str,
    },
    /// A `[LOST n EVENTS]` line: the buffer overflowed here.
    Lost,
    /// Any other event.
    Other {
        /// Event name.
        name: &'a str,
    },
}

/// Parses a trace timestamp (`352.843634`, `352.843634123` or a bare
/// integer for counter clocks) to nanoseconds.
///
/// Seconds and up to nine fractional digits are kept; further digits are
/// ignored. Returns `None` on anything else or on overflow.
pub(crate) fn parse_timestamp(s: &str) -> Option<u64> {
    let (secs, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let secs = parse_u64(secs)?;
    let Some(frac) = frac else {
        return Some(secs);
    };
    if frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns: u64 = 0;
    let mut digits = 0u32;
    for b in frac.bytes().take(9) {
        ns = ns * 10 + u64::from(b - b'0');
        digits += 1;
    }
    while digits < 9 {
        ns *= 10;
        digits += 1;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

fn parse_u64(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_u32(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_i32(s: &str) -> Option<i32> {
    s.parse().ok()
}

/// Parses one line of tracefs text. Returns `None` for comments, blank
/// lines, stack-trace lines and anything it cannot read.
///
/// ```
/// use latscope_core::explain::{parse_line, EventKind};
/// let e = parse_line(
///     "  python3-5558  [000] ..s1.  352.843628: softirq_entry: vec=3 [action=NET_RX]",
/// )
/// .unwrap();
/// assert_eq!(e.ts_ns, 352_843_628_000);
/// assert_eq!(e.kind, EventKind::SoftirqEntry { vec: 3 });
/// ```
pub fn parse_line(line: &str) -> Option<Event<'_>> {
    let line = line.trim_end_matches(['\n', '\r']);
    let trimmed = line.trim_start();
    if trimmed.is_empty() || trimmed.starts_with('#') {
        return None;
    }
    if trimmed.contains("[LOST") && trimmed.contains("EVENTS]") {
        let cpu = trimmed
            .strip_prefix("CPU:")
            .and_then(|r| r.split(' ').next())
            .and_then(parse_u32)
            .unwrap_or(0);
        return Some(Event {
            task: TaskRef { comm: "", pid: 0 },
            cpu,
            ts_ns: 0,
            kind: EventKind::Lost,
        });
    }
    let (task, cpu, rest) = split_header(trimmed)?;
    // After `[cpu]`: optional flags, then `<timestamp>:`.
    let mut rest = rest.trim_start();
    let mut ts_ns = None;
    for _ in 0..2 {
        let (tok, after) = match rest.find(' ') {
            Some(i) => (rest.get(..i)?, rest.get(i..)?),
            None => (rest, ""),
        };
        if let Some(t) = tok.strip_suffix(':') {
            if let Some(ts) = parse_timestamp(t) {
                ts_ns = Some(ts);
                rest = after.trim_start();
                break;
            }
        }
        rest = after.trim_start();
    }
    let ts_ns = ts_ns?;
    let (name, fields) = match rest.split_once(':') {
        Some((n, f)) => (n, f.strip_prefix(' ').unwrap_or(f)),
        None => (rest, ""),
    };
    if name.is_empty() || name.contains(' ') {
        return None;
    }
    let kind = parse_kind(name, fields)?;
    Some(Event {
        task,
        cpu,
        ts_ns,
        kind,
    })
}

/// Splits `comm-pid [cpu] rest` (with an optional `(tgid)` column).
fn split_header(s: &str) -> Option<(TaskRef<'_>, u32, &str)> {
    // Find a `[digits]` preceded by whitespace whose prefix ends in -pid.
    let bytes = s.as_bytes();
    let mut from = 0;
    while let Some(off) = s.get(from..)?.find('[') {
        let open = from + off;
        from = open + 1;
        let Some(close_off) = s.get(open + 1..)?.find(']') else {
            break;
        };
        let close = open + 1 + close_off;
        let Some(cpu) = s.get(open + 1..close).and_then(parse_u32) else {
            continue;
        };
        if open == 0 || !bytes.get(open - 1).is_some_and(u8::is_ascii_whitespace) {
            continue;
        }
        let mut head = s.get(..open)?.trim_end();
        // Optional `(tgid)` or `(-------)` column from the record-tgid option.
        if head.ends_with(')') {
            if let Some(p) = head.rfind('(') {
                head = head.get(..p)?.trim_end();
            }
        }
        let Some(dash) = head.rfind('-') else {
            continue;
        };
        let Some(pid) = head.get(dash + 1..).and_then(parse_u32) else {
            continue;
        };
        let comm = head.get(..dash)?.trim_start();
        let rest = s.get(close + 1..)?;
        return Some((TaskRef { comm, pid }, cpu, rest));
    }
    None
}

/// Value of `key=` in a space-separated field list: up to the next space,
/// or up to ` <until>=` if `until` is given (for comms with spaces).
fn field<'a>(fields: &'a str, key: &str, until: Option<&str>) -> Option<&'a str> {
    let mut search = fields;
    let mut base = 0usize;
    let start = loop {
        let i = search.find(key)?;
        let at = base + i;
        let after = at + key.len();
        let boundary_ok = at == 0
            || fields
                .as_bytes()
                .get(at - 1)
                .is_some_and(u8::is_ascii_whitespace);
        if boundary_ok && fields.as_bytes().get(after) == Some(&b'=') {
            break after + 1;
        }
        base = at + 1;
        search = fields.get(base..)?;
    };
    let tail = fields.get(start..)?;
    if let Some(next) = until {
        let mut probe = tail;
        let mut off = 0usize;
        while let Some(i) = probe.find(next) {
            let at = off + i;
            if at > 0
                && tail.as_bytes().get(at - 1) == Some(&b' ')
                && tail.as_bytes().get(at + next.len()) == Some(&b'=')
            {
                return tail.get(..at - 1);
            }
            off = at + 1;
            probe = tail.get(off..)?;
        }
        return Some(tail);
    }
    Some(tail.split(' ').next().unwrap_or(tail))
}

fn parse_kind<'a>(name: &'a str, f: &'a str) -> Option<EventKind<'a>> {
    Some(match name {
        "irq_handler_entry" => EventKind::IrqEntry {
            irq: field(f, "irq", None).and_then(parse_u32)?,
            name: field(f, "name", Some("\u{0}")).unwrap_or(""),
        },
        "irq_handler_exit" => EventKind::IrqExit {
            irq: field(f, "irq", None).and_then(parse_u32)?,
        },
        "softirq_entry" => EventKind::SoftirqEntry {
            vec: field(f, "vec", None).and_then(parse_u32)?,
        },
        "softirq_exit" => EventKind::SoftirqExit {
            vec: field(f, "vec", None).and_then(parse_u32)?,
        },
        "hrtimer_expire_entry" => EventKind::HrtimerExpire {
            function: field(f, "function", None).unwrap_or(""),
        },
        "cpu_idle" => EventKind::CpuIdle {
            state: field(f, "state", None)
                .and_then(|s| s.parse::<u64>().ok())
                .map(|s| u32::try_from(s).unwrap_or(u32::MAX))?,
        },
        "sched_switch" => {
            let prev = TaskRef {
                comm: field(f, "prev_comm", Some("prev_pid"))?,
                pid: field(f, "prev_pid", None).and_then(parse_u32)?,
            };
            let (_, right) = f.split_once("==>")?;
            let next = TaskRef {
                comm: field(right, "next_comm", Some("next_pid"))?,
                pid: field(right, "next_pid", None).and_then(parse_u32)?,
            };
            EventKind::Switch {
                prev,
                prev_prio: field(f, "prev_prio", None)
                    .and_then(parse_i32)
                    .unwrap_or(crate::explain::PRIO_UNKNOWN),
                prev_state: field(f, "prev_state", None).unwrap_or(""),
                next,
                next_prio: field(right, "next_prio", None)
                    .and_then(parse_i32)
                    .unwrap_or(crate::explain::PRIO_UNKNOWN),
            }
        }
        "sched_wakeup" => EventKind::Wakeup {
            task: TaskRef {
                comm: field(f, "comm", Some("pid"))?,
                pid: field(f, "pid", None).and_then(parse_u32)?,
            },
            prio: field(f, "prio", None)
                .and_then(parse_i32)
                .unwrap_or(crate::explain::PRIO_UNKNOWN),
        },
        "tracing_mark_write" | "print" => EventKind::Marker { text: f },
        _ => {
            if let Some(v) = name.strip_suffix("_entry") {
                if let Some(vector) = field(f, "vector", None).and_then(parse_u32) {
                    return Some(EventKind::VectorEntry { name: v, vector });
                }
            } else if let Some(v) = name.strip_suffix("_exit") {
                if let Some(vector) = field(f, "vector", None).and_then(parse_u32) {
                    return Some(EventKind::VectorExit { name: v, vector });
                }
            }
            EventKind::Other { name }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("352.843634"), Some(352_843_634_000));
        assert_eq!(parse_timestamp("1.000000001"), Some(1_000_000_001));
        assert_eq!(parse_timestamp("1.0000000019"), Some(1_000_000_001));
        assert_eq!(parse_timestamp("42"), Some(42));
        assert_eq!(parse_timestamp("1."), None);
        assert_eq!(parse_timestamp(".5"), None);
        assert_eq!(parse_timestamp("-1.5"), None);
        assert_eq!(parse_timestamp("99999999999999999999.1"), None);
        assert_eq!(parse_timestamp("18446744073.709551616"), None);
    }

    #[test]
    fn irq_lines() {
        let e = parse_line(
            "            dpkg-4308    [001] dNh1.   290.394665: irq_handler_entry: irq=36 name=virtio1-req.0",
        )
        .unwrap();
        assert_eq!(
            e.task,
            TaskRef {
                comm: "dpkg",
                pid: 4308
            }
        );
        assert_eq!(e.cpu, 1);
        assert_eq!(e.ts_ns, 290_394_665_000);
        assert_eq!(
            e.kind,
            EventKind::IrqEntry {
                irq: 36,
                name: "virtio1-req.0"
            }
        );
        let e = parse_line(
            "            dpkg-4308    [001] dNh1.   290.394667: irq_handler_exit: irq=36 ret=handled",
        )
        .unwrap();
        assert_eq!(e.kind, EventKind::IrqExit { irq: 36 });
    }

    #[test]
    fn vectors_and_timers() {
        let e = parse_line(
            "   python3-5558    [000] d.H1.   352.843634: local_timer_entry: vector=236",
        )
        .unwrap();
        assert_eq!(
            e.kind,
            EventKind::VectorEntry {
                name: "local_timer",
                vector: 236
            }
        );
        let e = parse_line(
            "  <idle>-0  [001] d.h1.  290.768421: call_function_single_exit: vector=251",
        )
        .unwrap();
        assert_eq!(
            e.task,
            TaskRef {
                comm: "<idle>",
                pid: 0
            }
        );
        assert_eq!(
            e.kind,
            EventKind::VectorExit {
                name: "call_function_single",
                vector: 251
            }
        );
        let e = parse_line("  <idle>-0 [001] d.h1. 290.769340: hrtimer_expire_entry: hrtimer=00000000d582fbcf function=hrtimer_wakeup now=290769339031").unwrap();
        assert_eq!(
            e.kind,
            EventKind::HrtimerExpire {
                function: "hrtimer_wakeup"
            }
        );
        let e = parse_line("  <idle>-0 [001] d..1. 1.000001: cpu_idle: state=4294967295 cpu_id=1")
            .unwrap();
        assert_eq!(e.kind, EventKind::CpuIdle { state: u32::MAX });
    }

    #[test]
    fn sched_lines_with_spaces_in_comm() {
        let e = parse_line(
            "  Web Content-77 [002] d..2. 5.000010: sched_switch: prev_comm=Web Content prev_pid=77 prev_prio=120 prev_state=R+ ==> next_comm=irq/36-virtio1 next_pid=90 next_prio=49",
        )
        .unwrap();
        assert_eq!(e.task.comm, "Web Content");
        assert_eq!(
            e.kind,
            EventKind::Switch {
                prev: TaskRef {
                    comm: "Web Content",
                    pid: 77
                },
                prev_prio: 120,
                prev_state: "R+",
                next: TaskRef {
                    comm: "irq/36-virtio1",
                    pid: 90
                },
                next_prio: 49,
            }
        );
        let e = parse_line(
            "  x-1 [000] dNh4. 1.5: sched_wakeup: comm=my thread pid=3861 prio=19 target_cpu=000",
        )
        .unwrap();
        assert_eq!(
            e.kind,
            EventKind::Wakeup {
                task: TaskRef {
                    comm: "my thread",
                    pid: 3861
                },
                prio: 19
            }
        );
    }

    #[test]
    fn tgid_column_and_no_flags() {
        let e = parse_line(
            "   bash-1977  (  1977) [000] ....  17284.993652: softirq_exit: vec=3 [action=NET_RX]",
        )
        .unwrap();
        assert_eq!(
            e.task,
            TaskRef {
                comm: "bash",
                pid: 1977
            }
        );
        assert_eq!(e.kind, EventKind::SoftirqExit { vec: 3 });
        let e =
            parse_line("   a-b-c-12 [003] 1.000000: softirq_entry: vec=1 [action=TIMER]").unwrap();
        assert_eq!(
            e.task,
            TaskRef {
                comm: "a-b-c",
                pid: 12
            }
        );
        assert_eq!(e.cpu, 3);
    }

    #[test]
    fn markers_lost_and_junk() {
        let e = parse_line("  python3-5600 [000] ...1. 352.843680: tracing_mark_write: latscope spike cpu=0 cycle=0")
            .unwrap();
        assert_eq!(
            e.kind,
            EventKind::Marker {
                text: "latscope spike cpu=0 cycle=0"
            }
        );
        assert_eq!(
            parse_line("CPU:1 [LOST 123 EVENTS]").map(|e| (e.kind, e.cpu)),
            Some((EventKind::Lost, 1))
        );
        assert!(parse_line("# tracer: nop").is_none());
        assert!(parse_line("").is_none());
        assert!(parse_line(" => __schedule").is_none());
        assert!(parse_line("[000]").is_none());
        assert!(parse_line("x-1 [000] garbage").is_none());
        assert!(parse_line("-1 [0] 1.0: irq_handler_exit: irq=").is_none());
    }

    #[test]
    fn all_real_fixture_lines_parse() {
        for text in [
            include_str!("fixtures/netrx_flood_cpu0.txt"),
            include_str!("fixtures/preempt_off_cpu0.txt"),
            include_str!("fixtures/block_irq_cpu1.txt"),
            include_str!("fixtures/idle_wake_cpu1.txt"),
            // PREEMPT_RT: seven flag columns (`d..h1..`, `Dn.h313`).
            include_str!("fixtures/rt_uart_flood_p40_cpu0.txt"),
            include_str!("fixtures/rt_uart_flood_p80_cpu0.txt"),
        ] {
            for line in text.lines() {
                if line.starts_with('#') {
                    continue;
                }
                let e = parse_line(line);
                assert!(e.is_some(), "unparsed: {line}");
                assert!(
                    !matches!(e.unwrap().kind, EventKind::Other { .. }),
                    "{line}"
                );
            }
        }
    }

    proptest! {

        #![proptest_config(crate::proptest_cases::config(256))]
        #[test]
        fn never_panics_on_garbage(s in "\\PC*") {
            let _ = parse_line(&s);
        }

        #[test]
        fn never_panics_on_near_lines(
            comm in "[ -~]{0,20}",
            pid in any::<u64>(),
            cpu in "[0-9\\]\\[]{0,5}",
            ts in "[0-9.:]{0,25}",
            ev in "(irq_handler_entry|irq_handler_exit|softirq_entry|softirq_exit|sched_switch|sched_wakeup|local_timer_entry|cpu_idle|tracing_mark_write|x)",
            fields in "[ -~]{0,60}",
        ) {
            let line = std::format!("{comm}-{pid} [{cpu}] d.h1. {ts}: {ev}: {fields}");
            let _ = parse_line(&line);
        }

        #[test]
        fn truncated_real_lines_never_panic(cut in 0usize..200) {
            let text = include_str!("fixtures/netrx_flood_cpu0.txt");
            for line in text.lines() {
                let mut end = cut.min(line.len());
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                let _ = parse_line(&line[..end]);
            }
        }
    }
}
