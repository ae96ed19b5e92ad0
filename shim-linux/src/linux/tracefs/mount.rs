//! tracefs for a run that needs it: the mounted one, or one latscope
//! mounts, as tools built on libtracefs do.

use std::path::PathBuf;

use rustix::io::Errno;
use rustix::mount::MountFlags;

use super::{denied_tracefs, find_tracefs};

/// Where latscope mounts tracefs when none is mounted.
pub const MOUNT_POINT: &str = "/sys/kernel/tracing";

/// tracefs as a run found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tracefs {
    /// Its root (the directory with `instances/` and `trace_marker`).
    pub root: PathBuf,
    /// True if this run mounted it at [`MOUNT_POINT`]. The mount stays
    /// after the run: other tools (and the next run) find it there.
    pub mounted: bool,
}

/// Why a run has no tracefs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoTracefs {
    /// It is mounted at this path, but this process may not use it.
    Denied(PathBuf),
    /// None is mounted, and mounting one needs `CAP_SYS_ADMIN`.
    NoPrivilege(Errno),
    /// None is mounted, and the kernel has no tracefs (or no tracing).
    NotInKernel(Errno),
    /// Mounting it failed otherwise.
    MountFailed(Errno),
    /// It mounted, but has no trace instances (`instances/`) or marker.
    NoInstances,
}

impl core::fmt::Display for NoTracefs {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NoTracefs::Denied(p) => write!(
                f,
                "permission denied on tracefs at {} (it needs root)",
                p.display()
            ),
            NoTracefs::NoPrivilege(_) => write!(
                f,
                "no privilege to mount tracefs at {MOUNT_POINT} (mounting needs CAP_SYS_ADMIN)"
            ),
            NoTracefs::NotInKernel(e) => {
                write!(f, "this kernel cannot mount tracefs at {MOUNT_POINT} ({e})")
            }
            NoTracefs::MountFailed(e) => {
                write!(f, "mounting tracefs at {MOUNT_POINT} failed ({e})")
            }
            NoTracefs::NoInstances => f.write_str("tracefs has no trace instances or marker"),
        }
    }
}

impl Tracefs {
    /// tracefs for `--explain` or `--tracemark`: the mounted one if there
    /// is one (see [`find_tracefs`]), else a new mount at [`MOUNT_POINT`].
    /// The user's tracing (the top-level buffer and its settings) is never
    /// touched; a mount made here is left in place.
    ///
    /// # Errors
    ///
    /// [`NoTracefs`] says why there is none: no access to the mounted
    /// one, no privilege to mount it, a
    /// kernel without it, another mount error, or no instance support.
    pub fn find_or_mount() -> Result<Tracefs, NoTracefs> {
        if let Some(root) = find_tracefs() {
            return Ok(Tracefs {
                root,
                mounted: false,
            });
        }
        if let Some(p) = denied_tracefs() {
            return Err(NoTracefs::Denied(p));
        }
        let mounted = match mount_tracefs() {
            Ok(()) => true,
            // Mounted meanwhile by someone else: use theirs.
            Err(Errno::BUSY) => false,
            Err(e @ (Errno::PERM | Errno::ACCESS)) => return Err(NoTracefs::NoPrivilege(e)),
            Err(e @ (Errno::NODEV | Errno::NOENT)) => return Err(NoTracefs::NotInKernel(e)),
            Err(e) => return Err(NoTracefs::MountFailed(e)),
        };
        let root = find_tracefs().ok_or(NoTracefs::NoInstances)?;
        Ok(Tracefs { root, mounted })
    }
}

/// `mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV
/// | MS_NOEXEC, NULL)`—tracefs at [`MOUNT_POINT`], with the flags systemd
/// gives it. The directory exists once sysfs is mounted on a kernel with
/// tracing (`ENOENT` otherwise).
fn mount_tracefs() -> Result<(), Errno> {
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    rustix::mount::mount("nodev", MOUNT_POINT, "tracefs", flags, None)
}
