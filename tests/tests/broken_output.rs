//! Outputs that fail, for both programs: a standard stream that is a
//! closed pipe (EPIPE) or `/dev/full` (ENOSPC) never aborts a program; it
//! exits with its documented status 4 and every other output still gets
//! everything (`--json`, the stream, a recording, `-o`). An output that
//! cannot be opened stops a program before it measures or reads, with one
//! line. A stream that delivered nothing is status 4 with a count and a
//! reason. After its first failed write a standard stream is not written
//! again, by either program (`docs/console.md`).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use latscope_core::wire::Body;
use latscope_testkit::host::{bins, read_json, Reaper};
use latscope_testkit::target::privilege_flags;
use latscope_testkit::wait::frames_of;
use latscope_testkit::Scratch;
use latscope_testkit::{have, require};

/// A standard stream that cannot be written.
#[derive(Debug, Clone, Copy)]
enum Broken {
    /// A pipe whose reading end is closed: EPIPE (SIGPIPE is ignored).
    ClosedPipe,
    /// `/dev/full`: ENOSPC.
    Full,
}

const BROKEN: [Broken; 2] = [Broken::ClosedPipe, Broken::Full];

impl Broken {
    fn stdio(self) -> Stdio {
        match self {
            Broken::ClosedPipe => {
                let (read, write) = std::io::pipe().expect("pipe");
                drop(read);
                Stdio::from(write)
            }
            Broken::Full => Stdio::from(
                File::options()
                    .write(true)
                    .open("/dev/full")
                    .expect("/dev/full"),
            ),
        }
    }
}

/// Exit status 4, not a signal (an abort is SIGABRT).
#[track_caller]
fn assert_lost_output(o: &Output, what: &str) {
    assert_eq!(
        o.status.code(),
        Some(4),
        "{what}: {} ({})",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Which standard stream a run gets broken.
#[derive(Debug, Clone, Copy)]
enum Which {
    Out,
    Err,
}

/// A 300-loop run of the target with `which` broken as `b`, a `--json`
/// file and a stream file: status 4 and both files complete. Returns the
/// output of the stream that works.
fn target_with(which: Which, b: Broken, dir: &Scratch) -> String {
    let json = dir.join("t.json");
    let rec = dir.join("t.lsr");
    let (out, err) = match which {
        Which::Out => (b.stdio(), Stdio::piped()),
        Which::Err => (Stdio::piped(), b.stdio()),
    };
    let o = Command::new(bins().latscope)
        // --self-check: its note at the end is written to standard error
        // whatever else the run says there
        .args(["-t", "2", "-l", "300", "-q", "--self-check"])
        .args(privilege_flags())
        .arg(format!("--json={}", json.display()))
        .arg(format!("--stream={}", rec.display()))
        .stdout(out)
        .stderr(err)
        .output()
        .expect("run latscope");
    assert_lost_output(&o, &format!("{which:?} {b:?}"));
    assert_complete_json(&json, 300);
    assert_complete_stream(&rec);
    let works = match which {
        Which::Out => &o.stderr,
        Which::Err => &o.stdout,
    };
    String::from_utf8_lossy(works).into_owned()
}

#[test]
fn target_with_broken_stderr_exits_4_and_writes_json_and_stream() {
    let dir = Scratch::new("broken-target");
    for b in BROKEN {
        // the summary on standard output is whole
        let out = target_with(Which::Err, b, &dir);
        assert_eq!(out.matches("C:    300").count(), 2, "{b:?}: {out}");
    }
}

#[test]
fn target_with_broken_stdout_exits_4_and_says_so_on_stderr() {
    let dir = Scratch::new("broken-target-out");
    for b in BROKEN {
        let err = target_with(Which::Out, b, &dir);
        assert!(err.contains("standard output: "), "{b:?}: {err}");
    }
}

/// A closed pipe as the only output ends the run (as SIGPIPE would, but
/// through the exit discipline): it does not measure on for nobody.
#[test]
fn target_with_nowhere_to_write_ends_its_run() {
    let mut t = Reaper::new(
        Command::new(bins().latscope)
            .args(["-D", "60"])
            .args(privilege_flags())
            .stdout(Broken::ClosedPipe.stdio())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope"),
    );
    let o = t.wait(Duration::from_secs(20));
    assert_lost_output(&o, "stdout a closed pipe, no other output");
}

/// Write attempts on standard output and standard error (fds 1 and 2) of
/// `program` with `args` run under `strace -f`, both streams `/dev/full`
/// and its input `stdin`; the run must end with status 4.
fn writes_to_full_streams(
    program: &Path,
    args: &[&str],
    stdin: Stdio,
    dir: &Scratch,
) -> [usize; 2] {
    let log = dir.join("strace.txt");
    let o = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=write,writev",
            "-e",
            "signal=none",
            "-o",
        ])
        .arg(&log)
        .arg(program)
        .args(args)
        .stdin(stdin)
        .stdout(Broken::Full.stdio())
        .stderr(Broken::Full.stdio())
        .output()
        .expect("run strace");
    assert_lost_output(&o, &format!("{} {args:?}", program.display()));
    let text = std::fs::read_to_string(&log).expect("strace's log");
    [1, 2].map(|fd| {
        let call = [format!(" write({fd}, "), format!(" writev({fd}, ")];
        text.lines()
            .filter(|l| call.iter().any(|c| l.contains(c.as_str())))
            .count()
    })
}

/// Both streams of both programs broken, in runs with more than one thing
/// to say on each (the target's header, summary, self-check note and lost
/// output line; the host's live lines, report, `recorded` line and lost
/// output line): each stream gets exactly its one failed write.
#[test]
fn a_failed_standard_stream_is_not_written_again() {
    require!(have("strace"), "strace is not installed");
    let dir = Scratch::new("broken-once");
    let rec = dir.join("t.lsr");
    let mut args = vec!["-t", "2", "-l", "300", "--self-check"];
    args.extend(privilege_flags());
    let stream = format!("--stream={}", rec.display());
    args.push(&stream);
    let target = writes_to_full_streams(&bins().latscope, &args, Stdio::null(), &dir);
    assert_eq!(target, [1, 1], "latscope: writes to stdout, stderr");
    assert_complete_stream(&rec);
    let copy = dir.join("copy.lsr");
    let input = File::open(&rec).expect("the recording");
    let args = ["record", "-o", copy.to_str().unwrap()];
    let host = writes_to_full_streams(&bins().host, &args, Stdio::from(input), &dir);
    assert_eq!(
        host,
        [1, 1],
        "latscope-host record: writes to stdout, stderr"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&rec).unwrap());
}

/// `--json` holds `loops` cycles per thread.
fn assert_complete_json(json: &Path, loops: u64) {
    let doc = read_json(json);
    for t in ["0", "1"] {
        assert_eq!(doc["thread"][t]["cycles"].as_u64(), Some(loops), "{doc}");
    }
}

/// The stream ends with its bye.
fn assert_complete_stream(rec: &Path) {
    let frames = frames_of(&std::fs::read(rec).expect("stream file"));
    assert!(
        matches!(frames.last().map(|f| &f.body), Some(Body::Bye(_))),
        "no bye at the end"
    );
}

/// A whole recording of 300 cycles per thread, and a copy cut inside
/// its last frame (a run without its bye, and a warning), for the host.
fn recordings(dir: &Scratch) -> (PathBuf, PathBuf) {
    let rec = dir.join("in.lsr");
    let o = Command::new(bins().latscope)
        .args(["-t", "2", "-l", "300", "-q"])
        .args(privilege_flags())
        .arg(format!("--stream={}", rec.display()))
        .output()
        .expect("run latscope");
    assert_eq!(o.status.code(), Some(0));
    let bytes = std::fs::read(&rec).unwrap();
    let cut = dir.join("cut.lsr");
    std::fs::write(&cut, &bytes[..bytes.len() - 3]).unwrap();
    (rec, cut)
}

#[test]
fn host_report_with_broken_stderr_exits_4_and_writes_its_file() {
    let dir = Scratch::new("broken-host");
    let (whole, cut) = recordings(&dir);
    for b in BROKEN {
        let out = dir.join("r.json");
        let o = Command::new(bins().host)
            .args(["report", "--format", "json", "-o"])
            .arg(&out)
            .arg(&cut)
            .stdout(Stdio::piped())
            .stderr(b.stdio())
            .output()
            .expect("run latscope-host");
        // the cut recording is an incomplete run (1), which wins over 4;
        // what matters: no abort, and the report is whole
        assert_eq!(o.status.code(), Some(1), "stderr {b:?}: {}", o.status);
        let doc = read_json(&out);
        assert_eq!(doc["runs"][0]["threads"][0]["cycles"].as_u64(), Some(300));
        // a complete recording: success but for standard error
        let o = Command::new(bins().host)
            .args(["report", "--format", "json", "--plot"])
            .arg(dir.join("p.svg"))
            .arg(&whole)
            .stdout(Stdio::piped())
            .stderr(b.stdio())
            .output()
            .expect("run latscope-host");
        assert_lost_output(&o, &format!("report, stderr {b:?}"));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(doc["runs"][0]["threads"][0]["cycles"].as_u64(), Some(300));
        assert!(dir.join("p.svg").metadata().unwrap().len() > 1000);
    }
}

#[test]
fn host_recorder_with_broken_stderr_and_stdout_keeps_recording() {
    let dir = Scratch::new("broken-record");
    let (rec, _) = recordings(&dir);
    for b in BROKEN {
        let out = dir.join("copy.lsr");
        let mut c = Command::new(bins().host)
            .args(["record", "-o"])
            .arg(&out)
            .stdin(Stdio::piped())
            .stdout(b.stdio())
            .stderr(b.stdio())
            .spawn()
            .expect("run latscope-host");
        let input = std::fs::read(&rec).unwrap();
        let mut stdin = c.stdin.take().unwrap();
        stdin.write_all(&input).unwrap();
        drop(stdin);
        let o = Reaper::new(c).wait(Duration::from_secs(20));
        assert_lost_output(&o, &format!("record, stdout and stderr {b:?}"));
        assert_eq!(std::fs::read(&out).unwrap(), input, "{b:?}: recording");
    }
}

/// Run `cmd` with `args`, its input a pipe that stays open; it must end
/// within `limit` (it never reads or measures) with status 1 and one line
/// naming `names`.
fn fails_at_once(program: &Path, args: &[&str], names: &str) {
    let t0 = Instant::now();
    let mut c = Reaper::new(
        Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run"),
    );
    let _keep_open = c.child().stdin.take();
    let o = c.wait(Duration::from_secs(20));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "{args:?}: took {:?}, so it measured or read first",
        t0.elapsed()
    );
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 1, "{args:?}: {err}");
    assert!(lines[0].contains(names), "{args:?}: {err}");
}

#[test]
fn unwritable_outputs_stop_both_programs_before_they_start() {
    let dir = Scratch::new("unwritable");
    let missing = dir.join("no-such-folder");
    let m = |f: &str| missing.join(f).display().to_string();
    let target = bins().latscope;
    let mut run = vec!["-D", "30", "-q"];
    run.extend(privilege_flags());
    for (opt, path) in [
        ("--json", m("t.json")),
        ("--stream", m("t.lsr")),
        ("--histfile", m("h.txt")),
    ] {
        let mut args = run.clone();
        let arg = format!("{opt}={path}");
        args.push(&arg);
        if opt == "--histfile" {
            args.extend(["-h", "100"]);
        }
        fails_at_once(&target, &args, &format!("{opt} {path}"));
    }
    let host = bins().host;
    let (o, p) = (m("r.txt"), m("p.png"));
    fails_at_once(&host, &["report", "-", "-o", &o], &o);
    fails_at_once(&host, &["report", "-", "--plot", &p], &p);
    fails_at_once(&host, &["record", "-o", &o], &o);
    // a folder not even root can write in: /proc
    let l = ["record", "--listen", "127.0.0.1:0", "--out-dir", "/proc"];
    fails_at_once(&host, &l, "/proc");
}

#[test]
fn a_stream_that_delivered_nothing_is_status_4_with_count_and_reason() {
    // a port nobody listens on
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tcp = format!("--stream=tcp:127.0.0.1:{port}");
    for (stream, reason) in [
        (tcp.as_str(), "nobody accepted a connection"),
        ("--stream=/dev/full", "No space left on device"),
    ] {
        let o = Command::new(bins().latscope)
            .args(["-l", "1500", "-q", "--report-interval", "200ms", stream])
            .args(privilege_flags())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("run latscope");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(4), "{stream}: {err}");
        let line = err
            .lines()
            .find(|l| l.contains("frame(s) never delivered"))
            .unwrap_or_else(|| panic!("{stream}: no count: {err}"));
        let n: u64 = line
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .expect("a count");
        assert!(n > 0, "{line}");
        assert!(line.contains(reason), "{stream}: {line}");
    }
}
