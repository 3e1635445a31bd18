//! RISC-V (RV64GC) for the static checker: `raki` decodes (RV64 I, M, A,
//! C, Zicsr: every 16- and 32-bit encoding GNU as makes of a copygen
//! routine), this file turns each instruction into the checker's
//! arch-neutral facts ([`Insn`]) and gives its effect on the abstract
//! state ([`transfer`]). F/D/V instructions do not decode: they stop the
//! path, so code using FP or vector state is reported, never passed.
//!
//! The checker tracks 16 registers; RV64 has 31 and x0. Each gets a slot:
//!
//! | slot  | registers            | why                                                |
//! |-------|----------------------|----------------------------------------------------|
//! | 0-7   | a0-a7                | arguments, the copy body's first scratch registers |
//! | 8     | t0-t4                | more scratch, caller-saved: one slot, values are data |
//! | 9, 10 | t5, t6               | the backend's temporaries (t6: SR_SUM)             |
//! | 11    | gp, tp, s0-s11       | platform and callee-saved: any write is a clobber  |
//! | 14    | ra                   | `ret` returns through it: it must be the entry value |
//! | 15    | sp                   |                                                    |
//!
//! x0 reads as 0 and takes no write. No flags: a conditional branch
//! compares two registers, and when one holds a known constant the branch
//! records that compare for the length refinement, as a `cmp` does
//! elsewhere. `ecall`, `ebreak` and the privileged returns are traps;
//! `jalr` other than `ret` (`jalr x0, 0(ra)`) is an indirect jump or call.

use std::ops::Range;
use std::rc::Rc;

use raki::Decode;

use super::abi::AbiSpec;
use super::domain::{add_val, Cmp, State, Val, STACK};
use super::isa::{
    call_escape, trap_escape, CondCode, Flow, Insn, Isa, MemKind, MemOperand, Semantics, Touch,
};
use crate::checks::objfile::{Loc, ObjectFile, RelocTarget};

mod normalise;
use normalise::{normalise, Alu, Br, Op};

pub(super) const LR: usize = 14;
pub(super) const SP: usize = 15;
/// Slots that stand for several registers (t0-t4; gp, tp, s0-s11).
const SHARED: [usize; 2] = [8, 11];

pub(super) struct Rv64;

impl Isa for Rv64 {
    fn decode(
        &self,
        obj: &ObjectFile,
        section: &str,
        range: Range<u64>,
        addr_of: &dyn Fn(&Loc) -> Option<u64>,
        _abi: &AbiSpec,
    ) -> Vec<Insn> {
        decode(obj, section, range, addr_of)
    }

    fn reg_name(&self, r: usize) -> &'static str {
        const NAMES: [&str; 16] = [
            "a0",
            "a1",
            "a2",
            "a3",
            "a4",
            "a5",
            "a6",
            "a7",
            "t0-t4",
            "t5",
            "t6",
            "gp/tp/s0-s11",
            "(unused)",
            "(unused)",
            "ra",
            "sp",
        ];
        NAMES[r]
    }
}

/// The checker's slot of hardware register `r` (x0 has none).
pub(super) fn slot(r: u8) -> Option<usize> {
    Some(match r {
        0 => return None,
        1 => LR,
        2 => SP,
        10..=17 => r as usize - 10,
        5..=7 | 28 | 29 => 8,
        30 => 9,
        31 => 10,
        _ => 11,
    })
}

/// The slot of the register numbered `r` (for the ABI table).
pub(super) fn abi_slot(r: u8) -> usize {
    slot(r).unwrap_or(11)
}

/// The decoded instruction and what `transfer` needs of it.
#[derive(Debug, Clone, Copy)]
struct Decoded {
    op: Op,
}

fn decode(
    obj: &ObjectFile,
    section: &str,
    range: Range<u64>,
    addr_of: &dyn Fn(&Loc) -> Option<u64>,
) -> Vec<Insn> {
    let mut out = Vec::new();
    let Some(bytes) = obj.code.get(section) else {
        return out;
    };
    let mut o = range.start;
    while o < range.end {
        let Some(half) = bytes.get(o as usize..o as usize + 2) else {
            break;
        };
        let low = u16::from_le_bytes([half[0], half[1]]);
        let len: u64 = if low & 3 == 3 { 4 } else { 2 };
        let loc = Loc {
            section: section.to_string(),
            offset: o,
        };
        let here = o;
        o += len;
        let Some(addr) = addr_of(&loc) else { continue };
        let decoded = if len == 4 {
            match bytes.get(here as usize..here as usize + 4) {
                Some(w) => {
                    u32::from_le_bytes(w.try_into().expect("4 bytes")).decode(raki::Isa::Rv64)
                }
                None => break,
            }
        } else {
            low.decode(raki::Isa::Rv64)
        };
        let raw = if len == 4 {
            bytes
                .get(here as usize..here as usize + 4)
                .map(|w| format!("{:#010x}", u32::from_le_bytes(w.try_into().expect("4"))))
                .unwrap_or_default()
        } else {
            format!("{low:#06x}")
        };
        let Ok(ins) = decoded else {
            out.push(undecodable(addr, loc, len, raw));
            continue;
        };
        let op = normalise(&ins);
        let text = ins.to_string();
        out.push(facts(obj, section, here, addr, loc, len, text, op, addr_of));
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn facts(
    obj: &ObjectFile,
    section: &str,
    offset: u64,
    addr: u64,
    loc: Loc,
    len: u64,
    text: String,
    op: Op,
    addr_of: &dyn Fn(&Loc) -> Option<u64>,
) -> Insn {
    // Branch targets: relative to this instruction; a relocation names
    // the place the encoded offset counts from (GNU as keeps relocations
    // on branches for linker relaxation).
    let target = |delta: i64| {
        let to = match obj.code_relocs.get(&loc) {
            Some(RelocTarget::Symbol(l)) => Some(l.clone()),
            Some(RelocTarget::Undefined(_)) => None,
            None => Some(Loc {
                section: section.to_string(),
                offset: (offset as i64 + delta) as u64,
            }),
        };
        to.as_ref().and_then(addr_of).unwrap_or(u64::MAX)
    };
    let s = |r: u8| slot(r);
    let mut uses: Vec<(usize, usize)> = Vec::new();
    let mut defs: Vec<(usize, usize)> = Vec::new();
    let mut inputs: Vec<usize> = Vec::new();
    let mut mems = Vec::new();
    let mut touch = None;
    let mut flow = Flow::Next;
    let mut cc = CondCode::Other;
    let mut escape = None;
    let mut written_extra = Vec::new();
    let def = |defs: &mut Vec<(usize, usize)>, r: u8| defs.extend(s(r).map(|x| (x, 8)));
    match op {
        Op::Load {
            width,
            rd,
            rs1,
            imm,
        } => {
            uses.extend(s(rs1).map(|x| (x, 8)));
            def(&mut defs, rd);
            mems.push(MemOperand {
                base: s(rs1),
                index: None,
                disp: imm,
                size: width,
                kind: MemKind::Load,
            });
            touch = Some(Touch {
                dst: s(rd),
                base: s(rs1),
                disp: Some(imm),
                size: width,
                prefetch: false,
            });
        }
        Op::Store {
            width,
            rs1,
            rs2,
            imm,
        } => {
            uses.extend(s(rs1).map(|x| (x, 8)));
            uses.extend(s(rs2).map(|x| (x, width)));
            mems.push(MemOperand {
                base: s(rs1),
                index: None,
                disp: imm,
                size: width,
                kind: MemKind::Store,
            });
        }
        Op::Imm { rd, rs1, .. } => {
            uses.extend(s(rs1).map(|x| (x, 8)));
            inputs.extend(s(rs1));
            def(&mut defs, rd);
        }
        Op::Reg { rd, rs1, rs2, .. } => {
            for r in [rs1, rs2] {
                uses.extend(s(r).map(|x| (x, 8)));
                inputs.extend(s(r));
            }
            def(&mut defs, rd);
        }
        Op::Lui { rd, .. } => def(&mut defs, rd),
        Op::Opaque { rd, inputs: ins } => {
            for r in ins {
                uses.extend(s(r).map(|x| (x, 8)));
                inputs.extend(s(r));
            }
            def(&mut defs, rd);
        }
        Op::Branch {
            cc: br,
            rs1,
            rs2,
            off,
        } => {
            for r in [rs1, rs2] {
                uses.extend(s(r).map(|x| (x, 8)));
            }
            flow = Flow::CondJump(target(off));
            cc = branch_cc(br, swapped(rs1, rs2));
        }
        Op::Jal { rd: 0, off } => flow = Flow::Jump(target(off)),
        Op::Jal { rd, off } => {
            def(&mut defs, rd);
            let t = target(off);
            escape = call_escape(&text, (t != u64::MAX).then_some(t));
        }
        Op::Jalr {
            rd: 0,
            rs1: 1,
            imm: 0,
        } => {
            uses.push((LR, 8));
            flow = Flow::Return;
        }
        Op::Jalr { rd: 0, rs1, .. } => {
            uses.extend(s(rs1).map(|x| (x, 8)));
            flow = Flow::Indirect;
        }
        Op::Jalr { rd, rs1, .. } => {
            uses.extend(s(rs1).map(|x| (x, 8)));
            def(&mut defs, rd);
            escape = call_escape(&text, None);
        }
        Op::Trap { syscall } => {
            flow = Flow::Stop;
            escape = trap_escape(&text, syscall);
        }
        Op::Nop => {}
    }
    if matches!(escape, Some(super::isa::Escape::Call(_))) {
        written_extra.push(LR);
    }
    let mut written: Vec<usize> = defs.iter().map(|d| d.0).collect();
    written.extend(written_extra);
    defs.retain(|d| !SHARED.contains(&d.0));
    let width = mems.first().map(|m| m.size).unwrap_or(1);
    Insn {
        addr,
        loc,
        len,
        text,
        semantics: Rc::new(Decoded { op }),
        flow,
        cc,
        cond_exec: false,
        mems,
        uses,
        defs,
        written,
        fault_moves: Vec::new(),
        inputs,
        vector: None,
        touch,
        width,
        prefetch: false,
        pad: op == Op::Nop,
        escape,
    }
}

/// A branch compares its first register with a constant in its second,
/// unless the first is t5 and the second is not: then (as the backend's
/// `bltu t5, a2` for `len > k`) the second is compared.
fn swapped(rs1: u8, rs2: u8) -> bool {
    rs1 == 30 && rs2 != 30 && rs2 != 0
}

fn branch_cc(br: Br, swapped: bool) -> CondCode {
    match (br, swapped) {
        (Br::Eq, _) => CondCode::Eq,
        (Br::Ne, _) => CondCode::Ne,
        (Br::Ltu, false) => CondCode::Lo,
        (Br::Geu, false) => CondCode::Hs,
        (Br::Lt, false) => CondCode::Lt,
        (Br::Ge, false) => CondCode::Ge,
        // k < r: r > k; k >= r: r <= k.
        (Br::Ltu, true) => CondCode::Hi,
        (Br::Geu, true) => CondCode::Ls,
        (Br::Lt, true) => CondCode::Gt,
        (Br::Ge, true) => CondCode::Le,
    }
}

fn undecodable(addr: u64, loc: Loc, len: u64, raw: String) -> Insn {
    Insn {
        addr,
        loc,
        len,
        text: format!(".insn {raw}"),
        semantics: Rc::new(Decoded { op: Op::Nop }),
        flow: Flow::Stop,
        cc: CondCode::Other,
        cond_exec: false,
        fault_moves: Vec::new(),
        mems: Vec::new(),
        uses: Vec::new(),
        defs: Vec::new(),
        written: Vec::new(),
        inputs: Vec::new(),
        vector: None,
        touch: None,
        width: 1,
        prefetch: false,
        pad: false,
        escape: None,
    }
}

impl Semantics for Decoded {
    fn transfer(&self, insn: &Insn, st: &State, abi: &AbiSpec) -> State {
        transfer(insn, self.op, st, abi)
    }
}

/// The value register `r` holds (x0: 0).
fn val(st: &State, r: u8) -> Val {
    match slot(r) {
        None => Val::konst(0),
        Some(SP) => Val::OTHER,
        Some(x) => st.regs[x],
    }
}

fn konst_op(op: Alu, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        Alu::Add => a.wrapping_add(b),
        Alu::AddW => (a as i32).wrapping_add(b as i32) as i64,
        Alu::Sub => a.wrapping_sub(b),
        Alu::And => a & b,
        Alu::Or => a | b,
        Alu::Xor => a ^ b,
        Alu::Sll => a.wrapping_shl((b & 63) as u32),
        Alu::Srl => ((a as u64) >> (b & 63)) as i64,
        Alu::Other => return None,
    })
}

/// `rd = a op b` on values.
fn compute(op: Alu, a: Val, b: Val) -> Val {
    if let (Some(x), Some(y)) = (a.konst_value(), b.konst_value()) {
        if let Some(k) = konst_op(op, x, y) {
            return Val::konst(k);
        }
    }
    match op {
        Alu::Add => add_val(a, b, 1),
        Alu::Sub => add_val(a, b, -1),
        Alu::And => match b.konst_value() {
            // A small mask leaves a small integer; rounding a pointer down
            // keeps it a pointer into the same buffer, with known low bits.
            Some(k) if (0..1 << 16).contains(&k) => Val::bounded(0, k),
            Some(k) => Val::derived([a]).with_low(a.low.and_zero(!k as u64)),
            None => Val::derived([a, b]),
        },
        _ => Val::derived([a, b]),
    }
}

fn transfer(insn: &Insn, op: Op, st: &State, abi: &AbiSpec) -> State {
    let mut s = st.clone();
    let derived = Val::derived(insn.inputs.iter().map(|&r| st.regs[r]));
    for &r in &insn.written {
        if r != SP {
            s.regs[r] = derived;
        } else {
            s.sp = None;
        }
        if s.flags.is_some_and(|c| c.reg == r || c.via == Some(r)) {
            s.flags = None;
        }
    }
    let set = |s: &mut State, rd: u8, v: Val| match slot(rd) {
        // A shared slot stands for several registers: a write to one is
        // no value for the others.
        Some(x) if SHARED.contains(&x) => {}
        Some(SP) => {}
        Some(x) => s.regs[x] = v,
        None => {}
    };
    match op {
        Op::Imm { op, rd, rs1, imm } => {
            if slot(rd) == Some(SP) {
                s.sp = match (slot(rs1), op) {
                    (Some(SP), Alu::Add) => st.sp.map(|sp| sp + imm),
                    _ => None,
                };
            } else if slot(rs1) == Some(SP) && op == Alu::Add {
                set(&mut s, rd, Val::tagged(STACK, None));
            } else {
                set(&mut s, rd, compute(op, val(st, rs1), Val::konst(imm)));
                // `andi t5, a0, 31`: a branch of t5 against zero tests a0's
                // low bits, as x86's `test $31, %edi` does.
                let (from, to) = (slot(rs1), slot(rd));
                if let (Alu::And, Some(r), Some(x)) = (op, from, to) {
                    if (1..1 << 16).contains(&imm) && r != x && r != SP && !SHARED.contains(&x) {
                        s.flags = Some(Cmp {
                            reg: r,
                            imm: 0,
                            test: false,
                            mask: imm as u64,
                            addr: insn.addr,
                            via: Some(x),
                            full: false,
                        });
                    }
                }
            }
        }
        Op::Reg { op, rd, rs1, rs2 } => {
            if slot(rd) == Some(SP) {
                s.sp = None;
            } else {
                set(&mut s, rd, compute(op, val(st, rs1), val(st, rs2)));
            }
        }
        Op::Lui { rd, value } => set(&mut s, rd, Val::konst(value)),
        Op::Branch { rs1, rs2, .. } => {
            let (reg, k) = if swapped(rs1, rs2) {
                (rs2, val(st, rs1))
            } else {
                (rs1, val(st, rs2))
            };
            let masked = st.flags.filter(|c| c.via.is_some() && c.via == slot(reg));
            s.flags = match (slot(reg), k.konst_value()) {
                (_, Some(0)) if masked.is_some() => masked,
                (Some(r), Some(imm)) if r != SP => Some(Cmp {
                    reg: r,
                    imm,
                    test: false,
                    mask: 0,
                    addr: insn.addr,
                    via: None,
                    full: false,
                }),
                _ => None,
            };
        }
        Op::Jal { rd, .. } | Op::Jalr { rd, .. } if rd != 0 => {
            for &r in &abi.clobber {
                s.regs[r] = Val::ANY;
            }
            s.regs[LR] = Val::ANY;
            s.flags = None;
        }
        Op::Load {
            width,
            rd,
            rs1,
            imm,
        } if slot(rs1) == Some(SP) => {
            if let Some(sp) = st.sp {
                let v = st.stack.get(&(sp + imm)).copied().unwrap_or(Val::ANY);
                set(&mut s, rd, if width == 8 { v } else { Val::OTHER });
            }
        }
        Op::Store {
            width,
            rs1,
            rs2,
            imm,
        } if slot(rs1) == Some(SP) => {
            if let Some(sp) = st.sp {
                let v = val(st, rs2);
                s.stack
                    .insert(sp + imm, if width == 8 { v } else { Val::OTHER });
            }
        }
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_branch_conditions() {
        assert_eq!(slot(0), None);
        assert_eq!(slot(10), Some(0));
        assert_eq!(slot(12), Some(2));
        assert_eq!(slot(9), Some(11));
        assert_eq!(slot(27), Some(11));
        assert_eq!(slot(28), Some(8));
        assert_eq!(slot(1), Some(LR));
        // `bltu t5, a2`: len above the bound in t5.
        assert_eq!(branch_cc(Br::Ltu, swapped(30, 12)), CondCode::Hi);
        assert_eq!(branch_cc(Br::Ltu, swapped(12, 30)), CondCode::Lo);
        assert_eq!(branch_cc(Br::Geu, swapped(30, 12)), CondCode::Ls);
    }
}
