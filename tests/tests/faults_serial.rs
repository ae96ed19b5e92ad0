//! A serial adapter unplugged and plugged back: `record --serial PATH`
//! reads through a symlink (as `/dev/serial/by-id/...`) to a pty; the test
//! closes the pty's master (the recorder's reads fail), removes the link,
//! then points it at a new pty. The recorder waits, says so, reopens, and
//! the run goes on in the same recording; a serial line has no acks, so
//! the recorder alone counts the frames lost meanwhile, from the sequence
//! gaps, and that count is the truth.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use latscope_testkit::faults::verdict;
use latscope_testkit::fleet::drain;
use latscope_testkit::host::{
    bins, host_report_json, read_json, stderr_lines, target_args, wait_for_line, Pty, Reaper,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;

/// The frames a relay read from the target, passed on, and dropped while
/// unplugged.
#[derive(Default)]
struct Count {
    read: AtomicU64,
    passed: AtomicU64,
    dropped: AtomicU64,
}

/// Whole frames from `from` to whatever pty `to` holds (none: unplugged,
/// the frame is dropped).
fn relay(
    mut from: impl Read + Send + 'static,
    to: Arc<Mutex<Option<Pty>>>,
    count: Arc<Count>,
) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut frame = Vec::new();
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            for &b in &buf[..n] {
                if b != 0 {
                    frame.push(b);
                    continue;
                }
                if frame.is_empty() {
                    continue;
                }
                count.read.fetch_add(1, Ordering::Relaxed);
                let mut g = to.lock().expect("pty");
                let ok = g.as_mut().is_some_and(|p| {
                    p.master
                        .write_all(&[0])
                        .and_then(|()| p.master.write_all(&frame))
                        .and_then(|()| p.master.write_all(&[0]))
                        .is_ok()
                });
                let c = if ok { &count.passed } else { &count.dropped };
                c.fetch_add(1, Ordering::Relaxed);
                frame.clear();
            }
        }
    })
}

fn point(link: &Path, pty: &Pty) {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(&pty.slave_path, link).expect("symlink");
}

#[test]
fn a_serial_adapter_unplugged_and_plugged_back_continues_the_recording() {
    let dir = Scratch::new("fault-serial");
    let link: PathBuf = dir.join("ttyUSB-by-id");
    let pty = Pty::open().expect("a pty");
    point(&link, &pty);
    let to = Arc::new(Mutex::new(Some(pty)));
    let rec = dir.join("rec.lsr");
    let mut host = Reaper::new(
        Command::new(bins().host)
            .args(["record", "-q", "--baud", "115200", "--serial"])
            .arg(&link)
            .arg("-o")
            .arg(&rec)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope-host"),
    );
    let herr = stderr_lines(host.child());
    let hpid = host.child().id();
    holds(Duration::from_secs(10), "the host opening the line", || {
        latscope_testkit::wait::has_open(hpid, &link)
    });
    let json = dir.join("t.json");
    let mut t = Reaper::new(
        Command::new(bins().latscope)
            .args(target_args("12", &json))
            .arg("--stream=-")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope"),
    );
    let count = Arc::new(Count::default());
    let stdout = t.child().stdout.take().expect("stdout");
    let r = relay(stdout, Arc::clone(&to), Arc::clone(&count));
    // Two unplugs: 2 s away each.
    for _ in 0..2 {
        holds(Duration::from_secs(15), "frames passed", || {
            count.passed.load(Ordering::Relaxed) >= 3
        });
        thread::sleep(Duration::from_secs(2));
        // Unplugged between two frames: the master closes, the link goes.
        drop(to.lock().expect("pty").take());
        let _ = std::fs::remove_file(&link);
        wait_for_line(
            &herr,
            "waiting for it to come back",
            Duration::from_secs(10),
        );
        thread::sleep(Duration::from_secs(2));
        let pty = Pty::open().expect("a new pty");
        point(&link, &pty);
        *to.lock().expect("pty") = Some(pty);
        wait_for_line(&herr, "back, reading again", Duration::from_secs(10));
        count.passed.store(0, Ordering::Relaxed);
    }
    let tr = t.wait(Duration::from_secs(60));
    assert_run_ok(&tr);
    let _ = r.join();
    let h = host.wait(Duration::from_secs(30));
    let rest = drain(&herr, Duration::from_millis(200));
    let dropped = count.dropped.load(Ordering::Relaxed);
    assert!(dropped > 0, "the unplugs dropped nothing");
    let (doc, code, _) = host_report_json(&rec);
    let frames = doc["link"]["frames"].as_u64().expect("frames");
    let lost = doc["link"]["frames_lost"].as_u64().expect("frames_lost");
    let truth = count.read.load(Ordering::Relaxed) - frames;
    assert_eq!(lost, truth, "recorder's count against the truth");
    assert!(lost >= dropped, "{lost} < {dropped} dropped by the relay");
    assert_eq!(
        code,
        verdict(&doc),
        "the report's status follows its verdict"
    );
    assert_eq!(
        h.status.code(),
        Some(code),
        "and so does record's: {rest:?}"
    );
    // The run went on in the same recording, to its end.
    assert_eq!(doc["runs"].as_array().map(Vec::len), Some(1));
    let target = read_json(&json);
    assert_eq!(
        doc["runs"][0]["threads"][0]["cycles"], target["thread"]["0"]["cycles"],
        "the final report arrived whole"
    );
    println!(
        "figures: serial replug x2: frames {} read, {frames} recorded, lost: recorder {lost}, truth {truth}, relay dropped {dropped}",
        count.read.load(Ordering::Relaxed)
    );
}
