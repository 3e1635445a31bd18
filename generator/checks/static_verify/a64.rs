//! AArch64 (A64) for the static checker: `yaxpeax-arm` decodes, this file
//! turns each instruction into the checker's arch-neutral facts ([`Insn`])
//! and gives its effect on the abstract state ([`transfer`]).
//!
//! The checker tracks 16 registers; A64 has 31 and sp. Each gets a slot:
//!
//! | slot  | registers | why                                                   |
//! |-------|-----------|-------------------------------------------------------|
//! | 0-9   | x0-x9     | arguments, the copy body's first scratch registers    |
//! | 10    | x10-x15   | more scratch, caller-saved: one slot, values are data |
//! | 11    | x18-x29   | platform and callee-saved: any write is a clobber     |
//! | 12-13 | x16, x17  | the backend's address and immediate temporaries       |
//! | 14    | x30 (lr)  | `ret` returns through it: it must be the entry value  |
//! | 15    | sp        |                                                       |
//!
//! | instruction                          | effect tracked                           |
//! |--------------------------------------|------------------------------------------|
//! | `mov` (`orr rd, xzr, rm`), `movz`/`movk`/`movn` | copies the value / a constant |
//! | `add`/`sub rd, rn, #k or rm`          | pointer ± offset, length ± k, constants  |
//! | `and rd, ptr, #k`                     | still derived from the pointer           |
//! | `cmp rn, #k` / `cmp rn, rm` (rm = k), `subs rd, rn, #k`, `tst rn, rn` | the length check a branch refines |
//! | loads/stores, pairs, pre/post-index   | base writeback; `sp`-relative slots      |
//! | `ret` (x30)                           | return; `bl`/`blr`: a call (x0-x17, lr clobbered) |

use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction, Opcode, Operand, ShiftStyle, SizeCode};

use std::ops::Range;
use std::rc::Rc;

use super::abi::AbiSpec;
use super::domain::{add_val, Cmp, State, Val, STACK};
use super::isa::{
    call_escape, trap_escape, CondCode, Flow, Insn, Isa, MemKind, MemOperand, Semantics, Touch,
};
use crate::checks::objfile::{Loc, ObjectFile, RelocTarget};

pub(super) const LR: usize = 14;
/// Slots that stand for several registers (x10-x15, x18-x29).
const SHARED: [usize; 2] = [10, 11];
pub(super) const SP: usize = 15;

/// A64 (AArch64 state), ARMv8.0.
pub(super) struct A64;

impl Isa for A64 {
    fn decode(
        &self,
        obj: &ObjectFile,
        section: &str,
        range: Range<u64>,
        addr_of: &dyn Fn(&Loc) -> Option<u64>,
        _abi: &AbiSpec,
    ) -> Vec<Insn> {
        decode(obj, section, range.step_by(4), addr_of)
    }

    fn reg_name(&self, r: usize) -> &'static str {
        reg_name(r)
    }
}

/// The checker's slot of hardware register `r` (31: sp).
pub(super) fn slot(r: u8) -> usize {
    match r {
        0..=9 => r as usize,
        10..=15 => 10,
        16 => 12,
        17 => 13,
        30 => LR,
        31 => SP,
        _ => 11,
    }
}

pub(super) fn reg_name(r: usize) -> &'static str {
    const NAMES: [&str; 16] = [
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10-x15", "x18-x29", "x16",
        "x17", "x30 (lr)", "sp",
    ];
    NAMES[r]
}

/// A general register operand: its slot, `None` for the zero register.
fn gpr(op: &Operand) -> Option<Option<usize>> {
    match op {
        Operand::Register(_, 31) => Some(None),
        Operand::Register(_, r) | Operand::RegisterOrSP(_, r) | Operand::RegisterPair(_, r) => {
            Some(Some(slot(*r as u8)))
        }
        _ => None,
    }
}

fn reg_bytes(op: &Operand) -> usize {
    match op {
        Operand::Register(SizeCode::W, _) | Operand::RegisterOrSP(SizeCode::W, _) => 4,
        _ => 8,
    }
}

fn is_vector(op: &Operand) -> bool {
    matches!(
        op,
        Operand::SIMDRegister(..)
            | Operand::SIMDRegisterElements(..)
            | Operand::SIMDRegisterElementsLane(..)
            | Operand::SIMDRegisterElementsMultipleLane(..)
            | Operand::SIMDRegisterGroup(..)
            | Operand::SIMDRegisterGroupLane(..)
            | Operand::ImmediateDouble(_)
    )
}

/// What kind of memory access an opcode makes, and bytes per register
/// (`None`: the register's size).
fn access(op: Opcode) -> Option<(MemKind, Option<usize>, bool)> {
    use Opcode::*;
    // (kind, size, pair)
    Some(match op {
        LDRB | LDURB | LDTRB | LDRSB | LDURSB | LDTRSB | LDARB | LDAXRB | LDXRB => {
            (MemKind::Load, Some(1), false)
        }
        LDRH | LDURH | LDTRH | LDRSH | LDURSH | LDTRSH | LDARH | LDAXRH | LDXRH => {
            (MemKind::Load, Some(2), false)
        }
        LDRSW | LDURSW | LDTRSW => (MemKind::Load, Some(4), false),
        LDR | LDUR | LDTR | LDAR | LDAXR | LDXR => (MemKind::Load, None, false),
        LDP | LDNP | LDPSW | LDXP | LDAXP => (MemKind::Load, None, true),
        STRB | STURB | STTRB | STLRB | STXRB | STLXRB => (MemKind::Store, Some(1), false),
        STRH | STURH | STTRH | STLRH | STXRH | STLXRH => (MemKind::Store, Some(2), false),
        STR | STUR | STTR | STLR | STXR | STLXR => (MemKind::Store, None, false),
        STP | STNP | STXP | STLXP => (MemKind::Store, None, true),
        PRFM | PRFUM => (MemKind::Prefetch, Some(1), false),
        _ => return None,
    })
}

/// The addressing operand: (base slot, index slot, displacement, pre-index,
/// writeback).
fn address(ins: &Instruction) -> Option<(usize, Option<usize>, i64, bool, bool)> {
    ins.operands.iter().find_map(|o| match o {
        Operand::RegPreIndex(b, off, wb) => Some((slot(*b as u8), None, *off as i64, true, *wb)),
        Operand::RegPostIndex(b, off) => Some((slot(*b as u8), None, *off as i64, false, true)),
        Operand::RegPostIndexReg(b, _) => Some((slot(*b as u8), None, 0, false, true)),
        Operand::RegRegOffset(b, i, ..) => {
            Some((slot(*b as u8), Some(slot(*i as u8)), 0, true, false))
        }
        _ => None,
    })
}

fn cc(code: u8) -> CondCode {
    match code {
        0 => CondCode::Eq,
        1 => CondCode::Ne,
        2 => CondCode::Hs,
        3 => CondCode::Lo,
        8 => CondCode::Hi,
        9 => CondCode::Ls,
        10 => CondCode::Ge,
        11 => CondCode::Lt,
        12 => CondCode::Gt,
        13 => CondCode::Le,
        _ => CondCode::Other,
    }
}

fn operands(ins: &Instruction) -> impl Iterator<Item = &Operand> {
    ins.operands
        .iter()
        .filter(|o| !matches!(o, Operand::Nothing))
}

/// Decode the words at `offsets` of `section` into the checker's
/// instructions; `addr_of` maps a place to the function's address space.
fn decode(
    obj: &ObjectFile,
    section: &str,
    offsets: impl Iterator<Item = u64>,
    addr_of: &dyn Fn(&Loc) -> Option<u64>,
) -> Vec<Insn> {
    let decoder = InstDecoder::default();
    let mut out = Vec::new();
    let Some(bytes) = obj.code.get(section) else {
        return out;
    };
    for o in offsets {
        let Some(word) = bytes.get(o as usize..o as usize + 4) else {
            break;
        };
        let loc = Loc {
            section: section.to_string(),
            offset: o,
        };
        let Some(addr) = addr_of(&loc) else { continue };
        let mut reader = U8Reader::new(word);
        let ins = match decoder.decode(&mut reader) {
            Ok(i) => i,
            Err(_) => {
                out.push(undecodable(addr, loc, word));
                continue;
            }
        };
        let text = ins.to_string();
        let ops: Vec<Operand> = operands(&ins).copied().collect();
        // Branch targets: relative to this instruction; a relocation
        // names the place the encoded offset counts from.
        let target = |delta: i64| {
            let to = match obj.code_relocs.get(&loc) {
                Some(RelocTarget::Symbol(l)) => Some(Loc {
                    section: l.section.clone(),
                    offset: (l.offset as i64 + delta) as u64,
                }),
                Some(RelocTarget::Undefined(_)) => None,
                None => Some(Loc {
                    section: section.to_string(),
                    offset: (o as i64 + delta) as u64,
                }),
            };
            to.as_ref().and_then(addr_of).unwrap_or(u64::MAX)
        };
        let pc_offset = ops.iter().find_map(|op| match op {
            Operand::PCOffset(d) => Some(*d),
            _ => None,
        });
        let (flow, cond) = match ins.opcode {
            Opcode::B => (Flow::Jump(target(pc_offset.unwrap_or(0))), CondCode::Other),
            Opcode::Bcc(c) => (Flow::CondJump(target(pc_offset.unwrap_or(0))), cc(c)),
            Opcode::CBZ | Opcode::CBNZ | Opcode::TBZ | Opcode::TBNZ => (
                Flow::CondJump(target(pc_offset.unwrap_or(0))),
                CondCode::Other,
            ),
            Opcode::RET if gpr(&ops[0]) == Some(Some(LR)) => (Flow::Return, CondCode::Other),
            Opcode::RET
            | Opcode::BR
            | Opcode::BRAA
            | Opcode::BRAAZ
            | Opcode::BRAB
            | Opcode::BRABZ
            | Opcode::RETAA
            | Opcode::RETAB => (Flow::Indirect, CondCode::Other),
            Opcode::BL | Opcode::BLR => (Flow::Next, CondCode::Other),
            Opcode::UDF | Opcode::BRK | Opcode::HLT => (Flow::Stop, CondCode::Other),
            _ => (Flow::Next, CondCode::Other),
        };

        // Registers: the first operand is the destination of everything
        // but stores, compares (destination xzr) and branches.
        let acc = access(ins.opcode);
        // (operand position, slot, bytes) of each general register.
        let regs: Vec<(usize, Option<usize>, usize)> = ops
            .iter()
            .enumerate()
            .filter_map(|(i, op)| gpr(op).map(|s| (i, s, reg_bytes(op))))
            .collect();
        let mut uses = Vec::new();
        let mut defs = Vec::new();
        let is_store = matches!(acc, Some((MemKind::Store, ..)));
        let is_branch = !matches!(flow, Flow::Next) || matches!(ins.opcode, Opcode::BL);
        let ndefs = match acc {
            Some((MemKind::Load, _, true)) => 2,
            Some((MemKind::Load, ..)) => 1,
            _ if is_store || is_branch => 0,
            _ => 1,
        };
        for &(i, s, bytes) in &regs {
            let Some(s) = s else { continue };
            // Only leading operands are destinations (`fmov s0, w0` reads w0).
            if i < ndefs {
                defs.push((s, bytes));
            } else {
                uses.push((s, bytes));
            }
        }
        if ins.opcode == Opcode::MOVK {
            uses.extend(defs.iter().copied());
        }
        // A load's data derives from neither pointer; anything else
        // computes from what it reads.
        let inputs: Vec<usize> = if acc.is_none() {
            uses.iter().map(|u| u.0).collect()
        } else {
            Vec::new()
        };
        let mut written: Vec<usize> = defs.iter().map(|d| d.0).collect();
        // A write to one register of a shared slot leaves the others: it
        // kills nothing (liveness stays conservative: a later use of any
        // of them keeps the slot's loads alive).
        defs.retain(|d| !SHARED.contains(&d.0));
        // Exclusive stores write their status register first.
        let mut mems = Vec::new();
        if let (Some((kind, size, pair)), Some((base, index, disp, pre, wb))) = (acc, address(&ins))
        {
            let reg = regs.first().map(|r| r.2).unwrap_or(8);
            let size = size.unwrap_or(reg) * if pair { 2 } else { 1 };
            mems.push(MemOperand {
                base: Some(base),
                index,
                disp: if pre { disp } else { 0 },
                size,
                kind,
            });
            uses.push((base, 8));
            if let Some(i) = index {
                uses.push((i, 8));
            }
            if wb {
                written.push(base);
            }
        }
        if matches!(ins.opcode, Opcode::BL | Opcode::BLR) {
            written.push(LR);
        }
        let vector = ops.iter().any(is_vector).then(|| {
            format!("`{text}` uses FP/SIMD state: linux-flavor routines may not touch FP/SIMD registers")
        });
        let prefetch = matches!(acc, Some((MemKind::Prefetch, ..)));
        let touch = match (acc, address(&ins)) {
            (Some((MemKind::Prefetch, ..)), Some((base, index, disp, true, false))) => {
                Some(Touch {
                    dst: None,
                    base: Some(base),
                    disp: index.is_none().then_some(disp),
                    size: 1,
                    prefetch: true,
                })
            }
            (Some((MemKind::Load, _, false)), Some((base, None, disp, true, false))) => {
                Some(Touch {
                    dst: written.first().copied(),
                    base: Some(base),
                    disp: Some(disp),
                    size: mems[0].size,
                    prefetch: false,
                })
            }
            _ => None,
        };
        let width = mems
            .iter()
            .find(|m| m.base != Some(SP))
            .map(|m| m.size)
            .unwrap_or(1);
        let pad = text == "nop";
        let escape = match ins.opcode {
            Opcode::SVC
            | Opcode::HVC
            | Opcode::SMC
            | Opcode::ERET
            | Opcode::ERETAA
            | Opcode::ERETAB
            | Opcode::DRPS
            | Opcode::DCPS1
            | Opcode::DCPS2
            | Opcode::DCPS3 => trap_escape(&text, true),
            Opcode::BRK | Opcode::HLT => trap_escape(&text, false),
            Opcode::BL => {
                let t = target(pc_offset.unwrap_or(0));
                call_escape(&text, (t != u64::MAX).then_some(t))
            }
            Opcode::BLR | Opcode::BLRAA | Opcode::BLRAAZ | Opcode::BLRAB | Opcode::BLRABZ => {
                call_escape(&text, None)
            }
            _ => None,
        };
        out.push(Insn {
            addr,
            loc,
            len: 4,
            text,
            flow,
            cc: cond,
            cond_exec: false,
            fault_moves: Vec::new(),
            uses,
            defs,
            written,
            inputs,
            vector,
            touch,
            width,
            prefetch,
            pad,
            escape,
            mems,
            semantics: Rc::new(ins),
        });
    }
    out
}

/// A word the decoder does not know: stops the path, so the analysis
/// reports what follows as unreachable rather than guessing.
fn undecodable(addr: u64, loc: Loc, word: &[u8]) -> Insn {
    let w = u32::from_le_bytes(word.try_into().expect("4 bytes"));
    Insn {
        addr,
        loc,
        len: 4,
        text: format!(".inst {w:#010x}"),
        semantics: Rc::new(Instruction::default()),
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

/// An immediate or shifted-immediate operand's value.
fn imm(op: &Operand) -> Option<i64> {
    match op {
        Operand::Immediate(k) => Some(*k as i64),
        Operand::Imm64(k) => Some(*k as i64),
        Operand::Imm16(k) => Some(*k as i64),
        Operand::ImmShift(k, s) => Some((*k as i64) << s),
        _ => None,
    }
}

/// The value of a second operand: an immediate, a plain register (xzr: 0).
fn operand_val(op: &Operand, st: &State) -> Val {
    if let Some(k) = imm(op) {
        return Val::konst(k);
    }
    let reg = match op {
        Operand::RegShift(ShiftStyle::LSL, 0, _, r) => Some(*r),
        Operand::Register(_, r) | Operand::RegisterOrSP(_, r) => Some(*r),
        _ => None,
    };
    match (reg, op) {
        (Some(31), Operand::RegisterOrSP(..)) => Val::OTHER,
        (Some(31), _) => Val::konst(0),
        (Some(r), _) => st.regs[slot(r as u8)],
        (None, _) => Val::OTHER,
    }
}

impl Semantics for Instruction {
    fn transfer(&self, insn: &Insn, st: &State, abi: &AbiSpec) -> State {
        transfer(insn, self, st, abi)
    }
}

/// The state after `ins` runs.
fn transfer(insn: &Insn, ins: &Instruction, st: &State, abi: &AbiSpec) -> State {
    let mut s = st.clone();
    // Generic effects first: every written register may now derive from
    // what flowed into it (a load's data is a plain integer).
    let derived = Val::derived(insn.inputs.iter().map(|&r| st.regs[r]));
    for &r in &insn.written {
        if r != SP {
            s.regs[r] = derived;
        } else {
            s.sp = None;
        }
        if s.flags.is_some_and(|c| c.reg == r) {
            s.flags = None;
        }
    }
    let ops: Vec<Operand> = operands(ins).copied().collect();
    let cmp = |reg: usize, imm: i64, test: bool| {
        Some(Cmp {
            reg,
            imm,
            test,
            mask: 0,
            addr: insn.addr,
            via: None,
            full: false,
        })
    };
    let dest = ops.first().and_then(gpr).flatten();
    use Opcode::*;
    match ins.opcode {
        ADDS | SUBS | ANDS | BICS | ADCS | SBCS | CCMP | CCMN => s.flags = None,
        _ => {}
    }
    match ins.opcode {
        MOVZ | MOVN => {
            if let (Some(d), Some(k)) = (dest, ops.get(1).and_then(imm)) {
                let k = if ins.opcode == MOVN { !k } else { k };
                s.regs[d] = Val::konst(k);
            }
        }
        MOVK => {
            if let (Some(d), Some(Operand::ImmShift(k, sh))) = (dest, ops.get(1)) {
                if let Some(c) = st.regs[d].konst_value() {
                    let mask = 0xffffi64 << sh;
                    s.regs[d] = Val::konst((c & !mask) | ((*k as i64) << sh));
                }
            }
        }
        ORR if ops.len() == 3 && gpr(&ops[1]) == Some(None) => {
            // `mov rd, rm`
            if let Some(d) = dest {
                s.regs[d] = operand_val(&ops[2], st);
            }
        }
        ORR | EOR if ops.len() == 3 => {
            if let (Some(d), Some(a), Some(b)) = (
                dest,
                operand_val(&ops[1], st).konst_value(),
                operand_val(&ops[2], st).konst_value(),
            ) {
                s.regs[d] = Val::konst(if ins.opcode == ORR { a | b } else { a ^ b });
            }
        }
        ADD | SUB | SUBS if ops.len() == 3 => {
            let sign = if ins.opcode == ADD { 1 } else { -1 };
            let a = match ops[1] {
                Operand::RegisterOrSP(_, 31) => None,
                ref o => Some(operand_val(o, st)),
            };
            let b = operand_val(&ops[2], st);
            match dest {
                Some(SP) => {
                    s.sp = match (a, b.konst_value()) {
                        (None, Some(k)) => st.sp.map(|sp| sp + sign * k),
                        _ => None,
                    };
                }
                Some(d) => {
                    s.regs[d] = match a {
                        Some(a) => add_val(a, b, sign),
                        // `add rd, sp, #k`: an address on the own stack.
                        None => Val::tagged(STACK, None),
                    };
                }
                None => {}
            }
            if ins.opcode == SUBS {
                let rn = gpr(&ops[1]).flatten();
                match (dest, rn, b.konst_value()) {
                    // `cmp rn, #k` / `cmp rn, rm` with rm holding k.
                    (None, Some(rn), Some(k)) => s.flags = cmp(rn, k, false),
                    // `subs rd, rn, #k`: rd against 0 afterwards.
                    (Some(d), _, Some(_)) if d != SP => s.flags = cmp(d, 0, false),
                    _ => {}
                }
            }
        }
        ANDS if ops.len() == 3 && dest.is_none() => {
            // `tst rn, rn`
            let rn = gpr(&ops[1]).flatten();
            let rm = match ops[2] {
                Operand::RegShift(ShiftStyle::LSL, 0, _, r) => Some(slot(r as u8)),
                _ => None,
            };
            if let Some(r) = rn.filter(|_| rn == rm) {
                s.flags = cmp(r, 0, true);
            }
        }
        AND if ops.len() == 3 && imm(&ops[2]).is_some() => {
            // A small mask leaves a small integer, whatever it masked;
            // rounding a pointer down keeps it a pointer into the same
            // buffer, with known low bits.
            if let (Some(d), Some(Some(n)), Some(k)) = (dest, gpr(&ops[1]), imm(&ops[2])) {
                let v = st.regs[n];
                s.regs[d] = if (0..1 << 16).contains(&k) {
                    Val::bounded(0, k)
                } else {
                    Val::derived([v]).with_low(v.low.and_zero(!k as u64))
                };
            }
        }
        BL | BLR => {
            // What a call leaves in them is unknown.
            for &r in &abi.clobber {
                s.regs[r] = Val::ANY;
            }
            s.regs[LR] = Val::ANY;
            s.flags = None;
        }
        _ => {}
    }
    // Memory: stack slots through sp, and base writeback.
    if let (Some((kind, _, pair)), Some((base, index, disp, pre, wb))) =
        (access(ins.opcode), address(ins))
    {
        let reg_ops: Vec<(Option<usize>, usize)> = ops
            .iter()
            .filter_map(|op| gpr(op).map(|s| (s, reg_bytes(op))))
            .collect();
        let n = if pair { 2 } else { 1 };
        if base == SP && index.is_none() {
            if let Some(sp) = st.sp {
                let start = if pre { sp + disp } else { sp };
                for (i, (r, bytes)) in reg_ops.iter().take(n).enumerate() {
                    let at = start + (*bytes as i64) * i as i64;
                    match (kind, r) {
                        (MemKind::Load, Some(r)) => {
                            s.regs[*r] = st.stack.get(&at).copied().unwrap_or(Val::ANY)
                        }
                        (MemKind::Store, r) => {
                            let v = r.map(|r| st.regs[r]).unwrap_or(Val::konst(0));
                            s.stack.insert(at, if *bytes == 8 { v } else { Val::OTHER });
                        }
                        _ => {}
                    }
                }
            }
        }
        if wb {
            if base == SP {
                s.sp = st.sp.map(|sp| sp + disp);
            } else {
                s.regs[base] = add_val(st.regs[base], Val::konst(disp), 1);
            }
        }
    }
    s
}
