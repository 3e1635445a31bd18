//! The built-in baselines: `rep movsb`, `rep movsq` and libc's `memcpy`,
//! each a routine of its own (naked assembly, no frame around it).

use super::subject::{CopyFn, Subject};

/// `rep movsb` alone, as the kernel's FSRM path does it.
///
/// # Safety
/// `to` and `from` must be valid for `n` bytes and not overlap.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn rep_movsb(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
    core::arch::naked_asm!("mov rcx, rdx", "rep movsb", "xor eax, eax", "ret")
}

/// `rep movsq` for the quadwords, then `rep movsb` for the rest.
///
/// # Safety
/// `to` and `from` must be valid for `n` bytes and not overlap.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn rep_movsq(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
    core::arch::naked_asm!(
        "mov rcx, rdx",
        "shr rcx, 3",
        "and edx, 7",
        "rep movsq",
        "mov ecx, edx",
        "rep movsb",
        "xor eax, eax",
        "ret"
    )
}

/// libc's `memcpy` (glibc picks its own variant for this CPU).
unsafe extern "sysv64" fn libc_memcpy(to: *mut u8, from: *const u8, n: usize) -> usize {
    // SAFETY: the caller passes valid, non-overlapping buffers of n bytes.
    unsafe { libc::memcpy(to.cast(), from.cast(), n) };
    0
}

pub const BASELINES: &[(&str, CopyFn, &str)] = &[
    ("rep_movsb", rep_movsb, "rep movsb"),
    (
        "rep_movsq",
        rep_movsq,
        "rep movsq, then rep movsb for the rest",
    ),
    ("memcpy", libc_memcpy, "libc memcpy (through a call)"),
];

/// The built-in baseline `name`, as a subject.
pub fn baseline(name: &str) -> Option<Subject> {
    BASELINES.iter().find(|b| b.0 == name).map(|b| Subject {
        name: b.0.to_string(),
        f: b.1,
        _owner: None,
    })
}
