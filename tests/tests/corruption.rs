//! Corruption of a real recording, and inputs that are not latscope
//! streams or come from a newer protocol: one clear line, exit status 1,
//! never a panic, and the host keeps every frame that was not hit.

use std::process::{Command, Stdio};

use latscope_core::wire::{encode, Decoder, MAX_FRAME};
use latscope_tests::host::{
    assert_matches_target, bins, first_run, host, host_report_json, read_json, target_args, Scratch,
};

fn recording(dir: &Scratch) -> (Vec<u8>, serde_json::Value) {
    let b = bins();
    let json = dir.join("t.json");
    let rec = dir.join("clean.lsr");
    let st = Command::new(&b.latscope)
        .args(target_args("6", &json))
        .arg(format!("--stream={}", rec.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    (std::fs::read(&rec).unwrap(), read_json(&json))
}

fn flip(bytes: &[u8], rate: f64, seed: u64) -> (Vec<u8>, usize) {
    let mut x = seed | 1;
    let t = (rate * u64::MAX as f64) as u64;
    let mut out = bytes.to_vec();
    let mut n = 0;
    for b in out.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x < t {
            *b ^= ((x >> 32) as u8) | 1;
            n += 1;
        }
    }
    (out, n)
}

#[test]
fn flipped_bytes_are_counted_and_exact_figures_stay_exact() {
    let dir = Scratch::new("corrupt");
    let (clean, target) = recording(&dir);
    let mut d = Decoder::<MAX_FRAME>::new();
    let mut rest = &clean[..];
    while !rest.is_empty() {
        rest = d.feed(rest).1;
    }
    let total_frames = d.stats().frames;
    for (rate, seed) in [(1e-6, 1u64), (1e-5, 2), (1e-4, 3), (1e-3, 4)] {
        let (bad, hits) = flip(&clean, rate, seed);
        let p = dir.join(&format!("bad-{seed}.lsr"));
        std::fs::write(&p, &bad).unwrap();
        let (doc, code, stderr) = host_report_json(&p);
        assert!(code == 0 || code == 1, "rate {rate}: {stderr}");
        let link = &doc["link"];
        let frames = link["frames"].as_u64().unwrap();
        // Each hit costs at most two frames (a hit delimiter joins two).
        assert!(
            frames + 2 * hits as u64 >= total_frames,
            "rate {rate}: {frames} of {total_frames} frames with {hits} hits"
        );
        if hits > 0 && frames < total_frames {
            assert!(
                // A hit on the very first delimiter shows only as skipped
                // bytes: the decoder had not synchronised yet.
                link["crc_errors"].as_u64().unwrap()
                    + link["seq_gaps"].as_u64().unwrap()
                    + link["bytes_skipped"].as_u64().unwrap()
                    > 0,
                "rate {rate}: loss not reported: {link}"
            );
        }
        let run = first_run(&doc);
        if run["exact_at_end"] == true {
            assert_matches_target(run, &target);
        }
    }
}

#[test]
fn garbage_and_newer_versions_get_one_clear_line() {
    let dir = Scratch::new("garbage");
    // Not a stream at all.
    let g = dir.join("garbage.bin");
    let junk: Vec<u8> = (0..50_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(&g, &junk).unwrap();
    let r = host(&["report", &g.display().to_string()]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a latscope stream"), "{err}");
    assert!(r.stdout.is_empty());
    // A newer protocol version: re-encode a real stream's frames as v2.
    let (clean, _) = recording(&dir);
    let mut d = Decoder::<MAX_FRAME>::new();
    let mut rest = &clean[..];
    let mut v2 = Vec::new();
    let mut buf = vec![0u8; MAX_FRAME];
    while !rest.is_empty() {
        let (ev, r) = d.feed(rest);
        rest = r;
        if let Some(Ok(mut f)) = ev {
            f.version = 2;
            let n = encode(&f, &mut buf).unwrap();
            v2.extend_from_slice(&buf[..n]);
        }
    }
    let p = dir.join("v2.lsr");
    std::fs::write(&p, &v2).unwrap();
    let r = host(&["report", &p.display().to_string()]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("protocol version 2") && err.contains("newer"),
        "{err}"
    );
    // Missing file, and bad usage.
    let r = host(&["report", "/nonexistent/x.lsr"]);
    assert_eq!(r.status.code(), Some(1));
    for args in [
        vec!["report"],
        vec!["report", "--format", "nope", "x"],
        vec!["frobnicate"],
        vec!["record", "--exit-after", "2"],
        vec!["compare", "a"],
    ] {
        let r = host(&args);
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
    // --help works for every subcommand and exits 0.
    for sub in ["record", "report", "compare"] {
        let r = host(&[sub, "--help"]);
        assert_eq!(r.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&r.stdout).contains("Usage"));
    }
}
