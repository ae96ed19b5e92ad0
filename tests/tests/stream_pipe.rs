//! `latscope --stream -` piped into `latscope-host`: the recording is the
//! stream byte for byte, and the host's figures equal the target's own
//! `--json` exactly.

use std::fs;
use std::process::{Command, Stdio};
use std::time::Duration;

use latscope_testkit::host::{
    assert_matches_target, bins, first_run, host, host_report_json, read_json, record_file,
    target_args, Reaper,
};
use latscope_testkit::Scratch;

#[test]
fn pipe_record_is_byte_exact_and_matches_the_target() {
    let b = bins();
    let dir = Scratch::new("pipe");
    let json = dir.join("target.json");
    let copy = dir.join("copy.lsr");
    let rec = dir.join("rec.lsr");
    // The target writes its stream to stdout; the test keeps a copy.
    let out = Command::new(&b.latscope)
        .args(target_args("2", &json))
        .arg("--stream=-")
        .stderr(Stdio::null())
        .output()
        .expect("run latscope");
    assert!(out.status.success(), "latscope failed: {:?}", out.status);
    fs::write(&copy, &out.stdout).unwrap();
    // Record it through a real pipe.
    let mut h = Reaper::new(
        Command::new(&b.host)
            .args(["record", "-", "-q", "-o"])
            .arg(&rec)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope-host"),
    );
    {
        use std::io::Write;
        let mut stdin = h.child().stdin.take().unwrap();
        stdin.write_all(&out.stdout).unwrap();
    }
    let r = h.wait(Duration::from_secs(30));
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    assert!(r.stdout.is_empty(), "record -q wrote to stdout");
    assert_eq!(
        fs::read(&rec).unwrap(),
        out.stdout,
        "recording differs from the stream"
    );

    let target = read_json(&json);
    let (doc, code, stderr) = host_report_json(&rec);
    assert_eq!(code, 0, "{stderr}");
    assert_matches_target(first_run(&doc), &target);
    assert_eq!(doc["link"]["crc_errors"], 0);
    assert_eq!(doc["link"]["frames_lost"], 0);
}

#[test]
fn live_pipe_into_report_matches_the_target() {
    let b = bins();
    let dir = Scratch::new("livepipe");
    let json = dir.join("target.json");
    let mut t = Reaper::new(
        Command::new(&b.latscope)
            .args(target_args("2", &json))
            .arg("--stream=-")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("run latscope"),
    );
    let pipe = t.child().stdout.take().unwrap();
    let h = Command::new(&b.host)
        .args(["report", "-", "--format", "json"])
        .stdin(Stdio::from(pipe))
        .output()
        .expect("run latscope-host");
    let tr = t.wait(Duration::from_secs(30));
    assert!(tr.status.success());
    assert_eq!(
        h.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&h.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap();
    assert_matches_target(first_run(&doc), &read_json(&json));
}

#[test]
fn cyclictest_formats_agree_with_the_target() {
    let dir = Scratch::new("ctfmt");
    let json = dir.join("target.json");
    let rec = dir.join("r.lsr");
    record_file(target_args("2", &json), &rec);
    let target = read_json(&json);
    let r = host(&[
        "report",
        "-f",
        "cyclictest-json",
        &rec.display().to_string(),
    ]);
    assert_eq!(r.status.code(), Some(0));
    let ours: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
    for k in ["0", "1"] {
        for f in ["histogram", "cycles", "min", "max", "avg"] {
            assert_eq!(
                ours["thread"][k][f], target["thread"][k][f],
                "thread {k} {f}"
            );
        }
    }
    assert_eq!(ours["num_threads"], target["num_threads"]);
    // The histogram text: every row, and the summary lines.
    let r = host(&[
        "report",
        "-f",
        "cyclictest-hist",
        &rec.display().to_string(),
    ]);
    let text = String::from_utf8(r.stdout).unwrap();
    let rows = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .count();
    assert_eq!(rows, 1000);
    assert!(text.contains("# Max Latencies:"));
}
