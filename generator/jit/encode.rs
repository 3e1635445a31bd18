//! The dynasm printer: the same x86 [`Line`]s the GNU as printer prints
//! (`backend::x86::select`), encoded by dynasm — `.arch x64` for x86_64,
//! `.arch x86` for i386 (encode-only). One arm per [`Inst`], like
//! `x86::print_inst`; nothing here decides what to copy.
//!
//! Some encodings differ from GNU as by construction (the full list is in
//! `tests/jit_encoder.rs`): dynasm gives every memory operand with a
//! dynamic base register a SIB byte and at least a disp8, a REX prefix to
//! every x86_64 instruction with a dynamic register, and it cannot relax
//! branches itself. So every instruction but a branch is re-encoded in GNU
//! as's form ([`super::gas_form`]), and [`plan`] relaxes the branches as GNU
//! as does: the JIT's bytes are the assembler's.

use std::collections::HashMap;

use dynasmrt::relocations::SimpleRelocation;
use dynasmrt::{dynasm, DynamicLabel, DynasmError, DynasmLabelApi, VecAssembler};

use super::gas_form;
use crate::backend::x86::{Alu, Cc, Cpp, Inst, Line, MemRef};
use crate::front::strategy::PrefetchKind;
use crate::kernel::version;

/// Which dynasm `.arch` to encode for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `.arch x64`
    X64,
    /// `.arch x86` (i386; encode-only)
    X86,
}

impl Mode {
    fn bitness(self) -> u32 {
        match self {
            Mode::X64 => 64,
            Mode::X86 => 32,
        }
    }
}

/// A routine ready to encode: labels numbered once, each branch's form
/// chosen. Built by [`plan`].
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    lines: &'a [Line],
    /// Label names by number.
    names: Vec<&'a str>,
    /// Per line: the label it defines (`Inst::Label`) or targets (a
    /// branch); `NONE` otherwise.
    label: Vec<u32>,
    /// Per line: the fixup label of a user access; `NONE` otherwise.
    fixup: Vec<u32>,
    /// Per line: a branch in its rel8 form.
    pub short: Vec<bool>,
    /// Per line: the bytes of an instruction that is neither a label nor a
    /// branch, in GNU as's form, encoded once here for every pass.
    bytes: Vec<Option<Vec<u8>>>,
}

const NONE: u32 = u32::MAX;

/// Where things landed in one encoded routine, relative to its first byte.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Offset of every line (a label or comment has the next insn's offset).
    pub line_offsets: Vec<usize>,
    /// Offset of every label, by the plan's numbering.
    pub label_offsets: Vec<usize>,
    /// Routine length in bytes.
    pub len: usize,
}

impl Layout {
    /// (faulting instruction, fixup) offsets of every user access, in line
    /// order: the routine's exception table.
    pub fn extable(&self, plan: &Plan) -> Vec<(u32, u32)> {
        plan.fixup
            .iter()
            .enumerate()
            .filter(|&(_, &f)| f != NONE)
            .map(|(i, &f)| {
                (
                    self.line_offsets[i] as u32,
                    self.label_offsets[f as usize] as u32,
                )
            })
            .collect()
    }

    /// Offset of the label `name`, if the routine defines it.
    pub fn label(&self, plan: &Plan, name: &str) -> Option<usize> {
        plan.names
            .iter()
            .position(|n| *n == name)
            .map(|i| self.label_offsets[i])
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("dynasm: {0}")]
    Dynasm(#[from] DynasmError),
    #[error("a user access points at the undefined fixup label `{0}`")]
    NoLabel(String),
    #[error("a branch targets the undefined label `{0}`")]
    NoTarget(String),
    #[error("the label `{0}` is defined twice")]
    Duplicate(String),
    #[error(transparent)]
    GasForm(#[from] super::gas_form::GasFormError),
    #[error("cannot encode {0:?} for {1:?}")]
    Unsupported(Inst, Mode),
}

/// Number the labels of `lines` and relax its branches: one dynasm pass
/// with every branch rel32 gives each line's size (only branches depend on
/// the layout); then, on those sizes, every branch starts rel8 and each
/// that does not reach is lengthened, repeatedly, until nothing changes.
pub fn plan(lines: &[Line], mode: Mode) -> Result<Plan<'_>, EncodeError> {
    let mut ids: HashMap<&str, u32> = HashMap::with_capacity(lines.len() / 4);
    let mut names = Vec::new();
    let mut defined = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Inst::Label(l) = &line.inst {
            if ids.insert(l, names.len() as u32).is_some() {
                return Err(EncodeError::Duplicate(l.clone()));
            }
            names.push(l.as_str());
            defined.push(i);
        }
    }
    let mut label = vec![NONE; lines.len()];
    let mut fixup = vec![NONE; lines.len()];
    for (i, line) in lines.iter().enumerate() {
        match &line.inst {
            Inst::Label(l) => label[i] = ids[l.as_str()],
            Inst::Jcc { target, .. } | Inst::Jmp { target } | Inst::Call { target } => {
                label[i] = *ids
                    .get(target.as_str())
                    .ok_or_else(|| EncodeError::NoTarget(target.clone()))?
            }
            _ => {}
        }
        if let Some(entry) = &line.user {
            fixup[i] = *ids
                .get(entry.fixup.as_str())
                .ok_or_else(|| EncodeError::NoLabel(entry.fixup.clone()))?;
        }
    }
    let bytes = lines
        .iter()
        .map(|line| match &line.inst {
            Inst::Label(_)
            | Inst::Comment(_)
            | Inst::Blank
            | Inst::Cond(_)
            | Inst::Jcc { .. }
            | Inst::Jmp { .. }
            | Inst::Call { .. } => Ok(None),
            inst => {
                let mut one = VecAssembler::<SimpleRelocation>::new(0);
                encode_one(&mut one, inst, false, None, mode)?;
                Ok(Some(gas_form::reencode(&one.finalize()?, mode.bitness())?))
            }
        })
        .collect::<Result<Vec<_>, EncodeError>>()?;
    let mut plan = Plan {
        lines,
        names,
        label,
        fixup,
        short: vec![false; lines.len()],
        bytes,
    };

    let mut ops = VecAssembler::<SimpleRelocation>::new(0);
    // Only the sizes matter here: the bytes are dropped unresolved.
    let first = emit(&mut ops, &plan, mode)?;
    let mut sizes: Vec<usize> = first.line_offsets.windows(2).map(|w| w[1] - w[0]).collect();
    sizes.push(first.len - first.line_offsets.last().copied().unwrap_or(0));
    // Start every branch short, as GNU as does, and lengthen each that
    // does not reach until none changes: lengthening only moves points
    // apart, so a branch once long stays long, and the result is GNU as's.
    let long = sizes.clone();
    for (i, line) in lines.iter().enumerate() {
        if matches!(line.inst, Inst::Jcc { .. } | Inst::Jmp { .. }) {
            plan.short[i] = true;
            sizes[i] = 2;
        }
    }
    let mut offsets = vec![0; lines.len()];
    loop {
        let mut at = 0;
        for (o, s) in offsets.iter_mut().zip(&sizes) {
            *o = at;
            at += s;
        }
        let mut changed = false;
        for i in 0..lines.len() {
            if !plan.short[i] {
                continue;
            }
            let to = offsets[defined[plan.label[i] as usize]] as i64;
            // rel8 counts from the end of the 2-byte short form.
            if !(-128..=127).contains(&(to - (offsets[i] as i64 + 2))) {
                plan.short[i] = false;
                sizes[i] = long[i];
                changed = true;
            }
        }
        if !changed {
            return Ok(plan);
        }
    }
}

/// [`plan`], then encode into a byte vector (encode-only).
pub fn encode<'a>(
    lines: &'a [Line],
    mode: Mode,
) -> Result<(Vec<u8>, Layout, Plan<'a>), EncodeError> {
    let plan = plan(lines, mode)?;
    let mut ops = VecAssembler::<SimpleRelocation>::new(0);
    let layout = emit(&mut ops, &plan, mode)?;
    Ok((ops.finalize()?, layout, plan))
}

/// Encode a planned routine at the assembler's current offset. Offsets in
/// the result are relative to where the routine starts.
pub fn emit<A: Asm>(ops: &mut A, plan: &Plan, mode: Mode) -> Result<Layout, EncodeError> {
    let base = ops.offset().0;
    let labels: Vec<DynamicLabel> = plan.names.iter().map(|_| ops.new_label()).collect();
    let mut layout = Layout {
        line_offsets: Vec::with_capacity(plan.lines.len()),
        label_offsets: vec![0; labels.len()],
        len: 0,
    };
    for (i, line) in plan.lines.iter().enumerate() {
        let here = ops.offset().0 - base;
        layout.line_offsets.push(here);
        let label = (plan.label[i] != NONE).then(|| labels[plan.label[i] as usize]);
        if let Inst::Label(_) = line.inst {
            layout.label_offsets[plan.label[i] as usize] = here;
        }
        match &plan.bytes[i] {
            Some(bytes) => ops.extend(bytes),
            // Labels and branches are dynasm's: it resolves them.
            None => encode_one(ops, &line.inst, plan.short[i], label, mode)?,
        }
    }
    layout.len = ops.offset().0 - base;
    Ok(layout)
}

/// One instruction in dynasm's encoding.
fn encode_one<A: Asm>(
    ops: &mut A,
    inst: &Inst,
    short: bool,
    label: Option<DynamicLabel>,
    mode: Mode,
) -> Result<(), EncodeError> {
    match mode {
        Mode::X64 => x64(ops, inst, short, label),
        Mode::X86 => x86(ops, inst, short, label),
    }
}

/// The assemblers the encoder writes into: the executable one (x86_64)
/// and the plain byte vector (relaxation passes, i386).
pub trait Asm: DynasmLabelApi<Relocation = SimpleRelocation> {
    fn new_label(&mut self) -> DynamicLabel;
}

impl Asm for VecAssembler<SimpleRelocation> {
    fn new_label(&mut self) -> DynamicLabel {
        self.new_dynamic_label()
    }
}

impl Asm for dynasmrt::Assembler<SimpleRelocation> {
    fn new_label(&mut self) -> DynamicLabel {
        self.new_dynamic_label()
    }
}

/// One instruction with a memory operand `m`: `pre [m] post`. dynasm needs
/// the scale as a literal and the displacement's size up front, hence the
/// arms; disp8 whenever it fits, as GNU as does.
macro_rules! with_mem {
    ($ops:ident, $arch:ident, $P:ident, $m:expr, [$($pre:tt)*], [$($post:tt)*]) => {{
        let m: &MemRef = $m;
        let b = m.base.num();
        let d = m.disp;
        let d8 = d as i8;
        let small = i32::from(d8) == d;
        match (m.index.map(|(x, s)| (x.num(), s)), small) {
            (None, true) => dynasm!($ops; .arch $arch; $($pre)* [BYTE $P(b) + d8] $($post)*),
            (None, false) => dynasm!($ops; .arch $arch; $($pre)* [$P(b) + d] $($post)*),
            (Some((x, 1)), true) => dynasm!($ops; .arch $arch; $($pre)* [BYTE $P(b) + $P(x) * 1 + d8] $($post)*),
            (Some((x, 1)), false) => dynasm!($ops; .arch $arch; $($pre)* [$P(b) + $P(x) * 1 + d] $($post)*),
            (Some((x, 2)), true) => dynasm!($ops; .arch $arch; $($pre)* [BYTE $P(b) + $P(x) * 2 + d8] $($post)*),
            (Some((x, 2)), false) => dynasm!($ops; .arch $arch; $($pre)* [$P(b) + $P(x) * 2 + d] $($post)*),
            (Some((x, 4)), true) => dynasm!($ops; .arch $arch; $($pre)* [BYTE $P(b) + $P(x) * 4 + d8] $($post)*),
            (Some((x, 4)), false) => dynasm!($ops; .arch $arch; $($pre)* [$P(b) + $P(x) * 4 + d] $($post)*),
            (Some((x, 8)), true) => dynasm!($ops; .arch $arch; $($pre)* [BYTE $P(b) + $P(x) * 8 + d8] $($post)*),
            (Some((x, 8)), false) => dynasm!($ops; .arch $arch; $($pre)* [$P(b) + $P(x) * 8 + d] $($post)*),
            (Some((_, s)), _) => unreachable!("x86 scales are 1, 2, 4, 8, not {s}"),
        }
    }};
}

/// `op reg, imm`: the sign-extended imm8 form when it fits (GNU as's
/// choice), else the full immediate; `test` has no imm8 form and `cmp`
/// gets none from dynasm.
macro_rules! alu_imm {
    ($ops:ident, $arch:ident, $op:expr, $R:ident, $r:expr, $ISZ:ident, $imm:expr) => {{
        let (r, imm): (u8, i32) = ($r, $imm);
        let small = i32::from(imm as i8) == imm;
        match ($op, small) {
            (Alu::Add, true) => dynasm!($ops; .arch $arch; add $R(r), BYTE imm as i8),
            (Alu::Add, false) => dynasm!($ops; .arch $arch; add $R(r), $ISZ imm as _),
            (Alu::Sub, true) => dynasm!($ops; .arch $arch; sub $R(r), BYTE imm as i8),
            (Alu::Sub, false) => dynasm!($ops; .arch $arch; sub $R(r), $ISZ imm as _),
            (Alu::And, true) => dynasm!($ops; .arch $arch; and $R(r), BYTE imm as i8),
            (Alu::And, false) => dynasm!($ops; .arch $arch; and $R(r), $ISZ imm as _),
            (Alu::Or, true) => dynasm!($ops; .arch $arch; or $R(r), BYTE imm as i8),
            (Alu::Or, false) => dynasm!($ops; .arch $arch; or $R(r), $ISZ imm as _),
            (Alu::Xor, true) => dynasm!($ops; .arch $arch; xor $R(r), BYTE imm as i8),
            (Alu::Xor, false) => dynasm!($ops; .arch $arch; xor $R(r), $ISZ imm as _),
            // dynasm 5.1's table lists cmp's `v*i*` before `v*ib` without
            // EXACT_SIZE, so a BYTE immediate still selects 81 /7 id.
            (Alu::Cmp, _) => dynasm!($ops; .arch $arch; cmp $R(r), $ISZ imm as _),
            (Alu::Test, _) => dynasm!($ops; .arch $arch; test $R(r), $ISZ imm as _),
        }
    }};
}

/// `op dst, src` on registers.
macro_rules! alu_reg {
    ($ops:ident, $arch:ident, $op:expr, $R:ident, $d:expr, $s:expr) => {{
        let (d, s): (u8, u8) = ($d, $s);
        match $op {
            Alu::Add => dynasm!($ops; .arch $arch; add $R(d), $R(s)),
            Alu::Sub => dynasm!($ops; .arch $arch; sub $R(d), $R(s)),
            Alu::And => dynasm!($ops; .arch $arch; and $R(d), $R(s)),
            Alu::Or => dynasm!($ops; .arch $arch; or $R(d), $R(s)),
            Alu::Xor => dynasm!($ops; .arch $arch; xor $R(d), $R(s)),
            Alu::Cmp => dynasm!($ops; .arch $arch; cmp $R(d), $R(s)),
            Alu::Test => dynasm!($ops; .arch $arch; test $R(d), $R(s)),
        }
    }};
}

/// A branch to dynamic label `id`, rel8 (`short`) or rel32.
macro_rules! branch {
    ($ops:ident, $arch:ident, $cc:expr, $short:expr, $id:expr) => {{
        let id = $id;
        match ($cc, $short) {
            (None, true) => dynasm!($ops; .arch $arch; jmp BYTE =>id),
            (None, false) => dynasm!($ops; .arch $arch; jmp =>id),
            (Some(Cc::E | Cc::Z), true) => dynasm!($ops; .arch $arch; je BYTE =>id),
            (Some(Cc::E | Cc::Z), false) => dynasm!($ops; .arch $arch; je =>id),
            (Some(Cc::Ne), true) => dynasm!($ops; .arch $arch; jne BYTE =>id),
            (Some(Cc::Ne), false) => dynasm!($ops; .arch $arch; jne =>id),
            (Some(Cc::B), true) => dynasm!($ops; .arch $arch; jb BYTE =>id),
            (Some(Cc::B), false) => dynasm!($ops; .arch $arch; jb =>id),
            (Some(Cc::Be), true) => dynasm!($ops; .arch $arch; jbe BYTE =>id),
            (Some(Cc::Be), false) => dynasm!($ops; .arch $arch; jbe =>id),
            (Some(Cc::A), true) => dynasm!($ops; .arch $arch; ja BYTE =>id),
            (Some(Cc::A), false) => dynasm!($ops; .arch $arch; ja =>id),
            (Some(Cc::Ae), true) => dynasm!($ops; .arch $arch; jae BYTE =>id),
            (Some(Cc::Ae), false) => dynasm!($ops; .arch $arch; jae =>id),
        }
    }};
}

/// Whether the encoder keeps a block for kernels before `r`: it models the
/// oldest tree ([`version::MODELLED`]), as the shim headers do.
fn keeps_block_before(r: version::Release) -> bool {
    version::MODELLED.release() < r
}

/// The encoder of one `.arch`: pointer-width register family `$P`, and per
/// operand width (bytes, register family, operand size, immediate size).
macro_rules! encoder {
    ($name:ident, $arch:ident, $mode:expr, ptr: ($pw:literal, $P:ident),
     widths: [$(($w:literal, $R:ident, $SZ:ident, $ISZ:ident)),+]) => {
        /// `label`: the label an `Inst::Label` defines or a branch targets.
        fn $name<A: Asm>(ops: &mut A, inst: &Inst, short: bool, label: Option<DynamicLabel>) -> Result<(), EncodeError> {
            let unsupported = || EncodeError::Unsupported(inst.clone(), $mode);
            match inst {
                Inst::Label(_) => {
                    let id = label.expect("planned");
                    dynasm!(ops; .arch $arch; =>id);
                }
                Inst::Comment(_) | Inst::Blank => {}
                // Linux flavour only (the JIT runs the standalone one); the
                // encoder models the oldest tree, so a block for kernels
                // before a later release is encoded.
                Inst::Cond(Cpp::IfKernelBefore(r)) if keeps_block_before(*r) => {}
                Inst::Cond(Cpp::Endif) => {}
                Inst::Cond(_) => return Err(unsupported()),
                Inst::Load { width, reg, mem } => {
                    let r = reg.num();
                    match *width {
                        $($w => with_mem!(ops, $arch, $P, mem, [mov $R(r), $SZ], []),)+
                        _ => return Err(unsupported()),
                    }
                }
                Inst::Store { width, reg, mem } => {
                    let r = reg.num();
                    match *width {
                        $($w => with_mem!(ops, $arch, $P, mem, [mov $SZ], [, $R(r)]),)+
                        _ => return Err(unsupported()),
                    }
                }
                Inst::Mov { width, dst, src } => {
                    let (d, s) = (dst.num(), src.num());
                    match *width {
                        $($w => dynasm!(ops; .arch $arch; mov $R(d), $R(s)),)+
                        _ => return Err(unsupported()),
                    }
                }
                Inst::MovImm { width: 4, dst, imm } => {
                    let (d, imm) = (dst.num(), *imm as i32);
                    dynasm!(ops; .arch $arch; mov Rd(d), DWORD imm);
                }
                Inst::Lea { width: $pw, dst, mem } => {
                    let d = dst.num();
                    with_mem!(ops, $arch, $P, mem, [lea $P(d),], [])
                }
                Inst::AluImm { op, width, reg, imm, .. } => match *width {
                    $($w => alu_imm!(ops, $arch, *op, $R, reg.num(), $ISZ, *imm),)+
                    _ => return Err(unsupported()),
                },
                Inst::AluReg { op, width, dst, src } => match *width {
                    $($w => alu_reg!(ops, $arch, *op, $R, dst.num(), src.num()),)+
                    _ => return Err(unsupported()),
                },
                Inst::Shr { width, reg, imm } => {
                    let (r, imm) = (reg.num(), *imm as i8);
                    match *width {
                        $($w => dynasm!(ops; .arch $arch; shr $R(r), BYTE imm),)+
                        _ => return Err(unsupported()),
                    }
                }
                Inst::Jcc { cc, .. } => branch!(ops, $arch, Some(*cc), short, label.expect("planned")),
                Inst::Jmp { .. } => branch!(ops, $arch, None::<Cc>, short, label.expect("planned")),
                Inst::RepMovs { unit: 1 } => dynasm!(ops; .arch $arch; rep movsb),
                Inst::RepMovs { unit: 2 } => dynasm!(ops; .arch $arch; rep movsw),
                Inst::RepMovs { unit: 4 } => dynasm!(ops; .arch $arch; rep movsd),
                Inst::RepStosb => dynasm!(ops; .arch $arch; rep stosb),
                Inst::Prefetch { kind: PrefetchKind::Nta, mem } => {
                    with_mem!(ops, $arch, $P, mem, [prefetchnta BYTE], [])
                }
                Inst::Prefetch { kind: PrefetchKind::T0, mem } => {
                    with_mem!(ops, $arch, $P, mem, [prefetcht0 BYTE], [])
                }
                Inst::Push(r) | Inst::PushBare(r) => {
                    let r = r.num();
                    dynasm!(ops; .arch $arch; push $P(r))
                }
                Inst::Pop(r) | Inst::PopBare(r) => {
                    let r = r.num();
                    dynasm!(ops; .arch $arch; pop $P(r))
                }
                Inst::Cpuid => dynasm!(ops; .arch $arch; cpuid),
                Inst::Call { .. } => {
                    let id = label.expect("planned");
                    dynasm!(ops; .arch $arch; call =>id)
                }
                Inst::Stac => dynasm!(ops; .arch $arch; stac),
                Inst::Clac => dynasm!(ops; .arch $arch; clac),
                Inst::Ret => dynasm!(ops; .arch $arch; ret),
                _ => return Err(unsupported()),
            }
            Ok(())
        }
    };
}

encoder!(x86, x86, Mode::X86, ptr: (4, Rd),
    widths: [(1, Rb, BYTE, BYTE), (2, Rw, WORD, WORD), (4, Rd, DWORD, DWORD)]);

encoder!(x64_common, x64, Mode::X64, ptr: (8, Rq),
    widths: [(1, Rb, BYTE, BYTE), (2, Rw, WORD, WORD), (4, Rd, DWORD, DWORD), (8, Rq, QWORD, DWORD)]);

/// x86_64: `rep movsq` exists only here; everything else is shared.
fn x64<A: Asm>(
    ops: &mut A,
    inst: &Inst,
    short: bool,
    label: Option<DynamicLabel>,
) -> Result<(), EncodeError> {
    match inst {
        Inst::RepMovs { unit: 8 } => {
            dynasm!(ops; .arch x64; rep movsq);
            Ok(())
        }
        _ => x64_common(ops, inst, short, label),
    }
}
