//! The dynasm printer for AArch64: the same [`Line`]s the GNU as printer
//! prints (`backend::aarch64::select`), encoded by dynasm's `.arch
//! aarch64` into plain bytes (`VecAssembler`; encode-only on this host).
//! One arm per [`Inst`], like `aarch64::print_inst`; nothing here decides
//! what to copy.
//!
//! Every A64 instruction is one 32-bit word and every branch reaches its
//! target in one form, so the layout is the printer's by construction and
//! the bytes must equal GNU as's word for word (`tests/jit_encoder.rs`).
//! dynasm 5.1's table lacks `prfm (immediate)` (it has the literal and
//! register forms and `prfum`); that one instruction is written as its
//! word (`prfm_word`).

// dynasm's aarch64 register expressions convert with `u8::from`, which
// clippy calls useless when the register numbers already are `u8`.
#![allow(clippy::useless_conversion)]

use std::collections::HashMap;

use dynasmrt::aarch64::Aarch64Relocation;
use dynasmrt::{dynasm, DynamicLabel, DynasmApi, DynasmLabelApi, VecAssembler};

use crate::backend::aarch64::{Alu, Cc, Form, Inst, Line, Prf, Reg, ZR};

/// Why a routine did not encode.
#[derive(Debug, thiserror::Error)]
pub enum A64Error {
    #[error("branch to `{0}`, which the routine does not define")]
    UnknownLabel(String),
    #[error("{0}")]
    Dynasm(String),
}

/// (faulting instruction, fixup) offsets from a routine's first byte.
pub type Extable = Vec<(u32, u32)>;

/// A label's dynasm handle and its offset.
type LabelOf<'a> = &'a dyn Fn(&str) -> Result<(DynamicLabel, u32), A64Error>;

/// A routine's bytes and its exception table, in line order.
pub fn encode(lines: &[Line]) -> Result<(Vec<u8>, Extable), A64Error> {
    let mut ops: VecAssembler<Aarch64Relocation> = VecAssembler::new(0);
    // Offsets by counting words: every instruction is 4 bytes.
    let mut labels: HashMap<&str, (DynamicLabel, u32)> = HashMap::new();
    let mut at = 0u32;
    for line in lines {
        match &line.inst {
            Inst::Label(l) => {
                labels.insert(l.as_str(), (ops.new_dynamic_label(), at));
            }
            Inst::Comment(_) => {}
            _ => at += 4,
        }
    }
    let label = |name: &str| {
        labels
            .get(name)
            .copied()
            .ok_or_else(|| A64Error::UnknownLabel(name.to_string()))
    };
    let mut extable = Vec::new();
    for line in lines {
        if let Some(entry) = &line.user {
            extable.push((ops.offset().0 as u32, label(&entry.fixup)?.1));
        }
        encode_inst(&mut ops, &line.inst, &label)?;
    }
    let code = ops
        .finalize()
        .map_err(|e| A64Error::Dynasm(e.to_string()))?;
    Ok((code, extable))
}

/// `prfm <op>, [xn, #off]`, unsigned offset scaled by 8 (PRFM (immediate)).
pub fn prfm_word(op: Prf, base: Reg, off: i32) -> u32 {
    let prfop = match op {
        Prf::Pldl1keep => 0b00000,
        Prf::Pldl1strm => 0b00001,
    };
    0xf980_0000 | ((off as u32 / 8) << 10) | ((base.0 as u32) << 5) | prfop
}

fn prfop(op: Prf) -> u32 {
    prfm_word(op, Reg(0), 0) & 0x1f
}

type Ops = VecAssembler<Aarch64Relocation>;

/// `OP Rd, Rn, #imm`: an immediate of 4096 or more as `imm >> 12, lsl 12`. dynasm
/// takes the mnemonic and the register class as tokens, so the three instructions of
/// this form share one macro: register 31 is `sp` for `add` and `sub` (`XSP`), and
/// `xzr` as `subs`'s destination (`X`).
macro_rules! shifted_imm12 {
    ($ops:ident, $op:ident, $dst:ident, $rd:ident, $rn:ident, $imm:ident) => {{
        let (d, n) = ($rd.0, $rn.0);
        if *$imm >= 1 << 12 {
            let k = $imm >> 12;
            dynasm!($ops ; .arch aarch64 ; $op $dst(d), XSP(n), k, lsl 12);
        } else {
            let k = *$imm;
            dynasm!($ops ; .arch aarch64 ; $op $dst(d), XSP(n), k);
        }
    }};
}

fn encode_inst(ops: &mut Ops, inst: &Inst, label: LabelOf) -> Result<(), A64Error> {
    match inst {
        Inst::Label(l) => {
            let (l, _) = label(l)?;
            dynasm!(ops ; .arch aarch64 ; =>l);
        }
        Inst::Comment(_) => {}
        Inst::Load {
            width,
            form,
            rt,
            base,
            off,
        } => load(ops, *width, *form, rt.0, base.0, *off),
        Inst::Store {
            width,
            form,
            rt,
            base,
            off,
        } => store(ops, *width, *form, *rt, base.0, *off),
        Inst::Ldp { rt, rt2, base, off } => {
            let (t, t2, n, o) = (rt.0, rt2.0, base.0, *off);
            dynasm!(ops ; .arch aarch64 ; ldp X(t), X(t2), [X(n), o]);
        }
        Inst::Stp { rt, rt2, base, off } => {
            let (t, t2, n, o) = (rt.0, rt2.0, base.0, *off);
            dynasm!(ops ; .arch aarch64 ; stp X(t), X(t2), [X(n), o]);
        }
        Inst::AddImm { rd, rn, imm } => shifted_imm12!(ops, add, XSP, rd, rn, imm),
        Inst::SubImm { rd, rn, imm } => shifted_imm12!(ops, sub, XSP, rd, rn, imm),
        Inst::SubsImm { rd, rn, imm } => shifted_imm12!(ops, subs, X, rd, rn, imm),
        Inst::Alu { op, rd, rn, rm } => {
            let (d, n, m) = (rd.0, rn.0, rm.0);
            match op {
                Alu::Add => dynasm!(ops ; .arch aarch64 ; add X(d), X(n), X(m)),
                Alu::Sub => dynasm!(ops ; .arch aarch64 ; sub X(d), X(n), X(m)),
                Alu::Orr => dynasm!(ops ; .arch aarch64 ; orr X(d), X(n), X(m)),
                Alu::Eor => dynasm!(ops ; .arch aarch64 ; eor X(d), X(n), X(m)),
            }
        }
        Inst::AndImm { rd, rn, mask } => {
            let (d, n, k) = (rd.0, rn.0, *mask);
            dynasm!(ops ; .arch aarch64 ; and XSP(d), X(n), k);
        }
        Inst::CmpImm { rn, imm } => {
            let n = rn.0;
            if *imm >= 1 << 12 {
                let k = imm >> 12;
                dynasm!(ops ; .arch aarch64 ; cmp XSP(n), k, lsl 12);
            } else {
                let k = *imm;
                dynasm!(ops ; .arch aarch64 ; cmp XSP(n), k);
            }
        }
        Inst::CmpReg { rn, rm } => {
            let (n, m) = (rn.0, rm.0);
            dynasm!(ops ; .arch aarch64 ; cmp X(n), X(m));
        }
        Inst::TstImm { rn, mask } => {
            let (n, k) = (rn.0, *mask);
            dynasm!(ops ; .arch aarch64 ; tst X(n), k);
        }
        Inst::Movz { rd, imm, shift } => {
            let (d, k) = (rd.0, *imm as u32);
            match shift {
                0 => dynasm!(ops ; .arch aarch64 ; movz X(d), k),
                16 => dynasm!(ops ; .arch aarch64 ; movz X(d), k, lsl 16),
                32 => dynasm!(ops ; .arch aarch64 ; movz X(d), k, lsl 32),
                _ => dynasm!(ops ; .arch aarch64 ; movz X(d), k, lsl 48),
            }
        }
        Inst::Movk { rd, imm, shift } => {
            let (d, k) = (rd.0, *imm as u32);
            match shift {
                0 => dynasm!(ops ; .arch aarch64 ; movk X(d), k),
                16 => dynasm!(ops ; .arch aarch64 ; movk X(d), k, lsl 16),
                32 => dynasm!(ops ; .arch aarch64 ; movk X(d), k, lsl 32),
                _ => dynasm!(ops ; .arch aarch64 ; movk X(d), k, lsl 48),
            }
        }
        Inst::MovReg { rd, rm } => {
            let (d, m) = (rd.0, rm.0);
            dynasm!(ops ; .arch aarch64 ; mov X(d), X(m));
        }
        Inst::B { cc, target } => {
            let (l, _) = label(target)?;
            match cc {
                None => dynasm!(ops ; .arch aarch64 ; b =>l),
                Some(Cc::Eq) => dynasm!(ops ; .arch aarch64 ; b.eq =>l),
                Some(Cc::Ne) => dynasm!(ops ; .arch aarch64 ; b.ne =>l),
                Some(Cc::Lo) => dynasm!(ops ; .arch aarch64 ; b.lo =>l),
                Some(Cc::Ls) => dynasm!(ops ; .arch aarch64 ; b.ls =>l),
                Some(Cc::Hi) => dynasm!(ops ; .arch aarch64 ; b.hi =>l),
                Some(Cc::Hs) => dynasm!(ops ; .arch aarch64 ; b.hs =>l),
            }
        }
        Inst::Prfm { op, base, off } => {
            if crate::backend::aarch64::offset_fits(Form::Scaled, 8, *off as i64) {
                let w = prfm_word(*op, *base, *off);
                dynasm!(ops ; .arch aarch64 ; .u32 w);
            } else {
                let (p, n, o) = (prfop(*op), base.0, *off);
                dynasm!(ops ; .arch aarch64 ; prfum p, [X(n), o]);
            }
        }
        Inst::Ret => dynasm!(ops ; .arch aarch64 ; ret),
    }
    Ok(())
}

fn load(ops: &mut Ops, width: u32, form: Form, t: u8, n: u8, o: i32) {
    match (form, width) {
        (Form::User, 1) => dynasm!(ops ; .arch aarch64 ; ldtrb W(t), [X(n), o]),
        (Form::User, 2) => dynasm!(ops ; .arch aarch64 ; ldtrh W(t), [X(n), o]),
        (Form::User, 4) => dynasm!(ops ; .arch aarch64 ; ldtr W(t), [X(n), o]),
        (Form::User, _) => dynasm!(ops ; .arch aarch64 ; ldtr X(t), [X(n), o]),
        (Form::Scaled, 1) => dynasm!(ops ; .arch aarch64 ; ldrb W(t), [X(n), o as u32]),
        (Form::Scaled, 2) => dynasm!(ops ; .arch aarch64 ; ldrh W(t), [X(n), o as u32]),
        (Form::Scaled, 4) => dynasm!(ops ; .arch aarch64 ; ldr W(t), [X(n), o as u32]),
        (Form::Scaled, _) => dynasm!(ops ; .arch aarch64 ; ldr X(t), [X(n), o as u32]),
        (Form::Unscaled, 1) => dynasm!(ops ; .arch aarch64 ; ldurb W(t), [X(n), o]),
        (Form::Unscaled, 2) => dynasm!(ops ; .arch aarch64 ; ldurh W(t), [X(n), o]),
        (Form::Unscaled, 4) => dynasm!(ops ; .arch aarch64 ; ldur W(t), [X(n), o]),
        (Form::Unscaled, _) => dynasm!(ops ; .arch aarch64 ; ldur X(t), [X(n), o]),
    }
}

fn store(ops: &mut Ops, width: u32, form: Form, rt: Reg, n: u8, o: i32) {
    if rt == ZR {
        // The zeroing loop's `strb wzr`: only that form stores the zero register.
        assert_eq!((form, width), (Form::Scaled, 1), "only strb stores wzr");
        dynasm!(ops ; .arch aarch64 ; strb wzr, [X(n), o as u32]);
        return;
    }
    let t = rt.0;
    match (form, width) {
        (Form::User, 1) => dynasm!(ops ; .arch aarch64 ; sttrb W(t), [X(n), o]),
        (Form::User, 2) => dynasm!(ops ; .arch aarch64 ; sttrh W(t), [X(n), o]),
        (Form::User, 4) => dynasm!(ops ; .arch aarch64 ; sttr W(t), [X(n), o]),
        (Form::User, _) => dynasm!(ops ; .arch aarch64 ; sttr X(t), [X(n), o]),
        (Form::Scaled, 1) => dynasm!(ops ; .arch aarch64 ; strb W(t), [X(n), o as u32]),
        (Form::Scaled, 2) => dynasm!(ops ; .arch aarch64 ; strh W(t), [X(n), o as u32]),
        (Form::Scaled, 4) => dynasm!(ops ; .arch aarch64 ; str W(t), [X(n), o as u32]),
        (Form::Scaled, _) => dynasm!(ops ; .arch aarch64 ; str X(t), [X(n), o as u32]),
        (Form::Unscaled, 1) => dynasm!(ops ; .arch aarch64 ; sturb W(t), [X(n), o]),
        (Form::Unscaled, 2) => dynasm!(ops ; .arch aarch64 ; sturh W(t), [X(n), o]),
        (Form::Unscaled, 4) => dynasm!(ops ; .arch aarch64 ; stur W(t), [X(n), o]),
        (Form::Unscaled, _) => dynasm!(ops ; .arch aarch64 ; stur X(t), [X(n), o]),
    }
}
