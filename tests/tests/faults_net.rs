//! A faulty lab network between a real target and a real recorder, each in
//! a network namespace of the test's own (`latscope_testkit::faults`):
//! packets dropped at random on a slow line, random TCP resets, the link
//! set down and up, the recorder stopped and killed, the recorder stopped
//! as the run ends, and a half-open connection. Each run is checked against
//! the target's own `--json`: exact, or with its loss counted alike by the
//! target and the recorder, and the exit statuses that say so. Frames the
//! target sent but saw no acknowledgement for by the end are counted apart:
//! each is in the recording or counted by the recorder.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::Receiver;
use std::thread::sleep;
use std::time::{Duration, Instant};

use latscope_testkit::faults::{
    available, fds, rss_kib, target_lost, target_to, target_unacked, truth_lost, verdict, Pair,
};
use latscope_testkit::fleet::drain;
use latscope_testkit::host::{
    assert_matches_target, bins, first_run, host_report_json, only_recording, read_json,
    stderr_lines, wait_for_line, wait_streaming, Reaper,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;

const PORT: u16 = 7411;

/// How long the recorder may take to end the run once the target has
/// exited: at its bye, or after its connection's default idle timeout
/// (60 s) when what the target gave up on never arrives.
const RECORDER_ENDS_RUN: Duration = Duration::from_secs(90);

/// A listening recorder in the recorder's namespace (`--exit-after 1`).
fn recorder(pair: &Pair, out: &Path) -> (Reaper, Receiver<String>) {
    std::fs::create_dir_all(out).expect("out dir");
    let mut r = Reaper::new(
        pair.command(&pair.recorder_ns, &bins().host)
            .args(["record", "-q", "--exit-after", "1", "--listen"])
            .arg(format!("{}:{PORT}", pair.recorder_ip))
            .arg("--out-dir")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope-host"),
    );
    let rx = stderr_lines(r.child());
    wait_for_line(&rx, "listening on ", Duration::from_secs(20));
    (r, rx)
}

/// The recorder's RSS and descriptors, once the faults are over: a
/// connection reaped, a restart, the memory that stays.
fn sample(pid: u32) -> (u64, usize) {
    (rss_kib(pid), fds(pid))
}

/// One fault class's outcome, for its line in the closing figures.
struct Outcome {
    /// The report's exit status.
    code: i32,
    frames: u64,
    lost_target: u64,
    /// Frames the target sent and saw no acknowledgement for by the end.
    unacked: u64,
}

/// The run is over and the recorder has ended it (`rec`, its output):
/// check the one recording in `out` against the target's `--json` and its
/// loss line, and the recorder's status against the report's; print the
/// figures. Read before the recorder has ended the run, the recording may
/// still lack what the target gave up on and its kernel still sends.
fn check(
    class: &str,
    tr: &std::process::Output,
    rec: &std::process::Output,
    json: &Path,
    out: &Path,
    (rss, nfds): (u64, usize),
) -> Outcome {
    assert_run_ok(tr);
    let terr = String::from_utf8_lossy(&tr.stderr);
    let lost_target = target_lost(&terr);
    let unacked = target_unacked(&terr);
    let target = read_json(json);
    let path = only_recording(out);
    let truth = truth_lost(&path);
    let (doc, code, herr) = host_report_json(&path);
    let lost_recorder = doc["link"]["frames_lost"].as_u64().expect("frames_lost");
    let frames = doc["link"]["frames"].as_u64().expect("frames");
    let has_bye = !first_run(&doc)["bye"].is_null();
    assert_eq!(
        lost_recorder, truth,
        "{class}: the recorder's count is the truth"
    );
    // Lost for sure: counted alike. Unacknowledged at the end: each one is
    // in the recording or a gap the recorder counts (or, past the last
    // frame recorded, the bye is missing and the run is incomplete).
    assert!(
        lost_recorder <= lost_target + unacked,
        "{class}: frames lost, target {lost_target} (+{unacked} unacknowledged) \
         recorder {lost_recorder}; target: {terr}"
    );
    if has_bye {
        // every frame up to the bye was sent: none the target lost is
        // past the recording's end
        assert!(
            lost_target <= lost_recorder,
            "{class}: frames lost, target {lost_target} recorder {lost_recorder}; target: {terr}"
        );
    } else {
        assert!(
            unacked + lost_target > 0,
            "{class}: no bye, yet the target had it acknowledged: {terr}"
        );
        assert_eq!(
            code, 1,
            "{class}: a run without its bye is incomplete: {herr}"
        );
    }
    if lost_target == 0 && unacked == 0 {
        assert_eq!(code, 0, "{class}: nothing lost, yet: {herr}");
        assert_matches_target(first_run(&doc), &target);
    } else if lost_recorder == 0 && has_bye && code == 0 {
        // every unacknowledged frame was stored: the recording is exact
        assert_matches_target(first_run(&doc), &target);
    } else {
        assert_eq!(
            code,
            verdict(&doc),
            "{class}: the status follows the verdict"
        );
    }
    assert_eq!(
        rec.status.code(),
        Some(code),
        "{class}: record's status is report's"
    );
    println!(
        "figures: {class}: frames {frames}, lost: target {lost_target} recorder {lost_recorder} \
         truth {truth}, unacknowledged at the end {unacked} (bye recorded: {has_bye}), \
         recorder after the faults: rss {rss} KiB, fds {nfds}"
    );
    Outcome {
        code,
        frames,
        lost_target,
        unacked,
    }
}

struct Setup {
    pair: Pair,
    _dir: Scratch,
    out: PathBuf,
    json: PathBuf,
    addr: String,
}

fn setup(tag: &str) -> Option<Setup> {
    if !available() {
        return None;
    }
    let dir = Scratch::new(tag);
    let pair = Pair::new();
    let addr = format!("{}:{PORT}", pair.recorder_ip);
    Some(Setup {
        out: dir.join("out"),
        json: dir.join("t.json"),
        _dir: dir,
        pair,
        addr,
    })
}

#[test]
fn random_drops_on_a_slow_line_lose_nothing() {
    let Some(s) = setup("fault-drops") else {
        return;
    };
    let (mut rec, _rx) = recorder(&s.pair, &s.out);
    // A slow line out of the target, and 15 % of the packets dropped both
    // ways.
    s.pair
        .in_target("tc qdisc add dev veth0 root tbf rate 64kbit burst 4kb latency 800ms");
    s.pair.nft(
        &s.pair.recorder_ns,
        &format!(
            "table inet lsf {{
               chain in {{ type filter hook input priority 0; policy accept;
                 tcp dport {PORT} numgen random mod 100 < 15 counter drop comment \"drop\"; }}
               chain out {{ type filter hook output priority 0; policy accept;
                 tcp sport {PORT} numgen random mod 100 < 15 counter drop comment \"drop\"; }}
             }}"
        ),
    );
    let mut t = target_to(Some(&s.pair), &s.addr, 10, &s.json);
    wait_streaming(&s.out);
    sleep(Duration::from_secs(5));
    let seen = sample(rec.child().id());
    // The faults last to the end: the last frames and their acks may still
    // be resent as the target gives up on them, which it counts apart
    // ("sent but not acknowledged") from the frames it lost.
    let tr = t.wait(Duration::from_secs(90));
    let hits = s.pair.nft_hits(&s.pair.recorder_ns, "drop");
    assert!(hits > 0, "no packet was dropped");
    // The target's kernel still sends what the target gave up on after it
    // exits: the recording is read once the recorder has ended the run, at
    // its bye or when its connection has been idle for 60 s.
    let r = rec.wait(RECORDER_ENDS_RUN);
    let o = check("drops 15% + tbf 64kbit", &tr, &r, &s.json, &s.out, seen);
    println!(
        "figures: drops: {hits} packets dropped, {} frame(s) unacknowledged at the end",
        o.unacked
    );
}

#[test]
fn random_resets_are_resumed_and_any_loss_is_counted_alike() {
    let Some(s) = setup("fault-resets") else {
        return;
    };
    let (mut rec, _rx) = recorder(&s.pair, &s.out);
    let mut t = target_to(Some(&s.pair), &s.addr, 12, &s.json);
    wait_streaming(&s.out);
    // Resets, at random, of packets from the target: only the target's
    // side sees them, the recorder's connection stays open (half-open).
    s.pair.nft(
        &s.pair.recorder_ns,
        &format!(
            "table inet lsf {{
               chain in {{ type filter hook input priority 0; policy accept;
                 tcp dport {PORT} numgen random mod 100 < 10 counter reject with tcp reset comment \"reset\"; }}
             }}"
        ),
    );
    holds(Duration::from_secs(10), "two resets", || {
        s.pair.nft_hits(&s.pair.recorder_ns, "reset") >= 2
    });
    sleep(Duration::from_secs(3));
    let hits = s.pair.nft_hits(&s.pair.recorder_ns, "reset");
    s.pair.nft_flush(&s.pair.recorder_ns);
    let seen = sample(rec.child().id());
    let tr = t.wait(Duration::from_secs(90));
    let r = rec.wait(RECORDER_ENDS_RUN);
    let o = check("random resets 10%", &tr, &r, &s.json, &s.out, seen);
    println!("figures: resets: {hits} packets reset, {} frames", o.frames);
}

#[test]
fn a_link_that_goes_down_twice_loses_nothing() {
    let Some(s) = setup("fault-flap") else {
        return;
    };
    let (mut rec, _rx) = recorder(&s.pair, &s.out);
    let mut t = target_to(Some(&s.pair), &s.addr, 14, &s.json);
    wait_streaming(&s.out);
    for down in [3, 2] {
        s.pair.link(false);
        sleep(Duration::from_secs(down));
        s.pair.link(true);
        sleep(Duration::from_secs(2));
    }
    let seen = sample(rec.child().id());
    let tr = t.wait(Duration::from_secs(90));
    let r = rec.wait(RECORDER_ENDS_RUN);
    let o = check("link down 3 s and 2 s", &tr, &r, &s.json, &s.out, seen);
    assert_eq!(o.lost_target, 0, "the resend buffer covers 5 s down");
}

#[test]
fn a_recorder_stopped_then_killed_and_restarted_loses_nothing() {
    let Some(s) = setup("fault-kill") else {
        return;
    };
    let (mut rec, _rx) = recorder(&s.pair, &s.out);
    let mut t = target_to(Some(&s.pair), &s.addr, 12, &s.json);
    wait_streaming(&s.out);
    let pid = rustix::process::Pid::from_raw(rec.child().id() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).expect("SIGSTOP");
    sleep(Duration::from_secs(3));
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
    sleep(Duration::from_secs(2));
    rec.child().kill().expect("SIGKILL");
    let _ = rec.0.take().map(|mut c| c.wait());
    sleep(Duration::from_secs(1));
    let (mut rec2, rx2) = recorder(&s.pair, &s.out);
    let resumed = wait_for_line(&rx2, " resumes ", Duration::from_secs(20));
    assert!(resumed.contains("after frame"), "{resumed}");
    let seen = sample(rec2.child().id());
    let tr = t.wait(Duration::from_secs(90));
    let r = rec2.wait(RECORDER_ENDS_RUN);
    let o = check(
        "SIGSTOP 3 s, SIGKILL + restart",
        &tr,
        &r,
        &s.json,
        &s.out,
        seen,
    );
    assert_eq!(o.lost_target, 0);
}

#[test]
fn a_half_open_connection_is_reaped_when_its_run_resumes() {
    let Some(s) = setup("fault-halfopen") else {
        return;
    };
    let (mut rec, rx) = recorder(&s.pair, &s.out);
    let rpid = rec.child().id();
    let mut t = target_to(Some(&s.pair), &s.addr, 10, &s.json);
    wait_streaming(&s.out);
    let base = fds(rpid);
    // One reset reaches the target only: its connection is gone, the
    // recorder's stays established. The resets the target's kernel then
    // sends back for the recorder's acks on the dead connection never reach
    // the recorder either (a table of its own, kept to the end): otherwise
    // they would close the old connection before the resume could reap it.
    s.pair.nft(
        &s.pair.recorder_ns,
        &format!(
            "table inet lsf_halfopen {{
               chain in {{ type filter hook input priority -10; policy accept;
                 tcp dport {PORT} tcp flags & rst == rst drop; }}
             }}"
        ),
    );
    s.pair.nft(
        &s.pair.recorder_ns,
        &format!(
            "table inet lsf {{
               chain in {{ type filter hook input priority 0; policy accept;
                 tcp dport {PORT} tcp flags & syn == 0 counter reject with tcp reset comment \"reset\"; }}
             }}"
        ),
    );
    holds(Duration::from_secs(10), "a reset", || {
        s.pair.nft_hits(&s.pair.recorder_ns, "reset") >= 1
    });
    s.pair.nft_flush(&s.pair.recorder_ns);
    let t0 = Instant::now();
    let line = wait_for_line(
        &rx,
        "resumed on a newer connection",
        Duration::from_secs(20),
    );
    println!(
        "figures: half-open: old connection reaped {:.1} s after the reset ({line})",
        t0.elapsed().as_secs_f64()
    );
    holds(
        Duration::from_secs(10),
        "the recorder's descriptors back to normal",
        || fds(rpid) <= base,
    );
    let seen = sample(rpid);
    let tr = t.wait(Duration::from_secs(90));
    let r = rec.wait(RECORDER_ENDS_RUN);
    let o = check("half-open", &tr, &r, &s.json, &s.out, seen);
    assert_eq!(o.lost_target, 0);
    let _ = drain(&rx, Duration::from_millis(100));
}

#[test]
fn a_recorder_stopped_as_the_run_ends_stores_what_the_target_could_not_confirm() {
    let Some(s) = setup("fault-endstop") else {
        return;
    };
    let (mut rec, _rx) = recorder(&s.pair, &s.out);
    let secs = 8;
    let t0 = Instant::now();
    let mut t = target_to(Some(&s.pair), &s.addr, secs, &s.json);
    wait_streaming(&s.out);
    // Stopped just before the run ends, and kept stopped until the target
    // has given up on its last acks: the final report and the bye reach
    // the recorder's socket, but are stored only after SIGCONT.
    let stop_at = t0 + Duration::from_millis(secs * 1000 - 1500);
    sleep(stop_at.saturating_duration_since(Instant::now()));
    let pid = rustix::process::Pid::from_raw(rec.child().id() as i32).expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).expect("SIGSTOP");
    let tr = t.wait(Duration::from_secs(90));
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).expect("SIGCONT");
    // (a read with a timeout is not restarted after a stop: the recorder
    // must take that EINTR as a tick, not as the connection's end)
    let seen = sample(rec.child().id());
    let r = rec.wait(Duration::from_secs(30));
    let o = check("SIGSTOP as the run ends", &tr, &r, &s.json, &s.out, seen);
    let terr = String::from_utf8_lossy(&tr.stderr);
    assert!(o.unacked > 0, "the stop did not cover the end: {terr}");
    assert_eq!(tr.status.code(), Some(4), "unconfirmed output: {terr}");
    assert_eq!(o.lost_target, 0, "sent frames are not lost: {terr}");
    assert_eq!(o.code, 0, "the recorder stored them all");
}
