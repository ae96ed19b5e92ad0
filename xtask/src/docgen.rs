//! `cargo xtask docgen`: the man pages and shell completions of `latscope` and
//! `latscope-host`, generated from the tables their parsers read, so that
//! the parsers, `--help`, the pages and the completions cannot disagree.
//!
//! * `latscope.8` from the target's option table and `--help` layout
//!   ([`latscope::option_docs`]), written as roff here;
//! * `latscope-host.1` and one page per subcommand through clap_mangen
//!   from the host's clap command ([`latscope_host::cli::command`]);
//! * bash, zsh and fish completions through clap_complete: for the host
//!   from its command, for the target from a clap command built here
//!   from the option table ([`target_command`]).
//!
//! None of this is linked into either program: the xtask is not a
//! dependency of any of them.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, Command, ValueHint};
pub use clap_complete::Shell;

use latscope::option_docs::{self as options, Entry, HelpRow};

/// The version the pages name (the workspace's, the programs' own).
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The shells completions are written for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Write every page into `out/man/` and every completion into
/// `out/completions/SHELL/`; the files written.
pub fn generate(out: &Path) -> io::Result<Vec<PathBuf>> {
    let man = out.join("man");
    fs::create_dir_all(&man)?;
    let mut written = Vec::new();
    let page = man.join("latscope.8");
    fs::write(&page, target_page())?;
    written.push(page);
    for (name, text) in host_pages()? {
        let page = man.join(name);
        fs::write(&page, text)?;
        written.push(page);
    }
    for shell in SHELLS {
        let dir = out.join("completions").join(shell.to_string());
        fs::create_dir_all(&dir)?;
        for (bin, mut cmd) in [
            ("latscope", target_command()),
            ("latscope-host", latscope_host::cli::command()),
        ] {
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut cmd, bin, &mut text);
            let file = dir.join(completion_file(shell, bin));
            fs::write(&file, text)?;
            written.push(file);
        }
    }
    Ok(written)
}

/// The name a shell looks a completion up by: `latscope` (bash's
/// completions directory), `_latscope` (zsh's fpath), `latscope.fish`.
pub fn completion_file(shell: Shell, bin: &str) -> String {
    match shell {
        Shell::Zsh => format!("_{bin}"),
        Shell::Fish => format!("{bin}.fish"),
        _ => bin.to_string(),
    }
}

/// `latscope-host.1` and `latscope-host-SUB.1` for every subcommand (not
/// clap's `help`), as (file name, roff).
pub fn host_pages() -> io::Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = latscope_host::cli::command().disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    for cmd in std::iter::once(&cmd).chain(cmd.get_subcommands()) {
        let man = clap_mangen::Man::new(cmd.clone());
        let mut text = Vec::new();
        man.render(&mut text)?;
        pages.push((man.get_filename(), text));
    }
    Ok(pages)
}

/// The target's command line as a clap command, from its option table:
/// for the completions only (the target parses with its own getopt).
pub fn target_command() -> Command {
    let mut cmd = Command::new("latscope")
        .version(VERSION)
        .about(first_line(options::intro()))
        .disable_help_flag(true)
        .disable_version_flag(true);
    for e in options::entries() {
        let mut arg = Arg::new(e.long).long(e.long);
        if let Some(c) = e.short {
            arg = arg.short(c);
        }
        arg = match e.value {
            None => arg.action(ArgAction::SetTrue),
            Some(v) => {
                let hint = match v {
                    "PATH" | "FILE" => ValueHint::FilePath,
                    _ => ValueHint::Other,
                };
                arg.value_name(v)
                    .value_hint(hint)
                    .num_args(if e.value_optional { 0..=1 } else { 1..=1 })
            }
        };
        let help = match (e.hidden, e.joined) {
            (Some(_), _) => {
                arg = arg.hide(true);
                String::new()
            }
            (None, true) => "see --deadline-runtime".to_string(),
            (None, false) => one_line(&e.help),
        };
        cmd = cmd.arg(arg.help(help));
    }
    cmd
}

/// `latscope.8`: NAME, SYNOPSIS, DESCRIPTION, OPTIONS (in `--help`'s
/// sections and order), SIGNALS, EXIT STATUS, NOTES, SEE ALSO.
pub fn target_page() -> String {
    let entries = options::entries();
    let mut r = String::new();
    r.push_str(&format!(
        ".TH LATSCOPE 8 \"\" \"latscope {VERSION}\" \"System Administration\"\n"
    ));
    r.push_str(".SH NAME\nlatscope \\- real-time wake-up latency measurement, compatible with cyclictest\n");
    r.push_str(".SH SYNOPSIS\n.B latscope\n[\\fIOPTIONS\\fR]\n");
    r.push_str(".SH DESCRIPTION\n");
    // the intro's paragraphs after its first line and the usage line
    for (k, para) in paragraphs(options::intro()).iter().skip(2).enumerate() {
        if k > 0 {
            r.push_str(".PP\n");
        }
        text_line(&mut r, para);
    }
    r.push_str(".SH OPTIONS\n");
    for section in options::sections() {
        r.push_str(".SS ");
        r.push_str(&escape(section.heading));
        r.push('\n');
        for item in section.items {
            r.push_str(".TP\n");
            match item {
                HelpRow::Option(long) => {
                    let at = entries.iter().position(|e| e.long == long);
                    let Some(at) = at else { continue };
                    let joined = entries[at + 1..].iter().take_while(|e| e.joined);
                    let names: Vec<String> = std::iter::once(&entries[at])
                        .chain(joined)
                        .map(names)
                        .collect();
                    r.push_str(&names.join(", "));
                    r.push('\n');
                    text_line(&mut r, &one_line(&entries[at].help));
                }
                HelpRow::Row(label, text) => {
                    text_line(&mut r, label);
                    text_line(&mut r, &one_line(text));
                }
            }
        }
    }
    // the outro: signals, exit statuses, PID 1
    let outro = one_line(options::outro());
    let exit = outro.find("Exit status: ").unwrap_or(outro.len());
    let pid1 = outro[exit..]
        .find("When run as PID 1")
        .map_or(outro.len(), |k| exit + k);
    let signals = outro[..exit].trim().trim_start_matches("Signals: ");
    r.push_str(".SH SIGNALS\n");
    text_line(&mut r, signals);
    r.push_str(".SH EXIT STATUS\n");
    text_line(
        &mut r,
        outro[exit..pid1].trim_start_matches("Exit status: ").trim(),
    );
    r.push_str(".SH NOTES\n");
    text_line(&mut r, outro[pid1..].trim());
    r.push_str(".SH SEE ALSO\n.BR cyclictest (8),\n.BR latscope-host (1)\n");
    r
}

/// `\fB\-t\fR, \fB\-\-threads\fR[=\fIN\fR]`.
fn names(e: &Entry) -> String {
    let mut s = String::new();
    if let Some(c) = e.short {
        s.push_str(&format!("\\fB\\-{}\\fR, ", escape(&c.to_string())));
    }
    s.push_str(&format!("\\fB\\-\\-{}\\fR", escape(e.long)));
    if let Some(v) = e.value {
        let v = format!("=\\fI{}\\fR", escape(v));
        if e.value_optional {
            s.push_str(&format!("[{v}]"));
        } else {
            s.push_str(&v);
        }
    }
    s
}

/// `text` as one roff text line.
fn text_line(out: &mut String, text: &str) {
    let t = escape(text);
    if t.starts_with(['.', '\'']) {
        out.push_str("\\&");
    }
    out.push_str(&t);
    out.push('\n');
}

/// Roff-escaped text: backslashes, minus signs, characters beyond ASCII.
fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => s.push_str("\\e"),
            '-' => s.push_str("\\-"),
            c if c.is_ascii() => s.push(c),
            c => s.push_str(&format!("\\[u{:04X}]", u32::from(c))),
        }
    }
    s
}

/// The paragraphs of `text` (split at blank lines), each on one line.
fn paragraphs(text: &str) -> Vec<String> {
    text.split("\n\n")
        .map(one_line)
        .filter(|p| !p.is_empty())
        .collect()
}

/// The lines of `text` joined by single blanks.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first line of `text`.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}
