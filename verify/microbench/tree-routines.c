/*
 * The kernel trees' own copy routines against copygen's emitted ones, timed without
 * copygen: the independent check of `copygen bench --site kernel`.
 *
 * tree-routines.sh links this with arch/x86/lib/copy_user_64.o as kbuild built it from
 * Debian's 6.1 and 6.12 trees (alternatives not applied: the code a CPU without ERMS or
 * FSRM runs), with emitted/x86_64/standalone/ files, and with a table of subjects
 * (tree-routines.S, written by the script): each subject is a small stub that reaches
 * its routine the way the kernel's call site does (a `call` of the routine, in the
 * routine's own convention; 6.12's FSRM site is the inline `rep movsb`, no call), so
 * every subject is called alike: one indirect call from the timing loop to the stub.
 * The first subject is the baseline.
 *
 *   tree-routines check
 *       every subject copies what memcpy copies and returns 0, at sizes 0..1100 and
 *       around 2, 4 and 8 KiB, at several (dst - src) mod 4096; nothing around the
 *       destination is written. Exit 1 on the first difference.
 *   tree-routines time ROUNDS ROW...
 *       ROW is `N@D` (size N, (dst - src) mod 4096 = D, the same copy repeated) or
 *       `FILE.csv` (an llvm-libc size distribution: one line of probabilities, size =
 *       index; source and destination at independent uniformly random offsets in a
 *       page). Every round times every (row, subject) pair in a freshly shuffled order
 *       on a freshly drawn sequence of copies, each subject after one untimed pass; a
 *       figure is the median over rounds: TSC ticks per call, and per subject the median
 *       of its per-round ratios to the baseline of the same round.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <x86intrin.h>

typedef size_t (*copy_fn)(void *dst, const void *src, size_t n);
struct subject {
	const char *name;
	copy_fn fn;
};
extern const struct subject subjects[]; /* tree-routines.S */
extern const long subject_count;

#define PAGE 4096
#define MAX_SIZE (64 * 1024)
#define SEQUENCE 4096 /* copies per distribution sequence */
#define REPEATS 256   /* calls per fixed-size measurement */
#define MAX_ROWS 64
#define MAX_SUBJECTS 16
#define MAX_ROUNDS 101

static uint64_t tsc_start(void) { _mm_lfence(); uint64_t t = __rdtsc(); _mm_lfence(); return t; }
static uint64_t tsc_end(void) { unsigned a; uint64_t t = __rdtscp(&a); _mm_lfence(); return t; }

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) { /* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void die(const char *what) {
	fprintf(stderr, "tree-routines: %s\n", what);
	exit(2);
}

/* Two regions of MAX_SIZE + 2 pages each, page aligned, far apart. */
static unsigned char *src_base, *dst_base;
static void map_buffers(void) {
	size_t len = MAX_SIZE + 4 * PAGE;
	src_base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dst_base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (src_base == MAP_FAILED || dst_base == MAP_FAILED) die("mmap failed");
	for (size_t i = 0; i < len; i++) src_base[i] = (unsigned char)(i * 131 + 7), dst_base[i] = 0;
}

/* ---- check -------------------------------------------------------------------------- */

static int check(void) {
	static const size_t big[] = {2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192, 8193};
	static const size_t dists[] = {0, 1, 7, 8, 15, 16, 33, 4095};
	long failures = 0;
	for (long s = 0; s < subject_count; s++) {
		long cases = 0;
		for (size_t di = 0; di < sizeof dists / sizeof *dists; di++)
			for (size_t k = 0; k <= 1100 + sizeof big / sizeof *big; k++) {
				size_t n = k <= 1100 ? k : big[k - 1101];
				unsigned char *src = src_base + PAGE + 3, *dst = dst_base + PAGE + 3 + dists[di];
				memset(dst - 64, 0xa5, n + 128);
				size_t left = subjects[s].fn(dst, src, n);
				cases++;
				int bad = left != 0 || memcmp(dst, src, n) != 0;
				for (size_t i = 0; i < 64 && !bad; i++)
					bad = dst[-1 - (long)i] != 0xa5 || dst[n + i] != 0xa5;
				if (bad) {
					printf("FAIL %s: n=%zu (dst - src) mod 4096=%zu: returned %zu%s\n", subjects[s].name,
					       n, dists[di], left, memcmp(dst, src, n) ? ", bytes differ" : "");
					failures++;
					break;
				}
			}
		printf("%-40s %ld copies checked\n", subjects[s].name, cases);
	}
	return failures ? 1 : 0;
}

/* ---- time --------------------------------------------------------------------------- */

struct row {
	char label[64];
	size_t size, dist;    /* fixed size, (dst - src) mod 4096 */
	double *cumulative;   /* distribution: P(size <= i), or NULL */
	size_t sizes;         /* entries of cumulative */
};

static void read_distribution(struct row *r, const char *path) {
	FILE *f = fopen(path, "r");
	if (!f) die("cannot open a distribution file");
	double total = 0, p;
	r->cumulative = calloc(MAX_SIZE + 1, sizeof(double));
	while (r->sizes <= MAX_SIZE && fscanf(f, "%lf", &p) == 1) {
		total += p;
		r->cumulative[r->sizes++] = total;
		if (fgetc(f) != ',') break;
	}
	fclose(f);
	if (!r->sizes || total <= 0) die("a distribution file holds no probabilities");
	for (size_t i = 0; i < r->sizes; i++) r->cumulative[i] /= total;
	const char *base = strrchr(path, '/');
	snprintf(r->label, sizeof r->label, "%s", base ? base + 1 : path);
	char *dot = strrchr(r->label, '.');
	if (dot) *dot = 0;
}

static void parse_row(struct row *r, const char *arg) {
	memset(r, 0, sizeof *r);
	if (strstr(arg, ".csv")) return read_distribution(r, arg);
	if (sscanf(arg, "%zu@%zu", &r->size, &r->dist) != 2 || r->size > MAX_SIZE || r->dist >= PAGE)
		die("a row is N@D (N <= 65536, D < 4096) or FILE.csv");
	snprintf(r->label, sizeof r->label, "%zu B @%zu", r->size, r->dist);
}

struct copy {
	unsigned char *dst;
	const unsigned char *src;
	size_t n;
};
static struct copy sequence[SEQUENCE];

/* Draws the row's copies for this round; returns how many a measurement makes. */
static size_t draw(const struct row *r) {
	if (!r->cumulative) {
		sequence[0] = (struct copy){dst_base + PAGE + r->dist, src_base + PAGE, r->size};
		return REPEATS;
	}
	for (size_t i = 0; i < SEQUENCE; i++) {
		double u = (double)(rng() >> 11) / (double)(1ull << 53);
		size_t lo = 0, hi = r->sizes - 1;
		while (lo < hi) { /* the first size whose cumulative probability exceeds u */
			size_t mid = (lo + hi) / 2;
			if (r->cumulative[mid] > u) hi = mid; else lo = mid + 1;
		}
		sequence[i] = (struct copy){dst_base + PAGE + rng() % PAGE, src_base + PAGE + rng() % PAGE, lo};
	}
	return SEQUENCE;
}

static double measure(copy_fn fn, const struct row *r, size_t calls) {
	uint64_t t0, t1;
	if (!r->cumulative) {
		struct copy c = sequence[0];
		for (size_t i = 0; i < calls; i++) fn(c.dst, c.src, c.n);
		t0 = tsc_start();
		for (size_t i = 0; i < calls; i++) fn(c.dst, c.src, c.n);
		t1 = tsc_end();
	} else {
		for (size_t i = 0; i < calls; i++) fn(sequence[i].dst, sequence[i].src, sequence[i].n);
		t0 = tsc_start();
		for (size_t i = 0; i < calls; i++) fn(sequence[i].dst, sequence[i].src, sequence[i].n);
		t1 = tsc_end();
	}
	return (double)(t1 - t0) / (double)calls;
}

static int by_value(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}
static double median(double *v, int n) {
	qsort(v, n, sizeof *v, by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int time_rows(int rounds, int nrows, char **args) {
	static struct row rows[MAX_ROWS];
	static double ticks[MAX_ROWS][MAX_SUBJECTS][MAX_ROUNDS];
	if (rounds < 1 || rounds > MAX_ROUNDS) die("ROUNDS: 1..101");
	if (nrows < 1 || nrows > MAX_ROWS) die("1..64 rows");
	if (subject_count < 1 || subject_count > MAX_SUBJECTS) die("1..16 subjects");
	for (int i = 0; i < nrows; i++) parse_row(&rows[i], args[i]);
	/* Warm up (clock, caches, predictors) for about 0.2 s. */
	for (uint64_t t0 = tsc_start(); tsc_end() - t0 < 500000000ull;)
		for (long s = 0; s < subject_count; s++) subjects[s].fn(dst_base + PAGE, src_base + PAGE, 256);
	for (int round = 0; round < rounds; round++)
		for (int i = 0; i < nrows; i++) {
			size_t calls = draw(&rows[i]);
			long order[MAX_SUBJECTS];
			for (long s = 0; s < subject_count; s++) order[s] = s;
			for (long s = subject_count - 1; s > 0; s--) { /* Fisher-Yates */
				long j = (long)(rng() % (uint64_t)(s + 1)), t = order[s];
				order[s] = order[j], order[j] = t;
			}
			for (long s = 0; s < subject_count; s++)
				ticks[i][order[s]][round] = measure(subjects[order[s]].fn, &rows[i], calls);
		}
	printf("TSC ticks per call, median of %d rounds; (x) = median of the per-round ratios to %s\n",
	       rounds, subjects[0].name);
	printf("%-20s", "row");
	for (long s = 0; s < subject_count; s++) printf("  %24s", subjects[s].name);
	printf("\n");
	for (int i = 0; i < nrows; i++) {
		printf("%-20s", rows[i].label);
		for (long s = 0; s < subject_count; s++) {
			double ratio[MAX_ROUNDS], t[MAX_ROUNDS];
			for (int r = 0; r < rounds; r++) ratio[r] = ticks[i][s][r] / ticks[i][0][r], t[r] = ticks[i][s][r];
			char cell[64];
			snprintf(cell, sizeof cell, "%.1f (%.2fx)", median(t, rounds), median(ratio, rounds));
			printf("  %24s", cell);
		}
		printf("\n");
	}
	return 0;
}

int main(int argc, char **argv) {
	map_buffers();
	if (argc == 2 && !strcmp(argv[1], "check")) return check();
	if (argc >= 4 && !strcmp(argv[1], "time")) return time_rows(atoi(argv[2]), argc - 3, argv + 3);
	fprintf(stderr, "usage: tree-routines check | tree-routines time ROUNDS ROW...\n");
	return 2;
}
