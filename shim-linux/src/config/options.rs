//! The option table: every option of cyclictest 2.4 with the argument it
//! takes (its `getopt_long` table and short-option string), then
//! latscope's own and the hidden ones of the proof scripts.

/// What an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// Nothing.
    No,
    /// A value: the rest of the word (`-h3500`, `-h 3500` as one word,
    /// `--histogram=3500`) or the next word, whatever it is.
    Required,
    /// An optional value: the rest of the word, or `--name=value`, or the
    /// next word if it passes the [`Peek`] rule.
    Optional(Peek),
}

/// When an option with an optional value takes the next word, as
/// cyclictest 2.4 decides it (it reads `argv[optind]` itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peek {
    /// `-t`, `-A`, `--secaligned`: if `atoi()` of the word is non-zero.
    NonZero,
    /// `-a`: if `atoi()` of the word is non-zero or it starts with `0`,
    /// `!`, `+` or `a` (so `-a all` works).
    CpuSet,
}

/// One option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// The long name.
    pub long: &'static str,
    /// The short letter, if any.
    pub short: Option<char>,
    /// What it takes.
    pub arg: Arg,
    /// Whether cyclictest 2.4 has it (its abbreviations take precedence).
    pub cyclictest: bool,
}

const fn ct(long: &'static str, short: Option<char>, arg: Arg) -> Spec {
    Spec {
        long,
        short,
        arg,
        cyclictest: true,
    }
}

const fn own(long: &'static str, arg: Arg) -> Spec {
    Spec {
        long,
        short: None,
        arg,
        cyclictest: false,
    }
}

use Arg::{No, Optional, Required};

/// Every option latscope knows.
pub const OPTIONS: &[Spec] = &[
    // cyclictest 2.4, in the order of its table
    ct("affinity", Some('a'), Optional(Peek::CpuSet)),
    ct("aligned", Some('A'), Optional(Peek::NonZero)),
    ct("breaktrace", Some('b'), Required),
    ct("clock", Some('c'), Required),
    ct("default-system", None, No),
    ct("distance", Some('d'), Required),
    ct("duration", Some('D'), Required),
    ct("latency", None, Required),
    ct("fifo", Some('F'), Required),
    ct("histogram", Some('h'), Required),
    ct("histofall", Some('H'), Required),
    ct("histfile", None, Required),
    ct("interval", Some('i'), Required),
    ct("json", None, Required),
    ct("laptop", None, No),
    ct("loops", Some('l'), Required),
    ct("mainaffinity", None, Required),
    ct("mlockall", Some('m'), No),
    ct("refresh_on_max", Some('M'), No),
    ct("nsecs", Some('N'), No),
    ct("oscope", Some('o'), Required),
    ct("priority", Some('p'), Required),
    ct("quiet", Some('q'), No),
    ct("priospread", None, No),
    ct("relative", Some('r'), No),
    ct("resolution", Some('R'), No),
    ct("secaligned", None, Optional(Peek::NonZero)),
    ct("system", Some('s'), No),
    ct("smi", None, No),
    ct("smp", Some('S'), No),
    ct("spike", None, Required),
    ct("spike-nodes", None, Required),
    ct("threads", Some('t'), Optional(Peek::NonZero)),
    ct("tracemark", None, No),
    ct("unbuffered", Some('u'), No),
    ct("verbose", Some('v'), No),
    ct("dbg_cyclictest", None, No),
    ct("policy", None, Required),
    ct("help", None, No),
    ct("posix_timers", Some('x'), No),
    // latscope's own
    own("stream", Required),
    own("name", Required),
    own("no-mlock", No),
    own("best-effort", No),
    own("warmup", Required),
    own("report-interval", Required),
    own("deadline-runtime", Required),
    own("deadline-deadline", Required),
    own("deadline-period", Required),
    own("explain", Required),
    own("self-check", No),
    own("version", No),
    // the proof scripts' (see `bench`)
    own("self-check-probe", No),
    own("no-exit-demote", No),
    own("ballast-mib", Required),
];

/// The option with short letter `c`.
pub fn short(c: char) -> Option<&'static Spec> {
    OPTIONS.iter().find(|s| s.short == Some(c))
}

/// The option a long name means: the exact name, else the only option of
/// cyclictest 2.4 it abbreviates (as `getopt_long` does), else the only
/// latscope option it abbreviates. `Err` lists the candidates of an
/// ambiguous abbreviation (empty: no option at all).
pub fn long(name: &str) -> Result<&'static Spec, Vec<&'static str>> {
    if let Some(s) = OPTIONS.iter().find(|s| s.long == name) {
        return Ok(s);
    }
    if name.is_empty() {
        return Err(Vec::new());
    }
    let of = |cyclictest: bool| -> Vec<&'static Spec> {
        OPTIONS
            .iter()
            .filter(|s| s.long.starts_with(name) && (s.cyclictest || !cyclictest))
            .collect()
    };
    for candidates in [of(true), of(false)] {
        match candidates.as_slice() {
            [one] => return Ok(one),
            [] => continue,
            many => return Err(many.iter().map(|s| s.long).collect()),
        }
    }
    Err(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_letters_are_cyclictests() {
        // cyclictest 2.4's getopt string
        let letters = "a::A::b:c:d:D:F:h:H:i:l:MNo:p:mqrRsSt::uvx";
        let mut chars = letters.chars().peekable();
        let mut n = 0;
        while let Some(c) = chars.next() {
            let mut colons = 0;
            while chars.peek() == Some(&':') {
                chars.next();
                colons += 1;
            }
            let s = short(c).unwrap_or_else(|| panic!("-{c}"));
            let want = match colons {
                0 => matches!(s.arg, No),
                1 => matches!(s.arg, Required),
                _ => matches!(s.arg, Optional(_)),
            };
            assert!(want && s.cyclictest, "-{c}: {s:?}");
            n += 1;
        }
        assert_eq!(OPTIONS.iter().filter(|s| s.short.is_some()).count(), n);
    }

    #[test]
    fn abbreviations_as_getopt_long_with_cyclictests_first() {
        assert_eq!(long("dur").map(|s| s.long), Ok("duration"));
        // cyclictest has only --verbose; --version is latscope's
        assert_eq!(long("ver").map(|s| s.long), Ok("verbose"));
        assert_eq!(long("vers").map(|s| s.long), Ok("version"));
        assert_eq!(long("spike").map(|s| s.long), Ok("spike"));
        assert_eq!(
            long("hist").unwrap_err(),
            ["histogram", "histofall", "histfile"]
        );
        assert_eq!(long("str").map(|s| s.long), Ok("stream"));
        assert!(long("nope").unwrap_err().is_empty());
        assert!(long("").unwrap_err().is_empty());
    }
}
