//! The recorder's disk: an acknowledgement means the frames it covers are
//! on disk (the order of the system calls, under strace, is the proof:
//! tmpfs and SIGKILL cannot show durability), and a recordings directory
//! that fills up stops the acknowledgements, says so once, counts it in
//! `/metrics`, and loses nothing once space returns.

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::Duration;

use latscope_core::wire::{AckReader, Decoder, MAX_FRAME};
use latscope_testkit::faults::{
    available, fds, rss_kib, target_lost, target_to, truth_lost, verdict, SmallDisk,
};
use latscope_testkit::fleet::{drain, Recorder};
use latscope_testkit::host::{
    assert_matches_target, bins, first_run, free_local_addr, host_report_json, only_recording,
    read_json, target_args, wait_for_line, Reaper,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;
use latscope_testkit::{have, missing};

/// The bytes of `\\xNN` escapes (strace `-xx`), other characters as they are.
fn unhex(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("\\x") {
        out.extend_from_slice(&rest.as_bytes()[..i]);
        let h = rest.get(i + 2..i + 4).unwrap_or("");
        out.push(u8::from_str_radix(h, 16).unwrap_or(0));
        rest = rest.get(i + 4..).unwrap_or("");
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

/// The bytes of strace's `-xx` string argument in `line`.
fn hex_arg(line: &str) -> Vec<u8> {
    let Some(start) = line.find('"') else {
        return Vec::new();
    };
    let rest = &line[start + 1..];
    let end = rest.find('"').unwrap_or(rest.len());
    unhex(&rest[..end])
}

/// What one thread's trace shows.
#[derive(Debug, Default)]
struct Order {
    frames: u64,
    writes: u64,
    syncs: u64,
    dir_syncs: u64,
    acks: u64,
    /// Acknowledgements of a sequence number not yet synced.
    early: Vec<String>,
}

/// Walk one thread's trace in order: every ack must cover only frames
/// written to the recording before its last fdatasync.
fn check_order(trace: &str, o: &mut Order) {
    let mut dec = Decoder::<MAX_FRAME>::new();
    let mut acks = AckReader::new();
    let (mut written, mut synced): (HashMap<String, u32>, Option<u32>) = (HashMap::new(), None);
    for line in trace.lines() {
        // `-y -xx`: the descriptor's path, hex-escaped too.
        let fd_path = line
            .split_once('<')
            .and_then(|(_, r)| r.split_once('>'))
            .map(|(p, _)| String::from_utf8_lossy(&unhex(p)).into_owned())
            .unwrap_or_default();
        if line.starts_with("write(") && fd_path.ends_with(".lsr") {
            o.writes += 1;
            for f in dec.frames(&hex_arg(line)).flatten() {
                o.frames += 1;
                written.insert(fd_path.clone(), f.seq);
            }
        } else if line.starts_with("fdatasync(") && line.contains(") = 0") {
            o.syncs += 1;
            if let Some(&s) = written.get(&fd_path) {
                synced = Some(s);
            }
        } else if line.starts_with("fsync(") && !fd_path.ends_with(".lsr") {
            o.dir_syncs += 1;
        } else if line.starts_with("sendto(")
            && (fd_path.starts_with("TCP") || fd_path.starts_with("socket:"))
        {
            acks.feed_all(&hex_arg(line), |a| {
                o.acks += 1;
                if synced.is_none_or(|s| a.seq > s) {
                    o.early
                        .push(format!("ack {} with frames synced to {synced:?}", a.seq));
                }
            });
        }
    }
}

#[test]
fn every_ack_comes_after_the_sync_that_covers_it() {
    if !have("strace") {
        missing("strace");
        return;
    }
    let dir = Scratch::new("fault-order");
    let out = dir.join("out");
    std::fs::create_dir_all(&out).expect("out");
    let listen = free_local_addr();
    let log = dir.join("trace");
    let port: u16 = listen
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port");
    let mut rec = Reaper::new(
        Command::new("strace")
            .args(["-f", "-ff", "-qq", "-y", "-xx", "-s", "65536"])
            .args(["-e", "trace=write,fdatasync,fsync,sendto", "-o"])
            .arg(&log)
            .arg(bins().host)
            .args(["record", "-q", "--exit-after", "1", "--listen", &listen])
            .arg("--out-dir")
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run strace"),
    );
    holds(Duration::from_secs(20), "the recorder listening", || {
        latscope_testkit::wait::listening(port)
    });
    let json = dir.join("t.json");
    let mut t = target_to(None, &listen, 5, &json);
    let tr = t.wait(Duration::from_secs(60));
    assert_run_ok(&tr);
    let r = rec.wait(Duration::from_secs(30));
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let mut o = Order::default();
    for e in std::fs::read_dir(dir.path()).expect("scratch").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with("trace.") {
            check_order(&std::fs::read_to_string(e.path()).expect("trace"), &mut o);
        }
    }
    println!("figures: order: {o:?}");
    assert!(o.acks > 0 && o.syncs > 0 && o.frames > 0, "{o:?}");
    assert!(
        o.early.is_empty(),
        "acknowledged before synced: {:?}",
        o.early
    );
    assert!(
        o.dir_syncs >= 1,
        "the new recording's directory synced: {o:?}"
    );
    assert!(
        o.syncs < o.frames,
        "syncs are batched, not one per frame: {o:?}"
    );
    // The recording is exact.
    let (doc, code, _) = host_report_json(&only_recording(&out));
    assert_eq!(code, 0);
    assert_matches_target(first_run(&doc), &read_json(&json));
}

/// A recorder writing to a tmpfs of `kib` KiB that fills up for `hold`,
/// while a target runs `args` for 14 s: the recorder says so once, counts
/// it, writes again once space returns, and the recording is exact or its
/// loss counted alike by both sides. Returns the frames lost.
fn full_disk(class: &str, kib: u64, hold: Duration, args: &[&str]) -> u64 {
    let dir = Scratch::new("fault-disk");
    let disk = SmallDisk::mount(dir.path(), kib);
    let mut rec = Recorder::start(&disk.dir, &["-q", "--exit-after", "1"]);
    let json = dir.join("t.json");
    let mut t = Reaper::new(
        Command::new(bins().latscope)
            .args(target_args("14", &json))
            .args(args)
            .arg(format!("--stream=tcp:{}", rec.addr))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope"),
    );
    latscope_testkit::host::wait_streaming(&disk.dir);
    let filler = disk.fill();
    let said = wait_for_line(&rec.stderr, "not acknowledging", Duration::from_secs(15));
    assert!(said.contains("sends it again"), "{said}");
    holds(Duration::from_secs(10), "write errors counted", || {
        rec.metric("latscope_recorder_write_errors_total")
            .is_some_and(|v| v > 0.0)
    });
    sleep(hold);
    let errors = rec
        .metric("latscope_recorder_write_errors_total")
        .unwrap_or(0.0);
    std::fs::remove_file(&filler).expect("remove the filler");
    wait_for_line(&rec.stderr, "written again", Duration::from_secs(15));
    let pid = rec.proc.child().id();
    let (rss, nfds) = (rss_kib(pid), fds(pid));
    let tr = t.wait(Duration::from_secs(90));
    assert_run_ok(&tr);
    let lost = target_lost(&String::from_utf8_lossy(&tr.stderr));
    let r = rec.proc.wait(Duration::from_secs(30));
    let rest = drain(&rec.stderr, Duration::from_secs(2));
    assert!(
        !rest.iter().any(|l| l.contains("not acknowledging")),
        "said once: {rest:?}"
    );
    let path = only_recording(&disk.dir);
    let truth = truth_lost(&path);
    let (doc, code, _) = host_report_json(&path);
    let rec_lost = doc["link"]["frames_lost"].as_u64().expect("frames_lost");
    assert_eq!(rec_lost, truth, "the recorder's count is the truth");
    assert_eq!(
        lost, rec_lost,
        "frames lost: target {lost}, recorder {rec_lost}"
    );
    assert_eq!(code, verdict(&doc));
    assert_eq!(r.status.code(), Some(code), "record's status is report's");
    if lost == 0 {
        assert_matches_target(first_run(&doc), &read_json(&json));
    }
    println!(
        "figures: {class}: disk full {hold:?}, {errors} write errors, frames {}, lost: target \
         {lost} recorder {rec_lost} truth {truth}, recorder after the faults: rss {rss} KiB, fds {nfds}",
        doc["link"]["frames"]
    );
    lost
}

#[test]
fn a_full_disk_stops_acks_says_so_once_and_loses_nothing_when_space_returns() {
    if !available() {
        return;
    }
    let lost = full_disk("full disk", 1024, Duration::from_secs(3), &[]);
    assert_eq!(lost, 0, "the resend buffer held everything");
}

#[test]
fn a_full_disk_longer_than_the_resend_buffer_loses_frames_counted_alike() {
    if !available() {
        return;
    }
    // 64 threads reporting every 100 ms: about 100 kB/s, so 8 s of a full
    // disk overflow the target's 512 KiB resend buffer.
    let args = ["-t", "64", "-i", "2000", "--report-interval=100ms"];
    let lost = full_disk(
        "full disk, resend buffer overflowed",
        8192,
        Duration::from_secs(8),
        &args,
    );
    assert!(lost > 0, "the resend buffer did not overflow");
}
