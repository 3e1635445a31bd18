//! The riscv64 glue of `copygen kernel-patch`. Both trees copy user memory
//! in one routine for both directions, `__asm_copy_to_user` (with
//! `__asm_copy_from_user` at the same address) in arch/riscv/lib/uaccess.S,
//! which sets `SR_SUM` in `CSR_STATUS` for its accesses and clears it on
//! every way out; `raw_copy_{from,to}_user` call it with SUM clear.
//!
//! The patch keeps those entry points, their exports and the rest of
//! uaccess.S (`__clear_user`, the `fixup` macro; on 6.12 the vector path
//! under CONFIG_RISCV_ISA_V), and removes only the scalar copy's body; the
//! entry points tail-call the generated routine instead, one routine for
//! both directions that brackets its own accesses with SR_SUM:
//! - 6.1: `copygen_copy_user`, called from both entry points.
//! - 6.12: `fallback_scalar_usercopy`, the tree's own name for the scalar
//!   copy: `__asm_copy_to_user` branches to it below the vector threshold
//!   (or without Zve32x) and `enter_vector_usercopy` (riscv_v_helpers.c)
//!   finishes a vector copy with it, so it must serve both directions.
//!
//! The Makefile builds arch/riscv/lib/copygen_user.S beside uaccess.S.

use super::excerpts::Excerpt;
use super::{edit, Edit, Unfit};
use crate::front::strategy::{RoutineShape, Strategy};
use crate::kernel::symbols::GLUE_SYMBOL;
use crate::kernel::version::KernelVersion;

/// The generated file's place in the tree.
pub const FILE: &str = "arch/riscv/lib/copygen_user.S";

/// The subject prefix of arch/riscv/lib changes.
pub const SUBJECT_PREFIX: &str = "riscv: uaccess";

/// The name of the generated routine the entry points tail-call.
pub fn routine_name(kernel: KernelVersion) -> &'static str {
    match kernel {
        KernelVersion::V6_1 => GLUE_SYMBOL,
        KernelVersion::V6_12 => "fallback_scalar_usercopy",
    }
}

/// Adapt the wired copy `t` of `s` to the riscv64 call sites of `kernel`;
/// the generated file's path, or why it cannot be wired.
pub fn wire(
    s: &Strategy,
    t: &mut Strategy,
    kernel: KernelVersion,
    notes: &mut Vec<String>,
) -> Result<&'static str, Unfit> {
    if s.zero_tail {
        return Err(Unfit::new(
            s,
            &["fault", "zero_tail"],
            "__asm_copy_from_user does not zero; copy_from_user zeroes the rest in C: drop zero_tail",
        ));
    }
    // (No `[linux] uaccess` to check: a riscv64 routine always sets and
    // clears SR_SUM itself, as the callers need; validation refuses the key,
    // and `[[variants]]`, which only x86 can choose between.)
    let name = routine_name(kernel);
    if s.routine == RoutineShape::PerDirection {
        notes.push(format!(
            "The strategy is emitted as one routine serving both directions (every load and store has an exception-table entry): {}.",
            match kernel {
                KernelVersion::V6_1 => "__asm_copy_to_user and __asm_copy_from_user are one routine",
                KernelVersion::V6_12 =>
                    "enter_vector_usercopy finishes a copy in either direction with fallback_scalar_usercopy",
            }
        ));
    }
    t.routine = RoutineShape::Both;
    if s.linux.both.as_deref().is_some_and(|n| n != name) {
        notes.push(format!(
            "The strategy names its routine `{}`; the tree calls it `{name}`.",
            s.linux.both.as_deref().unwrap_or_default()
        ));
    }
    t.linux.both = Some(name.to_string());
    t.linux.from_user = None;
    t.linux.to_user = None;
    notes.push(match kernel {
        KernelVersion::V6_1 => format!(
            "uaccess.S keeps __asm_copy_{{to,from}}_user and their exports; they tail-call {name}."
        ),
        KernelVersion::V6_12 => format!(
            "uaccess.S keeps __asm_copy_{{to,from}}_user, their exports and the vector path; below the vector threshold (or without Zve32x) __asm_copy_to_user tail-calls {name}."
        ),
    });
    Ok(FILE)
}

/// The edits to uaccess.S and the Makefile.
pub fn glue(kernel: KernelVersion) -> Vec<Edit> {
    let name = routine_name(kernel);
    let comment = format!(
        "\t/*\n\t * copygen: the copy is {name} (copygen_user.S, generated);\n\t * it sets and clears SR_SUM itself.\n\t */\n\ttail\t{name}\n"
    );
    let (uaccess, replace) = match kernel {
        KernelVersion::V6_1 => {
            let e = uaccess_excerpt(kernel);
            let body = between(
                e.text,
                "ENTRY(__asm_copy_from_user)\n",
                "ENDPROC(__asm_copy_to_user)\n",
            );
            (e, vec![(body, comment)])
        }
        KernelVersion::V6_12 => {
            let e = uaccess_excerpt(kernel);
            let body = between(e.text, "#endif\n", "SYM_FUNC_END(__asm_copy_to_user)\n");
            (
                e,
                vec![
                    (body, comment),
                    (
                        "SYM_FUNC_END(fallback_scalar_usercopy)\n".to_string(),
                        String::new(),
                    ),
                ],
            )
        }
    };
    let line = "lib-$(CONFIG_MMU)\t+= uaccess.o\n";
    let refs: Vec<(&str, String)> = replace
        .iter()
        .map(|(a, b)| (a.as_str(), b.clone()))
        .collect();
    vec![
        edit(uaccess, &refs),
        edit(
            makefile_excerpt(kernel),
            &[(
                line,
                format!("{line}# copygen: {name}, behind __asm_copy_{{to,from}}_user (generated)\nlib-$(CONFIG_MMU)\t+= copygen_user.o\n"),
            )],
        ),
    ]
}

/// The text of `text` strictly between the first `start` and the next
/// `end` (empty when either is missing: the edit then fails to apply, as
/// an excerpt that does not match its glue must).
fn between(text: &str, start: &str, end: &str) -> String {
    text.find(start)
        .map(|i| &text[i + start.len()..])
        .and_then(|rest| rest.find(end).map(|j| rest[..j].to_string()))
        .unwrap_or_default()
}

/// arch/riscv/lib/uaccess.S around the copy routine.
pub fn uaccess_excerpt(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/riscv/lib/uaccess.S",
            line: 10,
            text: r##"	_asm_extable	100b, \lbl
	.endm

ENTRY(__asm_copy_to_user)
ENTRY(__asm_copy_from_user)

	/* Enable access to user memory */
	li t6, SR_SUM
	csrs CSR_STATUS, t6

	/*
	 * Save the terminal address which will be used to compute the number
	 * of bytes copied in case of a fixup exception.
	 */
	add	t5, a0, a2

	/*
	 * Register allocation for code below:
	 * a0 - start of uncopied dst
	 * a1 - start of uncopied src
	 * a2 - size
	 * t0 - end of uncopied dst
	 */
	add	t0, a0, a2

	/*
	 * Use byte copy only if too small.
	 * SZREG holds 4 for RV32 and 8 for RV64
	 */
	li	a3, 9*SZREG /* size must be larger than size in word_copy */
	bltu	a2, a3, .Lbyte_copy_tail

	/*
	 * Copy first bytes until dst is aligned to word boundary.
	 * a0 - start of dst
	 * t1 - start of aligned dst
	 */
	addi	t1, a0, SZREG-1
	andi	t1, t1, ~(SZREG-1)
	/* dst is already aligned, skip */
	beq	a0, t1, .Lskip_align_dst
1:
	/* a5 - one byte for copying data */
	fixup lb      a5, 0(a1), 10f
	addi	a1, a1, 1	/* src */
	fixup sb      a5, 0(a0), 10f
	addi	a0, a0, 1	/* dst */
	bltu	a0, t1, 1b	/* t1 - start of aligned dst */

.Lskip_align_dst:
	/*
	 * Now dst is aligned.
	 * Use shift-copy if src is misaligned.
	 * Use word-copy if both src and dst are aligned because
	 * can not use shift-copy which do not require shifting
	 */
	/* a1 - start of src */
	andi	a3, a1, SZREG-1
	bnez	a3, .Lshift_copy

.Lword_copy:
        /*
	 * Both src and dst are aligned, unrolled word copy
	 *
	 * a0 - start of aligned dst
	 * a1 - start of aligned src
	 * t0 - end of aligned dst
	 */
	addi	t0, t0, -(8*SZREG) /* not to over run */
2:
	fixup REG_L   a4,        0(a1), 10f
	fixup REG_L   a5,    SZREG(a1), 10f
	fixup REG_L   a6,  2*SZREG(a1), 10f
	fixup REG_L   a7,  3*SZREG(a1), 10f
	fixup REG_L   t1,  4*SZREG(a1), 10f
	fixup REG_L   t2,  5*SZREG(a1), 10f
	fixup REG_L   t3,  6*SZREG(a1), 10f
	fixup REG_L   t4,  7*SZREG(a1), 10f
	fixup REG_S   a4,        0(a0), 10f
	fixup REG_S   a5,    SZREG(a0), 10f
	fixup REG_S   a6,  2*SZREG(a0), 10f
	fixup REG_S   a7,  3*SZREG(a0), 10f
	fixup REG_S   t1,  4*SZREG(a0), 10f
	fixup REG_S   t2,  5*SZREG(a0), 10f
	fixup REG_S   t3,  6*SZREG(a0), 10f
	fixup REG_S   t4,  7*SZREG(a0), 10f
	addi	a0, a0, 8*SZREG
	addi	a1, a1, 8*SZREG
	bltu	a0, t0, 2b

	addi	t0, t0, 8*SZREG /* revert to original value */
	j	.Lbyte_copy_tail

.Lshift_copy:

	/*
	 * Word copy with shifting.
	 * For misaligned copy we still perform aligned word copy, but
	 * we need to use the value fetched from the previous iteration and
	 * do some shifts.
	 * This is safe because reading is less than a word size.
	 *
	 * a0 - start of aligned dst
	 * a1 - start of src
	 * a3 - a1 & mask:(SZREG-1)
	 * t0 - end of uncopied dst
	 * t1 - end of aligned dst
	 */
	/* calculating aligned word boundary for dst */
	andi	t1, t0, ~(SZREG-1)
	/* Converting unaligned src to aligned src */
	andi	a1, a1, ~(SZREG-1)

	/*
	 * Calculate shifts
	 * t3 - prev shift
	 * t4 - current shift
	 */
	slli	t3, a3, 3 /* converting bytes in a3 to bits */
	li	a5, SZREG*8
	sub	t4, a5, t3

	/* Load the first word to combine with second word */
	fixup REG_L   a5, 0(a1), 10f

3:
	/* Main shifting copy
	 *
	 * a0 - start of aligned dst
	 * a1 - start of aligned src
	 * t1 - end of aligned dst
	 */

	/* At least one iteration will be executed */
	srl	a4, a5, t3
	fixup REG_L   a5, SZREG(a1), 10f
	addi	a1, a1, SZREG
	sll	a2, a5, t4
	or	a2, a2, a4
	fixup REG_S   a2, 0(a0), 10f
	addi	a0, a0, SZREG
	bltu	a0, t1, 3b

	/* Revert src to original unaligned value  */
	add	a1, a1, a3

.Lbyte_copy_tail:
	/*
	 * Byte copy anything left.
	 *
	 * a0 - start of remaining dst
	 * a1 - start of remaining src
	 * t0 - end of remaining dst
	 */
	bgeu	a0, t0, .Lout_copy_user  /* check if end of copy */
4:
	fixup lb      a5, 0(a1), 10f
	addi	a1, a1, 1	/* src */
	fixup sb      a5, 0(a0), 10f
	addi	a0, a0, 1	/* dst */
	bltu	a0, t0, 4b	/* t0 - end of dst */

.Lout_copy_user:
	/* Disable access to user memory */
	csrc CSR_STATUS, t6
	li	a0, 0
	ret

	/* Exception fixup code */
10:
	/* Disable access to user memory */
	csrc CSR_STATUS, t6
	sub a0, t5, a0
	ret
ENDPROC(__asm_copy_to_user)
ENDPROC(__asm_copy_from_user)
EXPORT_SYMBOL(__asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_from_user)


ENTRY(__clear_user)

"##,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/riscv/lib/uaccess.S",
            line: 12,
            text: r##"	_asm_extable	100b, \lbl
	.endm

SYM_FUNC_START(__asm_copy_to_user)
#ifdef CONFIG_RISCV_ISA_V
	ALTERNATIVE("j fallback_scalar_usercopy", "nop", 0, RISCV_ISA_EXT_ZVE32X, CONFIG_RISCV_ISA_V)
	REG_L	t0, riscv_v_usercopy_threshold
	bltu	a2, t0, fallback_scalar_usercopy
	tail enter_vector_usercopy
#endif
SYM_FUNC_START(fallback_scalar_usercopy)

	/* Enable access to user memory */
	li t6, SR_SUM
	csrs CSR_STATUS, t6

	/*
	 * Save the terminal address which will be used to compute the number
	 * of bytes copied in case of a fixup exception.
	 */
	add	t5, a0, a2

	/*
	 * Register allocation for code below:
	 * a0 - start of uncopied dst
	 * a1 - start of uncopied src
	 * a2 - size
	 * t0 - end of uncopied dst
	 */
	add	t0, a0, a2

	/*
	 * Use byte copy only if too small.
	 * SZREG holds 4 for RV32 and 8 for RV64
	 */
	li	a3, 9*SZREG-1 /* size must >= (word_copy stride + SZREG-1) */
	bltu	a2, a3, .Lbyte_copy_tail

	/*
	 * Copy first bytes until dst is aligned to word boundary.
	 * a0 - start of dst
	 * t1 - start of aligned dst
	 */
	addi	t1, a0, SZREG-1
	andi	t1, t1, ~(SZREG-1)
	/* dst is already aligned, skip */
	beq	a0, t1, .Lskip_align_dst
1:
	/* a5 - one byte for copying data */
	fixup lb      a5, 0(a1), 10f
	addi	a1, a1, 1	/* src */
	fixup sb      a5, 0(a0), 10f
	addi	a0, a0, 1	/* dst */
	bltu	a0, t1, 1b	/* t1 - start of aligned dst */

.Lskip_align_dst:
	/*
	 * Now dst is aligned.
	 * Use shift-copy if src is misaligned.
	 * Use word-copy if both src and dst are aligned because
	 * can not use shift-copy which do not require shifting
	 */
	/* a1 - start of src */
	andi	a3, a1, SZREG-1
	bnez	a3, .Lshift_copy

.Lword_copy:
        /*
	 * Both src and dst are aligned, unrolled word copy
	 *
	 * a0 - start of aligned dst
	 * a1 - start of aligned src
	 * t0 - end of aligned dst
	 */
	addi	t0, t0, -(8*SZREG) /* not to over run */
2:
	fixup REG_L   a4,        0(a1), 10f
	fixup REG_L   a5,    SZREG(a1), 10f
	fixup REG_L   a6,  2*SZREG(a1), 10f
	fixup REG_L   a7,  3*SZREG(a1), 10f
	fixup REG_L   t1,  4*SZREG(a1), 10f
	fixup REG_L   t2,  5*SZREG(a1), 10f
	fixup REG_L   t3,  6*SZREG(a1), 10f
	fixup REG_L   t4,  7*SZREG(a1), 10f
	fixup REG_S   a4,        0(a0), 10f
	fixup REG_S   a5,    SZREG(a0), 10f
	fixup REG_S   a6,  2*SZREG(a0), 10f
	fixup REG_S   a7,  3*SZREG(a0), 10f
	fixup REG_S   t1,  4*SZREG(a0), 10f
	fixup REG_S   t2,  5*SZREG(a0), 10f
	fixup REG_S   t3,  6*SZREG(a0), 10f
	fixup REG_S   t4,  7*SZREG(a0), 10f
	addi	a0, a0, 8*SZREG
	addi	a1, a1, 8*SZREG
	bleu	a0, t0, 2b

	addi	t0, t0, 8*SZREG /* revert to original value */
	j	.Lbyte_copy_tail

.Lshift_copy:

	/*
	 * Word copy with shifting.
	 * For misaligned copy we still perform aligned word copy, but
	 * we need to use the value fetched from the previous iteration and
	 * do some shifts.
	 * This is safe because reading is less than a word size.
	 *
	 * a0 - start of aligned dst
	 * a1 - start of src
	 * a3 - a1 & mask:(SZREG-1)
	 * t0 - end of uncopied dst
	 * t1 - end of aligned dst
	 */
	/* calculating aligned word boundary for dst */
	andi	t1, t0, ~(SZREG-1)
	/* Converting unaligned src to aligned src */
	andi	a1, a1, ~(SZREG-1)

	/*
	 * Calculate shifts
	 * t3 - prev shift
	 * t4 - current shift
	 */
	slli	t3, a3, 3 /* converting bytes in a3 to bits */
	li	a5, SZREG*8
	sub	t4, a5, t3

	/* Load the first word to combine with second word */
	fixup REG_L   a5, 0(a1), 10f

3:
	/* Main shifting copy
	 *
	 * a0 - start of aligned dst
	 * a1 - start of aligned src
	 * t1 - end of aligned dst
	 */

	/* At least one iteration will be executed */
	srl	a4, a5, t3
	fixup REG_L   a5, SZREG(a1), 10f
	addi	a1, a1, SZREG
	sll	a2, a5, t4
	or	a2, a2, a4
	fixup REG_S   a2, 0(a0), 10f
	addi	a0, a0, SZREG
	bltu	a0, t1, 3b

	/* Revert src to original unaligned value  */
	add	a1, a1, a3

.Lbyte_copy_tail:
	/*
	 * Byte copy anything left.
	 *
	 * a0 - start of remaining dst
	 * a1 - start of remaining src
	 * t0 - end of remaining dst
	 */
	bgeu	a0, t0, .Lout_copy_user  /* check if end of copy */
4:
	fixup lb      a5, 0(a1), 10f
	addi	a1, a1, 1	/* src */
	fixup sb      a5, 0(a0), 10f
	addi	a0, a0, 1	/* dst */
	bltu	a0, t0, 4b	/* t0 - end of dst */

.Lout_copy_user:
	/* Disable access to user memory */
	csrc CSR_STATUS, t6
	li	a0, 0
	ret

	/* Exception fixup code */
10:
	/* Disable access to user memory */
	csrc CSR_STATUS, t6
	sub a0, t5, a0
	ret
SYM_FUNC_END(__asm_copy_to_user)
SYM_FUNC_END(fallback_scalar_usercopy)
EXPORT_SYMBOL(__asm_copy_to_user)
SYM_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)
EXPORT_SYMBOL(__asm_copy_from_user)


SYM_FUNC_START(__clear_user)

"##,
        },
    }
}

/// arch/riscv/lib/Makefile around uaccess.o.
pub fn makefile_excerpt(v: KernelVersion) -> Excerpt {
    match v {
        KernelVersion::V6_1 => Excerpt {
            path: "arch/riscv/lib/Makefile",
            line: 1,
            text: r##"# SPDX-License-Identifier: GPL-2.0-only
lib-y			+= delay.o
lib-y			+= memcpy.o
lib-y			+= memset.o
lib-y			+= memmove.o
lib-$(CONFIG_MMU)	+= uaccess.o
lib-$(CONFIG_64BIT)	+= tishift.o

obj-$(CONFIG_FUNCTION_ERROR_INJECTION) += error-inject.o
"##,
        },
        KernelVersion::V6_12 => Excerpt {
            path: "arch/riscv/lib/Makefile",
            line: 10,
            text: r##"endif
lib-y			+= csum.o
ifeq ($(CONFIG_MMU), y)
lib-$(CONFIG_RISCV_ISA_V)	+= uaccess_vector.o
endif
lib-$(CONFIG_MMU)	+= uaccess.o
lib-$(CONFIG_64BIT)	+= tishift.o
lib-$(CONFIG_RISCV_ISA_ZICBOZ)	+= clear_page.o
lib-$(CONFIG_RISCV_ISA_ZBC)	+= crc32.o

"##,
        },
    }
}
