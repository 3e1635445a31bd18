//! The calling convention, as the analysis needs it.

use super::a64;
use super::isa::isa_for;
use crate::front::strategy::{Arch, Convention, Flavor};

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
    /// x86_64: the length is a 32-bit `unsigned` (6.1's `copy_user_generic(void
    /// *to, const void *from, unsigned len)`): the caller defines only the
    /// low half of its register.
    pub(super) len32: bool,
    pub(super) describe: String,
}

impl AbiSpec {
    /// The checker's view of the convention table (`arch/<arch>.rs`).
    pub(super) fn new(arch: Arch, flavor: Flavor, convention: Convention, regparm: bool) -> Self {
        let table = match arch {
            Arch::I386 if regparm => &crate::arch::i386::REGPARM,
            Arch::I386 => &crate::arch::i386::CDECL,
            _ => crate::arch::abi(arch, flavor, convention),
        };
        // Hardware numbers, or A64's slots (the checker tracks 16 registers).
        let reg = |r: u8| match arch {
            Arch::Aarch64 => a64::slot(r),
            Arch::Riscv64 => super::rv64::abi_slot(r),
            _ => r as usize,
        };
        let mut clobber: Vec<usize> = table.clobbers.iter().map(|&r| reg(r)).collect();
        if arch == Arch::Riscv64 {
            // t0-t4 share a slot: name it once.
            clobber.sort_unstable();
        }
        clobber.dedup();
        let isa = isa_for(arch);
        let names: Vec<&str> = clobber.iter().map(|&r| isa.reg_name(r)).collect();
        let mut describe = format!("{}, may clobber {}", table.summary, names.join(" "));
        if table.pc.is_some() {
            describe.push_str(", returns through the entry lr");
        }
        AbiSpec {
            arch,
            ptr: table.ptr_width as i64,
            arg_regs: match table.args {
                crate::arch::Args::Regs(r) => Some(r.map(reg)),
                crate::arch::Args::Stack => None,
            },
            ret: reg(table.ret),
            clobber,
            sp: reg(table.sp),
            pc: table.pc.map(usize::from),
            len32: false,
            describe,
        }
    }

    /// The same convention with a 32-bit length (x86_64 only).
    pub(super) fn with_len32(mut self) -> Self {
        self.len32 = true;
        self.describe = self
            .describe
            .replacen("=n ", "=n (32 bits, upper half undefined) ", 1);
        self
    }

    pub(super) fn regs(&self) -> usize {
        if self.arch == Arch::I386 {
            8
        } else {
            NREGS
        }
    }
}
