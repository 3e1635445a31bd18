//! The x86_64 call site of a strategy in a kernel whose `copy_user_generic()`
//! is inline (6.12): what a site's bytes are once the kernel's
//! `apply_alternatives()` has patched them for one CPU's features.
//!
//! The stock 6.12 site is
//! `ALTERNATIVE("rep movsb", "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))`
//! in the `rep movs` convention (rdi = to, rsi = from, rcx = n → rcx = bytes
//! not copied; only rax clobbered besides). A strategy's site is a chain of
//! ALTERNATIVEs over its variants; for one feature set it becomes one
//! [`SiteCode`]. Both the kernel patch (which writes the chain) and the
//! benchmark of what the kernel executes (which runs the resolved bytes)
//! take the site from here, so the two cannot drift apart.

/// A call site as the CPU executes it after alternatives are applied:
/// the site's bytes, padding included (as `optimize_nops()` leaves it), and
/// the rel32 calls in them, whose targets are linked by whoever places the
/// bytes (the kernel's linker, or the JIT).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteCode {
    pub bytes: Vec<u8>,
    pub calls: Vec<SiteCall>,
}

/// One `call rel32` in a [`SiteCode`]: `at` is the offset of the four
/// displacement bytes in `bytes` (the opcode is at `at - 1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteCall {
    pub at: usize,
    pub target: SiteTarget,
}

/// What a site calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteTarget {
    /// The stock kernel's `rep_movs_alternative` (the non-FSRM path).
    RepMovsAlternative,
    /// A routine of the strategy, by its linux-flavour symbol (the entry
    /// point or one variant's routine), in the `rep movs` convention.
    Routine(String),
}
