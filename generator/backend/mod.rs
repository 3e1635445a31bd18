//! Backends: per-architecture instruction selection and GNU as printing.
//! Each takes the lowered [`Routine`]s and returns printed [`Function`]s;
//! the file around them comes from the templates (`render.rs`).

pub mod armv6;
pub mod i386;
pub mod x86;
pub mod x86_64;

use crate::ir::{Arch, Flavor, Strategy};
use crate::lower::{lower, Target};
use crate::ops::Routine;

/// One exception-table entry: the faulting instruction's label and the
/// fixup's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExEntry {
    pub insn: String,
    pub fixup: String,
}

/// One printed entry point.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Function {
    pub symbol: String,
    /// Instructions, labels and comments, one per line.
    pub body: Vec<String>,
    /// Out-of-line fixup code (in the function on x86, `.text.fixup` on ARM).
    pub fixups: Vec<String>,
    pub extable: Vec<ExEntry>,
}

/// The x86 ABI table for `routine` on `arch`/`flavor`.
pub fn x86_abi(s: &Strategy, arch: Arch, flavor: Flavor) -> x86::Abi {
    match arch {
        Arch::X86_64 => x86_64::abi(flavor, s.linux.convention),
        Arch::I386 => i386::abi(flavor),
        Arch::Armv6 => panic!("armv6 is not x86"),
    }
}

/// Lower and print every entry point of `s` for `flavor`.
pub fn functions(s: &Strategy, flavor: Flavor) -> Vec<(Routine, Function)> {
    let routines = lower(
        s,
        Target {
            arch: s.arch,
            flavor,
        },
    );
    routines
        .into_iter()
        .map(|r| {
            let mut f = match s.arch {
                Arch::X86_64 | Arch::I386 => {
                    let abi = x86_abi(s, s.arch, flavor);
                    let lines = x86::select(&r, &abi);
                    x86::print(&lines, abi.ptr_width, flavor)
                }
                Arch::Armv6 => armv6::print(&armv6::select(&r), flavor),
            };
            f.symbol = r.symbol.clone();
            (r, f)
        })
        .collect()
}
