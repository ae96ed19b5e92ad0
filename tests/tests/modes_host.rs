//! A run in one of cyclictest's other wake-up modes (`-r`, `-s`, `-x`)
//! gives up one of latscope's guarantees: the stream's hello says which,
//! and the host's report prints it.

use latscope_testkit::host::{host, record_file};
use latscope_testkit::target::serial;
use latscope_testkit::Scratch;

#[test]
fn the_hosts_report_names_a_mode_that_gives_up_a_guarantee() {
    let _g = serial();
    let s = Scratch::new("modes");
    for (opt, line) in [
        (None, None),
        (Some("-x"), Some("MODE:     posix_timer (POSIX timer: ")),
        (
            Some("-r"),
            Some("MODE:     clock_nanosleep_relative (relative sleep: "),
        ),
    ] {
        let rec = s.join("run.lsr");
        let mut args = vec!["-l", "200", "-q", "--best-effort"];
        args.extend(opt);
        record_file(&args, &rec);
        let r = host(&["report", &rec.display().to_string()]);
        assert_eq!(r.status.code(), Some(0));
        let text = String::from_utf8_lossy(&r.stdout);
        match line {
            Some(l) => assert!(text.contains(l), "{opt:?}: {text}"),
            None => assert!(!text.contains("MODE:"), "{text}"),
        }
    }
}
