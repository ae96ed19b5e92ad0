//! The Buildroot package in `buildroot/` (a BR2_EXTERNAL tree) must agree
//! with the workspace: version, license, the crate it builds, and the
//! Kconfig wiring. Buildroot itself is not available here, so this parses
//! the make variables the way Buildroot's simple `NAME = value` lines read.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

fn read(rel: &str) -> String {
    let p = root().join(rel);
    fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// Parses `NAME = value`, `NAME += value` and `NAME ?= value` assignments,
/// joining backslash continuations. `define ... endef` blocks are skipped.
fn mk_vars(text: &str) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    let mut logical = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if let Some(stripped) = line.strip_suffix('\\') {
            cur.push_str(stripped);
            cur.push(' ');
        } else {
            cur.push_str(line);
            logical.push(std::mem::take(&mut cur));
        }
    }
    let mut in_define = false;
    for line in logical {
        let t = line.trim();
        if t.starts_with("define ") {
            in_define = true;
            continue;
        }
        if t == "endef" {
            in_define = false;
            continue;
        }
        if in_define || t.starts_with('#') || t.is_empty() {
            continue;
        }
        for op in ["+=", "?=", ":=", "="] {
            if let Some((name, value)) = t.split_once(op) {
                let name = name.trim();
                if name.is_empty() || name.contains(' ') || name.contains('$') {
                    break;
                }
                let value = value.split_whitespace().collect::<Vec<_>>().join(" ");
                let entry = vars.entry(name.to_string()).or_insert_with(String::new);
                if op == "+=" && !entry.is_empty() {
                    entry.push(' ');
                    entry.push_str(&value);
                } else {
                    *entry = value;
                }
                break;
            }
        }
    }
    vars
}

/// `key = "value"` in a TOML section (a plain-text read of our own files).
fn toml_str(text: &str, section: &str, key: &str) -> Option<String> {
    let mut in_section = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_section = t == format!("[{section}]");
            continue;
        }
        if !in_section {
            continue;
        }
        if let Some((k, v)) = t.split_once('=') {
            if k.trim() == key {
                return Some(v.trim().trim_matches('"').to_string());
            }
        }
    }
    None
}

fn licenses(expr: &str) -> Vec<String> {
    let mut v: Vec<String> = expr
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter(|w| !w.is_empty() && !w.eq_ignore_ascii_case("or"))
        .map(str::to_ascii_lowercase)
        .collect();
    v.sort();
    v
}

#[test]
fn mk_parser_reads_assignments_and_skips_defines() {
    let vars = mk_vars(
        "A = 1\nB = x \\\n\ty\nB += z\n# C = no\ndefine D_CMDS\n\tE = no\nendef\nF ?= $(G)/..\n",
    );
    assert_eq!(vars.get("A").map(String::as_str), Some("1"));
    assert_eq!(vars.get("B").map(String::as_str), Some("x y z"));
    assert_eq!(vars.get("F").map(String::as_str), Some("$(G)/.."));
    assert!(!vars.contains_key("C") && !vars.contains_key("E"));
}

#[test]
fn mk_version_matches_the_target_crate() {
    let vars = mk_vars(&read("buildroot/package/latscope/latscope.mk"));
    let shim = read("shim-linux/Cargo.toml");
    let version = match toml_str(&shim, "package", "version") {
        Some(v) => v,
        None => {
            // `version.workspace = true`: the workspace's version.
            assert!(
                shim.lines()
                    .any(|l| l.trim().replace(' ', "") == "version.workspace=true"),
                "shim-linux/Cargo.toml has no version"
            );
            toml_str(&read("Cargo.toml"), "workspace.package", "version")
                .expect("[workspace.package] version in Cargo.toml")
        }
    };
    assert_eq!(
        vars.get("LATSCOPE_VERSION"),
        Some(&version),
        "LATSCOPE_VERSION must equal the latscope crate's version"
    );
}

#[test]
fn mk_builds_the_latscope_binary_from_the_workspace() {
    let vars = mk_vars(&read("buildroot/package/latscope/latscope.mk"));
    let subdir = vars.get("LATSCOPE_SUBDIR").expect("LATSCOPE_SUBDIR");
    let manifest = read(&format!("{subdir}/Cargo.toml"));
    assert_eq!(
        toml_str(&manifest, "package", "name").as_deref(),
        Some("latscope"),
        "LATSCOPE_SUBDIR must be the target program's crate"
    );
    assert!(
        manifest.contains("name = \"latscope\"") && manifest.contains("[[bin]]")
            || root().join(subdir).join("src/main.rs").is_file(),
        "{subdir} must build a latscope binary"
    );
    let build_opts = vars.get("LATSCOPE_CARGO_BUILD_OPTS").expect("build opts");
    assert_eq!(build_opts, "--bin latscope");

    // The source is this very tree, one level above the external tree.
    assert_eq!(
        vars.get("LATSCOPE_SITE").map(String::as_str),
        Some("$(BR2_EXTERNAL_LATSCOPE_PATH)/..")
    );
    assert_eq!(
        vars.get("LATSCOPE_SITE_METHOD").map(String::as_str),
        Some("local")
    );
    assert!(
        root().join("Cargo.lock").is_file(),
        "cargo --locked needs Cargo.lock"
    );
    let excl = vars
        .get("LATSCOPE_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS")
        .expect("rsync exclusions");
    for dir in ["/target", "/.cargo"] {
        assert!(
            excl.split_whitespace().any(|w| w == dir),
            "the rsync must exclude {dir}: {excl}"
        );
    }
    // The locked dependencies are fetched before the offline build.
    assert_eq!(
        vars.get("LATSCOPE_PRE_CONFIGURE_HOOKS").map(String::as_str),
        Some("LATSCOPE_CARGO_FETCH")
    );
    let mk = read("buildroot/package/latscope/latscope.mk");
    assert!(mk.contains("cargo fetch --locked"));
    assert_eq!(
        mk.lines().rev().find(|l| !l.trim().is_empty()),
        Some("$(eval $(cargo-package))"),
        "the package must end with the cargo-package infrastructure"
    );
}

#[test]
fn mk_license_matches_the_workspace() {
    let vars = mk_vars(&read("buildroot/package/latscope/latscope.mk"));
    let ws = toml_str(&read("Cargo.toml"), "workspace.package", "license")
        .expect("[workspace.package] license");
    let mk = vars.get("LATSCOPE_LICENSE").expect("LATSCOPE_LICENSE");
    assert_eq!(licenses(mk), licenses(&ws), "{mk} vs {ws}");
    if let Some(files) = vars.get("LATSCOPE_LICENSE_FILES") {
        for f in files.split_whitespace() {
            assert!(root().join(f).is_file(), "license file {f} missing");
        }
    }
}

#[test]
fn kconfig_wiring_follows_buildroot_rust_packages() {
    let desc = read("buildroot/external.desc");
    let name = desc
        .lines()
        .find_map(|l| l.strip_prefix("name:"))
        .map(str::trim)
        .expect("external.desc name");
    assert_eq!(name, "LATSCOPE", "the .mk uses BR2_EXTERNAL_LATSCOPE_PATH");

    let top = read("buildroot/Config.in");
    assert!(top.contains("source \"$BR2_EXTERNAL_LATSCOPE_PATH/package/latscope/Config.in\""));
    let ext = read("buildroot/external.mk");
    assert!(ext.contains("$(BR2_EXTERNAL_LATSCOPE_PATH)/package/*/*.mk"));

    let cfg = read("buildroot/package/latscope/Config.in");
    let lines: Vec<&str> = cfg.lines().map(str::trim).collect();
    assert_eq!(lines.first(), Some(&"config BR2_PACKAGE_LATSCOPE"));
    assert!(lines.contains(&"bool \"latscope\""));
    assert!(lines.contains(&"depends on BR2_PACKAGE_HOST_RUSTC_TARGET_ARCH_SUPPORTS"));
    assert!(lines.contains(&"select BR2_PACKAGE_HOST_RUSTC"));
    assert!(lines.contains(&"help"));
    // Kconfig indentation as check-package wants it: one tab, help text tab + 2 spaces.
    for l in cfg.lines().skip(1).filter(|l| !l.is_empty()) {
        assert!(
            l.starts_with('\t'),
            "Config.in line not tab-indented: {l:?}"
        );
    }
}
