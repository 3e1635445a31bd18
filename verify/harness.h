/*
 * The manifest's shape: one row per entry point of the standalone .S file
 * linked with harness.c. copygen (generator/checks/faultinject.rs) writes the
 * manifest from the lowered routines; tests write it by hand for fixtures.
 */
#ifndef COPYGEN_HARNESS_H
#define COPYGEN_HARNESS_H

/* Constant-size entries take (to, from); calling them with a third
 * argument is harmless in SysV, cdecl and AAPCS alike. */
typedef unsigned long (*copy_fn)(void *to, const void *from, unsigned long n);

struct routine {
	const char *name;
	copy_fn fn;
	int to_user;     /* 0: from_user (loads fault), 1: to_user (stores fault) */
	unsigned fixed;  /* 0: f(to, from, n); N: copies N bytes, n not passed */
	int zero_tail;   /* from_user zeroes to[copied, n) on a fault */
	int exact;       /* precision = "exact": shortfall must be 0 */
};

extern const struct routine routines[];
extern const unsigned n_routines;

#endif
