//! The man pages and completions (`scripts/gen-docs`, `xtask/` (`cargo xtask docgen`)): groff
//! renders every page without a warning, every option that `latscope
//! --help` and each `latscope-host [SUB] --help` names is in its page (and
//! the target's page names no other), every subcommand has a page, and the
//! completions offer every option and are valid shell.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use latscope_testkit::host::bins;
use latscope_testkit::Scratch;
use latscope_testkit::{have, require};

/// The generated files, in a scratch directory.
fn generated() -> (Scratch, Vec<PathBuf>) {
    let dir = Scratch::new("man-pages");
    let files = xtask::docgen::generate(dir.path()).expect("generate the pages");
    (dir, files)
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn help(program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .expect("run --help");
    assert!(out.status.success(), "{} {args:?}", program.display());
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The options an option list of `--help` names: `--long` and `-x` of the
/// lines whose first word is an option (not the prose of the texts).
fn help_options(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("  ") && l.trim_start().starts_with('-'))
        // the label ends where two blanks start the text
        .flat_map(|l| option_words(l.trim_start().split("  ").next().unwrap_or_default()))
        .collect()
}

/// The options a page lists: those of its tag lines (the line after each
/// `.TP`), without roff's escapes.
fn page_options(roff: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = roff.lines().collect();
    lines
        .windows(2)
        .filter(|pair| pair[0] == ".TP")
        .flat_map(|pair| {
            let tag = pair[1]
                .replace("\\-", "-")
                .replace("\\fB", "")
                .replace("\\fI", "")
                .replace("\\fR", "");
            option_words(&tag)
        })
        .collect()
}

/// The words of an option label that are options: `-t, --threads[=N]`
/// gives `-t` and `--threads`.
fn option_words(label: &str) -> Vec<String> {
    label
        .split([',', ' ', '[', '=', '<'])
        .filter(|w| w.starts_with('-') && w.len() > 1)
        .map(|w| {
            w.chars()
                .take_while(|c| *c == '-' || *c == '_' || c.is_ascii_alphanumeric())
                .collect()
        })
        .collect()
}

fn page<'a>(files: &'a [PathBuf], name: &str) -> &'a Path {
    files
        .iter()
        .find(|f| f.file_name().is_some_and(|n| n == name))
        .unwrap_or_else(|| panic!("no page {name} in {files:?}"))
}

#[test]
fn groff_renders_every_page_without_a_warning() {
    require!(have("groff"), "groff is not installed (Debian: groff-base)");
    let (_dir, files) = generated();
    let pages: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "1" || e == "8"))
        .collect();
    assert!(pages.len() >= 2, "{files:?}");
    for p in pages {
        let out = Command::new("groff")
            .args(["-man", "-ww", "-z"])
            .arg(p)
            .output()
            .expect("run groff");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "{}: {stderr}",
            p.display()
        );
    }
}

#[test]
fn the_target_page_lists_exactly_the_options_of_its_help() {
    let (_dir, files) = generated();
    let roff = read(page(&files, "latscope.8"));
    let want = help_options(&help(&bins().latscope, &["--help"]));
    // cyclictest's 26 short letters and some 50 long names
    assert!(want.len() > 70, "{want:?}");
    assert_eq!(page_options(&roff), want);
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "EXIT STATUS",
        "SEE ALSO",
    ] {
        assert!(roff.contains(&format!(".SH {section}\n")), "{section}");
    }
    let exit = roff.split(".SH EXIT STATUS\n").nth(1).unwrap_or_default();
    for status in [
        "0 completed",
        "1 failed run",
        "2 bad command line",
        "3 missing privilege",
        "4 completed but output lost",
    ] {
        assert!(exit.contains(status), "{status}: {exit}");
    }
    assert!(roff.contains(".BR cyclictest (8)") && roff.contains(".BR latscope-host (1)"));
}

#[test]
fn every_host_subcommand_has_a_page_with_its_options() {
    let (_dir, files) = generated();
    let host = bins().host;
    let top = help(&host, &["--help"]);
    let commands: Vec<String> = top
        .split("Commands:\n")
        .nth(1)
        .unwrap_or_default()
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(String::from)
        .collect();
    for sub in ["record", "report", "compare", "simulate"] {
        assert!(
            commands.iter().any(|c| c == sub),
            "{sub} not in --help: {top}"
        );
    }
    assert!(top.contains("Quick start"), "{top}");
    let mut pages = vec![("latscope-host.1".to_string(), top)];
    for sub in &commands {
        pages.push((
            format!("latscope-host-{sub}.1"),
            help(&host, &[sub, "--help"]),
        ));
    }
    for (name, text) in pages {
        let roff = read(page(&files, &name));
        let want = help_options(&text);
        assert!(want.contains("--help"), "{name}: {want:?}");
        let listed = page_options(&roff);
        let missing: Vec<_> = want.difference(&listed).collect();
        assert!(missing.is_empty(), "{name} lacks {missing:?}");
    }
}

#[test]
fn completions_offer_every_option_and_parse() {
    let (_dir, files) = generated();
    let offered = [
        (
            "latscope",
            help_options(&help(&bins().latscope, &["--help"])),
        ),
        (
            "latscope-host",
            help_options(&help(&bins().host, &["record", "--help"])),
        ),
    ];
    for shell in xtask::docgen::SHELLS {
        let program = shell.to_string();
        for (bin, options) in &offered {
            let name = xtask::docgen::completion_file(shell, bin);
            let file = page(&files, &name);
            let text = read(file);
            for long in options.iter().filter(|o| o.starts_with("--")) {
                // fish spells `-l threads`, bash and zsh `--threads`
                let fish = format!("-l {}", long.trim_start_matches('-'));
                assert!(
                    text.contains(long.as_str()) || text.contains(&fish),
                    "{name} ({program}) lacks {long}"
                );
            }
            if have(&program) {
                let flag = if program == "fish" {
                    "--no-execute"
                } else {
                    "-n"
                };
                let st = Command::new(&program)
                    .arg(flag)
                    .arg(file)
                    .status()
                    .expect("run the shell");
                assert!(st.success(), "{program} {flag} {name}");
            }
        }
    }
}
