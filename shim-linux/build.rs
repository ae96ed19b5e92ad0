//! Link the static target binary with 4 KiB segment alignment.
//!
//! GNU ld aligns aarch64 and arm segments to 64 KiB by default, which pads
//! the file with up to 60 KiB of zeros between text and data. The boards
//! latscope targets (Cortex-A with 4 KiB pages, as buildroot configures
//! them) load 4 KiB-aligned segments; a kernel built with 16 or 64 KiB pages
//! would not, so such a board needs this removed.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && (arch == "aarch64" || arch == "arm") {
        // gcc passes `-z KEYWORD` to the linker, and lld takes it as is.
        println!("cargo:rustc-link-arg-bins=-z");
        println!("cargo:rustc-link-arg-bins=max-page-size=4096");
    }
}
