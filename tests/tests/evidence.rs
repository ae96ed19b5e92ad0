//! Evidence a kernel developer can open: `latscope --trace-out DIR` writes
//! the window of each thread's worst explained spike of a report interval
//! as a trace.dat. Under a burster of known pid, Debian's `trace-cmd
//! report` opens every file and lists the window's events, the burster's
//! `sched_switch` is inside the window of each spike blamed on it, and
//! `latscope-host explain` on the file gives what the target said of the
//! same spike in its stream. The limits hold, and a full disk (a small
//! tmpfs) is counted, not fatal.
//!
//! An `rt` test: it needs root (real-time priorities, tracefs, a tmpfs
//! mount) and two CPUs.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use latscope_core::explain::{Attribution, CauseKind, Culprit};
use latscope_core::wire::Body;
use latscope_testkit::disturb::Burster;
use latscope_testkit::host::{
    bins, decode_frames, listening_host_anywhere, read_json, serial_host, Pty, Reaper, Relay,
};
use latscope_testkit::precondition::{have, is_root, tracefs};
use latscope_testkit::{require, Scratch};
use serde_json::Value;

/// Spikes explained from here (µs): the burster's bursts are longer.
const EXPLAIN_US: &str = "200";

/// The burster: bursts of 1.5 to 2.25 ms (longer than this machine's own
/// worst, so that they make most intervals' worst spike), 100 a second on
/// average, at a priority above latscope's 80 (its seconds follow).
const BURST: [&str; 3] = ["95", "1500", "10000"];

/// Preconditions of every test here; false if one is missing (said).
fn ready() -> bool {
    let root = is_root();
    let traced = tracefs().is_some();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    let tc = have("trace-cmd");
    for (ok, what) in [
        (root, "root (SCHED_FIFO, tracefs, a tmpfs mount)"),
        (traced, "tracefs with instances (--explain)"),
        (cpus, "two CPUs (the burster and latscope on one)"),
        (tc, "trace-cmd (Debian's trace-cmd package)"),
    ] {
        if !ok {
            latscope_testkit::precondition::missing(what);
            return false;
        }
    }
    true
}

/// latscope for `secs` on CPU 0 beside the burster, with `--explain`,
/// `--trace-out dir`, `--stream` to a file and `extra`; its output, its
/// `--json`, the stream's explanations by cycle, and the burster's pid.
fn run(scratch: &Scratch, dir: &Path, secs: u32, extra: &[&str]) -> Run {
    let stream = scratch.join("t.lsr");
    let mut r = run_to(scratch, dir, secs, extra, &stream.display().to_string());
    r.read_explanations(&stream);
    r
}

/// [`run`] with `--stream=stream`, the stream not read here.
fn run_to(scratch: &Scratch, dir: &Path, secs: u32, extra: &[&str], stream: &str) -> Run {
    let json = scratch.join("t.json");
    let log = scratch.join("bursts");
    // the burster lasts the run and a second: the test waits for both
    let burst_secs = (secs + 1).to_string();
    let args = [BURST[0], BURST[1], BURST[2], &burst_secs];
    let (mut burst, mut burst_out, pid) =
        Burster::start(env!("CARGO_BIN_EXE_burster"), &args, &log);
    let t = Command::new(bins().latscope)
        .args(["-t", "1", "-a", "0", "-i", "1000", "-p", "80", "-q"])
        .args(["-D", &format!("{secs}s"), "--explain", EXPLAIN_US])
        .arg(format!("--trace-out={}", dir.display()))
        .args(extra)
        .arg(format!("--json={}", json.display()))
        .arg(format!("--stream={stream}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run latscope");
    let out = Reaper::new(t).wait(Duration::from_secs(90));
    let mut last = String::new();
    burst_out.read_line(&mut last).expect("the burster's end");
    let b = burst.wait(Duration::from_secs(30));
    assert!(b.status.success(), "the burster failed: {last}");
    Run {
        json: read_json(&json),
        out,
        explained: BTreeMap::new(),
        pid,
    }
}

struct Run {
    json: Value,
    out: Output,
    explained: BTreeMap<u64, Attribution>,
    pid: u32,
}

impl Run {
    /// The explanations of the recording (or stream) `rec`, by cycle.
    fn read_explanations(&mut self, rec: &Path) {
        let bytes = std::fs::read(rec).expect("the stream");
        for f in decode_frames(&bytes).0 {
            if let Body::Explain(a) = f.body {
                self.explained.insert(a.cycle, a);
            }
        }
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }

    /// `--json`'s `trace_out` count `k`.
    fn count(&self, k: &str) -> u64 {
        let t = &self.json["latscope"]["trace_out"];
        t[k].as_u64()
            .unwrap_or_else(|| panic!("trace_out {k}: {t}"))
    }

    fn files(&self) -> Vec<String> {
        let t = &self.json["latscope"]["trace_out"]["files"];
        let files = t.as_array().unwrap_or_else(|| panic!("files: {t}"));
        files
            .iter()
            .map(|f| f.as_str().expect("a name").to_string())
            .collect()
    }
}

/// `trace-cmd report FILE`'s event lines: (time in µs, line).
fn trace_cmd_report(file: &Path) -> Vec<(u64, String)> {
    let out = Command::new("trace-cmd")
        .arg("report")
        .arg(file)
        .output()
        .expect("run trace-cmd");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "trace-cmd report {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    text.lines()
        .filter_map(|l| {
            let ts = l.split_whitespace().nth(2)?.strip_suffix(':')?;
            let (s, us) = ts.split_once('.')?;
            Some((
                s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?,
                l.to_string(),
            ))
        })
        .collect()
}

/// `latscope-host explain FILE --json`.
fn host_explain(file: &Path) -> Value {
    let out = Command::new(bins().host)
        .arg("explain")
        .arg(file)
        .arg("--json")
        .output()
        .expect("run latscope-host explain");
    assert!(
        out.status.success(),
        "latscope-host explain {}: {}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("explain's JSON")
}

/// The culprit of an explanation's largest line.
fn top_of(a: &Attribution) -> Culprit {
    let c = a.causes.iter().max_by_key(|c| c.ns).expect("a cause");
    c.culprit.clone()
}

/// A small tmpfs, unmounted on drop (a failed assertion leaves none).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "evidence"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(ok.success(), "mount a {size} tmpfs at {}", dir.display());
        Tmpfs(dir.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn each_worst_spikes_window_opens_in_trace_cmd_and_explains_again_the_same() {
    require!(ready(), "see above");
    let scratch = Scratch::new("evidence");
    let dir = scratch.join("out");
    let hosts = scratch.join("host");
    let (mut host, listen) = listening_host_anywhere(&hosts);
    let tcp = format!("tcp:{listen}");
    let mut r = run_to(&scratch, &dir, 5, &["--trace-out-stream"], &tcp);
    assert!(r.out.status.success(), "latscope: {}", r.stderr());
    let h = host.wait(Duration::from_secs(30));
    assert!(
        h.status.success(),
        "the host: {}",
        String::from_utf8_lossy(&h.stderr)
    );
    let (rec, evidence) = recording_in(&hosts);
    r.read_explanations(&rec);
    the_recorder_wrote_each_window_as_the_target_did(&r, &dir, &rec, &evidence);
    let files = r.files();
    // one window per report interval (1 s), each of the worst explained
    assert!(files.len() >= 4, "{files:?}: {}", r.stderr());
    assert_eq!(r.count("written"), files.len() as u64);
    assert_eq!(r.count("not_written"), 0, "{}", r.json["latscope"]);
    assert!(r.stderr().contains(&format!(
        "# trace-out: {} window(s) written to {}",
        files.len(),
        dir.display()
    )));
    let mut blamed = 0;
    let mut tops = Vec::new();
    for name in &files {
        let dat = dir.join(name);
        let side: Value = read_json(&dat.with_extension("json"));
        let cycle = side["cycle"].as_u64().expect("cycle");
        let (from, to) = (
            side["deadline_ns"].as_u64().unwrap(),
            side["wake_ns"].as_u64().unwrap(),
        );
        let a = r
            .explained
            .get(&cycle)
            .unwrap_or_else(|| panic!("{name}: cycle {cycle} not explained in the stream"));
        assert_eq!(a.deadline_ns, from, "{name}");
        // trace-cmd opens it and lists the window's events: from the
        // lead before the deadline (1 ms, longer than a burst) to the
        // wake-up
        let events = trace_cmd_report(&dat);
        let inside: Vec<&String> = events
            .iter()
            .filter(|(us, _)| *us + 1_000 >= from / 1000 && *us <= to / 1000 + 1)
            .map(|(_, l)| l)
            .collect();
        assert!(!inside.is_empty(), "{name}: no events in the window");
        // the burster's pid is in the switches of a window blamed on it
        let top = top_of(a);
        tops.push(top.clone());
        if matches!(&top, Culprit::Task(t) if t.pid == r.pid) {
            blamed += 1;
            let burster = format!("burster:{} ", r.pid);
            assert!(
                inside
                    .iter()
                    .any(|l| l.contains("sched_switch:") && l.contains(&burster)),
                "{name}: the burster is in no switch of the window: {inside:#?}"
            );
        }
        // the host explains the file as the target explained the spike
        let host = host_explain(&dat);
        let causes = host["causes"].as_array().expect("causes");
        let host_top = causes
            .iter()
            .max_by_key(|c| c["ns"].as_u64())
            .expect("a cause");
        let host_top: Culprit =
            serde_json::from_value(host_top["culprit"].clone()).expect("a culprit");
        // the same cause, named the same (a priority only one side's
        // pages showed aside)
        assert!(
            host_top.same(&top) && host_top.label() == top.label(),
            "{name}: {host_top:?} vs {top:?}: {host}"
        );
        assert_eq!(
            host["total_ns"].as_u64(),
            Some(a.total_ns()),
            "{name}: {host}"
        );
        assert_eq!(host["cycle"].as_u64(), Some(cycle));
    }
    assert!(
        blamed >= 1,
        "no window blamed on the burster (pid {}): {tops:?}",
        r.pid
    );
    // the untraced kinds never hide the burster
    assert!(r
        .explained
        .values()
        .any(|a| a.causes.iter().any(|c| c.kind() == CauseKind::Task)));
}

#[test]
fn the_file_limit_holds_and_what_is_over_it_is_counted() {
    require!(ready(), "see above");
    let scratch = Scratch::new("evidence-limit");
    let dir = scratch.join("out");
    let r = run(&scratch, &dir, 3, &["--trace-out-limit", "2,256"]);
    assert!(
        r.out.status.success(),
        "over the limit is no loss: {}",
        r.stderr()
    );
    assert_eq!(r.count("written"), 2, "{}", r.json["latscope"]);
    assert!(r.count("limit") >= 1, "{}", r.json["latscope"]);
    let on_disk = std::fs::read_dir(&dir).expect("the directory").count();
    assert_eq!(on_disk, 4, "two trace.dat files and their sidecars");
}

#[test]
fn a_full_disk_is_counted_and_the_run_goes_on() {
    require!(ready(), "see above");
    let scratch = Scratch::new("evidence-full");
    let dir = scratch.join("small");
    std::fs::create_dir(&dir).expect("mkdir");
    // room for one window (about 20 KiB with its sidecar) at most
    let _small = Tmpfs::mount(&dir, "24k");
    let r = run(&scratch, &dir, 3, &[]);
    // output was lost: exit status 4, and the measurement whole
    assert_eq!(r.out.status.code(), Some(4), "{}", r.stderr());
    assert!(r.count("disk_full") >= 1, "{}", r.json["latscope"]);
    assert!(r.count("written") <= 1, "{}", r.json["latscope"]);
    let cycles = r.json["thread"]["0"]["cycles"].as_u64().unwrap_or(0);
    assert!(cycles >= 2_500, "the run went on: {cycles} cycles");
    assert!(r.stderr().contains("with the disk full"), "{}", r.stderr());
}

/// The trace.dat files (`latscope-*.dat`) in `dir`, by name.
fn dat_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".dat"))
                .map(|n| {
                    let bytes = std::fs::read(dir.join(&n)).expect("read a trace.dat");
                    (n, bytes)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The recording a listening host wrote into `out`, and its evidence
/// directory.
fn recording_in(out: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let rec = std::fs::read_dir(out)
        .expect("the host's directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "lsr"))
        .expect("a recording");
    let mut ev = rec.clone().into_os_string();
    ev.push(".evidence");
    (rec, ev.into())
}

/// Over TCP (`--trace-out-stream`), every window reached the recorder,
/// which wrote it beside the recording `rec` (in `evidence`) byte for byte
/// as the target wrote it to its own `dir`; trace-cmd opens them, and the
/// report says they came whole.
fn the_recorder_wrote_each_window_as_the_target_did(
    r: &Run,
    dir: &Path,
    rec: &Path,
    evidence: &Path,
) {
    let targets = dat_files(dir);
    let recorded = dat_files(evidence);
    assert_eq!(
        r.count("streamed"),
        targets.len() as u64,
        "{}",
        r.json["latscope"]
    );
    assert_eq!(r.count("not_streamed"), 0);
    assert_eq!(
        recorded.keys().collect::<Vec<_>>(),
        targets.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &targets {
        assert!(recorded[name] == *bytes, "{name} differs");
        let side = evidence.join(name).with_extension("json");
        let target_side = dir.join(name).with_extension("json");
        assert_eq!(
            read_json(&side),
            read_json(&target_side),
            "{name}'s sidecar"
        );
    }
    let report = Command::new(bins().host)
        .arg("report")
        .arg(rec)
        .output()
        .expect("run the report");
    let text = String::from_utf8_lossy(&report.stdout);
    let whole = format!(
        "evidence in the stream: {} window(s) whole, 0 not",
        targets.len()
    );
    assert!(text.contains(&whole), "{text}");
    assert!(
        text.contains("      evidence: latscope-t0-cpu0-c"),
        "{text}"
    );
}

/// On a serial line, windows go within their share (5 %, out of the
/// spikes' 25 %): reports keep coming at least every 3 s, and a window
/// arrives whole, which trace-cmd opens.
#[test]
fn over_serial_windows_keep_to_their_share_and_reports_to_their_schedule() {
    require!(ready(), "see above");
    let scratch = Scratch::new("evidence-serial");
    let dir = scratch.join("out");
    // a line of 921600 baud, paced as it would carry
    let target_side = Pty::open().expect("pty");
    let host_side = Pty::open().expect("pty");
    let relay = Relay::start(
        target_side.master.try_clone().unwrap(),
        host_side.master.try_clone().unwrap(),
        92_160,
        0.0,
        0.0,
        1,
    );
    let rec = scratch.join("serial.lsr");
    let mut host = serial_host(&host_side.slave_path, &rec);
    let stream = format!("serial:{}:921600", target_side.slave_path.display());
    let r = run_to(&scratch, &dir, 8, &["--trace-out-stream"], &stream);
    assert!(r.out.status.success(), "latscope: {}", r.stderr());
    let h = host.wait(Duration::from_secs(30));
    assert!(
        h.status.success(),
        "the host: {}",
        String::from_utf8_lossy(&h.stderr)
    );
    drop(relay);
    let streamed = r.count("streamed");
    assert!(
        streamed >= 1,
        "no window went whole: {}",
        r.json["latscope"]
    );
    // every window taken was streamed or counted
    assert_eq!(
        streamed + r.count("not_streamed"),
        r.count("written") + r.count("queue_full") + r.count("disk_full") + r.count("failed"),
        "{}",
        r.json["latscope"]
    );
    let mut ev = rec.clone().into_os_string();
    ev.push(".evidence");
    let recorded = dat_files(Path::new(&ev));
    assert_eq!(recorded.len() as u64, streamed, "{:?}", recorded.keys());
    for (name, bytes) in &recorded {
        assert_eq!(Some(bytes), dat_files(&dir).get(name), "{name} differs");
        assert!(!trace_cmd_report(&Path::new(&ev).join(name)).is_empty());
    }
    // a report at least every 3 s
    let bytes = std::fs::read(&rec).expect("the recording");
    let mut at = 0;
    let mut parts = 0;
    for f in decode_frames(&bytes).0 {
        match f.body {
            Body::Stats(st) if st.thread == 0 && !st.last_report => {
                assert!(
                    st.elapsed_ns - at <= 3_000_000_000,
                    "no report for {} ms",
                    (st.elapsed_ns - at) / 1_000_000
                );
                at = st.elapsed_ns;
            }
            Body::EvidencePart(_) => parts += 1,
            _ => {}
        }
    }
    assert!(parts > 0);
    assert!(
        8_000_000_000u64.saturating_sub(at) <= 3_000_000_000,
        "the reports stopped at {at} ns"
    );
}
