//! The calling convention, as the analysis needs it.

use super::{arm, x86};
use crate::ir::{Arch, Convention, Flavor};

/// Registers the analysis tracks, numbered as each ISA module numbers them.
pub(super) const NREGS: usize = 16;

/// Where the arguments arrive and which registers may be clobbered.
pub(super) struct AbiSpec {
    pub(super) arch: Arch,
    pub(super) ptr: i64,
    /// (to, from, n) registers, or None for cdecl stack arguments.
    pub(super) arg_regs: Option<[usize; 3]>,
    pub(super) ret: usize,
    pub(super) clobber: Vec<usize>,
    pub(super) sp: usize,
    /// ARM: the program counter, whose value at a return must be the entry lr.
    pub(super) pc: Option<usize>,
    pub(super) describe: String,
}

impl AbiSpec {
    pub(super) fn new(arch: Arch, flavor: Flavor, convention: Convention, regparm: bool) -> Self {
        let (ax, cx, dx, si, di) = (0, 1, 2, 6, 7);
        let x86 = |ptr, arg_regs, ret, clobber, describe: &str| AbiSpec {
            arch,
            ptr,
            arg_regs,
            ret,
            clobber,
            sp: x86::RSP,
            pc: None,
            describe: describe.into(),
        };
        match arch {
            Arch::Armv6 => AbiSpec {
                arch,
                ptr: 4,
                arg_regs: Some([0, 1, 2]),
                ret: 0,
                clobber: vec![0, 1, 2, 3, 12, arm::LR],
                sp: arm::SP,
                pc: Some(arm::PC),
                describe: "AAPCS: r0=to r1=from r2=n -> r0, may clobber r0-r3 ip lr, returns through the entry lr".into(),
            },
            Arch::X86_64 if flavor == Flavor::Linux && convention == Convention::RepMovs => x86(
                8,
                Some([di, si, cx]),
                cx,
                vec![ax, cx, si, di],
                "rep_movs convention: rdi=to rsi=from rcx=n -> rcx, may clobber rax rcx rsi rdi",
            ),
            Arch::X86_64 => x86(
                8,
                Some([di, si, dx]),
                ax,
                vec![ax, cx, dx, si, di, 8, 9, 10, 11],
                "C convention: rdi=to rsi=from rdx=n -> rax, may clobber rax rcx rdx rsi rdi r8-r11",
            ),
            _ => x86(
                4,
                regparm.then_some([ax, dx, cx]),
                ax,
                vec![ax, cx, dx],
                if regparm {
                    "regparm(3): eax=to edx=from ecx=n -> eax, may clobber eax ecx edx"
                } else {
                    "cdecl: to, from, n at 4/8/12(%esp) -> eax, may clobber eax ecx edx"
                },
            ),
        }
    }

    pub(super) fn regs(&self) -> usize {
        if self.arch == Arch::I386 {
            8
        } else {
            NREGS
        }
    }
}
