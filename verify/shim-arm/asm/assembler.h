/* Shim of ARM's <asm/assembler.h> (tests only). copygen writes its
 * exception-table entries out in full, as USERL() expands; the macros are
 * here so hand-written code using them assembles the same way. */
#ifndef COPYGEN_SHIM_ARM_ASSEMBLER_H
#define COPYGEN_SHIM_ARM_ASSEMBLER_H
#define USERL(l, x...) \
9999:	x; \
	.pushsection __ex_table,"a"; \
	.align	3; \
	.long	9999b,l; \
	.popsection
#define USER(x...) USERL(9001f, x)
#endif
