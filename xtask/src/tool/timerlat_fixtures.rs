//! Captures the kernel's timerlat tracer and rtla's `timerlat hist` on the
//! emulated aarch64 PREEMPT_RT board (6.12: `timerlat_fd` came in 6.5),
//! for core's decoder tests and the rtla formatter's: boots the busybox
//! image, with rtla, with `timerlat=SECS` (`testkit/image/init`), which
//! prints the osnoise settings, a timerlat instance's pages and text, and
//! rtla's output of SECS runs on the console.
//!
//!   timerlat_fixtures DIR [SECS]
//!
//! writes them to `DIR` and prints the image's other `image: ` lines.
//! Default: 3 s. Needs the tools `.ci/run setup` installs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use latscope_testkit::boot::Console;
use latscope_testkit::image;
use latscope_testkit::qemu::Arch;

use super::board_fixtures;

fn capture(dir: &Path, secs: u64) -> Result<(), String> {
    let rtla = image::rtla_root().ok_or("no rtla for arm64 (run `.ci/run setup`)")?;
    let (_, boot) = image::boot_with(
        Arch::Aarch64,
        &format!("timerlat={secs}"),
        Console::Socket { flood: false },
        // the boot, and four rtla runs the image stops after SECS + 120 s
        Duration::from_secs(300 + 4 * (secs + 120)),
        Some(&rtla),
    )?;
    let mut inside = false;
    for line in boot.console.lines().map(|l| l.trim_end_matches('\r')) {
        match line.strip_prefix("image: fixture ") {
            Some("end") => inside = false,
            Some(_) => inside = true,
            None if !inside && line.starts_with("image: ") => println!("{line}"),
            None => {}
        }
    }
    board_fixtures::write(&boot.console, dir)
}

/// `cargo xtask tool timerlat-fixtures ARGS`.
pub fn main(args: Vec<String>) -> ExitCode {
    let mut args = args.into_iter();
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: xtask tool timerlat-fixtures DIR [SECS]");
        return ExitCode::from(2);
    };
    let secs = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    match capture(&dir, secs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask tool timerlat-fixtures: {e}");
            ExitCode::FAILURE
        }
    }
}
