//! What each architecture offers a strategy: register widths, scratch
//! registers per calling convention, and which instructions exist. The
//! validator checks strategies against this table; the backends implement it.

use crate::front::strategy::{Arch, Convention, Flavor, Grouping, PrefetchKind, Tail};

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
        },
    }
}

/// How many scratch registers a copy body may use for data on `arch` in
/// `flavor` (with `convention` for the x86_64 linux flavour), after the
/// pointer and length registers. Pushing callee-saved registers counts as
/// allowed only where the backend saves them.
pub fn scratch_registers(arch: Arch, flavor: Flavor, convention: Convention) -> u32 {
    match (arch, flavor, convention) {
        // rax, rcx, r8, r9, r10, r11
        (Arch::X86_64, Flavor::Standalone, _) | (Arch::X86_64, Flavor::Linux, Convention::C) => 6,
        // rep_movs_alternative's convention: only rax.
        (Arch::X86_64, Flavor::Linux, Convention::RepMovs) => 1,
        // eax, edx, ebx, ebp (ebx/ebp saved by the routine)
        (Arch::I386, _, _) => 4,
        // r3-r10 (r4-r10 saved by the routine)
        (Arch::Armv6, _, _) => 8,
        // x3-x14: caller-saved in AAPCS64 and in the kernel alike; x16/x17
        // are the backend's address temporaries, x18 is the platform (and
        // shadow-call-stack) register, x19-x28 are callee-saved.
        (Arch::Aarch64, _, _) => 12,
    }
}
