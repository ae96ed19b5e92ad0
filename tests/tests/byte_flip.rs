//! Honest verdicts under damage: one byte of a real recording flipped at a
//! sample of positions (every frame kind, the hello and the bye among
//! them), each flipped recording reported by `latscope-host report` in
//! parallel. No report exits 0 with a figure that differs from the
//! target's own `--json`: a run that exits 0 has exactly the undamaged
//! recording's runs (figures, spike records, explanations), and those
//! equal the target's; every other exits 1 and says `complete: false`.
//! `--format cyclictest-json`'s `return_code`, the CSV's `complete`
//! column, `compare` and `record` agree with the exit status.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::Value;

use latscope_testkit::host::{
    assert_matches_target, bins, first_run, host_report_json, read_json, rng,
};
use latscope_testkit::Scratch;

/// Flipped positions tried (the recording is ~15 KB).
const SAMPLES: usize = 240;
/// Reports run at once.
const PARALLEL: usize = 4;

/// A 3 s, 2-thread run with `--spike` records, recorded to a file, and
/// the target's own `--json`.
fn recording(dir: &Scratch) -> (Vec<u8>, Value) {
    let rec = dir.join("r.lsr");
    let json = dir.join("t.json");
    let st = Command::new(bins().latscope)
        .args([
            "-t", "2", "-a", "0,1", "-i", "1000", "-d", "0", "-h", "1000",
        ])
        .args(["-l", "3000", "-q", "--best-effort", "--spike", "30"])
        .arg(format!("--json={}", json.display()))
        .arg(format!("--stream={}", rec.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run latscope");
    assert!(st.success(), "latscope {st}");
    (std::fs::read(&rec).expect("recording"), read_json(&json))
}

/// `report --format F FILE`: stdout and exit status.
fn report(format: &str, file: &Path) -> (String, i32) {
    let out = Command::new(bins().host)
        .args(["report", "--format", format])
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .expect("run latscope-host");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// What one flipped recording came to.
#[derive(Debug)]
enum Verdict {
    /// Exit 0, its runs equal to the undamaged recording's.
    Whole,
    /// Exit 1, incomplete.
    Incomplete,
}

/// `latscope-host ARGS`'s exit status.
fn status(args: &[&std::ffi::OsStr]) -> i32 {
    Command::new(bins().host)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("run latscope-host")
        .code()
        .unwrap_or(-1)
}

fn check_one(path: &Path, clean: &Value, at: usize, deep: bool) -> Verdict {
    let (doc, code, stderr) = host_report_json(path);
    match code {
        0 => {
            assert_eq!(
                doc["runs"], clean["runs"],
                "flip at {at}: exit 0 with figures that differ; stderr: {stderr}"
            );
            Verdict::Whole
        }
        1 => {
            if let Some(runs) = doc["runs"].as_array() {
                assert!(
                    runs.iter().any(|r| r["complete"] == Value::Bool(false)) || runs.is_empty(),
                    "flip at {at}: exit 1 but every run complete: {stderr}"
                );
            }
            assert!(
                stderr.contains("incomplete") || doc["runs"].as_array().is_none_or(Vec::is_empty),
                "flip at {at}: exit 1 without saying why: {stderr}"
            );
            if deep {
                let (ct, ct_code) = report("cyclictest-json", path);
                assert_eq!(ct_code, 1, "flip at {at}: cyclictest-json");
                let ct: Value = serde_json::from_str(&ct).unwrap_or(Value::Null);
                let codes: Vec<&Value> = match &ct {
                    Value::Array(a) => a.iter().map(|d| &d["return_code"]).collect(),
                    d => vec![&d["return_code"]],
                };
                assert!(
                    codes.iter().any(|c| c.as_i64() == Some(1)) || ct.is_null(),
                    "flip at {at}: return_code {codes:?}"
                );
                let (csv, _) = report("csv", path);
                let mut rows = csv.lines();
                assert!(rows.next().is_some_and(|h| h.ends_with(",complete")));
                let complete: Vec<&str> = rows.filter_map(|r| r.rsplit(',').next()).collect();
                assert!(
                    complete.iter().all(|c| *c == "true" || *c == "false"),
                    "flip at {at}: {complete:?}"
                );
                let clean_path = path.with_file_name("clean.lsr");
                let cmp = status(&["compare".as_ref(), clean_path.as_os_str(), path.as_os_str()]);
                assert_eq!(cmp, 1, "flip at {at}: compare");
                let copy = path.with_extension("rec.lsr");
                let rec = status(&[
                    "record".as_ref(),
                    "-q".as_ref(),
                    "-o".as_ref(),
                    copy.as_os_str(),
                    path.as_os_str(),
                ]);
                assert_eq!(rec, 1, "flip at {at}: record");
            }
            Verdict::Incomplete
        }
        other => panic!("flip at {at}: exit {other}; stderr: {stderr}"),
    }
}

#[test]
fn no_flipped_byte_yields_exit_0_with_other_figures() {
    let dir = Scratch::new("byte-flip");
    let (bytes, target) = recording(&dir);
    let clean_path = dir.join("clean.lsr");
    std::fs::write(&clean_path, &bytes).expect("write");
    let (clean, code, err) = host_report_json(&clean_path);
    assert_eq!(code, 0, "the undamaged recording: {err}");
    let run = first_run(&clean);
    assert_matches_target(run, &target);
    assert_eq!(run["complete"], Value::Bool(true), "{run}");
    let spikes = run["spikes"].as_array().map_or(0, Vec::len);
    assert!(spikes > 0, "the run has spike records to lose");
    // the sample: the first and last bytes, then positions spread over the
    // whole recording, each at a seeded offset within its stride
    let mut next = rng(0x5eed_f11b);
    let stride = bytes.len() / SAMPLES;
    let mut positions: Vec<usize> = vec![0, 1, bytes.len() - 2, bytes.len() - 1];
    positions.extend((0..SAMPLES).map(|k| k * stride + (next() as usize) % stride.max(1)));
    let positions = Mutex::new(positions);
    let (whole, incomplete) = (AtomicUsize::new(0), AtomicUsize::new(0));
    std::thread::scope(|s| {
        for w in 0..PARALLEL {
            let (dir, bytes, clean) = (&dir, &bytes, &clean);
            let (positions, whole, incomplete) = (&positions, &whole, &incomplete);
            s.spawn(move || {
                let path: PathBuf = dir.join(format!("flip-{w}.lsr"));
                loop {
                    let Some(at) = positions.lock().expect("positions").pop() else {
                        return;
                    };
                    let mut b = bytes.clone();
                    b[at] ^= 0x5a;
                    std::fs::write(&path, &b).expect("write");
                    match check_one(&path, clean, at, at % 16 == 0) {
                        Verdict::Whole => whole.fetch_add(1, Ordering::Relaxed),
                        Verdict::Incomplete => incomplete.fetch_add(1, Ordering::Relaxed),
                    };
                }
            });
        }
    });
    let (whole, incomplete) = (whole.into_inner(), incomplete.into_inner());
    eprintln!(
        "{} bytes, {whole} flips whole, {incomplete} incomplete",
        bytes.len()
    );
    // the damage was seen: flipped frames fail their check
    assert!(
        incomplete >= SAMPLES / 2,
        "{whole} whole, {incomplete} incomplete"
    );
}
