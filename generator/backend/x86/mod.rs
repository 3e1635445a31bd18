//! The x86 backend shared by i386 and x86_64: instruction selection from
//! [`Op`]s into [`Inst`]s (`inst.rs`), the GNU as (AT&T) printer
//! (`print.rs`), and the per-CPU entry points and resolver (`entry.rs`).
//! The dynasm encoder (`jit`) consumes the same [`Line`]s. What differs
//! between the two architectures — registers, argument passing, saved
//! registers — is an ABI table in `arch/i386.rs` / `arch/x86_64.rs`.

pub mod entry;
mod inst;
mod print;

pub use inst::*;
pub use print::{print, print_inst};

use crate::arch;
use crate::lower::routine::{self, At, Cond, Op, PtrTest, Routine};

/// The machine-check vector (`X86_TRAP_MC` in `<asm/trapnr.h>`).
pub const X86_TRAP_MC: i32 = 18;

/// A selected instruction (see [`super::Line`]).
pub type Line = super::Line<Inst>;

/// An [`arch::Abi`] table with its registers as [`Reg`]s.
#[derive(Debug, Clone)]
pub struct AbiRegs {
    /// 4 or 8: pointer and length width.
    pub ptr_width: u32,
    pub dst: Reg,
    pub src: Reg,
    pub len: Reg,
    pub ret: Reg,
    pub scratch: Vec<Reg>,
    /// Registers saved on entry whatever the routine uses (i386's esi/edi).
    pub always_saved: Vec<Reg>,
    /// How the arguments arrive.
    pub args: ArgRegs,
    table: &'static arch::Abi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgRegs {
    /// In registers (to, from, n) that the prologue moves where they differ
    /// from the body's.
    Regs(Reg, Reg, Reg),
    /// cdecl: on the stack after the return address.
    Stack,
}

impl AbiRegs {
    pub fn new(table: &'static arch::Abi) -> AbiRegs {
        let regs = |v: &[u8]| v.iter().map(|&r| Reg::from_num(r)).collect();
        AbiRegs {
            ptr_width: table.ptr_width,
            dst: Reg::from_num(table.dst),
            src: Reg::from_num(table.src),
            len: Reg::from_num(table.len),
            ret: Reg::from_num(table.ret),
            scratch: regs(table.scratch),
            always_saved: regs(&table.always_saved()),
            args: match table.args {
                arch::Args::Regs([to, from, n]) => {
                    ArgRegs::Regs(Reg::from_num(to), Reg::from_num(from), Reg::from_num(n))
                }
                arch::Args::Stack => ArgRegs::Stack,
            },
            table,
        }
    }

    /// Of the first `used` scratch registers, those the routine must save.
    pub fn saved_scratch(&self, used: usize) -> Vec<Reg> {
        let regs = self.table.saved_scratch(used);
        regs.into_iter().map(Reg::from_num).collect()
    }

    /// Whether a routine never moves the stack pointer.
    pub fn saves_nothing(&self) -> bool {
        self.always_saved.is_empty() && self.table.saved_scratch(self.scratch.len()).is_empty()
    }
}

fn cc(c: Cond) -> Cc {
    match c {
        Cond::Eq => Cc::E,
        Cond::Ne => Cc::Ne,
        Cond::Below => Cc::B,
        Cond::BelowEq => Cc::Be,
        Cond::Above => Cc::A,
        Cond::AboveEq => Cc::Ae,
    }
}

/// Instruction selection: one routine's ops to x86 lines.
pub fn select(r: &Routine, abi: &AbiRegs) -> Vec<Line> {
    let mut s = Selector {
        abi,
        r,
        lines: super::Lines::new(r),
        count_ready: false,
        out_of_line: Vec::new(),
    };
    s.prologue();
    for (i, op) in r.ops.iter().enumerate() {
        if s.count_early(&r.ops[i..]) {
            s.mov(s.pw(), Reg::Cx, abi.len);
            s.count_ready = true;
        }
        s.op(op);
    }
    s.place_out_of_line();
    s.lines.out
}

struct Selector<'a> {
    abi: &'a AbiRegs,
    r: &'a Routine,
    lines: super::Lines<'a, Inst>,
    /// `rcx` already holds `len` for the `rep movsb` ahead (see
    /// [`Selector::count_early`]).
    count_ready: bool,
    /// Out-of-line code placed after the routine's last return, before its
    /// fixups: the narrowing steps of alias guards
    /// ([`Selector::refine_alias`]).
    out_of_line: Vec<Inst>,
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

    fn mov(&mut self, width: u32, dst: Reg, src: Reg) {
        self.emit(Inst::Mov { width, dst, src });
    }

    fn alu_imm(&mut self, op: Alu, width: u32, reg: Reg, imm: i32) {
        self.emit(Inst::AluImm {
            op,
            width,
            reg,
            imm,
            hex: false,
        });
    }

    fn alu(&mut self, op: Alu, width: u32, dst: Reg, src: Reg) {
        self.emit(Inst::AluReg {
            op,
            width,
            dst,
            src,
        });
    }

    fn pw(&self) -> u32 {
        self.abi.ptr_width
    }

    fn scratch(&self, i: u8) -> Reg {
        self.abi.scratch[i as usize]
    }

    fn saved(&self) -> Vec<Reg> {
        let mut v = self.abi.always_saved.clone();
        v.extend(self.abi.saved_scratch(self.lines.scratch_used as usize));
        v
    }

    fn prologue(&mut self) {
        let saved = self.saved();
        for &reg in &saved {
            self.emit(Inst::Push(reg));
        }
        let pw = self.pw();
        match self.abi.args {
            ArgRegs::Regs(to, from, n) => {
                // Order matters only if a target is another's source; the
                // tables never make it so (checked in tests).
                for (dst, src) in [(self.abi.dst, to), (self.abi.src, from)] {
                    if dst != src {
                        self.emit(Inst::Mov {
                            width: pw,
                            dst,
                            src,
                        });
                    }
                }
                if self.r.fixed.is_none() && self.abi.len != n {
                    self.mov(pw, self.abi.len, n);
                }
            }
            ArgRegs::Stack => {
                let base = 4 * (saved.len() as i32 + 1);
                self.emit(Inst::Load {
                    width: 4,
                    reg: self.abi.dst,
                    mem: MemRef::base(Reg::Sp, base),
                });
                self.emit(Inst::Load {
                    width: 4,
                    reg: self.abi.src,
                    mem: MemRef::base(Reg::Sp, base + 4),
                });
                if self.r.fixed.is_none() {
                    self.emit(Inst::Load {
                        width: 4,
                        reg: self.abi.len,
                        mem: MemRef::base(Reg::Sp, base + 8),
                    });
                }
            }
        }
    }

    fn mem(&self, m: routine::Mem) -> MemRef {
        let base = match m.base {
            routine::Ptr::Dst => self.abi.dst,
            routine::Ptr::Src => self.abi.src,
        };
        match m.at {
            At::Start(k) => MemRef::base(base, k as i32),
            At::End(k) => MemRef {
                base,
                index: Some((self.abi.len, 1)),
                disp: -(k as i32),
            },
        }
    }

    fn advance(&mut self, k: u32) {
        let pw = self.pw();
        let (d, s, l) = (self.abi.dst, self.abi.src, self.abi.len);
        self.alu_imm(Alu::Add, pw, s, k as i32);
        self.alu_imm(Alu::Add, pw, d, k as i32);
        self.alu_imm(Alu::Sub, pw, l, k as i32);
    }

    /// The flags hold `test` of an alias guard's `t` (bits k..11 of
    /// `dst - src - lo`, `span` = 2^k): jump out of line when they are zero,
    /// and there to `target` only when `t mod 2^k <= top` (`hi - lo`), back
    /// otherwise.
    fn refine_alias(&mut self, t: Reg, span: u32, top: u32, target: String) {
        let n = self
            .out_of_line
            .iter()
            .filter(|i| matches!(i, Inst::Label(_)))
            .count();
        let narrow = self.label(&format!("alias_narrow{n}"));
        let outside = self.label(&format!("alias_outside{n}"));
        self.emit(Inst::Jcc {
            cc: Cc::E,
            target: narrow.clone(),
        });
        self.emit(Inst::Label(outside.clone()));
        self.out_of_line.extend([
            Inst::Label(narrow),
            Inst::AluImm {
                op: Alu::And,
                width: 4,
                reg: t,
                imm: (span - 1) as i32,
                hex: false,
            },
            Inst::AluImm {
                op: Alu::Cmp,
                width: 4,
                reg: t,
                imm: top as i32,
                hex: false,
            },
            Inst::Jcc { cc: Cc::Be, target },
            Inst::Jmp { target: outside },
        ]);
    }

    /// Place the out-of-line code; nothing falls into it (a jump over it
    /// where the code before it does not end in `ret` or `jmp`).
    fn place_out_of_line(&mut self) {
        if self.out_of_line.is_empty() {
            return;
        }
        let ends = self
            .lines
            .out
            .iter()
            .rev()
            .find(|l| !matches!(l.inst, Inst::Label(_) | Inst::Comment(_)))
            .is_some_and(|l| matches!(l.inst, Inst::Ret | Inst::Jmp { .. }));
        let over = self.label("after_out_of_line");
        if !ends {
            self.emit(Inst::Jmp {
                target: over.clone(),
            });
        }
        for inst in std::mem::take(&mut self.out_of_line) {
            self.emit(inst);
        }
        if !ends {
            self.emit(Inst::Label(over));
        }
    }

    /// Is the length register the string-count register?
    fn len_is_count(&self) -> bool {
        self.abi.len == Reg::Cx
    }

    /// Whether `ops` start a run of guards that falls through to a `rep
    /// movsb`, so that its `mov len, %rcx` goes in front of the guards.
    /// Measured on an AMD EPYC Zen 4 (JIT and GNU as layouts): with the
    /// `mov` between the guard's `jcc` and `rep movsb`, a guarded `rep
    /// movsb` cost about one cycle more per call than a bare one (1.07x
    /// below 128 B) at most code alignments; with the `mov` first, none.
    /// Only where the guards leave `rcx` alone (they use scratch 0), and
    /// harmless to the guarded methods, which do not read `rcx`.
    fn count_early(&self, ops: &[Op]) -> bool {
        if self.count_ready || self.len_is_count() || self.scratch(0) == Reg::Cx {
            return false;
        }
        let is_guard = |op: &Op| matches!(op, Op::JumpIfAlias { .. } | Op::JumpIfPtr { .. });
        if !ops.first().is_some_and(is_guard) {
            return false;
        }
        ops.iter()
            .find(|op| !is_guard(op) && !matches!(op, Op::Comment(_)))
            .is_some_and(|op| matches!(op, Op::RepMovs { unit: 1, .. }))
    }

    fn op(&mut self, op: &Op) {
        let pw = self.pw();
        let abi = self.abi;
        match op {
            Op::Comment(c) => self.emit(Inst::Comment(c.clone())),
            Op::Label(l) => {
                let l = self.label(l);
                self.emit(Inst::Label(l))
            }
            Op::Jump(l) => {
                let target = self.label(l);
                self.emit(Inst::Jmp { target })
            }
            Op::JumpIfLen { cond, imm, target } => {
                let target = self.label(target);
                // A 32-bit compare takes any 32-bit length (its bits as an
                // i32); a 64-bit one sign-extends, so bounds stop at
                // i32::MAX (the strategy validator's `largest_bound`).
                let imm = if pw == 4 {
                    u32::try_from(*imm).expect("validated: i386 bounds fit 32 bits") as i32
                } else {
                    i32::try_from(*imm).expect("validated: x86_64 bounds fit 31 bits")
                };
                if imm == 0 && matches!(cond, Cond::Eq | Cond::Ne) {
                    // Right after `sub $k, len` (an advance, no label
                    // between) the flags already say whether len is 0.
                    let flags_hold_len = matches!(
                        self.lines.out.last(),
                        Some(super::Line {
                            inst: Inst::AluImm { op: Alu::Sub, width, reg, .. },
                            ..
                        }) if *width == pw && *reg == abi.len
                    );
                    if !flags_hold_len {
                        self.alu(Alu::Test, pw, abi.len, abi.len);
                    }
                } else {
                    self.emit(Inst::AluImm {
                        op: Alu::Cmp,
                        width: pw,
                        reg: abi.len,
                        imm,
                        hex: false,
                    });
                }
                self.emit(Inst::Jcc {
                    cc: cc(*cond),
                    target,
                });
            }
            Op::JumpIfAlias { lo, hi, target } => {
                // t = dst - src - lo, whose low 12 bits are
                // ((dst - src) mod 4096 - lo) mod 4096: in the band exactly
                // when that is at most hi - lo (hi < 4096, so a distance
                // below lo wraps above it). The guard sits on every call in
                // front of `rep movsb`, and a microcoded `rep movsb` appears to
                // wait for the branch before it to resolve, so the common
                // path is kept to the shortest dependency chain: the band
                // widened to a power of two, 2^k, needs only bits k..11 of
                // t zero (one `test`, `jz`). A band that is not 2^k wide is
                // then narrowed out of line ([`Selector::refine_alias`]),
                // where only calls in the wider band go. Measured on an AMD
                // EPYC Zen 4 (pointers loaded just before the call, against
                // a bare `rep movsb` below 128 B): `lea; sub; and; cmp; jbe`
                // 1.06-1.07x, the widened `test` 1.00-1.01x.
                let t = self.scratch(0);
                let target = self.label(target);
                let width = *hi - *lo + 1;
                let span = width.next_power_of_two();
                self.mov(4, t, abi.dst);
                self.alu(Alu::Sub, 4, t, abi.src);
                if *lo > 0 {
                    self.alu_imm(Alu::Sub, 4, t, *lo as i32);
                }
                if width >= 4096 {
                    // Every distance: the guard always jumps.
                    self.emit(Inst::Jmp { target });
                } else if span == 4096 {
                    // Wider than half a page: no narrower power of two
                    // holds the band, so the whole test is in line.
                    self.alu_imm(Alu::And, 4, t, 4095);
                    self.alu_imm(Alu::Cmp, 4, t, (*hi - *lo) as i32);
                    self.emit(Inst::Jcc { cc: Cc::Be, target });
                } else {
                    self.alu_imm(Alu::Test, 4, t, (4096 - span) as i32);
                    if span == width {
                        self.emit(Inst::Jcc { cc: Cc::E, target });
                    } else {
                        self.refine_alias(t, span, *hi - *lo, target);
                    }
                }
            }
            Op::JumpIfPtr {
                test,
                mask,
                aligned,
                target,
            } => {
                let target = self.label(target);
                let reg = match test {
                    PtrTest::Dst => abi.dst,
                    PtrTest::Src => abi.src,
                    PtrTest::Both | PtrTest::Congruent => {
                        let t = self.scratch(0);
                        let alu = if *test == PtrTest::Both {
                            Alu::Or
                        } else {
                            Alu::Xor
                        };
                        self.mov(4, t, abi.dst);
                        self.alu(alu, 4, t, abi.src);
                        t
                    }
                };
                self.emit(Inst::AluImm {
                    op: Alu::Test,
                    width: 4,
                    reg,
                    imm: *mask as i32,
                    hex: false,
                });
                self.emit(Inst::Jcc {
                    cc: if *aligned { Cc::E } else { Cc::Ne },
                    target,
                });
            }
            Op::Load(a) => {
                let inst = Inst::Load {
                    width: a.width,
                    reg: self.scratch(a.reg),
                    mem: self.mem(a.mem),
                };
                self.emit_user(inst, &a.user)
            }
            Op::Store(a) => {
                let inst = Inst::Store {
                    width: a.width,
                    reg: self.scratch(a.reg),
                    mem: self.mem(a.mem),
                };
                self.emit_user(inst, &a.user)
            }
            Op::LoadMultiple { .. } | Op::StoreMultiple { .. } => {
                unreachable!("validated: no load/store-multiple on x86")
            }
            Op::Prefetch { kind, at } => {
                let mem = MemRef::base(abi.src, *at as i32);
                self.emit(Inst::Prefetch { kind: *kind, mem })
            }
            Op::Advance(k) => self.advance(*k),
            Op::AdvanceToBoundary { test, to } => {
                // k = ((p + to) & -to) - p, as 6.12's .Llarge_movsq.
                let p = match test {
                    PtrTest::Dst => abi.dst,
                    PtrTest::Src => abi.src,
                    _ => unreachable!("validated: a word aligns dst or src"),
                };
                let k = self.scratch(0);
                self.emit(Inst::Lea {
                    width: pw,
                    dst: k,
                    mem: MemRef::base(p, *to as i32),
                });
                self.alu_imm(Alu::And, pw, k, -(*to as i32));
                self.alu(Alu::Sub, pw, k, p);
                self.alu(Alu::Add, pw, abi.dst, k);
                self.alu(Alu::Add, pw, abi.src, k);
                self.alu(Alu::Sub, pw, abi.len, k);
            }
            Op::SetLen(n) => self.emit(Inst::MovImm {
                width: 4,
                dst: abi.len,
                imm: *n,
            }),
            Op::RepMovs { unit, user } => {
                let unit = *unit;
                if unit == 1 {
                    if !self.len_is_count() && !std::mem::take(&mut self.count_ready) {
                        self.mov(pw, Reg::Cx, abi.len);
                    }
                    self.emit_user(Inst::RepMovs { unit: 1 }, user);
                    return;
                }
                // The rest (len mod unit) waits in `rest_reg` while rep movs
                // runs, and is `len` after it.
                let rest_reg = if self.len_is_count() {
                    self.scratch(0)
                } else {
                    abi.len
                };
                if self.len_is_count() {
                    self.mov(4, rest_reg, Reg::Cx);
                } else {
                    self.mov(pw, Reg::Cx, abi.len);
                }
                self.emit(Inst::Shr {
                    width: pw,
                    reg: Reg::Cx,
                    imm: unit.trailing_zeros() as u8,
                });
                self.alu_imm(Alu::And, 4, rest_reg, unit as i32 - 1);
                self.emit_user(Inst::RepMovs { unit }, user);
                if self.len_is_count() {
                    self.mov(4, Reg::Cx, rest_reg);
                }
            }
            Op::RepRecover { unit } => {
                let unit = *unit;
                match (self.len_is_count(), unit) {
                    (true, 1) => {}
                    (false, 1) => self.mov(pw, abi.len, Reg::Cx),
                    (true, _) => {
                        let rest = self.scratch(0);
                        let mem = MemRef {
                            base: rest,
                            index: Some((Reg::Cx, unit as u8)),
                            disp: 0,
                        };
                        self.emit(Inst::Lea {
                            width: pw,
                            dst: Reg::Cx,
                            mem,
                        })
                    }
                    (false, _) => {
                        let mem = MemRef {
                            base: abi.len,
                            index: Some((Reg::Cx, unit as u8)),
                            disp: 0,
                        };
                        self.emit(Inst::Lea {
                            width: pw,
                            dst: abi.len,
                            mem,
                        })
                    }
                }
            }
            Op::ZeroRest => {
                // rep stosb: rdi = dst (already), rcx = count, al = 0.
                if self.len_is_count() {
                    // Keep len in the (now unused) source register.
                    self.mov(pw, abi.src, Reg::Cx);
                    self.alu(Alu::Xor, 4, Reg::Ax, Reg::Ax);
                    self.emit(Inst::RepStosb);
                    self.mov(pw, Reg::Cx, abi.src);
                } else {
                    self.mov(pw, Reg::Cx, abi.len);
                    self.alu(Alu::Xor, 4, Reg::Ax, Reg::Ax);
                    self.emit(Inst::RepStosb);
                }
            }
            Op::MachineCheckExit {
                target,
                only_before,
            } => {
                let target = self.label(target);
                if let Some(r) = only_before {
                    self.emit(Inst::Cond(Cpp::IfKernelBefore(*r)));
                }
                self.emit(Inst::Comment(
                    "_ASM_EXTABLE_CPY left the trap number in eax: no byte retry after X86_TRAP_MC"
                        .into(),
                ));
                self.emit(Inst::AluImm {
                    op: Alu::Cmp,
                    width: 4,
                    reg: Reg::Ax,
                    imm: X86_TRAP_MC,
                    hex: false,
                });
                self.emit(Inst::Jcc { cc: Cc::E, target });
                if only_before.is_some() {
                    self.emit(Inst::Cond(Cpp::Endif));
                }
            }
            Op::ShiftSetup { .. } | Op::LoadAligned { .. } | Op::Combine { .. } => {
                unreachable!("validated: shift_combine is riscv64's")
            }
            Op::BeginFixups => {
                self.place_out_of_line();
                self.lines.begin_fixups();
            }
            Op::UaccessBegin => self.emit(Inst::Stac),
            Op::UaccessEnd => self.emit(Inst::Clac),
            Op::Return { zero } => {
                if *zero {
                    self.alu(Alu::Xor, 4, abi.ret, abi.ret);
                } else if abi.ret != abi.len {
                    self.mov(pw, abi.ret, abi.len);
                }
                for reg in self.saved().into_iter().rev() {
                    self.emit(Inst::Pop(reg));
                }
                self.emit(Inst::Ret);
            }
        }
    }
}
