/* Shim of the kernel's <linux/linkage.h> for assembling linux-flavour files
 * outside a kernel tree (tests only): the same symbols and sections. */
#ifndef COPYGEN_SHIM_LINKAGE_H
#define COPYGEN_SHIM_LINKAGE_H
#define SYM_FUNC_START(name) .globl name; .type name, @function; .p2align 4; name:
#define SYM_FUNC_END(name) .size name, . - name
#define RET ret; int3
#endif
