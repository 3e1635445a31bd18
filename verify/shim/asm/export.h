/* Shim of <asm/export.h> (asm-generic/export.h in 6.1, CONFIG_MODULES=y):
 * EXPORT_SYMBOL writes a ___ksymtab+<name> entry and the name string exactly
 * as the kernel does. x86 selects HAVE_ARCH_PREL32_RELOCATIONS, so the entry
 * is three words: value and name place-relative, then the namespace (0). */
#ifndef COPYGEN_SHIM_EXPORT_H
#define COPYGEN_SHIM_EXPORT_H
.macro __copygen_put, val, name
#if defined(__x86_64__) || defined(__i386__)
	.long	\val - ., \name - ., 0
#else
	.long	\val, \name, 0
#endif
.endm
.macro ___EXPORT_SYMBOL name, val, sec
	.section ___ksymtab\sec+\name, "a"
	.balign 4
__ksymtab_\name:
	__copygen_put \val, __kstrtab_\name
	.previous
	.section __ksymtab_strings, "aMS", %progbits, 1
__kstrtab_\name:
	.asciz "\name"
	.previous
.endm
#define EXPORT_SYMBOL(name) ___EXPORT_SYMBOL name, name,
#endif
