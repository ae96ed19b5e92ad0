//! Corruption of a real recording, and inputs that are not latscope
//! streams or come from a newer protocol: one clear line, exit status 1,
//! never a panic, and the host keeps every frame that was not hit.

use latscope_testkit::host::{
    assert_matches_target, decode_frames, encode_frames, first_run, host, host_report_json,
    read_json, record_file, rng, target_args,
};
use latscope_testkit::Scratch;

fn recording(dir: &Scratch) -> (Vec<u8>, serde_json::Value) {
    let json = dir.join("t.json");
    let bytes = record_file(target_args("6", &json), &dir.join("clean.lsr"));
    (bytes, read_json(&json))
}

/// `bytes` as a stretch of a link that changes each byte with
/// probability `rate`, taken where the link changed one: the first changed
/// byte is anywhere in it (uniformly), the next ones follow at the link's
/// gaps (geometric, of mean `1 / rate`). A recording of a few kB at a rate
/// of 1e-6 would otherwise almost never be changed at all. The changed
/// bytes' positions, in order.
fn flip(bytes: &[u8], rate: f64, seed: u64) -> (Vec<u8>, Vec<usize>) {
    let mut next = rng(seed);
    let mut out = bytes.to_vec();
    let mut hits = Vec::new();
    let mut at = (next() % bytes.len() as u64) as usize;
    while let Some(b) = out.get_mut(at) {
        *b ^= ((next() >> 32) as u8) | 1;
        hits.push(at);
        // a uniform draw in (0, 1] turned into the gap to the next change
        let u = 1.0 - (next() >> 11) as f64 / (1u64 << 53) as f64;
        let gap = (u.ln() / (1.0 - rate).ln()).floor() as usize + 1;
        at = at.saturating_add(gap);
    }
    (out, hits)
}

#[test]
fn flipped_bytes_are_counted_and_exact_figures_stay_exact() {
    let dir = Scratch::new("corrupt");
    let (clean, target) = recording(&dir);
    let total_frames = decode_frames(&clean).1.frames;
    // A change at or before the first delimiter shows only as skipped
    // bytes: the decoder has not synchronised yet.
    let first_delimiter = clean.iter().position(|&b| b == 0).unwrap();
    for (rate, seed) in [(1e-6, 1u64), (1e-5, 2), (1e-4, 3), (1e-3, 4), (1e-2, 5)] {
        let (bad, hits) = flip(&clean, rate, seed);
        assert!(
            !hits.is_empty() && bad != clean,
            "rate {rate}: nothing flipped"
        );
        let p = dir.join(format!("bad-{seed}.lsr"));
        std::fs::write(&p, &bad).unwrap();
        let (doc, code, stderr) = host_report_json(&p);
        assert!(code == 0 || code == 1, "rate {rate}: {stderr}");
        let link = &doc["link"];
        let count = |name: &str| link[name].as_u64().unwrap();
        let frames = count("frames");
        let n = hits.len();
        // Each hit costs at least one frame (CRC-32 catches any change
        // of one byte) and at most two (a hit delimiter joins two).
        assert!(
            frames < total_frames && frames + 2 * n as u64 >= total_frames,
            "rate {rate}: {frames} of {total_frames} frames with {n} hits at {hits:?}"
        );
        if hits.iter().any(|&h| h > first_delimiter) {
            assert!(
                count("crc_errors") + count("oversize") > 0,
                "rate {rate}: hits at {hits:?} not counted: {link}"
            );
        } else {
            assert!(count("bytes_skipped") > 0, "rate {rate}: {link}");
        }
        let run = first_run(&doc);
        if run["exact_at_end"] == true {
            assert_matches_target(run, &target);
        }
        println!("rate {rate}: {n} hits at {hits:?}, {frames} of {total_frames} frames: {link}");
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
    // A newer protocol version: re-encode a real stream's frames as the
    // next version.
    let next = latscope_core::wire::PROTOCOL_VERSION + 1;
    let (clean, _) = recording(&dir);
    let newer = encode_frames(&decode_frames(&clean).0, next, 0);
    let p = dir.join("next.lsr");
    std::fs::write(&p, &newer).unwrap();
    let r = host(&["report", &p.display().to_string()]);
    assert_eq!(r.status.code(), Some(1));
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("protocol version {next}")) && err.contains("newer"),
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

#[test]
fn damaged_recordings_are_described_truthfully() {
    let dir = Scratch::new("damaged");
    let (clean, _) = recording(&dir);
    // The hello is the first frame: a byte flipped inside it fails its CRC.
    let hello_end = clean.iter().skip(1).position(|&b| b == 0).unwrap() + 1;
    let mut hit = clean.clone();
    hit[hello_end / 2] ^= 0x10;
    let p = dir.join("hello-hit.lsr");
    std::fs::write(&p, &hit).unwrap();
    let r = host(&["report", &p.display().to_string()]);
    let out = String::from_utf8_lossy(&r.stdout);
    assert_eq!(r.status.code(), Some(1), "a run without its hello: {out}");
    assert!(out.contains("config:   unknown"), "{out}");
    assert!(
        !out.contains("interval 0.0"),
        "made-up configuration: {out}"
    );
    assert!(out.contains("hello frame was never decoded"), "{out}");
    assert!(out.contains("failed their check"), "{out}");
    let (doc, code, _) = host_report_json(&p);
    assert_eq!(code, 1);
    assert!(first_run(&doc)["config"].is_null(), "{doc}");
    // A recording cut inside its hello.
    let p = dir.join("hello-cut.lsr");
    std::fs::write(&p, &clean[..hello_end / 2]).unwrap();
    let r = host(&["report", &p.display().to_string()]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("truncated hello"), "{err}");
    // Usage errors exit 2, in one line that names what is wrong.
    for (args, names) in [
        (vec!["record", "--listen", "abc"], "abc"),
        (vec!["record", "--metrics", "nowhere"], "nowhere"),
        (vec!["report"], "<RECORDING>"),
        (vec!["report", "x.lsr", "--plot", "x.jpg"], ".svg or .png"),
    ] {
        let r = host(&args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
    }
    // No Rust debug formatting in any message.
    let c = dir.join("clean.lsr").display().to_string();
    for plot in ["/nonexistent/x.png", "/nonexistent/x.svg"] {
        let r = host(&["report", &c, "--plot", plot]);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{err}");
        assert!(err.contains("No such file or directory"), "{err}");
        assert!(
            !err.contains(['{', '}']) && !err.contains("Error("),
            "{err}"
        );
    }
}
