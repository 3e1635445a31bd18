//! i386: registers and argument passing per flavour. Instruction selection
//! and printing are shared with x86_64 (`x86.rs`).

use super::x86::{Abi, Args, Reg};
use crate::front::strategy::Flavor;

/// The ABI of an i386 entry point. The body always runs with
/// `edi` = to, `esi` = from, `ecx` = n (the string registers), so the
/// arguments are moved there and `esi`/`edi` are saved.
///
/// | flavour    | arguments                        | returns | scratch (saved if used) |
/// |------------|----------------------------------|---------|-------------------------|
/// | standalone | cdecl: stack                     | eax     | eax edx (ebx ebp)       |
/// | linux      | `-mregparm=3`: eax, edx, ecx     | eax     | eax edx (ebx ebp)       |
pub fn abi(flavor: Flavor) -> Abi {
    Abi {
        ptr_width: 4,
        dst: Reg::Di,
        src: Reg::Si,
        len: Reg::Cx,
        ret: Reg::Ax,
        scratch: vec![Reg::Ax, Reg::Dx, Reg::Bx, Reg::Bp],
        saved_if_used: vec![Reg::Bx, Reg::Bp],
        always_saved: vec![Reg::Di, Reg::Si],
        args: match flavor {
            Flavor::Standalone => Args::Stack,
            Flavor::Linux => Args::Regs(Reg::Ax, Reg::Dx, Reg::Cx),
        },
    }
}
