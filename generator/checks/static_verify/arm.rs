//! ARMv6 (A32) for the static checker: `unarm` decodes, this file turns
//! each instruction into the checker's arch-neutral facts ([`Insn`]) and
//! gives its effect on the abstract state ([`transfer`]).
//!
//! | instruction                     | effect tracked                                |
//! |---------------------------------|-----------------------------------------------|
//! | `mov rd, rm` / `mov rd, #k`     | copies the value / a constant                 |
//! | `add`/`sub rd, rn, #k or rm`    | pointer ± offset, length ± k, constants       |
//! | `and`/`bic rd, ptr, #k`         | still derived from the pointer                |
//! | `cmp rn, #k` (`cmn`, `cmp rn, ip` holding k), `subs rd, rn, #k`, `tst rn, rn` | the length check a branch refines |
//! | `ldr`/`str` pre/post-indexed    | base writeback; `sp`-relative slots           |
//! | `ldm`/`stm` (ia/ib/da/db, `!`), `push`/`pop` | base writeback; stack slots      |
//! | `bx rm`, `pop {.., pc}`, `mov pc, lr`, `ldm sp!, {.., pc}` | return through the value |
//! | `bl`/`blx`                      | a call: r0-r3, ip, lr clobbered               |
//!
//! Every instruction may be conditional: it runs on the edge where its
//! condition holds (refined like a branch) and is skipped on the other.

use unarm::{
    AddrLdcStc, AddrLdrStr, AddrMiscLoad, Coproc, DefUseArgument, Ins, LdmStmMode, LdrStrOffset,
    MiscLoadOffset, Op2, Op2Imm, Reg, RegList, ShiftImm, ShiftOp, ShiftReg,
};

use std::ops::Range;
use std::rc::Rc;

use super::abi::AbiSpec;
use super::arm_text::text;
use super::domain::{add_val, Cmp, State, Val, STACK};
use super::isa::{
    branch_to, call_escape, trap_escape, CondCode, Flow, Insn, Isa, MemKind, MemOperand, Semantics,
    Touch,
};
use crate::checks::objfile::{Loc, ObjectFile};

pub(super) const SP: usize = 13;
pub(super) const LR: usize = 14;
pub(super) const PC: usize = 15;

/// A32 (ARM state), ARMv6K.
pub(super) struct Arm;

impl Isa for Arm {
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

pub(super) fn reg_name(r: usize) -> &'static str {
    const NAMES: [&str; 16] = [
        "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "ip", "sp", "lr",
        "pc",
    ];
    NAMES[r]
}

fn options() -> unarm::Options {
    unarm::Options {
        version: unarm::Version::V6K,
        ip: true,
        ual: true,
        ..unarm::Options::default()
    }
}

fn cc(c: unarm::Cond) -> CondCode {
    use unarm::Cond as C;
    match c {
        C::Eq => CondCode::Eq,
        C::Ne => CondCode::Ne,
        C::Hs => CondCode::Hs,
        C::Lo => CondCode::Lo,
        C::Hi => CondCode::Hi,
        C::Ls => CondCode::Ls,
        C::Ge => CondCode::Ge,
        C::Lt => CondCode::Lt,
        C::Gt => CondCode::Gt,
        C::Le => CondCode::Le,
        _ => CondCode::Other,
    }
}

fn regs_of(d: unarm::DefsUses) -> Vec<usize> {
    let mut out = Vec::new();
    for a in d {
        match a {
            DefUseArgument::Reg(r) => out.push(r as usize),
            DefUseArgument::RegList(l) => out.extend(l.iter().map(|r| r as usize)),
            _ => {}
        }
    }
    out
}

/// `mov rd, rm`: a plain register operand.
fn plain_reg(op2: &Op2) -> Option<Reg> {
    match op2 {
        Op2::ShiftImm(ShiftImm {
            rm,
            shift_op: ShiftOp::Lsl,
            imm: 0,
        }) => Some(*rm),
        _ => None,
    }
}

fn op2_val(op2: &Op2, st: &State) -> Val {
    match op2 {
        Op2::Imm(Op2Imm { imm, .. }) => Val::konst(*imm as i64),
        _ => match plain_reg(op2) {
            Some(r) => st.regs[r as usize],
            None => shifted(op2, st),
        },
    }
}

/// A shifted register: a bounded value scaled (`lsl`/`lsr` by a constant,
/// what computed jumps index with), anything else derived from it.
fn shifted(op2: &Op2, st: &State) -> Val {
    match op2 {
        Op2::ShiftImm(ShiftImm { rm, shift_op, imm }) => {
            let v = st.regs[*rm as usize];
            match (v.range(), shift_op) {
                (Some((lo, hi)), ShiftOp::Lsl) if lo >= 0 && hi < 1 << 20 && *imm < 8 => {
                    Val::bounded(lo << imm, hi << imm)
                }
                (Some((lo, hi)), ShiftOp::Lsr) if lo >= 0 => Val::bounded(lo >> imm, hi >> imm),
                _ => Val::derived([v]),
            }
        }
        Op2::ShiftReg(ShiftReg { rm, .. }) => Val::derived([st.regs[*rm as usize]]),
        Op2::Imm(_) => op2_val(op2, st),
    }
}

/// Byte offset of the lowest word an `ldm`/`stm` of `n` registers touches.
fn multiple_start(mode: LdmStmMode, n: i64) -> i64 {
    match mode {
        LdmStmMode::Ia => 0,
        LdmStmMode::Ib => 4,
        LdmStmMode::Da => -4 * (n - 1),
        LdmStmMode::Db => -4 * n,
    }
}

fn ldr_str_mem(addr: &AddrLdrStr, size: usize, kind: MemKind) -> MemOperand {
    let (base, index, disp) = match addr {
        AddrLdrStr::Pre { rn, offset, .. } => match offset {
            LdrStrOffset::Imm(k) => (*rn, None, *k as i64),
            LdrStrOffset::Reg { rm, .. } => (*rn, Some(*rm as usize), 0),
        },
        AddrLdrStr::Post(p) => (p.rn, None, 0),
    };
    MemOperand {
        base: Some(base as usize),
        index,
        disp,
        size,
        kind,
    }
}

fn misc_mem(addr: &AddrMiscLoad, size: usize, kind: MemKind) -> MemOperand {
    let (base, index, disp) = match addr {
        AddrMiscLoad::Pre { rn, offset, .. } => match offset {
            MiscLoadOffset::Imm(k) => (*rn, None, *k as i64),
            MiscLoadOffset::Reg { rm, .. } => (*rn, Some(*rm as usize), 0),
        },
        AddrMiscLoad::Post { rn, .. } => (*rn, None, 0),
    };
    MemOperand {
        base: Some(base as usize),
        index,
        disp,
        size,
        kind,
    }
}

fn simple_mem(rn: Reg, disp: i64, size: usize, kind: MemKind) -> MemOperand {
    MemOperand {
        base: Some(rn as usize),
        index: None,
        disp,
        size,
        kind,
    }
}

/// The memory an instruction touches.
fn mems(ins: &Ins) -> Vec<MemOperand> {
    use MemKind::{Load, Other, Prefetch, Store};
    let m = match ins {
        Ins::Ldr { addr, .. } => ldr_str_mem(addr, 4, Load),
        Ins::Ldrb { addr, .. } => ldr_str_mem(addr, 1, Load),
        Ins::Str { addr, .. } => ldr_str_mem(addr, 4, Store),
        Ins::Strb { addr, .. } => ldr_str_mem(addr, 1, Store),
        Ins::Ldrt { addr, .. } => simple_mem(addr.rn, 0, 4, Load),
        Ins::Ldrbt { addr, .. } => simple_mem(addr.rn, 0, 1, Load),
        Ins::Strt { addr, .. } => simple_mem(addr.rn, 0, 4, Store),
        Ins::Strbt { addr, .. } => simple_mem(addr.rn, 0, 1, Store),
        Ins::Ldrh { addr, .. } | Ins::Ldrsh { addr, .. } => misc_mem(addr, 2, Load),
        Ins::Ldrsb { addr, .. } => misc_mem(addr, 1, Load),
        Ins::Ldrd { addr, .. } => misc_mem(addr, 8, Load),
        Ins::Strh { addr, .. } => misc_mem(addr, 2, Store),
        Ins::Strd { addr, .. } => misc_mem(addr, 8, Store),
        Ins::Ldrex { rn, .. } => simple_mem(*rn, 0, 4, Load),
        Ins::Ldrexb { rn, .. } => simple_mem(*rn, 0, 1, Load),
        Ins::Ldrexh { rn, .. } => simple_mem(*rn, 0, 2, Load),
        Ins::Ldrexd { rn, .. } => simple_mem(*rn, 0, 8, Load),
        Ins::Strex { rn, .. } => simple_mem(*rn, 0, 4, Store),
        Ins::Strexb { rn, .. } => simple_mem(*rn, 0, 1, Store),
        Ins::Strexh { rn, .. } => simple_mem(*rn, 0, 2, Store),
        Ins::Strexd { rn, .. } => simple_mem(*rn, 0, 8, Store),
        Ins::Swp { rn, .. } => simple_mem(*rn, 0, 4, Other),
        Ins::Swpb { rn, .. } => simple_mem(*rn, 0, 1, Other),
        Ins::Ldm { mode, rn, regs, .. } => {
            let n = regs.len() as i64;
            simple_mem(*rn, multiple_start(*mode, n), 4 * n as usize, Load)
        }
        Ins::Stm { mode, rn, regs, .. } => {
            let n = regs.len() as i64;
            simple_mem(*rn, multiple_start(*mode, n), 4 * n as usize, Store)
        }
        Ins::Push { regs, .. } => {
            let n = regs.len() as i64;
            simple_mem(Reg::Sp, -4 * n, 4 * n as usize, Store)
        }
        Ins::Pop { regs, .. } => simple_mem(Reg::Sp, 0, 4 * regs.len() as usize, Load),
        Ins::Pld { addr } => ldr_str_mem(addr, 1, Prefetch),
        Ins::Ldc { dest, .. } | Ins::Ldc2 { dest, .. } => simple_mem(ldc_rn(dest), 0, 4, Load),
        Ins::Stc { dest, .. } | Ins::Stc2 { dest, .. } => simple_mem(ldc_rn(dest), 0, 4, Store),
        Ins::VldrF32 { addr, .. } => ldr_str_mem(addr, 4, Load),
        Ins::VldrF64 { addr, .. } => ldr_str_mem(addr, 8, Load),
        Ins::VstrF32 { addr, .. } => ldr_str_mem(addr, 4, Store),
        Ins::VstrF64 { addr, .. } => ldr_str_mem(addr, 8, Store),
        Ins::VldmF32 { rn, regs, .. } => simple_mem(*rn, 0, 4 * regs.len() as usize, Load),
        Ins::VldmF64 { rn, regs, .. } => simple_mem(*rn, 0, 8 * regs.len() as usize, Load),
        Ins::VstmF32 { rn, regs, .. } => simple_mem(*rn, 0, 4 * regs.len() as usize, Store),
        Ins::VstmF64 { rn, regs, .. } => simple_mem(*rn, 0, 8 * regs.len() as usize, Store),
        Ins::VpushF32 { regs, .. } => simple_mem(Reg::Sp, 0, 4 * regs.len() as usize, Store),
        Ins::VpushF64 { regs, .. } => simple_mem(Reg::Sp, 0, 8 * regs.len() as usize, Store),
        Ins::VpopF32 { regs, .. } => simple_mem(Reg::Sp, 0, 4 * regs.len() as usize, Load),
        Ins::VpopF64 { regs, .. } => simple_mem(Reg::Sp, 0, 8 * regs.len() as usize, Load),
        _ => return Vec::new(),
    };
    vec![m]
}

fn ldc_rn(a: &AddrLdcStc) -> Reg {
    a.rn()
}

/// VFP (and, on later cores, NEON) state: the `v*` instructions and the
/// coprocessor forms on cp10/cp11 they are encoded as.
fn uses_vfp(ins: &Ins) -> bool {
    let coproc = match ins {
        Ins::Cdp { coproc, .. }
        | Ins::Cdp2 { coproc, .. }
        | Ins::Ldc { coproc, .. }
        | Ins::Ldc2 { coproc, .. }
        | Ins::Stc { coproc, .. }
        | Ins::Stc2 { coproc, .. }
        | Ins::Mcr { coproc, .. }
        | Ins::Mcr2 { coproc, .. }
        | Ins::Mrc { coproc, .. }
        | Ins::Mrc2 { coproc, .. }
        | Ins::Mcrr { coproc, .. }
        | Ins::Mrrc { coproc, .. } => Some(*coproc),
        _ => None,
    };
    // unarm names every VFP instruction `V...` (VmovF32Reg, Vldm, Vmrs...).
    matches!(coproc, Some(Coproc::P10 | Coproc::P11)) || format!("{ins:?}").starts_with('V')
}

fn is_lr(op2: &Op2) -> bool {
    plain_reg(op2) == Some(Reg::Lr)
}

/// Decode the words at `offsets` of `section` into the checker's
/// instructions; `addr_of` maps a place to the function's address space.
fn decode(
    obj: &ObjectFile,
    section: &str,
    offsets: impl Iterator<Item = u64>,
    addr_of: &dyn Fn(&Loc) -> Option<u64>,
) -> Vec<Insn> {
    let options = options();
    let mut out = Vec::new();
    let Some(bytes) = obj.code.get(section) else {
        return out;
    };
    for o in offsets {
        let Some(word) = bytes.get(o as usize..o as usize + 4) else {
            break;
        };
        let code = u32::from_le_bytes(word.try_into().unwrap());
        let ins = unarm::parse_arm(code, o as u32, &options);
        let loc = Loc {
            section: section.to_string(),
            offset: o,
        };
        let Some(addr) = addr_of(&loc) else { continue };
        let cond = ins.cond();
        let defs = regs_of(ins.defs());
        let flow = match &ins {
            Ins::B { target, .. } => {
                // Relative to this instruction; a relocation names the
                // place the encoded offset counts from.
                let delta = target.addr.wrapping_sub(o as u32) as i32 as i64;
                let to = branch_to(obj, &loc, delta);
                let t = to.as_ref().and_then(addr_of).unwrap_or(u64::MAX);
                if cond == unarm::Cond::Al {
                    Flow::Jump(t)
                } else {
                    Flow::CondJump(t)
                }
            }
            Ins::Bx { rm: Reg::Lr, .. } => Flow::Return,
            Ins::Bx { .. } | Ins::Bxj { .. } => Flow::Indirect,
            Ins::Bl { .. } | Ins::Blx { .. } => Flow::Next,
            Ins::Pop { regs, .. } if regs.contains(Reg::Pc) => Flow::Return,
            Ins::Ldm {
                mode: LdmStmMode::Ia,
                rn: Reg::Sp,
                writeback: true,
                regs,
                ..
            } if regs.contains(Reg::Pc) => Flow::Return,
            Ins::Mov {
                rd: Reg::Pc, op2, ..
            } if is_lr(op2) => Flow::Return,
            Ins::Udf { .. } | Ins::Bkpt { .. } | Ins::Illegal | Ins::Word(_) => Flow::Stop,
            _ if defs.contains(&PC) => Flow::Indirect,
            _ => Flow::Next,
        };
        let cond_exec = cond != unarm::Cond::Al && !matches!(ins, Ins::B { .. });
        let mems = mems(&ins);
        let text = text(&ins, &options);
        let escape = match &ins {
            Ins::Svc { .. } | Ins::Bkpt { .. } => {
                trap_escape(&text, matches!(ins, Ins::Svc { .. }))
            }
            Ins::Bl { target, .. } => {
                let to = branch_to(obj, &loc, target.addr.wrapping_sub(o as u32) as i32 as i64);
                call_escape(&text, to.as_ref().and_then(addr_of))
            }
            Ins::Blx { .. } => call_escape(&text, None),
            _ => None,
        };
        let touch = match &ins {
            Ins::Ldr { rd, addr, .. } | Ins::Ldrb { rd, addr, .. }
                if matches!(
                    addr,
                    AddrLdrStr::Pre {
                        offset: LdrStrOffset::Imm(_),
                        writeback: false,
                        ..
                    }
                ) =>
            {
                let m = mems[0];
                Some(Touch {
                    dst: Some(*rd as usize),
                    base: m.base,
                    disp: Some(m.disp),
                    size: m.size,
                    prefetch: false,
                })
            }
            Ins::Pld { .. } => {
                let m = mems[0];
                Some(Touch {
                    dst: None,
                    base: m.base,
                    disp: m.index.is_none().then_some(m.disp),
                    size: 1,
                    prefetch: true,
                })
            }
            _ => None,
        };
        let width = mems
            .iter()
            .find(|m| m.base != Some(SP))
            .map(|m| m.size)
            .unwrap_or(1);
        out.push(Insn {
            addr,
            loc,
            len: 4,
            text: text.clone(),
            flow,
            cc: cc(cond),
            cond_exec,
            fault_moves: Vec::new(),
            uses: regs_of(ins.uses()).into_iter().map(|r| (r, 8)).collect(),
            // A conditional write may not happen: it kills nothing.
            defs: if cond_exec {
                Vec::new()
            } else {
                defs.iter().map(|&r| (r, 8)).collect()
            },
            // A load's data derives from neither pointer; anything else
            // computes from what it reads.
            inputs: if mems.is_empty() {
                regs_of(ins.uses())
            } else {
                Vec::new()
            },
            written: defs,
            vector: uses_vfp(&ins).then(|| {
                format!("`{text}` uses VFP/NEON state: linux-flavor routines may not touch VFP/NEON registers")
            }),
            touch,
            width,
            prefetch: matches!(ins, Ins::Pld { .. }),
            pad: matches!(ins, Ins::Nop { .. }) || text == "mov r0, r0",
            escape,
            mems,
            semantics: Rc::new(ins),
        });
    }
    out
}

/// `rn` after an access with this offset and indexing,
/// and the `sp`-relative slot it reads or writes.
fn index_effect(
    s: &mut State,
    st: &State,
    rn: Reg,
    off: Val,
    pre: bool,
    writeback: bool,
) -> Option<i64> {
    let base = rn as usize;
    let k = off.konst_value();
    let slot = if base == SP {
        st.sp.zip(k).map(|(sp, k)| if pre { sp + k } else { sp })
    } else {
        None
    };
    if writeback || !pre {
        if base == SP {
            s.sp = st.sp.zip(k).map(|(sp, k)| sp + k);
        } else {
            s.regs[base] = add_val(st.regs[base], off, 1);
        }
    }
    slot
}

/// The value an offset adds (negated when it subtracts).
fn offset_val(st: &State, rm: Reg, subtract: bool) -> Val {
    let v = st.regs[rm as usize];
    match (v.konst_value(), subtract) {
        (Some(k), true) => Val::konst(-k),
        (_, true) => Val::derived([v]),
        _ => v,
    }
}

fn ldr_str_effect(s: &mut State, st: &State, addr: &AddrLdrStr) -> Option<i64> {
    let off = |o: &LdrStrOffset| match *o {
        LdrStrOffset::Imm(k) => Val::konst(k as i64),
        LdrStrOffset::Reg {
            subtract,
            rm,
            imm: 0,
            ..
        } => offset_val(st, rm, subtract),
        LdrStrOffset::Reg { rm, .. } => Val::derived([st.regs[rm as usize]]),
    };
    match addr {
        AddrLdrStr::Pre {
            rn,
            offset,
            writeback,
        } => index_effect(s, st, *rn, off(offset), true, *writeback),
        AddrLdrStr::Post(p) => index_effect(s, st, p.rn, off(&p.offset), false, true),
    }
}

fn misc_effect(s: &mut State, st: &State, addr: &AddrMiscLoad) -> Option<i64> {
    let off = |o: &MiscLoadOffset| match *o {
        MiscLoadOffset::Imm(k) => Val::konst(k as i64),
        MiscLoadOffset::Reg { subtract, rm } => offset_val(st, rm, subtract),
    };
    match addr {
        AddrMiscLoad::Pre {
            rn,
            offset,
            writeback,
        } => index_effect(s, st, *rn, off(offset), true, *writeback),
        AddrMiscLoad::Post { rn, offset } => index_effect(s, st, *rn, off(offset), false, true),
    }
}

/// `ldm`/`stm` (and `push`/`pop`): registers in ascending order at
/// ascending addresses; `sp`-based ones move values through the stack.
fn multiple_effect(
    s: &mut State,
    st: &State,
    rn: Reg,
    mode: LdmStmMode,
    writeback: bool,
    regs: RegList,
    load: bool,
) {
    let n = regs.len() as i64;
    let base = rn as usize;
    if base == SP {
        if let Some(sp) = st.sp {
            let start = sp + multiple_start(mode, n);
            for (i, r) in regs.iter().enumerate() {
                let slot = start + 4 * i as i64;
                if load {
                    s.regs[r as usize] = st.stack.get(&slot).copied().unwrap_or(Val::ANY);
                } else {
                    s.stack.insert(slot, st.regs[r as usize]);
                }
            }
        }
    }
    if writeback {
        let delta = match mode {
            LdmStmMode::Ia | LdmStmMode::Ib => 4 * n,
            LdmStmMode::Da | LdmStmMode::Db => -4 * n,
        };
        if base == SP {
            s.sp = st.sp.map(|sp| sp + delta);
        } else {
            s.regs[base] = add_val(st.regs[base], Val::konst(delta), 1);
        }
    }
}

impl Semantics for Ins {
    fn transfer(&self, insn: &Insn, st: &State, abi: &AbiSpec) -> State {
        transfer(insn, self, st, abi)
    }

    /// `add pc, pc, ip` (and `lsl #k`): a jump into the code that follows,
    /// `pc` reading 8 bytes ahead; the index must be bounded.
    fn targets(&self, insn: &Insn, st: &State) -> Option<Vec<u64>> {
        let Ins::Add {
            rd: Reg::Pc,
            rn: Reg::Pc,
            op2,
            ..
        } = self
        else {
            return None;
        };
        let (lo, hi) = op2_val(op2, st).range()?;
        if lo < 0 || hi > 1 << 16 {
            return None;
        }
        // The low two bits of a value written to pc in ARM state are ignored.
        let mut ts: Vec<u64> = (lo..=hi).map(|v| insn.addr + 8 + (v as u64 & !3)).collect();
        ts.dedup();
        Some(ts)
    }
}

/// The state after `ins` when it runs (the caller refines a conditional
/// instruction's state first).
fn transfer(insn: &Insn, ins: &Ins, st: &State, abi: &AbiSpec) -> State {
    let mut s = st.clone();
    // Generic effects first: every written register may now derive from
    // what flowed into it (a load's data is a plain integer).
    let derived = Val::derived(insn.inputs.iter().map(|&r| st.regs[r]));
    for &r in &insn.written {
        if r != SP {
            s.regs[r] = derived;
        }
        if s.flags.is_some_and(|c| c.reg == r) {
            s.flags = None;
        }
    }
    if ins.updates_condition_flags() {
        s.flags = None;
    }
    let cmp = |reg: Reg, imm: i64, test: bool| {
        Some(Cmp {
            reg: reg as usize,
            imm,
            test,
            mask: 0,
            addr: insn.addr,
            via: None,
            full: false,
        })
    };
    let mask = |reg: Reg, op2: &Op2| match op2 {
        Op2::Imm(Op2Imm { imm, .. }) => Some(Cmp {
            reg: reg as usize,
            imm: 0,
            test: false,
            mask: *imm as u64,
            addr: insn.addr,
            via: None,
            full: false,
        }),
        _ => None,
    };
    match ins {
        Ins::Mov {
            rd, op2, s: sets, ..
        } => {
            if *rd == Reg::Sp {
                s.sp = None;
            } else {
                s.regs[*rd as usize] = op2_val(op2, st);
            }
            if *sets && plain_reg(op2).is_some() {
                s.flags = cmp(*rd, 0, true);
            }
        }
        Ins::Add {
            rd,
            rn,
            op2,
            s: sets,
            ..
        }
        | Ins::Sub {
            rd,
            rn,
            op2,
            s: sets,
            ..
        } => {
            let sign = if matches!(ins, Ins::Add { .. }) {
                1
            } else {
                -1
            };
            let k = op2_val(op2, st);
            if *rd == Reg::Sp {
                s.sp = match (rn, k.konst_value()) {
                    (Reg::Sp, Some(k)) => st.sp.map(|sp| sp + sign * k),
                    _ => None,
                };
            } else if *rn == Reg::Sp {
                s.regs[*rd as usize] = Val::tagged(STACK, None);
            } else {
                s.regs[*rd as usize] = add_val(st.regs[*rn as usize], k, sign);
            }
            // `subs rd, rn, #k` compares rn with k: rd with 0 afterwards.
            if *sets && sign < 0 && k.konst_value().is_some() {
                s.flags = cmp(*rd, 0, false);
            }
        }
        Ins::And {
            rd,
            rn,
            op2: op2 @ Op2::Imm(Op2Imm { imm, .. }),
            s: sets,
            ..
        } => {
            let v = st.regs[*rn as usize];
            s.regs[*rd as usize] = if *imm < 1 << 16 {
                // A small mask leaves a small integer, whatever it masked.
                v.masked(*imm as u64)
            } else {
                Val::derived([v]).with_low(v.low.and_zero(!*imm as u64))
            };
            // `ands ip, r1, #3`: Z says whether r1's low bits are zero.
            if *sets && rd != rn {
                s.flags = mask(*rn, op2);
            }
        }
        Ins::Bic {
            rd,
            rn,
            op2: Op2::Imm(Op2Imm { imm, .. }),
            ..
        } => {
            // Rounding a pointer down keeps it a pointer into the same
            // buffer, with known low bits.
            let v = st.regs[*rn as usize];
            s.regs[*rd as usize] = Val::derived([v]).with_low(v.low.and_zero(*imm as u64));
        }
        Ins::Rsb { rd, rn, op2, .. } => {
            // `rsb ip, ip, #32`: k - value, bounded when the value is.
            s.regs[*rd as usize] = match (
                st.regs[*rn as usize].range(),
                op2_val(op2, st).konst_value(),
            ) {
                (Some((lo, hi)), Some(k)) => Val::bounded(k - hi, k - lo),
                _ => Val::derived([st.regs[*rn as usize], op2_val(op2, st)]),
            };
        }
        Ins::Tst { rn, op2, .. } if matches!(op2, Op2::Imm(_)) => {
            s.flags = mask(*rn, op2);
        }
        Ins::Orr { rd, rn, op2, .. } => {
            if let (Some(a), Some(b)) = (
                st.regs[*rn as usize].konst_value(),
                op2_val(op2, st).konst_value(),
            ) {
                s.regs[*rd as usize] = Val::konst(a | b);
            }
        }
        Ins::Cmp { rn, op2, .. } => {
            s.flags = op2_val(op2, st)
                .konst_value()
                .and_then(|k| cmp(*rn, k, false));
        }
        Ins::Cmn { rn, op2, .. } => {
            // Compares rn with -k, as a 32-bit unsigned value.
            s.flags = op2_val(op2, st)
                .konst_value()
                .and_then(|k| cmp(*rn, (k as u32).wrapping_neg() as i64, false));
        }
        Ins::Tst { rn, op2, .. } if plain_reg(op2) == Some(*rn) => {
            s.flags = cmp(*rn, 0, true);
        }
        Ins::Ldr { rd, addr, .. } => {
            if let Some(slot) = ldr_str_effect(&mut s, st, addr) {
                s.regs[*rd as usize] = st.stack.get(&slot).copied().unwrap_or(Val::ANY);
            }
        }
        Ins::Ldrb { addr, .. } => {
            ldr_str_effect(&mut s, st, addr);
        }
        Ins::Str { rd, addr, .. } | Ins::Strb { rd, addr, .. } => {
            if let Some(slot) = ldr_str_effect(&mut s, st, addr) {
                let v = if matches!(ins, Ins::Str { .. }) {
                    st.regs[*rd as usize]
                } else {
                    Val::OTHER
                };
                s.stack.insert(slot, v);
            }
        }
        Ins::Ldrh { addr, .. }
        | Ins::Ldrsh { addr, .. }
        | Ins::Ldrsb { addr, .. }
        | Ins::Ldrd { addr, .. } => {
            misc_effect(&mut s, st, addr);
        }
        Ins::Strh { addr, .. } | Ins::Strd { addr, .. } => {
            if let Some(slot) = misc_effect(&mut s, st, addr) {
                s.stack.insert(slot, Val::OTHER);
            }
        }
        Ins::Ldm {
            mode,
            rn,
            writeback,
            regs,
            ..
        } => multiple_effect(&mut s, st, *rn, *mode, *writeback, *regs, true),
        Ins::Stm {
            mode,
            rn,
            writeback,
            regs,
            ..
        } => multiple_effect(&mut s, st, *rn, *mode, *writeback, *regs, false),
        Ins::Push { regs, .. } => {
            multiple_effect(&mut s, st, Reg::Sp, LdmStmMode::Db, true, *regs, false)
        }
        Ins::Pop { regs, .. } => {
            multiple_effect(&mut s, st, Reg::Sp, LdmStmMode::Ia, true, *regs, true)
        }
        Ins::Bx { rm, .. } => s.regs[PC] = st.regs[*rm as usize],
        Ins::Bl { .. } | Ins::Blx { .. } => {
            // What a call leaves in them is unknown.
            for &r in &abi.clobber {
                s.regs[r] = Val::ANY;
            }
            s.flags = None;
        }
        _ => {
            if insn.written.contains(&SP) {
                s.sp = None;
            }
        }
    }
    s
}
