/* Shim of <asm/asm.h>: _ASM_EXTABLE_UA and 6.1's _ASM_EXTABLE_CPY as the kernel
 * writes them in assembly (three words: insn and fixup relative, then the entry
 * type; EX_TYPE_COPY's handler puts the trap number in %eax). */
#ifndef COPYGEN_SHIM_ASM_H
#define COPYGEN_SHIM_ASM_H
#define EX_TYPE_UACCESS 3
#define EX_TYPE_COPY 4
#define _ASM_EXTABLE_TYPE(from, to, type) \
	.pushsection "__ex_table","a"; .balign 4; \
	.long (from) - .; .long (to) - .; .long type; .popsection
#define _ASM_EXTABLE_UA(from, to) _ASM_EXTABLE_TYPE(from, to, EX_TYPE_UACCESS)
#define _ASM_EXTABLE_CPY(from, to) _ASM_EXTABLE_TYPE(from, to, EX_TYPE_COPY)
#endif
