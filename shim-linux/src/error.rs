//! The program's one error type. Variants say what went wrong; the exit
//! status follows from the variant ([`Error::exit_status`]), as
//! `docs/running.md` and `--help` document it.

use std::fmt;

use rustix::io::Errno;

/// Exit status of a completed run (also after `-b` stopped it).
pub const EXIT_OK: i32 = 0;
/// Exit status of a run that failed after it started (or found defects).
pub const EXIT_FAILED: i32 = 1;
/// Exit status of a bad command line.
pub const EXIT_USAGE: i32 = 2;
/// Exit status when a privilege is missing (and `--best-effort` was not given).
pub const EXIT_PRIVILEGE: i32 = 3;
/// Exit status of a run that measured but lost output, or could not
/// confirm it: frames of its stream never delivered, frames sent over TCP
/// but not acknowledged by the end, or a write to standard output,
/// standard error, `--json` or `--histfile` failed. Every output that
/// still worked has everything.
pub const EXIT_OUTPUT_LOST: i32 = 4;
/// Exit status when a `--slo` goal failed (over every other status of a
/// run, but not over an error that stopped it: a measuring thread's
/// error is [`EXIT_FAILED`] even when a goal failed).
pub const EXIT_GOAL_FAILED: i32 = 5;
/// Exit status when no `--slo` goal failed but one is inconclusive (over
/// [`EXIT_OUTPUT_LOST`] and [`EXIT_OK`], under [`EXIT_FAILED`]).
pub const EXIT_GOAL_INCONCLUSIVE: i32 = 6;

/// Every exit status latscope can leave with, in ascending order: the
/// table of `docs/running.md` ("Exit statuses") has a row for each, and
/// `tests/tests/exit_statuses.rs` holds the two to it.
pub const EXIT_STATUSES: [i32; 7] = [
    EXIT_OK,
    EXIT_FAILED,
    EXIT_USAGE,
    EXIT_PRIVILEGE,
    EXIT_OUTPUT_LOST,
    EXIT_GOAL_FAILED,
    EXIT_GOAL_INCONCLUSIVE,
];

/// Everything that stops latscope. Each variant prints as one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The command line is wrong (the message names the option).
    Usage(String),
    /// A privilege is missing: what failed, and the flags that run without it.
    Privilege {
        /// What could not be done, and why.
        what: String,
        /// The flags that avoid the step (completed with every other
        /// privileged step of the run by [`Error::with_run_hint`]).
        hint: String,
    },
    /// The kernel refused a request for a reason other than privilege
    /// (e.g. SCHED_DEADLINE admission control).
    Refused {
        /// The request and the kernel's answer.
        what: String,
        /// What to do instead.
        advice: &'static str,
    },
    /// A system call failed.
    Sys {
        /// What latscope was doing.
        what: String,
        /// The error number.
        errno: Errno,
    },
    /// An output (the stream, `--json`, `--histfile`) could not be opened or
    /// written.
    Output {
        /// The output.
        what: String,
        /// The error text.
        msg: String,
    },
    /// A facility the options ask for is missing from the kernel or the
    /// CPU, one the run could do without were it not asked for (`--smi`
    /// without a counter, `--deepest-idle-state` without cpuidle). Exit
    /// status [`EXIT_FAILED`]: the status of "a required kernel feature is
    /// missing", which `--timerlat` uses too (a kernel without the
    /// timerlat tracer or `timerlat_fd`).
    Unavailable(String),
    /// A thread could not be started.
    Thread {
        /// Which thread.
        what: &'static str,
        /// The error text.
        msg: String,
    },
    /// What a command latscope stands in for (`rtla`) has, but latscope
    /// cannot do: the command or option as that command spells it, and
    /// why (with what to do instead).
    Unsupported {
        /// The command or option (`rtla timerlat top`, `-C/--cgroup`).
        what: &'static str,
        /// Why latscope cannot honour it.
        why: &'static str,
    },
    /// An internal invariant does not hold (a bug).
    Internal(&'static str),
    /// The core refused a value or failed.
    Core(latscope_core::Error),
}

impl Error {
    /// A usage error.
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }

    /// A failed system call.
    pub fn sys(what: impl Into<String>, errno: Errno) -> Self {
        Error::Sys {
            what: what.into(),
            errno,
        }
    }

    /// A failed output.
    pub fn output(what: impl Into<String>, e: impl fmt::Display) -> Self {
        Error::Output {
            what: what.into(),
            msg: e.to_string(),
        }
    }

    /// A missing privilege: what failed, and the flags that avoid it.
    pub fn privilege(what: impl Into<String>, hint: impl Into<String>) -> Self {
        Error::Privilege {
            what: what.into(),
            hint: hint.into(),
        }
    }

    /// A missing privilege's hint replaced by `flags`, the flags that
    /// avoid every privileged step of the run (a retry with only the
    /// failed step's flag would stop at the next one); other errors as
    /// they are.
    pub fn with_run_hint(self, flags: String) -> Self {
        match self {
            Error::Privilege { what, .. } if !flags.is_empty() => Error::Privilege {
                what,
                hint: format!("{flags} (or --best-effort)"),
            },
            e => e,
        }
    }

    /// The process exit status for this error.
    pub fn exit_status(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Unsupported { .. } => EXIT_USAGE,
            Error::Privilege { .. } => EXIT_PRIVILEGE,
            Error::Refused { .. }
            | Error::Sys { .. }
            | Error::Output { .. }
            | Error::Unavailable(_)
            | Error::Thread { .. }
            | Error::Internal(_)
            | Error::Core(_) => EXIT_FAILED,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) => write!(f, "{m} (see --help)"),
            Error::Privilege { what, hint } => {
                write!(f, "{what}; run as root, or without it: {hint}")
            }
            Error::Refused { what, advice } => write!(f, "{what}: {advice}"),
            Error::Sys { what, errno } => write!(f, "{what}: {errno}"),
            Error::Output { what, msg } => write!(f, "{what}: {msg}"),
            Error::Unavailable(m) => f.write_str(m),
            Error::Thread { what, msg } => write!(f, "starting {what}: {msg}"),
            Error::Unsupported { what, why } => {
                write!(f, "{what} is not supported by latscope: {why}")
            }
            Error::Internal(m) => write!(f, "internal error: {m}"),
            Error::Core(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<latscope_core::Error> for Error {
    fn from(e: latscope_core::Error) -> Self {
        Error::Core(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_follows_the_meaning() {
        assert_eq!(Error::usage("-i 0").exit_status(), EXIT_USAGE);
        let u = Error::Unsupported {
            what: "-C/--cgroup",
            why: "latscope does not move its threads to another cgroup",
        };
        assert_eq!(u.exit_status(), EXIT_USAGE);
        assert_eq!(
            u.to_string(),
            "-C/--cgroup is not supported by latscope: \
             latscope does not move its threads to another cgroup"
        );
        let p = Error::privilege("mlockall failed", "--no-mlock");
        assert_eq!(p.exit_status(), EXIT_PRIVILEGE);
        assert_eq!(
            p.to_string(),
            "mlockall failed; run as root, or without it: --no-mlock"
        );
        let all = p.with_run_hint("--no-mlock --default-system".into());
        assert_eq!(
            all.to_string(),
            "mlockall failed; run as root, or without it: \
             --no-mlock --default-system (or --best-effort)"
        );
        for e in [
            Error::Refused {
                what: "SCHED_DEADLINE refused".into(),
                advice: "run unpinned",
            },
            Error::sys("pinning", Errno::INVAL),
            Error::output("--json x", "No space left on device"),
            Error::Unavailable("tracefs is not mounted".into()),
            Error::Internal("shared histogram claimed twice"),
        ] {
            assert_eq!(e.exit_status(), EXIT_FAILED, "{e}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }
}
