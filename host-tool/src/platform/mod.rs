//! What differs between the platforms the host tool runs on: Linux and
//! macOS (`unix`, on rustix) and Windows (`windows`, on std). Each
//! platform module has the same functions, and the rest of the host calls
//! them here, never a platform API of its own:
//!
//! * [`send_nowait`] and [`recv_nowait`]: one socket call that never
//!   waits (a recorder's acks, `simulate`'s reading of them);
//! * [`out_of_descriptors`]: whether an `accept` failed for want of
//!   descriptors or memory (the recorder backs off instead of ending);
//! * [`raise_fd_limit`]: the open-files limit as high as it goes;
//! * [`write_std`]: one unbuffered write to standard output or error;
//! * [`on_stop`]: the signals (Ctrl-C on Windows) that stop a recorder;
//! * [`sync_dir`]: a directory's entries made durable (a new recording's
//!   name).
//!
//! Every feature of the host exists on all three (docs/host-platforms.md);
//! where a platform lacks a mechanism, its module says what stands in.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub(crate) use unix::{
    on_stop, out_of_descriptors, raise_fd_limit, recv_nowait, send_nowait, sync_dir, write_std,
};

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub(crate) use windows::{
    on_stop, out_of_descriptors, raise_fd_limit, recv_nowait, send_nowait, sync_dir, write_std,
};

#[cfg(not(any(unix, windows)))]
compile_error!("latscope-host runs on Linux, macOS and Windows (docs/host-platforms.md)");
