//! A serial line stood in for by two pty pairs and a relay that paces
//! bytes at 115200 baud (11,520 B/s): the default stream fits the line and
//! the host's figures equal the target's. The same relay made noisy (bit
//! flips and dropped bytes) shows recovery, and at 1e-3 no panic.

use std::sync::atomic::Ordering;
use std::time::Duration;

use latscope_testkit::host::{
    assert_matches_target, first_run, host_report_json, read_json, serial_host, spawn_target, Pty,
    Relay,
};
use latscope_testkit::Scratch;

const LINE_RATE: u64 = 11_520;

struct Line {
    target_side: Pty,
    host_side: Pty,
    relay: Relay,
}

fn line(flip: f64, drop: f64, seed: u64) -> Line {
    let target_side = Pty::open().expect("pty");
    let host_side = Pty::open().expect("pty");
    let relay = Relay::start(
        target_side.master.try_clone().unwrap(),
        host_side.master.try_clone().unwrap(),
        LINE_RATE,
        flip,
        drop,
        seed,
    );
    Line {
        target_side,
        host_side,
        relay,
    }
}

/// Run the target over the line for `secs` seconds; returns the target's
/// JSON path and the recording path.
fn run_over_line(dir: &Scratch, l: &Line, secs: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let json = dir.join("t.json");
    let rec = dir.join("serial.lsr");
    let mut h = serial_host(&l.host_side.slave_path, &rec);
    let stream = format!("serial:{}:115200", l.target_side.slave_path.display());
    let mut t = spawn_target(secs, &json, &stream);
    assert!(t.wait(Duration::from_secs(60)).status.success());
    // The host stops at the bye; on a lossy line the bye may be lost (a
    // serial line has no end of file), so give it time, then stop it.
    let deadline = std::time::Instant::now() + Duration::from_secs(6);
    let mut stopped = false;
    loop {
        if h.child().try_wait().unwrap().is_some() {
            break;
        }
        if std::time::Instant::now() > deadline {
            let _ = h.child().kill();
            stopped = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let r = h.wait(Duration::from_secs(5));
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(!stderr.contains("panicked"), "host panicked: {stderr}");
    assert!(
        stopped || r.status.code().is_some(),
        "host died by a signal: {stderr}"
    );
    (json, rec)
}

#[test]
fn paced_serial_line_carries_an_exact_run() {
    let dir = Scratch::new("serial");
    let l = line(0.0, 0.0, 1);
    let (json, rec) = run_over_line(&dir, &l, "4");
    let bytes = std::fs::metadata(&rec).unwrap().len();
    // 2 threads at 1 kHz with 1 s reports must fit the line with room.
    assert!(
        bytes < 4 * LINE_RATE,
        "{bytes} bytes in 4 s do not fit 115200 baud"
    );
    let (doc, code, stderr) = host_report_json(&rec);
    assert_eq!(code, 0, "{stderr}");
    assert_matches_target(first_run(&doc), &read_json(&json));
    assert_eq!(l.relay.stats.bytes.load(Ordering::Relaxed), bytes);
}

#[test]
fn noisy_serial_line_recovers_and_counts() {
    for (flip, drop, seed) in [(1e-4, 1e-5, 7), (1e-3, 1e-4, 8)] {
        let dir = Scratch::new("noisy");
        let l = line(flip, drop, seed);
        let (json, rec) = run_over_line(&dir, &l, "4");
        let flipped = l.relay.stats.flipped.load(Ordering::Relaxed)
            + l.relay.stats.dropped.load(Ordering::Relaxed);
        let (doc, code, stderr) = host_report_json(&rec);
        assert!(code == 0 || code == 1, "{stderr}");
        let link = &doc["link"];
        let errors = link["crc_errors"].as_u64().unwrap()
            + link["oversize"].as_u64().unwrap()
            + link["seq_gaps"].as_u64().unwrap()
            // A hit before the first delimiter shows as skipped bytes.
            + link["bytes_skipped"].as_u64().unwrap();
        if flipped > 0 {
            assert!(errors > 0, "{flipped} hits, no link error counted: {link}");
        }
        let run = first_run(&doc);
        assert!(run.is_object(), "no run decoded at flip {flip}: {doc}");
        if run["hello_lost"] == true {
            // a damaged hello is never shown as the target's configuration
            assert!(run["target"].is_null() && run["config"].is_null(), "{run}");
            assert!(
                doc["warnings"]
                    .to_string()
                    .contains("hello frame was never decoded"),
                "{doc}"
            );
        } else {
            assert!(run["target"].is_object(), "{run}");
        }
        if run["exact_at_end"] == true {
            // Every figure the host calls exact is the target's.
            assert_matches_target(run, &read_json(&json));
        } else {
            assert!(stderr.contains("warning") || code == 1);
        }
    }
}
