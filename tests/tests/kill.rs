//! SIGKILL of the target mid-run: the recording decodes up to its last
//! whole frame, the host says the run was cut short and exits 1, and never
//! reports the truncation as corruption.

use std::time::Duration;

use latscope_core::wire::Body;
use latscope_testkit::host::{first_run, host, host_report_json, spawn_target};
use latscope_testkit::procs::forget_snapshot_file;
use latscope_testkit::wait::frame_in;
use latscope_testkit::Scratch;

#[test]
fn killed_target_leaves_a_decodable_recording() {
    let dir = Scratch::new("kill");
    let rec = dir.join("killed.lsr");
    let json = dir.join("t.json");
    let mut t = spawn_target("30", &json, &rec.display().to_string());
    // killed once the recording holds report 3 of both threads
    frame_in(
        &rec,
        Duration::from_secs(15),
        "report 3",
        |f| matches!(f.body, Body::Stats(s) if s.epoch >= 3 && s.thread == 1),
    );
    t.child().kill().unwrap(); // SIGKILL
    let _ = t.child().wait();
    forget_snapshot_file(t.child().id());
    let (doc, code, stderr) = host_report_json(&rec);
    assert_eq!(code, 1, "an unfinished run exits 1");
    assert!(stderr.contains("without a bye"), "{stderr}");
    assert_eq!(doc["link"]["crc_errors"], 0);
    assert_eq!(doc["link"]["malformed"], 0);
    let run = first_run(&doc);
    assert!(run["bye"].is_null());
    assert!(run["exact_epoch"].as_u64().unwrap_or(0) >= 1, "{run}");
    let cycles = run["threads"][0]["cycles"].as_u64().unwrap();
    assert!(cycles >= 1000, "only {cycles} cycles decoded");
    // A recording cut inside a frame is reported as truncated, not corrupt:
    // cut 3 bytes before the last delimiter, inside the last whole frame.
    let data = std::fs::read(&rec).unwrap();
    let last_delimiter = data.iter().rposition(|&b| b == 0).unwrap();
    let kept = &data[..last_delimiter - 3];
    let partial = kept.len() - 1 - kept.iter().rposition(|&b| b == 0).unwrap();
    assert!(partial > 0, "the cut falls on a delimiter");
    let cut = dir.join("cut.lsr");
    std::fs::write(&cut, kept).unwrap();
    let (doc2, code2, stderr2) = host_report_json(&cut);
    assert_eq!(code2, 1);
    assert_eq!(
        doc2["link"]["truncated_bytes"], partial,
        "{}: {stderr2}",
        doc2["link"]
    );
    assert!(
        stderr2.contains(&format!(
            "truncated: the input ends inside a frame ({partial} bytes)"
        )),
        "{stderr2}"
    );
    assert_eq!(doc2["link"]["crc_errors"], 0);
    // The text report still shows what decoded.
    let r = host(&["report", &rec.display().to_string()]);
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(text.contains("no bye"), "{text}");
    assert!(text.contains("T0"), "{text}");
}
