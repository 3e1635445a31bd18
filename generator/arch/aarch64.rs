//! AArch64 (A64) calling convention: AAPCS64 in both flavours (the
//! kernel's C callers of `__arch_copy_{from,to}_user` use it too).
//!
//! | to | from | n  | returns | may clobber | copy body's scratch | temporaries |
//! |----|------|----|---------|-------------|---------------------|-------------|
//! | x0 | x1   | x2 | x0      | x0-x17      | x3-x14              | x16, x17    |
//!
//! x18 is the platform register (the kernel's shadow call stack) and
//! x19-x30 and sp are callee-saved: a routine never writes them, so it
//! saves nothing and returns with `ret` (through x30). The backend keeps
//! x16 (ip0) for addresses and x17 (ip1) for immediates, and x15 unused.

use super::{Abi, Args};
use crate::front::strategy::Arch;

pub const SP: u8 = 31;
pub const LR: u8 = 30;
/// ip0: the backend's address temporary.
pub const ADDR: u8 = 16;
/// ip1: the backend's immediate temporary.
pub const IMM: u8 = 17;

pub const AAPCS64: Abi = Abi {
    arch: Arch::Aarch64,
    summary: "AAPCS64: x0=to x1=from x2=n -> x0",
    ptr_width: 8,
    args: Args::Regs([0, 1, 2]),
    ret: 0,
    clobbers: &[
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ADDR, IMM,
    ],
    sp: SP,
    pc: None,
    dst: 0,
    src: 1,
    len: 2,
    scratch: &[3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14],
};
