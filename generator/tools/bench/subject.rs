//! What is timed: a [`Subject`] (a name and a routine) made from a
//! strategy's JIT-compiled routine, or the running kernel's own
//! `copy_to_user` through a system call. The built-in baselines are in
//! `baselines.rs`.

use anyhow::{bail, Result};

/// A copy routine: `f(to, from, n)` → bytes not copied (SysV), the JIT's type.
pub type CopyFn = crate::jit::CopyFn;

/// Something to time: a name and a routine. `_owner` keeps JIT code alive.
pub struct Subject {
    pub name: String,
    pub f: CopyFn,
    pub _owner: Option<Box<dyn std::any::Any>>,
}

/// One routine of `s`, JIT-compiled; the module lives as long as the subject.
pub fn jit_subject(
    s: &crate::front::strategy::Strategy,
    symbol: &str,
    name: String,
) -> Result<Subject> {
    let module = crate::jit::compile(s).map_err(|e| anyhow::anyhow!("{}: {e}", s.name))?;
    let f = module
        .routine(symbol)
        .ok_or_else(|| anyhow::anyhow!("{}: no routine {symbol}", s.name))?
        .entry();
    Ok(Subject {
        name,
        f,
        _owner: Some(Box::new(module)),
    })
}

/// The routine a strategy is benchmarked by: its general from_user entry
/// (to_user when it has none); without faults both copy the same way.
pub fn strategy_subject(s: &crate::front::strategy::Strategy) -> Result<Subject> {
    use crate::front::strategy::Direction;
    let dir = if s.directions.contains(&Direction::FromUser) {
        Direction::FromUser
    } else {
        Direction::ToUser
    };
    jit_subject(
        s,
        &crate::lower::entry_symbol(s, crate::front::strategy::Flavor::Standalone, dir, None),
        s.name.clone(),
    )
}

/// The running kernel's copy_to_user, as Andrew Morton, "faster
/// copy_*_user for bad alignments on intel ia32" (2002) measured it: `pread()`
/// of a fully cached in-memory file (memfd) into the buffer at `to`. The
/// source is the page cache's page-aligned page, so `from` is unused.
static KERNEL_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

unsafe extern "sysv64" fn kernel_read(to: *mut u8, _from: *const u8, n: usize) -> usize {
    let fd = KERNEL_FD.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: `to` is valid for n bytes; fd is a memfd at least n long.
    let got = unsafe { libc::pread(fd, to.cast(), n, 0) };
    n - got.max(0) as usize
}

/// The `kernel_read` subject, with a memfd of `size` bytes filled and cached.
pub fn kernel_subject(size: usize) -> Result<Subject> {
    // SAFETY: plain system calls on a fresh descriptor.
    unsafe {
        let mut fd = KERNEL_FD.load(std::sync::atomic::Ordering::Relaxed);
        if fd < 0 {
            fd = libc::memfd_create(c"copygen-bench".as_ptr(), 0);
            if fd < 0 {
                bail!("memfd_create: {}", std::io::Error::last_os_error());
            }
            KERNEL_FD.store(fd, std::sync::atomic::Ordering::Relaxed);
        }
        let data: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
        if libc::pwrite(fd, data.as_ptr().cast(), size, 0) != size as isize {
            bail!("filling the memfd: {}", std::io::Error::last_os_error());
        }
    }
    Ok(Subject {
        name: "kernel_read".into(),
        f: kernel_read,
        _owner: None,
    })
}
