//! RISC-V (RV64GC) calling convention: the LP64 ABI in both flavours (the
//! kernel's C callers of `__asm_copy_{from,to}_user` use it too).
//!
//! | to | from | n  | returns | may clobber     | copy body's scratch          | temporaries |
//! |----|------|----|---------|-----------------|------------------------------|-------------|
//! | a0 | a1   | a2 | a0      | t0-t6, a0-a7    | a3-a7, t0-t4                 | t5, t6      |
//!
//! ra, sp, gp, tp and s0-s11 are never written, so a routine saves
//! nothing and returns with `ret` (through ra). The backend keeps t5 for
//! addresses and immediates and t6 for `SR_SUM` in the linux flavour
//! (`li t6, SR_SUM; csrs CSR_STATUS, t6`), as arch/riscv/lib/uaccess.S
//! does; t6 is loaded again before every `csrc`, so the body may use it as
//! a second temporary.

use super::{Abi, Args};
use crate::front::strategy::Arch;

pub const ZERO: u8 = 0;
pub const RA: u8 = 1;
pub const SP: u8 = 2;
/// t5: the backend's address and immediate temporary.
pub const TMP: u8 = 30;
/// t6: `SR_SUM` in the linux flavour, a second temporary otherwise.
pub const TMP2: u8 = 31;

/// ABI names of the 32 integer registers, by number.
pub const NAMES: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

pub const LP64: Abi = Abi {
    arch: Arch::Riscv64,
    summary: "LP64: a0=to a1=from a2=n -> a0",
    ptr_width: 8,
    args: Args::Regs([10, 11, 12]),
    ret: 10,
    clobbers: &[5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17, 28, 29, TMP, TMP2],
    sp: SP,
    pc: None,
    dst: 10,
    src: 11,
    len: 12,
    // a3-a7 first (compressed encodings reach a3-a5), then t0-t4.
    scratch: &[13, 14, 15, 16, 17, 5, 6, 7, 28, 29],
};
