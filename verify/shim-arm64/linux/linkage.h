/* Shim of the kernel's <linux/linkage.h> with arm64's <asm/linkage.h>
 * (6.1/6.12, no BTI) for assembling linux-flavour AArch64 files outside a
 * kernel tree (tests and `copygen verify` only): the same symbols,
 * alignment, types and sizes as SYM_FUNC_START/SYM_FUNC_END make there. */
#ifndef COPYGEN_SHIM_ARM64_LINKAGE_H
#define COPYGEN_SHIM_ARM64_LINKAGE_H
#define SYM_FUNC_START(name) .globl name; .p2align 2; name:
#define SYM_FUNC_END(name) .type name, %function; .size name, . - name
#endif
