//! The frame stream: what a host receives must rebuild the target's own
//! `--json` figures exactly.

use latscope_core::hist::Histogram;
use latscope_core::layout::DEFAULT_BUCKETS;
use latscope_core::wire::{Body, Bye, ByeReason, Frame, SCHEMA_KEY};
use latscope_testkit::target::{decode_all, privilege_flags, serial};
use latscope_testkit::this_target;

fn json_number(json: &str, thread: usize, key: &str) -> u64 {
    let t = json
        .find(&format!("\"{thread}\": {{"))
        .expect("thread object");
    let k = json[t..].find(&format!("\"{key}\": ")).expect("key") + t;
    let v = &json[k + key.len() + 4..];
    let end = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    v[..end].parse().expect("number")
}

#[test]
fn stream_rebuilds_the_runs_exact_figures() {
    let _g = serial();
    let dir = std::env::temp_dir().join(format!("latscope-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let json_arg = format!("--json={}", json.display());
    let mut args = vec![
        "-t",
        "2",
        "-d",
        "0",
        "-i",
        "500",
        "-l",
        "3000",
        "-q",
        "--stream",
        "-",
        "--report-interval",
        "200ms",
        "-h",
        "100",
        &json_arg,
    ];
    args.extend(privilege_flags());
    let out = this_target!().run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let frames = decode_all(&out.stdout);
    let json = std::fs::read_to_string(&json).unwrap();
    let bye = check_hello_and_bye(&frames);
    for t in 0..2u16 {
        check_thread(&frames, t, &bye, &json);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Hello first, bye last, consecutive sequence numbers; the bye.
fn check_hello_and_bye(frames: &[Frame]) -> Bye {
    // hello first, with the schema and the thread list
    match &frames[0].body {
        Body::Hello(h) => {
            assert_eq!(h.schema, SCHEMA_KEY);
            assert_eq!(h.config.threads.len(), 2);
            assert_eq!(h.config.interval_ns, 500_000);
        }
        b => panic!("first frame is {b:?}"),
    }
    // sequence numbers are consecutive
    for w in frames.windows(2) {
        assert_eq!(w[1].seq, w[0].seq.wrapping_add(1));
    }
    // bye last
    let bye = match &frames.last().unwrap().body {
        Body::Bye(b) => *b,
        b => panic!("last frame is {b:?}"),
    };
    assert_eq!(bye.reason, ByeReason::Completed);
    assert_eq!(bye.threads, 2);
    assert_eq!(bye.cycles, 6000);
    assert_eq!(bye.frames_dropped, 0);
    bye
}

/// Thread `t`: its deltas summed equal its final snapshot (the chunks of
/// the final report, which cover every bucket), which equals the `--json`
/// histogram rows and figures.
fn check_thread(frames: &[Frame], t: u16, bye: &Bye, json: &str) {
    let mut from_deltas = vec![0u64; DEFAULT_BUCKETS];
    let mut last_snapshot = vec![0u64; DEFAULT_BUCKETS];
    let mut last_epoch_stats = None;
    let mut covered = 0usize;
    for f in frames {
        match &f.body {
            Body::Delta(d) if d.thread == t => {
                for p in d.runs.iter(d.start) {
                    let (b, n) = p.expect("well-formed runs");
                    from_deltas[b as usize] += n;
                }
            }
            Body::Chunk(c) if c.thread == t && c.epoch == bye.epoch => {
                assert_eq!(usize::from(c.start), covered, "chunks in order");
                covered = usize::from(c.end).min(DEFAULT_BUCKETS);
                for p in c.runs.iter(c.start) {
                    let (b, n) = p.expect("well-formed runs");
                    last_snapshot[b as usize] = n;
                }
            }
            Body::Stats(s) if s.thread == t => last_epoch_stats = Some(*s),
            _ => {}
        }
    }
    assert_eq!(
        covered, DEFAULT_BUCKETS,
        "the final snapshot covers every bucket"
    );
    let stats = last_epoch_stats.expect("stats");
    assert!(stats.last_report);
    assert_eq!(stats.epoch, bye.epoch);
    assert_eq!(from_deltas, last_snapshot, "thread {t}");
    let mut h = Histogram::<DEFAULT_BUCKETS>::new(1000);
    for (i, &c) in last_snapshot.iter().enumerate() {
        h.add_bucket(i, c).unwrap();
    }
    assert_eq!(h.counts().iter().sum::<u64>(), stats.count);
    assert_eq!(stats.cycles, json_number(json, t as usize, "cycles"));
    assert_eq!(stats.cycles, 3000);
    assert_eq!(stats.min, json_number(json, t as usize, "min_ns"));
    assert_eq!(stats.max, json_number(json, t as usize, "max_ns"));
    assert_eq!(stats.min / 1000, json_number(json, t as usize, "min"));
    assert_eq!(stats.max / 1000, json_number(json, t as usize, "max"));
    // the JSON's -h rows equal the stream's first 100 buckets
    let section = &json[json.find(&format!("\"{t}\": {{")).unwrap()..];
    for (i, &c) in last_snapshot.iter().take(100).enumerate() {
        if c > 0 {
            assert!(
                section.contains(&format!("\"{i}\": {c}")),
                "bucket {i} count {c} missing in JSON"
            );
        }
    }
}
