//! x86_64 calling conventions. Registers are hardware numbers
//! (`rax`=0 `rcx`=1 `rdx`=2 `rbx`=3 `rsp`=4 `rbp`=5 `rsi`=6 `rdi`=7 `r8`..`r15`=8..15).
//!
//! | flavour / convention  | to  | from | n   | returns | may clobber                    | copy body's scratch   |
//! |-----------------------|-----|------|-----|---------|--------------------------------|-----------------------|
//! | standalone            | rdi | rsi  | rdx | rax     | rax rcx rdx rsi rdi r8-r11     | rax rcx r8 r9 r10 r11 |
//! | linux `c`             | rdi | rsi  | rdx | rax     | rax rcx rdx rsi rdi r8-r11     | rax rcx r8 r9 r10 r11 |
//! | linux `rep_movs`      | rdi | rsi  | rcx | rcx     | rax rcx rsi rdi                | rax                   |
//!
//! The body keeps `to`, `from`, `n` where they arrive.

use super::{Abi, Args};
use crate::front::strategy::{Arch, Convention, Flavor};

const RAX: u8 = 0;
const RCX: u8 = 1;
const RDX: u8 = 2;
const RSP: u8 = 4;
const RSI: u8 = 6;
const RDI: u8 = 7;

const SYSV_CLOBBERS: &[u8] = &[RAX, RCX, RDX, RSI, RDI, 8, 9, 10, 11];
const SYSV_SCRATCH: &[u8] = &[RAX, RCX, 8, 9, 10, 11];

const fn sysv(summary: &'static str) -> Abi {
    Abi {
        arch: Arch::X86_64,
        summary,
        ptr_width: 8,
        args: Args::Regs([RDI, RSI, RDX]),
        ret: RAX,
        clobbers: SYSV_CLOBBERS,
        sp: RSP,
        pc: None,
        dst: RDI,
        src: RSI,
        len: RDX,
        scratch: SYSV_SCRATCH,
    }
}

/// The SysV C ABI of the standalone flavour.
pub const SYSV: Abi = sysv("SysV: rdi=to rsi=from rdx=n -> rax");

/// The same registers, named as the linux flavour's `convention = "c"`.
pub const LINUX_C: Abi = sysv("C convention: rdi=to rsi=from rdx=n -> rax");

/// `rep_movs_alternative`'s convention: callable from the same inline-asm
/// `ALTERNATIVE` as `rep movsb`.
pub const REP_MOVS: Abi = Abi {
    arch: Arch::X86_64,
    summary: "rep_movs convention: rdi=to rsi=from rcx=n -> rcx, clobbers rax",
    ptr_width: 8,
    args: Args::Regs([RDI, RSI, RCX]),
    ret: RCX,
    clobbers: &[RAX, RCX, RSI, RDI],
    sp: RSP,
    pc: None,
    dst: RDI,
    src: RSI,
    len: RCX,
    scratch: &[RAX],
};

pub fn abi(flavor: Flavor, convention: Convention) -> &'static Abi {
    match (flavor, convention) {
        (Flavor::Standalone, _) => &SYSV,
        (Flavor::Linux, Convention::C) => &LINUX_C,
        (Flavor::Linux, Convention::RepMovs) => &REP_MOVS,
    }
}
