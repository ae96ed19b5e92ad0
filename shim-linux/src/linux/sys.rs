//! The few system calls rustix does not offer, made directly.
//!
//! This is the only module of the crate with `unsafe`. rustix covers the
//! clock, memory locking, affinity, files, sockets and termios; what it
//! deliberately leaves out (it calls them "libc internals") is here:
//! `sched_setattr`/`sched_getattr`, signal masking and waiting, seccomp with
//! its user-notification ioctls, and the raw process-creation probes of the
//! self-check. Numbers and structures come from `linux-raw-sys`; the trap
//! itself is `core::arch::asm!` for x86_64, aarch64 and 32-bit ARM (ARM mode,
//! where r7 may carry the syscall number; Thumb mode is refused at compile
//! time because r7 is its frame pointer).
//!
//! # Safety
//!
//! Each wrapper passes the kernel pointers to memory that lives for the
//! whole call and is sized as the kernel expects (asserted at compile time
//! where the layout is ours), so the kernel never writes outside it.
#![allow(unsafe_code)]

use core::arch::asm;
use linux_raw_sys::general as g;
use linux_raw_sys::ptrace as p;
use rustix::io::Errno;
use rustix::time::Timespec;

#[cfg(all(target_arch = "arm", target_feature = "thumb-mode"))]
compile_error!(
    "latscope's raw syscalls need ARM mode on 32-bit ARM (r7 is the Thumb frame pointer)"
);

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "arm")))]
compile_error!("latscope supports x86_64, aarch64 and arm Linux");

/// `syscall(nr, a0, a1, a2, a3)`—the raw trap.
///
/// # Safety
/// `nr` must be a valid syscall number and every pointer argument must point
/// to live memory of the size the kernel expects for that syscall.
#[inline]
unsafe fn syscall4(nr: u32, a0: usize, a1: usize, a2: usize, a3: usize) -> isize {
    let ret: isize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: x86-64 syscall ABI: number in rax, arguments in rdi, rsi,
    // rdx, r10; the kernel clobbers rcx and r11 and returns in rax. The
    // caller guarantees the pointer arguments.
    unsafe {
        asm!("syscall", inlateout("rax") nr as isize => ret,
            in("rdi") a0, in("rsi") a1, in("rdx") a2, in("r10") a3,
            lateout("rcx") _, lateout("r11") _, options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: AArch64 syscall ABI: number in x8, arguments in x0..x3,
    // result in x0; nothing else is clobbered. The caller guarantees the
    // pointer arguments.
    unsafe {
        asm!("svc 0", in("x8") nr as usize, inlateout("x0") a0 => ret,
            in("x1") a1, in("x2") a2, in("x3") a3, options(nostack, preserves_flags));
    }
    #[cfg(target_arch = "arm")]
    // SAFETY: ARM EABI syscall ABI in ARM mode: number in r7, arguments in
    // r0..r3, result in r0. The caller guarantees the pointer arguments.
    unsafe {
        asm!("svc 0", in("r7") nr as usize, inlateout("r0") a0 => ret,
            in("r1") a1, in("r2") a2, in("r3") a3, options(nostack, preserves_flags));
    }
    ret
}

/// Turns a raw return value into a result (`-4095..-1` are errors).
fn check(ret: isize) -> Result<usize, Errno> {
    if (-4095..0).contains(&ret) {
        Err(Errno::from_raw_os_error((-ret) as i32))
    } else {
        Ok(ret as usize)
    }
}

/// The kernel's `struct sched_attr` (version 0, 48 bytes).
#[repr(C)]
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedAttr {
    /// Size of this structure.
    pub size: u32,
    /// `SCHED_*` policy.
    pub sched_policy: u32,
    /// `SCHED_FLAG_*`.
    pub sched_flags: u64,
    /// Nice value (SCHED_OTHER, SCHED_BATCH).
    pub sched_nice: i32,
    /// Static priority (SCHED_FIFO, SCHED_RR).
    pub sched_priority: u32,
    /// SCHED_DEADLINE runtime in ns.
    pub sched_runtime: u64,
    /// SCHED_DEADLINE relative deadline in ns.
    pub sched_deadline: u64,
    /// SCHED_DEADLINE period in ns.
    pub sched_period: u64,
}

/// `SCHED_ATTR_SIZE_VER0`.
pub const SCHED_ATTR_SIZE: u32 = 48;
const _: () = assert!(core::mem::size_of::<SchedAttr>() == SCHED_ATTR_SIZE as usize);

/// Scheduling policies, as the kernel numbers them.
pub mod policy {
    use linux_raw_sys::general as g;
    /// SCHED_OTHER.
    pub const OTHER: u32 = g::SCHED_NORMAL;
    /// SCHED_FIFO.
    pub const FIFO: u32 = g::SCHED_FIFO;
    /// SCHED_RR.
    pub const RR: u32 = g::SCHED_RR;
    /// SCHED_BATCH.
    pub const BATCH: u32 = g::SCHED_BATCH;
    /// SCHED_IDLE.
    pub const IDLE: u32 = g::SCHED_IDLE;
    /// SCHED_DEADLINE.
    pub const DEADLINE: u32 = g::SCHED_DEADLINE;
    /// SCHED_FLAG_RESET_ON_FORK: a child would start as SCHED_OTHER.
    pub const RESET_ON_FORK: u64 = g::SCHED_FLAG_RESET_ON_FORK as u64;
}

/// `sched_setattr(tid, attr, 0)`—sets the policy of thread `tid` (0 = the
/// calling thread).
pub fn sched_setattr(tid: i32, attr: &SchedAttr) -> Result<(), Errno> {
    let mut a = *attr;
    a.size = SCHED_ATTR_SIZE;
    // SAFETY: `a` is a live, correctly sized `struct sched_attr` for the
    // whole call; the kernel only reads it.
    check(unsafe {
        syscall4(
            g::__NR_sched_setattr,
            tid as usize,
            &a as *const SchedAttr as usize,
            0,
            0,
        )
    })
    .map(drop)
}

#[cfg(test)]
/// `sched_getattr(tid, attr, sizeof attr, 0)`—reads the policy of thread
/// `tid` (0 = the calling thread).
pub fn sched_getattr(tid: i32) -> Result<SchedAttr, Errno> {
    let mut a = SchedAttr::default();
    // SAFETY: `a` is a live, writable 48-byte `struct sched_attr`, and the
    // size argument tells the kernel not to write more.
    check(unsafe {
        syscall4(
            g::__NR_sched_getattr,
            tid as usize,
            &mut a as *mut SchedAttr as usize,
            SCHED_ATTR_SIZE as usize,
            0,
        )
    })?;
    Ok(a)
}

/// `sched_setattr(tid, {SCHED_OTHER, nice 0}, 0)`—demotes a thread to the
/// normal policy (the exit discipline and the panic hook use this).
pub fn demote(tid: i32) -> Result<(), Errno> {
    sched_setattr(
        tid,
        &SchedAttr {
            sched_policy: policy::OTHER,
            ..SchedAttr::default()
        },
    )
}

/// `mallopt(M_ARENA_MAX, 1)` and `mallopt(M_TOP_PAD, pad)`—keeps glibc's
/// allocator to the main heap with a small top pad.
///
/// By default glibc gives every thread that allocates its own arena, and
/// under `mlockall(MCL_FUTURE)` each arena's first 132 KiB is locked and
/// resident, although the measuring threads never allocate after set-up.
/// Call it before any thread exists. Other C libraries (musl) have no
/// arenas; there it does nothing.
pub fn malloc_single_arena(top_pad: i32) {
    #[cfg(target_env = "gnu")]
    {
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        /// glibc's `M_ARENA_MAX` and `M_TOP_PAD` (malloc.h).
        const M_ARENA_MAX: i32 = -8;
        const M_TOP_PAD: i32 = -2;
        // SAFETY: mallopt only sets allocator parameters; it takes plain
        // integers, and glibc documents both parameters as valid at any
        // time (they take effect for later allocations).
        unsafe {
            mallopt(M_ARENA_MAX, 1);
            mallopt(M_TOP_PAD, top_pad);
        }
    }
    #[cfg(not(target_env = "gnu"))]
    let _ = top_pad;
}

/// A kernel signal set (64 signals, 8 bytes on every supported arch).
pub type SigSet = u64;
const SIGSET_SIZE: usize = core::mem::size_of::<SigSet>();

/// The bit of signal `sig` in a [`SigSet`].
pub const fn sigbit(sig: u32) -> SigSet {
    1 << (sig - 1)
}

/// Signal numbers used by latscope.
pub mod sig {
    use linux_raw_sys::general as g;
    /// SIGINT.
    pub const INT: u32 = g::SIGINT;
    /// SIGTERM.
    pub const TERM: u32 = g::SIGTERM;
    /// SIGUSR1.
    pub const USR1: u32 = g::SIGUSR1;
    /// SIGHUP.
    pub const HUP: u32 = g::SIGHUP;
    /// SIGCHLD.
    #[cfg(feature = "proof")]
    pub const CHLD: u32 = g::SIGCHLD;
    /// SIGUSR2.
    pub const USR2: u32 = g::SIGUSR2;
    /// SIGALRM (the POSIX timers' signal of `-x`, as cyclictest's).
    pub const ALRM: u32 = g::SIGALRM;
}

/// `rt_sigprocmask(SIG_BLOCK, set, NULL, 8)`—blocks `set` in the calling
/// thread; threads created afterwards inherit the mask.
pub fn block_signals(set: SigSet) -> Result<(), Errno> {
    // SAFETY: `set` is a live 8-byte kernel sigset; the old-set pointer is
    // NULL, so the kernel writes nothing.
    check(unsafe {
        syscall4(
            g::__NR_rt_sigprocmask,
            g::SIG_BLOCK as usize,
            &set as *const SigSet as usize,
            0,
            SIGSET_SIZE,
        )
    })
    .map(drop)
}

/// `rt_sigtimedwait(set, NULL, timeout, 8)`—waits up to `timeout` (`None`:
/// for ever) for one of the (blocked) signals in `set`; `Ok(None)` on
/// timeout or interruption.
pub fn wait_signal(set: SigSet, timeout: Option<&Timespec>) -> Result<Option<u32>, Errno> {
    #[cfg(target_pointer_width = "64")]
    let nr = g::__NR_rt_sigtimedwait;
    // rustix's Timespec is the 64-bit `__kernel_timespec` on 32-bit too.
    #[cfg(target_pointer_width = "32")]
    let nr = g::__NR_rt_sigtimedwait_time64;
    let timeout = timeout.map_or(0, |t| t as *const Timespec as usize);
    // SAFETY: `set` and `timeout` (or NULL) are live for the call and sized
    // as the kernel expects (8-byte sigset, 64-bit timespec); the siginfo
    // pointer is NULL.
    match check(unsafe { syscall4(nr, &set as *const SigSet as usize, 0, timeout, SIGSET_SIZE) }) {
        Ok(sig) => Ok(Some(sig as u32)),
        Err(Errno::AGAIN) | Err(Errno::INTR) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The ints after `struct sigevent`'s preamble (value, signo, notify): the
/// kernel's structure is 64 bytes.
const SIGEV_PAD: usize = (64 - 2 * 4 - core::mem::size_of::<usize>()) / 4;
const _: () = assert!(core::mem::size_of::<g::sigevent>() == 64);

/// A POSIX timer of the kernel (`timer_t`), deleted when dropped.
#[derive(Debug)]
pub struct Timer(i32);

/// `timer_create(clock, {SIGEV_THREAD_ID | SIGEV_SIGNAL, signo, tid}, &id)`
/// —a timer that sends `signo` to thread `tid` (not the process) when it
/// expires.
pub fn timer_create(clock: rustix::time::ClockId, signo: u32, tid: i32) -> Result<Timer, Errno> {
    let mut ev = g::sigevent {
        sigev_value: g::sigval { sival_int: 0 },
        sigev_signo: signo as i32,
        sigev_notify: (g::SIGEV_THREAD_ID | g::SIGEV_SIGNAL) as i32,
        _sigev_un: g::sigevent__bindgen_ty_1 {
            _pad: [0; SIGEV_PAD],
        },
    };
    ev._sigev_un._tid = tid;
    let mut id: g::__kernel_timer_t = 0;
    // SAFETY: `ev` is a live, fully initialised `struct sigevent` (64
    // bytes) the kernel only reads; `id` is a live `timer_t` it writes.
    check(unsafe {
        syscall4(
            g::__NR_timer_create,
            clock as usize,
            &ev as *const g::sigevent as usize,
            &mut id as *mut g::__kernel_timer_t as usize,
            0,
        )
    })?;
    Ok(Timer(id))
}

/// `timer_settime(timer, flags, {interval, first}, NULL)`—arms the timer
/// to expire at `first` (absolute with `TIMER_ABSTIME`, else relative to
/// now) and then every `interval`.
pub fn timer_settime(
    timer: &Timer,
    absolute: bool,
    first: &Timespec,
    interval: &Timespec,
) -> Result<(), Errno> {
    let ts = |t: &Timespec| g::__kernel_timespec {
        tv_sec: t.tv_sec,
        tv_nsec: t.tv_nsec as _,
    };
    let spec = g::__kernel_itimerspec {
        it_interval: ts(interval),
        it_value: ts(first),
    };
    let flags = if absolute { g::TIMER_ABSTIME } else { 0 };
    #[cfg(target_pointer_width = "64")]
    let nr = g::__NR_timer_settime;
    #[cfg(target_pointer_width = "32")]
    let nr = g::__NR_timer_settime64;
    // SAFETY: `spec` is a live 64-bit `struct itimerspec` the kernel only
    // reads; the old-value pointer is NULL.
    check(unsafe {
        syscall4(
            nr,
            timer.0 as usize,
            flags as usize,
            &spec as *const g::__kernel_itimerspec as usize,
            0,
        )
    })
    .map(drop)
}

/// `timer_getoverrun(timer)`—the expirations that found the timer's
/// signal still pending, since it was last taken.
pub fn timer_getoverrun(timer: &Timer) -> Result<u64, Errno> {
    // SAFETY: no pointer argument.
    check(unsafe { syscall4(g::__NR_timer_getoverrun, timer.0 as usize, 0, 0, 0) })
        .map(|n| n as u64)
}

impl Drop for Timer {
    /// `timer_delete(timer)`.
    fn drop(&mut self) {
        // SAFETY: no pointer argument; the id is ours and deleted once.
        let _ = unsafe { syscall4(g::__NR_timer_delete, self.0 as usize, 0, 0, 0) };
    }
}

/// One classic-BPF instruction (`struct sock_filter`).
pub type BpfInsn = p::sock_filter;

/// `seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, prog)`—
/// installs a filter on the calling thread, inherited by every thread it
/// creates afterwards (latscope installs it in the main thread before it
/// starts any other thread, so no `TSYNC` is needed, which the kernel would
/// refuse together with a listener). Returns the user-notification fd.
///
/// The caller must have set `PR_SET_NO_NEW_PRIVS` or hold CAP_SYS_ADMIN.
pub fn seccomp_install(prog: &[BpfInsn]) -> Result<rustix::fd::OwnedFd, Errno> {
    let len = u16::try_from(prog.len()).map_err(|_| Errno::INVAL)?;
    let fprog = p::sock_fprog {
        len,
        filter: prog.as_ptr() as *mut BpfInsn,
    };
    let flags = p::SECCOMP_FILTER_FLAG_NEW_LISTENER;
    // SAFETY: `fprog` and the instructions it points to are live for the
    // call; the kernel copies the program and never writes through it.
    let fd = check(unsafe {
        syscall4(
            g::__NR_seccomp,
            p::SECCOMP_SET_MODE_FILTER as usize,
            flags as usize,
            &fprog as *const p::sock_fprog as usize,
            0,
        )
    })?;
    let fd = i32::try_from(fd).map_err(|_| Errno::BADF)?;
    // SAFETY: the kernel just returned this fd to us and nothing else owns it.
    Ok(unsafe { <rustix::fd::OwnedFd as rustix::fd::FromRawFd>::from_raw_fd(fd) })
}

/// `_IOWR('!', nr, size)` as the generic ioctl encoding builds it (the same
/// on x86_64, aarch64 and arm).
const fn iowr(nr: u32, size: usize) -> u32 {
    (3 << 30) | ((size as u32) << 16) | ((b'!' as u32) << 8) | nr
}
/// `SECCOMP_IOCTL_NOTIF_RECV`.
const NOTIF_RECV: u32 = iowr(0, core::mem::size_of::<p::seccomp_notif>());
/// `SECCOMP_IOCTL_NOTIF_SEND`.
const NOTIF_SEND: u32 = iowr(1, core::mem::size_of::<p::seccomp_notif_resp>());
const _: () = assert!(NOTIF_RECV == 0xc050_2100);
const _: () = assert!(NOTIF_SEND == 0xc018_2101);

/// What a user notification reports: which syscall, with which flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification {
    /// Cookie to answer with.
    pub id: u64,
    /// Thread id that made the call.
    pub tid: u32,
    /// Syscall number.
    pub nr: i32,
    /// First argument (clone flags).
    pub arg0: u64,
}

/// `ioctl(fd, TIOCOUTQ, &n)`—the bytes a tty still holds to transmit (its
/// output buffer and its driver's; not the UART's FIFO).
pub fn tty_output_queued(fd: rustix::fd::BorrowedFd<'_>) -> Result<usize, Errno> {
    use rustix::fd::AsRawFd;
    let mut n: core::ffi::c_int = 0;
    // SAFETY: TIOCOUTQ writes one `int` through its pointer argument, and
    // `n` is a live `int` for the whole call.
    check(unsafe {
        syscall4(
            g::__NR_ioctl,
            fd.as_raw_fd() as usize,
            linux_raw_sys::ioctl::TIOCOUTQ as usize,
            &mut n as *mut core::ffi::c_int as usize,
            0,
        )
    })?;
    Ok(usize::try_from(n).unwrap_or(0))
}

/// `ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &notif)`—takes one pending
/// notification (call after the fd polled readable).
pub fn seccomp_receive(fd: rustix::fd::BorrowedFd<'_>) -> Result<Notification, Errno> {
    use rustix::fd::AsRawFd;
    // The kernel requires the buffer to be zeroed.
    let mut n = p::seccomp_notif {
        id: 0,
        pid: 0,
        flags: 0,
        data: p::seccomp_data {
            nr: 0,
            arch: 0,
            instruction_pointer: 0,
            args: [0; 6],
        },
    };
    // SAFETY: `n` is a live, zeroed `struct seccomp_notif` of the size
    // encoded in the request number, so the kernel writes only inside it.
    check(unsafe {
        syscall4(
            g::__NR_ioctl,
            fd.as_raw_fd() as usize,
            NOTIF_RECV as usize,
            &mut n as *mut p::seccomp_notif as usize,
            0,
        )
    })?;
    Ok(Notification {
        id: n.id,
        tid: n.pid,
        nr: n.data.nr,
        arg0: n.data.args[0],
    })
}

/// `ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp)`—makes the notified syscall
/// fail with `errno`.
pub fn seccomp_deny(fd: rustix::fd::BorrowedFd<'_>, id: u64, errno: i32) -> Result<(), Errno> {
    use rustix::fd::AsRawFd;
    let r = p::seccomp_notif_resp {
        id,
        val: 0,
        error: -errno,
        flags: 0,
    };
    // SAFETY: `r` is a live `struct seccomp_notif_resp` of the size encoded
    // in the request number; the kernel only reads it.
    check(unsafe {
        syscall4(
            g::__NR_ioctl,
            fd.as_raw_fd() as usize,
            NOTIF_SEND as usize,
            &r as *const p::seccomp_notif_resp as usize,
            0,
        )
    })
    .map(drop)
}

/// One request that `--self-check` must refuse: its name, and what the
/// kernel answered (`Ok` means it was **not** refused).
#[cfg(feature = "proof")]
pub type Probe = (&'static str, Result<(), Errno>);

/// A path that does not exist, so that an exec the filter failed to refuse
/// still fails harmlessly (ENOENT instead of EPERM).
#[cfg(feature = "proof")]
const PROBE_PATH: &core::ffi::CStr = c"/latscope-self-check-probe/none";

/// The self-check probe: every process-creation and exec request the
/// filter must refuse, made once each by raw syscall while the filter is
/// active. Each should fail with EPERM (and be counted as a defect),
/// `clone3` with ENOSYS. Should the filter not be active:
/// - `clone(SIGCHLD)`, `fork` and `vfork` would create a child, which
///   leaves at once through `exit(0)` in the same `asm!` block that made
///   the request ([`new_process`]): no Rust code runs in it;
/// - `execve` and `execveat` name a path that does not exist (ENOENT);
/// - `clone3` with a size of 0 is rejected by the kernel (EINVAL).
///
/// Only in `proof` builds (`--self-check-probe`).
#[cfg(feature = "proof")]
pub fn probe_process_creation() -> Vec<Probe> {
    let mut v = Vec::with_capacity(6);
    v.push((
        "clone (new process)",
        new_process(NewProcess::Clone).map(drop),
    ));
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    {
        v.push(("fork", new_process(NewProcess::Fork).map(drop)));
        v.push(("vfork", new_process(NewProcess::Vfork).map(drop)));
    }
    let path = PROBE_PATH.as_ptr() as usize;
    // SAFETY: execve(path, NULL, NULL): `path` is a NUL-terminated static
    // string; NULL argv and envp are accepted by Linux. The path does not
    // exist, so even an unrefused call returns.
    v.push((
        "execve",
        check(unsafe { syscall4(g::__NR_execve, path, 0, 0, 0) }).map(drop),
    ));
    // SAFETY: execveat(AT_FDCWD, path, NULL, NULL, flags), as execve above.
    // This 4-argument trap leaves the flags register unset: whatever it
    // holds, the call fails (the path does not exist, or EINVAL).
    v.push((
        "execveat",
        check(unsafe { syscall4(g::__NR_execveat, g::AT_FDCWD as isize as usize, path, 0, 0) })
            .map(drop),
    ));
    // SAFETY: clone3(NULL, 0): a size below the first version's makes the
    // kernel reject it before reading the (NULL) pointer.
    v.push((
        "clone3",
        check(unsafe { syscall4(g::__NR_clone3, 0, 0, 0, 0) }).map(drop),
    ));
    v
}

/// A request for a new process that takes no pointer.
#[cfg(feature = "proof")]
#[derive(Debug, Clone, Copy)]
enum NewProcess {
    /// `clone(SIGCHLD, NULL)`: a copy of the process, as `fork` makes.
    Clone,
    /// `fork()`.
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    Fork,
    /// `vfork()`: the child borrows the caller's memory and stack.
    #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
    Vfork,
}

/// `clone`, `fork` or `vfork`, and in a child that came into being,
/// `exit(0)` at once: request, test and exit are one `asm!` block, so the
/// child runs only those instructions (a `vfork` child shares the
/// caller's stack, which no Rust code may touch). The caller gets the
/// kernel's answer: the child's PID, or the error.
#[cfg(feature = "proof")]
fn new_process(kind: NewProcess) -> Result<usize, Errno> {
    let (nr, a0) = match kind {
        NewProcess::Clone => (g::__NR_clone, sig::CHLD as usize),
        #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
        NewProcess::Fork => (g::__NR_fork, 0),
        #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
        NewProcess::Vfork => (g::__NR_vfork, 0),
    };
    let ret: isize;
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the request (number in rax, first argument in rdi, the
    // others zero: no pointer) returns 0 in a child, which then makes the
    // `exit` syscall with status 0 and never returns; it touches no memory
    // and no stack. The caller continues at `2:` with the result in rax;
    // the kernel clobbers rcx and r11, the test the flags.
    unsafe {
        asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "mov eax, {exit}",
            "xor edi, edi",
            "syscall",
            "2:",
            exit = const g::__NR_exit,
            inlateout("rax") nr as isize => ret,
            inlateout("rdi") a0 => _,
            in("rsi") 0usize, in("rdx") 0usize, in("r10") 0usize,
            lateout("rcx") _, lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as on x86-64: number in x8, arguments in x0..x3 (no
    // pointer), result in x0; a child (x0 = 0) loads `exit` into x8 and
    // traps again with status 0, touching no memory.
    unsafe {
        asm!(
            "svc 0",
            "cbnz x0, 2f",
            "mov x8, #{exit}",
            "svc 0",
            "2:",
            exit = const g::__NR_exit,
            inlateout("x8") nr as usize => _,
            inlateout("x0") a0 => ret,
            in("x1") 0usize, in("x2") 0usize, in("x3") 0usize,
            options(nostack),
        );
    }
    #[cfg(target_arch = "arm")]
    // SAFETY: as on x86-64, in ARM mode: number in r7, arguments in r0..r3
    // (no pointer), result in r0; a child (r0 = 0) loads `exit` into r7 and
    // traps again with status 0, touching no memory.
    unsafe {
        asm!(
            "svc 0",
            "cmp r0, #0",
            "bne 2f",
            "mov r7, #{exit}",
            "svc 0",
            "2:",
            exit = const g::__NR_exit,
            inlateout("r7") nr as usize => _,
            inlateout("r0") a0 => ret,
            in("r1") 0usize, in("r2") 0usize, in("r3") 0usize,
            options(nostack),
        );
    }
    check(ret)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    /// Without the self-check's filter the probe's requests succeed: each
    /// child leaves at once with status 0, inside the request's `asm!`
    /// block (a `vfork` child that ran on would corrupt this very stack).
    #[cfg(feature = "proof")]
    #[test]
    fn a_child_of_the_probe_exits_at_once() {
        use rustix::process::{waitpid, Pid, WaitOptions};
        let kinds = [
            NewProcess::Clone,
            #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
            NewProcess::Fork,
            #[cfg(any(target_arch = "x86_64", target_arch = "arm"))]
            NewProcess::Vfork,
        ];
        for kind in kinds {
            let pid = new_process(kind).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
            let pid = Pid::from_raw(i32::try_from(pid).expect("a PID")).expect("a child's PID");
            let (_, status) = waitpid(Some(pid), WaitOptions::empty())
                .expect("waitpid")
                .expect("the child's status");
            assert_eq!(status.exit_status(), Some(0), "{kind:?}");
        }
    }

    #[test]
    fn a_ttys_output_queue_is_read_and_dev_null_is_no_tty() {
        let pty =
            rustix::pty::openpt(rustix::pty::OpenptFlags::RDWR | rustix::pty::OpenptFlags::NOCTTY)
                .expect("a pty");
        assert!(tty_output_queued(rustix::fd::AsFd::as_fd(&pty)).is_ok());
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::WRONLY,
            rustix::fs::Mode::empty(),
        )
        .expect("/dev/null");
        assert_eq!(
            tty_output_queued(rustix::fd::AsFd::as_fd(&null)),
            Err(Errno::NOTTY)
        );
    }

    #[test]
    fn sched_attr_round_trips_and_demotes() {
        // runs on its own thread so the test harness thread stays normal
        std::thread::spawn(|| {
            let before = sched_getattr(0).expect("sched_getattr");
            assert_eq!(before.size, SCHED_ATTR_SIZE);
            let fifo = SchedAttr {
                sched_policy: policy::FIFO,
                sched_priority: 1,
                sched_flags: policy::RESET_ON_FORK,
                ..SchedAttr::default()
            };
            match sched_setattr(0, &fifo) {
                Ok(()) => {
                    let now = sched_getattr(0).unwrap();
                    assert_eq!((now.sched_policy, now.sched_priority), (policy::FIFO, 1));
                    assert_eq!(
                        now.sched_flags & policy::RESET_ON_FORK,
                        policy::RESET_ON_FORK
                    );
                }
                // without CAP_SYS_NICE the kernel refuses; that is the error we map
                Err(e) if !may_set_rt() => assert_eq!(e, Errno::PERM),
                Err(e) => panic!("SCHED_FIFO 1 refused although this process may set it: {e}"),
            }
            demote(0).unwrap();
            assert_eq!(sched_getattr(0).unwrap().sched_policy, policy::OTHER);
        })
        .join()
        .unwrap();
    }

    /// Whether this process may take SCHED_FIFO priority 1: CAP_SYS_NICE in
    /// its effective set, or an RLIMIT_RTPRIO of at least 1.
    fn may_set_rt() -> bool {
        const CAP_SYS_NICE: u32 = 23;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let cap_eff = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap();
        let rtprio = rustix::process::getrlimit(rustix::process::Resource::Rtprio);
        cap_eff & (1 << CAP_SYS_NICE) != 0 || rtprio.current.unwrap_or(u64::MAX) >= 1
    }

    #[test]
    fn waiting_for_a_blocked_signal_times_out() {
        // (delivery is covered by the whole-run tests: a process-directed
        // signal here could land on a harness thread that has not blocked it)
        std::thread::spawn(|| {
            let set = sigbit(sig::USR1);
            block_signals(set).unwrap();
            let t = Timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            assert_eq!(wait_signal(set, Some(&t)), Ok(None));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_thread_timer_signals_its_thread_and_counts_overruns() {
        std::thread::spawn(|| {
            let set = sigbit(sig::ALRM);
            block_signals(set).unwrap();
            let tid = rustix::thread::gettid().as_raw_nonzero().get();
            let t = timer_create(rustix::time::ClockId::Monotonic, sig::ALRM, tid).unwrap();
            let ms = Timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            timer_settime(&t, false, &ms, &ms).unwrap();
            let long = Timespec {
                tv_sec: 5,
                tv_nsec: 0,
            };
            assert_eq!(wait_signal(set, Some(&long)), Ok(Some(sig::ALRM)));
            // Taken at some time in [before, taken]; the next one after at
            // least `asleep` more and at most `pending` since `before`.
            let before = Instant::now();
            assert_eq!(wait_signal(set, None), Ok(Some(sig::ALRM)));
            let taken = Instant::now();
            // At least 20 periods pass, however long a loaded machine
            // keeps this thread away: the pending signal merges every
            // expiry meanwhile, each counted as an overrun.
            std::thread::sleep(Duration::from_millis(20));
            let asleep = taken.elapsed();
            assert_eq!(wait_signal(set, None), Ok(Some(sig::ALRM)));
            let pending = before.elapsed();
            let over = timer_getoverrun(&t).unwrap();
            // the periods that ended meanwhile, less the signal's own,
            // and one either way for where the periods' edges fall
            let periods = |d: Duration| d.as_millis() as u64;
            let (least, most) = (periods(asleep) - 2, periods(pending) + 1);
            assert!(
                (least..=most).contains(&over),
                "{over} overruns, expected {least}..={most} ({asleep:?} to {pending:?} pending)"
            );
            drop(t);
            // deleted: after one that may have been pending, no more
            let five_ms = Timespec {
                tv_sec: 0,
                tv_nsec: 5_000_000,
            };
            let _ = wait_signal(set, Some(&Timespec::default()));
            assert_eq!(wait_signal(set, Some(&five_ms)), Ok(None));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn signal_bits() {
        assert_eq!(sigbit(1), 1);
        assert_eq!(sigbit(sig::INT), 1 << (linux_raw_sys::general::SIGINT - 1));
    }
}
