//! cyclictest's real callers as the tests reproduce them: how rteval's
//! cyclictest module calls the program, stops it and reads its standard
//! output. Reproduced from how rteval reads cyclictest's output (see the
//! reference notes), not copied.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use rustix::process::{kill_process, Pid, Signal};

use crate::wait::within;

/// rteval's default histogram size (its `buckets` parameter).
pub const RTEVAL_BUCKETS: u32 = 3500;

/// The online CPUs as the kernel lists them (`0-1`), which rteval passes
/// to `-a`, and their number.
pub fn online() -> (String, usize) {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let list = list.trim().to_string();
    let n = list
        .split(',')
        .filter(|r| !r.is_empty())
        .map(|r| match r.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.parse().unwrap_or(0);
                b.parse::<usize>().unwrap_or(a).saturating_sub(a) + 1
            }
            None => 1,
        })
        .sum();
    (list, n)
}

/// rteval's command line after the program name, for all online CPUs:
/// `-i100 -qmu "-h 3500" -p95 -tN -aLIST`, each its own word (the
/// histogram's with a blank inside), then `extra`.
pub fn rteval_args(extra: &[&str]) -> (Vec<String>, usize) {
    let (cpus, n) = online();
    let mut args = vec![
        "-i100".to_string(),
        "-qmu".to_string(),
        format!("-h {RTEVAL_BUCKETS}"),
        "-p95".to_string(),
        format!("-t{n}"),
        format!("-a{cpus}"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    (args, n)
}

/// Start `program` with `args` as rteval's `_WorkloadTask` does: standard
/// input and error to /dev/null, standard output to `out`.
pub fn start_like_rteval(program: &Path, args: &[String], out: std::fs::File) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .stdout(out)
        .spawn()
        .expect("start the measuring program")
}

/// Stop it as rteval's `_WorkloadCleanup` does: SIGINT every 2 s until it
/// is gone (at most 10 times; then it is killed and the test fails).
pub fn stop_like_rteval(child: &mut Child) -> std::process::ExitStatus {
    for _ in 0..10 {
        if let Ok(Some(s)) = child.try_wait() {
            return s;
        }
        let _ = kill_process(Pid::from_child(child), Signal::INT);
        if within(Duration::from_secs(2), || {
            child.try_wait().map(|s| s.is_some()).unwrap_or(true)
        }) {
            return child.wait().expect("wait");
        }
    }
    let _ = child.kill();
    panic!("the measuring program did not end on SIGINT");
}

/// What rteval takes from cyclictest's standard output.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rteval {
    /// Samples per core: the sum of its histogram column.
    pub samples: Vec<u64>,
    /// Per core, from `# Max Latencies:`.
    pub max: Vec<u64>,
    /// From `# Break value:`.
    pub break_value: Option<u64>,
    /// Histogram rows read.
    pub rows: usize,
    /// Per core, the highest row with samples (rteval's maximum from the
    /// histogram).
    pub top_row: Vec<i64>,
}

/// Read stdout as rteval's cyclictest module does: `#` lines give the
/// break value and the maxima; every other line whose first word is an
/// integer is a histogram row with one count per core (a shorter row or a
/// count that is not an integer would crash rteval: here it panics); other
/// lines are skipped.
pub fn rteval_parse(stdout: &str, cores: usize) -> Rteval {
    let mut r = Rteval {
        samples: vec![0; cores],
        top_row: vec![0; cores],
        ..Rteval::default()
    };
    for line in stdout.lines() {
        if line.starts_with('#') {
            rteval_comment(&mut r, line);
            continue;
        }
        let vals: Vec<&str> = line.split_whitespace().collect();
        // Python's int() takes a sign too
        let Some(Ok(index)) = vals.first().map(|v| v.parse::<i64>()) else {
            continue;
        };
        assert!(vals.len() > cores, "a row rteval would crash on: {line:?}");
        for c in 0..cores {
            let n = vals[c + 1].parse::<u64>().expect("a count rteval reads");
            r.samples[c] += n;
            if n > 0 {
                r.top_row[c] = r.top_row[c].max(index);
            }
        }
        r.rows += 1;
    }
    r
}

/// The two `#` lines rteval reads.
fn rteval_comment(r: &mut Rteval, line: &str) {
    if let Some(v) = line.strip_prefix("# Break value: ") {
        r.break_value = Some(v.trim().parse().expect("break value"));
    } else if let Some(v) = line.strip_prefix("# Max Latencies: ") {
        r.max = v
            .split_whitespace()
            .map(|x| x.parse().expect("a maximum"))
            .collect();
    }
}

/// What a complete rteval run needs: every histogram row, and a maximum
/// per core that is at least the highest row with samples (rteval takes
/// the larger of the two).
pub fn check_rteval(r: &Rteval, cores: usize, what: &str) {
    assert_eq!(r.rows, RTEVAL_BUCKETS as usize, "{what}: rows");
    assert_eq!(r.max.len(), cores, "{what}: # Max Latencies");
    for c in 0..cores {
        assert!(r.max[c] as i64 >= r.top_row[c], "{what}: core {c}: {r:?}");
    }
}
