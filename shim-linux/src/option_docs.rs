//! The option table and the layout of `--help`, read-only: what the man
//! page and the shell completions are generated from (by a development
//! tool of the workspace), so that the parser, `--help` and they cannot
//! disagree; and the exit statuses, which the documentation's table is
//! checked against. The program itself does not use this module.

use crate::config::{self, Arg, Help, Shown, OPTIONS};

/// One option of the table, in the table's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The long name, without `--`.
    pub long: &'static str,
    /// The short letter, if any.
    pub short: Option<char>,
    /// The value's name in `--help` (`US`, `CPUSET`), if it takes one.
    pub value: Option<&'static str>,
    /// Whether that value may be left out (`-t`, `-a`, `-A`,
    /// `--secaligned`).
    pub value_optional: bool,
    /// Whether cyclictest 2.4 has it.
    pub cyclictest: bool,
    /// Its text in `--help`, its lines broken where `--help` breaks them
    /// (the histogram memory figures filled in). Empty for an option
    /// [`joined`](Entry::joined) to the one before it.
    pub help: String,
    /// Named in the entry of the option before it, whose text describes
    /// both (the `--deadline-*` trio).
    pub joined: bool,
    /// Not in `--help` (the proof scripts' options): what it does.
    pub hidden: Option<&'static str>,
}

/// Every option, in the table's order.
pub fn entries() -> Vec<Entry> {
    OPTIONS
        .iter()
        .map(|s| {
            let (value, value_optional) = match s.arg {
                Arg::No => (None, false),
                Arg::Required(v) => (Some(v), false),
                Arg::Optional(_, v) => (Some(v), true),
            };
            let (help, joined, hidden) = match s.help {
                Help::Text(t) => (config::fill(t, "\n"), false, None),
                Help::Joined => (String::new(), true, None),
                #[cfg(feature = "proof")]
                Help::Hidden(t) => (String::new(), false, Some(t)),
            };
            Entry {
                long: s.long,
                short: s.short,
                value,
                value_optional,
                cyclictest: s.cyclictest,
                help,
                joined,
                hidden,
            }
        })
        .collect()
}

/// One item of a section of `--help`'s option list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelpRow {
    /// An option's entry: the long name of its [`Entry`] (the entries
    /// joined to it follow it in [`entries`]).
    Option(&'static str),
    /// An entry that is no option, e.g. the default wait of a cycle: a
    /// label and its text.
    Row(&'static str, &'static str),
}

/// A section of `--help`'s option list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Its heading.
    pub heading: &'static str,
    /// Its items, in `--help`'s order.
    pub items: Vec<HelpRow>,
}

/// The sections of `--help`'s option list, in its order; every option
/// that is neither hidden nor joined is in exactly one.
pub fn sections() -> Vec<Section> {
    config::sections()
        .into_iter()
        .map(|(heading, items)| Section {
            heading,
            items: items
                .into_iter()
                .filter_map(|i| match i {
                    Shown::Opt(o) => OPTIONS
                        .iter()
                        .find(|s| s.opt == o)
                        .map(|s| HelpRow::Option(s.long)),
                    Shown::Row(label, text) => Some(HelpRow::Row(label, text)),
                })
                .collect(),
        })
        .collect()
}

/// What `--help` says before the option list: its first line, the usage
/// line and the description, in paragraphs.
pub fn intro() -> &'static str {
    config::intro()
}

/// What `--help` says after the option list: signals, exit statuses, PID 1.
pub fn outro() -> &'static str {
    config::outro()
}

/// Every exit status the program can leave with, ascending (what the
/// outro and `docs/running.md` document).
pub use crate::error::EXIT_STATUSES;

/// The whole `--help` text, as the program prints it.
pub fn help() -> String {
    config::help()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sections hold each shown option once and no other; the help
    /// texts are `--help`'s.
    #[test]
    fn sections_cover_the_shown_options_once() {
        let sections = sections();
        let entries = entries();
        for e in &entries {
            let n = sections
                .iter()
                .flat_map(|s| &s.items)
                .filter(|i| **i == HelpRow::Option(e.long))
                .count();
            let shown = !e.joined && e.hidden.is_none();
            assert_eq!(n, usize::from(shown), "--{}", e.long);
            if shown {
                let first = e.help.lines().next().unwrap_or_default();
                assert!(!first.is_empty() && help().contains(first), "--{}", e.long);
            }
        }
        assert!(entries.iter().any(|e| e.help.contains("576 KiB at 20000")));
        assert!(!entries.iter().any(|e| e.help.contains("{MEM}")));
    }
}
