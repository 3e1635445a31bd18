/* Shim of arm64's <asm/assembler.h> (tests only): EXPORT_SYMBOL as
 * asm-generic/export.h (6.1) and linux/export.h (6.12) write it with
 * HAVE_ARCH_PREL32_RELOCATIONS, which arm64 selects: value and name
 * place-relative, then the namespace (0). */
#ifndef COPYGEN_SHIM_ARM64_ASSEMBLER_H
#define COPYGEN_SHIM_ARM64_ASSEMBLER_H
.macro ___EXPORT_SYMBOL name, val, sec
	.section ___ksymtab\sec+\name, "a"
	.balign 4
__ksymtab_\name:
	.long	\val - ., __kstrtab_\name - ., 0
	.previous
	.section __ksymtab_strings, "aMS", %progbits, 1
__kstrtab_\name:
	.asciz "\name"
	.previous
.endm
#define EXPORT_SYMBOL(name) ___EXPORT_SYMBOL name, name,
#endif
