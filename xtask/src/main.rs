//! `latscope-docgen [OUTDIR]`: write the man pages into `OUTDIR/man/` and
//! the shell completions into `OUTDIR/completions/{bash,zsh,fish}/`
//! (default `target/doc-gen`), and name each file written.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let out = std::env::args_os()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/doc-gen"), PathBuf::from);
    match latscope_docgen::generate(&out) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("latscope-docgen: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
