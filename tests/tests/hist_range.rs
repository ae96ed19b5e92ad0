//! The run-time 1 µs histogram range, end to end under a real disturbance:
//! the target is stopped (SIGSTOP) for a few milliseconds mid-run, so one
//! wake-up is that late. With `-h 20000` the late sample lands in its own
//! 1 µs row far past the default 1000 µs range, and the host reproduces
//! the target's rows; with a smaller `-h` it overflows, and its cycle
//! number counts from 0 as `-v` numbers the samples (as cyclictest does).

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use latscope_testkit::host::{bins, host};
use latscope_testkit::procs::{threads_named, voluntary_switches};
use latscope_testkit::wait::until;
use latscope_testkit::Scratch;
use latscope_testkit::{is_root, require};
use rustix::process::{kill_process, Pid, Signal};

/// How long the target is stopped: well past 1000 µs, well below 20 ms.
const STOP: Duration = Duration::from_millis(8);
/// Attempts before the machine is declared too noisy for the disturbance.
const TRIES: usize = 3;

/// Cycles the measuring thread has run, at least, before it is stopped:
/// the stop comes inside the measurement, not in its set-up.
const BEFORE_STOP: u64 = 20;

/// Run the target with `args` in `dir`, stopped for [`STOP`] once it has
/// measured for [`BEFORE_STOP`] cycles; its stdout.
fn disturbed(dir: &Scratch, args: &[&str]) -> String {
    let mut c: Child = Command::new(bins().latscope)
        .args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run latscope");
    let measuring = format!("{BEFORE_STOP} cycles of the measuring thread");
    until(Duration::from_secs(10), &measuring, || {
        let tid = *threads_named(c.id(), "latscope-rt").first()?;
        (voluntary_switches(c.id(), tid)? >= BEFORE_STOP).then_some(())
    });
    let pid = Pid::from_raw(c.id() as i32).expect("pid");
    kill_process(pid, Signal::STOP).expect("SIGSTOP");
    sleep(STOP);
    kill_process(pid, Signal::CONT).expect("SIGCONT");
    let mut stdout = String::new();
    let mut err = String::new();
    c.stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = c.wait().expect("wait latscope");
    assert!(status.success(), "latscope {args:?}: {err}");
    stdout
}

/// The histogram rows of a one-thread text: (row, count).
fn rows(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split_whitespace().map(|x| x.parse::<u64>().unwrap());
            (w.next().unwrap(), w.next().unwrap())
        })
        .collect()
}

/// The number after `key` on its `#` line.
fn figure(text: &str, key: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| {
            panic!("no {key} in\n{text}");
        });
    line[key.len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn twenty_thousand_rows_of_one_microsecond_are_exact() {
    require!(
        is_root(),
        "needs root (the target writes /dev/cpu_dma_latency)"
    );
    for attempt in 1..=TRIES {
        let dir = Scratch::new("hist-20000");
        let args = ["-q", "-l", "500", "-h", "20000", "--stream=r.lsr"];
        let text = disturbed(&dir, &args);
        let max = figure(&text, "# Max Latencies:");
        if !(1000..20_000).contains(&max) && attempt < TRIES {
            eprintln!("attempt {attempt}: max {max} us outside the test's window, again");
            continue;
        }
        assert!((1000..20_000).contains(&max), "max {max} us: {text}");
        let rows = rows(&text);
        let index: Vec<u64> = rows.iter().map(|r| r.0).collect();
        assert_eq!(index, (0..20_000).collect::<Vec<_>>(), "every 1 us row");
        let top = rows.iter().filter(|r| r.1 > 0).map(|r| r.0).max();
        assert_eq!(top, Some(max), "the late sample in its own row");
        let total: u64 = rows.iter().map(|r| r.1).sum();
        assert_eq!(total, figure(&text, "# Total:"));
        assert_eq!(figure(&text, "# Histogram Overflows:"), 0);

        let rec = dir.join("r.lsr").display().to_string();
        let out = host(&["report", "-f", "cyclictest-hist", &rec]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let end = text
            .strip_prefix("# /dev/cpu_dma_latency set to 0us\n")
            .unwrap_or(&text);
        assert_eq!(String::from_utf8_lossy(&out.stdout), end, "host = target");
        return;
    }
}

/// `-v` sample lines: (cycle, latency in µs).
fn verbose_samples(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(':').map(str::trim).collect();
            match f[..] {
                ["0", c, v] => Some((c.parse().ok()?, v.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn overflow_cycle_numbers_count_from_zero_as_verbose_numbers_samples() {
    require!(
        is_root(),
        "needs root (the target writes /dev/cpu_dma_latency)"
    );
    let dir = Scratch::new("hist-overflow");
    let text = disturbed(&dir, &["-l", "500", "-h", "2000", "-v"]);
    let samples = verbose_samples(&text);
    assert_eq!(samples.first().map(|s| s.0), Some(0), "-v counts from 0");
    let over: Vec<String> = samples
        .iter()
        .filter(|s| s.1 >= 2000)
        .map(|s| format!("{:05}", s.0))
        .collect();
    assert!(!over.is_empty(), "the stop made no overflow:\n{text}");
    let line = text
        .lines()
        .find(|l| l.starts_with("# Thread 0:"))
        .expect("overflow cycle line");
    assert_eq!(line, format!("# Thread 0: {}", over.join(" ")));
}
