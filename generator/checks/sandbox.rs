//! The box the fault-injection harness runs in: the code under test is a
//! stranger's, so the harness (or the `qemu-user` running it) is a child
//! process with
//!
//! - a seccomp filter, installed before it is executed, that refuses what
//!   a copy routine has no business doing: executing anything after the
//!   harness itself, creating processes, the network, changing files
//!   (opening one for writing, renaming, removing, ...), signalling or
//!   tracing other processes, raising its limits, `io_uring`, mounts,
//!   namespaces, modules. It is a deny list because `qemu-user` needs far
//!   more system calls than the harness; the native harness adds its own
//!   allow list of the few calls it makes once its setup is done
//!   (`verify/harness.c`), which reports the system call it stopped;
//! - `RLIMIT_CPU`, `RLIMIT_AS`, no core dumps, no controlling terminal
//!   (`setsid`), death with its parent;
//! - a wall-clock timeout per routine: the harness prints one line per
//!   routine, and a routine without its line in time gets the child
//!   killed.
//!
//! The harness is executed with `execveat` on a descriptor above the
//! descriptor limit the child keeps: the filter allows exactly that one
//! call, and once executed the descriptor is closed and cannot be made
//! again, so nothing the child runs can execute a program.

use std::ffi::{CString, OsStr};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// What the sandbox allows one harness run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock time each routine may take.
    pub timeout: Duration,
    /// Address space, in bytes (`qemu-user` reserves the guest's address
    /// space on top: see [`QEMU_RESERVE`]).
    pub memory: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            memory: DEFAULT_MEMORY_MIB << 20,
        }
    }
}

pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
pub const DEFAULT_MEMORY_MIB: u64 = 1024;
/// Address space `qemu-user` reserves for a guest before it runs it (the
/// whole 4 GiB of a 32-bit guest), allowed beyond [`Limits::memory`].
pub const QEMU_RESERVE: u64 = 8 << 30;

/// How the child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(i32),
    Signaled(i32),
    /// Killed by the sandbox: no line for `routine` (the one after the
    /// last reported) within the timeout.
    TimedOut,
}

/// What one sandboxed run printed and how it ended.
#[derive(Debug, Clone)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub ended: Ended,
    /// Lines starting with the progress prefix seen before the end.
    pub progress: usize,
}

/// The descriptor the program is executed from; the child's descriptor
/// limit is this, so it can never be made again.
const EXEC_FD: i32 = 200;
/// Output kept from the child (the harness prints far less).
const MAX_OUTPUT: u64 = 4 << 20;

/// Run `program args` in `dir`, sandboxed. Every line of its standard
/// output starting with `progress` restarts the per-routine clock.
pub fn run(
    program: &Path,
    args: &[&OsStr],
    dir: &Path,
    limits: &Limits,
    routines: usize,
    progress: &str,
) -> Result<Run> {
    let exe = std::fs::File::open(program)
        .with_context(|| format!("opening {} to run it", program.display()))?;
    let cstr = |s: &OsStr| CString::new(s.as_bytes()).context("a NUL byte in an argument");
    let mut argv: Vec<CString> = vec![cstr(program.as_os_str())?];
    for a in args {
        argv.push(cstr(a)?);
    }
    let env: Vec<CString> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect();
    // CPU time is bounded by the wall clock it may take in all (one
    // thread: CPU time never exceeds it), plus a margin for start-up.
    let cpu = limits
        .timeout
        .as_secs()
        .saturating_mul(routines.max(1) as u64)
        .saturating_add(10);
    let memory = limits.memory;
    let exe_fd = std::os::fd::AsRawFd::as_raw_fd(&exe);
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (prog, pid_slots) = filter::program(EXEC_FD as u32);
    let mut child_setup = ChildSetup::new(argv, env, exe_fd, cpu, memory, prog, pid_slots);
    // SAFETY: the closure runs in the forked child before exec and only
    // makes system calls and writes into memory built above in the parent
    // (no allocation, no lock).
    unsafe {
        cmd.pre_exec(move || child_setup.exec());
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("running {} in the sandbox", program.display()))?;
    drop(exe);
    let stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let (tx, rx) = mpsc::channel::<String>();
    let out_thread = std::thread::spawn(move || {
        let mut r = BufReader::new(stdout.take(MAX_OUTPUT));
        let mut line = Vec::new();
        while r.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
            if tx
                .send(String::from_utf8_lossy(&line).into_owned())
                .is_err()
            {
                break;
            }
            line.clear();
        }
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = (&mut stderr).take(MAX_OUTPUT).read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let mut out = String::new();
    let mut seen = 0;
    let mut deadline = Instant::now() + limits.timeout;
    let mut timed_out = false;
    loop {
        let now = Instant::now();
        match rx.recv_timeout(deadline.saturating_duration_since(now)) {
            Ok(line) => {
                if line.starts_with(progress) {
                    seen += 1;
                    deadline = Instant::now() + limits.timeout;
                }
                out.push_str(&line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                timed_out = true;
                let _ = child.kill();
                break;
            }
        }
    }
    let status = child.wait().context("waiting for the sandboxed harness")?;
    let _ = out_thread.join();
    // Whatever the child printed before it died.
    while let Ok(line) = rx.try_recv() {
        out.push_str(&line);
    }
    let stderr = err_thread.join().unwrap_or_default();
    let ended = if timed_out {
        Ended::TimedOut
    } else if let Some(c) = status.code() {
        Ended::Exited(c)
    } else {
        Ended::Signaled(status.signal().unwrap_or(0))
    };
    Ok(Run {
        stdout: out,
        stderr,
        ended,
        progress: seen,
    })
}

/// What the child does between fork and exec, built in the parent.
struct ChildSetup {
    // Owned here so the pointers below stay valid.
    _argv: Vec<CString>,
    _env: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    env_ptrs: Vec<*const libc::c_char>,
    exe_fd: i32,
    cpu: u64,
    memory: u64,
    prog: Vec<libc::sock_filter>,
    /// Instructions of `prog` that compare with the child's pid.
    pid_slots: Vec<usize>,
}

// SAFETY: the raw pointers point into the CStrings this struct owns; the
// struct is only used by the one child it was built for.
unsafe impl Send for ChildSetup {}
unsafe impl Sync for ChildSetup {}

impl ChildSetup {
    fn new(
        argv: Vec<CString>,
        env: Vec<CString>,
        exe_fd: i32,
        cpu: u64,
        memory: u64,
        prog: Vec<libc::sock_filter>,
        pid_slots: Vec<usize>,
    ) -> Self {
        let ptrs = |v: &[CString]| {
            v.iter()
                .map(|a| a.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect()
        };
        ChildSetup {
            argv_ptrs: ptrs(&argv),
            env_ptrs: ptrs(&env),
            _argv: argv,
            _env: env,
            exe_fd,
            cpu,
            memory,
            prog,
            pid_slots,
        }
    }

    /// Limits, filter, exec: returns only on failure.
    fn exec(&mut self) -> std::io::Result<()> {
        let check = |r: libc::c_int| {
            if r < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        let limit = |what, soft: u64, hard: u64| {
            let l = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            // SAFETY: a plain system call on a local.
            check(unsafe { libc::setrlimit(what, &l) })
        };
        // SAFETY: plain system calls.
        let pid = unsafe {
            check(libc::setsid())?;
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
            check(libc::dup2(self.exe_fd, EXEC_FD))?;
            check(libc::fcntl(EXEC_FD, libc::F_SETFD, libc::FD_CLOEXEC))?;
            libc::getpid() as u32
        };
        for &k in &self.pid_slots {
            self.prog[k].k = pid;
        }
        limit(libc::RLIMIT_CPU, self.cpu, self.cpu + 1)?;
        limit(libc::RLIMIT_AS, self.memory, self.memory)?;
        limit(libc::RLIMIT_CORE, 0, 0)?;
        limit(libc::RLIMIT_NOFILE, EXEC_FD as u64, EXEC_FD as u64)?;
        filter::install(&self.prog)?;
        // SAFETY: NUL-terminated arrays of pointers into live CStrings.
        unsafe {
            libc::syscall(
                libc::SYS_execveat,
                EXEC_FD,
                c"".as_ptr(),
                self.argv_ptrs.as_ptr(),
                self.env_ptrs.as_ptr(),
                libc::AT_EMPTY_PATH,
            );
        }
        Err(std::io::Error::last_os_error())
    }
}

/// How a sandboxed harness run ended, in words, when it did not end
/// normally (0: clean, 1: violations): killed by seccomp, timed out,
/// out of CPU time or memory, or exited with another status.
pub fn verdict(run: &Run, limits: &Limits) -> Option<String> {
    let stopped = run
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("harness: seccomp: system call "));
    // What the loader, libc, qemu and the harness say when an allocation
    // fails.
    let memory = || {
        let e = run.stderr.to_lowercase();
        [
            "cannot allocate memory",
            "failed to map segment",
            "unable to reserve",
            "out of memory",
        ]
        .iter()
        .any(|m| e.contains(m))
    };
    Some(match run.ended {
        Ended::Exited(0 | 1) => return None,
        Ended::TimedOut => format!(
            "timed out after {} s (the sandbox killed it)",
            limits.timeout.as_secs_f64()
        ),
        Ended::Exited(3) if stopped.is_some() => format!(
            "was killed by seccomp: system call {}",
            stopped.unwrap_or_default().trim()
        ),
        Ended::Signaled(libc::SIGSYS) => {
            "was killed by seccomp: a system call the sandbox forbids (SIGSYS)".to_string()
        }
        Ended::Signaled(libc::SIGXCPU) | Ended::Signaled(libc::SIGKILL) => {
            "exceeded its CPU time limit (RLIMIT_CPU)".to_string()
        }
        _ if memory() => format!("exceeded its memory limit ({} MiB)", limits.memory >> 20),
        Ended::Signaled(s) => format!("was killed by signal {s}"),
        Ended::Exited(c) => format!("exited with status {c}"),
    })
}

// ---- the assembler's bounds ----

/// What the compiler driver and the assembler under it may use: a 190-byte
/// `.rept` nest otherwise asks for gigabytes.
pub const AS_MEMORY: u64 = 512 << 20;
pub const AS_OUTPUT: u64 = 64 << 20;
pub const AS_CPU_SECS: u64 = 20;

/// Limit the memory, output file size and CPU time of `cmd` (and of the
/// assembler it runs: limits are inherited).
pub(crate) fn bound_assembler(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit and signal only, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for (what, n) in [
                (libc::RLIMIT_AS, AS_MEMORY),
                (libc::RLIMIT_FSIZE, AS_OUTPUT),
                (libc::RLIMIT_CPU, AS_CPU_SECS),
                (libc::RLIMIT_CORE, 0),
            ] {
                let l = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                if libc::setrlimit(what, &l) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // copygen ignores SIGXFSZ (a file size limit is a write error
            // it reports); the assembler is stopped by it, as before.
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
}

/// Whether a failed assembly ran into [`bound_assembler`]'s limits.
pub(crate) fn exceeded(status: &std::process::ExitStatus, stderr: &str) -> bool {
    use std::os::unix::process::ExitStatusExt;
    let e = stderr.to_lowercase();
    matches!(
        status.signal(),
        Some(libc::SIGXFSZ | libc::SIGXCPU | libc::SIGKILL)
    ) || [
        "memory exhausted",
        "cannot allocate memory",
        "out of memory",
        "file too large",
        "signal 25",
        "signal 24",
        "killed signal",
    ]
    .iter()
    .any(|m| e.contains(m))
}

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod filter {
    //! The seccomp filter (classic BPF over `struct seccomp_data`), for
    //! x86_64 hosts: the x86_64 and i386 system call tables (a 64-bit
    //! program may still `int $0x80`; x32 calls are refused).

    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const AUDIT_ARCH_I386: u32 = 0x4000_0003;
    const X32_BIT: u32 = 0x4000_0000;
    const CLONE_THREAD: u32 = 0x0001_0000;
    const WRITE_FLAGS: u32 = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000; // WRONLY RDWR CREAT TRUNC APPEND
    const AT_EMPTY_PATH: u32 = 0x1000;
    const TIOCSTI: u32 = 0x5412;
    const TIOCLINUX: u32 = 0x541c;
    const ENOSYS: u32 = 38;
    const NONE: u32 = u32::MAX;

    /// Refused outright: (name, x86_64 number, i386 number).
    pub(super) const DENIED: &[(&str, u32, u32)] = &[
        ("execve", 59, 11),
        ("fork", 57, 2),
        ("vfork", 58, 190),
        ("socket", 41, 359),
        ("socketcall", NONE, 102),
        ("socketpair", 53, 360),
        ("connect", 42, 362),
        ("bind", 49, 361),
        ("listen", 50, 363),
        ("accept", 43, NONE),
        ("accept4", 288, 364),
        ("sendto", 44, 369),
        ("sendmsg", 46, 370),
        ("sendmmsg", 307, 345),
        ("creat", 85, 8),
        ("openat2", 437, 437),
        ("unlink", 87, 10),
        ("unlinkat", 263, 301),
        ("rename", 82, 38),
        ("renameat", 264, 302),
        ("renameat2", 316, 353),
        ("rmdir", 84, 40),
        ("mkdir", 83, 39),
        ("mkdirat", 258, 296),
        ("link", 86, 9),
        ("linkat", 265, 303),
        ("symlink", 88, 83),
        ("symlinkat", 266, 304),
        ("truncate", 76, 92),
        ("truncate64", NONE, 193),
        ("ftruncate", 77, 93),
        ("ftruncate64", NONE, 194),
        ("chmod", 90, 15),
        ("fchmod", 91, 94),
        ("fchmodat", 268, 306),
        ("fchmodat2", 452, 452),
        ("chown", 92, 182),
        ("lchown", 94, 16),
        ("fchown", 93, 95),
        ("chown32", NONE, 212),
        ("lchown32", NONE, 198),
        ("fchown32", NONE, 207),
        ("fchownat", 260, 298),
        ("mknod", 133, 14),
        ("mknodat", 259, 297),
        ("setxattr", 188, 226),
        ("lsetxattr", 189, 227),
        ("fsetxattr", 190, 228),
        ("removexattr", 197, 235),
        ("lremovexattr", 198, 236),
        ("fremovexattr", 199, 237),
        ("utime", 132, 30),
        ("utimes", 235, 271),
        ("utimensat", 280, 320),
        ("futimesat", 261, 299),
        ("ptrace", 101, 26),
        ("process_vm_readv", 310, 347),
        ("process_vm_writev", 311, 348),
        ("tkill", 200, 238),
        ("rt_sigqueueinfo", 129, 178),
        ("rt_tgsigqueueinfo", 297, 335),
        ("pidfd_open", 434, 434),
        ("pidfd_send_signal", 424, 424),
        ("pidfd_getfd", 438, 438),
        ("setrlimit", 160, 75),
        ("io_uring_setup", 425, 425),
        ("io_uring_enter", 426, 426),
        ("io_uring_register", 427, 427),
        ("bpf", 321, 357),
        ("perf_event_open", 298, 336),
        ("userfaultfd", 323, 374),
        ("mount", 165, 21),
        ("umount", NONE, 22),
        ("umount2", 166, 52),
        ("unshare", 272, 310),
        ("setns", 308, 346),
        ("chroot", 161, 61),
        ("pivot_root", 155, 217),
        ("fsopen", 430, 430),
        ("fsmount", 432, 432),
        ("move_mount", 429, 429),
        ("open_tree", 428, 428),
        ("keyctl", 250, 288),
        ("add_key", 248, 286),
        ("request_key", 249, 287),
        ("init_module", 175, 128),
        ("finit_module", 313, 350),
        ("delete_module", 176, 129),
        ("kexec_load", 246, 283),
        ("kexec_file_load", 320, NONE),
        ("reboot", 169, 88),
        ("acct", 163, 51),
        ("swapon", 167, 87),
        ("swapoff", 168, 115),
        ("sethostname", 170, 74),
        ("setdomainname", 171, 121),
        ("settimeofday", 164, 79),
        ("clock_settime", 227, 264),
        ("stime", NONE, 25),
        ("adjtimex", 159, 124),
        ("clock_adjtime", 305, 343),
        ("uselib", 134, 86),
        ("open_by_handle_at", 304, 342),
        ("name_to_handle_at", 303, 341),
        ("fanotify_init", 300, 338),
        ("fanotify_mark", 301, 339),
        ("quotactl", 179, 131),
        ("quotactl_fd", 443, 443),
        ("ioperm", 173, 101),
        ("iopl", 172, 110),
        ("modify_ldt", 154, 123),
        ("memfd_secret", 447, 447),
        ("process_madvise", 440, 440),
        ("process_mrelease", 448, 448),
        ("lookup_dcookie", 212, 253),
        ("vhangup", 153, 111),
    ];

    /// The calls allowed only with some arguments, per table.
    struct Special {
        execveat: u32,
        clone: u32,
        clone3: u32,
        open: u32,
        openat: u32,
        kill: u32,
        tgkill: u32,
        prlimit64: u32,
        ioctl: u32,
    }

    const X86_64: Special = Special {
        execveat: 322,
        clone: 56,
        clone3: 435,
        open: 2,
        openat: 257,
        kill: 62,
        tgkill: 234,
        prlimit64: 302,
        ioctl: 16,
    };
    const I386: Special = Special {
        execveat: 358,
        clone: 120,
        clone3: 435,
        open: 5,
        openat: 295,
        kill: 37,
        tgkill: 270,
        prlimit64: 340,
        ioctl: 54,
    };

    type Insn = libc::sock_filter;

    /// Placeholder for the child's pid in `k` (no pid is this large).
    const PID: u32 = 0xffff_fffe;

    const LD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const JSET: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
    const JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
    const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
    const DENY: u32 = libc::SECCOMP_RET_TRAP;

    fn i(code: u16, jt: u8, jf: u8, k: u32) -> Insn {
        Insn { code, jt, jf, k }
    }
    fn ld(off: u32) -> Insn {
        i(LD, 0, 0, off)
    }
    fn ret(k: u32) -> Insn {
        i(RET, 0, 0, k)
    }
    /// Low 32 bits of argument `n`.
    fn arg(n: u32) -> u32 {
        16 + 8 * n
    }

    /// `if nr == n { block }` where `block` ends in a return.
    fn when(out: &mut Vec<Insn>, n: u32, block: Vec<Insn>) {
        if n == NONE {
            return;
        }
        out.push(i(JEQ, 0, block.len() as u8, n));
        out.extend(block);
    }

    fn table(out: &mut Vec<Insn>, column: fn(&(&str, u32, u32)) -> u32, s: &Special, fd: u32) {
        out.push(ld(0));
        for d in DENIED {
            when(out, column(d), vec![ret(DENY)]);
        }
        // execveat(fd, "", .., AT_EMPTY_PATH): the one exec of the program.
        when(
            out,
            s.execveat,
            vec![
                ld(arg(0)),
                i(JEQ, 0, 3, fd),
                ld(arg(4)),
                i(JEQ, 0, 1, AT_EMPTY_PATH),
                ret(ALLOW),
                ret(DENY),
            ],
        );
        // Threads (qemu-user has some), never processes.
        when(
            out,
            s.clone,
            vec![
                ld(arg(0)),
                i(JSET, 0, 1, CLONE_THREAD),
                ret(ALLOW),
                ret(DENY),
            ],
        );
        // Its flags are in memory the filter cannot read: callers fall back to clone.
        when(out, s.clone3, vec![ret(libc::SECCOMP_RET_ERRNO | ENOSYS)]);
        for (n, flags) in [(s.open, 1), (s.openat, 2)] {
            when(
                out,
                n,
                vec![
                    ld(arg(flags)),
                    i(JSET, 0, 1, WRITE_FLAGS),
                    ret(DENY),
                    ret(ALLOW),
                ],
            );
        }
        // Signals to itself only (0: its own process group; setsid made
        // it the only member). The pid is the child's, patched in there.
        let pid = PID;
        when(
            out,
            s.kill,
            vec![
                ld(arg(0)),
                i(JEQ, 2, 0, pid),
                i(JEQ, 1, 0, 0),
                ret(DENY),
                ret(ALLOW),
            ],
        );
        when(
            out,
            s.tgkill,
            vec![ld(arg(0)), i(JEQ, 0, 1, pid), ret(ALLOW), ret(DENY)],
        );
        // Reading limits is fine, setting them is not.
        when(
            out,
            s.prlimit64,
            vec![
                ld(arg(2)),
                i(JEQ, 0, 3, 0),
                ld(arg(2) + 4),
                i(JEQ, 0, 1, 0),
                ret(ALLOW),
                ret(DENY),
            ],
        );
        when(
            out,
            s.ioctl,
            vec![
                ld(arg(1)),
                i(JEQ, 2, 0, TIOCSTI),
                i(JEQ, 1, 0, TIOCLINUX),
                ret(ALLOW),
                ret(DENY),
            ],
        );
        out.push(ret(ALLOW));
    }

    /// The program, and the instructions that compare with the child's
    /// pid ([`PID`] until the child patches them); `fd` is the descriptor
    /// the one `execveat` runs.
    pub(super) fn program(fd: u32) -> (Vec<Insn>, Vec<usize>) {
        let mut x64 = Vec::new();
        table(&mut x64, |d| d.1, &X86_64, fd);
        let mut x32 = Vec::new();
        table(&mut x32, |d| d.2, &I386, fd);
        let mut p = vec![
            ld(4),
            i(JEQ, 0, 1, AUDIT_ARCH_X86_64),
            i(JA, 0, 0, 3),
            i(JEQ, 0, 1, AUDIT_ARCH_I386),
            i(JA, 0, 0, 4 + x64.len() as u32),
            ret(libc::SECCOMP_RET_KILL_PROCESS),
            // x86_64: no x32 calls.
            ld(0),
            i(JGE, 0, 1, X32_BIT),
            ret(DENY),
        ];
        p.extend(x64);
        p.extend(x32);
        let slots = p
            .iter()
            .enumerate()
            .filter(|(_, x)| x.code == JEQ && x.k == PID)
            .map(|(k, _)| k)
            .collect();
        (p, slots)
    }

    /// Install `prog` in the calling (child) process.
    pub(super) fn install(prog: &[Insn]) -> std::io::Result<()> {
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut Insn,
        };
        // SAFETY: plain system calls; `fprog` points at `prog`, alive here.
        unsafe {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    &fprog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
mod filter {
    //! Other hosts: no outer filter (rlimits, the timeout and the native
    //! harness's own filter only).
    pub(super) fn program(_fd: u32) -> (Vec<libc::sock_filter>, Vec<usize>) {
        (Vec::new(), Vec::new())
    }
    pub(super) fn install(_prog: &[libc::sock_filter]) -> std::io::Result<()> {
        Ok(())
    }
}
