//! `--self-check`: prove at run time that latscope never creates a process
//! or execs while it has real-time threads.
//!
//! After start-up the main thread installs a seccomp filter (inherited by
//! every thread it starts afterwards) that hands fork, vfork, execve,
//! execveat and clone without `CLONE_THREAD` to the main thread as user
//! notifications. The main thread answers each with EPERM and counts it as
//! a defect; the count goes into the bye frame, the summary and the exit
//! status. `clone3` passes its flags in memory a filter cannot read, so it
//! fails with ENOSYS, which makes the C library fall back to `clone`, whose
//! flags the filter checks. A syscall from a foreign ABI (x32 on x86_64) is
//! also reported; a foreign audit architecture is let through unfiltered
//! (latscope never uses one).

use linux_raw_sys::general as g;
use linux_raw_sys::ptrace as p;
use rustix::fd::{AsFd, OwnedFd};

use super::sys::{self, BpfInsn};
use crate::error::Error;

#[cfg(target_arch = "x86_64")]
const ARCH: u32 = p::AUDIT_ARCH_X86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: u32 = p::AUDIT_ARCH_AARCH64;
#[cfg(target_arch = "arm")]
const ARCH: u32 = p::AUDIT_ARCH_ARM;

/// The syscalls refused outright (clone is checked by its flags).
#[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
const FORBIDDEN: [u32; 4] = [
    g::__NR_fork,
    g::__NR_vfork,
    g::__NR_execve,
    g::__NR_execveat,
];
#[cfg(target_arch = "aarch64")]
const FORBIDDEN: [u32; 2] = [g::__NR_execve, g::__NR_execveat];

/// The name of a refused syscall, for the defect message.
pub fn syscall_name(nr: i32) -> &'static str {
    let nr = nr as u32;
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    {
        if nr == g::__NR_fork {
            return "fork";
        }
        if nr == g::__NR_vfork {
            return "vfork";
        }
    }
    if nr == g::__NR_execve {
        "execve"
    } else if nr == g::__NR_execveat {
        "execveat"
    } else if nr == g::__NR_clone {
        "clone (new process)"
    } else {
        "a syscall of a foreign ABI"
    }
}

const fn stmt(code: u32, k: u32) -> BpfInsn {
    BpfInsn {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

const fn jump(code: u32, k: u32, jt: u8, jf: u8) -> BpfInsn {
    BpfInsn {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The classic-BPF program (see the module docs).
pub fn program() -> Vec<BpfInsn> {
    let ld = p::BPF_LD | p::BPF_W | p::BPF_ABS;
    let jeq = p::BPF_JMP | p::BPF_JEQ | p::BPF_K;
    let ret = p::BPF_RET | p::BPF_K;
    // offsets in struct seccomp_data (little endian: low word of args[0])
    let (off_nr, off_arch, off_arg0) = (0, 4, 16);
    let mut v = vec![
        stmt(ld, off_arch),
        jump(jeq, ARCH, 1, 0),
        stmt(ret, p::SECCOMP_RET_ALLOW),
        stmt(ld, off_nr),
    ];
    let foreign_abi = cfg!(target_arch = "x86_64") as usize;
    let f = FORBIDDEN.len();
    // positions after the checks
    let first_check = v.len();
    let allow = first_check + foreign_abi + 2 + f;
    let clone_check = allow + 1;
    let notify = clone_check + 3;
    let enosys = notify + 1;
    let off = |from: usize, to: usize| (to - from - 1) as u8;
    if foreign_abi == 1 {
        let pos = v.len();
        v.push(jump(
            p::BPF_JMP | p::BPF_JGE | p::BPF_K,
            0x4000_0000, // __X32_SYSCALL_BIT
            off(pos, notify),
            0,
        ));
    }
    let pos = v.len();
    v.push(jump(jeq, g::__NR_clone3, off(pos, enosys), 0));
    let pos = v.len();
    v.push(jump(jeq, g::__NR_clone, off(pos, clone_check), 0));
    for nr in FORBIDDEN {
        let pos = v.len();
        v.push(jump(jeq, nr, off(pos, notify), 0));
    }
    debug_assert_eq!(v.len(), allow);
    v.push(stmt(ret, p::SECCOMP_RET_ALLOW));
    v.push(stmt(ld, off_arg0));
    v.push(jump(
        p::BPF_JMP | p::BPF_JSET | p::BPF_K,
        g::CLONE_THREAD,
        0,
        1,
    ));
    v.push(stmt(ret, p::SECCOMP_RET_ALLOW));
    debug_assert_eq!(v.len(), notify);
    v.push(stmt(ret, p::SECCOMP_RET_USER_NOTIF));
    v.push(stmt(
        ret,
        p::SECCOMP_RET_ERRNO | rustix::io::Errno::NOSYS.raw_os_error() as u32,
    ));
    v
}

/// The installed filter.
pub struct SelfCheck {
    fd: OwnedFd,
}

impl SelfCheck {
    /// `prctl(PR_SET_NO_NEW_PRIVS)` and install the filter on the calling
    /// (main) thread, before any other thread exists.
    pub fn install() -> Result<SelfCheck, Error> {
        rustix::thread::set_no_new_privs(true)
            .map_err(|e| Error::sys("--self-check: PR_SET_NO_NEW_PRIVS", e))?;
        let fd = sys::seccomp_install(&program()).map_err(|e| {
            Error::sys(
                "--self-check: seccomp filter with user notification (Linux 5.0 or later)",
                e,
            )
        })?;
        Ok(SelfCheck { fd })
    }

    /// The listener fd to poll.
    pub fn fd(&self) -> rustix::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Answer one pending notification with EPERM. Returns the defect
    /// message (the caller counts the defect).
    pub fn handle_one(&self) -> Option<String> {
        let n = sys::seccomp_receive(self.fd.as_fd()).ok()?;
        let _ = sys::seccomp_deny(
            self.fd.as_fd(),
            n.id,
            rustix::io::Errno::PERM.raw_os_error(),
        );
        // only clone's first argument is flags; exec's is a pointer
        let flags = if n.nr as u32 == g::__NR_clone {
            format!(" (flags {:#x})", n.arg0)
        } else {
            String::new()
        };
        Some(format!(
            "self-check defect: thread {} attempted {}{flags}; refused with EPERM",
            n.tid,
            syscall_name(n.nr),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_jumps_stay_inside() {
        let prog = program();
        assert!(prog.len() < 32);
        for (i, insn) in prog.iter().enumerate() {
            let is_jump = (insn.code as u32 & 0x07) == p::BPF_JMP;
            if is_jump {
                assert!(i + 1 + (insn.jt as usize) < prog.len(), "insn {i}");
                assert!(i + 1 + (insn.jf as usize) < prog.len(), "insn {i}");
            }
        }
        // ends in the two return instructions
        let last = prog[prog.len() - 1];
        assert_eq!(
            last.k,
            p::SECCOMP_RET_ERRNO | rustix::io::Errno::NOSYS.raw_os_error() as u32
        );
        assert_eq!(prog[prog.len() - 2].k, p::SECCOMP_RET_USER_NOTIF);
    }
}
