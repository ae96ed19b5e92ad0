//! The fault soak (`bench/faults-soak`, not in CI: ignored unless asked
//! for): two targets run one run after another into one recorder across
//! the fault harness's namespace pair, while every fault of the harness
//! strikes at random: packets dropped, connections reset, a slow line, the
//! link down, the recorder stopped, killed and restarted, its disk full.
//! Every run is checked as the fault tests check theirs; the figures go to
//! the file named by `LATSCOPE_SOAK_OUT` (markdown).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, sleep};
use std::time::{Duration, Instant};

use latscope_testkit::faults::{
    available, fds, rss_kib, target_lost, target_unacked, truth_lost, Pair, SmallDisk,
};
use latscope_testkit::host::{
    bins, first_run, host_report_json, read_json, recordings, target_args, Reaper,
};
use latscope_testkit::wait::assert_run_ok;
use latscope_testkit::Scratch;

const PORT: u16 = 7412;

/// The fault classes, and what each did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fault {
    Drops,
    Resets,
    SlowLine,
    LinkDown,
    Stop,
    Kill,
    DiskFull,
}

const FAULTS: [Fault; 7] = [
    Fault::Drops,
    Fault::Resets,
    Fault::SlowLine,
    Fault::LinkDown,
    Fault::Stop,
    Fault::Kill,
    Fault::DiskFull,
];

fn recorder(pair: &Pair, out: &Path) -> Reaper {
    Reaper::new(
        pair.command(&pair.recorder_ns, &bins().host)
            .args(["record", "-q", "--listen"])
            .arg(format!("{}:{PORT}", pair.recorder_ip))
            .arg("--out-dir")
            .arg(out)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run latscope-host"),
    )
}

/// One run's outcome.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    runs: u64,
    exact: u64,
    frames: u64,
    lost_target: u64,
    lost_recorder: u64,
    lost_truth: u64,
    /// Frames the targets sent and saw no acknowledgement for by the end.
    unacked: u64,
    mismatches: u64,
}

#[test]
#[ignore = "a soak of many minutes: bench/faults-soak runs it"]
fn faults_soak() {
    if !available() {
        return;
    }
    let secs: u64 = std::env::var("LATSCOPE_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1800);
    let dir = Scratch::new("fault-soak");
    let pair = Pair::new();
    let disk = SmallDisk::mount(dir.path(), 256 * 1024);
    let out = disk.dir.clone();
    let rec = Arc::new(Mutex::new(recorder(&pair, &out)));
    let addr = format!("{}:{PORT}", pair.recorder_ip);
    let stop = Arc::new(AtomicBool::new(false));
    let end = Instant::now() + Duration::from_secs(secs);
    let struck: Arc<Mutex<BTreeMap<Fault, u64>>> = Arc::default();
    // Two boards, one run after another, 40 s each.
    let mut boards = Vec::new();
    for b in 0..2 {
        let (addr, dir_p, stop) = (addr.clone(), dir.path().to_path_buf(), Arc::clone(&stop));
        let ns = pair.target_ns.clone();
        boards.push(thread::spawn(move || {
            let mut runs: Vec<(String, PathBuf, u64, u64)> = Vec::new();
            let mut k = 0;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("soak{b}r{k}");
                let json = dir_p.join(format!("{name}.json"));
                let mut t = Reaper::new(
                    Command::new("ip")
                        .args(["netns", "exec", &ns])
                        .arg(bins().latscope)
                        .args(target_args("40", &json))
                        .arg(format!("--name={name}"))
                        .arg(format!("--stream=tcp:{addr}"))
                        .stdout(Stdio::null())
                        .stderr(Stdio::piped())
                        .spawn()
                        .expect("run latscope"),
                );
                let o = t.wait(Duration::from_secs(120));
                assert_run_ok(&o);
                let err = String::from_utf8_lossy(&o.stderr);
                runs.push((name, json, target_lost(&err), target_unacked(&err)));
                k += 1;
            }
            runs
        }));
    }
    // Faults at random, one every 4 to 10 s.
    let mut rnd = latscope_testkit::host::rng(u64::from(std::process::id()));
    while Instant::now() < end {
        sleep(Duration::from_millis(4000 + rnd() % 6000));
        let f = FAULTS[(rnd() % FAULTS.len() as u64) as usize];
        *struck.lock().expect("tally").entry(f).or_default() += 1;
        let hold = Duration::from_millis(1000 + rnd() % 3000);
        match f {
            Fault::Drops => {
                pair.nft(
                    &pair.recorder_ns,
                    &format!(
                        "table inet lsf {{ chain in {{ type filter hook input priority 0; \
                         tcp dport {PORT} numgen random mod 100 < 20 drop; }}\n}}"
                    ),
                );
                sleep(hold * 2);
                pair.nft_flush(&pair.recorder_ns);
            }
            Fault::Resets => {
                pair.nft(
                    &pair.recorder_ns,
                    &format!(
                        "table inet lsf {{ chain in {{ type filter hook input priority 0; \
                         tcp dport {PORT} numgen random mod 100 < 10 reject with tcp reset; }}\n}}"
                    ),
                );
                sleep(hold);
                pair.nft_flush(&pair.recorder_ns);
            }
            Fault::SlowLine => {
                pair.in_target(
                    "tc qdisc add dev veth0 root tbf rate 32kbit burst 4kb latency 800ms",
                );
                sleep(hold * 2);
                pair.in_target("tc qdisc del dev veth0 root");
            }
            Fault::LinkDown => {
                pair.link(false);
                sleep(hold);
                pair.link(true);
            }
            Fault::Stop => {
                let pid = rec.lock().expect("rec").child().id();
                let p = rustix::process::Pid::from_raw(pid as i32).expect("pid");
                let _ = rustix::process::kill_process(p, rustix::process::Signal::STOP);
                sleep(hold);
                let _ = rustix::process::kill_process(p, rustix::process::Signal::CONT);
            }
            Fault::Kill => {
                let mut g = rec.lock().expect("rec");
                let _ = g.child().kill();
                let _ = g.0.take().map(|mut c| c.wait());
                sleep(hold);
                *g = recorder(&pair, &out);
            }
            Fault::DiskFull => {
                let filler = disk.fill();
                sleep(hold);
                let _ = std::fs::remove_file(filler);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let runs: Vec<(String, PathBuf, u64, u64)> = boards
        .into_iter()
        .flat_map(|h| h.join().expect("board"))
        .collect();
    // Let the last runs' reports land, then the recorder's figures.
    sleep(Duration::from_secs(3));
    let (rss, nfds) = {
        let mut g = rec.lock().expect("rec");
        let pid = g.child().id();
        (rss_kib(pid), fds(pid))
    };
    let mut t = Tally::default();
    let recs = recordings(&out);
    let mut bad = Vec::new();
    for (name, json, lost, unacked) in &runs {
        let Some(p) = recs.iter().find(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(&format!("{name}-")))
        }) else {
            bad.push(format!("{name}: no recording"));
            continue;
        };
        let (doc, _, _) = host_report_json(p);
        let rl = doc["link"]["frames_lost"].as_u64().unwrap_or(u64::MAX);
        let truth = truth_lost(p);
        t.runs += 1;
        t.frames += doc["link"]["frames"].as_u64().unwrap_or(0);
        t.lost_target += lost;
        t.lost_recorder += rl;
        t.lost_truth += truth;
        t.unacked += unacked;
        let run = first_run(&doc);
        let has_bye = !run["bye"].is_null();
        // As the fault tests check: lost frames counted alike; each frame
        // unacknowledged at the end is in the recording or a gap the
        // recorder counts (or past its end, the bye missing).
        let counted = rl == truth
            && rl <= lost + unacked
            && if has_bye {
                *lost <= rl
            } else {
                lost + unacked > 0
            };
        if !counted {
            t.mismatches += 1;
            bad.push(format!(
                "{name}: lost target {lost} (+{unacked} unacknowledged) recorder {rl} \
                 truth {truth}, bye recorded: {has_bye}"
            ));
        }
        let target = read_json(json);
        let same = run["exact_at_end"] == true
            && run["threads"][0]["cycles"] == target["thread"]["0"]["cycles"]
            && run["threads"][1]["count"] == target["thread"]["1"]["count"];
        if same {
            t.exact += 1;
        } else if *lost == 0 && *unacked == 0 {
            bad.push(format!("{name}: nothing lost, yet not exact"));
        }
    }
    let struck = struck.lock().expect("tally").clone();
    let mut md = String::new();
    md.push_str(&format!(
        "Soak of {secs} s: 2 boards (`-t 2 -i 1000`, `--best-effort`), runs of 40 s one after \
         another, over the fault harness's namespace pair into one recorder on a 256 MiB tmpfs; \
         a fault every 4 to 10 s, chosen at random.\n\n"
    ));
    md.push_str("| fault | times |\n|---|---|\n");
    for (f, n) in &struck {
        md.push_str(&format!("| {f:?} | {n} |\n"));
    }
    md.push_str(&format!(
        "\n| runs | exact | frames | lost (target) | lost (recorder) | lost (truth) | unacknowledged at the end (target) | mismatches | recorder RSS after, KiB | recorder fds after |\n\
         |---|---|---|---|---|---|---|---|---|---|\n\
         | {} | {} | {} | {} | {} | {} | {} | {} | {rss} | {nfds} |\n",
        t.runs,
        t.exact,
        t.frames,
        t.lost_target,
        t.lost_recorder,
        t.lost_truth,
        t.unacked,
        t.mismatches
    ));
    if !bad.is_empty() {
        md.push_str(&format!(
            "\nNot as they should be:\n\n- {}\n",
            bad.join("\n- ")
        ));
    }
    println!("{md}");
    if let Ok(p) = std::env::var("LATSCOPE_SOAK_OUT") {
        std::fs::write(p, &md).expect("write the soak's figures");
    }
    assert!(bad.is_empty(), "{bad:?}");
}
