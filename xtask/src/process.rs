//! Running the programs a task measures or checks: one way to start them,
//! and one error when they fail.

use std::process::{Command, Stdio};

use crate::Error;

/// `cargo ARGS`, in the workspace's root.
pub fn cargo(args: &[&str]) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.args(args).current_dir(crate::root());
    cmd
}

/// The command line of `cmd`, for messages: the environment it sets, the
/// program and the arguments.
pub fn command_line(cmd: &Command) -> String {
    let env = cmd
        .get_envs()
        .filter_map(|(k, v)| v.map(|v| format!("{}={}", k.to_string_lossy(), v.to_string_lossy())));
    let words = std::iter::once(cmd.get_program()).chain(cmd.get_args());
    env.chain(words.map(|w| w.to_string_lossy().into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run `cmd` with its output on ours.
///
/// # Errors
///
/// [`Error::Command`] when it does not start or fails.
pub fn status(cmd: &mut Command) -> Result<(), Error> {
    let why = match cmd.status() {
        Ok(s) if s.success() => return Ok(()),
        Ok(s) => s.to_string(),
        Err(e) => e.to_string(),
    };
    Err(Error::Command {
        cmd: command_line(cmd),
        why,
    })
}

/// Run `cmd` and give its standard output; its standard error is in the
/// error when it fails.
///
/// # Errors
///
/// [`Error::Command`] when it does not start or fails.
pub fn stdout(cmd: &mut Command) -> Result<String, Error> {
    let why = match cmd.stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => return Ok(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => format!(
            "{}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => e.to_string(),
    };
    Err(Error::Command {
        cmd: command_line(cmd),
        why,
    })
}

/// The first line of `cmd`'s standard output, trimmed; `None` when it
/// fails or prints nothing (for the versions a result names).
pub fn first_line(cmd: &mut Command) -> Option<String> {
    let out = stdout(cmd).ok()?;
    let line = out.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_string())
}

/// A progress line on standard error.
pub fn log(what: &str) {
    eprintln!("# {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_the_command_line_in_errors() {
        assert_eq!(
            first_line(Command::new("echo").arg(" a \nb")).as_deref(),
            Some("a")
        );
        assert_eq!(first_line(&mut Command::new("true")), None);
        let err = stdout(
            Command::new("sh")
                .args(["-c", "echo oops >&2; exit 3"])
                .env("K", "v"),
        )
        .expect_err("exit 3 fails")
        .to_string();
        assert!(
            err.contains("K=v sh -c") && err.contains("exit status: 3") && err.contains("oops"),
            "{err}"
        );
        assert!(status(&mut Command::new("false")).is_err());
        assert!(status(&mut Command::new("a-program-that-is-not-there")).is_err());
    }
}
