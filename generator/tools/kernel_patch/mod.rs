//! `copygen kernel-patch`: a patch in `git format-patch` form that puts a
//! strategy's linux-flavour routine into a pristine Debian 6.1 or 6.12 tree
//! (the generated `.S`, its Makefile line and the glue that makes the kernel
//! call it). `verify/kernel-boot` boots exactly this patch.
//!
//! What the kernel calls, per arch (the glue's design):
//! - x86_64, 6.12, `rep_movs` convention: the routine *is*
//!   `rep_movs_alternative` (one routine for both directions, caller does
//!   STAC/CLAC); the Makefile builds it instead of `copy_user_64.o`. Nothing
//!   else changes: `copy_user_generic()` calls it when the CPU lacks FSRM.
//! - x86_64 otherwise (6.1, or the C convention): `raw_copy_{from,to}_user`
//!   call `copygen_copy_user` (one routine for both directions) from inline
//!   asm whose constraints are the routine's convention; STAC/CLAC around the
//!   call when the routine leaves them to its caller (and objtool learns the
//!   name is uaccess-safe, as it knows `rep_movs_alternative`).
//! - i386: `raw_copy_{from,to}_user` call `copygen_copy_user` (regparm C
//!   function) instead of `__copy_user_ll`, bracketed when the routine wants.
//! - armv6: the routines are `arm_copy_from_user` / `arm_copy_to_user`, built
//!   instead of `copy_{from,to}_user.o`; the caller already opens the user
//!   domain and `armksyms.c` exports them.
//! - aarch64: the routines are `__arch_copy_from_user` /
//!   `__arch_copy_to_user` (exported by the file, as arm64's own
//!   `copy_{from,to}_user.S` export them), built instead of those two files;
//!   `raw_copy_{from,to}_user` already switch TTBR0 (SW PAN) around the call
//!   and mask the user pointer, and the routine's `ldtr`/`sttr` pass PAN.
//! - riscv64: uaccess.S keeps `__asm_copy_{to,from}_user` (and on 6.12
//!   the vector path); their scalar body is the generated routine, one for
//!   both directions that sets and clears SR_SUM itself (riscv64.rs).

mod describe;
mod excerpts;
pub mod kunit;
pub mod mail;
mod riscv64;
pub mod site;

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};

use crate::checks::static_verify::{FunctionSpec, UserSide};
use crate::front::strategy::{
    Arch, Convention, Direction, Flavor, RoutineShape, Strategy, Uaccess,
};
use crate::kernel::symbols::{GLUE_SYMBOL, REP_MOVS_ALTERNATIVE};
use crate::kernel::version::KernelVersion;
use crate::kernel::wiring;
use excerpts::Excerpt;

pub use crate::kernel::wiring::Unfit;

/// What the patch needs to say about how the routine was checked.
#[derive(Debug, Clone)]
pub struct Verification {
    /// Static check of the linux-flavour object: (user accesses, entries).
    pub static_accesses: usize,
    pub static_entries: usize,
    /// Of the user accesses, those whose count after a fault is proven.
    pub static_counts: usize,
    /// Fault injection of the standalone flavour: (role, cases, violations).
    pub roles: Vec<(String, u64, u64)>,
    /// 6.12's inline site, decoded per CPU feature set after alternatives
    /// (empty where the site is not the chain over variants).
    pub sites: Vec<crate::checks::static_verify::site::SiteRow>,
}

/// The strategy as the tree needs it, and the generated file's place.
pub struct Wiring {
    pub strategy: Strategy,
    /// Path of the generated `.S` inside the tree.
    pub file: &'static str,
    /// One sentence each on what was changed and why.
    pub notes: Vec<String>,
}

/// Adapt `s` to what the call sites of `kernel` on its arch expect
/// (`kernel::wiring` holds the rules the bench shares).
pub fn wire(s: &Strategy, kernel: KernelVersion) -> Result<Wiring, Unfit> {
    let unfit = |field: &'static [&'static str], message: String| Unfit::new(s, field, message);
    let mut notes = Vec::new();
    let mut t = wiring::common(s, kernel, &mut notes)?;
    let file = match s.arch {
        Arch::Riscv64 => riscv64::wire(s, &mut t, kernel, &mut notes)?,
        Arch::X86_64 | Arch::I386 => {
            wiring::x86(s, &mut t, kernel, &mut notes)?;
            if !t.variants.is_empty() {
                notes.push(per_cpu_note(&t, kernel));
            }
            if s.arch == Arch::X86_64 {
                "arch/x86/lib/copygen_user_64.S"
            } else {
                "arch/x86/lib/copygen_user_32.S"
            }
        }
        Arch::Armv6 | Arch::Aarch64 => {
            // The tree's own two names, one routine per direction.
            let (from, to, file) = if s.arch == Arch::Armv6 {
                (
                    "arm_copy_from_user",
                    "arm_copy_to_user",
                    "arch/arm/lib/copygen_user.S",
                )
            } else {
                (
                    "__arch_copy_from_user",
                    "__arch_copy_to_user",
                    "arch/arm64/lib/copygen_user.S",
                )
            };
            if s.routine == RoutineShape::Both {
                return Err(unfit(
                    &["routine"],
                    format!(
                        "{} calls {from} and {to}: use one routine per direction",
                        s.arch
                    ),
                ));
            }
            if s.zero_tail {
                return Err(unfit(
                    &["fault", "zero_tail"],
                    format!("{from} does not zero; copy_from_user zeroes in C: drop zero_tail"),
                ));
            }
            t.linux.from_user = Some(from.into());
            t.linux.to_user = Some(to.into());
            file
        }
    };
    Ok(Wiring {
        strategy: t,
        file,
        notes,
    })
}

/// What the patch body says about a per-CPU strategy (`t` wired, x86): how
/// its entry point picks a variant, and why the call site is what it is.
fn per_cpu_note(t: &Strategy, kernel: KernelVersion) -> String {
    let entry = crate::lower::entry_symbol(t, Flavor::Linux, Direction::FromUser, None);
    let mut note = format!(
        "Per CPU: {entry} enters one of {} variants. Its ALTERNATIVEs on\n\
         X86_FEATURE_* bits are patched once at boot (apply_alternatives) into\n\
         NOPs and one direct jmp, so no CPUID runs when copying; the first\n\
         variant whose condition holds is entered:\n",
        t.variants.len()
    );
    let width = t.variants.iter().map(|v| v.name.len()).max().unwrap_or(0);
    for v in &t.variants {
        let bits = v
            .when
            .as_ref()
            .map_or("default".into(), |c| c.kernel_text());
        let symbol =
            crate::lower::variants::variant_symbol(t, v, Flavor::Linux, Direction::FromUser);
        let line = format!("  {:<width$} {bits}: {symbol}", v.name);
        if line.len() <= crate::tools::mail_text::MAX_COLUMNS {
            let _ = writeln!(note, "{line}");
        } else {
            // Where both do not fit: a conjunction a line, then the routine.
            let terms: Vec<String> = v
                .when
                .iter()
                .flat_map(|c| &c.any)
                .map(|c| c.kernel_text())
                .collect();
            let indent = " ".repeat(width + 3);
            let _ = writeln!(
                note,
                "  {:<width$} {}:\n{indent}{symbol}",
                v.name,
                terms.join(&format!("\n{indent}|| "))
            );
        }
    }
    let site = match (t.arch, kernel) {
        (Arch::X86_64, k) if crate::kernel::variant_chain::is_variant_chain(t, k) => {
            site::note(t, k, None)
        }
        (Arch::X86_64, k) if k.x86_64_calls_rep_movs_alternative() => format!(
            "Call site: 6.12's copy_user_generic() decides on one bit,\n\
             ALTERNATIVE(\"rep movsb\", \"call rep_movs_alternative\", ALT_NOT(X86_FEATURE_FSRM)).\n\
             These variants decide on their own bits, in their own order, and a\n\
             variant may be meant for CPUs that have FSRM (AMD Zen 3 and 4 have it),\n\
             so this routine cannot be rep_movs_alternative (FSRM CPUs would never\n\
             call it) and the site cannot keep FSRM as its test. raw_copy_{{from,to}}_user\n\
             call {entry} on every CPU instead: each inlined site stays one call\n\
             (not a chain of ALTERNATIVEs at every site), and the variant is chosen\n\
             once, in {entry}'s own ALTERNATIVEs."
        ),
        (Arch::X86_64, _) if !t.linux.feature_entries.is_empty() => {
            let names: Vec<&str> = t
                .linux
                .feature_entries
                .iter()
                .map(|e| e.symbol.as_str())
                .collect();
            format!(
                "Call site: raw_copy_{{from,to}}_user call one of {} by the\n\
                 alternative_call_2 on REP_GOOD and ERMS with which 6.1's\n\
                 copy_user_generic() calls the kernel's own three routines; each\n\
                 entry's ALTERNATIVEs test only the bits its call leaves open.",
                names.join(", ")
            )
        }
        (Arch::X86_64, _) => format!(
            "Call site: raw_copy_{{from,to}}_user call {entry} in place of 6.1's\n\
             copy_user_generic(), whose alternative_call_2 picks among the kernel's\n\
             own routines on REP_GOOD and ERMS; the variant is chosen in {entry}."
        ),
        _ => format!(
            "Call site: raw_copy_{{from,to}}_user call {entry} in place of\n\
             __copy_user_ll; the variant is chosen in {entry} (the kernel sets\n\
             X86_FEATURE_ZEN on AMD family 0x17 and later on i386 too)."
        ),
    };
    note.push_str(&site);
    note
}

/// An edit of one excerpt: (old text, new text) replacements, each of which
/// must occur exactly once.
struct Edit {
    excerpt: Excerpt,
    replace: Vec<(String, String)>,
}

fn edit(excerpt: Excerpt, replace: &[(&str, String)]) -> Edit {
    Edit {
        excerpt,
        replace: replace
            .iter()
            .map(|(a, b)| (a.to_string(), b.clone()))
            .collect(),
    }
}

/// The glue edits for the wired strategy `t`.
fn glue(t: &Strategy, kernel: KernelVersion) -> Vec<Edit> {
    let caller = t.linux.uaccess == Uaccess::Caller;
    match t.arch {
        Arch::X86_64 => {
            if t.linux.both.as_deref() == Some(REP_MOVS_ALTERNATIVE) {
                let line = "        lib-y += copy_user_64.o copy_user_uncached_64.o\n";
                return vec![edit(
                    excerpts::x86_64_makefile(kernel),
                    &[(
                        line,
                        "        lib-y += copy_user_uncached_64.o\n        # copygen: rep_movs_alternative, generated (was copy_user_64.o)\n        lib-y += copygen_user_64.o\n".into(),
                    )],
                )];
            }
            if crate::kernel::variant_chain::is_variant_chain(t, kernel) {
                let chain = crate::kernel::variant_chain::chain(t, kernel);
                let names: Vec<String> = routines(t).into_iter().map(|r| r.name).collect();
                return vec![
                    site::copy_user_generic_edit(t, &chain),
                    edit(
                        excerpts::x86_64_makefile(kernel),
                        &[(
                            "\tlib-y += cmpxchg16b_emu.o\n",
                            "        # copygen: the routines copy_user_generic() calls (asm/uaccess_64.h)\n        obj-y += copygen_user_64.o\n\tlib-y += cmpxchg16b_emu.o\n".into(),
                        )],
                    ),
                    objtool_edit(kernel, &names),
                ];
            }
            let (constraints, result) = match t.linux.convention {
                Convention::C => (
                    "\t\t     : \"=a\" (ret), \"+D\" (to), \"+S\" (from), \"+d\" (n),\n\t\t       ASM_CALL_CONSTRAINT\n\t\t     : : \"memory\", \"rcx\", \"r8\", \"r9\", \"r10\", \"r11\");\n",
                    "ret",
                ),
                Convention::RepMovs => (
                    "\t\t     : \"+c\" (n), \"+D\" (to), \"+S\" (from), ASM_CALL_CONSTRAINT\n\t\t     : : \"memory\", \"rax\");\n",
                    "n",
                ),
            };
            let convention = match t.linux.convention {
                Convention::C => "the C convention (rdi = to, rsi = from, rdx = n -> rax = bytes\n * not copied; clobbers rcx, r8-r11)",
                Convention::RepMovs => "rep_movs_alternative's convention (rdi = to, rsi = from, rcx = n\n * -> rcx = bytes not copied; clobbers rax)",
            };
            let bracket = if caller {
                "It is called with STAC done (objtool knows it\n * as uaccess-safe)"
            } else {
                "It does its own STAC/CLAC"
            };
            let (stac, clac) = if caller {
                ("\tstac();\n", "\tclac();\n")
            } else {
                ("", "")
            };
            // 6.1: the tree's alternative_call_2 on REP_GOOD and ERMS, calling
            // copygen's routine of each name (the file defines all three).
            let (called, call) = if t.linux.feature_entries.is_empty() {
                (
                    format!("calls {GLUE_SYMBOL} (arch/x86/lib/\n * copygen_user_64.S, generated by copygen): one routine for both directions\n * in {convention}"),
                    format!("\"call {GLUE_SYMBOL}\""),
                )
            } else {
                (
                    format!("call {GLUE_SYMBOL} as copy_user_generic()\n * calls its routines, by alternative_call_2 on REP_GOOD and ERMS\n * (arch/x86/lib/copygen_user_64.S, generated by copygen): routines for\n * both directions in {convention}"),
                    // After "\tasm volatile(": column 8 + 13.
                    crate::kernel::variant_chain::chain(t, kernel).c_text_from(21),
                )
            };
            let declared: String = t
                .linux
                .feature_entries
                .iter()
                .map(|e| e.symbol.as_str())
                .filter(|&e| e != GLUE_SYMBOL)
                .chain([GLUE_SYMBOL])
                .map(|e| format!("unsigned long {e}(void *to, const void *from, unsigned long n);\n"))
                .collect();
            let decl = format!(
                "/*\n * copygen: raw_copy_{{from,to}}_user {called}. {bracket}.\n */\n{declared}\nstatic __always_inline __must_check unsigned long\ncopygen_call(void *to, const void *from, unsigned long n)\n{{\n\tunsigned long ret;\n\n{stac}\tasm volatile({call}\n{constraints}{clac}\treturn {result};\n}}\n\n"
            );
            let decl = if t.linux.convention == Convention::RepMovs {
                decl.replace("\tunsigned long ret;\n\n", "")
            } else {
                decl
            };
            let mut edits = vec![
                edit(
                    excerpts::x86_64_uaccess(kernel),
                    &[
                        (
                            "static __always_inline __must_check unsigned long\nraw_copy_from_user",
                            format!("{decl}static __always_inline __must_check unsigned long\nraw_copy_from_user"),
                        ),
                        (
                            "\treturn copy_user_generic(dst, (__force void *)src, size);",
                            "\treturn copygen_call(dst, (__force void *)src, size);".into(),
                        ),
                        (
                            "\treturn copy_user_generic((__force void *)dst, src, size);",
                            "\treturn copygen_call((__force void *)dst, src, size);".into(),
                        ),
                    ],
                ),
                edit(
                    excerpts::x86_64_makefile(kernel),
                    &[(
                        "\tlib-y += cmpxchg16b_emu.o\n",
                        format!("        # copygen: the {} behind raw_copy_{{from,to}}_user (asm/uaccess_64.h)\n        obj-y += copygen_user_64.o\n\tlib-y += cmpxchg16b_emu.o\n", if t.linux.feature_entries.is_empty() { "routine" } else { "routines" }),
                    )],
                ),
            ];
            if caller {
                let names: Vec<String> = routines(t).into_iter().map(|r| r.name).collect();
                edits.push(objtool_edit(kernel, &names));
            }
            edits
        }
        Arch::I386 => {
            let call = |args: &str| {
                if caller {
                    format!("\tunsigned long ret;\n\n\tstac();\n\tret = {GLUE_SYMBOL}({args});\n\tclac();\n\treturn ret;")
                } else {
                    format!("\treturn {GLUE_SYMBOL}({args});")
                }
            };
            let bracket = if caller {
                "called with STAC/CLAC\n * around it"
            } else {
                "it does its own STAC/CLAC"
            };
            let decl = format!(
                "/*\n * copygen: raw_copy_{{from,to}}_user call {GLUE_SYMBOL} (arch/x86/lib/\n * copygen_user_32.S, generated by copygen) instead of __copy_user_ll: one\n * routine for both directions, -mregparm=3 (eax = to, edx = from, ecx = n ->\n * eax = bytes not copied); {bracket}.\n */\nunsigned long __must_check {GLUE_SYMBOL}(void *to, const void *from, unsigned long n);\n\n"
            );
            vec![
                edit(
                    excerpts::i386_uaccess(kernel),
                    &[
                        (
                            "static __always_inline unsigned long __must_check\nraw_copy_to_user",
                            format!("{decl}static __always_inline unsigned long __must_check\nraw_copy_to_user"),
                        ),
                        (
                            "\treturn __copy_user_ll((__force void *)to, from, n);",
                            call("(__force void *)to, from, n"),
                        ),
                        (
                            "\treturn __copy_user_ll(to, (__force const void *)from, n);",
                            call("to, (__force const void *)from, n"),
                        ),
                    ],
                ),
                edit(
                    excerpts::i386_makefile(kernel),
                    &[(
                        "        lib-y += string_32.o\n",
                        "        lib-y += string_32.o\n        # copygen: the routine behind raw_copy_{from,to}_user (asm/uaccess_32.h)\n        obj-y += copygen_user_32.o\n".into(),
                    )],
                ),
            ]
        }
        Arch::Armv6 => vec![edit(
            excerpts::armv6_makefile(kernel),
            &[(
                "mmu-y\t\t:= clear_user.o copy_page.o getuser.o putuser.o       \\\n\t\t   copy_from_user.o copy_to_user.o\n",
                "# copygen: arm_copy_{from,to}_user come from copygen_user.S (generated)\n# instead of copy_from_user.o and copy_to_user.o\nmmu-y\t\t:= clear_user.o copy_page.o getuser.o putuser.o       \\\n\t\t   copygen_user.o\n".into(),
            )],
        )],
        Arch::Riscv64 => riscv64::glue(kernel),
        Arch::Aarch64 => vec![edit(
            excerpts::aarch64_makefile(kernel),
            &[(
                "lib-y\t\t:= clear_user.o delay.o copy_from_user.o\t\t\\\n\t\t   copy_to_user.o copy_page.o\t\t\t\t\\\n",
                "# copygen: __arch_copy_{from,to}_user come from copygen_user.S (generated)\n# instead of copy_from_user.o and copy_to_user.o\nlib-y\t\t:= clear_user.o delay.o copygen_user.o\t\t\t\\\n\t\t   copy_page.o\t\t\t\t\t\\\n".into(),
            )],
        )],
    }
}

/// objtool's list of functions that may run with STAC done: the routines
/// called that way (a per-CPU entry point jumps to its variants with AC set).
fn objtool_edit(kernel: KernelVersion, names: &[String]) -> Edit {
    let anchor = "\t\"copy_mc_enhanced_fast_string\",\n";
    let mut added = anchor.to_string();
    for n in names {
        let _ = writeln!(added, "\t\"{n}\", /* copygen: called with STAC done */");
    }
    edit(excerpts::objtool(kernel), &[(anchor, added)])
}

/// The entry point(s) of `s` in the linux flavour, with the side each
/// copies from or to.
fn entry_points(s: &Strategy) -> Vec<FunctionSpec> {
    let spec = |d: Direction, side: UserSide| FunctionSpec {
        name: crate::lower::entry_symbol(s, Flavor::Linux, d, None),
        side: Some(side),
        convention: None,
    };
    match s.routine {
        RoutineShape::Both => vec![spec(Direction::FromUser, UserSide::Both)],
        RoutineShape::PerDirection => s.directions.iter().map(|&d| spec(d, d.into())).collect(),
    }
}

/// Every routine of the wired `t` the kernel runs: its entry point(s) (on
/// 6.1 the three its site picks among), then with per-CPU variants each
/// variant's routine(s).
fn routines(t: &Strategy) -> Vec<FunctionSpec> {
    let mut out = entry_points(t);
    for e in &t.linux.feature_entries {
        if out.iter().all(|f| f.name != e.symbol) {
            out.push(FunctionSpec {
                name: e.symbol.clone(),
                side: Some(UserSide::Both),
                convention: None,
            });
        }
    }
    for v in &t.variants {
        out.extend(entry_points(&crate::lower::variants::variant_strategy(
            t, v,
        )));
    }
    out
}

/// The unified-diff hunks turning `old` into `new`, whose first line is line
/// `first` of the file.
fn hunks(old: &str, new: &str, first: usize) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::new();
    for group in diff.grouped_ops(3) {
        let (Some(a), Some(b)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = a.old_range().start..b.old_range().end;
        let new_range = a.new_range().start..b.new_range().end;
        let _ = writeln!(
            out,
            "@@ -{},{} +{},{} @@",
            old_range.start + first,
            old_range.len(),
            new_range.start + first,
            new_range.len()
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    similar::ChangeTag::Equal => ' ',
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                };
                out.push(sign);
                out.push_str(change.value());
                if !change.value().ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The one hunk that adds (`sign` '+') or deletes ('-') the whole `text`.
fn whole_file_hunk(text: &str, sign: char) -> String {
    let n = text.lines().count();
    let mut h = if sign == '+' {
        format!("@@ -0,0 +1,{n} @@\n")
    } else {
        format!("@@ -1,{n} +0,0 @@\n")
    };
    for l in text.lines() {
        h.push(sign);
        h.push_str(l);
        h.push('\n');
    }
    h
}

/// Apply `e` to its excerpt: the file diff for it.
fn edit_diff(e: &Edit) -> Result<String> {
    let mut text = e.excerpt.text.to_string();
    for (old, new) in &e.replace {
        if text.matches(old.as_str()).count() != 1 {
            bail!(
                "glue for {}: `{}` does not occur exactly once in the excerpt",
                e.excerpt.path,
                old.lines().next().unwrap_or_default()
            );
        }
        text = text.replacen(old.as_str(), new, 1);
    }
    Ok(hunks(e.excerpt.text, &text, e.excerpt.line))
}

/// The `.text` bytes and table entries of the linux-flavour file, from the
/// object assembled with the kernel-macro shims.
pub fn text_size(t: &Strategy, asm: &str) -> Result<(u64, usize)> {
    let how = crate::checks::objfile::Assemble {
        arch: t.arch,
        kernel_shims: true,
        debug: false,
        keep_locals: false,
        flags: crate::toolchain::toolchain(t.arch)
            .check_flags
            .iter()
            .map(|f| f.to_string())
            .collect(),
    };
    let obj = crate::checks::objfile::assemble_text(asm, "copygen_user.S", &how)?;
    let text = obj
        .functions
        .iter()
        .filter(|f| f.global)
        .map(|f| f.end - f.start)
        .sum();
    Ok((text, obj.extable.len()))
}

/// Statically check the linux-flavour file and fault-inject the standalone
/// flavour of the wired strategy in every role.
pub fn verify(t: &Strategy, asm: &str) -> Result<Verification> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("copygen_user.S");
    std::fs::write(&path, asm)?;
    // A per-CPU entry point's ALTERNATIVE chain is not followed (a warning);
    // each variant it enters is checked as a routine.
    let options = crate::checks::static_verify::Options {
        arch: Some(t.arch),
        flavor: Some(Flavor::Linux),
        convention: Some(t.linux.convention),
        per_cpu_entries: crate::backend::per_cpu_entries(t, Flavor::Linux)
            .into_iter()
            .map(|f| f.symbol)
            .collect(),
        roles: routines(t),
        ..Default::default()
    };
    let report = crate::checks::static_verify::check_object(&path, &options)?;
    if !report.passed() || report.functions.is_empty() {
        let mut why = String::new();
        for (f, finding) in report.findings() {
            let _ = writeln!(why, "  {f}: {finding}");
        }
        bail!("the static check refuses the routine:\n{why}");
    }
    let mut sites = Vec::new();
    if let Some(kernel) = t.linux.kernel {
        if crate::kernel::variant_chain::is_variant_chain(t, kernel) {
            let checked: Vec<String> = report.functions.iter().map(|f| f.name.clone()).collect();
            let chain = crate::kernel::variant_chain::chain(t, kernel);
            sites = crate::checks::static_verify::site::check_sites(t, kernel, &chain, &checked)
                .map_err(|bad| {
                    anyhow::anyhow!("the call site after alternatives:\n  {}", bad.join("\n  "))
                })?;
        }
    }
    let faults = crate::checks::faultinject::run_strategy(t).context("fault injection")?;
    if faults.violations() > 0 {
        bail!(
            "fault injection found {} contract violations:\n  {}",
            faults.violations(),
            faults.details.join("\n  ")
        );
    }
    Ok(Verification {
        static_accesses: report.functions.iter().map(|f| f.user_accesses).sum(),
        static_entries: report.functions.iter().map(|f| f.entries).sum(),
        static_counts: report.functions.iter().map(|f| f.counts_proven).sum(),
        roles: faults
            .routines
            .iter()
            .map(|r| (r.symbol.clone(), r.cases, r.violations))
            .collect(),
        sites,
    })
}

/// How the generated file is made again byte for byte: the strategy
/// argument as given and where it resolves (a catalog name resolves to the
/// checkout's file inside a copygen checkout, to the built-in copy
/// elsewhere).
#[derive(Debug, Clone)]
pub struct Regenerate {
    /// The strategy argument of `kernel-patch` (a file or a catalog name).
    pub argument: String,
    /// `--arch` as given, if it was.
    pub arch: Option<Arch>,
    /// Where the argument is to be resolved: `None` for a file path.
    pub context: Option<&'static str>,
}

/// Where a strategy came from, as the patch names it.
#[derive(Debug, Clone)]
pub enum Origin {
    /// A strategy file given by path.
    File(String),
    /// A catalog strategy read from a copygen checkout (its path there).
    Checkout(String),
    /// A catalog strategy built into this copygen.
    BuiltIn(String),
}

impl Origin {
    /// What the generated file's header names as its source: a path, or
    /// the built-in copy with copygen's version (so a checkout's file and
    /// the built-in copy of one name never claim the same source).
    pub fn label(&self) -> String {
        match self {
            Origin::File(p) | Origin::Checkout(p) => p.clone(),
            Origin::BuiltIn(name) => {
                format!("built-in {name} (copygen {})", env!("CARGO_PKG_VERSION"))
            }
        }
    }

    /// Where a catalog name must be resolved to find this strategy again.
    pub fn context(&self) -> Option<&'static str> {
        match self {
            Origin::File(_) => None,
            Origin::Checkout(_) => Some("run in a copygen checkout"),
            Origin::BuiltIn(_) => Some("run outside any copygen checkout"),
        }
    }
}

/// The SHA-256 of `text`, in hex.
pub fn sha256(text: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Git's object id of a blob holding `bytes` (SHA-1 of `blob <len>\0...`).
pub fn blob_id(bytes: &[u8]) -> String {
    use sha1::Digest as _;
    let mut h = sha1::Sha1::new();
    h.update(format!("blob {}\0", bytes.len()).as_bytes());
    h.update(bytes);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// `arg` as a POSIX shell word.
fn shell_word(arg: &str) -> String {
    if !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./+=:,@%".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// The command that prints the generated file of `kernel` for `r`.
pub fn regenerate_command(kernel: KernelVersion, r: &Regenerate) -> String {
    let mut cmd = format!("copygen kernel-patch --kernel {}", kernel.name());
    if let Some(a) = r.arch {
        let _ = write!(cmd, " --arch {a}");
    }
    let _ = write!(cmd, " --generated-file {}", shell_word(&r.argument));
    cmd
}

/// The file the patch adds: the linux flavour of the wired `t`, its header
/// naming the strategy's text by hash and the command (with copygen's
/// version) that writes this file again byte for byte.
pub fn generated_file(t: &Strategy, kernel: KernelVersion, r: &Regenerate) -> String {
    let asm = crate::output::render::render(t, Flavor::Linux);
    let cmd = crate::output::header::comment_text(&regenerate_command(kernel, r));
    let mut how = format!(
        " * The strategy's text below has SHA-256\n *   {}.\n * copygen {} writes this file again byte for byte",
        sha256(&t.text),
        env!("CARGO_PKG_VERSION")
    );
    match r.context {
        Some(c) => {
            let _ = write!(how, "\n * ({c}):\n");
        }
        None => how.push_str(":\n"),
    }
    // The kernel's 100 columns: a long argument goes on a line of its own.
    if cmd.chars().count() + 5 <= 100 {
        let _ = writeln!(how, " *   {cmd}");
    } else if let Some((head, arg)) = cmd.split_once(" --generated-file ") {
        let _ = writeln!(how, " *   {head} \\\n *     --generated-file {arg}");
    }
    asm.replacen(
        " * Change the strategy file and run `copygen emit` instead.\n",
        &how,
        1,
    )
}

/// A result of `verify/kernel-boot` for the patch's message.
#[derive(Debug, Clone)]
pub struct Boot {
    /// The qemu machine and CPU model it booted.
    pub machine: String,
    /// The guest's summary line (`copygen-boot: PASS ...`).
    pub result: String,
}

/// The patch's place in a series and the options `git format-patch` has.
#[derive(Debug, Clone, Default)]
pub struct Series {
    /// `--reroll-count`: `[PATCH vN ...]`.
    pub reroll: Option<u32>,
    /// (this patch's number, patches in the series), from 1.
    pub number: Option<(usize, usize)>,
    /// `--base`: the commit the series applies to (`base-commit:`).
    pub base: Option<String>,
    /// The `Date:` header (RFC 2822), or none.
    pub date: Option<String>,
}

impl Series {
    /// `[PATCH v2 1/3]`.
    pub fn tag(&self) -> String {
        let mut t = String::from("PATCH");
        if let Some(v) = self.reroll {
            let _ = write!(t, " v{v}");
        }
        if let Some((i, n)) = self.number {
            let w = n.to_string().len();
            let _ = write!(t, " {i:0w$}/{n}");
        }
        format!("[{t}]")
    }
}

/// A full file of a tree copygen edits, read for its `index` line (both
/// blob ids), with the edits applied at the excerpts' lines.
fn full_file(tree: &std::path::Path, path: &str, edits: &[&Edit]) -> Result<(String, String)> {
    let p = tree.join(path);
    let old = std::fs::read(&p).with_context(|| format!("--tree: reading {}", p.display()))?;
    let mut text = String::from_utf8(old.clone())
        .map_err(|_| anyhow::anyhow!("--tree: {} is not UTF-8", p.display()))?;
    let mut sorted: Vec<&&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.excerpt.line));
    for e in sorted {
        let at: usize = text
            .split_inclusive('\n')
            .take(e.excerpt.line - 1)
            .map(str::len)
            .sum();
        if !text[at..].starts_with(e.excerpt.text) {
            bail!(
                "--tree: {} differs from the pristine {} at line {}: not the tree the patch is for",
                p.display(),
                path,
                e.excerpt.line
            );
        }
        let mut new = e.excerpt.text.to_string();
        for (a, b) in &e.replace {
            new = new.replacen(a.as_str(), b, 1);
        }
        text.replace_range(at..at + e.excerpt.text.len(), &new);
    }
    Ok((blob_id(&old), blob_id(text.as_bytes())))
}

/// Files of the tree the routine supersedes and the patch removes:
/// arm64's `copy_{from,to}_user.S` and the template only they include.
fn removed(t: &Strategy) -> Vec<(&'static str, &'static str)> {
    match t.arch {
        Arch::Aarch64 => vec![
            (
                "arch/arm64/lib/copy_from_user.S",
                include_str!("arm64/copy_from_user.S"),
            ),
            (
                "arch/arm64/lib/copy_template.S",
                include_str!("arm64/copy_template.S"),
            ),
            (
                "arch/arm64/lib/copy_to_user.S",
                include_str!("arm64/copy_to_user.S"),
            ),
        ],
        _ => Vec::new(),
    }
}

const NULL_ID: &str = "0000000000000000000000000000000000000000";

/// What one patch is made from besides the strategy.
pub struct Request<'a> {
    pub kernel: KernelVersion,
    /// How the routine was checked (`None`: not checked, and the patch
    /// says so).
    pub verified: Option<&'a Verification>,
    pub mail: &'a mail::Mail,
    pub regenerate: &'a Regenerate,
    /// A pristine tree to read the edited files from, for `index` lines.
    pub tree: Option<&'a std::path::Path>,
    pub boot: Option<&'a Boot>,
    pub series: &'a Series,
    /// Add the KUnit suite of the routines ([`kunit`]).
    pub kunit: bool,
}

/// The whole patch for `s` as `r` asks.
pub fn patch(s: &Strategy, r: &Request) -> Result<String> {
    let kernel = r.kernel;
    let m = r.mail;
    let w = wire(s, kernel)?;
    let t = &w.strategy;
    let asm = generated_file(t, kernel, r.regenerate);
    let (text_bytes, entries) = text_size(t, &asm)?;
    let mut edits = glue(t, kernel);
    let suite = if r.kunit {
        if let Some(why) = kunit::unsupported(kernel) {
            bail!("{why}");
        }
        edits.extend(kunit::edits(kernel));
        let names: Vec<String> = routines(t).into_iter().map(|f| f.name).collect();
        Some(kunit::source(t, kernel, &names, w.file))
    } else {
        None
    };
    // One file may carry two edits (the Makefile): merge their hunks.
    let mut paths: Vec<&str> = edits.iter().map(|e| e.excerpt.path).collect();
    paths.sort_unstable();
    paths.dedup();
    enum Change {
        Edit(String, Option<(String, String)>),
        New(String),
        Delete(&'static str),
    }
    let mut all: Vec<(String, Change)> = Vec::new();
    for path in paths {
        let mine: Vec<&Edit> = edits.iter().filter(|e| e.excerpt.path == path).collect();
        let mut h = String::new();
        let mut ordered = mine.clone();
        ordered.sort_by_key(|e| e.excerpt.line);
        for e in &ordered {
            h.push_str(&edit_diff(e)?);
        }
        let ids = match r.tree {
            Some(tree) => Some(full_file(tree, path, &mine)?),
            None => None,
        };
        all.push((path.to_string(), Change::Edit(h, ids)));
    }
    all.push((w.file.to_string(), Change::New(asm.clone())));
    if let Some(c) = &suite {
        all.push((kunit::FILE.to_string(), Change::New(c.clone())));
    }
    for (path, text) in removed(t) {
        all.push((path.to_string(), Change::Delete(text)));
    }
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let mut diff = String::new();
    let mut counts: Vec<(String, usize, usize)> = Vec::new();
    for (path, change) in &all {
        let _ = writeln!(diff, "diff --git a/{path} b/{path}");
        let hunks = match change {
            Change::Edit(h, ids) => {
                if let Some((old, new)) = ids {
                    let _ = writeln!(diff, "index {old}..{new} 100644");
                }
                let _ = write!(diff, "--- a/{path}\n+++ b/{path}\n{h}");
                h.clone()
            }
            Change::New(text) => {
                let h = whole_file_hunk(text, '+');
                let _ = write!(
                    diff,
                    "new file mode 100644\nindex {NULL_ID}..{}\n--- /dev/null\n+++ b/{path}\n{h}",
                    blob_id(text.as_bytes())
                );
                h
            }
            Change::Delete(text) => {
                let h = whole_file_hunk(text, '-');
                let _ = write!(
                    diff,
                    "deleted file mode 100644\nindex {}..{NULL_ID}\n--- a/{path}\n+++ /dev/null\n{h}",
                    blob_id(text.as_bytes())
                );
                h
            }
        };
        let n = |c: char| {
            hunks
                .lines()
                .filter(|l| l.starts_with(c) && !l.starts_with("@@"))
                .count()
        };
        counts.push((path.clone(), n('+'), n('-')));
    }

    let names: Vec<String> = entry_points(t).into_iter().map(|e| e.name).collect();
    let summary = subject(t);
    let mut body = String::new();
    let drop_in = t.linux.both.as_deref() == Some(REP_MOVS_ALTERNATIVE);
    let _ = writeln!(body, "{}\n", describe::stock(t.arch, kernel, drop_in));
    body.push_str(&describe::strategy(t));
    let _ = writeln!(
        body,
        "\n{}: {}, {}. {} exception-table entries, {} bytes of .text.",
        names.join(" and "),
        t.arch,
        crate::arch::abi(t.arch, Flavor::Linux, t.linux.convention).summary,
        entries,
        text_bytes
    );
    for n in &w.notes {
        let _ = writeln!(body, "{n}");
    }
    // The description is reflowed as paragraphs, so wrapping at the
    // message's width does not leave one word on a line of its own.
    let _ = writeln!(body, "\nThe strategy's description:\n");
    for para in s.description.split("\n\n") {
        let words: Vec<&str> = para.split_whitespace().collect();
        if !words.is_empty() {
            body.push_str(&crate::tools::mail_text::wrap_line(&format!(
                "  {}",
                words.join(" ")
            )));
        }
    }
    let _ = writeln!(
        body,
        "\n{} is generated by copygen {} from the strategy restated in its header ({}, SHA-256 {}); the header names the command that writes it again byte for byte.",
        w.file,
        env!("CARGO_PKG_VERSION"),
        s.source,
        &sha256(&s.text)[..16]
    );
    if suite.is_some() {
        let _ = writeln!(
            body,
            "\n{} (CONFIG_{}) is a KUnit suite of these routines: through \
             copy_from_user() and copy_to_user(), the count returned and the bytes \
             copied at every size up to {} bytes and every fault offset against an \
             inaccessible page, then nanoseconds per call for sizes up to 4096 bytes{}.",
            kunit::FILE,
            kunit::CONFIG,
            kunit::MAX_SIZE,
            if kunit::times_stock_site(t, kernel) {
                ", beside the stock call site's (rep_movs_alternative stays in the tree)"
            } else {
                ""
            }
        );
    }
    match r.verified {
        Some(v) => {
            let roles: Vec<String> = v
                .roles
                .iter()
                .map(|(sym, cases, viol)| format!("  {sym}: {cases} cases, {viol} violations"))
                .collect();
            let _ = writeln!(
                body,
                "\nChecked before writing this patch: the static check of the object\n\
                 ({} user accesses, {} exception-table entries, none missing or stray;\n\
                 the count returned after a fault proven to be the bytes not copied at\n\
                 {}), and fault injection of the same strategy's standalone\n\
                 build against the uaccess contract (every size 0..300 at every fault\n\
                 offset, larger sizes, aliasing distances), in each role:\n{}",
                v.static_accesses,
                v.static_entries,
                counts_sentence(v.static_counts, v.static_accesses),
                roles.join("\n")
            );
            if !v.sites.is_empty() {
                let _ = writeln!(
                    body,
                    "The call site, decoded after alternatives for each of the {} feature\n\
                     sets above: the stock site's length, one rep movsb (the stock bytes)\n\
                     or one call of a routine checked above, then padding NOPs only.",
                    v.sites.len()
                );
            }
        }
        None => {
            let _ = writeln!(body, "\nNot checked (kernel-patch --no-verify).");
        }
    }
    if let Some(b) = r.boot {
        let _ = writeln!(
            body,
            "\nBooted under qemu ({}) with copygen's verify/kernel-boot,\n\
             which runs the kernel's usercopy tests and user buffers that run\n\
             into an unmapped page:\n  {}",
            b.machine, b.result
        );
    }
    match &m.figures {
        Some((figures, cpu)) => {
            let _ = write!(
                body,
                "\nMeasured with copygen bench (TSC ticks per call) on\n{cpu}:\n\n{figures}"
            );
        }
        None => {
            let _ = writeln!(
                body,
                "\nNo measurements are included (kernel-patch was run without --figures)."
            );
        }
    }
    let mut body = mail::guard_body(&mail::wrap_body(&body));
    body.push('\n');
    for who in &m.signed_off_by {
        let _ = writeln!(body, "Signed-off-by: {}", who.trailer());
    }
    let mut base = String::new();
    if let Some(b) = &r.series.base {
        let _ = write!(base, "\nbase-commit: {b}\n");
    }
    let mut headers = format!("{}\n", m.author.header());
    if let Some(d) = &r.series.date {
        let _ = writeln!(headers, "Date: {d}");
    }
    let _ = writeln!(
        headers,
        "{}",
        mail::fold_header("Subject", &format!("{} {summary}", r.series.tag()))
    );
    Ok(format!(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n\
         {headers}\n\
         {body}---\n{}\n{}\n{diff}{base}-- \ncopygen {}\n",
        maintained_by(t.arch),
        mail::diffstat(&counts),
        env!("CARGO_PKG_VERSION")
    ))
}

/// The note after the `---` line on who maintains the new file: the tree's
/// MAINTAINERS entry that covers the arch folder already does (the patch
/// adds no entry of its own). It is written as a diffstat line for
/// MAINTAINERS, which is how checkpatch learns that the new file needs no
/// new entry; git apply and git am ignore it.
/// What the static check proved of the count each fault returns.
fn counts_sentence(proven: usize, accesses: usize) -> String {
    if proven == accesses {
        "every access".into()
    } else {
        format!("{proven} of them")
    }
}

fn maintained_by(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 | Arch::I386 => {
            "MAINTAINERS | unchanged: X86 ARCHITECTURE (32-BIT AND 64-BIT) has arch/x86/"
        }
        Arch::Armv6 => "MAINTAINERS | unchanged: ARM PORT has arch/arm/",
        Arch::Aarch64 => {
            "MAINTAINERS | unchanged: ARM64 PORT (AARCH64 ARCHITECTURE) has arch/arm64/"
        }
        Arch::Riscv64 => "MAINTAINERS | unchanged: RISC-V ARCHITECTURE has arch/riscv/",
    }
}

/// The subject's summary in the style of the subsystem the patch touches,
/// saying what the new code does: `x86/lib:` when only arch/x86/lib
/// changes, `x86/uaccess:` when the call sites do, `ARM: uaccess:`,
/// `arm64: uaccess:` and `riscv: uaccess:` for those trees.
pub fn subject(t: &Strategy) -> String {
    let what = describe::headline(t);
    let (prefix, long, short) = match t.arch {
        Arch::X86_64 if t.linux.both.as_deref() == Some(REP_MOVS_ALTERNATIVE) => (
            "x86/lib",
            "Copy with {} in rep_movs_alternative",
            "Replace rep_movs_alternative with a generated routine",
        ),
        Arch::X86_64 => (
            "x86/uaccess",
            "Copy user memory with {}",
            "Copy user memory with a generated routine",
        ),
        Arch::I386 => (
            "x86/uaccess",
            "Copy user memory with {} on 32-bit",
            "Copy user memory with a generated routine on 32-bit",
        ),
        Arch::Armv6 => (
            "ARM: uaccess",
            "Copy user memory with {}",
            "Generate arm_copy_{from,to}_user",
        ),
        Arch::Aarch64 => (
            "arm64: uaccess",
            "Copy user memory with {}",
            "Generate __arch_copy_{from,to}_user",
        ),
        Arch::Riscv64 => (
            riscv64::SUBJECT_PREFIX,
            "Copy user memory with {}",
            "Generate the scalar user copy",
        ),
    };
    // Per-CPU variants whose names do not fit say so without them (the
    // body names each and the CPUs it serves).
    let full = mail::subject(prefix, long, short, &what);
    if !t.variants.is_empty() && full.ends_with(short) {
        let counted = format!("{} per-CPU variants", t.variants.len());
        return mail::subject(prefix, long, short, &counted);
    }
    full
}
