//! One run, one recording; boards told apart. Real `latscope` processes
//! stream over TCP on loopback into real recorders:
//! - a recorder killed mid-run and restarted on the same directory: the
//!   target resumes, the run stays in one recording, nothing is lost and
//!   the recording equals the target's own `--json`;
//! - a recorder away long enough for the target's resend buffer to
//!   overflow: still one recording, and the frames the target counts as
//!   not delivered equal the recorder's sequence gaps;
//! - two boards with one name: two recordings and two series apart by run
//!   id, and a warning; a board without `--name` is called by its host name
//!   and a hash, never its machine-id.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use latscope_testkit::fleet::{drain, Recorder};
use latscope_testkit::host::{
    assert_matches_target, bins, first_run, host_report_json, only_recording, read_json,
    recordings, target_args, Reaper,
};
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;

const T: Duration = Duration::from_secs(20);

/// A target with [`target_args`] plus `extra`, streaming to `addr`.
fn target(secs: &str, json: &Path, addr: &str, extra: &[&str]) -> Reaper {
    Reaper::new(
        Command::new(bins().latscope)
            .args(target_args(secs, json))
            .args(extra)
            .arg(format!("--stream=tcp:{addr}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run latscope"),
    )
}

/// Start a recorder on `listen` that ends after one run, its frames
/// flowing (the recording grows).
fn recorder_on(listen: &str, out: &Path) -> Recorder {
    Recorder::start_on(listen, out, &["-q", "--exit-after", "1"])
}

fn grows(out: &Path) -> impl FnMut() -> bool + '_ {
    let mut last = 0;
    move || {
        let size = recordings(out)
            .first()
            .and_then(|p| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        let grew = last > 0 && size > last;
        last = size.max(last);
        grew
    }
}

/// A target with `extra` streams into a recorder; once the recording
/// grows the recorder is killed (SIGKILL), nobody listens for `away`, and
/// another recorder takes the same address and directory. Both end, the
/// target with exit status `status` (4: frames of its stream were never
/// delivered), the second recorder and the report of the recording with
/// `verdict` (1: frames were lost); the one recording's report, the
/// target's `--json`, the second recorder's stderr.
fn across_a_restart(
    tag: &str,
    secs: &str,
    (extra, status, verdict): (&[&str], i32, i32),
    away: Duration,
) -> (Value, Value, String) {
    let dir = Scratch::new(tag);
    let out = dir.join("rec");
    let mut h1 = Recorder::start(&out, &["-q"]);
    let listen = h1.addr.clone();
    let json = dir.join("t.json");
    let mut t = target(secs, &json, &listen, extra);
    holds(T, "the recording grows", grows(&out));
    h1.proc.child().kill().unwrap();
    let _ = h1.proc.wait(T);
    if !away.is_zero() {
        // The disturbance itself: the recorder is away.
        std::thread::sleep(away);
    }
    let mut h2 = recorder_on(&listen, &out);
    let tr = t.wait(Duration::from_secs(60));
    assert_eq!(tr.status.code(), Some(status), "target");
    assert_eq!(
        h2.proc.wait(T).status.code(),
        Some(verdict),
        "second recorder"
    );
    let lines = drain(&h2.stderr, T).join("\n");
    let (doc, code, err) = host_report_json(&only_recording(&out));
    assert_eq!(code, verdict, "{err}");
    (doc, read_json(&json), lines)
}

#[test]
fn a_recorder_killed_and_restarted_keeps_the_run_in_one_exact_recording() {
    let extra = ["--name", "restart-1"];
    let (doc, target, lines) =
        across_a_restart("fleet-restart", "8", (&extra, 0, 0), Duration::ZERO);
    assert!(lines.contains("resumes"), "{lines}");
    assert_eq!(doc["link"]["frames_lost"], 0, "{}", doc["link"]);
    assert_eq!(doc["link"]["crc_errors"], 0);
    assert_eq!(doc["link"]["restarts"], 0, "{}", doc["link"]);
    let run = first_run(&doc);
    assert_eq!(run["bye"]["frames_dropped"], 0);
    assert_matches_target(run, &target);
}

#[test]
fn frames_that_overflow_the_resend_buffer_are_counted_alike_by_target_and_recorder() {
    // Every sample above 1 µs is a frame: about 4000 frames (120 KB) a
    // second, so the 512 KiB buffer overflows while the recorder is away.
    let extra = ["--name", "overflow-1", "-i", "500", "--spike", "1"];
    let away = Duration::from_secs(8);
    // the frames that overflowed were never delivered: exit status 4 for
    // the target, 1 for the recorder and the report (something was lost)
    let (doc, _, lines) = across_a_restart("fleet-overflow", "16", (&extra, 4, 1), away);
    assert!(
        lines.contains("incomplete: ") && lines.contains("frame(s) lost"),
        "{lines}"
    );
    let run = first_run(&doc);
    let lost = doc["link"]["frames_lost"].as_u64().unwrap();
    assert!(lost > 0, "the buffer overflowed: {}", doc["link"]);
    assert_eq!(
        run["bye"]["frames_dropped"].as_u64(),
        Some(lost),
        "target and recorder agree"
    );
    assert_eq!(
        run["exact_at_end"], true,
        "a snapshot made the histogram whole again"
    );
    assert_eq!(run["complete"], false, "{}", run["incomplete"]);
}

fn board_lines(metrics: &str) -> Vec<String> {
    metrics
        .lines()
        .filter(|l| l.starts_with("latscope_connected{"))
        .map(String::from)
        .collect()
}

#[test]
fn boards_sharing_a_name_are_told_apart_by_run_and_warned_about() {
    let dir = Scratch::new("fleet-names");
    let out = dir.join("rec");
    let mut r = Recorder::start(&out, &["-q", "--exit-after", "3"]);
    let mut ts: Vec<Reaper> = (0..2)
        .map(|i| {
            target(
                "3",
                &dir.join(format!("t{i}.json")),
                &r.addr,
                &["--name", "twin"],
            )
        })
        .collect();
    let mut anon = target("3", &dir.join("anon.json"), &r.addr, &[]);
    holds(T, "three boards stream", || {
        board_lines(&r.metrics()).len() == 3
    });
    let lines = board_lines(&r.metrics());
    let twins: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("board=\"twin\""))
        .collect();
    assert_eq!(twins.len(), 2, "{lines:?}");
    assert_ne!(twins[0].split("run=").nth(1), twins[1].split("run=").nth(1));
    // The unnamed board: host name, '-', 6 hex digits of a keyed hash.
    let host = read_json_when(&dir.join("anon.json"), &mut anon);
    let anon_line = lines
        .iter()
        .find(|l| !l.contains("board=\"twin\""))
        .unwrap();
    let board = anon_line
        .split("board=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let (name, hash) = board.rsplit_once('-').expect("NAME-HASH");
    assert_eq!(name, host);
    assert!(
        hash.len() == 6 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{board}"
    );
    if let Ok(id) = std::fs::read_to_string("/etc/machine-id") {
        let id = id.trim();
        assert!(
            !id.is_empty() && !r.metrics().contains(id),
            "the machine-id leaked"
        );
    }
    for t in &mut ts {
        assert!(t.wait(T).status.success());
    }
    assert_eq!(r.proc.wait(T).status.code(), Some(0));
    let warned = drain(&r.stderr, T).join("\n");
    assert!(warned.contains("board name twin of run"), "{warned}");
    assert_eq!(recordings(&out).len(), 3);
    assert_eq!(
        recordings(&out)
            .iter()
            .filter(|p| p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("twin-"))
            .count(),
        2
    );
}

/// The host name from a finished target's `--json`.
fn read_json_when(json: &Path, t: &mut Reaper) -> String {
    assert!(t.wait(T).status.success());
    read_json(json)["sysinfo"]["nodename"]
        .as_str()
        .expect("nodename")
        .to_string()
}
