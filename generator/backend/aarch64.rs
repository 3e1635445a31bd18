//! AArch64 (A64, ARMv8-A): the instruction list, instruction selection
//! from [`Op`]s and the GNU as printer. Registers come from the AAPCS64
//! table (`arch/aarch64.rs`):
//!
//! | model          | register | note                                        |
//! |----------------|----------|---------------------------------------------|
//! | dst (to)       | x0       |                                             |
//! | src (from)     | x1       |                                             |
//! | len (n)        | x2       | bytes left; returned in x0 on a fault       |
//! | scratch 0..11  | x3-x14   | a 16-byte piece is the pair (n, n+1)        |
//! | address temp   | x16      | `At::End`, far offsets                      |
//! | immediate temp | x17      | immediates no instruction encodes           |
//! | return         | x0       |                                             |
//!
//! All of these are caller-saved, so the routine saves nothing and returns
//! with `ret`.
//!
//! User accesses are the unprivileged `ldtr*`/`sttr*` forms in both
//! flavours, as arm64's `copy_{from,to}_user` make them: in the kernel
//! they are what keeps PAN and UAO honest; at EL0 they behave as plain
//! loads and stores, so the standalone flavour runs the very same
//! instruction stream. They have no pair form and only a signed 9-bit
//! unscaled offset; the lowering splits user-side pairs into two single
//! accesses (`lower/mod.rs`, `halves`), and the kernel side keeps `ldp`/`stp`.
//! A64 loads and stores take any alignment on normal memory, so neither
//! side needs aligned pointers.

use crate::arch::aarch64::{self as abi, AAPCS64};
use crate::front::strategy::{Flavor, PrefetchKind};
use crate::lower::routine::{self as ops, At, Op, PtrTest, Routine};

/// A general-purpose register by number; 31 is the zero register here
/// (no instruction of this backend addresses sp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reg(pub u8);

// The AAPCS64 table (`arch/aarch64.rs`) as `Reg`s.
pub const DST: Reg = Reg(AAPCS64.dst);
pub const SRC: Reg = Reg(AAPCS64.src);
pub const LEN: Reg = Reg(AAPCS64.len);
pub const RET: Reg = Reg(AAPCS64.ret);
/// Address temporary (ip0).
pub const ADDR: Reg = Reg(abi::ADDR);
/// Immediate temporary (ip1).
pub const IMM: Reg = Reg(abi::IMM);
/// The zero register (in the encodings this backend uses, 31 is never sp).
pub const ZR: Reg = Reg(31);

impl Reg {
    /// `x<n>` (or `w<n>` for 32-bit and narrower views).
    pub fn name(self, bytes: u32) -> String {
        let wide = bytes > 4;
        match (self.0, wide) {
            (31, true) => "xzr".to_string(),
            (31, false) => "wzr".to_string(),
            (n, true) => format!("x{n}"),
            (n, false) => format!("w{n}"),
        }
    }
}

/// Condition codes: A32's names, which A64 keeps (`b.eq`, `b.lo`, ...).
pub use super::armv6::Cc;

/// Three-register data processing (64-bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    Add,
    Sub,
    Orr,
    Eor,
}

impl Alu {
    pub fn name(self) -> &'static str {
        match self {
            Alu::Add => "add",
            Alu::Sub => "sub",
            Alu::Orr => "orr",
            Alu::Eor => "eor",
        }
    }
}

/// Which form a single load or store takes, and so its offset range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `ldtr*`/`sttr*`: unprivileged, signed 9-bit unscaled offset.
    User,
    /// `ldr*`/`str*`: unsigned 12-bit offset scaled by the width.
    Scaled,
    /// `ldur*`/`stur*`: signed 9-bit unscaled offset.
    Unscaled,
}

/// Prefetch operations of `prfm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prf {
    Pldl1keep,
    Pldl1strm,
}

impl Prf {
    pub fn name(self) -> &'static str {
        match self {
            Prf::Pldl1keep => "pldl1keep",
            Prf::Pldl1strm => "pldl1strm",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inst {
    Label(String),
    Comment(String),
    /// A 1/2/4/8-byte load into `rt` from `[base, #off]`.
    Load {
        width: u32,
        form: Form,
        rt: Reg,
        base: Reg,
        off: i32,
    },
    /// A 1/2/4/8-byte store of `rt` to `[base, #off]`.
    Store {
        width: u32,
        form: Form,
        rt: Reg,
        base: Reg,
        off: i32,
    },
    /// `ldp rt, rt2, [base, #off]`: 16 bytes, kernel side only.
    Ldp {
        rt: Reg,
        rt2: Reg,
        base: Reg,
        off: i32,
    },
    /// `stp rt, rt2, [base, #off]`: 16 bytes, kernel side only.
    Stp {
        rt: Reg,
        rt2: Reg,
        base: Reg,
        off: i32,
    },
    /// `add rd, rn, #imm` (`imm` is a 12-bit value, or one shifted by 12).
    AddImm {
        rd: Reg,
        rn: Reg,
        imm: u32,
    },
    /// `sub rd, rn, #imm`
    SubImm {
        rd: Reg,
        rn: Reg,
        imm: u32,
    },
    /// `subs rd, rn, #imm`: a `sub` setting the flags, rd against 0.
    SubsImm {
        rd: Reg,
        rn: Reg,
        imm: u32,
    },
    Alu {
        op: Alu,
        rd: Reg,
        rn: Reg,
        rm: Reg,
    },
    /// `and rd, rn, #mask`, `mask` a run of low ones.
    AndImm {
        rd: Reg,
        rn: Reg,
        mask: u64,
    },
    /// `cmp rn, #imm` (12-bit, or shifted by 12)
    CmpImm {
        rn: Reg,
        imm: u32,
    },
    CmpReg {
        rn: Reg,
        rm: Reg,
    },
    /// `tst rn, #mask`, `mask` a run of low ones.
    TstImm {
        rn: Reg,
        mask: u64,
    },
    /// `movz rd, #imm, lsl #shift`
    Movz {
        rd: Reg,
        imm: u16,
        shift: u8,
    },
    /// `movk rd, #imm, lsl #shift`
    Movk {
        rd: Reg,
        imm: u16,
        shift: u8,
    },
    /// `mov rd, rm`
    MovReg {
        rd: Reg,
        rm: Reg,
    },
    B {
        cc: Option<Cc>,
        target: String,
    },
    /// `prfm op, [base, #off]` (`prfum` for an unscaled offset)
    Prfm {
        op: Prf,
        base: Reg,
        off: i32,
    },
    Ret,
}

/// A selected instruction (see [`super::Line`]).
pub type Line = super::Line<Inst>;

/// Does an `add`/`sub`/`cmp` immediate encode `k` (12 bits, or 12 bits
/// shifted left by 12)?
pub fn arith_imm(k: u64) -> bool {
    k < 1 << 12 || (k & 0xfff == 0 && k < 1 << 24)
}

/// Is `off` encodable in a single access of `width` bytes in `form`?
pub fn offset_fits(form: Form, width: u32, off: i64) -> bool {
    match form {
        Form::User | Form::Unscaled => (-256..=255).contains(&off),
        Form::Scaled => off >= 0 && off % width as i64 == 0 && off / (width as i64) < 4096,
    }
}

/// `ldp`/`stp` of two x registers: a signed 7-bit offset scaled by 8.
pub fn pair_offset_fits(off: i64) -> bool {
    off % 8 == 0 && (-512..=504).contains(&off)
}

/// `prfm`: unsigned 12-bit scaled by 8, else `prfum`'s signed 9 bits.
pub fn prefetch_offset_fits(off: i64) -> bool {
    (off >= 0 && off % 8 == 0 && off < 8 * 4096) || (-256..=255).contains(&off)
}

use super::armv6::cc;

/// Instruction selection: one routine's ops to A64 lines.
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

/// What a memory operand is for: its offset range.
#[derive(Clone, Copy)]
enum Use {
    Single(Form, u32),
    Pair,
    Prefetch,
}

impl Use {
    fn fits(self, off: i64) -> bool {
        match self {
            Use::Single(form, width) => offset_fits(form, width, off),
            Use::Pair => pair_offset_fits(off),
            Use::Prefetch => prefetch_offset_fits(off),
        }
    }
}

impl Selector<'_> {
    fn label(&self, name: &str) -> String {
        self.lines.label(name)
    }

    fn emit(&mut self, inst: Inst) {
        self.lines.emit(inst);
    }

    fn scratch(&self, i: u8) -> Reg {
        Reg(AAPCS64.scratch[i as usize])
    }

    /// `rd = k` in a `movz` and as many `movk` as it takes.
    fn mov_imm(&mut self, rd: Reg, k: u64) {
        let chunks: Vec<(u16, u8)> = (0..4)
            .map(|i| ((k >> (16 * i)) as u16, 16 * i as u8))
            .filter(|&(c, _)| c != 0)
            .collect();
        let (first, rest) = match chunks.split_first() {
            Some((f, r)) => (*f, r),
            None => ((0, 0), &[][..]),
        };
        self.emit(Inst::Movz {
            rd,
            imm: first.0,
            shift: first.1,
        });
        for &(imm, shift) in rest {
            self.emit(Inst::Movk { rd, imm, shift });
        }
    }

    /// `rd = rn + k` (`sub` with `negative`); a `k` that does not encode
    /// goes through x17.
    fn add_imm(&mut self, rd: Reg, rn: Reg, k: u64, negative: bool) {
        if arith_imm(k) {
            let imm = k as u32;
            self.emit(if negative {
                Inst::SubImm { rd, rn, imm }
            } else {
                Inst::AddImm { rd, rn, imm }
            });
        } else {
            self.mov_imm(IMM, k);
            let op = if negative { Alu::Sub } else { Alu::Add };
            self.emit(Inst::Alu {
                op,
                rd,
                rn,
                rm: IMM,
            });
        }
    }

    fn cmp_imm(&mut self, rn: Reg, k: u64) {
        if arith_imm(k) {
            self.emit(Inst::CmpImm { rn, imm: k as u32 });
        } else {
            self.mov_imm(IMM, k);
            self.emit(Inst::CmpReg { rn, rm: IMM });
        }
    }

    /// A base register and an offset that `what` encodes.
    fn addr(&mut self, m: ops::Mem, what: Use) -> (Reg, i32) {
        let base = match m.base {
            ops::Ptr::Dst => DST,
            ops::Ptr::Src => SRC,
        };
        match m.at {
            At::Start(k) if what.fits(k as i64) => (base, k as i32),
            At::Start(k) => {
                self.add_imm(ADDR, base, k as u64, false);
                (ADDR, 0)
            }
            At::End(k) => {
                self.emit(Inst::Alu {
                    op: Alu::Add,
                    rd: ADDR,
                    rn: base,
                    rm: LEN,
                });
                if what.fits(-(k as i64)) {
                    (ADDR, -(k as i32))
                } else {
                    self.add_imm(ADDR, ADDR, k as u64, true);
                    (ADDR, 0)
                }
            }
        }
    }

    fn branch(&mut self, cc: Option<Cc>, target: &str) {
        let target = self.label(target);
        self.emit(Inst::B { cc, target });
    }

    /// One load or store of `a` (a pair when it is wider than a register).
    fn access(&mut self, a: &ops::Access, store: bool) {
        let user = a.user.is_some();
        let rt = self.scratch(a.reg);
        let inst = if a.width > 8 {
            assert!(
                !user,
                "lowering splits user-side pairs (ldtr/sttr have none)"
            );
            let (base, off) = self.addr(a.mem, Use::Pair);
            let rt2 = self.scratch(a.reg + 1);
            if store {
                Inst::Stp { rt, rt2, base, off }
            } else {
                Inst::Ldp { rt, rt2, base, off }
            }
        } else {
            let (base, off, form) = if user {
                let (b, o) = self.addr(a.mem, Use::Single(Form::User, a.width));
                (b, o, Form::User)
            } else {
                // Prefer the scaled form; the unscaled one takes what it cannot.
                let scaled = Use::Single(Form::Scaled, a.width);
                let unscaled = Use::Single(Form::Unscaled, a.width);
                let either = |off: i64| scaled.fits(off) || unscaled.fits(off);
                let what = match a.mem.at {
                    At::Start(k) if either(k as i64) => {
                        if scaled.fits(k as i64) {
                            scaled
                        } else {
                            unscaled
                        }
                    }
                    At::End(k) if unscaled.fits(-(k as i64)) => unscaled,
                    _ => scaled,
                };
                let (b, o) = self.addr(a.mem, what);
                let form = if offset_fits(Form::Scaled, a.width, o as i64) {
                    Form::Scaled
                } else {
                    Form::Unscaled
                };
                (b, o, form)
            };
            let width = a.width;
            if store {
                Inst::Store {
                    width,
                    form,
                    rt,
                    base,
                    off,
                }
            } else {
                Inst::Load {
                    width,
                    form,
                    rt,
                    base,
                    off,
                }
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
            Op::Jump(l) => self.branch(None, l),
            Op::JumpIfLen { cond, imm, target } => {
                // Right after `sub len, len, #k` (an advance, no label
                // between) a `subs` there says whether len is 0.
                let against_zero = *imm == 0 && matches!(cond, ops::Cond::Eq | ops::Cond::Ne);
                match self.lines.out.last_mut().map(|l| &mut l.inst) {
                    Some(
                        inst @ &mut Inst::SubImm {
                            rd: LEN,
                            rn: LEN,
                            imm: k,
                        },
                    ) if against_zero => {
                        *inst = Inst::SubsImm {
                            rd: LEN,
                            rn: LEN,
                            imm: k,
                        }
                    }
                    _ => self.cmp_imm(LEN, *imm),
                }
                self.branch(Some(cc(*cond)), target);
            }
            Op::JumpIfAlias { lo, hi, target } => {
                let t = self.scratch(0);
                self.emit(Inst::Alu {
                    op: Alu::Sub,
                    rd: t,
                    rn: DST,
                    rm: SRC,
                });
                self.emit(Inst::AndImm {
                    rd: t,
                    rn: t,
                    mask: 0xfff,
                });
                if *lo > 0 {
                    self.add_imm(t, t, *lo as u64, true);
                }
                self.cmp_imm(t, (hi - lo) as u64);
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
                            rm: SRC,
                        });
                        t
                    }
                };
                assert!(
                    mask.wrapping_add(1).is_power_of_two() && *mask != 0,
                    "validated: alignments are powers of two from 2"
                );
                self.emit(Inst::TstImm {
                    rn: reg,
                    mask: *mask as u64,
                });
                self.branch(Some(if *aligned { Cc::Eq } else { Cc::Ne }), target);
            }
            Op::Load(a) => self.access(a, false),
            Op::Store(a) => self.access(a, true),
            Op::Prefetch { kind, at } => {
                let op = match kind {
                    PrefetchKind::Pldl1keep => Prf::Pldl1keep,
                    PrefetchKind::Pldl1strm => Prf::Pldl1strm,
                    k => unreachable!("validated: no {k:?} prefetch on aarch64"),
                };
                let (base, off) = self.addr(
                    ops::Mem {
                        base: ops::Ptr::Src,
                        at: At::Start(*at),
                    },
                    Use::Prefetch,
                );
                self.emit(Inst::Prfm { op, base, off })
            }
            Op::Advance(k) => {
                let k = *k as u64;
                self.add_imm(SRC, SRC, k, false);
                self.add_imm(DST, DST, k, false);
                self.add_imm(LEN, LEN, k, true);
            }
            Op::SetLen(n) => self.mov_imm(LEN, *n as u64),
            Op::ZeroRest => {
                // strb loop over the kernel buffer; src is dead, so it counts.
                let top = format!(".L{}_zero_rest.loop", self.r.tag);
                let done = format!(".L{}_zero_rest.done", self.r.tag);
                self.emit(Inst::MovReg { rd: SRC, rm: LEN });
                self.emit(Inst::Label(top.clone()));
                self.emit(Inst::CmpImm { rn: SRC, imm: 0 });
                self.emit(Inst::B {
                    cc: Some(Cc::Eq),
                    target: done.clone(),
                });
                self.emit(Inst::Store {
                    width: 1,
                    form: Form::Scaled,
                    rt: ZR,
                    base: DST,
                    off: 0,
                });
                self.emit(Inst::AddImm {
                    rd: DST,
                    rn: DST,
                    imm: 1,
                });
                self.emit(Inst::SubImm {
                    rd: SRC,
                    rn: SRC,
                    imm: 1,
                });
                self.emit(Inst::B {
                    cc: None,
                    target: top,
                });
                self.emit(Inst::Label(done));
            }
            Op::BeginFixups => self.lines.begin_fixups(),
            Op::Return { zero } => {
                if *zero {
                    self.emit(Inst::Movz {
                        rd: RET,
                        imm: 0,
                        shift: 0,
                    });
                } else {
                    self.emit(Inst::MovReg { rd: RET, rm: LEN });
                }
                self.emit(Inst::Ret);
            }
            Op::LoadMultiple { .. } | Op::StoreMultiple { .. } => {
                unreachable!("validated: no ldm/stm on aarch64 (16-byte widths are ldp/stp)")
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

fn mem_text(base: Reg, off: i32) -> String {
    if off == 0 {
        format!("[{}]", base.name(8))
    } else {
        format!("[{}, #{off}]", base.name(8))
    }
}

/// The mnemonic of a single load or store: `ldtrb`, `ldurh`, `str`, ...
pub fn mnemonic(store: bool, form: Form, width: u32) -> String {
    let op = if store { "st" } else { "ld" };
    let form = match form {
        Form::User => "tr",
        Form::Scaled => "r",
        Form::Unscaled => "ur",
    };
    let size = match width {
        1 => "b",
        2 => "h",
        4 | 8 => "",
        w => unreachable!("no {w}-byte single access on aarch64"),
    };
    format!("{op}{form}{size}")
}

fn shifted_imm(imm: u32) -> String {
    if imm >= 1 << 12 {
        format!("#{}, lsl #12", imm >> 12)
    } else {
        format!("#{imm}")
    }
}

/// The GNU as text of one instruction.
pub fn print_inst(inst: &Inst) -> String {
    match inst {
        Inst::Label(l) => format!("{l}:"),
        Inst::Comment(c) => format!("\t/* {c} */"),
        Inst::Load {
            width,
            form,
            rt,
            base,
            off,
        } => format!(
            "\t{}\t{}, {}",
            mnemonic(false, *form, *width),
            rt.name(*width),
            mem_text(*base, *off)
        ),
        Inst::Store {
            width,
            form,
            rt,
            base,
            off,
        } => format!(
            "\t{}\t{}, {}",
            mnemonic(true, *form, *width),
            rt.name(*width),
            mem_text(*base, *off)
        ),
        Inst::Ldp { rt, rt2, base, off } => format!(
            "\tldp\t{}, {}, {}",
            rt.name(8),
            rt2.name(8),
            mem_text(*base, *off)
        ),
        Inst::Stp { rt, rt2, base, off } => format!(
            "\tstp\t{}, {}, {}",
            rt.name(8),
            rt2.name(8),
            mem_text(*base, *off)
        ),
        Inst::AddImm { rd, rn, imm } => {
            format!(
                "\tadd\t{}, {}, {}",
                rd.name(8),
                rn.name(8),
                shifted_imm(*imm)
            )
        }
        Inst::SubImm { rd, rn, imm } => {
            format!(
                "\tsub\t{}, {}, {}",
                rd.name(8),
                rn.name(8),
                shifted_imm(*imm)
            )
        }
        Inst::SubsImm { rd, rn, imm } => {
            format!(
                "\tsubs\t{}, {}, {}",
                rd.name(8),
                rn.name(8),
                shifted_imm(*imm)
            )
        }
        Inst::Alu { op, rd, rn, rm } => format!(
            "\t{}\t{}, {}, {}",
            op.name(),
            rd.name(8),
            rn.name(8),
            rm.name(8)
        ),
        Inst::AndImm { rd, rn, mask } => {
            format!("\tand\t{}, {}, #{mask:#x}", rd.name(8), rn.name(8))
        }
        Inst::CmpImm { rn, imm } => format!("\tcmp\t{}, {}", rn.name(8), shifted_imm(*imm)),
        Inst::CmpReg { rn, rm } => format!("\tcmp\t{}, {}", rn.name(8), rm.name(8)),
        Inst::TstImm { rn, mask } => format!("\ttst\t{}, #{mask:#x}", rn.name(8)),
        Inst::Movz { rd, imm, shift: 0 } => format!("\tmovz\t{}, #{imm}", rd.name(8)),
        Inst::Movz { rd, imm, shift } => {
            format!("\tmovz\t{}, #{imm}, lsl #{shift}", rd.name(8))
        }
        Inst::Movk { rd, imm, shift } => {
            format!("\tmovk\t{}, #{imm}, lsl #{shift}", rd.name(8))
        }
        Inst::MovReg { rd, rm } => format!("\tmov\t{}, {}", rd.name(8), rm.name(8)),
        Inst::B { cc: None, target } => format!("\tb\t{target}"),
        Inst::B {
            cc: Some(c),
            target,
        } => format!("\tb.{}\t{target}", c.name()),
        Inst::Prfm { op, base, off } => {
            let m = if offset_fits(Form::Scaled, 8, *off as i64) {
                "prfm"
            } else {
                "prfum"
            };
            format!("\t{m}\t{}, {}", op.name(), mem_text(*base, *off))
        }
        Inst::Ret => "\tret".to_string(),
    }
}

/// Print one routine for GNU as. Both flavours print the same
/// instructions; the templates differ in the macros around them.
pub fn print(lines: &[Line], _flavor: Flavor) -> super::Function {
    super::print_lines(lines, print_inst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_by_form() {
        assert!(offset_fits(Form::User, 8, 255));
        assert!(!offset_fits(Form::User, 8, 256));
        assert!(offset_fits(Form::User, 8, -256));
        assert!(offset_fits(Form::Scaled, 8, 32760));
        assert!(!offset_fits(Form::Scaled, 8, 32768));
        assert!(!offset_fits(Form::Scaled, 8, 4));
        assert!(!offset_fits(Form::Scaled, 8, -8));
        assert!(pair_offset_fits(504) && pair_offset_fits(-512));
        assert!(!pair_offset_fits(512) && !pair_offset_fits(12));
        assert!(arith_imm(4095) && arith_imm(4096) && arith_imm(0xfff000));
        assert!(!arith_imm(4097) && !arith_imm(0x1000000));
    }

    #[test]
    fn mnemonics() {
        assert_eq!(mnemonic(false, Form::User, 1), "ldtrb");
        assert_eq!(mnemonic(true, Form::User, 8), "sttr");
        assert_eq!(mnemonic(false, Form::Unscaled, 2), "ldurh");
        assert_eq!(mnemonic(true, Form::Scaled, 4), "str");
    }
}
