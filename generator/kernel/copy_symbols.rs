//! The kernel's copy routines as a kprobe sees them: for each arch, the
//! symbols `copy_{from,to}_user` reach, the registers that carry
//! `(to, from, n)` at their first instruction (in tracefs fetch-argument
//! syntax, `%di`), and where the return address is. `copygen record` (live,
//! `--script` and `--from-trace`) takes its probe definitions from here.
//!
//! | arch    | symbol                                         | to, from, n     | direction       | caller       |
//! |---------|------------------------------------------------|-----------------|-----------------|--------------|
//! | x86_64  | `copygen_copy_user` (copygen-patched, C)        | rdi rsi rdx     | by user pointer | `+0(%sp)`    |
//! | x86_64  | `copygen_copy_user` (copygen-patched, rep_movs) | rdi rsi rcx     | by user pointer | `+0(%sp)`    |
//! | x86_64  | `rep_movs_alternative` (6.4+, CPUs without FSRM)| rdi rsi rcx     | by user pointer | `+0(%sp)`    |
//! | x86_64  | `_copy_from_user` / `_copy_to_user`             | rdi rsi rdx     | the symbol      | `+0(%sp)`    |
//! | i386    | `copygen_copy_user` (copygen-patched)           | eax edx ecx     | by user pointer | `+0(%sp)`    |
//! | i386    | `__copy_user_ll` (6.1, 6.12)                    | eax edx ecx     | by user pointer | `+0(%sp)`    |
//! | i386    | `_copy_from_user` / `_copy_to_user`             | eax edx ecx     | the symbol      | `+0(%sp)`    |
//! | armv6   | `arm_copy_from_user` / `arm_copy_to_user`       | r0 r1 r2        | the symbol      | `%lr`        |
//! | aarch64 | `__arch_copy_from_user` / `__arch_copy_to_user` | x0 x1 x2        | the symbol      | `%lr`        |
//! | riscv64 | `__asm_copy_to_user` (= `__asm_copy_from_user`) | a0 a1 a2        | by user pointer | `%ra`        |
//! | riscv64 | `copygen_copy_user` / `fallback_scalar_usercopy` (copygen-patched 6.1 / 6.12) | a0 a1 a2 | by user pointer | `%ra` |
//!
//! Routines not in the table (a per-CPU kernel's variant routines, which its
//! call sites call directly) are named with their calling convention,
//! `NAME[,NAME...]:CONVENTION` ([`ArchProbes::named`]): both directions, by
//! user pointer, in the convention's registers (`c` on every arch, the rows'
//! C registers; `rep_movs` on x86_64).
//!
//! The register columns are the ABI tables' ([`crate::arch::x86_64::LINUX_C`],
//! [`crate::arch::x86_64::REP_MOVS`], [`crate::arch::i386::REGPARM`],
//! [`crate::arch::armv6::AAPCS`], [`crate::arch::aarch64::AAPCS64`],
//! [`crate::arch::riscv64::LP64`]); the tests check
//! that the names here are those registers.
//!
//! A probe keeps only what a workload trace holds: the low 12 bits of each
//! pointer (its page offset, a bitfield fetch `b12@0/64`), never the
//! pointer, and for a routine that serves both directions the top bits
//! that tell a kernel address from a user one.

use std::borrow::Cow;

use super::symbols::{GLUE_SYMBOL, REP_MOVS_ALTERNATIVE};
use crate::front::strategy::{Arch, Direction};

/// How a probe learns the direction of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolDirection {
    /// The symbol copies one way only.
    Fixed(Direction),
    /// One routine for both: the side whose pointer is a user address.
    ByUserPointer,
}

/// One probed routine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopySymbol {
    pub symbol: Cow<'static, str>,
    pub direction: SymbolDirection,
    /// tracefs register names (`%di`) of `to`, `from` and `n`.
    pub to: &'static str,
    pub from: &'static str,
    pub n: &'static str,
    /// Which kernels call it, for `--symbol`'s list and messages.
    pub note: &'static str,
}

/// A selectable set of symbols (one routine, or the from/to pair), from an
/// arch's table or named at run time ([`ArchProbes::named`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyProbe {
    /// The name `--symbol` takes.
    pub name: Cow<'static, str>,
    pub symbols: Cow<'static, [CopySymbol]>,
    /// The sizes are the callers' whole requests, not the copy routine's
    /// (a wrapper above an inlined copy).
    pub whole_request: bool,
}

/// A calling convention a routine named at run time may have: its name
/// after the colon of `--symbol NAME:CONVENTION`, and its registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Convention {
    pub name: &'static str,
    /// tracefs register names of `to`, `from` and `n`.
    pub regs: [&'static str; 3],
    pub note: &'static str,
}

/// What an arch's probes share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchProbes {
    pub arch: Arch,
    /// Pointer width in bits (the bitfield container).
    pub ptr_bits: u32,
    /// Where the return address is at a function's first instruction, as a
    /// fetch argument (type included).
    pub caller: &'static str,
    /// A pointer is a kernel address when its top `kernel_bits` bits are
    /// all set (x86_64 and arm64: the top bit; i386: 0xC0000000 and above,
    /// the default 3G/1G split).
    pub kernel_bits: u32,
    /// In the order `copygen record` tries them when `--symbol` is not given.
    pub probes: &'static [CopyProbe],
    /// The conventions `--symbol NAME:CONVENTION` may name.
    pub conventions: &'static [Convention],
}

const fn sym(
    symbol: &'static str,
    direction: SymbolDirection,
    regs: [&'static str; 3],
    note: &'static str,
) -> CopySymbol {
    CopySymbol {
        symbol: Cow::Borrowed(symbol),
        direction,
        to: regs[0],
        from: regs[1],
        n: regs[2],
        note,
    }
}

use Direction::{FromUser, ToUser};
use SymbolDirection::{ByUserPointer as Both, Fixed};

const X86_64_C: [&str; 3] = ["%di", "%si", "%dx"];
const X86_64_REP: [&str; 3] = ["%di", "%si", "%cx"];
const I386_REGPARM: [&str; 3] = ["%ax", "%dx", "%cx"];
const ARM: [&str; 3] = ["%r0", "%r1", "%r2"];
const A64: [&str; 3] = ["%x0", "%x1", "%x2"];
const RV64: [&str; 3] = ["%a0", "%a1", "%a2"];

/// The kernel's C calling convention, the name `c` (as a strategy's
/// `[linux] convention`).
const fn c_convention(regs: [&'static str; 3], note: &'static str) -> Convention {
    Convention {
        name: "c",
        regs,
        note,
    }
}

pub const X86_64: ArchProbes = ArchProbes {
    arch: Arch::X86_64,
    ptr_bits: 64,
    caller: "+0(%sp):x64",
    kernel_bits: 1,
    conventions: &[
        c_convention(X86_64_C, "to, from, n in rdi, rsi, rdx"),
        Convention {
            name: "rep_movs",
            regs: X86_64_REP,
            note: "to, from, n in rdi, rsi, rcx, as rep_movs_alternative",
        },
    ],
    probes: &[
        CopyProbe {
            name: Cow::Borrowed(GLUE_SYMBOL),
            symbols: Cow::Borrowed(&[sym(
                GLUE_SYMBOL,
                Both,
                X86_64_C,
                "a copygen-patched kernel, convention = \"c\"",
            )]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed("copygen_copy_user:rep_movs"),
            symbols: Cow::Borrowed(&[sym(
                GLUE_SYMBOL,
                Both,
                X86_64_REP,
                "a copygen-patched kernel, convention = \"rep_movs\"",
            )]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed(REP_MOVS_ALTERNATIVE),
            symbols: Cow::Borrowed(&[sym(
                REP_MOVS_ALTERNATIVE,
                Both,
                X86_64_REP,
                "6.4 and later, on CPUs without FSRM (FSRM CPUs run rep movsb inline)",
            )]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed("_copy_user"),
            symbols: Cow::Borrowed(&[
                sym("_copy_from_user", Fixed(FromUser), X86_64_C, "every kernel"),
                sym("_copy_to_user", Fixed(ToUser), X86_64_C, "every kernel"),
            ]),
            whole_request: true,
        },
    ],
};

pub const I386: ArchProbes = ArchProbes {
    arch: Arch::I386,
    ptr_bits: 32,
    caller: "+0(%sp):x32",
    kernel_bits: 2,
    conventions: &[c_convention(
        I386_REGPARM,
        "-mregparm=3: to, from, n in eax, edx, ecx",
    )],
    probes: &[
        CopyProbe {
            name: Cow::Borrowed(GLUE_SYMBOL),
            symbols: Cow::Borrowed(&[sym(
                GLUE_SYMBOL,
                Both,
                I386_REGPARM,
                "a copygen-patched kernel (-mregparm=3)",
            )]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed("__copy_user_ll"),
            symbols: Cow::Borrowed(&[sym(
                "__copy_user_ll",
                Both,
                I386_REGPARM,
                "6.1 and 6.12 (-mregparm=3)",
            )]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed("_copy_user"),
            symbols: Cow::Borrowed(&[
                sym(
                    "_copy_from_user",
                    Fixed(FromUser),
                    I386_REGPARM,
                    "every kernel",
                ),
                sym("_copy_to_user", Fixed(ToUser), I386_REGPARM, "every kernel"),
            ]),
            whole_request: true,
        },
    ],
};

pub const ARMV6: ArchProbes = ArchProbes {
    arch: Arch::Armv6,
    ptr_bits: 32,
    caller: "%lr:x32",
    kernel_bits: 2,
    conventions: &[c_convention(ARM, "AAPCS: to, from, n in r0, r1, r2")],
    probes: &[CopyProbe {
        name: Cow::Borrowed("arm_copy_user"),
        symbols: Cow::Borrowed(&[
            sym("arm_copy_from_user", Fixed(FromUser), ARM, "every kernel"),
            sym("arm_copy_to_user", Fixed(ToUser), ARM, "every kernel"),
        ]),
        whole_request: false,
    }],
};

pub const AARCH64: ArchProbes = ArchProbes {
    arch: Arch::Aarch64,
    ptr_bits: 64,
    caller: "%lr:x64",
    kernel_bits: 1,
    conventions: &[c_convention(A64, "AAPCS64: to, from, n in x0, x1, x2")],
    probes: &[CopyProbe {
        name: Cow::Borrowed("__arch_copy_user"),
        symbols: Cow::Borrowed(&[
            sym(
                "__arch_copy_from_user",
                Fixed(FromUser),
                A64,
                "every kernel",
            ),
            sym("__arch_copy_to_user", Fixed(ToUser), A64, "every kernel"),
        ]),
        whole_request: false,
    }],
};

/// RISC-V: `__asm_copy_from_user` is the same address as
/// `__asm_copy_to_user` in 6.1 (two labels) and 6.12 (`SYM_FUNC_ALIAS`), so
/// one probe serves both and the direction comes from the pointers. It is
/// tried first: a copygen-patched kernel keeps it as the entry, which
/// tail-calls the generated routine (6.12 without the vector path reaches
/// `fallback_scalar_usercopy` the same way). A 6.12 kernel accepts these
/// probes and counts their hits, but keeps no event of them: it runs a
/// kernel-mode kprobe as an NMI, and its ring buffer takes no event there
/// (riscv does not select `ARCH_HAVE_NMI_SAFE_CMPXCHG`).
pub const RISCV64: ArchProbes = ArchProbes {
    arch: Arch::Riscv64,
    ptr_bits: 64,
    caller: "%ra:x64",
    kernel_bits: 1,
    conventions: &[c_convention(RV64, "LP64: to, from, n in a0, a1, a2")],
    probes: &[
        CopyProbe {
            name: Cow::Borrowed("__asm_copy_user"),
            symbols: Cow::Borrowed(&[sym("__asm_copy_to_user", Both, RV64, "every kernel")]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed(GLUE_SYMBOL),
            symbols: Cow::Borrowed(&[sym(
                GLUE_SYMBOL,
                Both,
                RV64,
                "6.1 patched by copygen kernel-patch",
            )]),
            whole_request: false,
        },
        CopyProbe {
            name: Cow::Borrowed("fallback_scalar_usercopy"),
            symbols: Cow::Borrowed(&[sym(
                "fallback_scalar_usercopy",
                Both,
                RV64,
                "6.12 (generated there by copygen kernel-patch)",
            )]),
            whole_request: false,
        },
    ],
};

/// The table of an arch.
pub fn probes(arch: Arch) -> &'static ArchProbes {
    match arch {
        Arch::X86_64 => &X86_64,
        Arch::I386 => &I386,
        Arch::Armv6 => &ARMV6,
        Arch::Aarch64 => &AARCH64,
        Arch::Riscv64 => &RISCV64,
    }
}

impl ArchProbes {
    /// The probe `--symbol` names: its `name`, or a symbol of it.
    pub fn find(&self, name: &str) -> Option<&'static CopyProbe> {
        self.probes.iter().find(|p| p.name == name).or_else(|| {
            self.probes
                .iter()
                .find(|p| p.symbols.iter().any(|s| s.symbol == name))
        })
    }

    /// The probe `--symbol SPEC` names: a probe of the table (its name or a
    /// symbol of it), or routines named at run time,
    /// `NAME[,NAME...]:CONVENTION`: each copies both ways in one of the
    /// arch's [`conventions`](Self::conventions), the direction told by the
    /// pointers, as copygen's own routines do (a per-CPU strategy's variant
    /// routines, `guarded_movsb_612__erms_copy_user`). The error says what
    /// is wrong with a run-time form; `None` when `spec` is neither.
    pub fn named(&self, spec: &str) -> Option<Result<CopyProbe, String>> {
        if let Some(p) = self.find(spec) {
            return Some(Ok(p.clone()));
        }
        let (names, convention) = spec.split_once(':')?;
        let Some(conv) = self.conventions.iter().find(|c| c.name == convention) else {
            let known: Vec<&str> = self.conventions.iter().map(|c| c.name).collect();
            let what = if convention.is_empty() {
                "no calling convention after the colon".to_string()
            } else {
                format!(
                    "`{convention}` is not a calling convention of {} routines",
                    self.arch
                )
            };
            return Some(Err(format!("{what}: {}", known.join(", "))));
        };
        let mut symbols: Vec<CopySymbol> = Vec::new();
        for name in names.split(',') {
            if name.is_empty() {
                return Some(Err(
                    "a name is empty (names are separated by one comma)".into()
                ));
            }
            if !is_symbol(name) {
                return Some(Err(format!(
                    "`{name}` is not a symbol name (letters, digits, `_` and `.`, not first a digit)"
                )));
            }
            if symbols.iter().any(|s| s.symbol == name) {
                return Some(Err(format!("`{name}` is named twice")));
            }
            symbols.push(CopySymbol {
                symbol: Cow::Owned(name.to_string()),
                direction: SymbolDirection::ByUserPointer,
                to: conv.regs[0],
                from: conv.regs[1],
                n: conv.regs[2],
                note: conv.note,
            });
        }
        Some(Ok(CopyProbe {
            name: Cow::Owned(spec.to_string()),
            symbols: Cow::Owned(symbols),
            whole_request: false,
        }))
    }

    /// Whether a pointer value is a kernel address.
    pub fn is_kernel(&self, ptr: u64) -> bool {
        let top = ptr >> (self.ptr_bits - self.kernel_bits);
        top == (1 << self.kernel_bits) - 1
    }
}

/// A name a kernel symbol may have (`kprobe_events` takes it as the
/// probe's place).
fn is_symbol(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
}

/// The `kernel_bits` a trace of `symbol`'s two-way probe has when its arch
/// is not named: that of every arch probing `symbol` both ways, if they
/// agree (`__copy_user_ll`: i386's 2; `copygen_copy_user`: none, x86_64 and
/// riscv64 have 1, i386 2).
pub fn kernel_bits_of(symbol: &str) -> Option<u32> {
    let mut bits = [&X86_64, &I386, &ARMV6, &AARCH64, &RISCV64]
        .into_iter()
        .filter(|t| {
            t.probes.iter().any(|p| {
                p.symbols
                    .iter()
                    .any(|s| s.symbol == symbol && s.direction == SymbolDirection::ByUserPointer)
            })
        })
        .map(|t| t.kernel_bits);
    let first = bits.next()?;
    bits.all(|b| b == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{aarch64, armv6, i386, riscv64, x86_64, Abi, Args};

    /// tracefs's name of a hardware register number.
    fn name(arch: Arch, reg: u8) -> String {
        let x86 = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
        match arch {
            Arch::X86_64 | Arch::I386 => format!("%{}", x86[reg as usize]),
            Arch::Armv6 => format!("%r{reg}"),
            Arch::Aarch64 => format!("%x{reg}"),
            Arch::Riscv64 => format!("%{}", crate::arch::riscv64::NAMES[reg as usize]),
        }
    }

    fn regs(abi: &Abi) -> [String; 3] {
        let Args::Regs(r) = abi.args else {
            panic!("{} passes its arguments on the stack", abi.summary)
        };
        r.map(|r| name(abi.arch, r))
    }

    #[test]
    fn the_registers_are_the_abi_tables() {
        let cases: [(&ArchProbes, &str, &Abi); 15] = [
            (&X86_64, "_copy_from_user", &x86_64::LINUX_C),
            (&X86_64, REP_MOVS_ALTERNATIVE, &x86_64::REP_MOVS),
            (&X86_64, "copygen_copy_user:rep_movs", &x86_64::REP_MOVS),
            (&X86_64, GLUE_SYMBOL, &x86_64::LINUX_C),
            (&I386, "__copy_user_ll", &i386::REGPARM),
            (&ARMV6, "arm_copy_to_user", &armv6::AAPCS),
            (&AARCH64, "__arch_copy_from_user", &aarch64::AAPCS64),
            (&RISCV64, "__asm_copy_to_user", &riscv64::LP64),
            (&RISCV64, "fallback_scalar_usercopy", &riscv64::LP64),
            // Routines named at run time, by their convention.
            (&X86_64, "a,b:c", &x86_64::LINUX_C),
            (&X86_64, "a,b:rep_movs", &x86_64::REP_MOVS),
            (&I386, "a:c", &i386::REGPARM),
            (&ARMV6, "a:c", &armv6::AAPCS),
            (&AARCH64, "a:c", &aarch64::AAPCS64),
            (&RISCV64, "a:c", &riscv64::LP64),
        ];
        for (table, probe, abi) in cases {
            let p = table.named(probe).unwrap().unwrap();
            for s in p.symbols.iter() {
                assert_eq!([s.to, s.from, s.n].map(String::from), regs(abi), "{probe}");
            }
        }
    }

    #[test]
    fn kernel_addresses() {
        assert!(X86_64.is_kernel(0xffff_8880_0000_1000));
        assert!(!X86_64.is_kernel(0x7ffd_1234_5000));
        assert!(I386.is_kernel(0xc100_0000));
        assert!(!I386.is_kernel(0xbfff_f000));
        assert!(!I386.is_kernel(0x8000_0000));
        assert!(AARCH64.is_kernel(0xffff_0000_0800_0000));
        assert!(!AARCH64.is_kernel(0x0000_ffff_f000_0000));
        assert!(RISCV64.is_kernel(0xffff_ffd8_0000_1000));
        assert!(!RISCV64.is_kernel(0x0000_003f_ffff_f000));
    }
}
