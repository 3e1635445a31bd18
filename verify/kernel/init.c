/*
 * PID 1 of copygen's boot test (verify/kernel-boot): runs inside a kernel whose
 * raw_copy_{from,to}_user call a copygen routine, and checks that routine through
 * the kernel's own paths.
 *
 *   1. Mounts devtmpfs, proc and tmpfs; on x86 requires SMAP (so a missing STAC
 *      faults) and reports FSRM (without it 6.12 calls rep_movs_alternative).
 *   2. The kernel's own usercopy tests: on 6.1 loads /test_user_copy.ko with
 *      finit_module and requires its "test_user_copy: tests passed." record in
 *      /dev/kmsg; on 6.12 (no module in the initramfs) requires the built-in
 *      KUnit suite's "# usercopy: pass:N fail:0" and "ok N usercopy" records.
 *   3. read()s from and write()s to a tmpfs file with a user buffer that runs into a
 *      PROT_NONE page after `acc` accessible bytes (every acc in 0..64 and some larger
 *      ones), for sizes up to 8 KiB and three file offsets, and checks the returned
 *      count and every byte around the buffer and in the file.
 *   4. Prints one summary line "copygen-boot: PASS|FAIL ..." and reboots (qemu runs
 *      with -no-reboot, so that ends the VM). It names the per-CPU variant the
 *      kernel's patched entry points enter, as its "copygen-variant: NAME (N jumps)"
 *      record says (verify/kernel/copygen_variant.c): variant=NAME, none without
 *      variants, and jumps=N, the jumps taken on the way (- without variants).
 *
 * Kernel command-line variables (the kernel passes them in the environment):
 *   copygen_preset=NAME   printed in the summary
 *   copygen_exact=1       the routine claims exact fault precision: a short count must
 *                         equal the accessible byte count. Otherwise the contract's
 *                         bounds apply: 0 < count <= accessible, -EFAULT when 0.
 *
 * Built with `gcc -static -O2`; needs nothing but the kernel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#define PG 4096L
#define RW_PAGES 3 /* accessible user pages before the PROT_NONE one */
#define FILE_SIZE (4 * PG)
#define CANARY 64 /* bytes checked before the buffer */
#define MAX_REPORTS 20

static const long accs_big[] = {65, 100, 127, 128, 129, 255, 256, 1000, 4095, 4096, 4097, 8191};
static const long sizes[] = {1,   2,   3,    4,    5,    6,    7,    8,    9,    15,   16,  17,
			     31,  32,  33,   63,   64,   65,   66,   100,  127,  128,  129, 255,
			     256, 257, 511,  512,  1000, 1024, 2047, 2048, 4095, 4096, 4097, 8192};
static const long file_offsets[] = {0, 5, PG - 6}; /* the last one crosses a page cache page */

static const char *preset = "?";
static char variant[64] = "none";
static char variant_jumps[16] = "-";
static int exact;
static const char *smap = "n/a", *fsrm = "n/a"; /* x86 CPU flags, "yes"/"no" */
static char usercopy[128] = "not-run";
static long cases, failures;
static long shortfall_max; /* the most bytes a short count left uncopied that were accessible */

static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (len > (int)sizeof(line) - 1)
		len = sizeof(line) - 1;
	/* stdout is the console; write(2) directly so nothing sits in a buffer at reboot */
	if (write(1, line, len) < 0)
		_exit(1);
}

static __attribute__((noreturn)) void finish(const char *status)
{
	struct utsname u;

	if (uname(&u))
		strcpy(u.release, "?"), strcpy(u.machine, "?");
	say("copygen-boot: %s kernel=%s machine=%s preset=%s variant=%s jumps=%s precision=%s smap=%s fsrm=%s usercopy=%s syscall_cases=%ld shortfall_max=%ld failures=%ld\n",
	    status, u.release, u.machine, preset, variant, variant_jumps, exact ? "exact" : "bounds", smap, fsrm, usercopy, cases,
	    shortfall_max, failures);
	sync();
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

static __attribute__((noreturn)) void die(const char *what)
{
	say("copygen-boot: %s: %s\n", what, strerror(errno));
	failures++;
	finish("FAIL");
}

/* Distinct byte patterns: the file's content, the bytes written, the canary. */
static unsigned char file_byte(long i) { return (unsigned char)(i * 7 + (i >> 8) + 1); }
static unsigned char src_byte(long i) { return (unsigned char)((i * 13) ^ 0x5c) | 0x80; }
static unsigned char canary_byte(long i) { return (unsigned char)(0xa5 ^ (i * 3)); }

static void report(const char *dir, long acc, long n, long fo, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	failures++;
	if (failures > MAX_REPORTS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	say("copygen-boot: FAIL %s acc=%ld n=%ld file_off=%ld: %s\n", dir, acc, n, fo, msg);
}

/* The count a syscall of n bytes may return when only acc bytes of the buffer are mapped. */
static int count_ok(long ret, int err, long acc, long n, char *why, size_t whylen)
{
	if (acc >= n) {
		if (ret == n)
			return 1;
		snprintf(why, whylen, "returned %ld (errno %d), want %ld", ret, ret < 0 ? err : 0, n);
	} else if (acc == 0) {
		if (ret == -1 && err == EFAULT)
			return 1;
		snprintf(why, whylen, "returned %ld (errno %d), want -EFAULT", ret, ret < 0 ? err : 0);
	} else if (exact) {
		if (ret == acc)
			return 1;
		snprintf(why, whylen, "returned %ld (errno %d), want exactly %ld", ret, ret < 0 ? err : 0, acc);
	} else {
		if (ret > 0 && ret <= acc) {
			if (acc - ret > shortfall_max)
				shortfall_max = acc - ret;
			return 1;
		}
		snprintf(why, whylen, "returned %ld (errno %d), want 1..=%ld", ret, ret < 0 ? err : 0, acc);
	}
	return 0;
}

/* First index in [from, to) where buf[i - base] != pat(i), or -1. */
static long mismatch(const unsigned char *buf, long from, long to, long base, unsigned char (*pat)(long))
{
	for (long i = from; i < to; i++)
		if (buf[i - base] != pat(i))
			return i;
	return -1;
}

static void fill(unsigned char *buf, long from, long to, long base, unsigned char (*pat)(long))
{
	for (long i = from; i < to; i++)
		buf[i - base] = pat(i);
}

static unsigned char *region, *guard;
static unsigned char file_copy[FILE_SIZE];
static unsigned char check[FILE_SIZE];
static int fd;

/*
 * The canary covers the CANARY bytes before the buffer and its mapped bytes. Canary
 * indices are relative to the guard page (negative), so a shifted copy shows.
 */
static void fill_user(long acc, unsigned char (*pat)(long))
{
	long lo = -acc - CANARY;

	if (lo < -(RW_PAGES * PG))
		lo = -(RW_PAGES * PG);
	fill(guard, lo, -acc, 0, canary_byte);
	fill(guard, -acc, 0, 0, pat);
}

static void read_case(long acc, long n, long fo)
{
	unsigned char *buf = guard - acc;
	long ret, bad, mapped = acc < n ? acc : n, lo = -acc - CANARY;
	char why[128];
	int err;

	cases++;
	fill_user(acc, canary_byte);
	if (lseek(fd, fo, SEEK_SET) != fo)
		die("lseek");
	errno = 0;
	ret = read(fd, buf, n);
	err = errno;
	if (!count_ok(ret, err, acc, n, why, sizeof(why))) {
		report("read", acc, n, fo, "%s", why);
		return;
	}
	if (ret < 0)
		ret = 0;
	/* the reported bytes are the file's */
	for (long i = 0; i < ret; i++)
		if (buf[i] != file_byte(fo + i)) {
			report("read", acc, n, fo, "byte %ld is %#x, file has %#x", i, buf[i], file_byte(fo + i));
			return;
		}
	/* mapped bytes past the count, and the bytes before the buffer, are untouched */
	bad = mismatch(guard, -acc + ret, -acc + mapped, 0, canary_byte);
	if (bad >= 0) {
		report("read", acc, n, fo, "byte %ld past the count (%ld) was written", bad + acc, ret);
		return;
	}
	if (lo < -(RW_PAGES * PG))
		lo = -(RW_PAGES * PG);
	bad = mismatch(guard, lo, -acc, 0, canary_byte);
	if (bad >= 0)
		report("read", acc, n, fo, "byte %ld before the buffer was written", bad + acc);
}

static void write_case(long acc, long n, long fo)
{
	unsigned char *buf = guard - acc;
	long ret, lo, hi;
	char why[128];
	int err;

	cases++;
	fill_user(acc, src_byte);
	if (lseek(fd, fo, SEEK_SET) != fo)
		die("lseek");
	errno = 0;
	ret = write(fd, buf, n);
	err = errno;
	if (!count_ok(ret, err, acc, n, why, sizeof(why))) {
		report("write", acc, n, fo, "%s", why);
		goto restore;
	}
	if (ret < 0)
		ret = 0;
	/* the file: the reported bytes are the buffer's, everything around is as before */
	lo = fo >= CANARY ? fo - CANARY : 0;
	hi = fo + n + CANARY <= FILE_SIZE ? fo + n + CANARY : FILE_SIZE;
	if (pread(fd, check, hi - lo, lo) != hi - lo)
		die("pread");
	for (long i = lo; i < hi; i++) {
		unsigned char want = i >= fo && i < fo + ret ? src_byte(i - fo - acc) : file_copy[i];

		if (check[i - lo] != want) {
			report("write", acc, n, fo, "file byte %ld is %#x, want %#x (count %ld)", i,
			       check[i - lo], want, ret);
			break;
		}
	}
restore:
	if (pwrite(fd, file_copy + fo, n, fo) != n)
		die("pwrite (restore)");
}

/* Every /dev/kmsg record's message, one per call of `seen`, from `from_end`
 * (only records logged from now on) or from the start of the log. */
static int open_kmsg(int from_end)
{
	int kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (kmsg < 0)
		die("open /dev/kmsg");
	if (from_end && lseek(kmsg, 0, SEEK_END) < 0)
		die("lseek /dev/kmsg");
	return kmsg;
}

/* The next record's message (after "prio,seq,time,flags;"), or NULL at the end. */
static const char *next_record(int kmsg)
{
	static char rec[8192];
	ssize_t len;
	char *msg;

	while ((len = read(kmsg, rec, sizeof(rec) - 1)) < 0 && errno == EPIPE)
		; /* overwritten records: read on */
	if (len <= 0)
		return NULL;
	rec[len] = 0;
	msg = strchr(rec, ';');
	return msg ? msg + 1 : "";
}

/* The "copygen-variant: NAME (N jumps)" record the kernel logged at boot, if any. */
static void read_variant(void)
{
	static const char tag[] = "copygen-variant: ";
	int kmsg = open_kmsg(0);
	const char *msg, *name;
	int len, jumps;

	while ((msg = next_record(kmsg))) {
		if (strncmp(msg, tag, sizeof(tag) - 1) != 0)
			continue;
		name = msg + sizeof(tag) - 1;
		len = (int)strcspn(name, " \n");
		snprintf(variant, sizeof(variant), "%.*s", len, name);
		if (sscanf(name + len, " (%d jump", &jumps) == 1)
			snprintf(variant_jumps, sizeof(variant_jumps), "%d", jumps);
	}
	close(kmsg);
}

/* 6.1: test_user_copy.ko */
static void load_test_user_copy(void)
{
	int kmsg = open_kmsg(1), mod, found = 0;
	const char *msg;
	long rc;

	mod = open("/test_user_copy.ko", O_RDONLY | O_CLOEXEC);
	if (mod < 0)
		die("open /test_user_copy.ko");
	rc = syscall(SYS_finit_module, mod, "", 0);
	if (rc != 0) {
		say("copygen-boot: finit_module(test_user_copy.ko): %s\n", strerror(errno));
		failures++;
	}
	close(mod);
	while ((msg = next_record(kmsg)))
		if (strncmp(msg, "test_user_copy: tests passed.", 29) == 0)
			found = 1;
	close(kmsg);
	if (!found) {
		say("copygen-boot: no \"test_user_copy: tests passed.\" in /dev/kmsg\n");
		failures++;
	}
	snprintf(usercopy, sizeof(usercopy), "test_user_copy:%s", rc == 0 && found ? "ok" : "FAILED");
}

/* A KUnit suite's records on the console: "# NAME: pass:.. fail:.. skip:.. total:.." and "ok N NAME". */
struct kunit_suite_result {
	const char *name;
	int optional, ok;
	long pass, fail, skip, total;
};

static void kunit_record(struct kunit_suite_result *r, const char *msg)
{
	char head[80];
	size_t n = strlen(r->name);

	snprintf(head, sizeof(head), "# %s: pass:%%ld fail:%%ld skip:%%ld total:%%ld", r->name);
	if (sscanf(msg, head, &r->pass, &r->fail, &r->skip, &r->total) == 4)
		return;
	/* "ok N NAME\n" */
	if (strncmp(msg, "ok ", 3) == 0) {
		const char *end = strchr(msg, '\n');

		if (end && end - msg > (long)n + 1 && end[-(long)n - 1] == ' ' && strncmp(end - n, r->name, n) == 0)
			r->ok = 1;
	}
}

static int kunit_passed(const struct kunit_suite_result *r)
{
	return r->ok && r->fail == 0 && r->pass > 0;
}

/*
 * 6.12: the built-in KUnit suites ran before /init: the tree's lib/usercopy_kunit.c and,
 * when the patch carries it (kernel-patch --kunit; kernel-boot's always does on 6.12), the
 * generated routines' lib/copygen_usercopy_kunit.c, whose timing table is on the console.
 */
static void check_kunit_usercopy(void)
{
	/* (the patch's suite is optional: a kernel without it reports it absent) */
	struct kunit_suite_result suites[] = {
		{ "usercopy", 0, 0, -1, -1, -1, -1 },
		{ "copygen_usercopy", 1, 0, -1, -1, -1, -1 },
	};
	size_t i, n = sizeof(suites) / sizeof(suites[0]), at;
	int kmsg = open_kmsg(0), failed = 0;
	const char *msg;

	while ((msg = next_record(kmsg))) {
		while (*msg == ' ')
			msg++;
		for (i = 0; i < n; i++)
			kunit_record(&suites[i], msg);
	}
	close(kmsg);
	at = snprintf(usercopy, sizeof(usercopy), "kunit:");
	for (i = 0; i < n; i++) {
		const struct kunit_suite_result *r = &suites[i];
		const char *sep = i ? "," : "";

		if (r->optional && r->total < 0 && !r->ok) {
			at += snprintf(usercopy + at, sizeof(usercopy) - at, "%s%s=absent", sep, r->name);
			continue;
		}
		if (!kunit_passed(r)) {
			say("copygen-boot: KUnit %s: ok=%d pass=%ld fail=%ld skip=%ld total=%ld\n", r->name, r->ok,
			    r->pass, r->fail, r->skip, r->total);
			failed = 1;
		}
		at += snprintf(usercopy + at, sizeof(usercopy) - at, "%s%s=%s(%ld/%ld)", sep, r->name,
			       kunit_passed(r) ? "ok" : "FAILED", r->pass, r->total);
	}
	if (failed)
		failures++;
}

#if defined(__x86_64__) || defined(__i386__)
static int have_cpu_flag(const char *flag)
{
	static char info[65536];
	int f = open("/proc/cpuinfo", O_RDONLY);
	ssize_t len, total = 0;

	if (f < 0)
		die("open /proc/cpuinfo");
	while (total < (ssize_t)sizeof(info) - 1 && (len = read(f, info + total, sizeof(info) - 1 - total)) > 0)
		total += len;
	close(f);
	info[total] = 0;
	for (char *p = info; (p = strstr(p, flag)); p++)
		if (p[-1] == ' ' && (p[strlen(flag)] == ' ' || p[strlen(flag)] == '\n'))
			return 1;
	return 0;
}
#endif

int main(void)
{
	if (getenv("copygen_preset"))
		preset = getenv("copygen_preset");
	exact = getenv("copygen_exact") && strcmp(getenv("copygen_exact"), "1") == 0;

	mkdir("/dev", 0755);
	mkdir("/proc", 0755);
	mkdir("/tmp", 01777);
	if (mount("devtmpfs", "/dev", "devtmpfs", 0, NULL))
		die("mount devtmpfs");
	if (mount("proc", "/proc", "proc", 0, NULL))
		die("mount proc");
	if (mount("tmpfs", "/tmp", "tmpfs", 0, NULL))
		die("mount tmpfs");
#if defined(__x86_64__) || defined(__i386__)
	smap = have_cpu_flag("smap") ? "yes" : "no";
	fsrm = have_cpu_flag("fsrm") ? "yes" : "no";
	if (strcmp(smap, "yes")) {
		say("copygen-boot: the CPU has no SMAP: STAC/CLAC would go untested\n");
		failures++;
	}
#endif

	read_variant();
	if (access("/test_user_copy.ko", F_OK) == 0)
		load_test_user_copy();
	else
		check_kunit_usercopy();

	region = mmap(NULL, (RW_PAGES + 1) * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (region == MAP_FAILED)
		die("mmap");
	guard = region + RW_PAGES * PG;
	if (mprotect(guard, PG, PROT_NONE))
		die("mprotect");

	fd = open("/tmp/data", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		die("open /tmp/data");
	fill(file_copy, 0, FILE_SIZE, 0, file_byte);
	if (write(fd, file_copy, FILE_SIZE) != FILE_SIZE)
		die("write /tmp/data");

	for (long a = 0; a < 65 + (long)(sizeof(accs_big) / sizeof(accs_big[0])); a++) {
		long acc = a < 65 ? a : accs_big[a - 65];

		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			for (size_t o = 0; o < sizeof(file_offsets) / sizeof(file_offsets[0]); o++) {
				read_case(acc, sizes[s], file_offsets[o]);
				write_case(acc, sizes[s], file_offsets[o]);
			}
	}
	if (failures > MAX_REPORTS)
		say("copygen-boot: (%ld more failures not shown)\n", failures - MAX_REPORTS);

	finish(failures ? "FAIL" : "PASS");
}
