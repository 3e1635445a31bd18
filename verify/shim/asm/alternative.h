/* Shim of <asm/alternative.h> for assembly: ALTERNATIVE as the kernel lays
 * it out (the original instruction in place, padded with NOPs to the
 * replacement's length; the replacement in .altinstr_replacement), without
 * the patch table: user space runs the original. */
#ifndef COPYGEN_SHIM_ALTERNATIVE_H
#define COPYGEN_SHIM_ALTERNATIVE_H
.macro ALTERNATIVE oldinstr, newinstr, feature
140:
	\oldinstr
141:
	.skip -(((144f-143f)-(141b-140b)) > 0) * ((144f-143f)-(141b-140b)),0x90
	.pushsection .altinstr_replacement,"ax"
143:
	\newinstr
144:
	.popsection
.endm
/* Two replacements, the later winning where both apply; the original padded to the
 * longer (the kernel's alt_max_short: a GAS comparison is -1 when true). */
#define COPYGEN_ALT_MAX(a, b) ((a) ^ (((a) ^ (b)) & -(-((a) < (b)))))
.macro ALTERNATIVE_2 oldinstr, newinstr1, feature1, newinstr2, feature2
140:
	\oldinstr
141:
	.skip -((COPYGEN_ALT_MAX(144f-143f, 145f-144f) - (141b-140b)) > 0) * (COPYGEN_ALT_MAX(144f-143f, 145f-144f) - (141b-140b)),0x90
	.pushsection .altinstr_replacement,"ax"
143:
	\newinstr1
144:
	\newinstr2
145:
	.popsection
.endm
#endif
