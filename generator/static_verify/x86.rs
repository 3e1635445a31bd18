//! x86 (x86_64 and i386) for the static checker: iced-x86 decodes, this
//! file turns each instruction into the checker's arch-neutral facts
//! ([`Insn`]) and gives its effect on the abstract state ([`transfer`]).

use iced_x86::{
    ConditionCode, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind,
    Register,
};

use super::{AbiSpec, Cc, Cmp, Flow, Insn, Mem, MemKind, Raw, State, Touch, Val, DST, LEN, SRC};
use crate::checks::objfile::{self, FnSym, Loc, ObjectFile};
use crate::front::strategy::Arch;

pub(super) const RSP: usize = 4;

pub(super) fn reg_name(arch: Arch, r: usize) -> &'static str {
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
        (n < super::NREGS).then_some(n)
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

fn cc(c: ConditionCode) -> Cc {
    match c {
        ConditionCode::e => Cc::Eq,
        ConditionCode::ne => Cc::Ne,
        ConditionCode::ae => Cc::Hs,
        ConditionCode::b => Cc::Lo,
        ConditionCode::a => Cc::Hi,
        ConditionCode::be => Cc::Ls,
        _ => Cc::Other,
    }
}

/// Decode `f` (all in its own section) into the checker's instructions.
pub(super) fn decode(obj: &ObjectFile, f: &FnSym, abi: &AbiSpec) -> Vec<Insn> {
    let mut factory = InstructionInfoFactory::new();
    objfile::decode_x86(obj.arch, obj.bytes_of(f), f.start)
        .into_iter()
        .map(|i| facts(i, &f.section, abi, &mut factory))
        .collect()
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
        .map(|m| Mem {
            base: gpr(m.base()),
            index: gpr(m.index()),
            disp: m.displacement() as i64,
            size: m.memory_size().size(),
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
        .map(|r| format!("uses {r:?}: linux-flavour routines may not touch MMX/SSE/AVX/x87 state"));
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
        FlowControl::Return => (Flow::Return, Cc::Other),
        FlowControl::Interrupt | FlowControl::Exception => (Flow::Stop, Cc::Other),
        FlowControl::UnconditionalBranch => (Flow::Jump(i.near_branch_target()), Cc::Other),
        FlowControl::ConditionalBranch => (
            Flow::CondJump(i.near_branch_target()),
            cc(i.condition_code()),
        ),
        FlowControl::IndirectBranch => (Flow::Indirect, Cc::Other),
        _ => (Flow::Next, Cc::Other),
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
        mems,
        uses,
        defs,
        written,
        vector,
        touch,
        width: i.memory_size().size().max(1),
        prefetch: false,
        raw: Raw::X86(i),
    }
}

/// The state after `i` on its normal path.
pub(super) fn transfer(insn: &Insn, i: &Instruction, st: &State, abi: &AbiSpec) -> State {
    let mut s = st.clone();
    let pw = abi.ptr as usize;
    let reg0 = if i.op_count() > 0 && i.op0_kind() == OpKind::Register {
        gpr(i.op0_register())
    } else {
        None
    };
    let wide0 =
        i.op_count() > 0 && i.op0_kind() == OpKind::Register && i.op0_register().size() == pw;
    let val = |r: Register| gpr(r).map(|g| st.regs[g]).unwrap_or(Val::OTHER);
    let stack_slot = |s: &State| -> Option<i64> {
        (i.memory_base().full_register() == Register::RSP || i.memory_base() == Register::ESP)
            .then_some(())
            .and(s.sp)
            .filter(|_| i.memory_index() == Register::None)
            .map(|sp| sp + displacement(i, abi))
    };

    // Generic effects first: every written GPR loses what it held.
    for &g in &insn.written {
        if g != RSP {
            s.regs[g] = Val::OTHER;
        }
        if s.flags.is_some_and(|c| c.reg == g) {
            s.flags = None;
        }
    }
    if i.rflags_modified() != 0 {
        s.flags = None;
    }

    let m = i.mnemonic();
    match m {
        Mnemonic::Mov if i.op_count() == 2 => match (i.op0_kind(), i.op1_kind()) {
            (OpKind::Register, OpKind::Register) => {
                if let Some(d) = reg0 {
                    s.regs[d] = if wide0 {
                        val(i.op1_register())
                    } else {
                        Val::OTHER
                    };
                }
            }
            (OpKind::Register, OpKind::Memory) => {
                if let (Some(d), Some(slot)) = (reg0, stack_slot(st)) {
                    if wide0 {
                        s.regs[d] = st.stack.get(&slot).copied().unwrap_or(Val::OTHER);
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
            let v = if i.op0_kind() == OpKind::Register {
                val(i.op0_register())
            } else {
                Val::OTHER
            };
            s.sp = st.sp.map(|sp| sp - abi.ptr);
            if let Some(sp) = s.sp {
                s.stack.insert(sp, v);
            }
        }
        Mnemonic::Pop => {
            if let (Some(d), Some(sp)) = (reg0, st.sp) {
                s.regs[d] = st.stack.get(&sp).copied().unwrap_or(Val::OTHER);
            }
            s.sp = st.sp.map(|sp| sp + abi.ptr);
        }
        Mnemonic::Add | Mnemonic::Sub if i.op_count() == 2 && i.op0_kind() == OpKind::Register => {
            let sign = if m == Mnemonic::Add { 1 } else { -1 };
            let Some(d) = reg0 else { return s };
            let imm = matches!(
                i.op1_kind(),
                OpKind::Immediate8
                    | OpKind::Immediate8to32
                    | OpKind::Immediate8to64
                    | OpKind::Immediate32
                    | OpKind::Immediate32to64
            );
            if d == RSP {
                s.sp = if imm {
                    st.sp.map(|sp| sp + sign * imm_of(i, 1))
                } else {
                    None
                };
                return s;
            }
            if !wide0 {
                return s;
            }
            if imm {
                s.regs[d] = super::add_val(st.regs[d], Val::konst(imm_of(i, 1)), sign);
            } else if i.op1_kind() == OpKind::Register {
                let other = val(i.op1_register());
                s.regs[d] = super::add_val(st.regs[d], other, sign);
            }
        }
        Mnemonic::Lea => {
            let Some(d) = reg0 else { return s };
            let (b, x) = (val(i.memory_base()), val(i.memory_index()));
            let disp = displacement(i, abi);
            s.regs[d] = if !wide0 {
                Val::OTHER
            } else if i.memory_index() == Register::None && b.tags == SRC {
                Val::tagged(SRC, b.off.map(|c| c - disp))
            } else if i.memory_index() == Register::None && b.tags == LEN {
                Val::tagged(LEN, b.off.map(|o| o + disp))
            } else if b.is_ptr() && !x.is_ptr() {
                Val::tagged(b.tags & (SRC | DST), None)
            } else if x.is_ptr() && !b.is_ptr() && i.memory_index_scale() == 1 {
                Val::tagged(x.tags & (SRC | DST), None)
            } else {
                Val::OTHER
            };
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
            // The string pointers advance: still the same pointers.
            for r in [6usize, 7] {
                if st.regs[r].is_ptr() {
                    s.regs[r] = Val::tagged(st.regs[r].tags & (SRC | DST), None);
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
                        addr: insn.addr,
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
                    addr: insn.addr,
                });
            }
        }
        _ => {
            // Anything else that moves the stack pointer makes it unknown.
            let writes_sp = insn.written.contains(&RSP);
            if writes_sp && !matches!(i.flow_control(), FlowControl::Call | FlowControl::Return) {
                s.sp = None;
            }
            if i.flow_control() == FlowControl::Call {
                for &r in &abi.clobber {
                    s.regs[r] = Val::OTHER;
                }
            }
        }
    }
    s
}

/// A compare of the length is meaningful at pointer width (or 32 bits).
fn wide_or_32(r: Register, abi: &AbiSpec) -> bool {
    r.size() == abi.ptr as usize || r.size() == 4
}
