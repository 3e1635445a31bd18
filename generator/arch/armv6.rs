//! ARMv6 (A32) calling convention: AAPCS in both flavours.
//!
//! | to | from | n  | returns | may clobber    | copy body's scratch (saved if used)  |
//! |----|------|----|---------|----------------|--------------------------------------|
//! | r0 | r1   | r2 | r0      | r0-r3 ip lr    | r3 (r4-r10), ascending: an `ldm` list |
//!
//! The routine returns through the `lr` it was entered with; r4-r11 are
//! callee-saved.

use super::{Abi, Args};
use crate::front::strategy::Arch;

pub const SP: u8 = 13;
pub const LR: u8 = 14;
pub const PC: u8 = 15;
/// `ip`: the backend's address temporary, free to clobber.
pub const IP: u8 = 12;

pub const AAPCS: Abi = Abi {
    arch: Arch::Armv6,
    summary: "AAPCS: r0=to r1=from r2=n -> r0",
    ptr_width: 4,
    args: Args::Regs([0, 1, 2]),
    ret: 0,
    clobbers: &[0, 1, 2, 3, IP, LR],
    sp: SP,
    pc: Some(PC),
    dst: 0,
    src: 1,
    len: 2,
    scratch: &[3, 4, 5, 6, 7, 8, 9, 10],
};
