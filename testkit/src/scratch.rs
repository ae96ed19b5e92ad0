//! The one scratch directory of the tests, the benchmarks and the xtask.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory of its own under the system's temporary directory,
/// `latscope-TAG-PID-N`. Dropped, it is removed, unless the thread is
/// panicking (a failed test keeps its files, and says where) or
/// `LATSCOPE_KEEP_SCRATCH` is set.
pub struct Scratch(PathBuf);

impl Scratch {
    /// A fresh directory named after `tag`.
    ///
    /// # Panics
    ///
    /// When it cannot be made (a test cannot go on without it).
    pub fn new(tag: &str) -> Scratch {
        Scratch::try_new(tag).unwrap_or_else(|e| panic!("scratch directory for {tag}: {e}"))
    }

    /// A fresh directory named after `tag`.
    ///
    /// # Errors
    ///
    /// When it cannot be made.
    pub fn try_new(tag: &str) -> io::Result<Scratch> {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "latscope-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// A path inside it.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for the failure: {}", self.0.display());
        } else if std::env::var_os("LATSCOPE_KEEP_SCRATCH").is_none() {
            // best effort: a directory left in the temporary directory is
            // harmless
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_is_fresh_and_removed_when_dropped() {
        let a = Scratch::new("unit");
        let b = Scratch::new("unit");
        assert_ne!(a.path(), b.path());
        fs::write(a.join("f"), "x").unwrap();
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists(), "{p:?} left behind");
        assert!(b.path().is_dir());
    }
}
