//! The bookkeeping of the console rule both programs follow
//! (`docs/console.md`): after the first failed write to a standard stream,
//! that stream is not written again, and every write it loses (the failed
//! one, and each one not attempted after it) is counted, with the first
//! failure's error number, so that the exit status can say so.
//!
//! The writing itself is each program's (rustix in the target, std's error
//! type in the host); a [`Ledger`] only decides whether a write may be
//! attempted and keeps the count. Lock-free, const-constructible: one
//! static per stream.

use core::sync::atomic::{AtomicI32, AtomicU64, Ordering::Relaxed};

/// What one standard stream has lost.
pub struct Ledger {
    /// Writes that failed or were not attempted after the first failure.
    lost: AtomicU64,
    /// The error number of the first failed write (0: none, or unknown).
    first_errno: AtomicI32,
}

impl Ledger {
    /// A stream that has lost nothing.
    pub const fn new() -> Ledger {
        Ledger {
            lost: AtomicU64::new(0),
            first_errno: AtomicI32::new(0),
        }
    }

    /// Run `write` unless a write to this stream failed before. A failure,
    /// or a write not attempted because of an earlier one, is counted;
    /// `errno` gives a failure's error number. A write not attempted
    /// returns `Err(None)`, a failed one `Err(Some(error))`.
    ///
    /// # Errors
    ///
    /// `Err(Some(error))`: this write failed; `Err(None)`: an earlier one
    /// did, and this one was not attempted.
    pub fn write<T, E>(
        &self,
        write: impl FnOnce() -> Result<T, E>,
        errno: impl FnOnce(&E) -> i32,
    ) -> Result<T, Option<E>> {
        if self.lost.load(Relaxed) > 0 {
            self.lost.fetch_add(1, Relaxed);
            return Err(None);
        }
        write().map_err(|e| {
            let _ = self
                .first_errno
                .compare_exchange(0, errno(&e), Relaxed, Relaxed);
            self.lost.fetch_add(1, Relaxed);
            Some(e)
        })
    }

    /// Writes lost so far, and the first failure's error number.
    pub fn lost(&self) -> Option<(u64, i32)> {
        let n = self.lost.load(Relaxed);
        (n > 0).then(|| (n, self.first_errno.load(Relaxed)))
    }
}

impl Default for Ledger {
    fn default() -> Ledger {
        Ledger::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Ledger;
    use core::cell::Cell;

    const EPIPE: i32 = 32;
    const ENOSPC: i32 = 28;

    fn code(e: &i32) -> i32 {
        *e
    }

    #[test]
    fn a_stream_is_not_written_after_its_first_failed_write() {
        let l = Ledger::new();
        let calls = Cell::new(0);
        let ok = || {
            calls.set(calls.get() + 1);
            Ok::<(), i32>(())
        };
        assert_eq!(l.write(ok, code), Ok(()));
        assert_eq!(l.lost(), None);
        let failed = l.write(
            || {
                calls.set(calls.get() + 1);
                Err::<(), i32>(EPIPE)
            },
            code,
        );
        assert_eq!(failed, Err(Some(EPIPE)));
        for _ in 0..3 {
            assert_eq!(l.write(ok, code), Err(None));
        }
        assert_eq!(calls.get(), 2, "written again after the failure");
        assert_eq!(l.lost(), Some((4, EPIPE)));
    }

    #[test]
    fn the_first_failures_error_is_kept() {
        let l = Ledger::new();
        assert_eq!(l.write(|| Err::<(), i32>(ENOSPC), code), Err(Some(ENOSPC)));
        assert_eq!(l.write(|| Err::<(), i32>(EPIPE), code), Err(None));
        assert_eq!(l.lost(), Some((2, ENOSPC)));
    }
}
