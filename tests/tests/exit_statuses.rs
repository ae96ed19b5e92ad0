//! One table of exit statuses for both programs: `docs/running.md`'s
//! "Exit statuses" has a row for every status each program can leave with,
//! and no other. A program's statuses are its crate's list
//! (`latscope::option_docs::EXIT_STATUSES`,
//! `latscope_host::error::EXIT_STATUSES`), and every `EXIT_*` constant
//! declared in its sources is in that list, so a status added to the code
//! without a row (or a row left when its status goes) fails here.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use latscope_testkit::workspace_root;

/// The program cells of the table.
const TARGET: &str = "`latscope`";
const HOST: &str = "`latscope-host`";

/// One row of the table.
#[derive(Debug)]
struct Row {
    status: i32,
    program: String,
    /// The row as written, for the cells after the program.
    line: String,
}

fn running_md() -> String {
    let path = workspace_root().join("docs/running.md");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The rows of the table after the heading "## Exit statuses", without its
/// header and separator rows.
fn table(doc: &str) -> Vec<Row> {
    let heading = "\n## Exit statuses\n";
    let start = doc
        .find(heading)
        .unwrap_or_else(|| panic!("docs/running.md has no {heading:?}"))
        + heading.len();
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            let mut cells = l.trim_start_matches('|').splitn(3, '|').map(str::trim);
            let status = cells.next().unwrap_or_default();
            let program = cells.next().unwrap_or_default();
            Row {
                status: status
                    .parse()
                    .unwrap_or_else(|_| panic!("status {status:?} is not a number: {l}")),
                program: program.to_string(),
                line: l.to_string(),
            }
        })
        .collect()
}

/// What is wrong with `rows` for `program` against the statuses `code`
/// gives it: a status without a row, a row without a status.
fn disagreements(rows: &[Row], program: &str, code: &BTreeSet<i32>) -> Vec<String> {
    let doc: BTreeSet<i32> = rows
        .iter()
        .filter(|r| r.program == program)
        .map(|r| r.status)
        .collect();
    let mut out = Vec::new();
    for s in code.difference(&doc) {
        out.push(format!("status {s} of {program} has no row in the table"));
    }
    for s in doc.difference(code) {
        out.push(format!(
            "the table's row {s} of {program} is no status of the code"
        ));
    }
    out
}

fn target_statuses() -> BTreeSet<i32> {
    latscope::option_docs::EXIT_STATUSES.into_iter().collect()
}

fn host_statuses() -> BTreeSet<i32> {
    latscope_host::error::EXIT_STATUSES
        .into_iter()
        .map(i32::from)
        .collect()
}

#[test]
fn the_table_has_a_row_for_each_status_of_each_program_and_no_other() {
    let rows = table(&running_md());
    let mut wrong = disagreements(&rows, TARGET, &target_statuses());
    wrong.extend(disagreements(&rows, HOST, &host_statuses()));
    let mut seen = BTreeSet::new();
    for r in &rows {
        if r.program != TARGET && r.program != HOST {
            wrong.push(format!("a row of neither program: {}", r.line));
        }
        if !seen.insert((r.status, r.program.clone())) {
            wrong.push(format!("a second row {} of {}", r.status, r.program));
        }
    }
    let order: Vec<(i32, bool)> = rows.iter().map(|r| (r.status, r.program == HOST)).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    if order != sorted {
        wrong.push("the rows are not by status, the target's before the host's".into());
    }
    assert!(
        wrong.is_empty(),
        "docs/running.md, Exit statuses:\n{}",
        wrong.join("\n")
    );
}

/// The values of the `const EXIT_*: T = N;` declarations of an integer
/// type `T` in the Rust files under `dir` (not the lists, arrays, nor
/// `--help`'s texts).
fn declared(dir: &Path, out: &mut BTreeSet<i32>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            declared(&path, out);
            continue;
        }
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for line in text.lines().map(str::trim) {
            let Some((_, rest)) = line.split_once("const EXIT_") else {
                continue;
            };
            let Some((name_type, value)) = rest.split_once('=') else {
                continue;
            };
            let ty = name_type.split_once(':').map_or("", |(_, t)| t.trim());
            if !["i32", "u8"].contains(&ty) {
                continue;
            }
            let value = value.trim().trim_end_matches(';').trim();
            let v = value.parse::<i32>().unwrap_or_else(|_| {
                panic!(
                    "{}: an exit status that is no number: {line}",
                    path.display()
                )
            });
            out.insert(v);
        }
    }
}

#[test]
fn every_exit_constant_is_in_its_program_s_list() {
    for (dir, list) in [
        ("shim-linux/src", target_statuses()),
        ("host-tool/src", host_statuses()),
    ] {
        let mut found = BTreeSet::new();
        declared(&workspace_root().join(dir), &mut found);
        assert_eq!(
            found, list,
            "the EXIT_* constants of {dir} and its EXIT_STATUSES differ"
        );
    }
}

/// "A required kernel feature is missing" (the timerlat mode's refusal of
/// a kernel without the timerlat tracer or `timerlat_fd`) is
/// `Error::Unavailable`: the table says so in the row of its status.
#[test]
fn a_missing_kernel_feature_has_the_row_that_says_so() {
    let status = latscope::Error::Unavailable("no timerlat tracer".into()).exit_status();
    let rows = table(&running_md());
    let row = rows
        .iter()
        .find(|r| r.status == status && r.program == TARGET)
        .unwrap_or_else(|| panic!("no row {status} of {TARGET}"));
    for words in [
        "Error::Unavailable",
        "kernel feature that is missing",
        "timerlat_fd",
    ] {
        assert!(
            row.line.contains(words),
            "row {status} of {TARGET} does not say {words:?}: {}",
            row.line
        );
    }
}

/// The check finds a row taken out and a row too many.
#[test]
fn a_row_taken_out_or_added_is_found() {
    let doc = running_md();
    let row3 = doc
        .lines()
        .find(|l| l.starts_with("| 3 | `latscope` |"))
        .expect("row 3 of the target");
    let without = doc.replace(&format!("{row3}\n"), "");
    let wrong = disagreements(&table(&without), TARGET, &target_statuses());
    assert_eq!(wrong, ["status 3 of `latscope` has no row in the table"]);
    let more = doc.replace(
        &format!("{row3}\n"),
        &format!("{row3}\n| 3 | `latscope-host` | x | y |\n"),
    );
    let wrong = disagreements(&table(&more), HOST, &host_statuses());
    assert_eq!(
        wrong,
        ["the table's row 3 of `latscope-host` is no status of the code"]
    );
}
