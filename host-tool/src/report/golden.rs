//! The reports of frozen recordings, a basic run and an `--explain` run of
//! every protocol version (and from version 6 a `--timerlat` run): byte
//! for byte what latscope-host printed when each version was current
//! (`tests/golden/v1` to `tests/golden/v5`; `tests/golden/v6` is the
//! current version's). A version is frozen before the next one is made, so
//! its recordings keep reporting the same once they are upgraded.

use std::time::SystemTime;

use latscope_core::wire::PROTOCOL_VERSION;

use super::{render, Decoded, Format, Options};
use crate::session::Session;

/// `tests/golden/vVERSION/vVERSION-KIND.EXT`, as text or bytes.
macro_rules! golden {
    ($include:ident, $version:literal, $kind:literal, $ext:literal) => {
        $include!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/golden/v",
            $version,
            "/v",
            $version,
            "-",
            $kind,
            ".",
            $ext
        ))
    };
}

/// A frozen recording of protocol `version` throughout, and the host's
/// report on it in each format.
struct Frozen {
    name: &'static str,
    version: u8,
    recording: &'static [u8],
    reports: [(Format, &'static str); 4],
}

/// The recording `vVERSION-KIND.lsr` and its `.text`, `.json`, `.hist`
/// and `.csv` reports.
macro_rules! frozen {
    ($version:literal, $kind:literal) => {
        Frozen {
            name: concat!("v", $version, "-", $kind),
            version: $version,
            recording: golden!(include_bytes, $version, $kind, "lsr"),
            reports: [
                (Format::Text, golden!(include_str, $version, $kind, "text")),
                (Format::Json, golden!(include_str, $version, $kind, "json")),
                (
                    Format::CyclictestHist,
                    golden!(include_str, $version, $kind, "hist"),
                ),
                (Format::Csv, golden!(include_str, $version, $kind, "csv")),
            ],
        }
    };
}

/// The kinds of run frozen, each from the protocol version that first
/// carried it on.
const KINDS: [(&str, u8); 3] = [("basic", 1), ("explain", 1), ("timerlat", 6)];

/// The kinds of run frozen for `version`.
fn kinds(version: u8) -> impl Iterator<Item = &'static str> {
    KINDS
        .into_iter()
        .filter(move |&(_, since)| version >= since)
        .map(|(k, _)| k)
}

/// Every frozen recording, by protocol version.
const FROZEN: [Frozen; 13] = [
    frozen!(1, "basic"),
    frozen!(1, "explain"),
    frozen!(2, "basic"),
    frozen!(2, "explain"),
    frozen!(3, "basic"),
    frozen!(3, "explain"),
    frozen!(4, "basic"),
    frozen!(4, "explain"),
    frozen!(5, "basic"),
    frozen!(5, "explain"),
    frozen!(6, "basic"),
    frozen!(6, "explain"),
    frozen!(6, "timerlat"),
];

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

/// How each report of `frozen` differs from its golden file: one message
/// per format, none when every report is the same.
fn differences(frozen: &Frozen) -> Vec<String> {
    let Frozen {
        name,
        version,
        recording,
        reports,
    } = frozen;
    let mut differ = Vec::new();
    for (format, want) in reports {
        let got = report(&format!("{name}.lsr"), *version, recording, *format);
        if got != *want {
            // the first line that differs, or the first that one lacks
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| got.lines().count().min(want.lines().count()));
            differ.push(format!(
                "{name} {format:?} differs from the version-{version} report at line {}:\n got: {:?}\nwant: {:?}",
                line + 1,
                got.lines().nth(line),
                want.lines().nth(line)
            ));
        }
    }
    differ
}

/// Every report of every recording of protocol `version`.
fn check(version: u8) {
    let frozen: Vec<&Frozen> = FROZEN.iter().filter(|f| f.version == version).collect();
    assert_eq!(
        frozen.len(),
        kinds(version).count(),
        "version {version}: a recording of each kind"
    );
    let differ: Vec<String> = frozen.into_iter().flat_map(differences).collect();
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn version_1_recordings_report_as_they_always_did() {
    check(1);
}

#[test]
fn version_2_recordings_report_as_they_always_did() {
    check(2);
}

#[test]
fn version_3_recordings_report_as_they_always_did() {
    check(3);
}

#[test]
fn version_4_recordings_report_as_they_always_did() {
    check(4);
}

/// Version 5's recordings (explanations and evidence windows), frozen
/// when version 6 added the timerlat histograms: its hello is read
/// through its frozen types, everything else as the current ones.
#[test]
fn version_5_recordings_report_as_they_always_did() {
    check(5);
}

/// The current version's recordings: a basic and an `--explain` run of
/// the target, and a `--timerlat` run made by `latscope-host synth` (see
/// `tests/golden/v6/README.md`); frozen when the next version is made.
#[test]
fn version_6_recordings_report_as_they_always_did() {
    check(6);
}

/// Each version older than the current one was frozen before the next
/// was made, and stays frozen: its recordings are in [`FROZEN`], and a
/// test above checks them.
#[test]
fn every_older_version_is_frozen() {
    for version in 1..PROTOCOL_VERSION {
        for kind in kinds(version) {
            let name = format!("v{version}-{kind}");
            assert!(
                FROZEN.iter().any(|f| f.name == name && f.version == version),
                "{name}: version {version} is older than {PROTOCOL_VERSION} but not frozen in tests/golden/v{version}"
            );
        }
    }
    for f in &FROZEN {
        assert!(
            f.version <= PROTOCOL_VERSION,
            "{}: a version this build does not speak",
            f.name
        );
    }
}
