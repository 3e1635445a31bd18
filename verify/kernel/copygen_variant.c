// SPDX-License-Identifier: GPL-2.0
/*
 * copygen's verify/kernel-boot builds this into the kernel next to the preset: which
 * per-CPU variant does the patched entry point enter on this CPU? A late initcall (the
 * ALTERNATIVEs are applied by then) follows the entry point's code as the CPU will,
 * NOPs and direct jumps, until it reaches a variant's routine, and logs
 * "copygen-variant: NAME (N jumps)" (or "none" for a preset without variants) for
 * /init: the entry's ALTERNATIVEs leave NOPs and at most one jump to the variant.
 * copygen_variant_table.h, written by kernel-boot, names the entry point (one routine
 * for both directions, as kernel-patch wires x86) and each variant's routine; with
 * COPYGEN_SITE (6.1, whose site picks among three entry points) the walk starts where
 * a real copy site's call goes.
 */
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/types.h>
#include <linux/uaccess.h>

#include "copygen_variant_table.h"

#ifdef COPYGEN_ENTRY
struct copygen_variant {
	const char *name;
	const u8 *routine;
};

static const struct copygen_variant copygen_variants[] = { COPYGEN_VARIANTS };

/* Bytes of a ModRM byte and what follows it (SIB, displacement). */
static int __init copygen_modrm_len(u8 modrm)
{
	int mod = modrm >> 6, rm = modrm & 7;

	return 1 + (mod != 3 && rm == 4) +
	       (mod == 1 ? 1 : mod == 2 || (mod == 0 && rm == 5) ? 4 : 0);
}

/*
 * Length of one of the NOPs the kernel pads with (asm/nops.h: 64-bit `nop`, `nopl`
 * and `nopw` with 66/2e prefixes; 32-bit `movl %esi,%esi` and `leal ...(%esi),%esi`
 * with a 3e prefix), 0 if p is none.
 */
static int __init copygen_nop_len(const u8 *p)
{
	int prefixes = 0;

	while (prefixes < 4 && (p[prefixes] == 0x66 || p[prefixes] == 0x2e || p[prefixes] == 0x3e))
		prefixes++;
	p += prefixes;
	if (p[0] == 0x90)
		return prefixes + 1;
	if (p[0] == 0x89 && p[1] == 0xf6)
		return prefixes + 2;
	if (p[0] == 0x0f && p[1] == 0x1f)
		return prefixes + 2 + copygen_modrm_len(p[2]);
	if (p[0] == 0x8d && (p[1] & 0x38) == 0x30)
		return prefixes + 1 + copygen_modrm_len(p[1]);
	return 0;
}

/* The variant the code at p enters; *jumps counts the jumps taken on the way. */
static const char *__init copygen_entered(const u8 *p, int *jumps)
{
	int step, i;

	for (step = 0; step < 64; step++) {
		for (i = 0; i < ARRAY_SIZE(copygen_variants); i++)
			if (p == copygen_variants[i].routine)
				return copygen_variants[i].name;
		if (p[0] == 0xe9) {
			p += 5 + *(const s32 *)(p + 1);
			++*jumps;
		} else if (p[0] == 0xeb) {
			p += 2 + (s8)p[1];
			++*jumps;
		} else if (copygen_nop_len(p))
			p += copygen_nop_len(p);
		else if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] & 0xfe) == 0xfa)
			p += 4; /* endbr32/endbr64 */
		else
			break;
	}
	pr_info("copygen-variant: stopped at %*ph\n", 4, p);
	return "unknown";
}

#ifdef COPYGEN_SITE
/*
 * A copy site as the kernel compiles it. On 6.1 the glue's call is an alternative_call_2
 * on REP_GOOD and ERMS, patched at boot as every other site: the walk starts at the
 * routine its call reaches on this CPU, not at one the table names.
 */
static noinline notrace unsigned long copygen_variant_site(void *to, const void __user *from,
							    unsigned long n)
{
	return raw_copy_from_user(to, from, n);
}

/* Where the site's call goes (past NOPs, ENDBR and STAC before it), or NULL. */
static const u8 *__init copygen_site_target(void)
{
	const u8 *p = (const u8 *)copygen_variant_site;
	int step;

	for (step = 0; step < 16; step++) {
		if (p[0] == 0xe8)
			return p + 5 + *(const s32 *)(p + 1);
		if (copygen_nop_len(p))
			p += copygen_nop_len(p);
		else if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] & 0xfe) == 0xfa)
			p += 4; /* endbr32/endbr64 */
		else if (p[0] == 0x0f && p[1] == 0x01 && p[2] == 0xcb)
			p += 3; /* stac */
		else
			break;
	}
	pr_info("copygen-variant: no call at the site: %*ph\n", 4, p);
	return NULL;
}
#else
static const u8 *__init copygen_site_target(void)
{
	return (const u8 *)COPYGEN_ENTRY;
}
#endif

static int __init copygen_variant_report(void)
{
	int jumps = 0;
	const u8 *entry = copygen_site_target();
	const char *name = entry ? copygen_entered(entry, &jumps) : "unknown";

	pr_info("copygen-variant: %s (%d jump%s)\n", name, jumps, jumps == 1 ? "" : "s");
	return 0;
}
#else
static int __init copygen_variant_report(void)
{
	pr_info("copygen-variant: none\n");
	return 0;
}
#endif
late_initcall(copygen_variant_report);
