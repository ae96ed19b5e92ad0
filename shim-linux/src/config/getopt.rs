//! The words of a command line as cyclictest 2.4's `getopt_long` sees
//! them: clusters of short letters (`-qmu`, `-Sp90`), a value attached or
//! in the next word (`-h3500`, `-h 3500`, and one word with a blank,
//! `"-h 3500"`), `--name=value` or `--name value`, unambiguous
//! abbreviations of long names, `--` to end the options, and cyclictest's
//! own rules for the optional values of `-a`, `-t`, `-A` and
//! `--secaligned` ([`Peek`]).
//!
//! Deliberate differences: an unknown option, a value given to an option
//! that takes none, and a word that is not an option are errors (cyclictest
//! prints its help and exits 0, or ignores the word).

use super::numbers::atoi;
use super::options::{self, Arg, Peek, Spec};
use crate::error::Error;

/// One option as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    /// Which option.
    pub spec: &'static Spec,
    /// Its value, if it has one.
    pub value: Option<String>,
    /// How it was written (`-h`, `--histogram`), for messages.
    pub spelled: String,
}

/// The options of `args` (the words after the program name), in order.
pub fn scan<S: AsRef<str>>(args: &[S]) -> Result<Vec<Given>, Error> {
    let words: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(&w) = words.get(i) {
        i += 1;
        if w == "--" {
            if let Some(stray) = words.get(i) {
                return Err(stray_word(stray));
            }
            break;
        }
        if let Some(body) = w.strip_prefix("--") {
            out.push(long_option(body, &words, &mut i)?);
        } else if w.len() > 1 && w.starts_with('-') {
            short_cluster(&w[1..], &words, &mut i, &mut out)?;
        } else {
            return Err(stray_word(w));
        }
    }
    Ok(out)
}

fn stray_word(w: &str) -> Error {
    Error::usage(format!("unexpected argument '{w}'"))
}

/// `--name`, `--name=value`, or `--name value` for a required value.
fn long_option(body: &str, words: &[&str], i: &mut usize) -> Result<Given, Error> {
    let (name, inline) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (body, None),
    };
    let spec = options::long(name).map_err(|candidates| {
        if candidates.is_empty() {
            Error::usage(format!("unknown option --{name}"))
        } else {
            Error::usage(format!(
                "option --{name} is ambiguous (--{})",
                candidates.join(", --")
            ))
        }
    })?;
    let spelled = format!("--{}", spec.long);
    let value = match spec.arg {
        Arg::No if inline.is_some() => {
            return Err(Error::usage(format!("{spelled} takes no value")))
        }
        Arg::No => None,
        Arg::Required(_) => Some(match inline {
            Some(v) => v,
            None => next_word(&spelled, words, i)?,
        }),
        Arg::Optional(peek, _) => inline.or_else(|| peeked(peek, words, i)),
    };
    Ok(Given {
        spec,
        value,
        spelled,
    })
}

/// `-abc`: flags up to the first letter that takes a value, which takes
/// the rest of the word (or, if none is left, the next word).
fn short_cluster(
    letters: &str,
    words: &[&str],
    i: &mut usize,
    out: &mut Vec<Given>,
) -> Result<(), Error> {
    for (k, c) in letters.char_indices() {
        let spec = options::short(c).ok_or_else(|| Error::usage(format!("unknown option -{c}")))?;
        let spelled = format!("-{c}");
        let rest = &letters[k + c.len_utf8()..];
        let value = match spec.arg {
            Arg::No => None,
            Arg::Required(_) if rest.is_empty() => Some(next_word(&spelled, words, i)?),
            Arg::Optional(peek, _) if rest.is_empty() => peeked(peek, words, i),
            Arg::Required(_) | Arg::Optional(..) => Some(rest.to_string()),
        };
        let takes_rest = value.is_some() && !rest.is_empty();
        out.push(Given {
            spec,
            value,
            spelled,
        });
        if takes_rest {
            break;
        }
    }
    Ok(())
}

/// The next word, which a required value takes whatever it is.
fn next_word(spelled: &str, words: &[&str], i: &mut usize) -> Result<String, Error> {
    let w = words
        .get(*i)
        .ok_or_else(|| Error::usage(format!("{spelled} needs a value")))?;
    *i += 1;
    Ok(w.to_string())
}

/// The next word as an optional value, if cyclictest would read it as one.
/// A word that reads as the number 0 after `-t`, `-A` or `--secaligned` is
/// consumed as "no value" (`-t 0` = one thread per CPU): cyclictest leaves
/// it to be ignored, latscope would otherwise refuse it as a stray word.
fn peeked(peek: Peek, words: &[&str], i: &mut usize) -> Option<String> {
    let w = *words.get(*i)?;
    if w.starts_with('-') {
        return None;
    }
    let n = atoi("", w).ok()?;
    let take = match peek {
        Peek::NonZero => n.value != 0,
        Peek::CpuSet => n.value != 0 || w.starts_with(['0', '!', '+', 'a']),
    };
    if take {
        *i += 1;
        return Some(w.to_string());
    }
    if peek == Peek::NonZero && n.clean() {
        *i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(args: &[&str]) -> Vec<(&'static str, Option<String>)> {
        scan(args)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .into_iter()
            .map(|g| (g.spec.long, g.value))
            .collect()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn rtevals_words() {
        let got = pairs(&["-i100", "-qmu", "-h 3500", "-p95", "-t2", "-a0-1"]);
        assert_eq!(
            got,
            [
                ("interval", s("100")),
                ("quiet", None),
                ("mlockall", None),
                ("unbuffered", None),
                ("histogram", s(" 3500")),
                ("priority", s("95")),
                ("threads", s("2")),
                ("affinity", s("0-1")),
            ]
        );
        assert_eq!(
            pairs(&["-Sp90", "-h400"]),
            [
                ("smp", None),
                ("priority", s("90")),
                ("histogram", s("400"))
            ]
        );
    }

    #[test]
    fn optional_values_follow_cyclictests_peeking() {
        assert_eq!(
            pairs(&["-t", "0", "-a", "all"]),
            [("threads", None), ("affinity", s("all"))]
        );
        assert_eq!(pairs(&["-t", "3"]), [("threads", s("3"))]);
        assert_eq!(pairs(&["--threads", "3"]), [("threads", s("3"))]);
        assert_eq!(pairs(&["-t", "-q"]), [("threads", None), ("quiet", None)]);
        assert_eq!(
            pairs(&["-a", "!0", "-A", "50"]),
            [("affinity", s("!0")), ("aligned", s("50"))]
        );
        assert_eq!(pairs(&["-a", "+1"]), [("affinity", s("+1"))]);
        assert_eq!(pairs(&["-a", "0"]), [("affinity", s("0"))]);
        assert_eq!(pairs(&["--secaligned", "0"]), [("secaligned", None)]);
        assert_eq!(pairs(&["--secaligned=250"]), [("secaligned", s("250"))]);
        // a word -t does not take and that is no number stays a word
        assert!(scan(&["-t", "x"]).is_err());
    }

    #[test]
    fn required_values_take_any_next_word() {
        assert_eq!(pairs(&["--json", "-"]), [("json", s("-"))]);
        assert_eq!(pairs(&["-i", "-5"]), [("interval", s("-5"))]);
        assert_eq!(pairs(&["--dur", "5"]), [("duration", s("5"))]);
        assert_eq!(pairs(&["-i=100"]), [("interval", s("=100"))]);
    }

    #[test]
    fn errors_are_one_line_usage_errors() {
        for args in [
            &["-Z"][..],
            &["--bogus"],
            &["--hist", "5"],
            &["--quiet=yes"],
            &["stray"],
            &["-"],
            &["--", "x"],
            &["-i"],
            &["--=x"],
            &["-ï"],
        ] {
            let e = scan(args).unwrap_err();
            assert_eq!(e.exit_status(), crate::error::EXIT_USAGE, "{args:?}: {e}");
        }
        assert_eq!(
            scan(&["--hist", "5"]).unwrap_err().to_string(),
            "option --hist is ambiguous (--histogram, --histofall, --histfile) (see --help)"
        );
        assert!(scan(&["--"]).unwrap().is_empty());
    }
}
