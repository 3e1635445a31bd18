/*
 * How much does computing anything in front of `rep movsb` cost?
 *
 * The control experiment behind "What the guard costs" in
 * docs/results/amd-epyc-zen4.md: a bare
 * `rep movsb` against (1) copygen's alias guard (band 1..=15 widened to
 * 1..=16, the common path falling through to `rep movsb`), (2) the same ALU
 * instructions without the branch, (3) a branch on a constant, (4) four nops.
 * Each routine exists at eight code addresses (guard-cost.S, made by
 * guard-cost.sh) and is called from eight loops that differ in their leading
 * nops, so no single code placement decides a figure: a figure is the mean
 * over the 64 (callee, caller) pairs of the ratio of medians to the bare
 * `rep movsb` at the same placement index. TSC ticks; x86_64 only.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

typedef size_t (*copy_fn)(void *, const void *, size_t);
typedef void (*loop_fn)(void *, const void *, size_t, long, copy_fn);

#define PLACES 8
#define KINDS 5
#define ROUNDS 9
extern const copy_fn routines[KINDS][PLACES]; /* guard-cost.S */
extern const loop_fn loops[PLACES];
static const char *kinds[KINDS] = {"bare", "guard", "no branch", "const branch", "4 nops"};

static uint64_t tsc_start(void) { _mm_lfence(); uint64_t t = __rdtsc(); _mm_lfence(); return t; }
static uint64_t tsc_end(void) { unsigned a; uint64_t t = __rdtscp(&a); _mm_lfence(); return t; }
static int by_value(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(void) {
	static const size_t sizes[] = {8, 64, 127, 128, 129, 160, 192, 256, 512};
	char *buf = aligned_alloc(4096, 1 << 16);
	memset(buf, 1, 1 << 16);
	/* (dst - src) mod 4096 = 32: outside the guard's band */
	char *src = buf, *dst = buf + 16384 + 32;
	/* Warm up (clock, caches, predictors) for about 0.2 s before the first figure:
	 * without it the first rows wander by a few percent between runs. */
	for (uint64_t t0 = tsc_start(); tsc_end() - t0 < 500000000ull;)
		for (int k = 0; k < KINDS; k++)
			loops[k % PLACES](dst, src, 64, 100, routines[k][k % PLACES]);
	printf("ratio to a bare rep movsb (mean over %d placements x %d callers)\n", PLACES, PLACES);
	printf("%6s", "bytes");
	for (int k = 1; k < KINDS; k++) printf("  %12s", kinds[k]);
	printf("\n");
	for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
		double mean[KINDS] = {0};
		for (int place = 0; place < PLACES; place++)
			for (int caller = 0; caller < PLACES; caller++) {
				double t[KINDS][ROUNDS];
				for (int r = 0; r < ROUNDS; r++)
					for (int i = 0; i < KINDS; i++) {
						int k = (i + r) % KINDS; /* rotate the order */
						copy_fn f = routines[k][(place + 3 * k) % PLACES];
						loops[caller](dst, src, sizes[si], 10, f);
						uint64_t t0 = tsc_start();
						loops[caller](dst, src, sizes[si], 400, f);
						t[k][r] = (double)(tsc_end() - t0) / 400;
					}
				for (int k = 0; k < KINDS; k++) qsort(t[k], ROUNDS, sizeof(double), by_value);
				for (int k = 1; k < KINDS; k++)
					mean[k] += t[k][ROUNDS / 2] / t[0][ROUNDS / 2] / (PLACES * PLACES);
			}
		printf("%6zu", sizes[si]);
		for (int k = 1; k < KINDS; k++) printf("  %11.3fx", mean[k]);
		printf("\n");
	}
	return 0;
}
