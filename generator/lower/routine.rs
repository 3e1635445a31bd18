//! The arch-neutral operation list that the lowering (`lower/mod.rs`) produces and each backend
//! selects instructions for. The model has three live registers, `dst`,
//! `src` and `len` (bytes left, counted from the current pointers), and
//! numbered scratch registers. Every access to user memory carries a
//! [`UserSite`]: its readable label and the fixup that recovers from it.

use crate::front::strategy::{AlignPointer, PrefetchKind};

/// A local label, printed as `.L<function tag>_<name>`.
pub type Label = String;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ptr {
    Dst,
    Src,
}

/// Where an access lies relative to its base pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// `base + k`
    Start(u32),
    /// `base + len - k`
    End(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mem {
    pub base: Ptr,
    pub at: At,
}

/// Unsigned comparison of `len` against an immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cond {
    Eq,
    Ne,
    Below,
    BelowEq,
    Above,
    AboveEq,
}

/// What a pointer test looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PtrTest {
    Dst,
    Src,
    /// `dst | src`: both aligned.
    Both,
    /// `dst ^ src`: congruent.
    Congruent,
}

impl From<AlignPointer> for PtrTest {
    fn from(p: AlignPointer) -> Self {
        match p {
            AlignPointer::Dst => PtrTest::Dst,
            AlignPointer::Src => PtrTest::Src,
            AlignPointer::Both => PtrTest::Both,
            AlignPointer::Congruent => PtrTest::Congruent,
        }
    }
}

pub type FixupId = usize;

/// A user access: the label of the instruction (`loop_load3`) and the
/// fixup its exception-table entry points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSite {
    pub name: Label,
    pub fixup: FixupId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub width: u32,
    /// Scratch register number (the first of a pair when `width` is wider
    /// than a register: scratch `reg` and `reg + 1`).
    pub reg: u8,
    pub mem: Mem,
    pub user: Option<UserSite>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Comment(String),
    Label(Label),
    Jump(Label),
    JumpIfLen {
        cond: Cond,
        imm: u64,
        target: Label,
    },
    /// Jump when `(dst - src) mod 4096` lies in `lo..=hi` (uses scratch 0).
    JumpIfAlias {
        lo: u32,
        hi: u32,
        target: Label,
    },
    /// Jump when the tested pointer is (or, `aligned == false`, is not)
    /// aligned to `mask + 1` (uses scratch 0).
    JumpIfPtr {
        test: PtrTest,
        mask: u32,
        aligned: bool,
        target: Label,
    },
    Load(Access),
    Store(Access),
    /// Load `count` words into scratch 0.. from `src + at` (ARM `ldm`).
    LoadMultiple {
        count: u8,
        at: u32,
        user: Option<UserSite>,
    },
    /// Store scratch 0..`count` to `dst + at` (ARM `stm`).
    StoreMultiple {
        count: u8,
        at: u32,
        user: Option<UserSite>,
    },
    Prefetch {
        kind: PrefetchKind,
        at: u32,
    },
    /// `dst += k; src += k; len -= k`
    Advance(u32),
    /// The same with `k` = the distance from the tested pointer (`Dst` or
    /// `Src`) to its next multiple of `to`, 1..=`to` (x86; uses scratch 0).
    AdvanceToBoundary {
        test: PtrTest,
        to: u32,
    },
    /// `len = n` (constant-size entry points, which take no length).
    SetLen(u32),
    /// Copy the `len / unit` whole units of `len` with `rep movs` of
    /// `unit` bytes; `len` is left holding `len mod unit` (none when `unit`
    /// is 1), the pointers past the units copied.
    RepMovs {
        unit: u32,
        user: Option<UserSite>,
    },
    /// After a fault in `RepMovs`: make `len` the bytes left again.
    RepRecover {
        unit: u32,
    },
    /// `memset(dst, 0, len)` on the kernel side (zeroing from_user).
    ZeroRest,
    /// Start of the out-of-line fixup code.
    BeginFixups,
    UaccessBegin,
    UaccessEnd,
    /// x86_64 linux with 6.1's `_ASM_EXTABLE_CPY`: its handler put the trap
    /// number in eax; after a machine check (`X86_TRAP_MC`) jump to `target`
    /// without retrying bytes (the poisoned line would be read again).
    /// `only_before`: the file is for every kernel tree, and only the half
    /// for trees before that release has the trap number
    /// (`kernel::version::extable_copy_only_before`).
    MachineCheckExit {
        target: Label,
        only_before: Option<crate::kernel::version::Release>,
    },
    /// Return 0 (`zero`) or `len`: the bytes not copied.
    Return {
        zero: bool,
    },
    /// Shift-and-combine (RISC-V): scratch `lo` = 8 * (src mod `width`),
    /// scratch `hi` = 8 * `width` - `lo`, the bit shifts that join two
    /// aligned source words into the `width` bytes at `src`.
    ShiftSetup {
        width: u32,
        lo: u8,
        hi: u8,
    },
    /// Load the aligned `width`-byte word at `(src & -width) + at` into
    /// scratch `reg`: it holds at least one byte of the source, and lies
    /// in one page with it.
    LoadAligned {
        width: u32,
        reg: u8,
        at: u32,
        user: Option<UserSite>,
    },
    /// Scratch `out` = (scratch `prev` >> `lo`) | (scratch `next` << `hi`):
    /// the `width` source bytes at `src`, from the aligned words around
    /// them (little-endian).
    Combine {
        out: u8,
        prev: u8,
        next: u8,
        lo: u8,
        hi: u8,
    },
}

/// How the state is repaired when a user access faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Recover {
    /// Nothing to repair: the state already describes what is done.
    None,
    /// `Advance(k)`: the first `k` bytes from the pointers are copied.
    Advance(u32),
    /// `RepRecover`.
    Rep { unit: u32 },
}

/// What happens after the repair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Then {
    /// Copy byte by byte until the next fault: exact count.
    Retry,
    /// Copy at most one byte (progress rule), then return.
    Step,
    /// Return `len`.
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fixup {
    pub recover: Recover,
    pub then: Then,
    pub label: Label,
}

/// One entry point, lowered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routine {
    pub symbol: String,
    /// Further names of the same body, with the role each stands for (a
    /// routine serving both directions, standalone: `<symbol>_to_user`).
    pub aliases: Vec<(String, crate::front::strategy::Direction)>,
    /// Prefix of this routine's local labels (`from`, `to`, `from6`).
    pub tag: String,
    pub direction: crate::front::strategy::Direction,
    /// A constant-size entry point: `n` is not an argument.
    pub fixed: Option<u32>,
    pub ops: Vec<Op>,
    pub fixups: Vec<Fixup>,
}

impl Routine {
    /// Every user access, in op order: (site, op index).
    pub fn user_sites(&self) -> Vec<&UserSite> {
        let mut v = Vec::new();
        for op in &self.ops {
            match op {
                Op::Load(a) | Op::Store(a) => v.extend(a.user.as_ref()),
                Op::LoadMultiple { user, .. }
                | Op::StoreMultiple { user, .. }
                | Op::LoadAligned { user, .. } => v.extend(user.as_ref()),
                Op::RepMovs { user, .. } => v.extend(user.as_ref()),
                _ => {}
            }
        }
        v
    }

    /// Highest scratch register used, plus one.
    pub fn scratch_used(&self) -> u8 {
        let mut n = 0;
        for op in &self.ops {
            let used = match op {
                // A 16-byte access is a register pair (AArch64 ldp/stp).
                Op::Load(a) | Op::Store(a) => a.reg + if a.width > 8 { 2 } else { 1 },
                Op::LoadMultiple { count, .. } | Op::StoreMultiple { count, .. } => *count,
                Op::JumpIfAlias { .. } | Op::JumpIfPtr { .. } => 1,
                Op::ShiftSetup { lo, hi, .. } => 1 + *lo.max(hi),
                Op::LoadAligned { reg, .. } => reg + 1,
                Op::Combine {
                    out,
                    prev,
                    next,
                    lo,
                    hi,
                } => 1 + *[out, prev, next, lo, hi].into_iter().max().expect("five"),
                _ => 0,
            };
            n = n.max(used);
        }
        n
    }
}
