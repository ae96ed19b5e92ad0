//! cyclictest's real callers, with latscope in its place, run as their
//! users run them: rteval's measurement module, OSADL's latency plot
//! script, lab wrappers' `-t 0 -a all`, rt-tests' `get_cyclictest_snapshot`
//! on a live run, and where cyclictest 2.4 places threads without `-a`.
//!
//! The callers' parsing is reproduced here from how they read cyclictest's
//! output (see the reference notes), not copied.

use std::process::Stdio;
use std::time::Duration;

use latscope_testkit::callers::{
    check_rteval, online, rteval_args, rteval_parse, start_like_rteval, stop_like_rteval, Rteval,
};
use latscope_testkit::procs::{taskset_cpus, threads_named};
use latscope_testkit::target::{serial, tool};
use latscope_testkit::wait::settle;
use latscope_testkit::wait::within;
use latscope_testkit::Scratch;
use latscope_testkit::{have, is_root, require};
use rustix::process::{kill_process, Pid, Signal};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// One rteval run of `secs` seconds with `extra` options.
fn rteval(extra: &[&str], secs: u64) -> Rteval {
    let dir = Scratch::new("callers");
    let out = dir.join("rteval.out");
    let (args, n) = rteval_args(extra);
    let mut child = start_like_rteval(
        std::path::Path::new(BIN),
        &args,
        std::fs::File::create(&out).unwrap(),
    );
    std::thread::sleep(Duration::from_secs(secs));
    let status = stop_like_rteval(&mut child);
    let stdout = std::fs::read_to_string(&out).unwrap();
    assert!(status.success(), "{status:?}\n{stdout}");
    let r = rteval_parse(&stdout, n);
    check_rteval(&r, n, &format!("{extra:?}"));
    r
}

#[test]
fn rteval_gets_samples_with_its_command_lines() {
    require!(is_root(), "rteval runs cyclictest as root (-p95 -m)");
    let _g = serial();
    for extra in [&[][..], &["--default-system"]] {
        let r = rteval(extra, 2);
        assert!(r.samples.iter().all(|s| *s > 0), "{extra:?}: {r:?}");
        assert_eq!(r.break_value, None);
        // 100 us for 2 s: thousands of samples per core (beyond the range
        // they are overflows, which rteval does not count)
        let total: u64 = r.samples.iter().sum();
        assert!(total > 1000 * r.samples.len() as u64, "{extra:?}: {r:?}");
    }
}

#[test]
fn rteval_breaktrace_with_tracemark_stops_tracing() {
    require!(is_root(), "rteval runs cyclictest as root");
    let Some(tracefs) = latscope_testkit::precondition::tracefs() else {
        latscope_testkit::missing("tracefs is not mounted");
        return;
    };
    let _g = serial();
    let on = tracefs.join("tracing_on");
    let before = std::fs::read_to_string(&on).unwrap();
    std::fs::write(&on, "1").unwrap();
    // -b1: the first sample above 1 us ends the run (before SIGINT)
    let r = rteval(&["-b1", "--tracemark"], 1);
    let stopped = std::fs::read_to_string(&on).unwrap();
    let trace = std::fs::read_to_string(tracefs.join("trace")).unwrap_or_default();
    std::fs::write(&on, before.trim()).unwrap();
    let value = r.break_value.expect("rteval reads # Break value:");
    assert!(value > 1, "{r:?}");
    assert!(r.samples.iter().sum::<u64>() > 0, "{r:?}");
    assert_eq!(stopped.trim(), "0", "--tracemark stops tracing");
    assert!(
        trace.contains(&format!("hit latency threshold ({value} > 1)")),
        "the trace marker of the break"
    );
}

/// OSADL's `mklatencyplot.bash`: the histogram is every line that is
/// neither a comment nor empty, spaces turned into tabs, one column per
/// core after the index; the maximum is the largest number on the
/// `Max Latencies` line.
fn osadl_parse(output: &str, cores: usize) -> (Vec<Vec<u64>>, u64) {
    let max = output
        .lines()
        .filter(|l| l.contains("Max Latencies"))
        .flat_map(|l| l.split(' '))
        .filter_map(|w| w.parse::<u64>().ok())
        .max()
        .expect("a Max Latencies line");
    let rows: Vec<Vec<u64>> = output
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.replace(' ', "\t"))
        .map(|l| {
            let cols: Vec<u64> = l.split('\t').map(|c| c.parse().unwrap()).collect();
            assert_eq!(cols.len(), cores + 1, "gnuplot's columns: {l:?}");
            cols
        })
        .collect();
    (rows, max)
}

#[test]
fn osadl_latency_plot_reads_the_histogram() {
    require!(is_root(), "OSADL's run uses -m and -p90");
    let _g = serial();
    let (_, n) = online();
    let args = [
        "-l100000000",
        "-m",
        "-Sp90",
        "-i200",
        "-h400",
        "-q",
        "-D",
        "2",
    ];
    let out = tool(BIN).args(args).stdin(Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let (rows, max) = osadl_parse(&text, n);
    assert_eq!(rows.len(), 400, "{text}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r[0], i as u64, "x column");
    }
    for core in 1..=n {
        let samples: u64 = rows.iter().map(|r| r[core]).sum();
        assert!(samples > 0, "core {core}: {text}");
    }
    assert!(max > 0);
}

#[test]
fn lab_wrappers_all_cpus() {
    require!(is_root(), "a real-time run");
    let _g = serial();
    let (_, n) = online();
    let dir = Scratch::new("callers");
    let json = dir.join("all.json");
    let j = format!("--json={}", json.display());
    let out = tool(BIN)
        .args(["-t", "0", "-a", "all", "-D", "1", "-q", &j])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.lines().filter(|l| l.starts_with("T:")).count(),
        n,
        "{text}"
    );
    let doc = std::fs::read_to_string(&json).unwrap();
    for cpu in 0..n {
        assert!(
            doc.contains(&format!("\"cpu\": {cpu},")),
            "thread on CPU {cpu}: {doc}"
        );
    }
}

/// The measuring threads of a running program, waiting until `count` exist.
fn measuring_threads(pid: u32, name: &str, count: usize) -> Vec<i32> {
    let mut tids = Vec::new();
    assert!(
        within(Duration::from_secs(5), || {
            tids = threads_named(pid, name);
            tids.len() >= count
        }),
        "{count} threads named {name} in {pid}"
    );
    tids
}

#[test]
fn threads_are_placed_as_cyclictest_2_4_places_them() {
    require!(is_root(), "real-time runs");
    require!(have("cyclictest"), "cyclictest (rt-tests) is not installed");
    require!(have("taskset"), "taskset is not installed");
    let _g = serial();
    let (_, n) = online();
    let threads = (n + 1).to_string();
    let expected: Vec<Vec<usize>> = (0..=n).map(|i| vec![i % n]).collect();
    let mut placements = Vec::new();
    for (program, thread_name) in [("cyclictest", "cyclictest"), (BIN, "latscope-rt")] {
        let mut child = tool(program)
            .args(["-t", &threads, "-q", "-D", "3"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // cyclictest names every thread like the process; skip the main one
        let main = usize::from(program == "cyclictest");
        let tids = measuring_threads(child.id(), thread_name, n + 1 + main);
        // a thread pins itself after it starts: watch until all have, or
        // the run's time is up
        let cpus = settle(Duration::from_secs(2), &expected, || {
            tids[main..].iter().map(|t| taskset_cpus(*t)).collect()
        });
        let _ = child.wait();
        placements.push(cpus);
    }
    assert_eq!(placements[0], expected, "cyclictest 2.4 itself");
    assert_eq!(placements[1], expected, "latscope");
}

#[test]
fn get_cyclictest_snapshot_lists_and_reads_a_live_run() {
    require!(is_root(), "a real-time run");
    require!(
        have("get_cyclictest_snapshot"),
        "get_cyclictest_snapshot (rt-tests) is not installed"
    );
    let _g = serial();
    let mut child = tool(BIN)
        .args(["-t", "2", "-q", "-D", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let file = format!("/dev/shm/cyclictest{pid}");
    assert!(within(Duration::from_secs(5), || std::path::Path::new(
        &file
    )
    .exists()));
    let snap = |args: &[&str]| {
        let out = tool("get_cyclictest_snapshot").args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(snap(&["-l"]).lines().any(|l| l == pid), "listed");
    let before = std::fs::read(&file).unwrap();
    snap(&["-s", &pid]);
    let changed = within(Duration::from_secs(5), || {
        std::fs::read(&file).is_ok_and(|now| now != before)
    });
    assert!(changed, "the file changed after SIGUSR2");
    let text = snap(&["-p", &pid]);
    let tids = threads_named(child.id(), "latscope-rt");
    let _ = kill_process(Pid::from_child(&child), Signal::INT);
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(
        text.starts_with("#---------------------------\n# cyclictest current status:\n"),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("T:")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    for (i, tid) in tids.iter().enumerate() {
        assert!(
            lines[i].starts_with(&format!("T:{i:2} ({tid:5}) P:80 I:")),
            "{text}"
        );
    }
    assert!(!std::path::Path::new(&file).exists(), "removed at exit");
    assert!(!snap(&["-l"]).lines().any(|l| l == pid), "no longer listed");
}

/// The cycle count of thread 0 in a status block (`T: 0 (...) ... C:  1200 ...`).
fn cycles_of_thread_0(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("T: 0 "))?;
    let mut words = line.split_whitespace();
    words.find(|w| *w == "C:")?;
    words.next()?.parse().ok()
}

/// (time a request started, time its answer was seen, the count it gave)
type Call = (std::time::Instant, std::time::Instant, Option<u64>);

/// The pairs of consecutive calls whose second count is not of its own
/// moment. The run counts at 1 kHz, a cycle a millisecond less what the
/// machine made it miss: between two answers at least 80 % of the time
/// from the first call's end to the second's start, at most the time from
/// the first's start to the second's end. Calls alternate short and long
/// gaps, so an answer one request behind (the count of the call before)
/// does not fit: its difference would follow the gap before, not this one.
fn pairs_behind(calls: &[Call]) -> Vec<String> {
    let ms = |d: Duration| d.as_millis() as u64;
    calls
        .windows(2)
        .filter_map(|w| {
            let ((a0, a1, ca), (b0, b1, cb)) = (w[0], w[1]);
            let least = ms(b0.duration_since(a1)) * 8 / 10;
            let most = ms(b1.duration_since(a0)) + 5;
            let current = matches!((ca, cb), (Some(ca), Some(cb))
                if (least..=most).contains(&cb.saturating_sub(ca)));
            (!current).then(|| format!("{ca:?} -> {cb:?} (between {least} and {most})"))
        })
        .collect()
}

/// The pause before call `k`: short and long in turn.
fn gap(k: usize) -> Duration {
    Duration::from_millis(match k {
        0 => 300,
        k if k % 2 == 1 => 600,
        _ => 150,
    })
}

/// SIGUSR2 asks for the status in the snapshot file, and rt-tests'
/// snapshot tool (no arguments, several times in a row during a run, as
/// its users call it) prints it. The test first sends the signal itself
/// and watches the file: every request must be answered, with the count of
/// its own moment. A latscope that answers a request only when the next
/// one comes (or never) fails there, whatever the machine.
///
/// Then the tool. It sends SIGUSR2 with `kill` and reads the file as soon
/// as `kill` has returned, without waiting for the answer, so even
/// cyclictest loses that race now and then: on a quiet 2-CPU machine 1
/// pair in 30 was behind for cyclictest and for latscope alike (the same
/// calls from a script), and on a busy CI machine a stretch of 2 calls in
/// 12 was. Whether the race is lost is the machine's doing, so the tool's
/// part asks only that its output is latscope's status and that not every
/// call is a request behind (a latscope answering late is behind at every
/// call and prints nothing at the first).
#[test]
fn get_cyclictest_snapshot_called_as_its_users_do_prints_the_current_count() {
    require!(is_root(), "a real-time run");
    require!(
        have("get_cyclictest_snapshot"),
        "get_cyclictest_snapshot (rt-tests) is not installed"
    );
    let _g = serial();
    let child = tool(BIN)
        .args(["-t", "1", "-i", "1000", "-q", "-D", "600"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // long enough for slow calls on a loaded machine (a 30 s run ended
    // before the last of them under `stress-ng --cpu 16`); ended here
    // however the test ends, so that no later call of the tool finds this
    // run's file
    struct Run(std::process::Child);
    impl Drop for Run {
        fn drop(&mut self) {
            let _ = kill_process(Pid::from_child(&self.0), Signal::INT);
            let _ = self.0.wait();
        }
    }
    let run = Run(child);
    let pid = Pid::from_child(&run.0);
    let file = format!("/dev/shm/cyclictest{}", run.0.id());
    assert!(within(Duration::from_secs(5), || std::path::Path::new(
        &file
    )
    .exists()
        && !threads_named(run.0.id(), "latscope-rt").is_empty()));

    // the requests, and the answers seen in the file
    let mut answers: Vec<Call> = Vec::new();
    for k in 0..8 {
        std::thread::sleep(gap(k));
        let before = std::fs::read(&file).unwrap();
        let t0 = std::time::Instant::now();
        kill_process(pid, Signal::USR2).unwrap();
        let answered = within(Duration::from_secs(2), || {
            std::fs::read(&file).is_ok_and(|now| now != before)
        });
        let t1 = std::time::Instant::now();
        assert!(answered, "request {k}: the file did not change in 2 s");
        let text = std::fs::read_to_string(&file).unwrap();
        answers.push((t0, t1, cycles_of_thread_0(&text)));
    }
    let behind = pairs_behind(&answers);
    assert!(
        behind.is_empty(),
        "{} of 7 answers do not give the count of their request's moment: {behind:?}",
        behind.len()
    );

    // the tool, as its users call it
    let tid = threads_named(run.0.id(), "latscope-rt")[0];
    let mut calls: Vec<Call> = Vec::new();
    for k in 0..12 {
        std::thread::sleep(gap(k));
        let t0 = std::time::Instant::now();
        let out = tool("get_cyclictest_snapshot").output().unwrap();
        let t1 = std::time::Instant::now();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("T: 0 ({tid:5}) P:80 I:1000 C:")),
            "call {k}: {text}"
        );
        calls.push((t0, t1, cycles_of_thread_0(&text)));
    }
    drop(run);
    let behind = pairs_behind(&calls);
    eprintln!("the tool: {} of 11 pairs behind: {behind:?}", behind.len());
    assert!(
        behind.len() < 11,
        "every call of the tool printed a status a request behind: {behind:?}; counts {:?}",
        calls.iter().map(|c| c.2).collect::<Vec<_>>()
    );
}

#[test]
fn without_dev_shm_one_line_and_the_run_goes_on() {
    require!(is_root(), "a mount namespace needs root");
    require!(have("unshare"), "unshare is not installed");
    let _g = serial();
    // an empty /dev, as on a minimal image without /dev/shm
    let script = format!("mount -t tmpfs none /dev && exec {BIN} -l 200 -q");
    let out = tool("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("/dev/shm")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("# no /dev/shm"), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("C:    200"), "{stdout}");
}
