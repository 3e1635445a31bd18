//! x86 (x86_64 and i386) for the static checker: iced-x86 decodes, this
//! file turns each instruction into the checker's arch-neutral facts
//! ([`Insn`]) and gives its effect on the abstract state ([`transfer`]).

use iced_x86::{
    ConditionCode, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind,
    Register,
};

use std::ops::Range;
use std::rc::Rc;

use super::abi::{AbiSpec, NREGS};
use super::domain::{add_val, site_sym, Cmp, State, Val, CONST, LEN, OTHER, SRC, STACK};
use super::isa::{
    call_escape, CondCode, Escape, Flow, Insn, Isa, MemKind, MemOperand, Semantics, Touch,
};
use crate::checks::objfile::{self, Loc, ObjectFile, RelocTarget};
use crate::front::strategy::Arch;

pub(super) const RSP: usize = 4;

/// x86_64 or i386.
pub(super) struct X86 {
    pub(super) arch: Arch,
}

impl Isa for X86 {
    fn decode(
        &self,
        obj: &ObjectFile,
        section: &str,
        range: Range<u64>,
        addr_of: &dyn Fn(&Loc) -> Option<u64>,
        abi: &AbiSpec,
    ) -> Vec<Insn> {
        let Some(bytes) = obj.code.get(section) else {
            return Vec::new();
        };
        let Some(bytes) = bytes.get(range.start as usize..range.end as usize) else {
            return Vec::new();
        };
        let mut factory = InstructionInfoFactory::new();
        objfile::decode_x86(self.arch, bytes, range.start)
            .into_iter()
            .map(|i| {
                let escape = escape(obj, &i, section, addr_of);
                let mut insn = facts(i, section, abi, &mut factory);
                insn.flow = relocated_flow(obj, &insn, addr_of);
                insn.escape = escape;
                insn
            })
            .collect()
    }

    fn reg_name(&self, r: usize) -> &'static str {
        reg_name(self.arch, r)
    }
}

/// How `i` leaves the routine: a system call or software interrupt (the
/// linux flavour's `int3` after a `ret` is padding no path reaches, and
/// only a reached one is reported), or a call to code outside the function.
/// `call 1f; 1: pop` (i386 position-independent data) is no call.
fn escape(
    obj: &ObjectFile,
    i: &Instruction,
    section: &str,
    addr_of: &dyn Fn(&Loc) -> Option<u64>,
) -> Option<Escape> {
    let text = || objfile::format_x86(i);
    match i.mnemonic() {
        Mnemonic::Syscall | Mnemonic::Sysenter | Mnemonic::Int | Mnemonic::Into => {
            return Some(Escape::Trap(format!(
                "`{}` is a system call: a copy routine makes none",
                text()
            )));
        }
        Mnemonic::Int1 | Mnemonic::Int3 => {
            return Some(Escape::Trap(format!(
                "`{}` is a software trap: a copy routine never reaches one",
                text()
            )));
        }
        _ => {}
    }
    match i.flow_control() {
        FlowControl::IndirectCall => call_escape(&text(), None),
        FlowControl::Call => {
            if !matches!(
                i.op0_kind(),
                OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
            ) {
                return call_escape(&text(), None);
            }
            let field = Loc {
                section: section.to_string(),
                offset: i.next_ip().saturating_sub(4),
            };
            let target = match obj.code_relocs.get(&field) {
                Some(RelocTarget::Undefined(_)) => None,
                Some(RelocTarget::Symbol(l)) => addr_of(l),
                None if i.near_branch_target() == i.next_ip() => return None,
                None => addr_of(&Loc {
                    section: section.to_string(),
                    offset: i.near_branch_target(),
                }),
            };
            call_escape(&text(), target)
        }
        _ => None,
    }
}

/// A branch whose rel32 is relocated goes where its symbol is: the
/// kernel's `RET` in a return-thunk build is `jmp __x86_return_thunk`, a
/// return; any other symbol outside the function is a tail call out of it.
fn relocated_flow(obj: &ObjectFile, insn: &Insn, addr_of: &dyn Fn(&Loc) -> Option<u64>) -> Flow {
    let (Flow::Jump(_) | Flow::CondJump(_)) = insn.flow else {
        return insn.flow;
    };
    let field = Loc {
        section: insn.loc.section.clone(),
        offset: insn.loc.offset + insn.len - 4,
    };
    let to = match obj.code_relocs.get(&field) {
        None => return insn.flow,
        Some(RelocTarget::Undefined(name)) if name == "__x86_return_thunk" => {
            return Flow::Return;
        }
        Some(RelocTarget::Undefined(_)) => u64::MAX,
        Some(RelocTarget::Symbol(l)) => addr_of(l).unwrap_or(u64::MAX),
    };
    match insn.flow {
        Flow::CondJump(_) => Flow::CondJump(to),
        _ => Flow::Jump(to),
    }
}

fn reg_name(arch: Arch, r: usize) -> &'static str {
    const R64: [&str; 16] = [
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    const R32: [&str; 8] = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"];
    match arch {
        Arch::I386 => R32[r],
        _ => R64[r],
    }
}

fn gpr(r: Register) -> Option<usize> {
    if r.is_gpr() {
        let n = r.full_register().number();
        (n < NREGS).then_some(n)
    } else {
        None
    }
}

/// Register writes that replace the whole value (32/64-bit GPR writes).
fn full_write(r: Register) -> bool {
    r.is_gpr() && r.size() >= 4
}

fn imm_of(i: &Instruction, op: u32) -> i64 {
    let v = i.immediate(op);
    match i.op_kind(op) {
        OpKind::Immediate64 | OpKind::Immediate8to64 | OpKind::Immediate32to64 => v as i64,
        _ => v as u32 as i32 as i64,
    }
}

fn displacement(i: &Instruction, abi: &AbiSpec) -> i64 {
    if abi.ptr == 8 {
        i.memory_displacement64() as i64
    } else {
        i.memory_displacement32() as i32 as i64
    }
}

fn cc(c: ConditionCode) -> CondCode {
    match c {
        ConditionCode::e => CondCode::Eq,
        ConditionCode::ne => CondCode::Ne,
        ConditionCode::ae => CondCode::Hs,
        ConditionCode::b => CondCode::Lo,
        ConditionCode::a => CondCode::Hi,
        ConditionCode::be => CondCode::Ls,
        _ => CondCode::Other,
    }
}

fn facts(
    i: Instruction,
    section: &str,
    abi: &AbiSpec,
    factory: &mut InstructionInfoFactory,
) -> Insn {
    let info = factory.info(&i);
    let read_width = |r: Register| {
        if matches!(r, Register::AH | Register::CH | Register::DH | Register::BH) {
            2
        } else {
            r.size()
        }
    };
    let (mut uses, mut defs, mut written) = (Vec::new(), Vec::new(), Vec::new());
    // What flows into the written registers: the explicit register operands
    // read, and what a conditional or partial write leaves of the old value.
    let mut inputs = Vec::new();
    for n in 0..i.op_count() {
        if i.op_kind(n) != OpKind::Register {
            continue;
        }
        let r = i.op_register(n);
        let read = matches!(
            info.op_access(n),
            OpAccess::Read | OpAccess::CondRead | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        let keeps_old = matches!(info.op_access(n), OpAccess::CondWrite)
            || (info.op_access(n) == OpAccess::Write && !full_write(r));
        if let Some(g) = gpr(r).filter(|_| read || keeps_old) {
            inputs.push(g);
        }
    }
    for u in info.used_registers() {
        let Some(g) = gpr(u.register()) else { continue };
        if matches!(
            u.access(),
            OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite
        ) {
            written.push(g);
        }
        match u.access() {
            OpAccess::Write => {
                // 32-bit writes zero-extend: the whole register.
                let w = if full_write(u.register()) {
                    8
                } else if read_width(u.register()) == 2 && u.register().size() == 1 {
                    0
                } else {
                    u.register().size()
                };
                defs.push((g, w));
            }
            OpAccess::CondWrite => {}
            _ => uses.push((g, read_width(u.register()))),
        }
    }
    let mems = info
        .used_memory()
        .iter()
        .filter(|m| m.access() != OpAccess::NoMemAccess)
        .map(|m| MemOperand {
            base: gpr(m.base()),
            index: gpr(m.index()),
            disp: m.displacement() as i64,
            // String instructions report no size here: their element's.
            size: match m.memory_size().size() {
                0 => i.memory_size().size().max(1),
                n => n,
            },
            kind: match m.access() {
                OpAccess::Read | OpAccess::CondRead => MemKind::Load,
                OpAccess::Write | OpAccess::CondWrite => MemKind::Store,
                _ => MemKind::Other,
            },
        })
        .collect();
    let vector = info
        .used_registers()
        .iter()
        .map(|u| u.register())
        .find(|r| r.is_vector_register() || r.is_mm() || r.is_st() || r.is_k())
        .map(|r| format!("uses {r:?}: linux-flavor routines may not touch MMX/SSE/AVX/x87 state"));
    // A touch load: a plain load into a register (whether its value is dead
    // is for the checker to say).
    let touch = (i.mnemonic() == Mnemonic::Mov
        && i.op0_kind() == OpKind::Register
        && i.op1_kind() == OpKind::Memory
        && i.memory_index() == Register::None)
        .then(|| Touch {
            dst: gpr(i.op0_register()),
            base: gpr(i.memory_base()),
            disp: Some(displacement(&i, abi)),
            size: i.op0_register().size(),
            prefetch: false,
        });
    let (flow, cond) = match i.flow_control() {
        FlowControl::Return => (Flow::Return, CondCode::Other),
        FlowControl::Interrupt | FlowControl::Exception => (Flow::Stop, CondCode::Other),
        FlowControl::UnconditionalBranch => (Flow::Jump(i.near_branch_target()), CondCode::Other),
        FlowControl::ConditionalBranch => (
            Flow::CondJump(i.near_branch_target()),
            cc(i.condition_code()),
        ),
        FlowControl::IndirectBranch => (Flow::Indirect, CondCode::Other),
        _ => (Flow::Next, CondCode::Other),
    };
    Insn {
        addr: i.ip(),
        loc: Loc {
            section: section.to_string(),
            offset: i.ip(),
        },
        len: i.len() as u64,
        text: objfile::format_x86(&i),
        flow,
        cc: cond,
        cond_exec: false,
        fault_moves: if i.has_rep_prefix() || i.has_repe_prefix() || i.has_repne_prefix() {
            written.clone()
        } else {
            Vec::new()
        },
        mems,
        uses,
        defs,
        written,
        inputs,
        vector,
        touch,
        width: i.memory_size().size().max(1),
        prefetch: false,
        pad: matches!(i.mnemonic(), Mnemonic::Nop | Mnemonic::Int3),
        escape: None,
        semantics: Rc::new(i),
    }
}

impl Semantics for Instruction {
    fn transfer(&self, insn: &Insn, st: &State, abi: &AbiSpec) -> State {
        transfer(insn, self, st, abi)
    }
}

/// The state after `i` on its normal path.
fn transfer(insn: &Insn, i: &Instruction, st: &State, abi: &AbiSpec) -> State {
    let mut s = st.clone();
    let pw = abi.ptr as usize;
    // A full write (32-bit writes zero-extend) defines a register's upper
    // half; so does a call, whose clobbers are unknown anyway.
    for &(g, w) in &insn.defs {
        if w == 8 {
            s.upper_undefined &= !(1 << g);
        }
    }
    if i.flow_control() == FlowControl::Call {
        for &r in &abi.clobber {
            s.upper_undefined &= !(1 << r);
        }
    }
    let reg0 = if i.op_count() > 0 && i.op0_kind() == OpKind::Register {
        gpr(i.op0_register())
    } else {
        None
    };
    let wide0 =
        i.op_count() > 0 && i.op0_kind() == OpKind::Register && i.op0_register().size() == pw;
    // x86_64's 32-bit form of the first operand (`%ecx`): it zero-extends.
    let narrow32 = pw == 8
        && i.op_count() > 0
        && i.op0_kind() == OpKind::Register
        && i.op0_register().size() == 4;
    // The stack pointer reads as its place on the stack (`mov %esp, %ebp`
    // makes a frame pointer); its register keeps its entry tag.
    let val = |r: Register| match gpr(r) {
        Some(RSP) => Val::stack(st.sp),
        Some(g) => st.regs[g],
        None => Val::OTHER,
    };
    // The slot a memory operand names: the stack pointer or a frame
    // pointer plus a displacement.
    let stack_slot = |s: &State| -> Option<i64> {
        let base = match gpr(i.memory_base()) {
            Some(RSP) => s.sp,
            Some(g) => s.regs[g].stack_offset(),
            None => None,
        };
        base.filter(|_| i.memory_index() == Register::None)
            .map(|b| b + displacement(i, abi))
    };

    // Generic effects first: every written GPR may now derive from what
    // flowed into it (data from memory is a plain integer).
    let derived = Val::derived(insn.inputs.iter().map(|&g| st.regs[g]));
    for &g in &insn.written {
        if g != RSP {
            s.regs[g] = derived;
        }
        if s.flags.is_some_and(|c| c.reg == g) {
            s.flags = None;
        }
    }
    if i.rflags_modified() != 0 {
        s.flags = None;
    }
    // A stack slot written by anything the match below does not model
    // (`incl -16(%ebp)`) may now derive from what it held and what flowed in.
    if insn.mems.iter().any(|m| m.kind != MemKind::Load) {
        if let Some(slot) = stack_slot(st) {
            let old = st.stack.get(&slot).copied().unwrap_or(Val::ANY);
            let v = Val::derived(insn.inputs.iter().map(|&g| st.regs[g]).chain([old]));
            s.stack.insert(slot, v);
        }
    }

    let m = i.mnemonic();
    match m {
        Mnemonic::Xor | Mnemonic::Sub
            if i.op_count() == 2
                && i.op0_kind() == OpKind::Register
                && i.op1_kind() == OpKind::Register
                && i.op0_register() == i.op1_register() =>
        {
            // The zeroing idiom.
            if let Some(d) = reg0 {
                s.regs[d] = Val::konst(0);
            }
        }
        Mnemonic::Mov if i.op_count() == 2 => match (i.op0_kind(), i.op1_kind()) {
            (OpKind::Register, OpKind::Register) => {
                if reg0 == Some(RSP) {
                    // `mov %ebp, %esp`: back to the frame pointer's place.
                    s.sp = val(i.op1_register()).stack_offset().filter(|_| wide0);
                } else if let Some(d) = reg0 {
                    s.regs[d] = if wide0 {
                        val(i.op1_register())
                    } else if narrow32 {
                        mov32(st, val(i.op1_register()))
                    } else {
                        Val::derived([val(i.op1_register())])
                    };
                }
            }
            (OpKind::Register, k) if is_imm(k) || k == OpKind::Immediate64 => {
                if let Some(d) = reg0.filter(|_| i.op0_register().size() >= 4) {
                    s.regs[d] = Val::konst(imm_of(i, 1));
                }
            }
            (OpKind::Register, OpKind::Memory) => {
                if let (Some(d), Some(slot)) = (reg0, stack_slot(st)) {
                    if wide0 {
                        s.regs[d] = st.stack.get(&slot).copied().unwrap_or(Val::ANY);
                    }
                }
            }
            (OpKind::Memory, _) => {
                if let Some(slot) = stack_slot(st) {
                    let v = if i.op1_kind() == OpKind::Register && i.op1_register().size() == pw {
                        val(i.op1_register())
                    } else {
                        Val::OTHER
                    };
                    s.stack.insert(slot, v);
                }
            }
            _ => {}
        },
        Mnemonic::Push => {
            let v = match i.op0_kind() {
                OpKind::Register => val(i.op0_register()),
                // `pushl 12(%ebp)`: what the slot holds, if known.
                OpKind::Memory => stack_slot(st)
                    .and_then(|slot| st.stack.get(&slot).copied())
                    .unwrap_or(Val::ANY),
                _ => Val::OTHER,
            };
            s.sp = st.sp.map(|sp| sp - abi.ptr);
            if let Some(sp) = s.sp {
                s.stack.insert(sp, v);
            }
        }
        Mnemonic::Leave => {
            // `mov %ebp, %esp; pop %ebp`
            let frame = st.regs[5].stack_offset();
            s.regs[5] = frame
                .and_then(|f| st.stack.get(&f).copied())
                .unwrap_or(Val::ANY);
            s.sp = frame.map(|f| f + abi.ptr);
        }
        Mnemonic::Pop => {
            if let (Some(d), Some(sp)) = (reg0, st.sp) {
                s.regs[d] = st.stack.get(&sp).copied().unwrap_or(Val::ANY);
            }
            s.sp = st.sp.map(|sp| sp + abi.ptr);
        }
        // `inc %rdi` / `dec %rcx`: 6.12's byte loop (`decl %ecx`: 6.1's).
        Mnemonic::Inc | Mnemonic::Dec if i.op0_kind() == OpKind::Register => {
            if let Some(d) = reg0.filter(|&d| d != RSP && i.op0_register().size() >= 4) {
                let sign = if m == Mnemonic::Inc { 1 } else { -1 };
                if let Some(v) = st.regs[d].count_step(sign, st.lb.value) {
                    s.regs[d] = v;
                } else if wide0 {
                    s.regs[d] = add_val(st.regs[d], Val::konst(1), sign);
                } else if pw == 8 {
                    add_const32(&mut s, st, d, sign, insn.addr);
                }
                s.flags = Some(zero_test(d, insn.addr));
            }
        }
        Mnemonic::Add | Mnemonic::Sub if i.op_count() == 2 && i.op0_kind() == OpKind::Register => {
            let sign = if m == Mnemonic::Add { 1 } else { -1 };
            let Some(d) = reg0 else { return s };
            let imm = is_imm(i.op1_kind());
            if d == RSP {
                s.sp = if imm {
                    st.sp.map(|sp| sp + sign * imm_of(i, 1))
                } else {
                    None
                };
                return s;
            }
            if !wide0 {
                if narrow32 {
                    if imm {
                        add_const32(&mut s, st, d, sign * imm_of(i, 1), insn.addr);
                    } else if i.op1_kind() == OpKind::Register {
                        if let Some(v) = add_reg32(st, st.regs[d], val(i.op1_register()), sign) {
                            s.regs[d] = v;
                        }
                    }
                    s.flags = Some(zero_test(d, insn.addr));
                }
                return s;
            }
            if imm {
                s.regs[d] = add_val(st.regs[d], Val::konst(imm_of(i, 1)), sign);
            } else if i.op1_kind() == OpKind::Register {
                let other = val(i.op1_register());
                s.regs[d] = add_val(st.regs[d], other, sign);
            }
        }
        Mnemonic::Lea => {
            let Some(d) = reg0 else { return s };
            let (b, x) = (val(i.memory_base()), val(i.memory_index()));
            let disp = displacement(i, abi);
            if d == RSP {
                // `lea -12(%ebp), %esp`
                s.sp = stack_slot(st).filter(|_| wide0);
                return s;
            }
            let parts = Val::joined_parts(b, x, i.memory_index_scale().trailing_zeros() as u8)
                .filter(|_| i.memory_index() != Register::None)
                .map(|o| Val::tagged(LEN, Some(o + disp)));
            s.regs[d] = if !wide0 {
                // `leal (%rdx,%rcx,8), %edx`: the bytes left, if they fit.
                parts
                    .filter(|v| pw == 8 && st.fits32(v))
                    .map_or(Val::OTHER, |v| mov32(st, v))
            } else if i.memory_index() == Register::None && b.tags == SRC {
                Val::tagged(SRC, b.off.map(|c| c - disp))
            } else if i.memory_index() == Register::None && b.tags == LEN {
                Val::tagged(LEN, b.off.map(|o| o + disp))
            } else if let Some(slot) = stack_slot(st) {
                Val::stack(Some(slot))
            } else if gpr(i.memory_base()) == Some(RSP) {
                Val::tagged(STACK, None)
            } else if i.memory_index() == Register::None {
                add_val(b, Val::konst(disp), 1)
            } else if let Some(v) = parts {
                // `lea (%rax,%rcx,8), %rcx`: the remainder and the count of
                // words a `rep movsq` left, the bytes left.
                v
            } else {
                // Either operand may be the pointer (scaled or not).
                Val::derived([b, x])
            };
        }
        Mnemonic::Xchg
            if i.op0_kind() == OpKind::Register
                && i.op1_kind() == OpKind::Register
                && i.op0_register().size() == pw
                && i.op1_register().size() == pw =>
        {
            if let (Some(a), Some(b)) = (gpr(i.op0_register()), gpr(i.op1_register())) {
                s.regs[a] = st.regs[b];
                s.regs[b] = st.regs[a];
            }
        }
        // `andl %edx, %edx`: the value as it was, and a test of it.
        Mnemonic::And | Mnemonic::Or
            if i.op_count() == 2
                && i.op1_kind() == OpKind::Register
                && i.op0_kind() == OpKind::Register
                && i.op0_register() == i.op1_register()
                && reg0.is_some_and(|d| d != RSP) =>
        {
            if let Some(d) = reg0 {
                s.regs[d] = if wide0 {
                    st.regs[d]
                } else if narrow32 {
                    mov32(st, st.regs[d])
                } else {
                    s.regs[d]
                };
                s.flags = Some(zero_test(d, insn.addr));
            }
        }
        Mnemonic::And if reg0 == Some(RSP) => {
            // Realigning the stack: its place is no longer known.
            s.sp = None;
        }
        // (`shrl` of a length that fits: the same shift.)
        Mnemonic::Shr
            if is_imm(i.op1_kind())
                && (wide0 || (narrow32 && reg0.is_some_and(|d| st.fits32(&st.regs[d])))) =>
        {
            if let Some(d) = reg0 {
                let bits = imm_of(i, 1) as u8;
                s.regs[d] = st.regs[d].shifted_right(bits);
                if bits != 0 {
                    s.flags = Some(zero_test(d, insn.addr));
                }
            }
        }
        Mnemonic::Shl if is_imm(i.op1_kind()) && (wide0 || narrow32) => {
            if let Some(d) = reg0 {
                s.regs[d] = st.regs[d].shifted_left(imm_of(i, 1) as u8);
            }
        }
        Mnemonic::Neg if wide0 => {
            if let Some(d) = reg0 {
                let v = st.regs[d];
                s.regs[d] = Val::derived([v]).with_low(v.low.neg());
            }
        }
        // `negl %ecx` of a bounded integer: modulo 2^32.
        Mnemonic::Neg if narrow32 => {
            if let Some(d) = reg0 {
                let v = st.regs[d];
                if let Some((lo, hi)) = v.range().filter(|&(lo, hi)| lo >= 0 && hi < U32) {
                    let (lo, hi) = if lo == 0 {
                        (0, if hi == 0 { 0 } else { U32 - 1 })
                    } else {
                        (U32 - hi, U32 - lo)
                    };
                    s.regs[d] = Val::bounded(lo, hi).with_low(v.low.neg());
                }
            }
        }
        Mnemonic::And if i.op_count() == 2 && is_imm(i.op1_kind()) => {
            let Some(d) = reg0 else { return s };
            let k = imm_of(i, 1);
            let v = st.regs[d];
            if i.op0_register().size() >= 4 {
                s.flags = Some(zero_test(d, insn.addr));
            }
            s.regs[d] = if (0..1 << 16).contains(&k) {
                // A small mask leaves a small integer, whatever it masked.
                v.masked(k as u64)
            } else if wide0 {
                // Rounding down (`and $-8`) keeps the pointer, now aligned.
                v.rounded_down(k)
            } else {
                Val::derived([v]).with_low(v.low.and_zero(!(k as u64)))
            };
        }
        Mnemonic::Test if i.op0_kind() == OpKind::Register && is_imm(i.op1_kind()) => {
            if let Some(r) = reg0 {
                s.flags = Some(Cmp {
                    reg: r,
                    imm: 0,
                    test: false,
                    mask: imm_of(i, 1) as u64,
                    addr: insn.addr,
                    via: None,
                    full: false,
                });
            }
        }
        Mnemonic::Movsb
        | Mnemonic::Movsw
        | Mnemonic::Movsd
        | Mnemonic::Movsq
        | Mnemonic::Stosb
        | Mnemonic::Stosd
        | Mnemonic::Stosq
            if i.op0_kind() == OpKind::MemoryESEDI || i.op0_kind() == OpKind::MemoryESRDI =>
        {
            // The string pointers advance (a `stos` has no source): still
            // the same pointers. One element moves them by its size; `rep`
            // by the count's elements (what is known of its low bits), and
            // leaves the count zero.
            let rep = i.has_rep_prefix() || i.has_repe_prefix();
            let step = i.memory_size().size() as i64;
            let stos = matches!(m, Mnemonic::Stosb | Mnemonic::Stosd | Mnemonic::Stosq);
            let pointers: &[usize] = if stos { &[7] } else { &[6, 7] };
            for &r in pointers {
                let v = st.regs[r];
                s.regs[r] = if rep {
                    let moved = st.regs[1].low.times(step);
                    Val::derived([v]).with_low(v.low.add_low(moved, 1))
                } else {
                    add_val(v, Val::konst(step), 1)
                };
            }
            if rep {
                s.regs[1] = Val::konst(0);
                // (A `stos` stores no copied bytes: the prefix stays as it
                // was, as a from_user fixup's zeroing of the rest leaves it.)
                let named = st.regs[1]
                    .sym
                    .zip(st.regs[1].range())
                    .filter(|&(_, (lo, _))| {
                        step == 1 && lo >= 0 && st.regs[1].tags & !(CONST | OTHER) == 0
                    });
                if let (false, Some((sym, range))) = (stos, named) {
                    if !s.named_bytes_copied(st, [6, 7], sym, range) {
                        s.stored = None;
                    }
                } else if !stos {
                    s.elements_copied(st, 1, [6, 7], step.trailing_zeros() as u8);
                }
            }
        }
        Mnemonic::Cmp if i.op0_kind() == OpKind::Register && wide_or_32(i.op0_register(), abi) => {
            if let Some(r) = reg0 {
                if i.op1_kind() != OpKind::Register && i.op1_kind() != OpKind::Memory {
                    s.flags = Some(Cmp {
                        reg: r,
                        imm: imm_of(i, 1),
                        test: false,
                        mask: 0,
                        addr: insn.addr,
                        via: None,
                        // (A 32-bit compare of a length that fits reads all of it.)
                        full: i.op0_register().size() == pw || st.fits32(&st.regs[r]),
                    });
                }
            }
        }
        Mnemonic::Test
            if i.op0_kind() == OpKind::Register
                && i.op1_kind() == OpKind::Register
                && i.op0_register() == i.op1_register()
                && wide_or_32(i.op0_register(), abi) =>
        {
            if let Some(r) = reg0 {
                s.flags = Some(Cmp {
                    reg: r,
                    imm: 0,
                    test: true,
                    mask: 0,
                    addr: insn.addr,
                    via: None,
                    full: false,
                });
            }
        }
        _ => {
            // Anything else that moves the stack pointer makes it unknown.
            let writes_sp = insn.written.contains(&RSP);
            if writes_sp && !matches!(i.flow_control(), FlowControl::Call | FlowControl::Return) {
                s.sp = None;
            }
            if i.flow_control() == FlowControl::Call && i.near_branch_target() == i.next_ip() {
                // `call 1f; 1: pop %eax` (i386 has no pc-relative data
                // access): the pushed value is the code address `1f`, a
                // constant of the routine's own image, not a call.
                s.sp = st.sp.map(|sp| sp - abi.ptr);
                if let Some(sp) = s.sp {
                    s.stack.insert(sp, Val::tagged(CONST, None));
                }
            } else if i.flow_control() == FlowControl::Call {
                // What a call leaves in them is unknown.
                for &r in &abi.clobber {
                    s.regs[r] = Val::ANY;
                }
            }
        }
    }
    s
}

/// What a 32-bit write of `v` leaves (x86_64 zero-extends it): a length
/// that fits, as it is; else [`Val::low32`].
fn mov32(st: &State, v: Val) -> Val {
    if st.fits32(&v) {
        Val {
            range: st.len_range(&v),
            ..v
        }
    } else {
        v.low32()
    }
}

/// The flags of an instruction that sets ZF by its result in `d`
/// (`decl %ecx`, `shrl $3, %ecx`, `andl %edx, %edx`): a test of `d`.
fn zero_test(d: usize, addr: u64) -> Cmp {
    Cmp {
        reg: d,
        imm: 0,
        test: true,
        mask: 0,
        addr,
        via: None,
        full: true,
    }
}

/// 2^32: what a 32-bit register's value is taken modulo.
const U32: i64 = 1 << 32;

/// A 32-bit add of the constant `k` to register `d` (x86_64's `subl $8,
/// %ecx`, `decl %ecx`), into `s`: exact for a length that fits before and
/// after; a bounded integer is taken modulo 2^32 (`subl $8` then `negl` of
/// 0..=7 is 8..=1), and one stepped without wrapping keeps what moved by it
/// (a loop counter). Anything else stays what the generic effect left.
fn add_const32(s: &mut State, st: &State, d: usize, k: i64, addr: u64) {
    let v = st.regs[d];
    if let Some(w) = st.len_range(&v).and_then(|r| v.step32(k, r)) {
        s.regs[d] = w;
        return;
    }
    let Some((lo, hi)) = v.range().filter(|&(lo, hi)| lo >= 0 && hi < U32) else {
        return;
    };
    let (lo2, hi2) = (lo + k, hi + k);
    let wrap = lo2.div_euclid(U32);
    if hi2.div_euclid(U32) != wrap {
        return;
    }
    s.regs[d] = Val::bounded(lo2 - wrap * U32, hi2 - wrap * U32).with_low(v.low.add(k));
    if let (0, Some(old)) = (wrap, v.sym) {
        s.sym_stepped(d, old, site_sym(addr, d), k);
    }
}

/// A 32-bit add of register value `b` to `a` (`subl %ecx, %edx`, `addl
/// %ecx, %edx`): a length, or a length moved by a named integer, that is
/// known to stay within 32 bits. A sum of two registers is never negative,
/// so only its ceiling needs the ghost's.
fn add_reg32(st: &State, a: Val, b: Val, sign: i64) -> Option<Val> {
    let w = add_val(a, b, sign);
    if w.tags != LEN {
        return None;
    }
    let fits = match (w.off, w.moved) {
        (Some(o), _) => {
            let ceiling = st.len_max.and_then(|m| m.checked_add(o));
            if let Some(h) = ceiling.filter(|&h| sign > 0 && h < U32) {
                return Some(Val {
                    range: Some((0, h)),
                    ..w
                });
            }
            st.fits32(&w)
        }
        (None, Some(m)) => {
            let (slo, shi) = m.range?;
            let (x, y) = (m.coef * slo, m.coef * shi);
            let lo = st.lb.value + m.off + x.min(y);
            let hi = st.len_max? + m.off + x.max(y);
            lo >= 0 && hi < U32
        }
        _ => false,
    };
    // (A moved length has no range of its own to give.)
    fits.then(|| if w.off.is_some() { mov32(st, w) } else { w })
}

fn is_imm(k: OpKind) -> bool {
    matches!(
        k,
        OpKind::Immediate8
            | OpKind::Immediate8to32
            | OpKind::Immediate8to64
            | OpKind::Immediate32
            | OpKind::Immediate32to64
    )
}

/// A compare of the length is meaningful at pointer width (or 32 bits).
fn wide_or_32(r: Register, abi: &AbiSpec) -> bool {
    r.size() == abi.ptr as usize || r.size() == 4
}
