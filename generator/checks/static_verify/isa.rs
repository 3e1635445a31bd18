//! One instruction as the checker sees it, whatever the architecture, and
//! what an instruction set must provide: a decoder into these facts
//! ([`Isa`]) and each instruction's effect on the abstract state
//! ([`Semantics`]). `x86.rs` (iced-x86, x86_64 and i386), `arm.rs`
//! (unarm, A32) and `a64.rs` (yaxpeax-arm, A64) implement them; a new ISA is one more module and one line in
//! [`isa_for`].

use std::fmt;
use std::ops::Range;
use std::rc::Rc;

use super::abi::AbiSpec;
use super::domain::State;
use super::{a64, arm, rv64, x86};
use crate::checks::objfile::{Loc, ObjectFile, RelocTarget};
use crate::front::strategy::Arch;

/// An instruction set, as the checker needs it.
pub(super) trait Isa {
    /// Decode the bytes at `range` of `section` into instructions.
    /// `addr_of` maps a place to the function's address space (see
    /// [`FIXUP_BASE`]); branch targets it does not map lie outside the
    /// function.
    fn decode(
        &self,
        obj: &ObjectFile,
        section: &str,
        range: Range<u64>,
        addr_of: &dyn Fn(&Loc) -> Option<u64>,
        abi: &AbiSpec,
    ) -> Vec<Insn>;

    /// A register's name in messages (the checker numbers them 0..16).
    fn reg_name(&self, r: usize) -> &'static str;
}

/// The effect of one decoded instruction, kept with its [`Insn`].
pub(super) trait Semantics: fmt::Debug {
    /// The state after the instruction runs in `st` on its normal path (a
    /// conditional instruction: its condition holds).
    fn transfer(&self, insn: &Insn, st: &State, abi: &AbiSpec) -> State;

    /// A computed jump's possible targets when it runs in `st`, in the
    /// function's address space (None: the analysis cannot tell).
    fn targets(&self, _insn: &Insn, _st: &State) -> Option<Vec<u64>> {
        None
    }
}

/// The instruction set of `arch`.
pub(super) fn isa_for(arch: Arch) -> Box<dyn Isa> {
    match arch {
        Arch::Armv6 => Box::new(arm::Arm),
        Arch::Aarch64 => Box::new(a64::A64),
        Arch::X86_64 | Arch::I386 => Box::new(x86::X86 { arch }),
        Arch::Riscv64 => Box::new(rv64::Rv64),
    }
}

/// `.text.fixup` instructions live above this in a function's address space.
pub(super) const FIXUP_BASE: u64 = 1 << 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flow {
    Next,
    Jump(u64),
    CondJump(u64),
    Return,
    Indirect,
    Stop,
}

/// Branch (or ARM execution) conditions the length refinement understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CondCode {
    Eq,
    Ne,
    Hs,
    Lo,
    Hi,
    Ls,
    Ge,
    Lt,
    Gt,
    Le,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MemKind {
    Load,
    Store,
    Prefetch,
    Other,
}

/// A memory operand: `base + index + disp`, `size` bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct MemOperand {
    pub(super) base: Option<usize>,
    pub(super) index: Option<usize>,
    pub(super) disp: i64,
    pub(super) size: usize,
    pub(super) kind: MemKind,
}

/// A plain load into one register (or a preload) whose reach the bounds
/// check looks at if its value is dead.
#[derive(Debug, Clone, Copy)]
pub(super) struct Touch {
    pub(super) dst: Option<usize>,
    pub(super) base: Option<usize>,
    /// None: a register offset.
    pub(super) disp: Option<i64>,
    pub(super) size: usize,
    pub(super) prefetch: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Insn {
    /// Address in the function's address space (see [`FIXUP_BASE`]).
    pub(super) addr: u64,
    pub(super) loc: Loc,
    pub(super) len: u64,
    pub(super) text: String,
    pub(super) semantics: Rc<dyn Semantics>,
    pub(super) flow: Flow,
    /// Condition of a `CondJump`, or of a conditionally executed instruction.
    pub(super) cc: CondCode,
    /// ARM: runs only when `cc` holds (a non-branch with a condition).
    pub(super) cond_exec: bool,
    pub(super) mems: Vec<MemOperand>,
    /// GPRs read, with the bytes read.
    pub(super) uses: Vec<(usize, usize)>,
    /// GPRs surely written, with the bytes replaced (liveness kills).
    pub(super) defs: Vec<(usize, usize)>,
    /// Every GPR it may write.
    pub(super) written: Vec<usize>,
    /// GPRs a fault may leave part-way (a `rep movs` stopped mid-copy):
    /// the fixup sees them moved by an unknown amount.
    pub(super) fault_moves: Vec<usize>,
    /// GPRs whose values flow into the written ones (not address registers
    /// of a memory operand): what a write it does not model may derive from.
    pub(super) inputs: Vec<usize>,
    /// Why it touches vector state, if it does.
    pub(super) vector: Option<String>,
    pub(super) touch: Option<Touch>,
    /// Bytes of the (user) memory operand, at least 1.
    pub(super) width: usize,
    /// A preload (`pld`): cannot fault.
    pub(super) prefetch: bool,
    /// Padding (`nop`, `int3`): never reaching it is no gap in the analysis.
    pub(super) pad: bool,
    /// How it leaves the routine's contract, if it can: a system call or
    /// trap, or a call to code outside the function. Such code is never
    /// run by `copygen verify`.
    pub(super) escape: Option<Escape>,
}

/// How an instruction leaves the routine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Escape {
    /// A system call, hypervisor or monitor call, or a software trap.
    Trap(String),
    /// A call the analysis does not follow (indirect, or to code outside
    /// the function).
    Call(String),
}

/// A system call (`syscall`: true) or a software trap's escape.
pub(super) fn trap_escape(text: &str, syscall: bool) -> Option<Escape> {
    Some(Escape::Trap(if syscall {
        format!("`{text}` is a system call: a copy routine makes none")
    } else {
        format!("`{text}` is a software trap: a copy routine never reaches one")
    }))
}

/// A call instruction's escape: `target` is its destination in the
/// function's address space (None: indirect or outside the function).
pub(super) fn call_escape(text: &str, target: Option<u64>) -> Option<Escape> {
    match target {
        Some(_) => None,
        None => Some(Escape::Call(format!(
            "`{text}` calls code outside the routine: the analysis cannot follow it"
        ))),
    }
}

/// Where a branch at `loc` with offset `delta` goes (None: undefined).
pub(super) fn branch_to(obj: &ObjectFile, loc: &Loc, delta: i64) -> Option<Loc> {
    match obj.code_relocs.get(loc) {
        Some(RelocTarget::Symbol(l)) => Some(Loc {
            section: l.section.clone(),
            offset: (l.offset as i64 + delta) as u64,
        }),
        Some(RelocTarget::Undefined(_)) => None,
        None => Some(Loc {
            section: loc.section.clone(),
            offset: (loc.offset as i64 + delta) as u64,
        }),
    }
}
