/* Shim of riscv's <asm/asm-extable.h> (6.1/6.12, tests only): _asm_extable
 * writes the kernel's 12-byte entry, insn and fixup place-relative, type
 * EX_TYPE_FIXUP (1), data 0. */
#ifndef COPYGEN_SHIM_RISCV_ASM_EXTABLE_H
#define COPYGEN_SHIM_RISCV_ASM_EXTABLE_H
#define EX_TYPE_FIXUP 1
	.macro	_asm_extable, insn, fixup
	.pushsection	__ex_table, "a"
	.balign		4
	.long		((\insn) - .)
	.long		((\fixup) - .)
	.short		(EX_TYPE_FIXUP)
	.short		(0)
	.popsection
	.endm
#endif
