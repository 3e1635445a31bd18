//! What each architecture offers a strategy: register widths, which
//! instructions exist ([`Capabilities`]), and its calling conventions
//! ([`Abi`], one table per architecture in `arch/<arch>.rs`). The
//! validator checks strategies against these tables, the backends select
//! registers from them, the generated header states them, and the static
//! verifier checks object code against them.

pub mod aarch64;
pub mod armv6;
pub mod cpu;
pub mod i386;
pub mod riscv64;
pub mod symbols;
pub mod x86_64;

use crate::front::strategy::{Arch, Convention, Flavor, Grouping, PrefetchKind, Tail};

/// One calling convention of one architecture: what callers rely on, and
/// the registers copygen's routines use for their copy body. Registers are
/// hardware numbers; each backend names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Abi {
    pub arch: Arch,
    /// One line for the generated file's header (`SysV: rdi=to rsi=from rdx=n -> rax`).
    pub summary: &'static str,
    /// Bytes in a pointer and in the length.
    pub ptr_width: u32,
    /// Where `to, from, n` arrive.
    pub args: Args,
    /// Holds the bytes not copied at return.
    pub ret: u8,
    /// Registers a routine may change without restoring them (caller-saved
    /// in this convention); every other register is callee-saved.
    pub clobbers: &'static [u8],
    pub sp: u8,
    /// ARM: the program counter, which a routine loads with its entry `lr`
    /// to return.
    pub pc: Option<u8>,
    /// The copy body's registers: `to`, `from` and the bytes left, in
    /// these throughout the body (the prologue moves arguments there).
    pub dst: u8,
    pub src: u8,
    pub len: u8,
    /// Scratch registers for data, in the lowering's numbering (scratch 0
    /// first). Callee-saved ones are saved by the routine when it uses them.
    pub scratch: &'static [u8],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Args {
    /// In these registers: (to, from, n).
    Regs([u8; 3]),
    /// cdecl: on the stack after the return address, `to` first.
    Stack,
}

impl Abi {
    pub fn may_clobber(&self, reg: u8) -> bool {
        self.clobbers.contains(&reg)
    }

    /// The body's pointer and length registers that the convention makes
    /// callee-saved: saved on entry whatever the routine does (i386's
    /// `edi`, `esi`).
    pub fn always_saved(&self) -> Vec<u8> {
        [self.dst, self.src, self.len]
            .into_iter()
            .filter(|&r| !self.may_clobber(r))
            .collect()
    }

    /// Of the first `used` scratch registers, the callee-saved ones: saved
    /// by a routine that uses them.
    pub fn saved_scratch(&self, used: usize) -> Vec<u8> {
        self.scratch[..used.min(self.scratch.len())]
            .iter()
            .copied()
            .filter(|&r| !self.may_clobber(r))
            .collect()
    }
}

/// The convention of `arch` in `flavor` (`convention`: the x86_64 linux
/// flavour's choice).
pub fn abi(arch: Arch, flavor: Flavor, convention: Convention) -> &'static Abi {
    match arch {
        Arch::X86_64 => x86_64::abi(flavor, convention),
        Arch::I386 => i386::abi(flavor),
        Arch::Armv6 => &armv6::AAPCS,
        Arch::Aarch64 => &aarch64::AAPCS64,
        Arch::Riscv64 => &riscv64::LP64,
    }
}

pub struct Capabilities {
    /// Register widths (bytes) a copy may use.
    pub widths: &'static [u32],
    /// Has `rep movs`/`rep stos`.
    pub rep_strings: bool,
    pub prefetch: &'static [PrefetchKind],
    pub groupings: &'static [Grouping],
    pub tails: &'static [Tail],
    /// Largest `ldm`/`stm` register list, when `Multiple` grouping exists.
    pub max_multiple: u32,
    /// Scratch registers with a 1-byte form (i386's ebp has none).
    pub byte_registers: u32,
    /// Bytes in one general-purpose register. A wider width is a register
    /// pair (AArch64's 16: `ldp`/`stp` on the kernel side, two single
    /// accesses on the user side) and takes two scratch registers.
    pub register_bytes: u32,
    /// Has the `shift_combine` method: aligned word loads of a misaligned
    /// source, shifted and or-ed into aligned stores (RISC-V, whose
    /// misaligned accesses may trap).
    pub shift_combine: bool,
}

impl Capabilities {
    /// Scratch registers that `n` registers of `width` bytes occupy.
    pub fn registers_needed(&self, width: u32, n: u32) -> u32 {
        n * width.div_ceil(self.register_bytes)
    }
}

pub fn capabilities(arch: Arch) -> &'static Capabilities {
    const X86_PREFETCH: &[PrefetchKind] =
        &[PrefetchKind::Nta, PrefetchKind::T0, PrefetchKind::Touch];
    const X86_GROUPING: &[Grouping] = &[Grouping::LoadsFirst, Grouping::Interleaved];
    const X86_TAILS: &[Tail] = &[
        Tail::Bytes,
        Tail::Words,
        Tail::Overlap,
        Tail::OverlapBlock,
        Tail::RepMovsb,
        Tail::RepMovs,
    ];
    match arch {
        Arch::X86_64 => &Capabilities {
            widths: &[1, 2, 4, 8],
            rep_strings: true,
            prefetch: X86_PREFETCH,
            groupings: X86_GROUPING,
            tails: X86_TAILS,
            max_multiple: 0,
            byte_registers: 6,
            register_bytes: 8,
            shift_combine: false,
        },
        Arch::I386 => &Capabilities {
            widths: &[1, 2, 4],
            rep_strings: true,
            prefetch: X86_PREFETCH,
            groupings: X86_GROUPING,
            tails: X86_TAILS,
            max_multiple: 0,
            byte_registers: 3,
            register_bytes: 4,
            shift_combine: false,
        },
        Arch::Armv6 => &Capabilities {
            widths: &[1, 4],
            rep_strings: false,
            prefetch: &[PrefetchKind::Pld, PrefetchKind::Touch],
            groupings: &[
                Grouping::LoadsFirst,
                Grouping::Interleaved,
                Grouping::Multiple,
            ],
            // Overlap: its end-relative word is an unaligned ldr/str, which
            // ARMv6 performs in hardware (SCTLR.U=1, set by Linux on v6+).
            tails: &[Tail::Bytes, Tail::Words, Tail::Overlap],
            max_multiple: 8,
            byte_registers: 8,
            register_bytes: 4,
            shift_combine: false,
        },
        Arch::Aarch64 => &Capabilities {
            // 16: a register pair, `ldp`/`stp` on the kernel side only
            // (`ldtr`/`sttr` have no pair form).
            widths: &[1, 2, 4, 8, 16],
            rep_strings: false,
            prefetch: &[PrefetchKind::Pldl1keep, PrefetchKind::Pldl1strm],
            groupings: &[Grouping::LoadsFirst, Grouping::Interleaved],
            // Overlap: A64 loads and stores take any alignment (SCTLR.A=0
            // at EL0 and in the kernel, for normal memory).
            tails: &[Tail::Bytes, Tail::Words, Tail::Overlap],
            max_multiple: 0,
            byte_registers: 12,
            register_bytes: 8,
            shift_combine: false,
        },
        Arch::Riscv64 => &Capabilities {
            widths: &[1, 2, 4, 8],
            rep_strings: false,
            // Zicbop's prefetch.r is not RV64GC: only a touch load.
            prefetch: &[PrefetchKind::Touch],
            groupings: &[Grouping::LoadsFirst, Grouping::Interleaved],
            // Overlap and a word loop on a misaligned source are misaligned
            // accesses: legal in RV64GC, trapped and emulated on cores
            // without them in hardware (slow, but exact).
            tails: &[Tail::Bytes, Tail::Words, Tail::Overlap],
            max_multiple: 0,
            byte_registers: 10,
            register_bytes: 8,
            shift_combine: true,
        },
    }
}

/// How many scratch registers a copy body may use for data on `arch` in
/// `flavor` (with `convention` for the x86_64 linux flavour), after the
/// pointer and length registers.
pub fn scratch_registers(arch: Arch, flavor: Flavor, convention: Convention) -> u32 {
    abi(arch, flavor, convention).scratch.len() as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_tables() -> Vec<&'static Abi> {
        vec![
            &x86_64::SYSV,
            &x86_64::LINUX_C,
            &x86_64::REP_MOVS,
            &i386::CDECL,
            &i386::REGPARM,
            &armv6::AAPCS,
            &aarch64::AAPCS64,
            &riscv64::LP64,
        ]
    }

    #[test]
    fn body_registers_are_distinct_and_never_the_stack_or_pc() {
        for t in all_tables() {
            let mut regs = vec![t.dst, t.src, t.len];
            regs.extend(t.scratch);
            let mut sorted = regs.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), regs.len(), "{}: {regs:?}", t.summary);
            assert!(!regs.contains(&t.sp), "{}", t.summary);
            assert!(t.pc.is_none_or(|pc| !regs.contains(&pc)), "{}", t.summary);
            assert!(t.may_clobber(t.ret), "{}: the return register", t.summary);
        }
    }

    /// The prologue moves `to, from, n` into the body's registers in that
    /// order: no move may overwrite an argument a later move reads.
    #[test]
    fn argument_moves_never_overwrite_a_later_source() {
        for t in all_tables() {
            let Args::Regs(args) = t.args else { continue };
            let moves = [(t.dst, args[0]), (t.src, args[1]), (t.len, args[2])];
            for (i, &(to, from)) in moves.iter().enumerate() {
                if to != from {
                    assert!(
                        moves[i + 1..].iter().all(|&(_, later)| later != to),
                        "{}: move {i} overwrites a later source",
                        t.summary
                    );
                }
            }
        }
    }

    #[test]
    fn saved_registers_follow_from_the_clobber_set() {
        assert_eq!(i386::CDECL.always_saved(), vec![7, 6]);
        assert_eq!(i386::CDECL.saved_scratch(4), vec![3, 5]);
        assert_eq!(i386::CDECL.saved_scratch(2), Vec::<u8>::new());
        assert!(x86_64::SYSV.always_saved().is_empty());
        assert!(x86_64::SYSV.saved_scratch(6).is_empty());
        assert_eq!(armv6::AAPCS.saved_scratch(3), vec![4, 5]);
    }
}
