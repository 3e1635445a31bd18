/* Shim of <asm/export.h>: a ___ksymtab entry pointing at the symbol, as
 * EXPORT_SYMBOL makes one (the real layout is checked in a kernel tree). */
#ifndef COPYGEN_SHIM_EXPORT_H
#define COPYGEN_SHIM_EXPORT_H
#define EXPORT_SYMBOL(name) \
	.pushsection ___ksymtab, "a"; .balign 4; \
	.long name - .; .long 0; .long 0; .popsection
#endif
