//! The ARMv6 backend against the real tools: every armv6 catalog file
//! assembles in both flavours with one exception-table entry per user
//! site of the lowering, each on a load (from_user) or store (to_user);
//! and a smoke run of the standalone files under `qemu-arm -cpu arm1176`
//! with and without a PROT_NONE page. (The full fault-injection harness is
//! `verify/harness.c`; this only proves the code runs.)

use std::path::{Path, PathBuf};
use std::process::Command;

use copygen::backend::functions;
use copygen::emit::catalog;
use copygen::ir::{Arch, Direction, Flavor, Precision, Strategy};
use copygen::lower::entry_symbol;
use copygen::render::{emitted_path, render};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

const CC: &str = "arm-linux-gnueabi-gcc";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Fail (never skip) when a tool is missing, after trying the installer.
fn need(tool: &str, package: &str) {
    let found = || {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if found() {
        return;
    }
    let installer = root().join("verify/install-deps");
    if installer.is_file() {
        let _ = Command::new(&installer).status();
    }
    assert!(
        found(),
        "`{tool}` is missing: install the Debian package `{package}` (verify/install-deps does it when run as root)"
    );
}

fn armv6_catalog() -> Vec<Strategy> {
    let all: Vec<Strategy> = catalog()
        .expect("catalog validates")
        .into_iter()
        .filter(|s| s.arch == Arch::Armv6)
        .collect();
    assert!(all.len() >= 2, "the catalog has the armv6 presets");
    all
}

/// A test-only strategy that reaches the backend paths the presets do not:
/// head/tail with end-relative words, the alias guard, a `both` guard with
/// a mask that is no modified immediate, ldm/stm at non-zero offsets, a touch
/// load and a pld beyond the 12-bit offset range, an overlapping tail,
/// class bounds that need ip, constant-size entry points and zero_tail.
const SINK: &str = r#"
name = "armv6-sink-exact"
description = "test only: every armv6 op the presets leave out"
arch = "armv6"
fixed_sizes = [1, 3, 7]

[fault]
precision = "exact"
zero_tail = true

[methods.small]
kind = "head_tail"
width = 4
registers = 2

[methods.inter]
kind = "unrolled"
block = 16
width = 4
registers = 2
grouping = "interleaved"
prefetch = { kind = "pld", distance = [32, 4096] }
align = { pointer = "src", to = 4, min_size = 4 }
tail = "bytes"

[methods.pairs]
kind = "unrolled"
block = 64
width = 4
registers = 2
grouping = "multiple"
prefetch = { kind = "touch", distance = 4096 }
align = { pointer = "both", to = 8, min_size = 8 }
tail = "overlap"

[[dispatch]]
sizes = "0..=16"
use = "small"

[[dispatch]]
sizes = "17..=4100"
use = "inter"
[[dispatch.guard]]
alias = [1, 63]
use = "inter"
[[dispatch.guard]]
aligned = { pointer = "congruent", to = 8 }
use = "pairs"

[[dispatch]]
sizes = "4101.."
use = "inter"
[[dispatch.guard]]
aligned = { pointer = "both", to = 4096 }
use = "pairs"
"#;

/// The sink in both precisions (block: one-byte step instead of the retry).
fn sinks() -> Vec<Strategy> {
    let block = SINK
        .replace("armv6-sink-exact", "armv6-sink-block")
        .replace(
            "precision = \"exact\"\nzero_tail = true",
            "precision = \"block\"",
        );
    [SINK.to_string(), block]
        .iter()
        .map(|t| {
            copygen::strategy::parse(Path::new("tests/armv6.rs"), t, None)
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect()
}

/// Every armv6 strategy under test in `flavor` and its `.S` file: the
/// checked-in file for the catalog, a rendered one in `dir` for the sinks.
fn sources(dir: &Path, flavor: Flavor) -> Vec<(Strategy, PathBuf)> {
    let mut v: Vec<_> = armv6_catalog()
        .into_iter()
        .map(|s| {
            let p = emitted_file(&s, flavor);
            (s, p)
        })
        .collect();
    for s in sinks() {
        let p = dir.join(format!("{}-{flavor}.S", s.name));
        std::fs::write(&p, render(&s, flavor)).unwrap();
        v.push((s, p));
    }
    v
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Assemble `src` (a `.S` file) for ARMv6, keeping `.L` labels in the
/// symbol table so table entries can be named.
fn assemble(src: &Path, obj: &Path, flavor: Flavor) {
    let mut cmd = Command::new(CC);
    cmd.args([
        "-march=armv6",
        "-marm",
        "-c",
        "-Wa,-L",
        "-Wa,--fatal-warnings",
    ]);
    if flavor == Flavor::Linux {
        cmd.args(["-nostdinc", "-D__ASSEMBLY__", "-I"])
            .arg(root().join("verify/shim-arm"));
    }
    run(cmd.arg(src).arg("-o").arg(obj));
}

/// The checked-in file, which must equal what the generator renders now.
fn emitted_file(s: &Strategy, flavor: Flavor) -> PathBuf {
    let path = root().join("emitted").join(emitted_path(s, flavor));
    let on_disk =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        on_disk == render(s, flavor),
        "{} is stale: run `copygen emit`",
        path.display()
    );
    path
}

/// (section name, offset) each word of `__ex_table` points at, in order.
fn extable_targets(file: &object::File, flavor: Flavor) -> Vec<(String, u64)> {
    let table = file
        .section_by_name("__ex_table")
        .expect("__ex_table section");
    let data = table.data().expect("table bytes");
    let want = match flavor {
        Flavor::Standalone => object::elf::R_ARM_REL32,
        Flavor::Linux => object::elf::R_ARM_ABS32,
    };
    let mut relocs: Vec<_> = table.relocations().collect();
    relocs.sort_by_key(|(off, _)| *off);
    assert_eq!(
        relocs.len() * 4,
        data.len(),
        "one relocation per table word"
    );
    relocs
        .iter()
        .enumerate()
        .map(|(i, (off, r))| {
            assert_eq!(
                *off,
                4 * i as u64,
                "relocations cover the table word by word"
            );
            assert_eq!(
                r.flags(),
                RelocationFlags::Elf { r_type: want },
                "{flavor} entries at {off}"
            );
            // REL: the addend sits in the word; against a section symbol it
            // is the offset in that section.
            let addend =
                u32::from_le_bytes(data[*off as usize..*off as usize + 4].try_into().unwrap());
            let section = match r.target() {
                RelocationTarget::Symbol(i) => {
                    let sym = file.symbol_by_index(i).expect("symbol");
                    file.section_by_index(sym.section_index().expect("section symbol"))
                        .unwrap()
                }
                RelocationTarget::Section(i) => file.section_by_index(i).unwrap(),
                RelocationTarget::Absolute => panic!("absolute table entry"),
                _ => panic!("unexpected relocation target"),
            };
            (section.name().unwrap().to_string(), addend as u64)
        })
        .collect()
}

/// Does a `.L` label named `name` sit at `section`+`offset`?
fn label_at(file: &object::File, name: &str, section: &str, offset: u64) -> bool {
    file.symbols().any(|s| {
        s.name() == Ok(name)
            && s.address() == offset
            && s.section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .and_then(|sec| sec.name().ok().map(str::to_string))
                == Some(section.to_string())
    })
}

/// The A32 word at `section`+`offset`: is it a load (`Some(true)`), a
/// store (`Some(false)`), or no single/multiple data transfer (`None`)?
fn transfer_kind(file: &object::File, section: &str, offset: u64) -> Option<bool> {
    let data = file.section_by_name(section).unwrap().data().unwrap();
    let w = u32::from_le_bytes(
        data[offset as usize..offset as usize + 4]
            .try_into()
            .unwrap(),
    );
    let single = (w >> 26) & 3 == 0b01 && w >> 28 != 0xf; // ldr/str/ldrb/strb (not pld)
    let multiple = (w >> 25) & 7 == 0b100; // ldm/stm
    (single || multiple).then_some(w & (1 << 20) != 0)
}

#[test]
fn every_armv6_file_assembles_with_one_entry_per_user_site() {
    need(CC, "gcc-arm-linux-gnueabi");
    let dir = tempfile::tempdir().unwrap();
    for flavor in Flavor::ALL {
        for (s, src) in sources(dir.path(), flavor) {
            let obj = dir.path().join(format!("{}-{flavor}.o", s.name));
            assemble(&src, &obj, flavor);
            let bytes = std::fs::read(&obj).unwrap();
            let file = object::File::parse(&*bytes).unwrap();
            let targets = extable_targets(&file, flavor);

            let funcs = functions(&s, flavor);
            let sites: usize = funcs.iter().map(|(r, _)| r.user_sites().len()).sum();
            assert_eq!(
                targets.len(),
                2 * sites,
                "{} {flavor}: table entries vs user sites",
                s.name
            );

            let fixup_section = match flavor {
                Flavor::Standalone => ".text",
                Flavor::Linux => ".text.fixup",
            };
            let mut pairs = targets.chunks(2);
            for (r, f) in &funcs {
                assert_eq!(f.extable.len(), r.user_sites().len(), "{}", r.symbol);
                for e in &f.extable {
                    let pair = pairs.next().expect("an entry per site");
                    let ((isec, ioff), (fsec, foff)) = (&pair[0], &pair[1]);
                    assert!(
                        label_at(&file, &e.insn, isec, *ioff),
                        "{}: {} is not at {isec}+{ioff:#x}",
                        r.symbol,
                        e.insn
                    );
                    assert_eq!(fsec, fixup_section, "{}: fixup {}", r.symbol, e.fixup);
                    assert!(
                        label_at(&file, &e.fixup, fsec, *foff),
                        "{}: {} is not at {fsec}+{foff:#x}",
                        r.symbol,
                        e.fixup
                    );
                    let load = r.direction == Direction::FromUser;
                    assert_eq!(
                        transfer_kind(&file, isec, *ioff),
                        Some(load),
                        "{}: entry {} must be a user-side {}",
                        r.symbol,
                        e.insn,
                        if load { "load" } else { "store" }
                    );
                }
            }
        }
    }
}

/// A small C driver: copies sizes 0..=70 and some larger ones at every
/// alignment, then with the user side ending at a PROT_NONE page after
/// `k` bytes; it checks the return value, the bytes copied and the bytes
/// that must stay untouched. A SIGSEGV handler resumes at the fixup found
/// in `__ex_table`, as the kernel does.
const DRIVER: &str = r#"
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

typedef unsigned long (*copy_fn)(void *to, const void *from, unsigned long n);
struct routine {
	const char *name;
	copy_fn fn;
	int to_user, exact, zero_tail;
	unsigned long fixed; /* constant-size entry point: n is ignored */
};
#include "routines.h"

extern const int __start___ex_table[], __stop___ex_table[];
static volatile unsigned long faults;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	unsigned long pc = uc->uc_mcontext.arm_pc;
	(void)si;
	for (const int *e = __start___ex_table; e < __stop___ex_table; e += 2)
		if ((unsigned long)&e[0] + e[0] == pc) {
			uc->uc_mcontext.arm_pc = (unsigned long)&e[1] + e[1];
			faults++;
			return;
		}
	signal(sig, SIG_DFL); /* not a table entry: die on return */
}

#define PAGE 4096
#define CANARY 0xa5
static unsigned char *user, *user_end; /* user_end: first byte of the PROT_NONE page */
static unsigned char kernel[3 * PAGE] __attribute__((aligned(PAGE)));

static void fill(unsigned char *p, unsigned long n, unsigned seed)
{
	for (unsigned long i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed * 7 + 1);
}

static int fail(const struct routine *r, const char *what, unsigned long n, unsigned long k,
		unsigned koff, unsigned long got)
{
	printf("FAIL %s: %s (n=%lu k=%lu kernel offset %u, got %lu)\n", r->name, what, n, k, koff, got);
	exit(1);
}

/* Copy n bytes between the kernel buffer and a user pointer; when k < n
 * the user side ends at the PROT_NONE page after k bytes. */
static void one(const struct routine *r, unsigned long n, unsigned long k, unsigned koff, unsigned uoff)
{
	int faulting = k < n;
	/* Both pages' offsets equal: (dst - src) mod 4096 = koff - uoff, which
	 * reaches alias bands and congruence guards; koff = uoff = 0 puts both
	 * pointers on a page boundary. */
	unsigned long base = koff == 0 && uoff == 0 ? PAGE : 64;
	unsigned char *kp = kernel + base + koff;
	unsigned char *up = faulting ? user_end - k : user + base + uoff;
	unsigned long ok = faulting ? k : n, before = faults, ret;
	unsigned char *to = r->to_user ? up : kp;
	const unsigned char *from = r->to_user ? kp : up;

	memset(kernel, CANARY, sizeof kernel);
	memset(user, CANARY, user_end - user);
	fill((unsigned char *)from, faulting && !r->to_user ? k : n, (unsigned)n);
	ret = r->fn(to, from, n);
	/* The contract: 0 <= N <= n; never more reported copied than was
	 * accessible; exact means no shortfall; progress when byte 0 is
	 * accessible. */
	if (ret > n)
		fail(r, "returned more than n", n, k, koff, ret);
	unsigned long copied = n - ret;
	if (copied > ok || (r->exact && copied != ok) || (faulting && k > 0 && copied == 0))
		fail(r, "bytes not copied", n, k, koff, ret);
	if (memcmp(to, from, copied))
		fail(r, "copied bytes differ", n, k, koff, ret);
	/* Beyond the count: zeroes (zero_tail from_user) or untouched, and
	 * nothing near the destination changed (a faulting user destination
	 * ends at the PROT_NONE page). */
	int zeroed = r->zero_tail && !r->to_user;
	unsigned char *lo = to - 64, *hi = to + n + 64;
	if (r->to_user && hi > user_end)
		hi = user_end;
	for (unsigned char *p = lo; p < hi; p++) {
		if (p >= to && p < to + copied)
			continue;
		if (zeroed && p >= to + copied && p < to + n) {
			if (*p)
				fail(r, "the uncopied rest is not zeroed", n, k, koff, (unsigned long)(p - to));
			continue;
		}
		if (*p != CANARY)
			fail(r, "a byte outside the copied range changed", n, k, koff, (unsigned long)(p - to));
	}
	if (faulting && faults == before)
		fail(r, "no fault taken", n, k, koff, ret);
}

int main(void)
{
	struct sigaction sa = { 0 };
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, 0);

	user = mmap(0, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (user == MAP_FAILED || mprotect(user + 3 * PAGE, PAGE, PROT_NONE))
		return perror("mmap"), 2;
	user_end = user + 3 * PAGE;

	static const unsigned long big[] = { 95, 96, 97, 100, 127, 128, 129, 200, 255, 256, 257, 1000, 1023, 1024, 1025, 2000, 4100, 4101, 4200, 5100 };
	for (unsigned ri = 0; ri < sizeof routines / sizeof routines[0]; ri++) {
		const struct routine *r = &routines[ri];
		unsigned long cases = 0, before = faults;
		for (unsigned long si = 0; si < 71 + sizeof big / sizeof big[0]; si++) {
			unsigned long n = si < 71 ? si : big[si - 71];
			if (r->fixed && n != r->fixed)
				continue;
			for (unsigned koff = 0; koff < 4; koff++) {
				for (unsigned uoff = 0; uoff < 4; uoff++, cases++)
					one(r, n, n, koff, uoff);
				/* Faults: k accessible user bytes (k fixes the user alignment). */
				static const unsigned long ks[] = { 0, 1, 2, 3, 4, 5, 7, 8, 31, 32, 33, 36, 63, 64, 65, 100 };
				for (unsigned ki = 0; ki < sizeof ks / sizeof ks[0] + 2; ki++) {
					unsigned long k = ki < sizeof ks / sizeof ks[0] ? ks[ki] : ki == sizeof ks / sizeof ks[0] ? n / 2 : n - 1;
					if (k < n)
						one(r, n, k, koff, 0), cases++;
				}
			}
		}
		printf("ok %s: %lu cases, %lu faults resumed\n", r->name, cases, faults - before);
	}
	return 0;
}
"#;

#[test]
fn standalone_files_copy_and_recover_under_qemu_arm1176() {
    need(CC, "gcc-arm-linux-gnueabi (and libc6-dev-armel-cross)");
    need("qemu-arm", "qemu-user");
    let dir = tempfile::tempdir().unwrap();
    let mut header = String::new();
    let mut table = String::from("static const struct routine routines[] = {\n");
    let mut expected = 0;
    let mut files = Vec::new();
    for (s, src) in sources(dir.path(), Flavor::Standalone) {
        files.push(src);
        let entries = s.directions.iter().map(|&d| (d, None)).chain(
            s.fixed_sizes
                .iter()
                .flat_map(|&n| s.directions.iter().map(move |&d| (d, Some(n)))),
        );
        for (dir, fixed) in entries {
            let sym = entry_symbol(&s, dir, fixed);
            header.push_str(&format!(
                "unsigned long {sym}(void *, const void *, unsigned long);\n"
            ));
            table.push_str(&format!(
                "\t{{ \"{sym}\", {sym}, {}, {}, {}, {} }},\n",
                (dir == Direction::ToUser) as u8,
                (s.precision == Precision::Exact) as u8,
                s.zero_tail as u8,
                fixed.unwrap_or(0)
            ));
            expected += 1;
        }
    }
    table.push_str("};\n");
    std::fs::write(dir.path().join("routines.h"), header + &table).unwrap();
    std::fs::write(dir.path().join("driver.c"), DRIVER).unwrap();
    let exe = dir.path().join("smoke");
    run(Command::new(CC)
        .args([
            "-march=armv6",
            "-marm",
            "-static",
            "-O1",
            "-Wall",
            "-Werror",
        ])
        .arg("-I")
        .arg(dir.path())
        .arg(dir.path().join("driver.c"))
        .args(&files)
        .arg("-o")
        .arg(&exe));
    let out = Command::new("qemu-arm")
        .args(["-cpu", "arm1176"])
        .arg(&exe)
        .output()
        .expect("qemu-arm runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "smoke run failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let oks = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(oks, expected, "every routine reported:\n{stdout}");
}

/// ldm/stm fault on unaligned addresses, so validation must prove both
/// pointers word-aligned wherever a `multiple` method runs.
#[test]
fn ldm_stm_needs_proven_word_alignment() {
    let text = std::fs::read_to_string(root().join("generator/strategies/ldm-stm.toml")).unwrap();
    let parse = |t: &str| copygen::strategy::parse(Path::new("ldm-stm.toml"), t, None);
    parse(&text).expect("the preset validates");
    let cases = [
        // No congruence guard: the ldm method as a plain class method.
        (
            text.replace("use = \"words\"\n[[dispatch.guard]]", "use = \"ldm\"\n[[dispatch.guard]]"),
            "`dispatch[1].use`",
            "need word-aligned pointers",
        ),
        // A guard that says nothing about src.
        (
            text.replace("pointer = \"congruent\", to = 4 }", "pointer = \"dst\", to = 4 }"),
            "`dispatch[1].guard[0].use`",
            "need word-aligned pointers",
        ),
        // Congruent, but no prologue aligns them.
        (
            text.replacen(
                "grouping = \"multiple\"\nprefetch = { kind = \"pld\", distance = 64 }\nalign = { pointer = \"dst\", to = 4, min_size = 4 }",
                "grouping = \"multiple\"\nprefetch = { kind = \"pld\", distance = 64 }",
                1,
            ),
            "`dispatch[1].guard[0].use`",
            "no `align` prologue",
        ),
        // The prologue is skipped for lengths that still reach the loop.
        (
            text.replace(
                "distance = 64 }\nalign = { pointer = \"dst\", to = 4, min_size = 4 }",
                "distance = 64 }\nalign = { pointer = \"dst\", to = 4, min_size = 40 }",
            ),
            "`dispatch[1].guard[0].use`",
            "lengths 32..40",
        ),
        // `congruent` is no prologue.
        (
            text.replace(
                "distance = 64 }\nalign = { pointer = \"dst\"",
                "distance = 64 }\nalign = { pointer = \"congruent\"",
            ),
            "`methods.ldm.align.pointer`",
            "guard condition",
        ),
    ];
    for (t, field, words) in cases {
        assert_ne!(t, text, "the substitution for {field} applied");
        let e = parse(&t).expect_err(field).to_string();
        assert!(
            e.contains(field) && e.contains(words),
            "expected {field} / {words}, got:\n{e}"
        );
    }
}
