//! The bodies of the fuzz targets ([`checks`]), shared by cargo-fuzz
//! (`fuzz_targets/`, built with the default `libfuzzer` feature) and the
//! stable proptest harness (`tests/tests/fuzz_stable.rs`, which depends on
//! this crate without that feature), so both run the same properties.

pub mod checks;
