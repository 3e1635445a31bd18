// SPDX-License-Identifier: GPL-2.0
/*
 * copygen's verify/kernel-boot builds this into the kernel next to the preset: which
 * per-CPU variant do the patched entry points enter on this CPU? A late initcall (the
 * ALTERNATIVEs are applied by then) follows each entry point's code as the CPU will,
 * NOPs and direct jumps, until it reaches a variant's routine, and logs
 * "copygen-variant: NAME" (or "none" for a preset without variants) for /init.
 * copygen_variant_table.h, written by kernel-boot, lists the preset's routines.
 */
#include <linux/init.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/string.h>
#include <linux/types.h>

#include "copygen_variant_table.h"

#ifdef COPYGEN_FROM
struct copygen_variant {
	const char *name;
	const u8 *from, *to;
};

static const struct copygen_variant copygen_variants[] = { COPYGEN_VARIANTS };

/* Length of a `0f 1f /0` NOP from its ModRM byte. */
static int __init copygen_nopl_len(u8 modrm)
{
	int mod = modrm >> 6, rm = modrm & 7;

	return 3 + (mod != 3 && rm == 4) + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

static const char *__init copygen_entered(const u8 *p, int from)
{
	int step, i;

	for (step = 0; step < 64; step++) {
		for (i = 0; i < ARRAY_SIZE(copygen_variants); i++)
			if (p == (from ? copygen_variants[i].from : copygen_variants[i].to))
				return copygen_variants[i].name;
		if (p[0] == 0xe9)
			p += 5 + *(const s32 *)(p + 1);
		else if (p[0] == 0xeb)
			p += 2 + (s8)p[1];
		else if (p[0] == 0x90)
			p += 1;
		else if (p[0] == 0x66 && p[1] == 0x90)
			p += 2;
		else if (p[0] == 0x0f && p[1] == 0x1f)
			p += copygen_nopl_len(p[2]);
		else if (p[0] == 0x66 && p[1] == 0x0f && p[2] == 0x1f)
			p += 1 + copygen_nopl_len(p[3]);
		else if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] & 0xfe) == 0xfa)
			p += 4; /* endbr32/endbr64 */
		else
			break;
	}
	pr_info("copygen-variant: stopped at %*ph\n", 4, p);
	return "unknown";
}

static int __init copygen_variant_report(void)
{
	const char *from = copygen_entered((const u8 *)COPYGEN_FROM, 1);
	const char *to = copygen_entered((const u8 *)COPYGEN_TO, 0);

	if (strcmp(from, to) == 0)
		pr_info("copygen-variant: %s\n", from);
	else
		pr_info("copygen-variant: from:%s,to:%s\n", from, to);
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
