/* Shim of the kernel's <linux/linkage.h> with riscv's <asm/linkage.h>
 * (6.1/6.12) for assembling linux-flavour RISC-V files outside a kernel
 * tree (tests and `copygen verify` only): the same symbols, alignment,
 * types and sizes as SYM_FUNC_START/SYM_FUNC_END make there. */
#ifndef COPYGEN_SHIM_RISCV_LINKAGE_H
#define COPYGEN_SHIM_RISCV_LINKAGE_H
#define SYM_FUNC_START(name) .globl name; .balign 4; name:
#define SYM_FUNC_END(name) .type name, @function; .size name, . - name
#endif
