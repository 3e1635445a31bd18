//! The x86 NOPs the kernel writes over a site's padding: `optimize_nops()`
//! turns each run of one-byte NOPs (0x90) into the forms of
//! `arch/x86/include/asm/nops.h`, 6.1 and 6.12 differently.

use super::version::KernelVersion;

/// The 64-bit `x86_nops[n]` of asm/nops.h, `n` = 0..=11 (`ASM_NOP_MAX` is
/// 11 in 6.12, 8 in 6.1).
const X86_NOPS: [&[u8]; 12] = [
    &[],
    &[0x90],
    &[0x66, 0x90],
    &[0x0f, 0x1f, 0x00],
    &[0x0f, 0x1f, 0x40, 0x00],
    &[0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
    &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
    &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[
        0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
    ],
];

/// 6.1's `ASM_NOP_MAX`: its longest NOP.
const ASM_NOP_MAX_6_1: usize = 8;

/// The NOPs 6.12's `optimize_nops()` leaves for `n` bytes of 0x90 padding
/// at the end of a site: one NOP of the 64-bit `x86_nops[n]` (asm/nops.h)
/// up to `ASM_NOP_MAX` (11), else a short jmp over int3s (`add_nop()`). A
/// single 0x90 stays as it is.
pub fn optimized_nops(n: usize) -> Vec<u8> {
    match X86_NOPS.get(n) {
        Some(nop) => nop.to_vec(),
        None => {
            // add_nop(): jmp8 (len < 128) or jmp32, then int3 to the end.
            let mut v = if n < 128 {
                vec![0xeb, (n - 2) as u8]
            } else {
                let mut v = vec![0xe9];
                v.extend(((n - 5) as u32).to_le_bytes());
                v
            };
            v.resize(n, 0xcc);
            v
        }
    }
}

/// The NOPs `optimize_nops()` of `kernel` writes over `n` one-byte NOPs:
/// 6.12's `add_nop()` ([`optimized_nops`]: one NOP up to 11 bytes); 6.1's
/// `add_nops()`, NOPs of at most `ASM_NOP_MAX` = 8 bytes one after another
/// (asm/nops.h).
pub fn kernel_nops(kernel: KernelVersion, n: usize) -> Vec<u8> {
    if kernel.x86_64_calls_rep_movs_alternative() {
        return optimized_nops(n);
    }
    let mut out = Vec::with_capacity(n);
    let mut left = n;
    while left > 0 {
        let k = left.min(ASM_NOP_MAX_6_1);
        out.extend(optimized_nops(k));
        left -= k;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_nop_form_is_as_long_as_asked_and_decodes_as_one_nop_or_a_jump() {
        for n in 1..=140 {
            let b = optimized_nops(n);
            assert_eq!(b.len(), n, "{n}");
            let mut d = iced_x86::Decoder::new(64, &b, 0);
            let first = d.decode();
            match n {
                1..=11 => {
                    assert_eq!(first.mnemonic(), iced_x86::Mnemonic::Nop, "{n}");
                    assert_eq!(first.len(), n, "{n}");
                }
                _ => {
                    assert_eq!(first.mnemonic(), iced_x86::Mnemonic::Jmp, "{n}");
                    assert_eq!(first.near_branch_target(), n as u64, "{n}");
                }
            }
        }
    }

    #[test]
    fn the_6_1_nops_are_at_most_eight_bytes_each() {
        let b = kernel_nops(KernelVersion::V6_1, 11);
        assert_eq!(b.len(), 11);
        assert_eq!(b[..8], *X86_NOPS[8]);
        assert_eq!(b[8..], *X86_NOPS[3]);
        assert_eq!(kernel_nops(KernelVersion::V6_12, 11), X86_NOPS[11]);
    }
}
