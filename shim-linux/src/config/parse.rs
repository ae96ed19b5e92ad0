//! The command-line parser. A hand-written parser keeps the static binary
//! small.
//!
//! Rules: a bad value is one line of error and exit status 2; nothing here
//! panics on any input.

use latscope_core::layout::MAX_LINEAR_US;
use latscope_core::wire::{ClockKind, Policy};

use super::cpus::{parse_cpu_list, CpuList};
use super::{Action, Config, Dest, Threads};
use crate::bench;
use crate::error::Error;

/// Largest `-h` range: the widest 1 µs range of a histogram.
const MAX_HIST_US: u32 = MAX_LINEAR_US;
/// Largest interval: 1 hour.
const MAX_INTERVAL_US: u64 = 3_600_000_000;

/// The options that take a value, long name → short letter (if any).
const WITH_VALUE: &[(&str, Option<char>)] = &[
    ("breaktrace", Some('b')),
    ("clock", Some('c')),
    ("distance", Some('d')),
    ("duration", Some('D')),
    ("histogram", Some('h')),
    ("histofall", Some('H')),
    ("histfile", None),
    ("interval", Some('i')),
    ("json", None),
    ("loops", Some('l')),
    ("priority", Some('p')),
    ("policy", None),
    ("spike", None),
    ("mainaffinity", None),
    ("latency", None),
    ("stream", None),
    ("name", None),
    ("warmup", None),
    ("report-interval", None),
    ("deadline-runtime", None),
    ("deadline-deadline", None),
    ("deadline-period", None),
    ("explain", None),
];

/// The options without a value, long name → short letter (if any).
const FLAGS: &[(&str, Option<char>)] = &[
    ("mlockall", Some('m')),
    ("nsecs", Some('N')),
    ("quiet", Some('q')),
    ("smp", Some('S')),
    ("verbose", Some('v')),
    ("priospread", None),
    ("tracemark", None),
    ("default-system", None),
    ("no-mlock", None),
    ("best-effort", None),
    ("self-check", None),
    ("help", None),
    ("version", None),
];

/// Options whose value is optional (`-a [CPUSET]`, `-t [N]`).
const OPTIONAL: &[(&str, char)] = &[("affinity", 'a'), ("threads", 't')];

/// One option of a word: its long name and its inline value.
type Opt = (&'static str, Option<String>);

/// Parse the arguments after the program name.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Action, Error> {
    let mut p = Parser {
        args: args.iter().map(AsRef::as_ref).collect(),
        next: 0,
        cfg: Config::default(),
        saw_p: false,
    };
    while let Some(arg) = p.args.get(p.next).copied() {
        p.next += 1;
        for (name, inline) in options_in(arg)? {
            if let Some(action) = p.apply(name, inline)? {
                return Ok(action);
            }
        }
    }
    let Parser { mut cfg, saw_p, .. } = p;
    check_policy(&mut cfg, saw_p)?;
    check_deadline(&mut cfg)?;
    check_combinations(&cfg)?;
    Ok(Action::Run(Box::new(cfg)))
}

/// The options one word holds: `--name[=value]`, or a cluster of short
/// letters whose last may take the rest of the word as its value.
fn options_in(arg: &str) -> Result<Vec<Opt>, Error> {
    if let Some(rest) = arg.strip_prefix("--") {
        let (name, inline) = match rest.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (rest, None),
        };
        return match known(name) {
            Some(l) => Ok(vec![(l, inline)]),
            None => Err(Error::usage(format!("unknown option --{name}"))),
        };
    }
    let Some(rest) = arg.strip_prefix('-').filter(|r| !r.is_empty()) else {
        return Err(Error::usage(format!("unexpected argument '{arg}'")));
    };
    let chars: Vec<char> = rest.chars().collect();
    let mut out = Vec::new();
    for (k, &c) in chars.iter().enumerate() {
        if let Some(l) = long_of(c, FLAGS) {
            out.push((l, None));
        } else if let Some(l) = long_of(c, WITH_VALUE)
            .or_else(|| OPTIONAL.iter().find(|(_, s)| *s == c).map(|(l, _)| *l))
        {
            let tail: String = chars[k + 1..].iter().collect();
            let tail = tail.strip_prefix('=').map(str::to_string).unwrap_or(tail);
            out.push((l, (!tail.is_empty()).then_some(tail)));
            break;
        } else {
            return Err(Error::usage(format!("unknown option -{c}")));
        }
    }
    Ok(out)
}

/// The static long name of a known option.
fn known(name: &str) -> Option<&'static str> {
    WITH_VALUE
        .iter()
        .chain(FLAGS.iter())
        .map(|(l, _)| *l)
        .chain(OPTIONAL.iter().map(|(l, _)| *l))
        .chain(bench::FLAGS.iter().copied())
        .chain(bench::VALUES.iter().map(|(l, _)| *l))
        .find(|l| *l == name)
}

fn long_of(short: char, table: &[(&'static str, Option<char>)]) -> Option<&'static str> {
    table
        .iter()
        .find(|(_, s)| *s == Some(short))
        .map(|(l, _)| *l)
}

struct Parser<'a> {
    args: Vec<&'a str>,
    /// Index of the next word.
    next: usize,
    cfg: Config,
    /// `-p` was given.
    saw_p: bool,
}

impl Parser<'_> {
    /// Apply one option; `Some` for `--help` and `--version`.
    fn apply(
        &mut self,
        name: &'static str,
        inline: Option<String>,
    ) -> Result<Option<Action>, Error> {
        if FLAGS.iter().any(|(l, _)| *l == name) || bench::FLAGS.contains(&name) {
            if inline.is_some() {
                return Err(Error::usage(format!("--{name} takes no value")));
            }
            return Ok(self.set_flag(name));
        }
        if OPTIONAL.iter().any(|(l, _)| *l == name) {
            self.set_optional(name, inline)?;
            return Ok(None);
        }
        let value = match inline {
            Some(v) => v,
            None => match self.args.get(self.next) {
                Some(v) => {
                    self.next += 1;
                    v.to_string()
                }
                None => return Err(Error::usage(format!("--{name} needs a value"))),
            },
        };
        if let Some(&(_, max)) = bench::VALUES.iter().find(|(l, _)| *l == name) {
            let n = parse_u64(&format!("--{name}"), &value, 0, max)?;
            self.cfg.bench.set_value(name, n);
        } else {
            self.set_value(name, &value)?;
        }
        Ok(None)
    }

    fn set_flag(&mut self, name: &str) -> Option<Action> {
        let c = &mut self.cfg;
        match name {
            "help" => return Some(Action::Help),
            "version" => return Some(Action::Version),
            "mlockall" => c.mlock = true,
            "no-mlock" => c.mlock = false,
            "nsecs" => c.nsecs = true,
            "quiet" => c.quiet = true,
            "smp" => c.smp = true,
            "verbose" => c.verbose = true,
            "priospread" => c.priospread = true,
            "tracemark" => c.tracemark = true,
            "default-system" => c.default_system = true,
            "best-effort" => c.best_effort = true,
            "self-check" => c.self_check = true,
            hidden => {
                c.bench.set_flag(hidden);
                // the probe proves the self-check, so it needs one
                c.self_check |= c.bench.self_check_probe;
            }
        }
        None
    }

    /// `-a` and `-t`: cyclictest also takes the value as the next word
    /// when it looks like one (`-a 0,1`, `-t 2`).
    fn set_optional(&mut self, name: &str, inline: Option<String>) -> Result<(), Error> {
        let value = match inline {
            Some(v) => Some(v),
            None => match self.args.get(self.next) {
                Some(next) if next.starts_with(|c: char| c.is_ascii_digit() || c == '!') => {
                    self.next += 1;
                    Some(next.to_string())
                }
                _ => None,
            },
        };
        if name == "affinity" {
            self.cfg.affinity = Some(match value {
                Some(v) => parse_cpu_list(&v).map_err(|e| Error::usage(format!("-a {v}: {e}")))?,
                None => CpuList::All,
            });
        } else {
            self.cfg.threads = Some(match value {
                Some(v) => Threads::Count(parse_u64("-t", &v, 1, 1024)? as usize),
                None => Threads::PerCpu,
            });
        }
        Ok(())
    }

    fn set_value(&mut self, name: &str, v: &str) -> Result<(), Error> {
        let c = &mut self.cfg;
        match name {
            "breaktrace" => c.break_us = parse_u64("-b", v, 1, MAX_INTERVAL_US)?,
            "clock" => c.clock = parse_clock(v)?,
            "distance" => c.distance_us = Some(parse_u64("-d", v, 0, MAX_INTERVAL_US)?),
            "duration" => c.duration_ns = parse_duration("-D", v)?,
            "histogram" | "histofall" => {
                c.hist_us = parse_hist(name, v)?;
                c.hist_all |= name == "histofall";
            }
            "histfile" => c.histfile = Some(nonempty("--histfile", v)?),
            "interval" => c.interval_us = parse_u64("-i", v, 1, MAX_INTERVAL_US)?,
            "json" => c.json = Some(nonempty("--json", v)?),
            "loops" => c.loops = parse_u64("-l", v, 0, u64::MAX / 4)?,
            "priority" => {
                c.priority = parse_u64("-p", v, 0, 99)? as u32;
                self.saw_p = true;
            }
            "policy" => c.policy = parse_policy(v)?,
            "spike" => c.spike_us = parse_u64("--spike", v, 1, MAX_INTERVAL_US)?,
            "mainaffinity" => {
                c.mainaffinity = Some(
                    parse_cpu_list(v)
                        .map_err(|e| Error::usage(format!("--mainaffinity {v}: {e}")))?,
                )
            }
            "latency" => c.latency_us = parse_u64("--latency", v, 0, i32::MAX as u64)? as i32,
            "stream" => c.stream = Some(parse_dest(v)?),
            "name" => {
                if !super::name::valid_name(v) {
                    return Err(Error::usage(format!(
                        "--name {v}: 1 to {} letters, digits, '-', '_' or '.'",
                        super::name::MAX_NAME
                    )));
                }
                c.name = Some(v.to_string());
            }
            "warmup" => c.warmup_ns = parse_duration("--warmup", v)?,
            "report-interval" => c.report_ns = parse_report_interval(v)?,
            "deadline-runtime" => {
                c.dl_runtime_us = parse_u64("--deadline-runtime", v, 1, MAX_INTERVAL_US)?
            }
            "deadline-deadline" => {
                c.dl_deadline_us = parse_u64("--deadline-deadline", v, 1, MAX_INTERVAL_US)?
            }
            "deadline-period" => {
                c.dl_period_us = parse_u64("--deadline-period", v, 1, MAX_INTERVAL_US)?
            }
            "explain" => c.explain_us = parse_u64("--explain", v, 1, MAX_INTERVAL_US)?,
            _ => return Err(Error::usage(format!("unknown option --{name}"))),
        }
        Ok(())
    }
}

/// cyclictest: `-p` implies SCHED_FIFO; non-RT policies have priority 0.
fn check_policy(cfg: &mut Config, saw_p: bool) -> Result<(), Error> {
    match cfg.policy {
        Policy::Fifo | Policy::Rr => {
            if cfg.priority == 0 {
                return Err(Error::usage(format!(
                    "-p 0 with --policy {}: real-time priorities are 1..99",
                    cfg.policy.name()
                )));
            }
        }
        Policy::Deadline => cfg.priority = 0,
        Policy::Other | Policy::Batch | Policy::Idle => {
            if saw_p && cfg.priority > 0 {
                return Err(Error::usage(format!(
                    "-p {} needs a real-time policy (fifo or rr), not --policy {}",
                    cfg.priority,
                    cfg.policy.name()
                )));
            }
            cfg.priority = 0;
        }
    }
    Ok(())
}

/// SCHED_DEADLINE's defaults (period = interval, deadline = period,
/// runtime = deadline / 10) and its rule runtime <= deadline <= period.
fn check_deadline(cfg: &mut Config) -> Result<(), Error> {
    if cfg.policy != Policy::Deadline {
        if cfg.dl_runtime_us + cfg.dl_deadline_us + cfg.dl_period_us > 0 {
            return Err(Error::usage("--deadline-* options need --policy deadline"));
        }
        return Ok(());
    }
    let or = |v: u64, default: u64| if v > 0 { v } else { default };
    let period = or(cfg.dl_period_us, cfg.interval_us);
    let deadline = or(cfg.dl_deadline_us, period);
    let runtime = or(cfg.dl_runtime_us, (deadline / 10).max(2));
    if !(runtime <= deadline && deadline <= period) {
        return Err(Error::usage(format!(
            "deadline parameters need runtime <= deadline <= period (got {runtime} <= {deadline} <= {period} us)"
        )));
    }
    cfg.dl_period_us = period;
    cfg.dl_deadline_us = deadline;
    cfg.dl_runtime_us = runtime;
    Ok(())
}

/// Options that exclude or need each other.
fn check_combinations(cfg: &Config) -> Result<(), Error> {
    if cfg.nsecs && cfg.hist_us > 0 {
        return Err(Error::usage(
            "-N with -h/-H: the histogram text rows are 1 us wide; drop -N (the stream and --json keep ns)",
        ));
    }
    if cfg.verbose && cfg.quiet {
        return Err(Error::usage("-v and -q exclude each other"));
    }
    if cfg.tracemark && cfg.break_us == 0 {
        return Err(Error::usage("--tracemark needs -b US"));
    }
    if cfg.histfile.is_some() && cfg.hist_us == 0 {
        return Err(Error::usage("--histfile needs -h US or -H US"));
    }
    if cfg.policy != Policy::Deadline && cfg.priospread && cfg.priority < 2 {
        return Err(Error::usage("--priospread needs -p 2 or more"));
    }
    Ok(())
}

fn nonempty(flag: &str, v: &str) -> Result<String, Error> {
    if v.is_empty() {
        Err(Error::usage(format!("{flag}: empty path")))
    } else {
        Ok(v.to_string())
    }
}

/// A decimal integer in `lo..=hi`.
fn parse_u64(flag: &str, v: &str, lo: u64, hi: u64) -> Result<u64, Error> {
    let n: u64 = v
        .parse()
        .map_err(|_| Error::usage(format!("{flag} '{v}': not a whole number")))?;
    if n < lo || n > hi {
        return Err(Error::usage(format!(
            "{flag} {n}: must be between {lo} and {hi}"
        )));
    }
    Ok(n)
}

/// A duration: a whole number with an optional unit `ms`, `s` (the
/// default, as cyclictest's `-D`), `m`, `h` or `d`. Returns ns.
fn parse_duration(flag: &str, v: &str) -> Result<u64, Error> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let ns_per: u64 = match unit {
        "" | "s" => 1_000_000_000,
        "ms" => 1_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => {
            return Err(Error::usage(format!(
                "{flag} '{v}': unit must be ms, s, m, h or d"
            )))
        }
    };
    let n: u64 = num
        .parse()
        .map_err(|_| Error::usage(format!("{flag} '{v}': not a duration")))?;
    n.checked_mul(ns_per)
        .filter(|ns| *ns <= 100 * 365 * 86_400_000_000_000)
        .ok_or_else(|| Error::usage(format!("{flag} '{v}': too long")))
}

fn parse_report_interval(v: &str) -> Result<u64, Error> {
    let ns = parse_duration("--report-interval", v)?;
    if ns < 100_000_000 {
        return Err(Error::usage(format!(
            "--report-interval {v}: must be at least 100ms"
        )));
    }
    Ok(ns)
}

/// `-h US` or `-H US`.
fn parse_hist(name: &str, v: &str) -> Result<u32, Error> {
    let flag = if name == "histogram" { "-h" } else { "-H" };
    let us = parse_u64(flag, v, 1, u64::MAX)?;
    if us > MAX_HIST_US as u64 {
        return Err(Error::usage(format!(
            "{flag} {us}: above latscope's cap of {MAX_HIST_US} us rows \
             (cyclictest clamps silently; latscope keeps larger latencies \
             exactly in the stream and --json)"
        )));
    }
    Ok(us as u32)
}

fn parse_clock(v: &str) -> Result<ClockKind, Error> {
    match v {
        "0" | "monotonic" => Ok(ClockKind::Monotonic),
        "1" | "realtime" => Ok(ClockKind::Realtime),
        _ => Err(Error::usage(format!(
            "-c {v}: use 0|monotonic or 1|realtime"
        ))),
    }
}

fn parse_policy(v: &str) -> Result<Policy, Error> {
    Ok(match v {
        "other" | "normal" => Policy::Other,
        "batch" => Policy::Batch,
        "idle" => Policy::Idle,
        "fifo" => Policy::Fifo,
        "rr" => Policy::Rr,
        "deadline" => Policy::Deadline,
        _ => {
            return Err(Error::usage(format!(
                "--policy {v}: use fifo, rr, deadline, other, batch or idle"
            )))
        }
    })
}

/// `-`, a path, `tcp:IP:PORT` or `serial:/dev/ttyX[:BAUD]`.
fn parse_dest(v: &str) -> Result<Dest, Error> {
    if v == "-" {
        return Ok(Dest::Stdout);
    }
    if let Some(addr) = v.strip_prefix("tcp:") {
        let sa: std::net::SocketAddr = addr.parse().map_err(|_| {
            Error::usage(format!(
                "--stream {v}: expected tcp:IP:PORT with an IP literal (e.g. tcp:192.168.1.2:5000, tcp:[::1]:5000); names are not resolved"
            ))
        })?;
        if sa.port() == 0 {
            return Err(Error::usage(format!("--stream {v}: port 0")));
        }
        return Ok(Dest::Tcp(sa));
    }
    if let Some(rest) = v.strip_prefix("serial:") {
        return parse_serial(v, rest);
    }
    if v.is_empty() {
        return Err(Error::usage("--stream: empty destination"));
    }
    Ok(Dest::File(v.to_string()))
}

/// `serial:PATH[:BAUD]` (`rest` is what follows `serial:` in `v`).
fn parse_serial(v: &str, rest: &str) -> Result<Dest, Error> {
    let (path, baud) = match rest.rsplit_once(':') {
        Some((p, b)) if !b.is_empty() && b.chars().all(|c| c.is_ascii_digit()) => (
            p,
            parse_u64("--stream serial baud", b, 50, 16_000_000)? as u32,
        ),
        _ => (rest, 115_200),
    };
    if !path.starts_with('/') {
        return Err(Error::usage(format!(
            "--stream {v}: expected serial:/dev/ttyX[:BAUD]"
        )));
    }
    Ok(Dest::Serial {
        path: path.to_string(),
        baud,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(args: &[&str]) -> Config {
        match parse(args) {
            Ok(Action::Run(c)) => *c,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn cyclictest_spellings() {
        let c = ok(&[
            "-t", "2", "-a", "0,1", "-d", "0", "-m", "-p", "80", "-i", "200", "-l", "20000", "-q",
        ]);
        assert_eq!(c.threads, Some(Threads::Count(2)));
        assert_eq!(c.affinity, Some(CpuList::Only(vec![0, 1])));
        assert_eq!((c.interval_us, c.distance(), c.loops), (200, 0, 20000));
        assert!(c.quiet && c.mlock);
        let c = ok(&[
            "-mq",
            "-i100",
            "--duration=1m",
            "-h",
            "50",
            "--json=/tmp/x.json",
        ]);
        assert_eq!(
            (c.interval_us, c.duration_ns, c.hist_us),
            (100, 60_000_000_000, 50)
        );
        assert_eq!(c.distance(), 0, "-h sets the distance to 0");
        assert_eq!(c.json.as_deref(), Some("/tmp/x.json"));
        let c = ok(&["-t", "-a"]);
        assert_eq!(
            (c.threads, c.affinity),
            (Some(Threads::PerCpu), Some(CpuList::All))
        );
        let c = ok(&["-S", "--policy=rr", "--priospread", "-p", "90"]);
        assert!(c.smp && c.priospread);
        assert_eq!((c.policy, c.priority), (Policy::Rr, 90));
        let c = ok(&["--policy", "other"]);
        assert_eq!((c.policy, c.priority), (Policy::Other, 0));
        let c = ok(&["--policy", "deadline", "-i", "1000"]);
        assert_eq!(
            (c.dl_runtime_us, c.dl_deadline_us, c.dl_period_us),
            (100, 1000, 1000)
        );
        let c = ok(&[
            "--no-mlock",
            "--best-effort",
            "--warmup",
            "500ms",
            "--report-interval",
            "2s",
        ]);
        assert!(!c.mlock && c.best_effort);
        assert_eq!((c.warmup_ns, c.report_ns), (500_000_000, 2_000_000_000));
        assert_eq!(ok(&["-c", "realtime"]).clock, ClockKind::Realtime);
        assert!(ok(&["--default-system", "--latency", "10"]).default_system);
        assert_eq!(parse(&["--help"]), Ok(Action::Help));
        let c = ok(&["--self-check-probe", "--ballast-mib", "3"]);
        assert!(c.self_check && c.bench.self_check_probe);
        assert_eq!((c.bench.ballast_mib, c.bench.no_exit_demote), (3, false));
        assert_eq!(parse(&["-q", "--version"]), Ok(Action::Version));
    }

    #[test]
    fn destinations() {
        assert_eq!(parse_dest("-"), Ok(Dest::Stdout));
        assert_eq!(
            parse_dest("/tmp/r.bin"),
            Ok(Dest::File("/tmp/r.bin".into()))
        );
        assert_eq!(
            parse_dest("tcp:10.0.0.2:5000"),
            Ok(Dest::Tcp("10.0.0.2:5000".parse().unwrap()))
        );
        assert!(matches!(parse_dest("tcp:[::1]:9"), Ok(Dest::Tcp(_))));
        assert_eq!(
            parse_dest("serial:/dev/ttyAMA1"),
            Ok(Dest::Serial {
                path: "/dev/ttyAMA1".into(),
                baud: 115_200
            })
        );
        assert_eq!(
            parse_dest("serial:/dev/ttyUSB0:921600"),
            Ok(Dest::Serial {
                path: "/dev/ttyUSB0".into(),
                baud: 921_600
            })
        );
        for bad in [
            "tcp:host:1",
            "tcp:1.2.3.4:0",
            "serial:tty",
            "serial:/dev/x:1",
            "",
        ] {
            assert!(parse_dest(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("-D", "10"), Ok(10_000_000_000));
        assert_eq!(parse_duration("-D", "2h"), Ok(7_200_000_000_000));
        assert_eq!(parse_duration("-D", "1d"), Ok(86_400_000_000_000));
        for bad in ["", "s", "1.5s", "-1", "10us", "3w", "99999999999d"] {
            assert!(parse_duration("-D", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn histogram_range_up_to_the_cap() {
        for us in ["1001", "3500", "20000"] {
            assert!(matches!(parse(&["-h", us]), Ok(Action::Run(_))), "-h {us}");
        }
        let e = parse(&["-H", "20001"]).unwrap_err();
        assert_eq!(e.exit_status(), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("cap of 20000 us"), "{e}");
    }

    #[test]
    fn bad_inputs_are_usage_errors_never_panics() {
        let table: &[&[&str]] = &[
            &["-i", "0"],
            &["-p", "100"],
            &["-h", "20001"],
            &["-H", "99999999"],
            &["-t", "x"],
            &["-a", ""],
            &["--policy"],
            &["-b", "0"],
            &["--spike", "-3"],
            &["--ballast-mib", "x"],
            &["-", "-"],
            &["--", "x"],
            &["-ï"],
            &["--=x"],
        ];
        for args in table {
            match parse(args) {
                Err(e) => assert_eq!(e.exit_status(), crate::error::EXIT_USAGE, "{args:?}"),
                Ok(a) => panic!("{args:?} accepted: {a:?}"),
            }
        }
    }
}
