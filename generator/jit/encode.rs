//! The dynasm printer: the same x86 [`Line`]s the GNU as printer prints
//! (`backend::x86::select`), encoded by dynasm — `.arch x64` for x86_64,
//! `.arch x86` for i386 (encode-only). One arm per [`Inst`], like
//! `x86::print_inst`; nothing here decides what to copy.
//!
//! Two things differ from GNU as by construction (see `tests/jit_encoder.rs`):
//! dynasm gives every memory operand with a dynamic base register a SIB byte
//! and at least a disp8, and it cannot relax branches itself. [`encode`]
//! therefore relaxes: it starts with every branch in its rel32 form and
//! shortens, pass by pass, each branch whose rel8 displacement is provably
//! in range on the current layout (shortening only ever brings two points
//! closer, so every earlier proof stays valid), until nothing changes.

use std::collections::HashMap;

use dynasmrt::relocations::SimpleRelocation;
use dynasmrt::{dynasm, DynamicLabel, DynasmError, DynasmLabelApi, VecAssembler};

use crate::backend::x86::{Alu, Cc, Inst, Line, MemRef};
use crate::ir::PrefetchKind;

/// Which dynasm `.arch` to encode for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `.arch x64`
    X64,
    /// `.arch x86` (i386; encode-only)
    X86,
}

/// Where things landed in one encoded routine, relative to its first byte.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Offset of every line (a label or comment has the next insn's offset).
    pub line_offsets: Vec<usize>,
    /// Offset of every `Inst::Label`.
    pub labels: HashMap<String, usize>,
    /// Routine length in bytes.
    pub len: usize,
}

impl Layout {
    /// (faulting instruction, fixup) offsets of every user access, in line
    /// order: the routine's exception table.
    pub fn extable(&self, lines: &[Line]) -> Result<Vec<(u32, u32)>, EncodeError> {
        lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| l.user.as_ref().map(|u| (i, u)))
            .map(|(i, (_, fixup))| {
                let fix = *self
                    .labels
                    .get(fixup)
                    .ok_or_else(|| EncodeError::NoLabel(fixup.clone()))?;
                Ok((self.line_offsets[i] as u32, fix as u32))
            })
            .collect()
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
    #[error("cannot encode {0:?} for {1:?}")]
    Unsupported(Inst, Mode),
}

/// Encode `lines` into a fresh byte vector, relaxing branches; returns the
/// bytes, the layout and which lines (branches) use the short form.
pub fn encode(lines: &[Line], mode: Mode) -> Result<(Vec<u8>, Layout, Vec<bool>), EncodeError> {
    let mut short = vec![false; lines.len()];
    loop {
        let mut ops = VecAssembler::<SimpleRelocation>::new(0);
        let layout = emit(&mut ops, lines, &short, mode)?;
        let code = ops.finalize()?;
        if !shorten(lines, &layout, &mut short)? {
            return Ok((code, layout, short));
        }
    }
}

/// Mark every long branch whose short form provably reaches; true if any.
fn shorten(lines: &[Line], layout: &Layout, short: &mut [bool]) -> Result<bool, EncodeError> {
    let mut changed = false;
    for (i, line) in lines.iter().enumerate() {
        let target = match &line.inst {
            Inst::Jcc { target, .. } | Inst::Jmp { target } => target,
            _ => continue,
        };
        if short[i] {
            continue;
        }
        let to = *layout
            .labels
            .get(target)
            .ok_or_else(|| EncodeError::NoTarget(target.clone()))? as i64;
        // rel8 is counted from the end of the 2-byte short form.
        let disp = to - (layout.line_offsets[i] as i64 + 2);
        if (-128..=127).contains(&disp) {
            short[i] = true;
            changed = true;
        }
    }
    Ok(changed)
}

/// Encode `lines` at the assembler's current offset with the given branch
/// forms. Offsets in the result are relative to where the routine starts.
pub fn emit<A: Asm>(
    ops: &mut A,
    lines: &[Line],
    short: &[bool],
    mode: Mode,
) -> Result<Layout, EncodeError> {
    let base = ops.offset().0;
    let mut layout = Layout {
        line_offsets: Vec::with_capacity(lines.len()),
        ..Layout::default()
    };
    let mut dyn_labels: HashMap<&str, DynamicLabel> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        layout.line_offsets.push(ops.offset().0 - base);
        match mode {
            Mode::X64 => x64(
                ops,
                &line.inst,
                short[i],
                &mut dyn_labels,
                &mut layout,
                base,
            )?,
            Mode::X86 => x86(
                ops,
                &line.inst,
                short[i],
                &mut dyn_labels,
                &mut layout,
                base,
            )?,
        }
    }
    layout.len = ops.offset().0 - base;
    Ok(layout)
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

/// A label's dynasm id, made on first use (definition or reference).
fn label<'a, A: Asm>(
    ops: &mut A,
    map: &mut HashMap<&'a str, DynamicLabel>,
    name: &'a str,
) -> DynamicLabel {
    *map.entry(name).or_insert_with(|| ops.new_label())
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
            (Some(Cc::E), true) => dynasm!($ops; .arch $arch; je BYTE =>id),
            (Some(Cc::E), false) => dynasm!($ops; .arch $arch; je =>id),
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

/// The encoder of one `.arch`: pointer-width register family `$P`, and per
/// operand width (bytes, register family, operand size, immediate size).
macro_rules! encoder {
    ($name:ident, $arch:ident, $mode:expr, ptr: ($pw:literal, $P:ident),
     widths: [$(($w:literal, $R:ident, $SZ:ident, $ISZ:ident)),+]) => {
        fn $name<'a, A: Asm>(
            ops: &mut A,
            inst: &'a Inst,
            short: bool,
            labels: &mut HashMap<&'a str, DynamicLabel>,
            layout: &mut Layout,
            base: usize,
        ) -> Result<(), EncodeError> {
            let unsupported = || EncodeError::Unsupported(inst.clone(), $mode);
            match inst {
                Inst::Label(l) => {
                    let id = label(ops, labels, l);
                    layout.labels.insert(l.clone(), ops.offset().0 - base);
                    dynasm!(ops; .arch $arch; =>id);
                }
                Inst::Comment(_) => {}
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
                Inst::AluImm { op, width, reg, imm } => match *width {
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
                Inst::Jcc { cc, target } => {
                    let id = label(ops, labels, target);
                    branch!(ops, $arch, Some(*cc), short, id)
                }
                Inst::Jmp { target } => {
                    let id = label(ops, labels, target);
                    branch!(ops, $arch, None::<Cc>, short, id)
                }
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
                Inst::Push(r) => {
                    let r = r.num();
                    dynasm!(ops; .arch $arch; push $P(r))
                }
                Inst::Pop(r) => {
                    let r = r.num();
                    dynasm!(ops; .arch $arch; pop $P(r))
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
fn x64<'a, A: Asm>(
    ops: &mut A,
    inst: &'a Inst,
    short: bool,
    labels: &mut HashMap<&'a str, DynamicLabel>,
    layout: &mut Layout,
    base: usize,
) -> Result<(), EncodeError> {
    match inst {
        Inst::RepMovs { unit: 8 } => {
            dynasm!(ops; .arch x64; rep movsq);
            Ok(())
        }
        _ => x64_common(ops, inst, short, labels, layout, base),
    }
}
