//! The tracefs unit tests; the live one needs root and tracefs.

use std::sync::mpsc::Sender;
use std::thread::JoinHandle;

use latscope_core::cyclictest::Wakeups;
use latscope_core::explain::{Attribution, CauseKind, Culprit, Untraced};
use latscope_core::ringbuf::EventFormats;
use latscope_testkit::{is_root, missing};

use super::*;

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

/// The reader waits its period while the buffer fills slowly, and reads
/// sooner the faster it fills: a quarter of the buffer per wait.
#[test]
fn the_reader_reads_sooner_under_a_flood() {
    use super::reader::{next_wait, MIN_READ_PERIOD, READ_PERIOD};
    assert_eq!(next_wait(0, 256), READ_PERIOD);
    assert_eq!(next_wait(64, 256), READ_PERIOD);
    assert_eq!(next_wait(128, 256), READ_PERIOD / 2);
    assert_eq!(next_wait(256, 256), READ_PERIOD / 4);
    assert_eq!(next_wait(100_000, 256), MIN_READ_PERIOD);
    assert_eq!(next_wait(1, 0), READ_PERIOD);
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

/// The default buffer is 1 MiB per CPU unless memory is short: the
/// kernel's buffers and the history then take 3/64 of it; never less than
/// the minimum, and what the user asks is what is tried.
#[test]
fn the_buffer_size_is_capped_by_memory_and_cpus() {
    assert_eq!(buffer_kb(None, Some(24 << 20), 2), DEFAULT_BUFFER_KB);
    assert_eq!(buffer_kb(None, None, 2), DEFAULT_BUFFER_KB);
    // a 64 MiB board measuring 4 CPUs: 256 KiB each
    assert_eq!(buffer_kb(None, Some(64 << 10), 4), 256);
    assert_eq!(buffer_kb(None, Some(8 << 10), 4), MIN_BUFFER_KB);
    assert_eq!(buffer_kb(Some(4096), Some(64 << 10), 4), 4096);
    assert_eq!(buffer_kb(Some(1), None, 1), MIN_BUFFER_KB);
}

/// Live: needs root and tracefs. One test, under a file lock, so it never
/// races another test that uses tracefs. A loopback UDP flood on the
/// measured CPU makes the spikes; a 1 ms sleeper on that CPU measures like
/// a measuring thread; this thread explains its spikes like the sender.
#[test]
fn live_instance_reads_continuously_and_explains() {
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
    let mut tracer =
        Tracer::open_at(&root, &[cpu], Some(0), DEFAULT_BUFFER_KB, None).expect("open tracer");
    assert!(!stale.exists(), "stale instance removed");
    let dir = tracer.instance_dir().to_path_buf();
    assert_armed(&dir);
    assert_eq!(tracer.buffer_kb(), (DEFAULT_BUFFER_KB, DEFAULT_BUFFER_KB));
    let top_clock = fs::read_to_string(root.join("trace_clock")).unwrap();

    let flood = latscope_testkit::disturb::UdpFlood::on(&[cpu]);
    let (spikes_tx, spikes_rx) = std::sync::mpsc::channel();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let sleeper = sleeper(cpu, tid_tx, spikes_tx);
    let tid = tid_rx.recv().unwrap();
    tracer.filter_wakeups(&[tid]);
    let filter = fs::read_to_string(dir.join("events/sched/sched_wakeup/filter")).unwrap();
    assert!(filter.contains(&format!("pid=={tid}")), "{filter}");
    let mut explained: Vec<Attribution> = spikes_rx
        .iter()
        .take(40)
        .map(|(cycle, due, wake)| tracer.explain(cpu, Some(tid), due, wake, cycle))
        .collect();
    let last = sleeper.join().unwrap();
    drop(flood);
    // A quiet machine may give no spike: explain the last sample then.
    if explained.is_empty() {
        let (cycle, due, wake) = last;
        explained.push(tracer.explain(cpu, Some(tid), due, wake, cycle));
    }
    check_explained(&explained);

    // The reader read on its own, off the measured CPU, and nothing failed.
    let t = tracer.totals();
    eprintln!("{t:?}");
    assert!(t.pages_read > 0);
    // the kernel's own count: every page read held at least one event
    assert!(t.events >= t.pages_read, "{t:?}");
    assert!(t.events_lost <= t.events, "{t:?}");
    assert_eq!((t.writes_failed, t.reads_failed), (0, 0));
    assert_eq!(t.wakeups, Wakeups::Filtered);
    assert_eq!(t.buffer_kb, DEFAULT_BUFFER_KB);
    if crate::linux::available_cpus().len() > 1 {
        assert!(!reader_cpus().contains(&cpu), "{:?}", reader_cpus());
    }
    // Cleanup: the instance goes, the top level is untouched.
    let closed = tracer.close().expect("close");
    assert!(closed.pages_read >= t.pages_read);
    assert!(!dir.exists(), "instance removed");
    assert_eq!(
        fs::read_to_string(root.join("trace_clock")).unwrap(),
        top_clock
    );
}

/// The instance as `open` arms it: mono clock, only the measured CPU, the
/// events the classifier reads and nothing else.
fn assert_armed(dir: &Path) {
    assert!(dir.is_dir());
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
    let on = |e: &str| {
        fs::read_to_string(dir.join(format!("events/{e}/enable"))).is_ok_and(|v| v.trim() == "1")
    };
    for e in EventFormats::ENABLE {
        assert!(on(e), "{e} on");
    }
    // the diet: what the classifier does not read stays off
    for e in [
        "timer/hrtimer_expire_entry",
        "power/cpu_idle",
        "sched/sched_waking",
    ] {
        assert!(!on(e), "{e} off");
    }
}

/// The CPUs the reader thread may run on.
fn reader_cpus() -> Vec<usize> {
    for task in fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() != "latscope-trace" {
            continue;
        }
        let status = fs::read_to_string(task.path().join("status")).unwrap();
        let list = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string();
        let mut cpus = Vec::new();
        for part in list.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            cpus.extend(a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap());
        }
        return cpus;
    }
    panic!("no reader thread")
}

/// A sample: (cycle, deadline, wake-up) in monotonic ns.
type Sample = (u64, u64, u64);

/// The measuring thread's part: a 1 ms sleeper at nice -20 on `cpu` for
/// 1.5 s that hands over each sample above 30 µs. Returns the last
/// sample.
fn sleeper(cpu: usize, tid: Sender<u32>, spikes: Sender<Sample>) -> JoinHandle<Sample> {
    std::thread::spawn(move || {
        pin(cpu);
        let me = rustix::thread::gettid();
        let _ = tid.send(me.as_raw_nonzero().get().unsigned_abs());
        let _ = rustix::process::setpriority_process(Some(me), -20);
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
            last = (cycle, next, wake);
            if wake.saturating_sub(next) > 30_000 {
                let _ = spikes.send(last);
            }
            cycle += 1;
            next += 1_000_000;
            if next < wake {
                next = wake + 1_000_000;
            }
        }
        last
    })
}

/// The lines add up, nothing is "trace paused" any more, most windows
/// were still in the history when their turn came (this thread explains
/// one spike at a time, and under qemu-user far slower than the sleeper
/// makes them: a window older than the history is "beyond latscope's
/// history", as it should be), and some spike was traced whole.
fn check_explained(explained: &[Attribution]) {
    eprintln!("{} spikes explained", explained.len());
    let mut net_rx = 0u64;
    let beyond = explained.iter().filter(|a| a.beyond_ns() > 0).count();
    assert!(
        beyond * 4 <= explained.len(),
        "{beyond} of {} spikes beyond the history",
        explained.len()
    );
    for a in explained {
        assert_eq!(a.cpu, 0);
        assert!(!a.causes.is_empty());
        assert_eq!(a.total_ns(), a.latency_ns, "{a:?}");
        assert!(a
            .causes
            .iter()
            .all(|c| c.culprit != Culprit::Untraced(Untraced::Paused)));
        net_rx += a.find(CauseKind::Softirq, "NET_RX").map_or(0, |c| c.ns);
        eprintln!(
            "spike {} ns cycle {} partial {}",
            a.latency_ns, a.cycle, a.partial
        );
        for c in &a.causes {
            eprintln!("  {:?} {} x{} {} ns", c.culprit, c.label(), c.count, c.ns);
        }
    }
    eprintln!("NET_RX inside spikes: {net_rx} ns");
    assert!(
        explained.iter().any(|a| !a.partial),
        "no spike fully traced"
    );
}
