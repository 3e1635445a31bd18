/* Shim of <asm/asm.h>: _ASM_EXTABLE_UA as the kernel writes it in assembly
 * (three words: insn and fixup relative, then the entry type). */
#ifndef COPYGEN_SHIM_ASM_H
#define COPYGEN_SHIM_ASM_H
#define EX_TYPE_UACCESS 3
#define _ASM_EXTABLE_TYPE(from, to, type) \
	.pushsection "__ex_table","a"; .balign 4; \
	.long (from) - .; .long (to) - .; .long type; .popsection
#define _ASM_EXTABLE_UA(from, to) _ASM_EXTABLE_TYPE(from, to, EX_TYPE_UACCESS)
#endif
