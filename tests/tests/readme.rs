//! The README is an entry, and its figures are generated: the table between
//! its `<!-- scorecard: ... -->` markers is `bench/results/scorecard/summary.md`,
//! which `cargo xtask scorecard --from-results` makes from the typed results
//! beside it. So a figure edited by hand in either place fails here. Also: the
//! README stays short, its test command is the one `.ci/run` runs, and every
//! relative link of the README, `docs/` and `bench/README.md` reaches a file
//! and, with a `#fragment`, one of its headings.

use std::fs;
use std::path::{Path, PathBuf};

use latscope_testkit::Scratch;
use xtask::scorecard::{self, Results, BEGIN, END};

const SCORECARD: &str = scorecard::DIR;

fn root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The text between the README's scorecard markers.
fn readme_block(readme: &str) -> &str {
    let start = readme
        .find(BEGIN)
        .expect("README has no scorecard begin marker")
        + BEGIN.len();
    let len = readme[start..]
        .find(END)
        .expect("README has no scorecard end marker after its begin marker");
    &readme[start..start + len]
}

#[test]
fn the_readme_quotes_the_scorecard_summary() {
    let readme = read(&root().join("README.md"));
    let summary = read(&root().join(SCORECARD).join("summary.md"));
    assert!(
        summary
            .lines()
            .any(|l| l.starts_with("| syscalls per cycle |")),
        "summary.md has no figures:\n{summary}"
    );
    assert_eq!(
        readme_block(&readme),
        summary,
        "the README's scorecard table differs from {SCORECARD}/summary.md: \
         run `cargo xtask scorecard --from-results {SCORECARD}` instead of editing either"
    );
}

#[test]
fn the_summary_is_what_the_scorecard_makes_of_its_results() {
    let dir = root().join(SCORECARD);
    let results = Results::read(&dir).unwrap_or_else(|e| panic!("{SCORECARD}: {e}"));
    assert_eq!(
        scorecard::summary(&results),
        read(&dir.join("summary.md")),
        "{SCORECARD}/summary.md is not what `cargo xtask scorecard --from-results {SCORECARD}` makes of the results beside it"
    );
}

/// A results file whose field was renamed fails loudly, naming the
/// field: the scorecard never prints a figure as "-" in silence.
#[test]
fn a_renamed_result_field_fails_to_read() {
    let dir = root().join(SCORECARD);
    let scratch = Scratch::new("scorecard");
    for f in ["compare.json", "footprint.json", "host-throughput.json"] {
        fs::copy(dir.join(f), scratch.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
    Results::read(scratch.path()).expect("the copies read");
    let path = scratch.join("compare.json");
    let text = read(&path);
    assert!(
        text.contains("\"syscalls_per_cycle\""),
        "compare.json has no syscalls_per_cycle"
    );
    fs::write(
        &path,
        text.replace("\"syscalls_per_cycle\"", "\"syscalls_per_loop\""),
    )
    .expect("write the renamed copy");
    let err = Results::read(scratch.path())
        .err()
        .expect("a renamed field must not read")
        .to_string();
    assert!(
        err.contains("syscalls_per_loop") || err.contains("syscalls_per_cycle"),
        "the error names the field: {err}"
    );
}

#[test]
fn the_readme_is_an_entry_with_the_ci_test_command() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines; the manual belongs in docs/"
    );
    let ci = read(&root().join(".ci/run"));
    let cmd = ci
        .lines()
        .find_map(|l| l.strip_prefix("TEST_CMD=(")?.strip_suffix(')'))
        .expect(".ci/run sets no TEST_CMD=(...)");
    let block = format!("```sh\n{cmd}\n```\n");
    assert!(
        readme.contains(&block),
        "README does not give .ci/run's test command `{cmd}` as a command block"
    );
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_`
/// dropped, blanks as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of the inline links `[text](target)` outside code.
fn links(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(j) = after.find(')') else { break };
            out.push(after[..j].to_string());
            rest = &after[j..];
        }
    }
    out
}

#[test]
fn every_link_of_the_docs_resolves() {
    let root = root();
    let mut pages = vec![root.join("README.md"), root.join("bench/README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 10, "docs/ has only {docs:?}");
    pages.extend(docs);
    let mut checked = 0;
    for page in &pages {
        let text = read(page);
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = match link.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (link.as_str(), None),
            };
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            assert!(
                target.exists(),
                "{}: link {link} reaches no file",
                page.display()
            );
            if let Some(a) = fragment {
                let heads = anchors(&read(&target));
                assert!(
                    heads.iter().any(|h| h == a),
                    "{}: link {link}: no heading #{a} in {}",
                    page.display(),
                    target.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} links checked");
}

#[test]
fn the_manual_lists_every_page() {
    let toc = read(&root().join("docs/README.md"));
    for entry in fs::read_dir(root().join("docs")).expect("read docs/") {
        let name = entry.expect("docs/ entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") && name != "README.md" {
            assert!(
                toc.contains(&format!("]({name})")),
                "docs/README.md does not list {name}"
            );
        }
    }
}
