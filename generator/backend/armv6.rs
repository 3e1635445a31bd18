//! ARMv6 (A32, ARM1176): the instruction list, instruction selection from
//! [`Op`]s and the GNU as (unified syntax) printer. Registers come from the
//! AAPCS table (`arch/armv6.rs`):
//!
//! | model          | register | note                                        |
//! |----------------|----------|---------------------------------------------|
//! | dst (to)       | r0       |                                             |
//! | src (from)     | r1       |                                             |
//! | len (n)        | r2       | bytes left; returned in r0 on a fault       |
//! | scratch 0..7   | r3-r10   | ascending, so scratch 0..n is an ldm list   |
//! | address temp   | ip (r12) | `At::End`, far offsets, big immediates      |
//! | return         | r0       |                                             |
//!
//! r4-r10 are AAPCS callee-saved: the routine pushes the ones it uses with
//! `lr` and returns with `pop {..., pc}`; without them it returns with
//! `bx lr`. `ldm`/`stm` never write back: a faulting one leaves its base
//! register as it was, so the fixup arithmetic needs no case for it (an
//! `stm` that faults part-way has stored the words before the fault —
//! qemu 7.2 does so too — which the lowering covers by retrying bytes from
//! the block start; a faulting `ldm` has stored nothing).
//!
//! Word `ldr`/`str` may see unaligned addresses (a misaligned source after
//! dst is aligned, end-relative words): ARMv6 performs them in hardware
//! when SCTLR.U=1, which Linux sets on v6+ (`proc-v6.S`) and qemu-user
//! allows. `ldm`/`stm` always need word alignment; validation proves it
//! (`front/validate/size_classes.rs`, `multiple_fits`).

use crate::arch::{self, armv6::AAPCS};
use crate::front::strategy::{Flavor, PrefetchKind};
use crate::lower::routine::{self, At, Cond, Op, PtrTest, Routine};

/// A core register, by number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reg(pub u8);

// The AAPCS table (`arch/armv6.rs`) as `Reg`s.
pub const DST: Reg = Reg(AAPCS.dst);
pub const SRC: Reg = Reg(AAPCS.src);
pub const LEN: Reg = Reg(AAPCS.len);
pub const RET: Reg = Reg(AAPCS.ret);
pub const IP: Reg = Reg(arch::armv6::IP);
pub const LR: Reg = Reg(arch::armv6::LR);
pub const PC: Reg = Reg(arch::armv6::PC);

impl Reg {
    pub fn name(self) -> &'static str {
        const NAMES: [&str; 16] = [
            "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "ip", "sp",
            "lr", "pc",
        ];
        NAMES[self.0 as usize]
    }
}

/// Condition codes after `cmp`/`tst` (unsigned comparisons); A64 uses
/// the same names (`backend/aarch64.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    Eq,
    Ne,
    Lo,
    Ls,
    Hi,
    Hs,
}

impl Cc {
    pub fn name(self) -> &'static str {
        match self {
            Cc::Eq => "eq",
            Cc::Ne => "ne",
            Cc::Lo => "lo",
            Cc::Ls => "ls",
            Cc::Hi => "hi",
            Cc::Hs => "hs",
        }
    }
}

/// Data-processing operations with a destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    Add,
    Sub,
    /// `sub` setting the flags: rd against 0 afterwards.
    Subs,
    And,
    Orr,
    Eor,
    /// `lsl rd, rn, #imm` (shift amounts only)
    Lsl,
    /// `lsr rd, rn, #imm` (shift amounts only)
    Lsr,
}

impl Alu {
    fn name(self) -> &'static str {
        match self {
            Alu::Add => "add",
            Alu::Sub => "sub",
            Alu::Subs => "subs",
            Alu::And => "and",
            Alu::Orr => "orr",
            Alu::Eor => "eor",
            Alu::Lsl => "lsl",
            Alu::Lsr => "lsr",
        }
    }
}

/// Flag-setting comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    Cmp,
    /// `cmn rn, #k` compares `rn` with `-k`.
    Cmn,
    Tst,
}

impl Test {
    fn name(self) -> &'static str {
        match self {
            Test::Cmp => "cmp",
            Test::Cmn => "cmn",
            Test::Tst => "tst",
        }
    }
}

/// The flexible second operand: an encodable immediate or a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    Imm(u32),
    Reg(Reg),
}

impl Operand {
    fn text(self) -> String {
        match self {
            Operand::Imm(k) => format!("#{k}"),
            Operand::Reg(r) => r.name().to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inst {
    Label(String),
    Comment(String),
    /// `ldr`/`ldrb rt, [base, #off]`, `off` in -4095..=4095
    Load {
        width: u32,
        rt: Reg,
        base: Reg,
        off: i32,
    },
    /// `str`/`strb rt, [base, #off]`
    Store {
        width: u32,
        rt: Reg,
        base: Reg,
        off: i32,
    },
    /// `ldmia base, {regs}` (no writeback)
    Ldm {
        base: Reg,
        regs: Vec<Reg>,
    },
    /// `stmia base, {regs}` (no writeback)
    Stm {
        base: Reg,
        regs: Vec<Reg>,
    },
    Alu {
        op: Alu,
        rd: Reg,
        rn: Reg,
        op2: Operand,
    },
    Mov {
        rd: Reg,
        op2: Operand,
    },
    Test {
        op: Test,
        rn: Reg,
        op2: Operand,
    },
    B {
        cc: Option<Cc>,
        target: String,
    },
    /// `pld [base, #off]`
    Pld {
        base: Reg,
        off: i32,
    },
    Push(Vec<Reg>),
    Pop(Vec<Reg>),
    Bx(Reg),
}

/// A selected instruction (see [`super::Line`]).
pub type Line = super::Line<Inst>;

/// Is `k` an A32 modified immediate (8 bits rotated right by an even amount)?
pub fn encodable(k: u32) -> bool {
    (0..16).any(|r| k.rotate_left(2 * r) <= 0xff)
}

/// `k` as modified immediates whose OR (or sum) is `k`: `mov` then `orr`s.
/// At most four; no literal pool, which the fixup section would need too.
fn imm_chunks(k: u32) -> Vec<u32> {
    let mut rest = k;
    let mut out = Vec::new();
    while rest != 0 {
        let low = rest.trailing_zeros() & !1;
        let chunk = rest & (0xffu32 << low);
        out.push(chunk);
        rest &= !chunk;
    }
    if out.is_empty() {
        out.push(0);
    }
    out
}

/// The condition a branch on `c` takes.
pub(super) fn cc(c: Cond) -> Cc {
    match c {
        Cond::Eq => Cc::Eq,
        Cond::Ne => Cc::Ne,
        Cond::Below => Cc::Lo,
        Cond::BelowEq => Cc::Ls,
        Cond::Above => Cc::Hi,
        Cond::AboveEq => Cc::Hs,
    }
}

/// Instruction selection: one routine's ops to ARM lines.
pub fn select(r: &Routine) -> Vec<Line> {
    let mut s = Selector {
        r,
        lines: super::Lines::new(r),
    };
    let saved = s.saved();
    if !saved.is_empty() {
        s.emit(Inst::Push([saved, vec![LR]].concat()));
    }
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
    fn label(&self, name: &str) -> String {
        self.lines.label(name)
    }

    fn emit(&mut self, inst: Inst) {
        self.lines.emit(inst);
    }

    fn emit_user(&mut self, inst: Inst, site: &Option<routine::UserSite>) {
        self.lines.emit_user(inst, site);
    }

    fn scratch(&self, i: u8) -> Reg {
        Reg(AAPCS.scratch[i as usize])
    }

    /// Callee-saved registers among the scratch registers used.
    fn saved(&self) -> Vec<Reg> {
        let used = self.lines.scratch_used as usize;
        AAPCS.saved_scratch(used).into_iter().map(Reg).collect()
    }

    /// `rd = k`, in as many `mov`/`orr` as it takes.
    fn mov_imm(&mut self, rd: Reg, k: u32) {
        for (i, chunk) in imm_chunks(k).into_iter().enumerate() {
            if i == 0 {
                self.emit(Inst::Mov {
                    rd,
                    op2: Operand::Imm(chunk),
                });
            } else {
                self.emit(Inst::Alu {
                    op: Alu::Orr,
                    rd,
                    rn: rd,
                    op2: Operand::Imm(chunk),
                });
            }
        }
    }

    /// `rd = rn op k`; a `k` that does not encode goes through ip.
    fn alu_imm(&mut self, op: Alu, rd: Reg, rn: Reg, k: u32) {
        let flipped = match op {
            Alu::Add => Some(Alu::Sub),
            Alu::Sub => Some(Alu::Add),
            _ => None,
        };
        if encodable(k) {
            self.emit(Inst::Alu {
                op,
                rd,
                rn,
                op2: Operand::Imm(k),
            });
        } else if let (Some(f), true) = (flipped, encodable(k.wrapping_neg())) {
            self.emit(Inst::Alu {
                op: f,
                rd,
                rn,
                op2: Operand::Imm(k.wrapping_neg()),
            });
        } else {
            assert_ne!(rn, IP, "ip holds the operand");
            self.mov_imm(IP, k);
            self.emit(Inst::Alu {
                op,
                rd,
                rn,
                op2: Operand::Reg(IP),
            });
        }
    }

    /// Flags from `rn` against `k` (`cmp`, or `cmn`, or through ip).
    fn test_imm(&mut self, op: Test, rn: Reg, k: u32) {
        if encodable(k) {
            self.emit(Inst::Test {
                op,
                rn,
                op2: Operand::Imm(k),
            });
        } else if op == Test::Cmp && encodable(k.wrapping_neg()) {
            self.emit(Inst::Test {
                op: Test::Cmn,
                rn,
                op2: Operand::Imm(k.wrapping_neg()),
            });
        } else {
            self.mov_imm(IP, k);
            self.emit(Inst::Test {
                op,
                rn,
                op2: Operand::Reg(IP),
            });
        }
    }

    /// A base register and an offset that fits a 12-bit immediate.
    fn addr(&mut self, m: routine::Mem) -> (Reg, i32) {
        let base = match m.base {
            routine::Ptr::Dst => DST,
            routine::Ptr::Src => SRC,
        };
        match m.at {
            At::Start(k) if k <= 4095 => (base, k as i32),
            At::Start(k) => {
                self.alu_imm(Alu::Add, IP, base, k);
                (IP, 0)
            }
            At::End(k) => {
                assert!(k <= 4095, "At::End offsets are small (head/tail, overlap)");
                self.emit(Inst::Alu {
                    op: Alu::Add,
                    rd: IP,
                    rn: base,
                    op2: Operand::Reg(LEN),
                });
                (IP, -(k as i32))
            }
        }
    }

    /// The base of an `ldm`/`stm` at `base + at`.
    fn multiple_base(&mut self, base: Reg, at: u32) -> Reg {
        if at == 0 {
            return base;
        }
        self.alu_imm(Alu::Add, IP, base, at);
        IP
    }

    fn advance(&mut self, k: u32) {
        self.alu_imm(Alu::Add, SRC, SRC, k);
        self.alu_imm(Alu::Add, DST, DST, k);
        self.alu_imm(Alu::Sub, LEN, LEN, k);
    }

    fn branch(&mut self, cc: Option<Cc>, target: &str) {
        let target = self.label(target);
        self.emit(Inst::B { cc, target });
    }

    fn op(&mut self, op: &Op) {
        match op {
            Op::Comment(c) => self.emit(Inst::Comment(c.clone())),
            Op::Label(l) => {
                let l = self.label(l);
                self.emit(Inst::Label(l))
            }
            Op::Jump(l) => self.branch(None, l),
            Op::JumpIfLen { cond, imm, target } => {
                let imm = u32::try_from(*imm).expect("validated: sizes fit 32 bits");
                // Right after `sub len, len, k` (an advance, no label
                // between) a `subs` there says whether len is 0.
                let against_zero = imm == 0 && matches!(cond, Cond::Eq | Cond::Ne);
                match self.lines.out.last_mut().map(|l| &mut l.inst) {
                    Some(Inst::Alu {
                        op: op @ Alu::Sub,
                        rd: LEN,
                        rn: LEN,
                        ..
                    }) if against_zero => *op = Alu::Subs,
                    _ => self.test_imm(Test::Cmp, LEN, imm),
                }
                self.branch(Some(cc(*cond)), target);
            }
            Op::JumpIfAlias { lo, hi, target } => {
                // (dst - src) mod 4096 by shifting out the high bits: no ubfx before v6T2.
                let t = self.scratch(0);
                self.emit(Inst::Alu {
                    op: Alu::Sub,
                    rd: t,
                    rn: DST,
                    op2: Operand::Reg(SRC),
                });
                self.emit(Inst::Alu {
                    op: Alu::Lsl,
                    rd: t,
                    rn: t,
                    op2: Operand::Imm(20),
                });
                self.emit(Inst::Alu {
                    op: Alu::Lsr,
                    rd: t,
                    rn: t,
                    op2: Operand::Imm(20),
                });
                if *lo > 0 {
                    self.alu_imm(Alu::Sub, t, t, *lo);
                }
                self.test_imm(Test::Cmp, t, hi - lo);
                self.branch(Some(Cc::Ls), target);
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
                            Alu::Orr
                        } else {
                            Alu::Eor
                        };
                        self.emit(Inst::Alu {
                            op,
                            rd: t,
                            rn: DST,
                            op2: Operand::Reg(SRC),
                        });
                        t
                    }
                };
                self.test_imm(Test::Tst, reg, *mask);
                self.branch(Some(if *aligned { Cc::Eq } else { Cc::Ne }), target);
            }
            Op::Load(a) => {
                let (base, off) = self.addr(a.mem);
                let inst = Inst::Load {
                    width: a.width,
                    rt: self.scratch(a.reg),
                    base,
                    off,
                };
                self.emit_user(inst, &a.user)
            }
            Op::Store(a) => {
                let (base, off) = self.addr(a.mem);
                let inst = Inst::Store {
                    width: a.width,
                    rt: self.scratch(a.reg),
                    base,
                    off,
                };
                self.emit_user(inst, &a.user)
            }
            Op::LoadMultiple { count, at, user } => {
                let base = self.multiple_base(SRC, *at);
                let regs = (0..*count).map(|i| self.scratch(i)).collect();
                self.emit_user(Inst::Ldm { base, regs }, user)
            }
            Op::StoreMultiple { count, at, user } => {
                let base = self.multiple_base(DST, *at);
                let regs = (0..*count).map(|i| self.scratch(i)).collect();
                self.emit_user(Inst::Stm { base, regs }, user)
            }
            Op::Prefetch {
                kind: PrefetchKind::Pld,
                at,
            } => {
                let (base, off) = self.addr(routine::Mem {
                    base: routine::Ptr::Src,
                    at: At::Start(*at),
                });
                self.emit(Inst::Pld { base, off })
            }
            Op::Prefetch { kind, .. } => unreachable!("validated: no {kind:?} prefetch on armv6"),
            Op::Advance(k) => self.advance(*k),
            Op::SetLen(n) => self.mov_imm(LEN, *n),
            Op::ZeroRest => {
                // strb loop over the kernel buffer; src is dead, so it counts.
                let top = format!(".L{}_zero_rest.loop", self.r.tag);
                let done = format!(".L{}_zero_rest.done", self.r.tag);
                self.emit(Inst::Mov {
                    rd: SRC,
                    op2: Operand::Reg(LEN),
                });
                self.emit(Inst::Mov {
                    rd: IP,
                    op2: Operand::Imm(0),
                });
                self.emit(Inst::Label(top.clone()));
                self.emit(Inst::Test {
                    op: Test::Cmp,
                    rn: SRC,
                    op2: Operand::Imm(0),
                });
                self.emit(Inst::B {
                    cc: Some(Cc::Eq),
                    target: done.clone(),
                });
                self.emit(Inst::Store {
                    width: 1,
                    rt: IP,
                    base: DST,
                    off: 0,
                });
                self.emit(Inst::Alu {
                    op: Alu::Add,
                    rd: DST,
                    rn: DST,
                    op2: Operand::Imm(1),
                });
                self.emit(Inst::Alu {
                    op: Alu::Sub,
                    rd: SRC,
                    rn: SRC,
                    op2: Operand::Imm(1),
                });
                self.emit(Inst::B {
                    cc: None,
                    target: top,
                });
                self.emit(Inst::Label(done));
            }
            Op::BeginFixups => self.lines.begin_fixups(),
            Op::Return { zero } => {
                let op2 = if *zero {
                    Operand::Imm(0)
                } else {
                    Operand::Reg(LEN)
                };
                self.emit(Inst::Mov { rd: RET, op2 });
                let saved = self.saved();
                if saved.is_empty() {
                    self.emit(Inst::Bx(LR));
                } else {
                    self.emit(Inst::Pop([saved, vec![PC]].concat()));
                }
            }
            Op::RepMovs { .. } | Op::RepRecover { .. } | Op::AdvanceToBoundary { .. } => {
                unreachable!("validated: rep movs and word-aligning prologues are x86's")
            }
            Op::UaccessBegin | Op::UaccessEnd => unreachable!("%s has no STAC/CLAC"),
            Op::MachineCheckExit { .. } => unreachable!("validated: _ASM_EXTABLE_CPY is x86_64's"),
            Op::ShiftSetup { .. } | Op::LoadAligned { .. } | Op::Combine { .. } => {
                unreachable!("validated: shift_combine is riscv64's")
            }
        }
    }
}

/// `{r3, r4, r5}` as `{r3-r5}` where registers are consecutive.
fn reg_list(regs: &[Reg]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < regs.len() {
        let mut j = i;
        while j + 1 < regs.len() && regs[j + 1].0 == regs[j].0 + 1 {
            j += 1;
        }
        parts.push(match j - i {
            0 => regs[i].name().to_string(),
            1 => format!("{}, {}", regs[i].name(), regs[j].name()),
            _ => format!("{}-{}", regs[i].name(), regs[j].name()),
        });
        i = j + 1;
    }
    format!("{{{}}}", parts.join(", "))
}

fn mem_text(base: Reg, off: i32) -> String {
    if off == 0 {
        format!("[{}]", base.name())
    } else {
        format!("[{}, #{off}]", base.name())
    }
}

/// The GNU as (unified syntax) text of one instruction.
pub fn print_inst(inst: &Inst) -> String {
    let byte = |w: &u32| match *w {
        1 => "b",
        4 => "",
        w => unreachable!("no {w}-byte access on armv6 (arch/mod.rs lists 1 and 4)"),
    };
    match inst {
        Inst::Label(l) => format!("{l}:"),
        Inst::Comment(c) => format!("\t/* {c} */"),
        Inst::Load {
            width,
            rt,
            base,
            off,
        } => {
            format!(
                "\tldr{}\t{}, {}",
                byte(width),
                rt.name(),
                mem_text(*base, *off)
            )
        }
        Inst::Store {
            width,
            rt,
            base,
            off,
        } => {
            format!(
                "\tstr{}\t{}, {}",
                byte(width),
                rt.name(),
                mem_text(*base, *off)
            )
        }
        Inst::Ldm { base, regs } => format!("\tldmia\t{}, {}", base.name(), reg_list(regs)),
        Inst::Stm { base, regs } => format!("\tstmia\t{}, {}", base.name(), reg_list(regs)),
        Inst::Alu { op, rd, rn, op2 } => {
            format!(
                "\t{}\t{}, {}, {}",
                op.name(),
                rd.name(),
                rn.name(),
                op2.text()
            )
        }
        Inst::Mov { rd, op2 } => format!("\tmov\t{}, {}", rd.name(), op2.text()),
        Inst::Test { op, rn, op2 } => format!("\t{}\t{}, {}", op.name(), rn.name(), op2.text()),
        Inst::B { cc: None, target } => format!("\tb\t{target}"),
        Inst::B {
            cc: Some(c),
            target,
        } => format!("\tb{}\t{target}", c.name()),
        Inst::Pld { base, off } => format!("\tpld\t{}", mem_text(*base, *off)),
        Inst::Push(regs) => format!("\tpush\t{}", reg_list(regs)),
        Inst::Pop(regs) => format!("\tpop\t{}", reg_list(regs)),
        Inst::Bx(r) => format!("\tbx\t{}", r.name()),
    }
}

/// Print one routine for GNU as. Both flavours print the same instructions;
/// the templates place `fixups` (in the function, or in `.text.fixup`).
pub fn print(lines: &[Line], _flavor: Flavor) -> super::Function {
    super::print_lines(lines, print_inst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_immediates() {
        for k in [0, 1, 255, 256, 1020, 1024, 0xff00_0000, 0xf000_000f, 4096] {
            assert!(encodable(k), "{k:#x}");
        }
        for k in [257, 4095, 0x101, 0x1fe01, 0x12345678] {
            assert!(!encodable(k), "{k:#x}");
        }
    }

    #[test]
    fn chunks_rebuild_every_value() {
        for k in [
            0u32,
            1,
            4095,
            0x101,
            0x12345678,
            0xffff_ffff,
            0x8000_0001,
            0xc000_0003,
        ] {
            let c = imm_chunks(k);
            assert!(c.len() <= 4, "{k:#x}: {c:x?}");
            assert!(c.iter().all(|&x| encodable(x)), "{k:#x}: {c:x?}");
            assert_eq!(c.iter().fold(0, |a, &x| a | x), k);
        }
    }

    #[test]
    fn register_lists() {
        let scratch: Vec<Reg> = AAPCS.scratch.iter().map(|&r| Reg(r)).collect();
        assert_eq!(reg_list(&scratch), "{r3-r10}");
        assert_eq!(reg_list(&[Reg(4), Reg(5), LR]), "{r4, r5, lr}");
        assert_eq!(reg_list(&[Reg(4), Reg(5), Reg(6), PC]), "{r4-r6, pc}");
    }
}
