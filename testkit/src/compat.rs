//! Side-by-side runs of Debian's `cyclictest` (rt-tests 2.4) and
//! `latscope` with the same arguments, and structural comparisons of what
//! they print: the same lines, keys, types and order, differing only in
//! measured values and in latscope's documented extras.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::host::bins;
use crate::precondition::{is_root, missing};

/// latscope's extra per-thread JSON fields (`docs/cyclictest.md`, "cyclictest's outputs").
pub const JSON_THREAD_EXTRAS: [&str; 11] = [
    "count",
    "min_ns",
    "max_ns",
    "avg_ns",
    "missed",
    "early",
    "minflt",
    "majflt",
    "dropped",
    "overflows",
    "quantiles_ns",
];
/// latscope's extra top-level JSON object.
pub const JSON_TOP_EXTRAS: [&str; 1] = ["latscope"];

/// The `cyclictest` program and root, which both programs need (they write
/// /dev/cpu_dma_latency, latscope runs SCHED_FIFO): `None` when either is
/// missing (under `CI=true` the test then fails, naming it).
pub fn cyclictest() -> Option<PathBuf> {
    if !is_root() {
        missing("needs root (both programs write /dev/cpu_dma_latency)");
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .map(|d| d.join("cyclictest"))
        .find(|p| p.is_file());
    if found.is_none() {
        missing("cyclictest is not installed (apt package rt-tests)");
    }
    found
}

/// Run `prog args` in `dir` with `env` to its end.
pub fn run_in(dir: &Path, prog: &Path, args: &[String], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(prog);
    c.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output()
        .unwrap_or_else(|e| panic!("run {}: {e}", prog.display()))
}

/// Run cyclictest and latscope with the same `args` in `dir` (the same
/// scratch directory, so relative `--json` paths land there). Both must
/// succeed; returns (cyclictest's output, latscope's output).
pub fn side_by_side(
    ct: &Path,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Output, Output) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let theirs = run_in(dir, ct, &args, env);
    assert!(theirs.status.success(), "cyclictest {args:?}: {theirs:?}");
    let ours = run_in(dir, &bins().latscope, &args, env);
    assert!(
        ours.status.success(),
        "latscope {args:?}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    (theirs, ours)
}

/// A line's form: every number (with its sign and the blanks that pad it
/// to its field width) becomes `N`, so values and widths that grow with
/// them do not count; every other character does.
pub fn shape(line: &str) -> String {
    let mut out = String::new();
    let c: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < c.len() {
        let mut j = i;
        while j < c.len() && c[j] == ' ' {
            j += 1;
        }
        if j < c.len() && c[j] == '-' && c.get(j + 1).is_some_and(char::is_ascii_digit) {
            j += 1;
        }
        if j < c.len() && c[j].is_ascii_digit() {
            while j < c.len() && (c[j].is_ascii_digit() || c[j] == '.') {
                j += 1;
            }
            out.push('N');
        } else {
            out.extend(&c[i..j.max(i + 1)]);
            j = j.max(i + 1);
        }
        i = j;
    }
    out
}

/// The structure of a text output: line forms in order, a run of lines
/// of one form (histogram rows, spike lines, `-v` lines) counted once,
/// latscope's `# T:` extra lines left out; the overflow cycle lists of
/// `# Thread N:` (their length is a measured value) reduced to the label.
pub fn text_structure(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with("# T:")) {
        let s = if line.starts_with("# Thread ") && !line.starts_with("# Thread Ids") {
            format!("{}:", shape(line.split(':').next().unwrap_or("")))
        } else {
            shape(line)
        };
        if out.last() != Some(&s) {
            out.push(s);
        }
    }
    out
}

/// The structure of a live view written into a file (cyclictest's output
/// without `-q`): the text before the first cursor move, then each redraw
/// (from one `ESC[nA` to the next), as [`text_structure`]s, a run of
/// redraws of one structure counted once (how many there are depends on
/// the refresh rate and the run's length), and the cursor moves' exact
/// bytes.
pub fn live_structure(text: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let mut parts = text.split("\x1b[");
    let mut blocks = vec![text_structure(parts.next().unwrap_or(""))];
    let mut moves: Vec<String> = Vec::new();
    for p in parts {
        let n = p.find('A').map_or(0, |i| i + 1);
        let m = format!("ESC[{}", &p[..n]);
        if !moves.contains(&m) {
            moves.push(m);
        }
        let b = text_structure(&p[n..]);
        if blocks.last() != Some(&b) {
            blocks.push(b);
        }
    }
    (blocks, moves)
}

/// Histogram rows (lines starting with a digit) in a text output.
pub fn rows(text: &str) -> usize {
    text.lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .count()
}

/// Assert that two text outputs have the same structure and the same
/// number of histogram rows.
pub fn assert_same_text(ours: &str, theirs: &str, what: &str) {
    let (a, b) = (text_structure(ours), text_structure(theirs));
    assert_eq!(
        a, b,
        "{what}: structure differs\n--- latscope:\n{ours}\n--- cyclictest:\n{theirs}"
    );
    assert_eq!(rows(ours), rows(theirs), "{what}: histogram rows");
}

/// A stdout holding a `--json=-` document: (the lines before it, the
/// document, the lines after it).
pub fn split_json(stdout: &str) -> (String, String, String) {
    let mut before = String::new();
    let mut doc = String::new();
    let mut after = String::new();
    let mut state = 0;
    for line in stdout.lines() {
        let target = match state {
            0 if line == "{" => {
                state = 1;
                &mut doc
            }
            0 => &mut before,
            1 => {
                if line == "}" {
                    state = 2;
                }
                &mut doc
            }
            _ => &mut after,
        };
        target.push_str(line);
        target.push('\n');
    }
    (before, doc, after)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Assert that `ours` has cyclictest's keys in cyclictest's order with the
/// same types at every level, plus only the documented extras after them.
/// Histogram objects are compared by type only (their keys are rows with
/// samples, a measured value).
pub fn assert_same_json(ours: &Value, theirs: &Value, path: &str) {
    assert_eq!(kind(ours), kind(theirs), "{path}: type");
    let (Value::Object(o), Value::Object(t)) = (ours, theirs) else {
        return;
    };
    if path.ends_with(".histogram") {
        for (k, v) in o {
            assert!(k.parse::<u32>().is_ok() && v.is_u64(), "{path}.{k}");
        }
        return;
    }
    let extras: &[&str] = if path.is_empty() {
        &JSON_TOP_EXTRAS
    } else if path.starts_with(".thread.") {
        &JSON_THREAD_EXTRAS
    } else {
        &[]
    };
    let ours_keys: Vec<&String> = o.keys().filter(|k| !extras.contains(&k.as_str())).collect();
    let their_keys: Vec<&String> = t.keys().collect();
    assert_eq!(ours_keys, their_keys, "{path}: keys");
    let extra_keys: Vec<&String> = o.keys().filter(|k| extras.contains(&k.as_str())).collect();
    let tail: Vec<&String> = o.keys().skip(their_keys.len()).collect();
    assert_eq!(extra_keys, tail, "{path}: latscope's extras come last");
    for (k, v) in t {
        assert_same_json(&o[k], v, &format!("{path}.{k}"));
    }
}

/// Parse a JSON document, naming what it was on failure.
pub fn parse_json(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what}: not JSON ({e}):\n{text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_ignore_values_and_widths_only() {
        assert_eq!(
            shape("T: 0 ( 2704) P: 0 I:1000 C:    200 Min:1000000 Act:   74"),
            shape("T:12 (12345) P:80 I:1500 C:1234567 Min:     62 Act:-1234")
        );
        assert_eq!(shape("# Total: 000000379 000000390"), "# Total:NN");
        assert_ne!(shape("# Total: 1"), shape("# Total: 1 2"));
        assert_ne!(
            shape("T: 0 Spike:  1: TS: 3"),
            shape("T: 0 Spike:  1 TS: 3")
        );
        assert_eq!(shape("\"avg\": 91.87,"), "\"avg\":N,");
        let t = text_structure(
            "a\n000001 000002\n000002 000003\n# T: 0 x\n# Thread 0: 00001 # 00002 others\n",
        );
        assert_eq!(t, ["a", "NN", "# ThreadN:"]);
    }

    #[test]
    fn json_documents_split_from_text() {
        let (b, d, a) = split_json("# x\n{\n  \"a\": {\n  }\n}\nT: 0\n");
        assert_eq!(
            (b.as_str(), d.as_str(), a.as_str()),
            ("# x\n", "{\n  \"a\": {\n  }\n}\n", "T: 0\n")
        );
    }
}
