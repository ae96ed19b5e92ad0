//! Usage errors of the binary: status 2, one line on standard error, and
//! clap's tips kept in that line.

use std::process::Command;

fn host(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_latscope-host"))
        .args(args)
        .output()
        .expect("run latscope-host");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_misspelt_option_is_one_line_with_clap_s_tip() {
    let (code, err) = host(&["report", "--formt", "json", "x.lsr"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("unexpected argument '--formt'"), "{err}");
    assert!(
        err.contains("tip: a similar argument exists: '--format'"),
        "{err}"
    );
    assert!(
        err.trim_end().ends_with("(see latscope-host --help)"),
        "{err}"
    );
}

#[test]
fn a_misspelt_subcommand_is_one_line_with_clap_s_tip() {
    let (code, err) = host(&["reprot", "x.lsr"]);
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("tip: ") && err.contains("'report'"), "{err}");
}
