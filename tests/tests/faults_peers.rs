//! Hostile and broken peers keep their cost to themselves: a recorder that
//! accepts and never reads (a zero TCP window) does not hold up the
//! target's measuring or its other outputs, and what it never acknowledged
//! is counted (exit status 4); 1,000 connect-and-close probes and 500 idle connections at
//! once leave 16 real targets' recordings exact.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use latscope_testkit::faults::{fds, rss_kib, target_lost, target_unacked};
use latscope_testkit::fleet::Recorder;
use latscope_testkit::host::{
    assert_matches_target, bins, first_run, host_report_json, read_json, recordings, target_args,
    Reaper,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::wait::holds;
use latscope_testkit::Scratch;

#[test]
fn a_peer_that_never_reads_holds_up_neither_measuring_nor_outputs() {
    let dir = Scratch::new("fault-zerowin");
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    // Accept, then never read: the window closes.
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        l.set_nonblocking(true).expect("nonblocking");
        let end = Instant::now() + Duration::from_secs(40);
        while Instant::now() < end && conns.len() < 64 {
            match l.accept() {
                Ok((c, _)) => conns.push(c),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        conns
    });
    let json = dir.join("t.json");
    let summary = dir.join("summary.txt");
    let secs = 10u64;
    // 64 threads reporting every 100 ms: about 100 kB/s, more than the
    // resend buffer holds within the run.
    let t0 = Instant::now();
    let mut t = Reaper::new(
        Command::new(bins().latscope)
            .args([
                "-t",
                "64",
                "-i",
                "2000",
                "-d",
                "0",
                "--report-interval=100ms",
            ])
            .args(["-D", &secs.to_string(), "--best-effort", "-q"])
            .arg(format!("--json={}", json.display()))
            .arg(format!("--stream=tcp:{addr}"))
            .stdout(std::fs::File::create(&summary).expect("summary file"))
            .stderr(Stdio::piped())
            .spawn()
            .expect("run latscope"),
    );
    let tr = t.wait(Duration::from_secs(60));
    let took = t0.elapsed();
    assert_run_ok(&tr);
    let stdout = std::fs::read_to_string(&summary).unwrap_or_default();
    assert!(stdout.contains("T:63"), "the summary came out: {stdout}");
    let err = String::from_utf8_lossy(&tr.stderr);
    // What the peer's kernel took (it may hold megabytes) was sent but
    // never acknowledged; what did not fit the resend buffer, lost.
    let lost = target_lost(&err);
    let unacked = target_unacked(&err);
    assert!(lost + unacked > 0, "nothing counted: {err}");
    assert_eq!(tr.status.code(), Some(4), "{err}");
    assert!(
        took < Duration::from_secs(secs + 8),
        "the run took {took:?} for {secs} s"
    );
    let doc = read_json(&json);
    let cycles = doc["thread"]["0"]["cycles"].as_u64().unwrap_or(0);
    let missed = doc["thread"]["0"]["missed"].as_u64().unwrap_or(0);
    assert!(
        cycles + missed >= secs * 500 * 95 / 100,
        "thread 0 measured {cycles} + {missed} missed in {secs} s"
    );
    println!(
        "figures: zero window: run {took:?}, {lost} frames never delivered, {unacked} sent but not \
         acknowledged (counted), thread 0 {cycles} cycles"
    );
    drop(held);
}

#[test]
fn probes_and_idle_connections_beside_sixteen_targets_cost_them_nothing() {
    let dir = Scratch::new("fault-probes");
    let out = dir.join("out");
    let n = 16;
    let mut rec = Recorder::start(
        &out,
        &[
            "-q",
            "--exit-after",
            &n.to_string(),
            "--hello-timeout",
            "60",
        ],
    );
    let pid = rec.proc.child().id();
    let base = fds(pid);
    let mut targets: Vec<(Reaper, std::path::PathBuf)> = (0..n)
        .map(|i| {
            let json = dir.join(format!("t{i}.json"));
            let t = Reaper::new(
                Command::new(bins().latscope)
                    .args(target_args("8", &json))
                    .arg(format!("--name=board{i}"))
                    .arg(format!("--stream=tcp:{}", rec.addr))
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("run latscope"),
            );
            (t, json)
        })
        .collect();
    // 500 idle connections at once, held, and 1,000 that connect and close.
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..500 {
        idle.push(TcpStream::connect(&rec.addr).expect("idle connect"));
    }
    let t0 = Instant::now();
    for _ in 0..1000 {
        drop(TcpStream::connect(&rec.addr).expect("probe"));
    }
    let probes = t0.elapsed();
    holds(Duration::from_secs(20), "500 idle connections open", || {
        rec.metric("latscope_connections ")
            .is_some_and(|v| v >= 500.0)
    });
    let peak = (fds(pid), rss_kib(pid));
    // The idle ones go: the recorder's descriptors come back.
    for c in &mut idle {
        let _ = c.set_nonblocking(true);
        let _ = c.read(&mut [0u8; 16]);
    }
    drop(idle);
    holds(
        Duration::from_secs(20),
        "the recorder's descriptors back to its targets' own",
        || fds(pid) <= base + 2 * n,
    );
    let after = (fds(pid), rss_kib(pid));
    for (t, _) in &mut targets {
        assert_run_ok(&t.wait(Duration::from_secs(90)));
    }
    let r = rec.proc.wait(Duration::from_secs(30));
    assert_eq!(
        r.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&r.stderr)
    );
    let recs = recordings(&out);
    assert_eq!(recs.len(), n, "{recs:?}");
    let mut frames = 0;
    for (i, (_, json)) in targets.iter().enumerate() {
        let target = read_json(json);
        let name = format!("board{i}-");
        let p = recs
            .iter()
            .find(|p| {
                p.file_name()
                    .is_some_and(|f| f.to_string_lossy().starts_with(&name))
            })
            .unwrap_or_else(|| panic!("no recording of {name} in {recs:?}"));
        let (doc, code, e) = host_report_json(p);
        assert_eq!(code, 0, "{e}");
        assert_eq!(doc["link"]["frames_lost"], 0);
        frames += doc["link"]["frames"].as_u64().unwrap_or(0);
        assert_matches_target(first_run(&doc), &target);
    }
    println!(
        "figures: probes: 1000 probes in {probes:?}, 500 idle; 16 runs, {frames} frames, lost 0; \
         recorder at the peak {} fds {} KiB, after the idle ones {} fds {} KiB, at the start {base} fds",
        peak.0, peak.1, after.0, after.1
    );
}
