//! A launcher's `meta` file: its settings and the machine's state as
//! `KEY=VALUE` lines (values may be double-quoted), written when the run
//! ends. `LOAD_START`, `LOAD_END` and `COMMIT` complete the [`Machine`].

use std::fs;
use std::path::{Path, PathBuf};

use crate::machine::Machine;
use crate::Error;

/// The lines of one `meta` file.
pub struct MetaFile {
    path: PathBuf,
    text: String,
}

impl MetaFile {
    /// Read `DIR/meta`.
    ///
    /// # Errors
    ///
    /// [`Error::Io`] when it cannot be read.
    pub fn read(dir: &Path) -> Result<MetaFile, Error> {
        let path = dir.join("meta");
        let text = fs::read_to_string(&path).map_err(Error::io(&path))?;
        Ok(MetaFile { path, text })
    }

    /// The value of `key`, unquoted; `None` without a line for it.
    pub fn get(&self, key: &str) -> Option<String> {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix(key)?.strip_prefix('='))
            .map(|v| v.trim_matches('"').to_string())
    }

    /// The value of `key`.
    ///
    /// # Errors
    ///
    /// [`Error::Parse`] without a line for it.
    pub fn need(&self, key: &str) -> Result<String, Error> {
        self.get(key)
            .ok_or_else(|| self.error(format!("no {key}=")))
    }

    /// The number `key` holds.
    ///
    /// # Errors
    ///
    /// [`Error::Parse`] without a line for it, or when it is not a number.
    pub fn num<T: std::str::FromStr>(&self, key: &str) -> Result<T, Error> {
        self.need(key)?
            .parse()
            .map_err(|_| self.error(format!("{key} is not a number")))
    }

    /// Three load averages (`/proc/loadavg`'s first fields).
    pub fn load(&self, key: &str) -> Option<[f64; 3]> {
        let v: Vec<f64> = self
            .get(key)?
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        v.try_into().ok()
    }

    /// The machine now, with the run's load averages and commit, and its
    /// kernel when `KERNEL` names it (a table written later, or
    /// elsewhere, than its run).
    ///
    /// # Errors
    ///
    /// [`Error::Parse`] without a `COMMIT` line.
    pub fn machine(&self) -> Result<Machine, Error> {
        let mut machine = Machine::now();
        if let Some(k) = self.get("KERNEL") {
            machine.kernel = k;
        }
        if let Some(l) = self.load("LOAD_START") {
            machine.load_start = l;
        }
        machine.load_end = self.load("LOAD_END");
        machine.commit = self.need("COMMIT")?;
        Ok(machine)
    }

    fn error(&self, why: String) -> Error {
        Error::Parse {
            what: self.path.display().to_string(),
            why,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(text: &str) -> MetaFile {
        MetaFile {
            path: PathBuf::from("raw/meta"),
            text: text.into(),
        }
    }

    #[test]
    fn values_are_unquoted_and_keys_exact() {
        let m = meta("PAIRS=6\nPAIRS_X=1\nLOAD_START=\"0.5 0.25 1\"\nCOMMIT=\"abc (modified)\"\nKERNEL=\"Linux 6.1 x\"\n");
        assert_eq!(m.num::<usize>("PAIRS").unwrap(), 6);
        assert_eq!(m.load("LOAD_START"), Some([0.5, 0.25, 1.0]));
        assert_eq!(m.machine().unwrap().commit, "abc (modified)");
        assert_eq!(m.machine().unwrap().kernel, "Linux 6.1 x");
        assert!(m.get("PAIR").is_none());
    }

    #[test]
    fn a_missing_or_bad_value_names_the_file_and_key() {
        let m = meta("SECS=ten\n");
        let e = m.num::<u64>("SECS").unwrap_err().to_string();
        assert!(
            e.contains("raw/meta") && e.contains("SECS is not a number"),
            "{e}"
        );
        let e = m.need("COMMIT").unwrap_err().to_string();
        assert!(e.contains("no COMMIT="), "{e}");
        assert!(m.machine().is_err());
    }
}
