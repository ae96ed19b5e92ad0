//! The reports of frozen protocol-version-1 recordings: byte for byte what
//! latscope-host printed when version 1 was current (`tests/golden/v1`).

use std::time::SystemTime;

use super::{render, Decoded, Format, Options};
use crate::session::Session;

macro_rules! golden {
    ($name:literal, $ext:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/golden/v1/",
            $name,
            ".",
            $ext
        ))
    };
}

fn report(name: &str, bytes: &[u8], format: Format) -> String {
    let mut s = Session::new(name);
    s.feed(bytes);
    s.finish();
    assert!(s.link().upgraded > 0, "{name}: not read as version 1");
    assert_eq!(
        s.link().upgraded,
        s.link().frames,
        "{name}: every frame is version 1"
    );
    let d = Decoded {
        session: s,
        end: SystemTime::UNIX_EPOCH,
    };
    let opts = Options {
        format,
        hist_us: None,
        histofall: false,
    };
    render(&[d], opts).expect("renders")
}

fn check(name: &str, bytes: &[u8], expected: [(Format, &str); 4]) {
    for (format, want) in expected {
        let got = report(&format!("{name}.lsr"), bytes, format);
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "{name} {format:?} differs from the version-1 report at line {}:\n got: {:?}\nwant: {:?}",
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
        bytes,
        [
            (Format::Text, golden!("v1-basic", "text")),
            (Format::Json, golden!("v1-basic", "json")),
            (Format::CyclictestHist, golden!("v1-basic", "hist")),
            (Format::Csv, golden!("v1-basic", "csv")),
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
        bytes,
        [
            (Format::Text, golden!("v1-explain", "text")),
            (Format::Json, golden!("v1-explain", "json")),
            (Format::CyclictestHist, golden!("v1-explain", "hist")),
            (Format::Csv, golden!("v1-explain", "csv")),
        ],
    );
}
