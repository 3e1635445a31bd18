//! What a run has made but not yet finished (temporary files, backups,
//! folders made for them) is removed when the run is stopped by SIGINT,
//! SIGTERM or SIGHUP; the signal then ends the process as it would have.
//!
//! Paths are kept in a list the signal handler can walk without taking a
//! lock or allocating: nodes are only ever added (at the head, fully built
//! before they are published) and switched off, never freed. The handler
//! calls only `unlink`, `rmdir`, `signal` and `raise`, which are
//! async-signal-safe.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Once;

struct Node {
    path: CString,
    folder: bool,
    active: AtomicBool,
    next: *mut Node,
}

static HEAD: AtomicPtr<Node> = AtomicPtr::new(ptr::null_mut());
static INSTALL: Once = Once::new();

/// The signals that stop a run and are answered by removing what it made.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A path removed if the process is stopped by a signal while this lives;
/// dropping it (the file was renamed into place or removed) forgets it.
pub struct Registered(Option<&'static Node>);

impl Registered {
    /// Keep the path when the run ends normally (a folder that now holds
    /// the output).
    pub fn keep(mut self) {
        if let Some(n) = self.0.take() {
            n.active.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            n.active.store(false, Ordering::SeqCst);
        }
    }
}

/// Remove the file at `path` if a signal stops the run.
pub fn file(path: &Path) -> Registered {
    register(path, false)
}

/// Remove the (empty) folder at `path` if a signal stops the run.
pub fn folder(path: &Path) -> Registered {
    register(path, true)
}

/// Run `make` (which creates a path and registers it) with the stopping
/// signals blocked in this thread, so that none can arrive between the
/// path's creation and its registration; one that came meanwhile is
/// delivered when `make` returns, and removes what it made.
pub fn atomically<T>(make: impl FnOnce() -> T) -> T {
    INSTALL.call_once(install);
    // SAFETY: sigset_t is plain data, initialised by sigemptyset; the mask
    // is this thread's, restored below.
    let old = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in SIGNALS {
            libc::sigaddset(&mut set, s);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        old
    };
    let out = make();
    // SAFETY: restores the mask saved above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut()) };
    out
}

fn register(path: &Path, folder: bool) -> Registered {
    INSTALL.call_once(install);
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return Registered(None); // a path with a NUL byte was never created
    };
    let node: &'static mut Node = Box::leak(Box::new(Node {
        path,
        folder,
        active: AtomicBool::new(true),
        next: ptr::null_mut(),
    }));
    let mut head = HEAD.load(Ordering::SeqCst);
    loop {
        node.next = head;
        match HEAD.compare_exchange(head, node, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => break,
            Err(now) => head = now,
        }
    }
    Registered(Some(node))
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Newest first: a folder's files go before the folder, and a folder
    // before the folder it was made in.
    let mut p = HEAD.load(Ordering::SeqCst);
    while !p.is_null() {
        // SAFETY: nodes are leaked, never freed, and complete before they
        // are published.
        let n = unsafe { &*p };
        if n.active.load(Ordering::SeqCst) {
            // SAFETY: a valid NUL-terminated path; both calls are
            // async-signal-safe.
            unsafe {
                if n.folder {
                    libc::rmdir(n.path.as_ptr());
                } else {
                    libc::unlink(n.path.as_ptr());
                }
            }
        }
        p = n.next;
    }
    // SAFETY: restoring the default action and raising the signal again
    // ends the process as the signal would have (the exit status a shell
    // reports for it); both are async-signal-safe.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn install() {
    for sig in SIGNALS {
        // SAFETY: plain sigaction calls; a signal that was ignored when the
        // process started (`nohup`) stays ignored.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, ptr::null(), &mut old) != 0 || old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut act.sa_mask);
            for s in SIGNALS {
                libc::sigaddset(&mut act.sa_mask, s);
            }
            act.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &act, ptr::null_mut());
        }
    }
}
