//! The reports of frozen recordings of older protocol versions: byte for
//! byte what latscope-host printed when each version was current
//! (`tests/golden/v1`, `tests/golden/v2`).

use std::time::SystemTime;

use latscope_core::wire::PROTOCOL_VERSION;

use super::{render, Decoded, Format, Options};
use crate::session::Session;

macro_rules! golden {
    ($dir:literal, $name:literal, $ext:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/golden/",
            $dir,
            "/",
            $name,
            ".",
            $ext
        ))
    };
}

/// The report of `bytes`, a recording of protocol `version` throughout.
fn report(name: &str, version: u8, bytes: &[u8], format: Format) -> String {
    let mut s = Session::new(name);
    s.feed(bytes);
    s.finish();
    assert!(s.link().frames > 0, "{name}: no frames");
    // the decoder counts every frame of an older version as upgraded
    let upgraded = if version == PROTOCOL_VERSION {
        0
    } else {
        s.link().frames
    };
    assert_eq!(
        s.link().upgraded,
        upgraded,
        "{name}: every frame is version {version}"
    );
    let d = Decoded {
        session: s,
        end: SystemTime::UNIX_EPOCH,
    };
    let opts = Options {
        format,
        hist_us: None,
        histofall: false,
        hist_shape: Default::default(),
    };
    render(&[d], opts).expect("renders")
}

fn check(name: &str, version: u8, bytes: &[u8], expected: [(Format, &str); 4]) {
    for (format, want) in expected {
        let got = report(&format!("{name}.lsr"), version, bytes, format);
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{name} {format:?} differs from the version-{version} report at line {}:\n got: {:?}\nwant: {:?}",
                line + 1,
                got.lines().nth(line),
                want.lines().nth(line)
            );
        }
    }
}

#[test]
fn version_1_recording_reports_as_it_always_did() {
    let bytes = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/golden/v1/v1-basic.lsr"
    ));
    check(
        "v1-basic",
        1,
        bytes,
        [
            (Format::Text, golden!("v1", "v1-basic", "text")),
            (Format::Json, golden!("v1", "v1-basic", "json")),
            (Format::CyclictestHist, golden!("v1", "v1-basic", "hist")),
            (Format::Csv, golden!("v1", "v1-basic", "csv")),
        ],
    );
}

#[test]
fn version_1_recording_with_explained_spikes_reports_as_it_always_did() {
    let bytes = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/golden/v1/v1-explain.lsr"
    ));
    check(
        "v1-explain",
        1,
        bytes,
        [
            (Format::Text, golden!("v1", "v1-explain", "text")),
            (Format::Json, golden!("v1", "v1-explain", "json")),
            (Format::CyclictestHist, golden!("v1", "v1-explain", "hist")),
            (Format::Csv, golden!("v1", "v1-explain", "csv")),
        ],
    );
}

#[test]
fn version_2_recording_reports_as_it_always_did() {
    let bytes = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/golden/v2/v2-basic.lsr"
    ));
    check(
        "v2-basic",
        2,
        bytes,
        [
            (Format::Text, golden!("v2", "v2-basic", "text")),
            (Format::Json, golden!("v2", "v2-basic", "json")),
            (Format::CyclictestHist, golden!("v2", "v2-basic", "hist")),
            (Format::Csv, golden!("v2", "v2-basic", "csv")),
        ],
    );
}

#[test]
fn version_2_recording_with_explained_spikes_reports_as_it_always_did() {
    let bytes = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/golden/v2/v2-explain.lsr"
    ));
    check(
        "v2-explain",
        2,
        bytes,
        [
            (Format::Text, golden!("v2", "v2-explain", "text")),
            (Format::Json, golden!("v2", "v2-explain", "json")),
            (Format::CyclictestHist, golden!("v2", "v2-explain", "hist")),
            (Format::Csv, golden!("v2", "v2-explain", "csv")),
        ],
    );
}
