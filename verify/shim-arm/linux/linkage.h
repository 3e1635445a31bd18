/* Shim of the kernel's <linux/linkage.h> (with ARM's <asm/linkage.h>) for
 * assembling linux-flavour ARM files outside a kernel tree (tests only):
 * the same symbols, types and sizes as ENTRY/ENDPROC make there. */
#ifndef COPYGEN_SHIM_ARM_LINKAGE_H
#define COPYGEN_SHIM_ARM_LINKAGE_H
#define ENTRY(name) .globl name; .align 0; name:
#define ENDPROC(name) .type name, %function; .size name, . - name
#endif
