/* Shim of arm64's <asm/asm-uaccess.h> and <asm/asm-extable.h> (identical
 * in 6.1 and 6.12 for what is here; tests only): _asm_extable_uaccess
 * writes the kernel's 12-byte entry (insn and fixup place-relative, type
 * EX_TYPE_UACCESS_ERR_ZERO, data naming wzr twice: the handler writes no
 * register), and USER() wraps one instruction with it. */
#ifndef COPYGEN_SHIM_ARM64_ASM_UACCESS_H
#define COPYGEN_SHIM_ARM64_ASM_UACCESS_H
#define EX_TYPE_UACCESS_ERR_ZERO 2
	.macro	_asm_extable_uaccess, insn, fixup
	.pushsection	__ex_table, "a"
	.align		2
	.long		((\insn) - .)
	.long		((\fixup) - .)
	.short		(EX_TYPE_UACCESS_ERR_ZERO)
	.short		(31 | (31 << 5))
	.popsection
	.endm
#define USER(l, x...)				\
9999:	x;					\
	_asm_extable_uaccess	9999b, l
#endif
