//! i386 calling conventions. Registers are hardware numbers
//! (`eax`=0 `ecx`=1 `edx`=2 `ebx`=3 `esp`=4 `ebp`=5 `esi`=6 `edi`=7).
//!
//! | flavour    | arguments                    | returns | may clobber   | copy body's scratch (saved if used) |
//! |------------|------------------------------|---------|---------------|-------------------------------------|
//! | standalone | cdecl: stack                 | eax     | eax ecx edx   | eax edx (ebx ebp)                   |
//! | linux      | `-mregparm=3`: eax, edx, ecx | eax     | eax ecx edx   | eax edx (ebx ebp)                   |
//!
//! The body always runs with `edi` = to, `esi` = from, `ecx` = n (the
//! string registers), so the arguments are moved there and `esi`/`edi`,
//! callee-saved, are saved on entry.

use super::{Abi, Args};
use crate::front::strategy::{Arch, Flavor};

const EAX: u8 = 0;
const ECX: u8 = 1;
const EDX: u8 = 2;
const EBX: u8 = 3;
const ESP: u8 = 4;
const EBP: u8 = 5;
const ESI: u8 = 6;
const EDI: u8 = 7;

const fn i386(summary: &'static str, args: Args) -> Abi {
    Abi {
        arch: Arch::I386,
        summary,
        ptr_width: 4,
        args,
        ret: EAX,
        clobbers: &[EAX, ECX, EDX],
        sp: ESP,
        pc: None,
        dst: EDI,
        src: ESI,
        len: ECX,
        scratch: &[EAX, EDX, EBX, EBP],
    }
}

/// cdecl: the standalone flavour.
pub const CDECL: Abi = i386("cdecl: to, from, n on the stack -> eax", Args::Stack);

/// `-mregparm=3`, as i386 kernels are built: the linux flavour.
pub const REGPARM: Abi = i386(
    "-mregparm=3: eax=to edx=from ecx=n -> eax",
    Args::Regs([EAX, EDX, ECX]),
);

pub fn abi(flavor: Flavor) -> &'static Abi {
    match flavor {
        Flavor::Standalone => &CDECL,
        Flavor::Linux => &REGPARM,
    }
}
