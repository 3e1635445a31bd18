//! GNU as's encoding of one instruction dynasm encoded.
//!
//! dynasm encodes what it is told, but with dynamic registers it cannot
//! pick the short forms: every x86_64 instruction gets a REX prefix, every
//! memory operand a SIB byte and a displacement, `cmp` no imm8 form, and no
//! instruction its accumulator form. The JIT is the instrument that times
//! a strategy for `copygen bench` and `copygen tune`, and code length and
//! placement are visible in those figures (on an AMD EPYC Zen 4, a guarded
//! `rep movsb` measured 1.09x a bare one at 192 B in dynasm's encoding and
//! 1.00x in GNU as's, the same instructions). So each instruction dynasm
//! produced is decoded and re-encoded here by iced-x86 in the form GNU as
//! picks: the JIT then runs the bytes the kernel runs
//! (`tests/jit_encoder.rs` compares them byte for byte).
//!
//! Branches are not passed through here: the encoder relaxes them itself
//! (`encode::plan`).

use iced_x86::{Code, Decoder, DecoderOptions, Encoder, Instruction, OpKind, Register};

/// The re-encoding failed (a dynasm form this module does not know).
#[derive(Debug, thiserror::Error)]
#[error("cannot re-encode {bytes:02x?} in GNU as's form: {reason}")]
pub struct GasFormError {
    bytes: Vec<u8>,
    reason: String,
}

/// `bytes`, one instruction for a `bitness`-bit CPU, re-encoded in the form
/// GNU as picks for the same instruction.
pub fn reencode(bytes: &[u8], bitness: u32) -> Result<Vec<u8>, GasFormError> {
    let fail = |reason: String| GasFormError {
        bytes: bytes.to_vec(),
        reason,
    };
    let mut decoder = Decoder::new(bitness, bytes, DecoderOptions::NONE);
    let mut insn = decoder.decode();
    if insn.is_invalid() || insn.len() != bytes.len() {
        return Err(fail("not exactly one instruction".into()));
    }
    shorten(&mut insn);
    let mut encoder = Encoder::new(bitness);
    encoder.encode(&insn, 0).map_err(|e| fail(e.to_string()))?;
    Ok(encoder.take_buffer())
}

/// The shortest encoding GNU as would choose, in place.
fn shorten(insn: &mut Instruction) {
    // A memory operand: no displacement when it is zero, disp8 when it
    // fits (iced adds the SIB byte only where the base needs one).
    if (0..insn.op_count()).any(|i| insn.op_kind(i) == OpKind::Memory) {
        let displ = insn.memory_displacement64() as i64;
        insn.set_memory_displ_size(if displ == 0 { 0 } else { 1 });
    }
    if let Some(code) = alu_imm_form(insn) {
        let (reg, imm) = (insn.op0_register(), insn.immediate(1) as i64);
        // The immediate's kind follows the code (imm8, imm32): rebuild.
        if let Ok(short) = Instruction::with2(code, reg, imm as i32) {
            *insn = short;
        }
    }
}

/// `op $imm, %reg` in GNU as's form: the sign-extended imm8 (`83 /n`) when
/// the immediate fits and the operation has one (not `test`), else the
/// accumulator form (`05`, `25`, `a9`, ...) on `%al/%ax/%eax/%rax`. `None`:
/// keep the code.
fn alu_imm_form(insn: &Instruction) -> Option<Code> {
    use Code::*;
    if insn.op_count() != 2 || insn.op0_kind() != OpKind::Register {
        return None;
    }
    // (8-bit, 16-bit, 32-bit, 64-bit) codes of each form.
    type Forms = [Code; 4];
    let (full, imm8, acc): (Forms, Option<Forms>, Forms) = match insn.code() {
        Add_rm8_imm8 | Add_rm16_imm16 | Add_rm32_imm32 | Add_rm64_imm32 | Add_rm16_imm8
        | Add_rm32_imm8 | Add_rm64_imm8 => (
            [Add_rm8_imm8, Add_rm16_imm16, Add_rm32_imm32, Add_rm64_imm32],
            Some([Add_rm8_imm8, Add_rm16_imm8, Add_rm32_imm8, Add_rm64_imm8]),
            [Add_AL_imm8, Add_AX_imm16, Add_EAX_imm32, Add_RAX_imm32],
        ),
        Or_rm8_imm8 | Or_rm16_imm16 | Or_rm32_imm32 | Or_rm64_imm32 | Or_rm16_imm8
        | Or_rm32_imm8 | Or_rm64_imm8 => (
            [Or_rm8_imm8, Or_rm16_imm16, Or_rm32_imm32, Or_rm64_imm32],
            Some([Or_rm8_imm8, Or_rm16_imm8, Or_rm32_imm8, Or_rm64_imm8]),
            [Or_AL_imm8, Or_AX_imm16, Or_EAX_imm32, Or_RAX_imm32],
        ),
        And_rm8_imm8 | And_rm16_imm16 | And_rm32_imm32 | And_rm64_imm32 | And_rm16_imm8
        | And_rm32_imm8 | And_rm64_imm8 => (
            [And_rm8_imm8, And_rm16_imm16, And_rm32_imm32, And_rm64_imm32],
            Some([And_rm8_imm8, And_rm16_imm8, And_rm32_imm8, And_rm64_imm8]),
            [And_AL_imm8, And_AX_imm16, And_EAX_imm32, And_RAX_imm32],
        ),
        Sub_rm8_imm8 | Sub_rm16_imm16 | Sub_rm32_imm32 | Sub_rm64_imm32 | Sub_rm16_imm8
        | Sub_rm32_imm8 | Sub_rm64_imm8 => (
            [Sub_rm8_imm8, Sub_rm16_imm16, Sub_rm32_imm32, Sub_rm64_imm32],
            Some([Sub_rm8_imm8, Sub_rm16_imm8, Sub_rm32_imm8, Sub_rm64_imm8]),
            [Sub_AL_imm8, Sub_AX_imm16, Sub_EAX_imm32, Sub_RAX_imm32],
        ),
        Xor_rm8_imm8 | Xor_rm16_imm16 | Xor_rm32_imm32 | Xor_rm64_imm32 | Xor_rm16_imm8
        | Xor_rm32_imm8 | Xor_rm64_imm8 => (
            [Xor_rm8_imm8, Xor_rm16_imm16, Xor_rm32_imm32, Xor_rm64_imm32],
            Some([Xor_rm8_imm8, Xor_rm16_imm8, Xor_rm32_imm8, Xor_rm64_imm8]),
            [Xor_AL_imm8, Xor_AX_imm16, Xor_EAX_imm32, Xor_RAX_imm32],
        ),
        Cmp_rm8_imm8 | Cmp_rm16_imm16 | Cmp_rm32_imm32 | Cmp_rm64_imm32 | Cmp_rm16_imm8
        | Cmp_rm32_imm8 | Cmp_rm64_imm8 => (
            [Cmp_rm8_imm8, Cmp_rm16_imm16, Cmp_rm32_imm32, Cmp_rm64_imm32],
            Some([Cmp_rm8_imm8, Cmp_rm16_imm8, Cmp_rm32_imm8, Cmp_rm64_imm8]),
            [Cmp_AL_imm8, Cmp_AX_imm16, Cmp_EAX_imm32, Cmp_RAX_imm32],
        ),
        Test_rm8_imm8 | Test_rm16_imm16 | Test_rm32_imm32 | Test_rm64_imm32 => (
            [
                Test_rm8_imm8,
                Test_rm16_imm16,
                Test_rm32_imm32,
                Test_rm64_imm32,
            ],
            None,
            [Test_AL_imm8, Test_AX_imm16, Test_EAX_imm32, Test_RAX_imm32],
        ),
        _ => return None,
    };
    let reg = insn.op0_register();
    let size = match reg.size() {
        1 => 0,
        2 => 1,
        4 => 2,
        8 => 3,
        _ => return None,
    };
    let imm = insn.immediate(1) as i64;
    let imm = if size == 0 { i64::from(imm as i8) } else { imm };
    // 8-bit operations have no separate imm8 form: `80 /n ib` is `full`.
    if size > 0 && i64::from(imm as i8) == imm {
        if let Some(imm8) = imm8 {
            return Some(imm8[size]);
        }
    }
    if matches!(
        reg,
        Register::AL | Register::AX | Register::EAX | Register::RAX
    ) {
        return Some(acc[size]);
    }
    Some(full[size])
}
