//! One word, one meaning: the words `docs/glossary.md` retires do not come
//! back. Its "Retired words" table names each word and the crates it is
//! retired in; its "Allowed uses" table names the lines where one stays,
//! by file and a piece of the line. Every Rust file of those crates is read
//! and every whole word (a run of letters, digits and `_`) is looked up.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use latscope_testkit::workspace_root;

/// The crates (and modules) a "crates" cell can name, and their
/// directories.
const CRATES: [(&str, &[&str]); 6] = [
    ("core", &["core"]),
    ("explain", &["core/src/explain"]),
    ("target", &["shim-linux"]),
    ("mcu", &["shim-cortex-m"]),
    ("host", &["host-tool"]),
    (
        "all",
        &[
            "core",
            "shim-linux",
            "shim-cortex-m",
            "host-tool",
            "xtask",
            "testkit",
            "tests",
            "fuzz",
        ],
    ),
];

/// A retired word and the directories it is retired in.
#[derive(Debug, PartialEq, Eq)]
struct Retired {
    word: String,
    dirs: Vec<&'static str>,
}

/// A use that stays: a file (from the workspace root) and a piece of its line.
#[derive(Debug, PartialEq, Eq)]
struct Allowed {
    file: String,
    holds: String,
}

/// The glossary's two tables.
#[derive(Debug)]
struct Lists {
    retired: Vec<Retired>,
    allowed: Vec<Allowed>,
}

/// The cells of the table rows (`| a | b | c |`) after `heading`, up to the
/// next heading or paragraph, without the header and separator rows.
fn rows<'a>(text: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("the glossary has no {heading:?}"));
    text[start + heading.len()..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

/// The text between the first pair of backticks of `cell`.
fn code(cell: &str) -> String {
    let mut parts = cell.split('`');
    parts.next();
    parts
        .next()
        .unwrap_or_else(|| panic!("no `code` in glossary cell {cell:?}"))
        .to_string()
}

fn lists(glossary: &str) -> Lists {
    let retired = rows(glossary, "## Retired words")
        .into_iter()
        .map(|row| {
            let dirs = row[1]
                .split(", ")
                .flat_map(|name| {
                    CRATES
                        .iter()
                        .find(|(n, _)| *n == name)
                        .unwrap_or_else(|| panic!("unknown crates {name:?} in the glossary"))
                        .1
                })
                .copied()
                .collect();
            Retired {
                word: code(row[0]),
                dirs,
            }
        })
        .collect();
    let allowed = rows(glossary, "Allowed uses")
        .into_iter()
        .map(|row| Allowed {
            file: code(row[0]),
            holds: code(row[1]),
        })
        .collect();
    Lists { retired, allowed }
}

/// Every `.rs` file under `dir`, but build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The whole words of `line`.
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Each retired word's uses in `text` (the file `file`, from the
/// workspace root), as `file:line`, but the allowed ones.
fn uses(lists: &Lists, file: &str, text: &str) -> Vec<String> {
    let under = |dir: &str| file.strip_prefix(dir).is_some_and(|r| r.starts_with('/'));
    let retired: Vec<&str> = lists
        .retired
        .iter()
        .filter(|r| r.dirs.iter().any(|d| under(d)))
        .map(|r| r.word.as_str())
        .collect();
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let allowed = lists
            .allowed
            .iter()
            .any(|a| a.file == file && line.contains(&a.holds));
        for w in words(line).filter(|w| retired.contains(w)) {
            if !allowed {
                found.push(format!("{file}:{}: {w}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_retired_word_is_used_outside_its_allowed_lines() {
    let root = workspace_root();
    let glossary = fs::read_to_string(root.join("docs/glossary.md")).expect("docs/glossary.md");
    let lists = lists(&glossary);
    assert!(
        lists.retired.len() >= 10 && lists.allowed.len() >= 3,
        "the glossary's tables were not read: {lists:?}"
    );
    let mut found = Vec::new();
    let mut allowed_seen: BTreeMap<(String, String), bool> = lists
        .allowed
        .iter()
        .map(|a| ((a.file.clone(), a.holds.clone()), false))
        .collect();
    let (_, all) = CRATES[CRATES.len() - 1];
    for dir in all {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no Rust file under {dir}/");
        for path in files {
            let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
            let file = path
                .strip_prefix(&root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            for ((f, holds), seen) in allowed_seen.iter_mut() {
                *seen |= *f == file && text.contains(holds.as_str());
            }
            found.extend(uses(&lists, &file, &text));
        }
    }
    assert!(
        found.is_empty(),
        "retired words (docs/glossary.md, \"Retired words\" says what to say instead):\n{}",
        found.join("\n")
    );
    let stale: Vec<_> = allowed_seen.iter().filter(|(_, s)| !**s).collect();
    assert!(stale.is_empty(), "allowed uses no longer there: {stale:?}");
}

#[test]
fn a_retired_word_is_found_and_an_allowed_line_is_not() {
    let glossary = "## Retired words\n\n| word | crates | say instead |\n|---|---|---|\n\
                    | `record` | core, target | shared histogram |\n| `Owner` | core | x |\n\
                    | `Frame` | explain | IrqContext |\n\n\
                    Allowed uses:\n\n| file | line holds | why |\n|---|---|---|\n\
                    | `core/a.rs` | `record-tgid` | ftrace |\n";
    let lists = lists(glossary);
    let text = "// the record-tgid option\nlet r = w.record(1);\nstruct Owner;\n\
                let x = dropped_records_total; // Recorder, Ownership\n";
    assert_eq!(
        uses(&lists, "core/a.rs", text),
        [
            "core/a.rs:2: record: let r = w.record(1);",
            "core/a.rs:3: Owner: struct Owner;"
        ]
    );
    // `Frame` only under core/src/explain
    let frame = "struct Frame;\n";
    assert_eq!(
        uses(&lists, "core/src/explain/c.rs", frame),
        ["core/src/explain/c.rs:1: Frame: struct Frame;"]
    );
    assert!(uses(&lists, "core/src/wire/f.rs", frame).is_empty());
    // in another file the line is not allowed; in another crate `Owner` is not retired
    assert_eq!(
        uses(&lists, "shim-linux/a.rs", text),
        [
            "shim-linux/a.rs:1: record: // the record-tgid option",
            "shim-linux/a.rs:2: record: let r = w.record(1);"
        ]
    );
}
