/* Shim of <asm/cpufeatures.h>: the bits copygen's per-CPU variants name,
 * numbered as in Linux 6.1 and 6.12. */
#ifndef COPYGEN_SHIM_CPUFEATURES_H
#define COPYGEN_SHIM_CPUFEATURES_H
#define X86_FEATURE_ZEN		( 7*32+28)
#define X86_FEATURE_ERMS	( 9*32+ 9)
#define X86_FEATURE_FSRM	(18*32+ 4)
#endif
