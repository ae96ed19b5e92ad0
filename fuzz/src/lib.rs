//! The bodies of the fuzz targets, shared by cargo-fuzz (`fuzz_targets/`)
//! and the stable proptest harness (`tests/tests/fuzz_stable.rs` includes
//! the `checks` module by path), so both run the same properties.

pub mod checks;
