//! x86_64: registers and argument passing per flavour and convention.
//! Instruction selection and printing are shared with i386 (`x86.rs`).

use super::x86::{Abi, Args, Reg};
use crate::front::strategy::{Convention, Flavor};

/// The ABI of an x86_64 entry point.
///
/// | flavour / convention  | to  | from | n   | returns | scratch                 |
/// |-----------------------|-----|------|-----|---------|-------------------------|
/// | standalone, linux `c` | rdi | rsi  | rdx | rax     | rax rcx r8 r9 r10 r11   |
/// | linux `rep_movs`      | rdi | rsi  | rcx | rcx     | rax                     |
pub fn abi(flavor: Flavor, convention: Convention) -> Abi {
    let rep_movs = flavor == Flavor::Linux && convention == Convention::RepMovs;
    Abi {
        ptr_width: 8,
        dst: Reg::Di,
        src: Reg::Si,
        len: if rep_movs { Reg::Cx } else { Reg::Dx },
        ret: if rep_movs { Reg::Cx } else { Reg::Ax },
        scratch: if rep_movs {
            vec![Reg::Ax]
        } else {
            vec![Reg::Ax, Reg::Cx, Reg::R8, Reg::R9, Reg::R10, Reg::R11]
        },
        saved_if_used: vec![],
        always_saved: vec![],
        args: Args::InPlace,
    }
}
