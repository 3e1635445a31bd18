//! RISC-V (RV64GC): the instruction list, instruction selection from
//! [`Op`]s and the GNU as printer. Registers come from the LP64 table
//! (`arch/riscv64.rs`):
//!
//! | model          | register        | note                                   |
//! |----------------|-----------------|----------------------------------------|
//! | dst (to)       | a0              |                                        |
//! | src (from)     | a1              |                                        |
//! | len (n)        | a2              | bytes left; returned in a0 on a fault  |
//! | scratch 0..9   | a3-a7, t0-t4    |                                        |
//! | temporary      | t5              | addresses, immediates, a shifted word  |
//! | temporary 2    | t6              | far `At::End` offsets; `SR_SUM`        |
//! | return         | a0              |                                        |
//!
//! All of these are caller-saved, so the routine saves nothing and returns
//! with `ret`. RISC-V has no flags: a length test is a `bltu`/`bgeu` of
//! `len` against the bound in t5 (`beqz`/`bnez` against 0). Loads are
//! zero-extending (`lbu`, `lhu`, `lwu`, `ld`). In the linux flavour user
//! access is opened by `li t6, SR_SUM; csrs CSR_STATUS, t6` and closed by
//! `li t6, SR_SUM; csrc CSR_STATUS, t6` before every `ret` (the `li` again:
//! the body may have used t6), as arch/riscv/lib/uaccess.S brackets its
//! copy. Both flavours print the same instructions otherwise; GNU as picks
//! compressed encodings (RVC) where they exist.

use crate::arch::riscv64::{self as abi, LP64, NAMES};
use crate::lower::routine::{self as ops, At, Cond, Op, PtrTest, Routine};

/// An integer register by number (x0-x31).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reg(pub u8);

pub const DST: Reg = Reg(LP64.dst);
pub const SRC: Reg = Reg(LP64.src);
pub const LEN: Reg = Reg(LP64.len);
pub const RET: Reg = Reg(LP64.ret);
pub const ZERO: Reg = Reg(abi::ZERO);
pub const TMP: Reg = Reg(abi::TMP);
pub const TMP2: Reg = Reg(abi::TMP2);

impl Reg {
    /// The ABI name (`a0`, `t5`).
    pub fn name(self) -> &'static str {
        NAMES[self.0 as usize & 31]
    }
}

/// Register-register operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    Add,
    Sub,
    Or,
    Xor,
    Sll,
    Srl,
}

impl Alu {
    pub fn name(self) -> &'static str {
        match self {
            Alu::Add => "add",
            Alu::Sub => "sub",
            Alu::Or => "or",
            Alu::Xor => "xor",
            Alu::Sll => "sll",
            Alu::Srl => "srl",
        }
    }
}

/// Conditional branches of two registers (unsigned comparisons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Br {
    Beq,
    Bne,
    Bltu,
    Bgeu,
}

impl Br {
    pub fn name(self) -> &'static str {
        match self {
            Br::Beq => "beq",
            Br::Bne => "bne",
            Br::Bltu => "bltu",
            Br::Bgeu => "bgeu",
        }
    }
}

/// The user-access bracket of the linux flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sum {
    /// `csrs CSR_STATUS, t6`: user memory accessible.
    Set,
    /// `csrc CSR_STATUS, t6`: not any more.
    Clear,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inst {
    Label(String),
    Comment(String),
    /// A zero-extending 1/2/4/8-byte load into `rd` from `off(base)`.
    Load {
        width: u32,
        rd: Reg,
        base: Reg,
        off: i32,
    },
    /// A 1/2/4/8-byte store of `rs` to `off(base)`.
    Store {
        width: u32,
        rs: Reg,
        base: Reg,
        off: i32,
    },
    /// `addi rd, rs, imm` (12-bit signed).
    Addi {
        rd: Reg,
        rs: Reg,
        imm: i32,
    },
    /// `andi rd, rs, imm` (12-bit signed).
    Andi {
        rd: Reg,
        rs: Reg,
        imm: i32,
    },
    /// `slli rd, rs, sh`
    Slli {
        rd: Reg,
        rs: Reg,
        sh: u32,
    },
    /// `srli rd, rs, sh`
    Srli {
        rd: Reg,
        rs: Reg,
        sh: u32,
    },
    Alu {
        op: Alu,
        rd: Reg,
        rs1: Reg,
        rs2: Reg,
    },
    /// `li rd, imm` (GNU as expands it to `lui`/`addi`/`slli`).
    Li {
        rd: Reg,
        imm: i64,
    },
    /// `li t6, SR_SUM`: the kernel's constant, by name.
    LiSrSum,
    /// `csrs`/`csrc CSR_STATUS, t6`.
    Csr(Sum),
    /// `mv rd, rs`
    Mv {
        rd: Reg,
        rs: Reg,
    },
    Branch {
        br: Br,
        rs1: Reg,
        rs2: Reg,
        target: String,
    },
    J {
        target: String,
    },
    Ret,
}

/// A selected instruction (see [`super::Line`]).
pub type Line = super::Line<Inst>;

/// Does `k` fit a 12-bit signed immediate?
pub fn imm12(k: i64) -> bool {
    (-2048..=2047).contains(&k)
}

/// Instruction selection: one routine's ops to RV64 lines.
pub fn select(r: &Routine) -> Vec<Line> {
    let mut s = Selector {
        r,
        lines: super::Lines::new(r),
    };
    for op in &r.ops {
        s.op(op);
    }
    s.lines.out
}

struct Selector<'a> {
    r: &'a Routine,
    lines: super::Lines<'a, Inst>,
}

impl Selector<'_> {
    fn emit(&mut self, i: Inst) {
        self.lines.emit(i);
    }

    fn label(&self, name: &str) -> String {
        self.lines.label(name)
    }

    fn scratch(&self, n: u8) -> Reg {
        Reg(LP64.scratch[n as usize])
    }

    /// `rd = rs + k`; a `k` outside 12 bits goes through `tmp`.
    fn add_imm(&mut self, rd: Reg, rs: Reg, k: i64, tmp: Reg) {
        if imm12(k) {
            self.emit(Inst::Addi {
                rd,
                rs,
                imm: k as i32,
            });
        } else {
            self.emit(Inst::Li { rd: tmp, imm: k });
            self.emit(Inst::Alu {
                op: Alu::Add,
                rd,
                rs1: rs,
                rs2: tmp,
            });
        }
    }

    /// A base register and a 12-bit offset for `m`.
    fn addr(&mut self, m: ops::Mem) -> (Reg, i32) {
        let base = match m.base {
            ops::Ptr::Dst => DST,
            ops::Ptr::Src => SRC,
        };
        match m.at {
            At::Start(k) if imm12(k as i64) => (base, k as i32),
            At::Start(k) => {
                self.add_imm(TMP, base, k as i64, TMP2);
                (TMP, 0)
            }
            At::End(k) => {
                self.emit(Inst::Alu {
                    op: Alu::Add,
                    rd: TMP,
                    rs1: base,
                    rs2: LEN,
                });
                if imm12(-(k as i64)) {
                    (TMP, -(k as i32))
                } else {
                    self.add_imm(TMP, TMP, -(k as i64), TMP2);
                    (TMP, 0)
                }
            }
        }
    }

    fn branch(&mut self, br: Br, rs1: Reg, rs2: Reg, target: &str) {
        let target = self.label(target);
        self.emit(Inst::Branch {
            br,
            rs1,
            rs2,
            target,
        });
    }

    fn jump(&mut self, target: &str) {
        let target = self.label(target);
        self.emit(Inst::J { target });
    }

    /// Branch to `target` when `len <cond> imm` (unsigned).
    fn jump_if_len(&mut self, cond: Cond, imm: u64, target: &str) {
        if imm == 0 {
            match cond {
                Cond::Eq | Cond::BelowEq => self.branch(Br::Beq, LEN, ZERO, target),
                Cond::Ne | Cond::Above => self.branch(Br::Bne, LEN, ZERO, target),
                Cond::AboveEq => self.jump(target),
                Cond::Below => {} // never
            }
            return;
        }
        self.emit(Inst::Li {
            rd: TMP,
            imm: imm as i64,
        });
        let (br, a, b) = match cond {
            Cond::Eq => (Br::Beq, LEN, TMP),
            Cond::Ne => (Br::Bne, LEN, TMP),
            Cond::Below => (Br::Bltu, LEN, TMP),
            Cond::AboveEq => (Br::Bgeu, LEN, TMP),
            // len > imm: imm < len; len <= imm: imm >= len.
            Cond::Above => (Br::Bltu, TMP, LEN),
            Cond::BelowEq => (Br::Bgeu, TMP, LEN),
        };
        self.branch(br, a, b, target);
    }

    fn access(&mut self, a: &ops::Access, store: bool) {
        assert!(a.width <= 8, "validated: no register pairs on riscv64");
        let reg = self.scratch(a.reg);
        let (base, off) = self.addr(a.mem);
        let width = a.width;
        let inst = if store {
            Inst::Store {
                width,
                rs: reg,
                base,
                off,
            }
        } else {
            Inst::Load {
                width,
                rd: reg,
                base,
                off,
            }
        };
        self.lines.emit_user(inst, &a.user);
    }

    fn op(&mut self, op: &Op) {
        match op {
            Op::Comment(c) => self.emit(Inst::Comment(c.clone())),
            Op::Label(l) => {
                let l = self.label(l);
                self.emit(Inst::Label(l))
            }
            Op::Jump(l) => self.jump(l),
            Op::JumpIfLen { cond, imm, target } => self.jump_if_len(*cond, *imm, target),
            Op::JumpIfAlias { lo, hi, target } => {
                let t = self.scratch(0);
                self.emit(Inst::Alu {
                    op: Alu::Sub,
                    rd: t,
                    rs1: DST,
                    rs2: SRC,
                });
                // mod 4096: the low 12 bits (0xfff is no andi immediate).
                self.emit(Inst::Slli {
                    rd: t,
                    rs: t,
                    sh: 52,
                });
                self.emit(Inst::Srli {
                    rd: t,
                    rs: t,
                    sh: 52,
                });
                if *lo > 0 {
                    self.add_imm(t, t, -(*lo as i64), TMP);
                }
                self.emit(Inst::Li {
                    rd: TMP,
                    imm: (hi - lo) as i64,
                });
                // (t - lo) <= hi - lo, unsigned
                self.branch(Br::Bgeu, TMP, t, target);
            }
            Op::JumpIfPtr {
                test,
                mask,
                aligned,
                target,
            } => {
                let reg = match test {
                    PtrTest::Dst => DST,
                    PtrTest::Src => SRC,
                    PtrTest::Both | PtrTest::Congruent => {
                        let t = self.scratch(0);
                        let op = if *test == PtrTest::Both {
                            Alu::Or
                        } else {
                            Alu::Xor
                        };
                        self.emit(Inst::Alu {
                            op,
                            rd: t,
                            rs1: DST,
                            rs2: SRC,
                        });
                        t
                    }
                };
                assert!(
                    mask.wrapping_add(1).is_power_of_two(),
                    "validated: alignments are powers of two"
                );
                if imm12(*mask as i64) {
                    self.emit(Inst::Andi {
                        rd: TMP,
                        rs: reg,
                        imm: *mask as i32,
                    });
                } else {
                    // (4096: a mask andi's 12-bit immediate cannot hold;
                    // the low bits shifted to the top are zero alike)
                    self.emit(Inst::Slli {
                        rd: TMP,
                        rs: reg,
                        sh: 64 - mask.count_ones(),
                    });
                }
                let br = if *aligned { Br::Beq } else { Br::Bne };
                self.branch(br, TMP, ZERO, target);
            }
            Op::Load(a) => self.access(a, false),
            Op::Store(a) => self.access(a, true),
            Op::Advance(k) => {
                let k = *k as i64;
                self.add_imm(SRC, SRC, k, TMP);
                self.add_imm(DST, DST, k, TMP);
                self.add_imm(LEN, LEN, -k, TMP);
            }
            Op::SetLen(n) => self.emit(Inst::Li {
                rd: LEN,
                imm: *n as i64,
            }),
            Op::ShiftSetup { width, lo, hi } => {
                let (lo, hi) = (self.scratch(*lo), self.scratch(*hi));
                self.emit(Inst::Andi {
                    rd: lo,
                    rs: SRC,
                    imm: *width as i32 - 1,
                });
                self.emit(Inst::Slli {
                    rd: lo,
                    rs: lo,
                    sh: 3,
                });
                self.emit(Inst::Li {
                    rd: hi,
                    imm: 8 * *width as i64,
                });
                self.emit(Inst::Alu {
                    op: Alu::Sub,
                    rd: hi,
                    rs1: hi,
                    rs2: lo,
                });
            }
            Op::LoadAligned {
                width,
                reg,
                at,
                user,
            } => {
                self.emit(Inst::Andi {
                    rd: TMP,
                    rs: SRC,
                    imm: -(*width as i32),
                });
                let inst = Inst::Load {
                    width: *width,
                    rd: self.scratch(*reg),
                    base: TMP,
                    off: *at as i32,
                };
                self.lines.emit_user(inst, user);
            }
            Op::Combine {
                out,
                prev,
                next,
                lo,
                hi,
            } => {
                let [out, prev, next, lo, hi] =
                    [*out, *prev, *next, *lo, *hi].map(|r| self.scratch(r));
                self.emit(Inst::Alu {
                    op: Alu::Srl,
                    rd: out,
                    rs1: prev,
                    rs2: lo,
                });
                self.emit(Inst::Alu {
                    op: Alu::Sll,
                    rd: TMP,
                    rs1: next,
                    rs2: hi,
                });
                self.emit(Inst::Alu {
                    op: Alu::Or,
                    rd: out,
                    rs1: out,
                    rs2: TMP,
                });
            }
            Op::ZeroRest => {
                // sb loop over the kernel buffer; src is dead, so it counts.
                let top = format!(".L{}_zero_rest.loop", self.r.tag);
                let done = format!(".L{}_zero_rest.done", self.r.tag);
                self.emit(Inst::Mv { rd: SRC, rs: LEN });
                self.emit(Inst::Label(top.clone()));
                self.emit(Inst::Branch {
                    br: Br::Beq,
                    rs1: SRC,
                    rs2: ZERO,
                    target: done.clone(),
                });
                self.emit(Inst::Store {
                    width: 1,
                    rs: ZERO,
                    base: DST,
                    off: 0,
                });
                self.emit(Inst::Addi {
                    rd: DST,
                    rs: DST,
                    imm: 1,
                });
                self.emit(Inst::Addi {
                    rd: SRC,
                    rs: SRC,
                    imm: -1,
                });
                self.emit(Inst::J { target: top });
                self.emit(Inst::Label(done));
            }
            Op::BeginFixups => self.lines.begin_fixups(),
            Op::UaccessBegin => {
                self.emit(Inst::LiSrSum);
                self.emit(Inst::Csr(Sum::Set));
            }
            Op::UaccessEnd => {
                self.emit(Inst::LiSrSum);
                self.emit(Inst::Csr(Sum::Clear));
            }
            Op::Return { zero } => {
                if *zero {
                    self.emit(Inst::Li { rd: RET, imm: 0 });
                } else {
                    self.emit(Inst::Mv { rd: RET, rs: LEN });
                }
                self.emit(Inst::Ret);
            }
            Op::Prefetch { kind, .. } => {
                unreachable!("validated: no {kind:?} prefetch on riscv64 (touch loads are loads)")
            }
            Op::LoadMultiple { .. } | Op::StoreMultiple { .. } => {
                unreachable!("validated: no ldm/stm on riscv64")
            }
            Op::RepMovs { .. } | Op::RepRecover { .. } | Op::AdvanceToBoundary { .. } => {
                unreachable!("validated: rep movs and word-aligning prologues are x86's")
            }
            Op::MachineCheckExit { .. } => unreachable!("validated: _ASM_EXTABLE_CPY is x86_64's"),
        }
    }
}

/// The mnemonic of a load or store: `lbu`, `lwu`, `ld`, `sb`, `sd`, ...
pub fn mnemonic(store: bool, width: u32) -> &'static str {
    match (store, width) {
        (false, 1) => "lbu",
        (false, 2) => "lhu",
        (false, 4) => "lwu",
        (false, 8) => "ld",
        (true, 1) => "sb",
        (true, 2) => "sh",
        (true, 4) => "sw",
        (true, 8) => "sd",
        (_, w) => unreachable!("no {w}-byte access on riscv64"),
    }
}

/// The GNU as text of one instruction.
pub fn print_inst(inst: &Inst) -> String {
    match inst {
        Inst::Label(l) => format!("{l}:"),
        Inst::Comment(c) => format!("\t/* {c} */"),
        Inst::Load {
            width,
            rd,
            base,
            off,
        } => format!(
            "\t{}\t{}, {off}({})",
            mnemonic(false, *width),
            rd.name(),
            base.name()
        ),
        Inst::Store {
            width,
            rs,
            base,
            off,
        } => format!(
            "\t{}\t{}, {off}({})",
            mnemonic(true, *width),
            rs.name(),
            base.name()
        ),
        Inst::Addi { rd, rs, imm } => format!("\taddi\t{}, {}, {imm}", rd.name(), rs.name()),
        Inst::Andi { rd, rs, imm } => format!("\tandi\t{}, {}, {imm}", rd.name(), rs.name()),
        Inst::Slli { rd, rs, sh } => format!("\tslli\t{}, {}, {sh}", rd.name(), rs.name()),
        Inst::Srli { rd, rs, sh } => format!("\tsrli\t{}, {}, {sh}", rd.name(), rs.name()),
        Inst::Alu { op, rd, rs1, rs2 } => format!(
            "\t{}\t{}, {}, {}",
            op.name(),
            rd.name(),
            rs1.name(),
            rs2.name()
        ),
        Inst::Li { rd, imm } => format!("\tli\t{}, {imm}", rd.name()),
        Inst::LiSrSum => format!("\tli\t{}, SR_SUM", TMP2.name()),
        Inst::Csr(Sum::Set) => format!("\tcsrs\tCSR_STATUS, {}", TMP2.name()),
        Inst::Csr(Sum::Clear) => format!("\tcsrc\tCSR_STATUS, {}", TMP2.name()),
        Inst::Mv { rd, rs } => format!("\tmv\t{}, {}", rd.name(), rs.name()),
        Inst::Branch {
            br,
            rs1,
            rs2: Reg(0),
            target,
        } if matches!(br, Br::Beq | Br::Bne) => {
            format!("\t{}z\t{}, {target}", br.name(), rs1.name())
        }
        Inst::Branch {
            br,
            rs1,
            rs2,
            target,
        } => format!("\t{}\t{}, {}, {target}", br.name(), rs1.name(), rs2.name()),
        Inst::J { target } => format!("\tj\t{target}"),
        Inst::Ret => "\tret".to_string(),
    }
}

/// Print one routine for GNU as. Both flavours print the same
/// instructions; the templates differ in the macros around them (and only
/// the linux flavour's routines open user access).
pub fn print(lines: &[Line]) -> super::Function {
    super::print_lines(lines, print_inst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immediates_and_mnemonics() {
        assert!(imm12(2047) && imm12(-2048));
        assert!(!imm12(2048) && !imm12(-2049));
        assert_eq!(mnemonic(false, 1), "lbu");
        assert_eq!(mnemonic(true, 8), "sd");
        assert_eq!(Reg(30).name(), "t5");
        assert_eq!(
            print_inst(&Inst::Branch {
                br: Br::Bne,
                rs1: LEN,
                rs2: ZERO,
                target: ".Lx".into()
            }),
            "\tbnez\ta2, .Lx"
        );
    }
}
