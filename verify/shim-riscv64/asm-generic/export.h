/* Shim of 6.1's <asm-generic/export.h> (riscv has no <asm/export.h>; CONFIG_MODULES=y,
 * tests only): riscv does not select HAVE_ARCH_PREL32_RELOCATIONS, so the
 * ___ksymtab entry is three pointers: value, name, namespace (0). */
#ifndef COPYGEN_SHIM_RISCV_EXPORT_H
#define COPYGEN_SHIM_RISCV_EXPORT_H
.macro ___EXPORT_SYMBOL name, val, sec
	.section ___ksymtab\sec+\name, "a"
	.balign 8
__ksymtab_\name:
	.quad	\val, __kstrtab_\name, 0
	.previous
	.section __ksymtab_strings, "aMS", @progbits, 1
__kstrtab_\name:
	.asciz "\name"
	.previous
.endm
#define EXPORT_SYMBOL(name) ___EXPORT_SYMBOL name, name,
#endif
