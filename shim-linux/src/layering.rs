//! The crate's dependencies point one way, as `lib.rs` says: each module
//! uses only modules before it in [`LAYERS`], and each file of `config/`
//! only files before it in [`CONFIG_LAYERS`]. Read from the sources (`use
//! crate::...` and `crate::` paths, `use super::...` in `config/`),
//! without comments and test code.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The crate's modules, lowest first.
const LAYERS: &[&str] = &[
    "error",
    "linux",
    "bench",
    "config",
    "output",
    "link",
    "rt",
    "sender",
    "app",
    "testing",
    "option_docs",
];

/// The files of `config/` (besides `mod.rs`, which gathers them), lowest
/// first.
const CONFIG_LAYERS: &[&str] = &[
    "numbers", "cpus", "name", "plan", "options", "help", "getopt", "values", "checks", "parse",
    "rtla", "rtla_run",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The Rust files of module `m` (`m.rs`, or every file under `m/`),
/// without test-only files.
fn files(m: &str) -> Vec<PathBuf> {
    let dir = src().join(m);
    let mut out = Vec::new();
    if dir.is_dir() {
        let mut todo = vec![dir];
        while let Some(d) = todo.pop() {
            for e in fs::read_dir(&d).expect("read the module's directory") {
                let p = e.expect("a directory entry").path();
                if p.is_dir() {
                    todo.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
    } else {
        out.push(src().join(format!("{m}.rs")));
    }
    out.retain(|p| {
        let name = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        name != "tests" && !name.ends_with("_tests")
    });
    out
}

/// The code of a file: up to its first `#[cfg(test)]`, comment lines
/// dropped.
fn code(path: &Path) -> String {
    let text = fs::read_to_string(path).expect("read a source file");
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The first path segments after `prefix` (`crate::` or `super::`) in
/// `code`, the items of `use prefix{a, b::c}` groups included.
fn segments(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        rest = &rest[at + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // the top-level items of the group
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && c == ',') {
                    out.insert(ident(&item));
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else if depth == 1 {
                    item.push(c);
                }
            }
        } else {
            out.insert(ident(rest));
        }
    }
    out.remove("");
    out
}

fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Each use of a module that is not below the user in `layers`.
fn upward(layers: &[&str], uses: impl Fn(&str) -> BTreeSet<String>) -> Vec<String> {
    let mut bad = Vec::new();
    for (i, m) in layers.iter().enumerate() {
        for used in uses(m) {
            match layers.iter().position(|l| *l == used) {
                Some(j) if j < i => {}
                Some(j) if j == i => {}
                Some(_) => bad.push(format!("{m} uses {used}, which is above it")),
                None => {}
            }
        }
    }
    bad
}

#[test]
fn modules_depend_one_way() {
    let dirs: BTreeSet<String> = fs::read_dir(src())
        .expect("read src/")
        .map(|e| e.expect("an entry").path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .filter(|m| !["lib", "main", "layering"].contains(&m.as_str()))
        .collect();
    let listed: BTreeSet<String> = LAYERS.iter().map(|m| m.to_string()).collect();
    assert_eq!(dirs, listed, "every module of src/ has its place in LAYERS");
    let bad = upward(LAYERS, |m| {
        files(m)
            .iter()
            .flat_map(|f| segments(&code(f), "crate::"))
            .collect()
    });
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn config_files_depend_one_way() {
    let dir = src().join("config");
    let files: BTreeSet<String> = fs::read_dir(&dir)
        .expect("read config/")
        .map(|e| e.expect("an entry").path())
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
        .filter(|m| !["mod", "tests"].contains(&m.as_str()))
        .collect();
    let listed: BTreeSet<String> = CONFIG_LAYERS.iter().map(|m| m.to_string()).collect();
    assert_eq!(files, listed, "every file of config/ has its place");
    let bad = upward(CONFIG_LAYERS, |m| {
        segments(&code(&dir.join(format!("{m}.rs"))), "super::")
    });
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The reader finds what a use names, in its three spellings; a module
/// that uses one above it is reported.
#[test]
fn uses_are_read_and_upward_ones_reported() {
    let code = "use crate::{config::{self, Config}, linux};\n\
                let x = crate::rt::now();\nuse super::parse::OptionsGiven;";
    let crate_uses = segments(code, "crate::");
    assert_eq!(
        crate_uses.into_iter().collect::<Vec<_>>(),
        ["config", "linux", "rt"]
    );
    assert_eq!(
        segments(code, "super::").into_iter().collect::<Vec<_>>(),
        ["parse"]
    );
    let bad = upward(&["linux", "config"], |m| {
        if m == "linux" {
            ["config".to_string()].into()
        } else {
            BTreeSet::new()
        }
    });
    assert_eq!(bad, ["linux uses config, which is above it"]);
}
