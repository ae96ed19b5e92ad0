//! Link arguments of the target binary.
//!
//! 4 KiB segment alignment: GNU ld aligns aarch64 and arm segments to
//! 64 KiB by default, which pads the file with up to 60 KiB of zeros
//! between text and data. The boards latscope targets (Cortex-A with
//! 4 KiB pages, as buildroot configures them) load 4 KiB-aligned segments;
//! a kernel built with 16 or 64 KiB pages would not, so such a board needs
//! this removed.
//!
//! Identical code folding when the linker is lld itself (rust-lld links
//! the aarch64-musl build, `.cargo/config.toml`): functions whose code is
//! the same are kept once, 5,088 B of the static binary
//! (`bench/results/opt-level.md`). Not a rustflag: gcc, which cross's
//! images and Buildroot link with, rejects the option, and cross keeps the
//! configuration's rustflags. Rust promises nothing of function addresses,
//! so folding them changes no behaviour.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // how cross and CI's gcc check choose the linker
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && (arch == "aarch64" || arch == "arm") {
        // gcc passes `-z KEYWORD` to the linker, and lld takes it as is.
        println!("cargo:rustc-link-arg-bins=-z");
        println!("cargo:rustc-link-arg-bins=max-page-size=4096");
    }
    let linker = std::env::var("RUSTC_LINKER").unwrap_or_default();
    let name = Path::new(&linker).file_name().and_then(|n| n.to_str());
    if matches!(name, Some("rust-lld" | "ld.lld")) {
        println!("cargo:rustc-link-arg-bins=--icf=all");
    }
}
