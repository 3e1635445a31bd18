/*
 * copygen fault-injection harness: runs the entry points of one standalone
 * .S file (listed by a generated manifest, see harness.h) against the
 * uaccess contract (CONTRACT.md §1), with the user side of every copy
 * ending at a PROT_NONE page so that real CPU faults happen at chosen
 * offsets. The SIGSEGV/SIGBUS handler resolves them through __ex_table
 * exactly as the kernel does: find the entry whose insn is the faulting
 * PC and resume at its fixup.
 *
 * Builds as x86_64 (gcc), i386 (gcc -m32), ARMv6 (arm-linux-gnueabi-gcc
 * -march=armv6 -marm -static, run under qemu-arm -cpu arm1176) and AArch64
 * (aarch64-linux-gnu-gcc -static, run under qemu-aarch64).
 *
 * Output, one line per routine, then at most `max_details` violations:
 *   routine <name> cases <c> violations <v> max_shortfall <s>
 *   violation <name> n=<n> f=<f|none> ...: <what>
 * Exit status 1 on any violation, 2 if the harness itself cannot run, 3
 * if the code under test made a system call the harness's seccomp filter
 * refuses (its number on stderr: "harness: seccomp: system call N").
 *
 * Arguments: max_details, then "seccomp" (native: install the filter, or
 * fail) or "qemu" (qemu-user refuses guest filters; copygen's sandbox
 * around qemu is what holds there).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"

#if defined(__x86_64__)
#define PC(uc) ((uc)->uc_mcontext.gregs[REG_RIP])
#elif defined(__i386__)
#define PC(uc) ((uc)->uc_mcontext.gregs[REG_EIP])
#elif defined(__arm__)
#define PC(uc) ((uc)->uc_mcontext.arm_pc)
#elif defined(__aarch64__)
#define PC(uc) ((uc)->uc_mcontext.pc)
#elif defined(__riscv) && __riscv_xlen == 64
#define PC(uc) ((uc)->uc_mcontext.__gregs[REG_PC])
#else
#error "copygen harness: x86_64, i386, 32-bit ARM, AArch64 or RV64 only"
#endif

/* Standalone entries: two words, each relative to its own address. */
struct ex_entry {
	int32_t insn, fixup;
};
/* Weak: a file without any user access has no __ex_table section. */
extern const struct ex_entry __start___ex_table[] __attribute__((weak));
extern const struct ex_entry __stop___ex_table[] __attribute__((weak));

#define PAGE 4096u
#define UPAGES 4u       /* user buffer: up to 16 KiB before its guard */
#define KPAGES 5u       /* kernel buffer: 12 KiB + up to 4 KiB of slack */
#define WINDOW 64u      /* bytes either side of the destination checked */
#define MAX_FAULTS 64u  /* more faults than this in one call: a fault loop */
#define PAT_SIZE (UPAGES * PAGE + 2 * WINDOW + 256)

/* ---- fault handling: no allocation, locking or printing in here ---- */

enum fault_kind { F_NONE, F_UNENTRIED, F_NOT_USER, F_LOOP, F_HANG };

static volatile sig_atomic_t armed;
static sigjmp_buf recover;
static volatile enum fault_kind fault_kind;
static volatile uintptr_t fault_pc, fault_addr;
static volatile unsigned nfaults;
/* The user side's guard page: the only place a user access may fault. */
static volatile uintptr_t user_guard;

static void give_up(enum fault_kind kind, uintptr_t pc, uintptr_t addr)
{
	fault_kind = kind;
	fault_pc = pc;
	fault_addr = addr;
	armed = 0;
	siglongjmp(recover, 1);
}

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uintptr_t pc = (uintptr_t)PC(uc);
	uintptr_t addr = (uintptr_t)si->si_addr;
	const struct ex_entry *e;

	if (!armed) {
		/* Not ours (a harness bug): die of it on return. */
		signal(sig, SIG_DFL);
		return;
	}
	for (e = __start___ex_table; e < __stop___ex_table; e++)
		if ((uintptr_t)&e->insn + e->insn == pc)
			break;
	if (e >= __stop___ex_table)
		give_up(F_UNENTRIED, pc, addr);
	/* An access straddling the boundary may report its own start. */
	if (addr + 16 < user_guard || addr >= user_guard + PAGE)
		give_up(F_NOT_USER, pc, addr);
	if (++nfaults > MAX_FAULTS)
		give_up(F_LOOP, pc, addr);
	PC(uc) = (uintptr_t)&e->fixup + e->fixup;
}

static void on_alarm(int sig)
{
	(void)sig;
	if (armed)
		give_up(F_HANG, 0, 0);
}

static void install_handlers(void)
{
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
	struct sigaction sa;

	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		exit(2);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGBUS, &sa, NULL) != 0) {
		perror("sigaction");
		exit(2);
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
}

/* ---- seccomp: once set up, the harness only writes and exits ---- */

/* The kernel's uapi headers are not there for every target (gcc -m32 has
 * none), so the few constants are spelled out: linux/seccomp.h,
 * linux/filter.h, linux/audit.h, linux/prctl.h. */
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_RET_KILL_PROCESS 0x80000000u
#define SECCOMP_RET_TRAP 0x00030000u
#define SECCOMP_RET_ALLOW 0x7fff0000u
#define PR_SET_NO_NEW_PRIVS 38
#define BPF_LD 0x00
#define BPF_W 0x00
#define BPF_ABS 0x20
#define BPF_JMP 0x05
#define BPF_JEQ 0x10
#define BPF_JGE 0x30
#define BPF_K 0x00
#define BPF_RET 0x06
#define BPF_STMT(code, k) { (unsigned short)(code), 0, 0, (k) }
#define BPF_JUMP(code, k, jt, jf) { (unsigned short)(code), (jt), (jf), (k) }
#define SECCOMP_DATA_NR 0
#define SECCOMP_DATA_ARCH 4

struct sock_filter {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
struct sock_fprog {
	unsigned short len;
	struct sock_filter *filter;
};

#if defined(__x86_64__)
#define NATIVE_ARCH 0xc000003eu
#elif defined(__i386__)
#define NATIVE_ARCH 0x40000003u
#elif defined(__arm__)
#define NATIVE_ARCH 0x40000028u
#elif defined(__aarch64__)
#define NATIVE_ARCH 0xc00000b7u
#elif defined(__riscv)
#define NATIVE_ARCH 0xc00000f3u
#endif

#if defined(__i386__)
/* arch/x86/entry/syscalls/syscall_32.tbl */
#define __NR_exit 1
#define __NR_write 4
#define __NR_alarm 27
#define __NR_brk 45
#define __NR_munmap 91
#define __NR_setitimer 104
#define __NR_fstat 108
#define __NR_sigreturn 119
#define __NR_prctl 172
#define __NR_rt_sigreturn 173
#define __NR_mmap2 192
#define __NR_fstat64 197
#define __NR_exit_group 252
#define __NR_fstatat64 300
#define __NR_seccomp 354
#define __NR_getrandom 355
#define __NR_statx 383
#else
#include <sys/syscall.h>
#endif

#define ALLOW_NR(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

static void put_str(const char *s)
{
	ssize_t r = write(2, s, strlen(s));
	(void)r;
}

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	char num[24];
	int i = sizeof num - 1;
	long nr = si->si_syscall;

	(void)sig;
	(void)ctx;
	num[i] = 0;
	do {
		num[--i] = (char)('0' + nr % 10);
		nr /= 10;
	} while (nr > 0 && i > 0);
	put_str("harness: seccomp: system call ");
	put_str(num + i);
	put_str("\n");
	_exit(3);
}

/* Allowed: output, exit, signal return, alarm, and what stdio's first
 * write may need (fstat, memory for its buffer, malloc's getrandom); anything else, or a
 * call through another ABI (int $0x80 from 64-bit code), traps. */
static void install_seccomp(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARCH),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_NR),
#if defined(__x86_64__)
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
#endif
		ALLOW_NR(__NR_write),
		ALLOW_NR(__NR_exit),
		ALLOW_NR(__NR_exit_group),
		ALLOW_NR(__NR_rt_sigreturn),
#ifdef __NR_sigreturn
		ALLOW_NR(__NR_sigreturn),
#endif
#ifdef __NR_alarm
		ALLOW_NR(__NR_alarm),
#endif
		ALLOW_NR(__NR_setitimer),
		ALLOW_NR(__NR_brk),
#ifdef __NR_mmap
		ALLOW_NR(__NR_mmap),
#endif
#ifdef __NR_mmap2
		ALLOW_NR(__NR_mmap2),
#endif
		ALLOW_NR(__NR_munmap),
		ALLOW_NR(__NR_getrandom),
#ifdef __NR_fstat
		ALLOW_NR(__NR_fstat),
#endif
#ifdef __NR_fstat64
		ALLOW_NR(__NR_fstat64),
#endif
#ifdef __NR_newfstatat
		ALLOW_NR(__NR_newfstatat),
#endif
#ifdef __NR_fstatat64
		ALLOW_NR(__NR_fstatat64),
#endif
#ifdef __NR_statx
		ALLOW_NR(__NR_statx),
#endif
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
	};
	struct sock_fprog prog = { sizeof filter / sizeof filter[0], filter };
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) != 0) {
		perror("sigaction");
		exit(2);
	}
	if (syscall(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		perror("harness: installing the seccomp filter");
		exit(2);
	}
}

/* ---- buffers ---- */

/* [guard][pages][guard]; returns the start of the accessible pages. */
static unsigned char *guarded(unsigned pages)
{
	size_t len = (size_t)(pages + 2) * PAGE;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	if (mprotect(p, PAGE, PROT_NONE) != 0 ||
	    mprotect(p + (size_t)(pages + 1) * PAGE, PAGE, PROT_NONE) != 0) {
		perror("mprotect");
		exit(2);
	}
	return p + PAGE;
}

static uint32_t rng;
static uint32_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

/* Source bytes are pat[base + i], untouched destination bytes
 * canary[base + i]; canary[k] != pat[k] for every k, so every byte of the
 * destination tells whether it was copied, and from where. */
static unsigned char pat[PAT_SIZE], canary[PAT_SIZE];

static unsigned char *ubase, *uend, *kbase, *kend;

/* ---- results ---- */

struct tally {
	unsigned long cases, violations, max_shortfall;
};

static unsigned max_details = 20;
static unsigned details_printed;
static unsigned long total_violations;

struct kase {
	const struct routine *r;
	unsigned long n;
	long f;              /* fault offset, -1: none */
	unsigned long uoff;  /* user pointer = uend - uoff */
	unsigned long slack; /* kernel pointer = kend - n - slack */
	unsigned base;       /* pattern offset */
};

static void violation(const struct kase *k, unsigned char *dst, unsigned char *src,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void violation(const struct kase *k, unsigned char *dst, unsigned char *src,
		      const char *fmt, ...)
{
	va_list ap;

	total_violations++;
	if (details_printed >= max_details)
		return;
	details_printed++;
	printf("violation %s n=%lu f=", k->r->name, k->n);
	if (k->f < 0)
		printf("none");
	else
		printf("%ld", k->f);
	printf(" dst%%64=%u src%%64=%u alias=%lu: ",
	       (unsigned)((uintptr_t)dst % 64), (unsigned)((uintptr_t)src % 64),
	       (unsigned long)(((uintptr_t)dst - (uintptr_t)src) % 4096));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* First offset in [lo, hi) where d[i] != want(i); -1 if none. */
static long mismatch(const unsigned char *d, const unsigned char *want, long lo, long hi)
{
	for (long i = lo; i < hi; i++)
		if (d[i] != want[i])
			return i;
	return -1;
}

static long nonzero(const unsigned char *d, long lo, long hi)
{
	for (long i = lo; i < hi; i++)
		if (d[i] != 0)
			return i;
	return -1;
}

/* Call r->fn with faults armed; 1 if the harness had to take over (a
 * fault with no entry, outside the guard page, a fault loop, a hang). */
static __attribute__((noinline)) int call(const struct routine *r, unsigned char *dst,
					  unsigned char *src, unsigned long n, unsigned long *ret)
{
	user_guard = (uintptr_t)uend;
	nfaults = 0;
	fault_kind = F_NONE;
	if (sigsetjmp(recover, 0) != 0)
		return 1;
	armed = 1;
	*ret = r->fn(dst, src, n);
	armed = 0;
	return 0;
}

/* Run one case; returns 1 if it violated the contract. */
static int run_case(const struct kase *k, struct tally *t)
{
	const struct routine *r = k->r;
	unsigned long n = k->n;
	unsigned char *user = uend - k->uoff;
	unsigned char *kern = kend - n - k->slack;
	/* Accessible bytes of the user side from its pointer. */
	unsigned long acc = k->f >= 0 ? (unsigned long)k->f : n;
	unsigned char *dst = r->to_user ? user : kern;
	unsigned char *src = r->to_user ? kern : user;
	unsigned long dst_acc = r->to_user ? acc : n;
	/* The checked destination window: WINDOW bytes either side, clipped
	 * to the mapping (a guard page catches what lies beyond). */
	unsigned char *dlo = r->to_user ? ubase : kbase, *dhi = r->to_user ? uend : kend;
	long wlo = (long)(dst - dlo) < (long)WINDOW ? -(long)(dst - dlo) : -(long)WINDOW;
	long whi = (long)(dhi - dst) < (long)(n + WINDOW) ? (long)(dhi - dst) : (long)(n + WINDOW);
	const unsigned char *want_pat = pat + k->base + WINDOW;
	const unsigned char *want_can = canary + k->base + WINDOW;
	unsigned long ret, copied;
	long at;

	t->cases++;
	memcpy(src, want_pat, r->to_user ? n : acc);
	memcpy(dst + wlo, want_can + wlo, (size_t)(whi - wlo));

	if (call(r, dst, src, n, &ret)) {
		switch (fault_kind) {
		case F_UNENTRIED:
			violation(k, dst, src, "fault at pc %#lx (addr %#lx) has no __ex_table entry",
				  (unsigned long)fault_pc, (unsigned long)fault_addr);
			break;
		case F_NOT_USER:
			violation(k, dst, src, "fault outside the user side's guard page: pc %#lx addr %#lx (user end %#lx)",
				  (unsigned long)fault_pc, (unsigned long)fault_addr, (unsigned long)(uintptr_t)uend);
			break;
		case F_LOOP:
			violation(k, dst, src, "more than %u faults in one call: fixup loop at pc %#lx",
				  MAX_FAULTS, (unsigned long)fault_pc);
			break;
		default:
			violation(k, dst, src, "no return within 10 s (hang)");
			break;
		}
		return 1;
	}

	if (ret > n) {
		violation(k, dst, src, "returned %lu > n", ret);
		return 1;
	}
	copied = n - ret;
	if (k->f < 0 && ret != 0) {
		violation(k, dst, src, "no fault, but returned %lu not copied", ret);
		return 1;
	}
	if (k->f >= 0) {
		unsigned long f = (unsigned long)k->f;
		if (copied > f) {
			violation(k, dst, src, "claims %lu bytes copied, but byte %lu faults", copied, f);
			return 1;
		}
		if (f > 0 && copied == 0) {
			violation(k, dst, src, "no progress: nothing copied though %lu bytes were accessible", f);
			return 1;
		}
		if (f - copied > t->max_shortfall)
			t->max_shortfall = f - copied;
		if (r->exact && copied != f) {
			violation(k, dst, src, "exact precision, but %lu copied of %lu accessible (shortfall %lu)",
				  copied, f, f - copied);
			return 1;
		}
	}
	at = mismatch(dst, want_pat, 0, (long)copied);
	if (at >= 0) {
		violation(k, dst, src, "copied byte %ld is %#x, source had %#x (copied %lu)",
			  at, dst[at], want_pat[at], copied);
		return 1;
	}
	{
		long tail_end = (long)(dst_acc < n ? dst_acc : n);
		if (r->zero_tail && !r->to_user)
			at = nonzero(dst, (long)copied, tail_end);
		else
			at = mismatch(dst, want_can, (long)copied, tail_end);
		if (at >= 0) {
			violation(k, dst, src, "byte %ld past the %lu copied was %s (now %#x)", at, copied,
				  r->zero_tail && !r->to_user ? "not zeroed" : "modified", dst[at]);
			return 1;
		}
	}
	at = mismatch(dst, want_can, wlo, 0);
	if (at < 0)
		at = mismatch(dst, want_can, (long)n, whi);
	if (at >= 0) {
		violation(k, dst, src, "wrote outside [to, to+n): byte at offset %ld is %#x", at, dst[at]);
		return 1;
	}
	return 0;
}

/* ---- case generation ---- */

static unsigned long counter;

/* Kernel-side slack before its guard page: a rotation of alignments. */
static unsigned long align_slack(void)
{
	static const unsigned aligns[] = { 0, 1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 33 };
	return aligns[counter % (sizeof aligns / sizeof aligns[0])];
}

/* Kernel-side slack that makes (dst - src) mod 4096 one of a rotation of
 * distances, the 1..63 aliasing band (guarded-movsb's other path) and its
 * edges among them. */
static unsigned long alias_slack(const struct routine *r, unsigned long n, unsigned long uoff)
{
	static const unsigned dists[] = { 1, 2, 7, 8, 31, 32, 63, 64, 0, 4095, 17 };
	unsigned long d = dists[counter % (sizeof dists / sizeof dists[0])];

	/* from_user: dst = kend - n - slack, src = uend - uoff;
	 * to_user:   dst = uend - uoff,      src = kend - n - slack;
	 * kend and uend are page-aligned. */
	if (r->to_user)
		return (d + uoff - n) % PAGE;
	return (uoff - n - d) % PAGE;
}

/* One user-side placement, twice: a kernel-side alignment and an aliasing
 * distance from the rotations. */
static void one(const struct routine *r, struct tally *t, unsigned long n, long f, unsigned long uoff)
{
	struct kase k = { r, n, f, uoff, 0, (unsigned)(counter % 251) };

	for (int plan = 0; plan < 2; plan++) {
		k.slack = plan ? alias_slack(r, n, uoff) : align_slack();
		alarm(10);
		if (run_case(&k, t))
			t->violations++;
		alarm(0);
	}
	counter++;
}

/* Every fault offset below n, the fault-free case with the buffer's end at
 * the guard page, and with its start right after the lower guard page. */
static void all_offsets(const struct routine *r, struct tally *t, unsigned long n)
{
	for (unsigned long f = 0; f < n; f++)
		one(r, t, n, (long)f, f);
	one(r, t, n, -1, n);
	one(r, t, n, -1, UPAGES * PAGE);
}

static void sampled_offsets(const struct routine *r, struct tally *t, unsigned long n)
{
	unsigned long fs[32];
	unsigned nf = 0;
	const unsigned long fixed[] = { 0, 1, 7, 8, 9, 63, 64, 65, PAGE - 1, PAGE, PAGE + 1,
					n - 1, n - 8, n / 2, n / 2 + 1 };

	for (unsigned i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		fs[nf++] = fixed[i];
	for (unsigned i = 0; i < 4; i++)
		fs[nf++] = next_random() % n;
	for (unsigned i = 0; i < nf; i++) {
		int dup = fs[i] >= n;
		for (unsigned j = 0; j < i && !dup; j++)
			dup = fs[j] == fs[i];
		if (!dup)
			one(r, t, n, (long)fs[i], fs[i]);
	}
	one(r, t, n, -1, n);
	one(r, t, n, -1, UPAGES * PAGE);
}

static void run_routine(const struct routine *r)
{
	static const unsigned long big[] = { 511, 512, 513, 1023, 1024, 1448, 2048,
					     4095, 4096, 4097, 8192, 12288 };
	struct tally t = { 0, 0, 0 };

	/* The same cases for every routine, whatever the manifest's order. */
	rng = 0x2545f491u;
	counter = 0;
	if (r->fixed) {
		all_offsets(r, &t, r->fixed);
	} else {
		for (unsigned long n = 0; n <= 300; n++)
			all_offsets(r, &t, n);
		for (unsigned i = 0; i < sizeof big / sizeof big[0]; i++)
			sampled_offsets(r, &t, big[i]);
		for (unsigned i = 0; i < 8; i++)
			sampled_offsets(r, &t, 301 + next_random() % (12288 - 301));
	}
	printf("routine %s cases %lu violations %lu max_shortfall %lu\n",
	       r->name, t.cases, t.violations, t.max_shortfall);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		max_details = (unsigned)strtoul(argv[1], NULL, 10);
	if (sysconf(_SC_PAGESIZE) != PAGE) {
		fprintf(stderr, "harness: page size %ld, expected %u\n", sysconf(_SC_PAGESIZE), PAGE);
		return 2;
	}
	rng = 0x9e3779b9u;
	for (unsigned i = 0; i < PAT_SIZE; i++) {
		pat[i] = (unsigned char)next_random();
		canary[i] = pat[i] ^ (unsigned char)(1 + next_random() % 255);
	}
	ubase = guarded(UPAGES);
	uend = ubase + UPAGES * PAGE;
	kbase = guarded(KPAGES);
	kend = kbase + KPAGES * PAGE;
	install_handlers();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && strcmp(argv[2], "seccomp") == 0)
		install_seccomp();

	for (unsigned i = 0; i < n_routines; i++)
		run_routine(&routines[i]);
	return total_violations ? 1 : 0;
}
