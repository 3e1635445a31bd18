/* Shim of <asm/smap.h>: the kernel patches these in via ALTERNATIVE. */
#ifndef COPYGEN_SHIM_SMAP_H
#define COPYGEN_SHIM_SMAP_H
#define ASM_STAC stac
#define ASM_CLAC clac
#endif
