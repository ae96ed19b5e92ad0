//! The tracefs unit tests; the live one needs root and tracefs.

use std::sync::mpsc::{Receiver, Sender};
use std::thread::JoinHandle;

use latscope_core::explain::{
    classify_text, parse_line, Attribution, CauseKind, Window, UNTRACED_PAUSED,
};
use latscope_tests::{is_root, missing};

use super::marks::{find_mark, mono_ns, switched_in, Marks};
use super::tracer::{append_after, last_ts};
use super::*;
use crate::linux::interrupts::ProcInterrupts;

/// Serialises the tests that use tracefs (across test binaries too).
struct TraceLock(#[allow(dead_code)] OwnedFd);

fn trace_lock() -> TraceLock {
    let path = std::env::temp_dir().join("latscope-tracefs-test.lock");
    let fd = rustix::fs::open(
        &path,
        OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .expect("lock file");
    rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive).expect("flock");
    TraceLock(fd)
}

fn pin(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).unwrap();
}

#[test]
fn cpumask_format() {
    assert_eq!(cpumask(&[0]), "00000001");
    assert_eq!(cpumask(&[1, 3]), "0000000a");
    assert_eq!(cpumask(&[0, 33]), "00000002,00000001");
}

#[test]
fn mount_unescape() {
    assert_eq!(unescape_mount("/a\\040b"), "/a b");
    assert_eq!(unescape_mount("/a\\"), "/a\\");
    assert_eq!(unescape_mount("/a\\04"), "/a\\04");
}

#[test]
fn find_mark_matches_cpu_and_cycle() {
    let t = "  x-5 [000] ...1. 1.000010: tracing_mark_write: latscope spike cpu=0 cycle=7 lat=5\n\
             x-6 [000] ...1. 1.000020: tracing_mark_write: latscope spike cpu=0 cycle=8 lat=5\n";
    let m = find_mark(t, 0, 7, None);
    assert_eq!(m.ours, Some((1_000_010_000, 5)));
    assert_eq!(m.newest_cycle, Some(8));
    // the CPU's measuring thread, for a spike without a marker of its own
    assert_eq!(find_mark(t, 0, 9, None).writer, Some(6));
    assert_eq!(find_mark(t, 1, 8, None), Marks::default());
    // a thread's own marker only
    assert_eq!(find_mark(t, 0, 7, Some(6)).ours, None);
    assert_eq!(find_mark(t, 0, 8, Some(6)).ours, Some((1_000_020_000, 6)));
}

#[test]
fn an_unpinned_thread_is_found_where_it_was_switched_in() {
    let switch = |cpu: u32, ts: &str, pid: u32| {
        format!(
            " t-9 [{cpu:03}] d..2. {ts}: sched_switch: prev_comm=t prev_pid=9 prev_prio=120 \
             prev_state=R ==> next_comm=me next_pid={pid} next_prio=19\n"
        )
    };
    let texts = vec![
        (0, switch(0, "0.010060", 8)),
        (1, switch(1, "0.009000", 7) + &switch(1, "0.010050", 7)),
        (2, switch(2, "0.010040", 7)),
    ];
    // thread 7, due at 10.000 ms, woke at 10.055 ms: CPU 1 (the first
    // text with a switch-in inside the window)
    assert_eq!(switched_in(&texts, 7, 10_000_000, 10_055_000), Some(1));
    // before the window only, or another thread only: not found
    assert_eq!(switched_in(&texts[..1], 7, 10_000_000, 10_055_000), None);
    assert_eq!(switched_in(&texts, 7, 10_000_000, 10_030_000), None);
    assert_eq!(switched_in(&texts, 8, 10_000_000, 10_070_000), Some(0));
}

/// A real board trace (the PREEMPT_RT flood at `-p 80`) as a snapshot
/// swap splits it: the snapshot buffer holds everything up to the swap,
/// the live buffer begins with what an earlier swap left in it (here:
/// the oldest lines again) and goes on after the swap. Joined, they
/// explain the spike exactly as the unbroken trace does.
#[test]
fn a_window_across_a_snapshot_swap_is_explained_as_the_whole_trace() {
    let text = include_str!("../../../../core/src/explain/fixtures/rt_uart_flood_p80_cpu0.txt");
    let events: Vec<&str> = text.lines().filter(|l| parse_line(l).is_some()).collect();
    let w = Window {
        cpu: 0,
        cycle: 4,
        deadline_ns: 2_232_394_720,
        wake_ns: 2_233_624_944,
        pid: 108,
    };
    let whole = classify_text(&w, text);
    assert!(!whole.partial);
    // The swap in the middle of the window.
    let cut = events
        .iter()
        .position(|l| parse_line(l).unwrap().ts_ns > 2_233_500_000)
        .unwrap();
    let snapshot = events[..cut].join("\n");
    let stale = &events[..cut / 3];
    let live = [stale, &events[cut..]].concat().join("\n");
    let floor = last_ts(&snapshot).unwrap();
    assert!(floor > w.deadline_ns && floor < w.wake_ns);
    let mut joined = snapshot.clone();
    joined.push('\n');
    append_after(&mut joined, &live, floor);
    assert_eq!(classify_text(&w, &joined), whole);
    // Without the floor, the stale lines would come back in the middle.
    let mut naive = snapshot;
    naive.push('\n');
    append_after(&mut naive, &live, 0);
    assert_ne!(classify_text(&w, &naive), whole);
    // The live buffer alone has lost the window's start.
    let mut alone = String::new();
    append_after(&mut alone, &live, floor);
    let a = classify_text(&w, &alone);
    assert!(a.partial && a.lost_ns() > 0, "{a:?}");
}

/// Live: needs root and tracefs. One test, under a file lock, so it never
/// races another test that uses tracefs. A loopback UDP flood on the
/// measured CPU makes the spikes; a 1 ms sleeper on that CPU marks them
/// like the measuring thread; this thread explains them like the sender.
#[test]
fn live_instance_flood_and_cleanup() {
    // the preconditions first: the lock file is root's
    if !is_root() {
        return missing("trace instances need root");
    }
    let Some(root) = find_tracefs() else {
        return missing("tracefs is not mounted");
    };
    let _lock = trace_lock();
    // A stale instance of a dead process goes away on open.
    let stale = root.join("instances/latscope-2147483646");
    let _ = fs::create_dir(&stale);
    let cpu = 0usize;
    let mut tracer = Tracer::open_at(&root, &[cpu], 0).expect("open tracer");
    assert!(!stale.exists(), "stale instance removed");
    let dir = tracer.instance_dir().to_path_buf();
    assert_armed(&tracer, &dir);
    // The user's top-level settings are untouched.
    let top_clock = fs::read_to_string(root.join("trace_clock")).unwrap();
    let procs_before = ProcInterrupts::snapshot(&[cpu]).unwrap();

    let flood = latscope_tests::disturb::UdpFlood::on(&[cpu]);
    let (spikes_tx, spikes_rx) = std::sync::mpsc::channel();
    let mut marker = tracer.marker().expect("marker");
    marker.set_min_interval_ns(2_000_000);
    let sleeper = marking_sleeper(cpu, marker, spikes_tx);
    let mut explained: Vec<Attribution> = explain_all(&mut tracer, cpu, &spikes_rx);
    let (mut marker, last) = sleeper.join().unwrap();
    drop(flood);

    // A quiet machine may give no spike: explain the last sample then.
    if explained.is_empty() {
        let (cycle, due, wake) = last;
        marker.set_min_interval_ns(0);
        tracer.new_interval();
        assert_eq!(marker.mark(cpu, cycle, wake - due, wake), Some(true));
        explained.push(tracer.explain(cpu, None, due, wake, cycle));
    }
    check_explained(&explained);
    // A spike wholly inside a stretch without recording (the freeze for
    // the last one) is one "trace paused" line, partial: not "untraced",
    // which would say the trace was on and saw nothing.
    let (from, to) = tracer.last_blind().expect("a stretch without recording");
    let blind = tracer.explain(cpu, None, from, to, u64::MAX);
    assert!(blind.partial, "{blind:?}");
    assert_eq!(blind.causes.len(), 1, "{blind:?}");
    assert_eq!(blind.causes[0].kind, CauseKind::Untraced);
    assert_eq!(blind.causes[0].id, UNTRACED_PAUSED);
    assert_eq!(blind.causes[0].label(), "trace paused");
    assert_eq!(blind.paused_ns(), to - from);
    // A spike that began in it and ended after it: the paused part is
    // that line, the rest is explained by the trace.
    let later = mono_ns();
    let straddle = tracer.explain(cpu, None, to - (to - from) / 2, later, u64::MAX - 1);
    assert_eq!(straddle.total_ns(), straddle.latency_ns);
    assert!(straddle.paused_ns() >= (to - from) / 2, "{straddle:?}");
    assert!(straddle.paused_ns() < straddle.latency_ns, "{straddle:?}");
    // The trace is readable and the flood raised NET_RX on the CPU
    // (the /proc fallback sees it too, as a coarse attribution).
    let text = tracer.read_trace(cpu).unwrap();
    assert!(text.lines().filter_map(parse_line).count() > 0);
    // A marker swaps into the snapshot where the kernel has snapshots, and
    // freezes the instance where it has not.
    let dir_has_snapshot = tracer.instance_dir().join("snapshot").exists();
    assert_eq!(tracer.snapshots_on_mark(), dir_has_snapshot);
    assert_eq!(tracer.freezes_on_mark(), !dir_has_snapshot);
    let coarse = procs_before.delta(&ProcInterrupts::snapshot(&[cpu]).unwrap(), cpu, 0, 0, 0);
    assert!(coarse.coarse);
    let rx = coarse
        .find(CauseKind::Softirq, "NET_RX")
        .expect("NET_RX counted");
    eprintln!("coarse: NET_RX x{} on CPU{cpu}", rx.count);
    assert!(rx.count > 100);

    // Cleanup: the instance goes once the marker is closed.
    drop(marker);
    tracer.close().expect("close");
    assert!(!dir.exists(), "instance removed");
    assert_eq!(
        fs::read_to_string(root.join("trace_clock")).unwrap(),
        top_clock
    );
}

/// The instance as `open` arms it: mono clock, only the measured CPU, the
/// events the classifier reads.
fn assert_armed(tracer: &Tracer, dir: &Path) {
    assert!(dir.is_dir());
    assert!(tracer.clock_is_mono());
    assert!(fs::read_to_string(dir.join("trace_clock"))
        .unwrap()
        .contains("[mono]"));
    assert_eq!(
        fs::read_to_string(dir.join("tracing_cpumask"))
            .unwrap()
            .trim_start_matches('0')
            .trim(),
        "1"
    );
    for ev in [
        "irq:softirq_entry",
        "sched:sched_switch",
        "sched:sched_wakeup",
    ] {
        assert!(tracer.enabled_events().iter().any(|e| e == ev), "{ev}");
    }
}

/// A sample: (cycle, deadline, wake-up) in monotonic ns.
type Sample = (u64, u64, u64);

/// The measuring thread's part: a 1 ms sleeper at nice -20 on `cpu` for
/// 1.5 s that marks each sample above 30 µs (each worse than the marked
/// ones before it, as the marker allows) and hands it over. Returns the
/// marker and the last sample.
fn marking_sleeper(
    cpu: usize,
    mut marker: Marker,
    spikes: Sender<Sample>,
) -> JoinHandle<(Marker, Sample)> {
    std::thread::spawn(move || {
        pin(cpu);
        let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), -20);
        // No 50 us timer slack (SCHED_FIFO threads have none either).
        let _ = rustix::thread::set_current_timer_slack(core::num::NonZeroU64::new(1));
        let mut next = mono_ns() + 1_000_000;
        let end = next + 1_500_000_000;
        let mut cycle = 0u64;
        let mut last = (0, next, next);
        while next < end {
            let ts = crate::linux::clock::timespec(next as i64);
            let _ =
                rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &ts);
            let wake = mono_ns();
            let lat = wake.saturating_sub(next);
            last = (cycle, next, wake);
            // Written, or refused while the instance is frozen by an
            // earlier mark; rate-limited marks are not sent.
            if lat > 30_000 && marker.mark(cpu, cycle, lat, wake).is_some() {
                let _ = spikes.send(last);
            }
            cycle += 1;
            next += 1_000_000;
            if next < wake {
                next = wake + 1_000_000;
            }
        }
        (marker, last)
    })
}

/// The sender's part: explain up to 40 marked spikes, in order.
fn explain_all(tracer: &mut Tracer, cpu: usize, spikes: &Receiver<Sample>) -> Vec<Attribution> {
    spikes
        .iter()
        .take(40)
        .map(|(cycle, due, wake)| tracer.explain(cpu, None, due, wake, cycle))
        .collect()
}

/// The machinery: the window is right and the lines add up, whatever the
/// load on this machine did to the samples; and the first marked spike
/// froze the buffer with its window inside, unless it was longer than the
/// buffer holds.
fn check_explained(explained: &[Attribution]) {
    eprintln!("{} spikes explained", explained.len());
    let mut net_rx = 0u64;
    let mut whole = 0;
    for a in explained {
        assert_eq!(a.cpu, 0);
        assert!(!a.coarse);
        assert!(!a.causes.is_empty());
        assert_eq!(a.total_ns(), a.latency_ns, "{a:?}");
        whole += usize::from(!a.partial);
        net_rx += a.find(CauseKind::Softirq, "NET_RX").map_or(0, |c| c.ns);
        eprintln!(
            "spike {} ns cycle {} partial {}",
            a.latency_ns, a.cycle, a.partial
        );
        for c in &a.causes {
            eprintln!(
                "  {:?} {} {} x{} {} ns",
                c.kind,
                c.id,
                c.label(),
                c.count,
                c.ns
            );
        }
    }
    eprintln!("NET_RX inside spikes: {net_rx} ns; {whole} fully traced");
    assert!(
        explained
            .iter()
            .any(|a| !a.partial || a.latency_ns > 2_000_000),
        "no spike fully traced"
    );
}

#[test]
fn the_oldest_event_of_a_cpu_is_read_from_its_stats() {
    use super::tracer::oldest_event_ns;
    // per_cpu/cpu0/stats of the PREEMPT_RT board under the UART flood
    let stats = "entries: 1489\noverrun: 29134\ncommit overrun: 0\nbytes: 67660\n\
                 oldest event ts:     3.669057\nnow ts:     3.776698\ndropped events: 0\n";
    assert_eq!(oldest_event_ns(stats), Some(3_669_057_000));
    assert_eq!(
        oldest_event_ns("oldest event ts: 12.5\n"),
        Some(12_500_000_000)
    );
    assert_eq!(oldest_event_ns("entries: 0\n"), None);
    assert_eq!(oldest_event_ns("oldest event ts: 1.x\n"), None);
}
