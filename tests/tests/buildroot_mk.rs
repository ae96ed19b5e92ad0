//! The Buildroot package in `buildroot/` (a BR2_EXTERNAL tree) must agree
//! with the workspace: version, license and its hashes, the crate it builds,
//! the release profile it passes, and the Kconfig wiring; and the release
//! source archive it downloads (`scripts/source-archive`) must be what it
//! expects: the target's crates alone, with a lock of their own that cargo
//! accepts offline, made the same way twice. Buildroot itself is not
//! available in CI (docs/buildroot.md has the real build), so this parses
//! the make variables the way Buildroot's simple `NAME = value` lines read.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use latscope_testkit::{precondition, Scratch};

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

/// The archive's name in the package, with its version filled in.
fn mk_source(vars: &BTreeMap<String, String>) -> String {
    let version = vars.get("LATSCOPE_VERSION").expect("LATSCOPE_VERSION");
    vars.get("LATSCOPE_SOURCE")
        .expect("LATSCOPE_SOURCE")
        .replace("$(LATSCOPE_VERSION)", version)
}

#[test]
fn mk_builds_the_latscope_binary_from_the_release_archive() {
    let vars = mk_vars(&read("buildroot/package/latscope/latscope.mk"));
    let subdir = vars.get("LATSCOPE_SUBDIR").expect("LATSCOPE_SUBDIR");
    let manifest = read(&format!("{subdir}/Cargo.toml"));
    assert_eq!(
        toml_str(&manifest, "package", "name").as_deref(),
        Some("latscope"),
        "LATSCOPE_SUBDIR must be the target program's crate"
    );
    assert!(
        manifest.contains("[[bin]]") && manifest.contains("name = \"latscope\""),
        "{subdir} must build a latscope binary"
    );
    for opts in ["LATSCOPE_CARGO_BUILD_OPTS", "LATSCOPE_CARGO_INSTALL_OPTS"] {
        assert_eq!(vars.get(opts).map(String::as_str), Some("--bin latscope"));
    }
    // Downloaded (so Buildroot vendors it), from the archive the script writes.
    assert!(
        !vars.contains_key("LATSCOPE_SITE_METHOD")
            || vars.get("LATSCOPE_SITE_METHOD").map(String::as_str) == Some("file"),
        "a local site method vendors nothing"
    );
    assert!(
        mk_source(&vars).ends_with(".tar.gz"),
        "LATSCOPE_SOURCE must be the release archive"
    );
    // A development checkout fetches the locked crates before building.
    assert_eq!(
        vars.get("LATSCOPE_PRE_CONFIGURE_HOOKS").map(String::as_str),
        Some("LATSCOPE_CARGO_FETCH")
    );
    let mk = read("buildroot/package/latscope/latscope.mk");
    assert!(mk.contains("ifneq ($(LATSCOPE_OVERRIDE_SRCDIR),)"));
    assert!(mk.contains("cargo fetch --locked"));
    let excl = vars
        .get("LATSCOPE_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS")
        .expect("rsync exclusions");
    for dir in ["/target", "/.cargo", "/buildroot"] {
        assert!(
            excl.split_whitespace().any(|w| w == dir),
            "the rsync must exclude {dir}: {excl}"
        );
    }
    assert_eq!(
        mk.lines().rev().find(|l| !l.trim().is_empty()),
        Some("$(eval $(cargo-package))"),
        "the package must end with the cargo-package infrastructure"
    );
}

/// `KEY="value"` words of a make value (LATSCOPE_CARGO_ENV).
fn env_words(value: &str) -> BTreeMap<String, String> {
    value
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

#[test]
fn mk_passes_the_release_profile_and_links_statically() {
    let mk = read("buildroot/package/latscope/latscope.mk");
    let vars = mk_vars(&mk);
    let cargo_env = vars.get("LATSCOPE_CARGO_ENV").expect("LATSCOPE_CARGO_ENV");
    let env = env_words(cargo_env);
    let ws = read("Cargo.toml");
    // Buildroot's pkg-cargo.mk sets these three from its own options; the
    // package's environment comes after and must restore the project's.
    for (key, var) in [
        ("opt-level", "CARGO_PROFILE_RELEASE_OPT_LEVEL"),
        ("lto", "CARGO_PROFILE_RELEASE_LTO"),
        ("codegen-units", "CARGO_PROFILE_RELEASE_CODEGEN_UNITS"),
    ] {
        let want = toml_str(&ws, "profile.release", key)
            .unwrap_or_else(|| panic!("[profile.release] {key} in Cargo.toml"));
        assert_eq!(
            env.get(var),
            Some(&want),
            "{var} must be the release profile's {key}"
        );
    }
    // The target's RUSTFLAGS, as pkg-cargo.mk names them.
    assert!(
        cargo_env.contains(
            "CARGO_TARGET_$(call UPPERCASE,$(RUSTC_TARGET_NAME))_RUSTFLAGS=\"$(LATSCOPE_RUSTFLAGS)\""
        ),
        "LATSCOPE_CARGO_ENV must pass LATSCOPE_RUSTFLAGS: {cargo_env}"
    );
    let flags = vars.get("LATSCOPE_RUSTFLAGS").expect("LATSCOPE_RUSTFLAGS");
    assert!(flags.contains("-C target-feature=+crt-static"), "{flags}");
    // Replacing the target's RUSTFLAGS drops Buildroot's ARM workaround
    // unless it is added back, for ARM only.
    assert!(
        mk.contains(
            "ifeq ($(NORMALIZED_ARCH),arm)\n\
             LATSCOPE_RUSTFLAGS += -Clink-arg=-Wl,--allow-multiple-definition\nendif"
        ),
        "the ARM linker workaround must be kept"
    );
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("run sha256sum");
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .expect("a hash")
        .to_string()
}

/// `sha256 HASH FILE` lines of the package's .hash.
fn hash_lines() -> BTreeMap<String, String> {
    read("buildroot/package/latscope/latscope.hash")
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(w.len(), 3, "malformed .hash line {l:?}");
            assert_eq!(w[0], "sha256", "{l:?}");
            (w[2].to_string(), w[1].to_string())
        })
        .fold(BTreeMap::new(), |mut lines, (file, hash)| {
            // Buildroot checks every line of a file and fails at the first
            // that does not match: two lines fail every archive.
            let again = lines.insert(file.clone(), hash);
            assert!(again.is_none(), "latscope.hash has two lines for {file}");
            lines
        })
}

#[test]
fn hash_covers_the_archive_and_the_license_files() {
    let vars = mk_vars(&read("buildroot/package/latscope/latscope.mk"));
    let hashes = hash_lines();
    // Without a hash for the download, Buildroot stops ("No hash found").
    assert!(
        hashes.contains_key(&mk_source(&vars)),
        "latscope.hash has no line for {}",
        mk_source(&vars)
    );
    let files = vars.get("LATSCOPE_LICENSE_FILES").expect("LICENSE_FILES");
    for f in files.split_whitespace() {
        let want = sha256(&root().join(f));
        assert_eq!(
            hashes.get(f),
            Some(&want),
            "latscope.hash must hold the sha256 of {f}"
        );
    }
}

/// (name, version, checksum) of every package of a Cargo.lock.
fn lock_packages(lock: &str) -> BTreeSet<(String, String, String)> {
    lock.split("[[package]]")
        .skip(1)
        .map(|block| {
            let field = |k: &str| {
                block
                    .lines()
                    .find_map(|l| l.strip_prefix(&format!("{k} = ")))
                    .map(|v| v.trim_matches('"').to_string())
                    .unwrap_or_default()
            };
            (field("name"), field("version"), field("checksum"))
        })
        .collect()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn source_archive_holds_the_target_crates_vendored_with_a_lock_of_their_own() {
    let scratch = Scratch::new("source-archive");
    let script = root().join("scripts/source-archive");
    let made = |dir: &str| -> Option<PathBuf> {
        let out = Command::new(&script)
            .arg(scratch.join(dir))
            .output()
            .expect("run scripts/source-archive");
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Exit status 3: GNU tar 1.35 or rustup is missing.
        if out.status.code() == Some(3) {
            precondition::missing(stderr.trim());
            return None;
        }
        assert!(out.status.success(), "scripts/source-archive: {stderr}");
        Some(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
    };
    let Some(first) = made("a") else { return };
    let Some(second) = made("b") else { return };
    let vars = mk_vars(&read("buildroot/package/latscope/latscope.mk"));
    let name = mk_source(&vars);
    assert_eq!(
        first.file_name().and_then(|n| n.to_str()),
        Some(name.as_str()),
        "the script must write the archive the package downloads"
    );
    assert_eq!(
        fs::read(&first).expect("archive"),
        fs::read(&second).expect("archive"),
        "the archive must be reproducible"
    );
    // The bytes Buildroot checks: it keeps a vendored archive as it is.
    assert_eq!(
        hash_lines().get(&name),
        Some(&sha256(&first)),
        "latscope.hash is stale for the archive made now: run scripts/buildroot-hash"
    );

    let listing = run(Command::new("tar").arg("tzf").arg(&first));
    let top = name.trim_end_matches(".tar.gz");
    let entries: Vec<&str> = listing.lines().collect();
    for e in &entries {
        let rest = e
            .strip_prefix(&format!("{top}/"))
            .unwrap_or_else(|| panic!("{e} is outside the archive's top directory {top}/"));
        assert!(
            [
                "Cargo.toml",
                "Cargo.lock",
                "LICENSE-APACHE",
                "LICENSE-MIT",
                ".cargo/config.toml"
            ]
            .contains(&rest)
                || rest.starts_with("core/")
                || rest.starts_with("shim-linux/")
                || rest.starts_with("VENDOR/"),
            "{e}: the archive holds the target's crates and their vendored dependencies alone"
        );
    }
    for f in vars["LATSCOPE_LICENSE_FILES"].split_whitespace() {
        assert!(entries.contains(&format!("{top}/{f}").as_str()), "no {f}");
    }

    run(Command::new("tar")
        .arg("xzf")
        .arg(&first)
        .arg("-C")
        .arg(scratch.path()));
    let tree = scratch.join(top);
    // Buildroot's cargo build: the vendored crates alone, offline, with a
    // cargo home that has no registry cache to fall back on.
    let config = fs::read_to_string(tree.join(".cargo/config.toml")).expect("config.toml");
    assert!(
        config.contains("replace-with = \"vendored-sources\"")
            && config.contains("directory = \"VENDOR\""),
        "{config}"
    );
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    run(Command::new(&cargo)
        .args(["metadata", "--locked", "--offline", "--format-version", "1"])
        .arg("--manifest-path")
        .arg(tree.join("shim-linux/Cargo.toml"))
        .current_dir(&tree)
        .env("CARGO_HOME", scratch.join("empty-cargo-home")));
    // The same versions as the workspace's lock, and fewer crates: none of
    // the host tool's, none of the tests'.
    let own = lock_packages(&fs::read_to_string(tree.join("Cargo.lock")).expect("lock"));
    let ws = lock_packages(&read("Cargo.lock"));
    assert!(
        own.is_subset(&ws),
        "{:?}",
        own.difference(&ws).collect::<Vec<_>>()
    );
    let names: BTreeSet<&str> = own.iter().map(|(n, _, _)| n.as_str()).collect();
    for absent in [
        "latscope-host",
        "latscope-tests",
        "serde_json",
        "proptest",
        "loom",
    ] {
        assert!(!names.contains(absent), "the archive's lock has {absent}");
    }
    for present in ["latscope", "latscope-core", "rustix", "postcard"] {
        assert!(
            names.contains(present),
            "the archive's lock lacks {present}"
        );
    }
    // Every registry crate of that lock is vendored, with the lock's
    // checksum (cargo vendor names a crate's directory `NAME`, or
    // `NAME-VERSION` when two versions of it are locked).
    for (crate_name, version, checksum) in own.iter().filter(|(_, _, c)| !c.is_empty()) {
        let dir = [crate_name.clone(), format!("{crate_name}-{version}")]
            .into_iter()
            .map(|d| tree.join("VENDOR").join(d))
            .find(|d| {
                fs::read_to_string(d.join(".cargo-checksum.json"))
                    .is_ok_and(|j| j.contains(&format!("\"package\":\"{checksum}\"")))
            });
        assert!(dir.is_some(), "{crate_name} {version} is not vendored");
    }
    // Vendored by the cargo of the workspace's oldest supported Rust, which
    // is the oldest supported Buildroot's: every supported cargo reads it.
    let pinned = fs::read_to_string(&script)
        .expect("the script")
        .lines()
        .find_map(|l| l.strip_prefix("VENDOR_RUST=").map(str::to_string))
        .expect("VENDOR_RUST= in scripts/source-archive");
    let msrv = toml_str(&read("Cargo.toml"), "workspace.package", "rust-version")
        .expect("[workspace.package] rust-version");
    assert!(
        pinned.starts_with(&format!("{msrv}.")),
        "VENDOR_RUST={pinned}, rust-version {msrv}"
    );
    // The project's release profile travels with it.
    let archive_ws = fs::read_to_string(tree.join("Cargo.toml")).expect("Cargo.toml");
    for key in ["opt-level", "lto", "codegen-units", "panic"] {
        assert_eq!(
            toml_str(&archive_ws, "profile.release", key),
            toml_str(&read("Cargo.toml"), "profile.release", key),
            "[profile.release] {key}"
        );
    }
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
    // Kconfig indentation as check-package wants it: entries and `if`
    // blocks at the margin, attributes one tab in, help text tab + 2 spaces.
    for l in cfg.lines().skip(1).filter(|l| !l.is_empty()) {
        assert!(
            l.starts_with('\t')
                || l.starts_with("config BR2_PACKAGE_LATSCOPE_")
                || l == "if BR2_PACKAGE_LATSCOPE"
                || l == "endif",
            "Config.in line not tab-indented: {l:?}"
        );
    }
    // Started at boot on request: the option, and the init script the
    // .mk installs for it (the board test runs that script).
    assert!(lines.contains(&"config BR2_PACKAGE_LATSCOPE_START_AT_BOOT"));
    let mk = read("buildroot/package/latscope/latscope.mk");
    assert!(mk.contains("$(LATSCOPE_PKGDIR)/S95latscope"), "{mk}");
    assert!(root()
        .join("buildroot/package/latscope/S95latscope")
        .is_file());
    // The package installs the target program only; the host tool is not
    // something Buildroot builds.
    assert!(
        cfg.contains("does not build the host tool"),
        "Config.in must say that the host tool is not built"
    );
}
