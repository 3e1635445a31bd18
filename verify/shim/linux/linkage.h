/* Shim of the kernel's <linux/linkage.h> + <asm/linkage.h> (6.1, x86,
 * CONFIG_SLS=y, no return thunk) for assembling linux-flavour files outside a
 * kernel tree (tests and `copygen verify` only): the same symbols, alignment
 * and sizes as SYM_FUNC_START/SYM_FUNC_END (SYM_INNER_LABEL global, as the
 * callers use it; SYM_FUNC_ALIAS), and RET as `ret; int3`. */
#ifndef COPYGEN_SHIM_LINKAGE_H
#define COPYGEN_SHIM_LINKAGE_H
#define SYM_FUNC_START(name) .globl name; .p2align 4, 0x90; name:
#define SYM_FUNC_END(name) .type name, @function; .set .L__sym_size_##name, . - name; .size name, .L__sym_size_##name
#define SYM_INNER_LABEL(name, linkage) .type name, @notype; .globl name; name:
#define SYM_FUNC_ALIAS(alias, name) .globl alias; .type alias, @function; .set alias, name; .size alias, .L__sym_size_##name
#define RET ret; int3
#endif
