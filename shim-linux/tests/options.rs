//! cyclictest 2.4's options one by one: each is accepted, and what it does
//! is observed from outside (the output, the stream's spike samples, the threads'
//! placement and policy, the system calls, the files it makes).
//!
//! The placement without `-a`, the histogram and break options, the
//! callers' command lines and the snapshot file have tests of their own
//! (`callers.rs`, `run.rs`, `strace.rs`).

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use latscope_core::wire::{Body, ClockKind, Frame, Hello, SpikeSample, StartAlign, WakeMode};
use latscope_testkit::procs::{chrt, taskset_cpus, threads_named};
use latscope_testkit::target::{decode_all, privilege_flags, serial, tool};
use latscope_testkit::wait::settle;
use latscope_testkit::wait::within;
use latscope_testkit::Scratch;
use latscope_testkit::{have, is_root, missing, require, switched_off};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// Run latscope with `args` and the privilege flags: stdout, stderr,
/// status.
fn run(args: &[&str]) -> (String, String, ExitStatus) {
    let out = tool(BIN)
        .args(args)
        .args(privilege_flags())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr), out.status)
}

/// Run with the stream on stdout: its frames and stderr; the run must
/// succeed.
fn stream(args: &[&str]) -> (Vec<Frame>, String) {
    let out = tool(BIN)
        .args(args)
        .args(["--stream", "-"])
        .args(privilege_flags())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    (decode_all(&out.stdout), err)
}

fn hello(frames: &[Frame]) -> &Hello {
    frames
        .iter()
        .find_map(|f| match &f.body {
            Body::Hello(h) => Some(h),
            _ => None,
        })
        .expect("a hello")
}

/// The spike samples of thread `t`, by cycle.
fn spikes(frames: &[Frame], t: u16) -> Vec<SpikeSample> {
    let mut v: Vec<SpikeSample> = frames
        .iter()
        .filter_map(|f| match &f.body {
            Body::Spike(s) if s.thread == t => Some(*s),
            _ => None,
        })
        .collect();
    v.sort_by_key(|s| s.cycle);
    v
}

/// Thread 0's deadlines with thread 1's of the same period, as pairs.
fn deadline_pairs(frames: &[Frame]) -> Vec<(i64, i64)> {
    let (a, b) = (spikes(frames, 0), spikes(frames, 1));
    // the same period, whatever cycles a loaded machine made either
    // thread skip: thread 1's nearest deadline, within half the 1 ms
    // interval
    a.iter()
        .filter_map(|x| {
            let y = b
                .iter()
                .min_by_key(|y| (y.deadline_ns - x.deadline_ns).abs())?;
            ((y.deadline_ns - x.deadline_ns).abs() < 500_000)
                .then_some((x.deadline_ns, y.deadline_ns))
        })
        .collect()
}

fn ok(status: ExitStatus, stderr: &str) {
    assert!(status.success(), "{stderr}");
}

#[test]
fn every_option_is_accepted() {
    let _g = serial();
    let dir = Scratch::new("options");
    let fifo = dir.join("accept.fifo");
    let json = dir.join("accept.json");
    let hist = dir.join("accept.hist");
    let (f, j, h) = (fifo.display(), json.display(), hist.display());
    let table: Vec<Vec<String>> = [
        "-a 0",
        "-a",
        "-A",
        "-A 10",
        "-b 100000",
        "-c 0",
        "-c 1",
        "--default-system",
        "--deepest-idle-state 0",
        "-d 100",
        "-D 1",
        "--latency 0",
        "-h 20",
        "-H 20",
        "-h 20 --hist-shape 2.7",
        "-i 500",
        "--laptop",
        "-l 50",
        "--mainaffinity 0",
        "-m",
        "-M",
        "-N",
        "-v -o 5",
        "-p 70",
        "-q",
        "--priospread -p 70",
        "-r",
        "-R",
        "--secaligned",
        "--secaligned 100",
        "-s",
        "-S",
        "--spike 50",
        "--spike 50 --spike-nodes 10",
        "-t 2",
        "-t",
        "-u",
        "-v",
        "--dbg_cyclictest",
        "--policy fifo",
        "--policy rr",
        "-x",
    ]
    .iter()
    .map(|s| s.split(' ').map(str::to_string).collect())
    .chain([
        vec![format!("-F{f}")],
        vec![format!("--json={j}")],
        vec!["-h".into(), "20".into(), format!("--histfile={h}")],
    ])
    .collect();
    for opts in table {
        let mut args: Vec<&str> = opts.iter().map(String::as_str).collect();
        if !args.contains(&"-D") {
            args.extend(["-l", "50"]);
        }
        let (_, err, status) = run(&args);
        assert!(status.success(), "{args:?}: {err}");
        assert!(!err.contains("latscope: unknown"), "{args:?}: {err}");
    }
}

/// `--hist-shape 2.7`: the histogram as rt-tests 2.7 to 2.10 print it,
/// rows with samples only and no `# Total:`; the default keeps 2.4's.
#[test]
fn hist_shape_2_7_leaves_out_empty_rows_and_the_total() {
    let _g = serial();
    let rows = |text: &str| -> Vec<(usize, Vec<u64>)> {
        text.lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
            .map(|l| {
                let mut w = l.split_whitespace().map(|n| n.parse::<u64>().unwrap());
                (w.next().unwrap() as usize, w.collect())
            })
            .collect()
    };
    let (old, err, status) = run(&["-t", "2", "-l", "300", "-q", "-H", "400"]);
    assert!(status.success(), "{err}");
    let (new, err, status) = run(&[
        "-t",
        "2",
        "-l",
        "300",
        "-q",
        "-H",
        "400",
        "--hist-shape",
        "2.7",
    ]);
    assert!(status.success(), "{err}");
    assert_eq!(rows(&old).len(), 400, "2.4: every row\n{old}");
    assert!(old.contains("\n# Total:"), "{old}");
    assert!(!new.contains("# Total:"), "{new}");
    let kept = rows(&new);
    assert!(!kept.is_empty(), "{new}");
    for (row, counts) in &kept {
        // two threads and the all-threads column
        assert_eq!(counts.len(), 3, "row {row}: {new}");
        assert!(counts[2] > 0, "an empty row {row} is printed: {new}");
        assert_eq!(counts[0] + counts[1], counts[2], "row {row}: {new}");
    }
    // every sample of the run is in a kept row or an overflow
    let total: u64 = kept.iter().map(|(_, c)| c[2]).sum();
    let overflows: u64 = new
        .lines()
        .find_map(|l| l.strip_prefix("# Histogram Overflows:"))
        .map(|l| l.split_whitespace().last().unwrap().parse().unwrap())
        .unwrap();
    assert_eq!(total + overflows, 600, "{new}");
    assert!(new.contains("\n# Thread 0: "), "{new}");
}

#[test]
fn wake_modes_say_what_they_give_up() {
    let _g = serial();
    for (opt, mode) in [
        (None, WakeMode::Absolute),
        (Some("-r"), WakeMode::Relative),
        (Some("-s"), WakeMode::Nanosleep),
        (Some("-x"), WakeMode::PosixTimer { relative: false }),
        (Some("-xr"), WakeMode::PosixTimer { relative: true }),
    ] {
        let dir = Scratch::new("options");
        let json = dir.join("mode.json");
        let j = format!("--json={}", json.display());
        let mut args = vec!["-l", "200", "-q", &j];
        args.extend(opt);
        let (frames, err) = stream(&args);
        assert_eq!(hello(&frames).config.wake, mode, "{opt:?}: {err}");
        let doc = std::fs::read_to_string(&json).unwrap();
        assert!(
            doc.contains(&format!("\"wake_mode\": \"{}\"", mode.name())),
            "{doc}"
        );
        assert_eq!(
            doc.contains("\"wake_mode_caveat\""),
            mode.caveat().is_some()
        );
        let cycles: u64 = frames
            .iter()
            .filter_map(|f| match &f.body {
                Body::Bye(b) => Some(b.cycles),
                _ => None,
            })
            .sum();
        assert_eq!(cycles, 200, "{opt:?}");
    }
    let (out, _, status) = run(&["--help"]);
    assert!(status.success());
    for caveat in ["drifts by every", "signal delivery", "timer_getoverrun"] {
        assert!(out.contains(caveat), "--help says {caveat}");
    }
}

#[test]
fn aligned_starts_share_their_deadlines() {
    let _g = serial();
    let base = ["-t", "2", "-d", "0", "-l", "30", "-q", "--spike", "1"];
    let run_pairs = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        let (frames, err) = stream(&args);
        let pairs = deadline_pairs(&frames);
        assert!(pairs.len() >= 5, "{extra:?}: {} pairs; {err}", pairs.len());
        (hello(&frames).config.align, pairs)
    };
    let (align, pairs) = run_pairs(&["-A"]);
    assert_eq!(align, StartAlign::Threads { offset_ns: 0 });
    assert!(pairs.iter().all(|(a, b)| a == b), "-A: {pairs:?}");
    let (align, pairs) = run_pairs(&["-A", "100"]);
    assert_eq!(align, StartAlign::Threads { offset_ns: 100_000 });
    assert!(
        pairs.iter().all(|(a, b)| b - a == 100_000),
        "-A 100: {pairs:?}"
    );
    let (_, pairs) = run_pairs(&["--secaligned", "250"]);
    for (a, b) in &pairs {
        assert_eq!(a, b);
        // full second + 250 us + whole intervals of 1 ms
        assert_eq!((a % 1_000_000_000) % 1_000_000, 250_000, "{a}");
    }
    let (align, pairs) = run_pairs(&[]);
    assert_eq!(align, StartAlign::Own);
    assert!(pairs.iter().any(|(a, b)| a != b), "own starts differ");
}

#[test]
fn the_realtime_clock_is_measured_against() {
    let _g = serial();
    let args = ["-l", "20", "-q", "--spike", "1"];
    let epoch_2020_ns = 1_577_836_800_000_000_000i64;
    for (clock, opt) in [(ClockKind::Monotonic, "0"), (ClockKind::Realtime, "1")] {
        let mut a = args.to_vec();
        a.extend(["-c", opt]);
        let (frames, _) = stream(&a);
        assert_eq!(hello(&frames).config.clock, clock);
        let s = spikes(&frames, 0);
        assert!(!s.is_empty());
        let wall = s[0].deadline_ns > epoch_2020_ns;
        assert_eq!(
            wall,
            clock == ClockKind::Realtime,
            "{clock:?}: {}",
            s[0].deadline_ns
        );
    }
}

#[test]
fn threads_run_where_and_how_the_options_say() {
    require!(is_root(), "real-time policies need root");
    require!(
        have("taskset") && have("chrt"),
        "taskset and chrt (util-linux)"
    );
    let _g = serial();
    let args = [
        "-t",
        "2",
        "-a",
        "1",
        "-p",
        "70",
        "--policy",
        "rr",
        "--priospread",
        "--mainaffinity",
        "0",
        "-q",
        "-D",
        "3",
    ];
    let mut child = tool(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut rt = Vec::new();
    assert!(within(Duration::from_secs(5), || {
        rt = threads_named(pid, "latscope-rt");
        rt.len() == 2 && !threads_named(pid, "latscope-send").is_empty()
    }));
    let sender = threads_named(pid, "latscope-send")[0];
    // latscope also sets SCHED_RESET_ON_FORK: chrt prints it after a |
    let policy = |t: i32| {
        let (p, prio) = chrt(t);
        (p.split('|').next().unwrap_or("").to_string(), prio)
    };
    // Each thread pins itself and takes its policy after it is named:
    // watch until they have, or the run's time is up.
    let rr = |prio| (vec![1], ("SCHED_RR".to_string(), prio));
    let want = (vec![rr(70), rr(69)], vec![0]);
    let seen = settle(Duration::from_secs(2), &want, || {
        let threads: Vec<(Vec<usize>, (String, u32))> =
            rt.iter().map(|t| (taskset_cpus(*t), policy(*t))).collect();
        (threads, taskset_cpus(sender))
    });
    assert!(child.wait().unwrap().success());
    assert_eq!(seen.0[0], want.0[0]);
    assert_eq!(seen.0[1], want.0[1], "--priospread");
    assert_eq!(seen.1, want.1, "--mainaffinity");
}

#[test]
fn smp_puts_one_thread_on_each_cpu() {
    let _g = serial();
    let cpus = std::thread::available_parallelism().unwrap().get();
    let dir = Scratch::new("options");
    let json = dir.join("smp.json");
    let j = format!("--json={}", json.display());
    let (out, err, status) = run(&["-S", "-a", "1", "-t", "5", "-l", "50", "-q", &j]);
    ok(status, &err);
    assert!(
        err.contains("-a ignored due to smp mode") && err.contains("-t ignored"),
        "{err}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("T:")).count(), cpus);
    let doc = std::fs::read_to_string(&json).unwrap();
    for c in 0..cpus {
        assert!(doc.contains(&format!("\"cpu\": {c},")), "{doc}");
    }
}

#[test]
fn counts_and_times() {
    let _g = serial();
    let (out, err, status) = run(&["-t", "2", "-l", "300", "-d", "250", "-i", "700", "-q"]);
    ok(status, &err);
    let t: Vec<&str> = out.lines().filter(|l| l.starts_with("T:")).collect();
    assert!(t[0].contains(" I:700 C:    300 "), "{out}");
    assert!(t[1].contains(" I:950 C:    300 "), "-d: {out}");
    let started = std::time::Instant::now();
    let (out, err, status) = run(&["-D", "2", "-i", "500", "-q"]);
    ok(status, &err);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(6),
        "{took:?}"
    );
    let c: u64 = out
        .split("C:")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((3000..=4001).contains(&c), "-D 2 -i 500: {c} cycles");
}

#[test]
fn verbose_oscope_and_nsecs() {
    let _g = serial();
    let (out, err, status) = run(&["-v", "-l", "100"]);
    ok(status, &err);
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("       0:")).collect();
    assert_eq!(lines.len(), 100, "{out}");
    assert!(lines[99].starts_with("       0:      99:"), "{out}");
    let (out, err, status) = run(&["-v", "-o", "10", "-l", "100"]);
    ok(status, &err);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("       0:")).count(),
        10,
        "-o 10"
    );
    for (nsecs, scale) in [(false, 1000u64), (true, 1)] {
        let dir = Scratch::new("options");
        let json = dir.join("ns.json");
        let j = format!("--json={}", json.display());
        let mut args = vec!["-l", "100", "-q", &j];
        if nsecs {
            args.push("-N");
        }
        let (_, err, status) = run(&args);
        ok(status, &err);
        let doc = std::fs::read_to_string(&json).unwrap();
        let num = |key: &str| -> u64 {
            let v = doc.split(&format!("\"{key}\": ")).nth(1).unwrap();
            v.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        assert_eq!(num("min"), num("min_ns") / scale, "-N {nsecs}: {doc}");
        assert_eq!(num("resolution_in_ns"), u64::from(nsecs));
    }
}

#[test]
fn unbuffered_writes_each_verbose_line_at_once() {
    require!(have("strace"), "strace is not installed");
    let _g = serial();
    for unbuffered in [false, true] {
        let dir = Scratch::new("options");
        let log = dir.join("writes.txt");
        let mut args = vec![
            "-f",
            "-e",
            "trace=write",
            "-s",
            "64",
            "-o",
            log.to_str().unwrap(),
            BIN,
        ];
        args.extend(["-v", "-l", "300"]);
        if unbuffered {
            args.push("-u");
        }
        args.extend(privilege_flags());
        let st = tool("strace")
            .args(&args)
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let text = std::fs::read_to_string(&log).unwrap();
        let verbose: Vec<usize> = text
            .lines()
            .filter(|l| l.contains("write(1, \"       0:"))
            .map(|l| l.matches("\\n").count())
            .collect();
        assert!(!verbose.is_empty(), "{text}");
        if unbuffered {
            assert!(
                verbose.iter().all(|n| *n == 1),
                "-u: one line per write: {verbose:?}"
            );
        } else {
            assert!(
                verbose.iter().any(|n| *n > 1),
                "many lines per write: {verbose:?}"
            );
        }
    }
}

#[test]
fn refresh_on_max_shows_only_new_maxima() {
    let _g = serial();
    let blocks = |extra: &[&str]| -> Vec<u64> {
        let mut args = vec!["-D", "3", "--report-interval", "100ms"];
        args.extend(extra);
        let (out, err, status) = run(&args);
        ok(status, &err);
        // the live lines; the last one is the final summary
        let mut maxima: Vec<u64> = out
            .lines()
            .filter(|l| l.starts_with("T:"))
            .map(|l| l.rsplit("Max:").next().unwrap().trim().parse().unwrap())
            .collect();
        maxima.pop();
        maxima
    };
    let plain = blocks(&[]);
    assert!(plain.len() >= 20, "a line per report: {plain:?}");
    assert!(plain.windows(2).any(|w| w[0] == w[1]), "repeats: {plain:?}");
    let on_max = blocks(&["-M"]);
    assert!(!on_max.is_empty());
    assert!(
        on_max.windows(2).all(|w| w[1] > w[0]),
        "-M: only new maxima: {on_max:?}"
    );
}

#[test]
fn spikes_are_listed_up_to_spike_nodes() {
    let _g = serial();
    let (out, err, status) = run(&["--spike", "1", "--spike-nodes", "5", "-l", "200", "-q"]);
    ok(status, &err);
    assert_eq!(
        out.lines().filter(|l| l.starts_with("T: 0 Spike:")).count(),
        5,
        "{out}"
    );
    let total: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("spikes = "))
        .expect("spikes = N")
        .parse()
        .unwrap();
    assert!(total > 5, "{out}");
}

#[test]
fn resolution_debug_and_the_latency_request() {
    let _g = serial();
    let (_, err, status) = run(&["-R", "-l", "10", "-q"]);
    ok(status, &err);
    assert!(err.contains("reported clock resolution: 1 nsec"), "{err}");
    assert!(
        err.contains("measured clock resolution approximately: "),
        "{err}"
    );
    let (_, err, status) = run(&["-R", "--dbg_cyclictest", "-t", "2", "-l", "10", "-q"]);
    ok(status, &err);
    assert!(err.contains("INFO: For "), "{err}");
    assert!(err.contains("debug: thread 1: CPU 1"), "{err}");
    for (opts, said) in [
        (&["--default-system"][..], "not setting cpu_dma_latency"),
        (&["--laptop"], "to save battery power"),
    ] {
        let mut args = vec!["-l", "10", "-q"];
        args.extend(opts);
        let (frames, err) = stream(&args);
        assert_eq!(hello(&frames).config.dma_latency_us, None, "{opts:?}");
        assert!(err.contains(said), "{opts:?}: {err}");
    }
    if is_root() {
        let (frames, err) = stream(&["--latency", "10", "-l", "10", "-q"]);
        assert_eq!(hello(&frames).config.dma_latency_us, Some(10));
        assert!(err.contains("# /dev/cpu_dma_latency set to 10us"), "{err}");
    } else {
        missing("--latency 10: writing /dev/cpu_dma_latency needs root");
    }
}

#[test]
fn fifo_hands_the_status_to_a_reader() {
    let _g = serial();
    let dir = Scratch::new("options");
    let path = dir.join("status.fifo");
    let f = format!("-F{}", path.display());
    let mut child = tool(BIN)
        .args(["-t", "2", "-q", "-D", "3", &f])
        .args(privilege_flags())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(within(Duration::from_secs(5), || path.exists()));
    // a blocking reader, as `cat PATH` is
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(child.wait().unwrap().success());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("T: 0 (") && lines[1].starts_with("T: 1 ("),
        "{text}"
    );
    assert!(!path.exists(), "removed at exit");
}

#[test]
fn smi_stops_as_cyclictest_does_without_a_counter() {
    let _g = serial();
    let (_, err, status) = run(&["--smi", "-l", "10"]);
    assert_eq!(status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if !cpuinfo.contains("GenuineIntel") {
        let why = if cfg!(target_arch = "x86_64") {
            "SMI counter is not supported on this processor"
        } else {
            "--smi is not available on your arch"
        };
        assert!(err.contains(why), "{err}");
        if !is_root() {
            missing("cyclictest --smi, the comparison, needs root");
        } else if !have("cyclictest") {
            missing("cyclictest (rt-tests), the comparison, is not installed");
        } else {
            let ct = tool("cyclictest")
                .args(["--smi", "-l", "10", "-q"])
                .output()
                .unwrap();
            assert_eq!(ct.status.code(), Some(1), "cyclictest 2.4 exits 1 too");
            assert!(String::from_utf8_lossy(&ct.stderr).contains(why));
        }
    } else {
        // not a missing tool: an Intel processor's message depends on its
        // MSRs, so only the exit status and the one line are checked
        switched_off("the message without an SMI counter (an Intel processor)");
    }
}
