//! `latscope-host trend` over folders of recordings, through the binary:
//! 24 synthetic recordings of two boards over three weeks, one of them
//! cut before its bye, give CSV rows equal to each recording's own
//! report, the boards apart, the cut run marked; and 1,000 recordings
//! are read within the trend's stated memory (a heap limit that holds,
//! where a smaller one is seen to fail).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use latscope_host::synth::{Synth, SynthConfig};
use latscope_testkit::host::{bins, host, host_report_json};
use latscope_testkit::precondition::have;
use latscope_testkit::{require, Scratch};
use serde_json::Value;

/// 2026-11-17 00:00 UTC.
const T0: i64 = 1_794_873_600;
const DAY: i64 = 86_400;

/// Runs per board, one every other day.
const RUNS: i64 = 12;

/// The heap the trend of 1,000 recordings stays within (`docs/trend.md`).
const HEAP_BOUND: u64 = 16 << 20;

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The two boards' recordings: `rpi4-lab1` getting slower, `imx8-lab2`
/// faster; `rpi4-lab1`'s eighth run cut before its bye.
fn two_boards(dir: &Path) {
    for i in 0..RUNS {
        for (k, board) in ["rpi4-lab1", "imx8-lab2"].into_iter().enumerate() {
            let scale = if k == 0 { 100 + i * 5 } else { 150 - i * 3 };
            let mut args = vec![
                "synth".to_string(),
                "--name".into(),
                board.into(),
                "--run-id".into(),
                (i * 2 + 1 + k as i64).to_string(),
                "--seed".into(),
                (i + 7).to_string(),
                "--started".into(),
                (T0 + i * 2 * DAY + 3600 * (1 + 2 * k as i64)).to_string(),
                "--scale".into(),
                scale.to_string(),
                "--reports".into(),
                "20".into(),
                "--samples".into(),
                "1000".into(),
                "-o".into(),
                s(&dir.join(format!("{board}-{i:02}.lsr"))).to_string(),
            ];
            if k == 0 && i == 7 {
                args.push("--no-bye".into());
            }
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = host(&a);
            assert!(out.status.success(), "synth {args:?}: {out:?}");
        }
    }
}

/// The CSV's rows, each a map of column to field (no field here holds a
/// comma: board names and paths are plain).
fn rows(csv: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f.len(), head.len(), "row {l:?}");
            head.iter()
                .map(|h| h.to_string())
                .zip(f.iter().map(|x| x.to_string()))
                .collect()
        })
        .collect()
}

fn num(v: &Value) -> String {
    v.as_u64().map(|n| n.to_string()).unwrap_or_default()
}

#[test]
fn a_trend_gives_each_recordings_own_figures_keeps_boards_apart_and_marks_the_cut_run() {
    let dir = Scratch::new("trend");
    let (recs, out) = (dir.join("recs"), dir.join("out"));
    std::fs::create_dir_all(&recs).unwrap();
    two_boards(&recs);
    // a file that is not a recording's name is not read
    std::fs::write(recs.join("notes.txt"), "kernel 6.12 from the 20th on\n").unwrap();
    let run = host(&["trend", s(&recs), "--out-dir", s(&out)]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = std::fs::read_to_string(out.join("trend.csv")).unwrap();
    let rows = rows(&csv);
    assert_eq!(rows.len(), 2 * RUNS as usize, "{csv}");

    // each row is its recording's own report
    for r in &rows {
        let (doc, _, _) = host_report_json(Path::new(&r["file"]));
        let run = &doc["runs"][0];
        let all = &run["all"];
        assert_eq!(
            r["board"],
            run["target"]["hostname"].as_str().unwrap(),
            "{r:?}"
        );
        assert_eq!(r["run_id"], run["run_id"].as_str().unwrap(), "{r:?}");
        assert_eq!(r["samples"], num(&all["count"]), "{r:?}");
        assert_eq!(r["max_ns"], num(&all["max_ns"]), "{r:?}");
        assert_eq!(r["min_ns"], num(&all["min_ns"]), "{r:?}");
        assert_eq!(r["missed"], num(&all["missed"]), "{r:?}");
        for q in all["quantiles"].as_array().unwrap() {
            let name = q[0].as_str().unwrap();
            assert_eq!(r[&format!("{name}_ns")], num(&q[1]), "{name}: {r:?}");
        }
        assert_eq!(r["complete"], run["complete"].to_string(), "{r:?}");
    }

    // the boards apart: in time order each, every row under its own name
    for (k, board) in ["rpi4-lab1", "imx8-lab2"].into_iter().enumerate() {
        let mine: Vec<_> = rows.iter().filter(|r| r["board"] == board).collect();
        assert_eq!(mine.len(), RUNS as usize, "{board}");
        assert!(
            mine.iter().all(|r| r["file"].contains(board)),
            "{board}: {mine:?}"
        );
        let starts: Vec<i64> = mine
            .iter()
            .map(|r| r["started_unix_s"].parse().unwrap())
            .collect();
        let want: Vec<i64> = (0..RUNS)
            .map(|i| T0 + i * 2 * DAY + 3600 * (1 + 2 * k as i64))
            .collect();
        assert_eq!(starts, want, "{board}");
        for ext in ["png", "svg"] {
            let plot = out.join(format!("trend-{board}.{ext}"));
            let len = std::fs::metadata(&plot).map(|m| m.len()).unwrap_or(0);
            assert!(len > 10_000, "{}: {len} bytes", plot.display());
        }
    }
    // the slower board's runs are slower by the end, as made
    let p999 = |board: &str, i: usize| -> u64 {
        let mine: Vec<_> = rows.iter().filter(|r| r["board"] == board).collect();
        mine[i]["p99.9_ns"].parse().unwrap()
    };
    assert!(p999("rpi4-lab1", 11) > p999("rpi4-lab1", 0));
    assert!(p999("imx8-lab2", 11) < p999("imx8-lab2", 0));

    // the cut run: false in the CSV with report's reason, counted in the
    // summary, and ringed in its board's plot only
    let cut: Vec<_> = rows.iter().filter(|r| r["complete"] == "false").collect();
    assert_eq!(cut.len(), 1, "{csv}");
    assert_eq!(cut[0]["run_id"], format!("{:016x}", 7 * 2 + 1));
    assert!(cut[0]["incomplete_why"].contains("no bye"), "{:?}", cut[0]);
    assert!(
        stdout.contains("board rpi4-lab1: 12 runs, 2026-11-17 .. 2026-12-09, 1 incomplete"),
        "{stdout}"
    );
    assert!(
        stdout.contains("board imx8-lab2: 12 runs, 2026-11-17 .. 2026-12-09, 0 incomplete"),
        "{stdout}"
    );
    let svg =
        |board: &str| std::fs::read_to_string(out.join(format!("trend-{board}.svg"))).unwrap();
    assert!(svg("rpi4-lab1").contains("incomplete run"));
    assert!(!svg("imx8-lab2").contains("incomplete run"));

    // the heatmap's CSV sums to each run's samples
    let heat = std::fs::read_to_string(out.join("trend-heatmap.csv")).unwrap();
    let mut per_run: BTreeMap<String, u64> = BTreeMap::new();
    for l in heat.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        *per_run.entry(f[1].to_string()).or_default() += f[5].parse::<u64>().unwrap();
    }
    for r in &rows {
        assert_eq!(per_run[&r["run_id"]].to_string(), r["samples"], "{r:?}");
    }

    // one board chosen: its rows only
    let one = dir.join("one");
    let run = host(&[
        "trend",
        s(&recs),
        "--board",
        "imx8-lab2",
        "--out-dir",
        s(&one),
    ]);
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    let only = rows_of(&one.join("trend.csv"));
    assert_eq!(only.len(), RUNS as usize);
    assert!(only.iter().all(|r| r["board"] == "imx8-lab2"));
    assert!(!one.join("trend-rpi4-lab1.png").exists());

    // a board of no recording: exit status 1, said on standard error
    let run = host(&[
        "trend",
        s(&recs),
        "--board",
        "nowhere",
        "--out-dir",
        s(&one),
    ]);
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(String::from_utf8_lossy(&run.stderr).contains("no run of board nowhere"));
}

fn rows_of(p: &Path) -> Vec<BTreeMap<String, String>> {
    rows(&std::fs::read_to_string(p).unwrap())
}

/// 1,000 small recordings of two boards, an hour apart.
fn many(dir: &Path, n: u64) {
    for i in 0..n {
        let cfg = SynthConfig {
            threads: 2,
            reports: 3,
            samples_per_report: 50,
            hostname: format!("board-{}", i % 2),
            run_id: i + 1,
            seed: i + 1,
            started_unix_s: T0 + i as i64 * 3600,
            ..SynthConfig::default()
        };
        let mut bytes = Vec::new();
        Synth::new(cfg).run(&mut |b| bytes.extend_from_slice(b));
        std::fs::write(dir.join(format!("r{i:04}.lsr")), bytes).unwrap();
    }
}

/// `prlimit --data=BYTES latscope-host trend DIR`: its exit status and
/// standard error.
fn trend_within(heap: u64, dir: &Path, out: &Path) -> (Option<i32>, String) {
    let run = Command::new("prlimit")
        .arg(format!("--data={heap}"))
        .arg("--")
        .arg(bins().host)
        .args(["trend", s(dir), "--out-dir", s(out)])
        .output()
        .expect("run prlimit");
    (
        run.status.code(),
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

#[test]
fn a_thousand_recordings_take_the_trend_no_more_than_its_stated_heap() {
    require!(have("prlimit"), "prlimit (util-linux)");
    let dir = Scratch::new("trend-many");
    let (recs, out) = (dir.join("recs"), dir.join("out"));
    std::fs::create_dir_all(&recs).unwrap();
    many(&recs, 1000);
    let (code, err) = trend_within(HEAP_BOUND, &recs, &out);
    assert_eq!(code, Some(0), "within {HEAP_BOUND} bytes of heap: {err}");
    let rows = rows_of(&out.join("trend.csv"));
    assert_eq!(rows.len(), 1000);
    // a heap limit the trend does not fit in is seen to fail: the limit
    // above is the one that held
    let (code, err) = trend_within(4 << 20, &recs, &dir.join("small"));
    assert_ne!(
        code,
        Some(0),
        "the trend fit in 4 MiB of heap; the test measures nothing"
    );
    assert!(err.contains("memory allocation"), "{err}");
}
