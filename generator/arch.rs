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
        },
        Arch::I386 => &Capabilities {
            widths: &[1, 2, 4],
            rep_strings: true,
            prefetch: X86_PREFETCH,
            groupings: X86_GROUPING,
            tails: X86_TAILS,
            max_multiple: 0,
            byte_registers: 3,
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
    }
}
