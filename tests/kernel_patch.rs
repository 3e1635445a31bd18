//! `copygen kernel-patch`: the patch applies (`git apply --check`) to the
//! pristine Debian trees of 6.1 and 6.12, wires the routine the way each
//! tree's call site needs, and refuses strategies that cannot be wired.
//! The trees come from /usr/src/linux-source-<v>.tar.xz (verify/install-deps
//! installs both); only the files the patches touch are extracted.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::kernel_source::excerpt;

/// The author every patch here is written as (through git config, as a
/// developer's own configuration gives it).
const AUTHOR: &str = "J. Random Hacker";
const EMAIL: &str = "jrh@example.org";

fn copygen() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_copygen"));
    c.env("GIT_CONFIG_COUNT", "2")
        .env("GIT_CONFIG_KEY_0", "user.name")
        .env("GIT_CONFIG_VALUE_0", AUTHOR)
        .env("GIT_CONFIG_KEY_1", "user.email")
        .env("GIT_CONFIG_VALUE_1", EMAIL);
    c
}

/// Every file any patch edits (the new .S files are created by the patch).
const EDITED: &[&str] = &[
    "arch/x86/include/asm/uaccess_64.h",
    "arch/x86/include/asm/uaccess_32.h",
    "arch/x86/lib/Makefile",
    "arch/arm/lib/Makefile",
    "arch/arm64/lib/Makefile",
    "tools/objtool/check.c",
    "arch/arm64/lib/copy_from_user.S",
    "arch/arm64/lib/copy_to_user.S",
    "arch/arm64/lib/copy_template.S",
];

/// A pristine excerpt of the tree of `version`: the edited files only,
/// copied once per test process. `None` (and a loud note) without the tarball.
fn tree(version: &str) -> Option<&'static Path> {
    static TREES: OnceLock<Vec<(&str, Option<tempfile::TempDir>)>> = OnceLock::new();
    let trees = TREES.get_or_init(|| {
        ["6.1", "6.12"]
            .into_iter()
            .map(|v| (v, excerpt(v, EDITED)))
            .collect()
    });
    trees
        .iter()
        .find(|(v, _)| *v == version)
        .and_then(|(_, d)| d.as_ref().map(|d| d.path()))
}

fn patch_of(args: &[&str]) -> String {
    let out = copygen()
        .arg("kernel-patch")
        .args(args)
        .output()
        .expect("copygen runs");
    assert!(
        out.status.success(),
        "kernel-patch {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn applies(tree: &Path, patch: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("p.patch");
    std::fs::write(&file, patch).unwrap();
    let out = Command::new("git")
        .args(["apply", "--check", "-v"])
        .arg(&file)
        .current_dir(tree)
        .output()
        .expect("git runs");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// 6.12 inlines copy_user_generic(): `guarded-movsb` is patched in its
/// 6.12 form, `guarded-movsb-612`, whose variants the inline site calls in
/// rep_movs_alternative's convention with STAC done (tests/call_site.rs
/// checks the chain itself).
#[test]
fn guarded_movsb_patch_applies_to_6_12_as_its_inline_site_form() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.patch");
    let status = copygen()
        .args(["kernel-patch", "guarded-movsb", "--kernel", "6.12", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let p = std::fs::read_to_string(&out).unwrap();
    // git format-patch form, and a body that says what was verified.
    assert!(p.starts_with(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: "
    ));
    assert!(
        p.contains("\nSubject: [PATCH] x86/uaccess: Copy user memory with 5 per-CPU variants\n"),
        "{p}"
    );
    assert!(p.contains("\nFrom: =?UTF-8?q?J=2E_Random_Hacker?= <jrh@example.org>\n"));
    assert!(p.contains("\nSigned-off-by: J. Random Hacker <jrh@example.org>\n---\n"));
    assert!(p.contains("exception-table entries,") && p.contains("bytes of .text"));
    // The static check proved every fault's count (tests/static_count.rs).
    assert!(
        p.contains(
            "the count returned after a fault proven to be the bytes not copied at\nevery access)"
        ),
        "{p}"
    );
    assert!(
        p.contains("guarded_movsb_612_to_user: 92264 cases, 0 violations"),
        "{p}"
    );
    // No C-convention glue: the stock site's constraints stay, and objtool
    // learns the routines the site calls with STAC done.
    assert!(!p.contains("copygen_call"));
    assert!(!p.contains("\"r8\", \"r9\""));
    assert!(p.contains("+\t\"copygen_copy_user\", /* copygen: called with STAC done */"));
    assert!(p.contains("+SYM_FUNC_START(copygen_copy_user)"));
    assert!(
        p.contains("+#include <linux/export.h>"),
        "6.12 exports from <linux/export.h>"
    );
    // 6.4 removed _ASM_EXTABLE_CPY: every variant's entries are 6.12's own.
    assert!(!p.contains("_ASM_EXTABLE_CPY"), "{p}");
    assert!(p.contains("+	_ASM_EXTABLE_UA(.Lzen_copy_"), "{p}");
    assert!(!p.contains("X86_TRAP_MC"), "{p}");
    if let Some(t) = tree("6.12") {
        applies(t, &p).unwrap();
        // and not to the other tree: the glue is per version
        if let Some(t61) = tree("6.1") {
            assert!(applies(t61, &p).is_err());
        }
    }
}

#[test]
fn every_arch_and_version_applies_to_its_pristine_tree() {
    for (version, preset, expect) in [
        ("6.1", "unrolled64", "+SYM_FUNC_START(copygen_copy_user)"),
        (
            "6.1",
            "rep-movsb",
            "+\t\t     : \"+c\" (n), \"+D\" (to), \"+S\" (from), ASM_CALL_CONSTRAINT",
        ),
        (
            "6.12",
            "movs-alternative",
            "+        lib-y += copygen_user_64.o",
        ),
        ("6.12", "rep-movsb", "+SYM_FUNC_START(rep_movs_alternative)"),
        (
            "6.1",
            "movsl",
            "+\treturn copygen_copy_user((__force void *)to, from, n);",
        ),
        (
            "6.12",
            "intel-unrolled",
            "+unsigned long __must_check copygen_copy_user(",
        ),
        ("6.1", "ldm-stm", "+ENTRY(arm_copy_from_user)"),
        ("6.12", "word-loop", "+ENTRY(arm_copy_to_user)"),
        (
            "6.1",
            "arm64-template",
            "+SYM_FUNC_START(__arch_copy_from_user)",
        ),
        (
            "6.12",
            "a64-overlap",
            "+SYM_FUNC_START(__arch_copy_to_user)",
        ),
    ] {
        let p = patch_of(&[preset, "--kernel", version, "--no-verify"]);
        assert!(
            p.contains(expect),
            "{version} {preset}: no `{expect}` in\n{p}"
        );
        assert!(p.contains("Not checked (kernel-patch --no-verify)."));
        // No boot is claimed where none ran, and no MAINTAINERS entry of
        // its own: the arch's entry covers the new file.
        assert!(!p.contains("Boot") && !p.contains("boot test"), "{p}");
        assert!(!p.contains("diff --git a/MAINTAINERS"), "{p}");
        if let Some(t) = tree(version) {
            applies(t, &p).unwrap_or_else(|e| panic!("{version} {preset}: {e}"));
        }
    }
}

/// A per-CPU strategy: the patch carries every variant, and the routine the
/// glue calls selects one with ALTERNATIVEs on the variants' feature bits
/// (patched at boot), on 6.1 and 6.12, x86_64 and i386.
#[test]
fn per_cpu_patch_selects_each_variant_with_alternatives() {
    // Each preset's variants in order: (name, per conjunction of its
    // condition the feature bits, `!` negated), the last the default.
    type Conditions = &'static [(&'static str, &'static [&'static [&'static str]])];
    const ZEN3_OR_ZEN4: &[&[&str]] = &[&["ZEN3", "ERMS"], &["ZEN4", "ERMS"]];
    let x86_64_61: Conditions = &[
        ("zen", ZEN3_OR_ZEN4),
        ("fsrm", &[&["FSRM"]]),
        ("erms", &[&["ERMS"]]),
        ("zen_movsq", &[&["ZEN", "!ERMS"]]),
        ("movsq", &[&["REP_GOOD"]]),
        ("loop", &[]),
    ];
    let x86_64_612: Conditions = &[
        ("zen_noerms", &[&["ZEN1"], &["ZEN2"]]),
        ("noerms", &[&["!ERMS"]]),
        ("zen", &[&["ZEN3"], &["ZEN4"]]),
        ("fsrm", &[&["FSRM"]]),
        ("erms", &[]),
    ];
    let i386: Conditions = &[
        ("zen", ZEN3_OR_ZEN4),
        ("fsrm", &[&["FSRM"]]),
        ("erms", &[&["ERMS"]]),
        ("loop", &[]),
    ];
    for (version, preset, symbol, variants) in [
        ("6.1", "guarded-movsb", "guarded_movsb", x86_64_61),
        ("6.12", "guarded-movsb", "guarded_movsb_612", x86_64_612),
        ("6.1", "guarded-movsb-32", "guarded_movsb_32", i386),
        ("6.12", "guarded-movsb-32", "guarded_movsb_32", i386),
    ] {
        let p = patch_of(&[preset, "--kernel", version, "--no-verify"]);
        let alternative_call_2 = version == "6.1" && preset == "guarded-movsb";
        if alternative_call_2 {
            six_one_entries(&p);
        }
        // One slot per conjunction of a variant's condition: its jump
        // where the first bit is as named, NOPs put back where the second
        // is not.
        let mut entry = vec!["+SYM_FUNC_START(copygen_copy_user)".to_string()];
        for (v, terms) in variants.iter() {
            let target = format!("{symbol}__{v}_copy_user");
            if terms.is_empty() {
                entry.push(format!("+\tjmp\t{target}"));
            }
            for bits in terms.iter() {
                entry.push(format!("+\t{}", alt_slot(&target, bits)));
            }
        }
        let lines: Vec<&str> = p
            .lines()
            .skip_while(|l| *l != entry[0])
            .filter(|l| !l.starts_with("+\t/*"))
            .take(entry.len())
            .collect();
        if !alternative_call_2 {
            assert_eq!(lines, entry, "{version} {preset}");
        }
        for (v, _) in variants.iter() {
            let routine = format!("{symbol}__{v}_copy_user");
            assert!(
                p.contains(&format!("+SYM_FUNC_START({routine})"))
                    || alternative_call_2
                        && p.contains(&format!("+SYM_INNER_LABEL({routine}, SYM_L_GLOBAL)")),
                "{version} {preset}: no {routine}"
            );
            // The body names each variant and its routine (a long line of
            // the table may be wrapped).
            let body = p.split("\n---\n").next().unwrap();
            assert!(
                body.lines().any(|l| l.starts_with(&format!("  {v} ")))
                    && body.lines().any(|l| l.ends_with(&routine)),
                "{version} {preset}: body lacks {v}"
            );
        }
        if variants.iter().any(|(_, b)| *b == ZEN3_OR_ZEN4) {
            assert!(
                p.contains("X86_FEATURE_ZEN3 && X86_FEATURE_ERMS\n")
                    && p.contains(" || X86_FEATURE_ZEN4 && X86_FEATURE_ERMS:\n"),
                "{version} {preset}"
            );
        }
        assert!(!p.contains("default variant `loop` only"));
        // 6.12: the inline site becomes the chain over the variants.
        assert_eq!(
            p.contains("becomes one ALTERNATIVE per feature test of the variants"),
            version == "6.12" && preset == "guarded-movsb",
            "{version} {preset}"
        );
        if let Some(t) = tree(version) {
            applies(t, &p).unwrap_or_else(|e| panic!("{version} {preset}: {e}"));
        }
    }
}

/// The slot of a per-CPU entry point that jumps to `target` where the
/// first of `bits` holds (`X86_FEATURE_` left out, `!` for absent), the
/// jump put back to NOPs where the second does not hold.
fn alt_slot(target: &str, bits: &[&str]) -> String {
    let holds = |bit: &str| match bit.strip_prefix('!') {
        Some(b) => format!("ALT_NOT(X86_FEATURE_{b})"),
        None => format!("X86_FEATURE_{bit}"),
    };
    let fails = |bit: &str| match bit.strip_prefix('!') {
        Some(b) => format!("X86_FEATURE_{b}"),
        None => format!("ALT_NOT(X86_FEATURE_{bit})"),
    };
    match bits {
        [first] => format!("ALTERNATIVE \"\", \"jmp {target}\", {}", holds(first)),
        [first, second] => format!(
            "ALTERNATIVE_2 \"\", \"jmp {target}\", {}, \"\", {}",
            holds(first),
            fails(second)
        ),
        _ => panic!("{} bits", bits.len()),
    }
}

/// 6.1's glue keeps the tree's `alternative_call_2` on REP_GOOD and ERMS and
/// calls one of three entry points of guarded-movsb: each has a slot for
/// the other variants its CPUs may take (tests the call decided left out)
/// and falls into one, whose symbol is an inner label: the last, or
/// (REP_GOOD's, where Zen 1 and 2 call) the Zen family's variant before it,
/// the last one's slot testing for no ZEN; and the glue names them as the
/// stock `copy_user_generic()` names its routines. (The routine without
/// either bit has no Zen slot: the kernel sets REP_GOOD on every Zen.)
fn six_one_entries(p: &str) {
    let slot = |v: &str, bit: &str| {
        format!(
            "+\t{}",
            alt_slot(&format!("guarded_movsb__{v}_copy_user"), &[bit])
        )
    };
    let inner = |v: &str| format!("+SYM_INNER_LABEL(guarded_movsb__{v}_copy_user, SYM_L_GLOBAL)");
    for (entry, slots, last) in [
        (
            "copygen_copy_user_erms",
            &[("zen", "ZEN3"), ("zen", "ZEN4"), ("fsrm", "FSRM")][..],
            "erms",
        ),
        (
            "copygen_copy_user_rep_good",
            &[("fsrm", "FSRM"), ("movsq", "!ZEN")],
            "zen_movsq",
        ),
        ("copygen_copy_user", &[("fsrm", "FSRM")], "loop"),
    ] {
        let start = format!("+SYM_FUNC_START({entry})");
        let mut want = vec![start.clone()];
        want.extend(slots.iter().map(|&(v, b)| slot(v, b)));
        want.push(inner(last));
        let lines: Vec<String> = p
            .lines()
            .skip_while(|l| *l != start)
            .filter(|l| !l.starts_with("+\t/*"))
            .take(want.len())
            .map(str::to_string)
            .collect();
        assert_eq!(lines, want, "{entry}");
        assert!(p.contains(&format!("+EXPORT_SYMBOL({entry})")), "{entry}");
    }
    assert!(p.contains(
        "+\tasm volatile(ALTERNATIVE_2(\"call copygen_copy_user\",\n+\t\t\t\t   \"call copygen_copy_user_rep_good\", X86_FEATURE_REP_GOOD,\n+\t\t\t\t   \"call copygen_copy_user_erms\", X86_FEATURE_ERMS)\n"
    ));
}

/// A per-CPU strategy in rep_movs_alternative's convention is not dropped in
/// as rep_movs_alternative on 6.12 (FSRM CPUs never call that): the inline
/// site becomes the chain over its variants (the bare rep movsb stays
/// inline on FSRM CPUs, the others call their routine), and objtool learns
/// every routine called with STAC done.
#[test]
fn per_cpu_rep_movs_routine_is_called_from_the_chain_on_6_12() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pc.toml");
    std::fs::write(
        &file,
        "name = \"pc\"\ndescription = \"d\"\narch = \"x86_64\"\n[linux]\nconvention = \"rep_movs\"\nuaccess = \"caller\"\n\
         [methods.m]\nkind = \"rep_movs\"\n[methods.b]\nkind = \"bytes\"\n\
         [[variants]]\nname = \"fast\"\nwhen = [\"fsrm\"]\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"m\"\n\
         [[variants]]\nname = \"slow\"\ndefault = true\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n",
    )
    .unwrap();
    let p = patch_of(&[file.to_str().unwrap(), "--kernel", "6.12", "--no-verify"]);
    assert!(p.contains("+SYM_FUNC_START(copygen_copy_user)"), "{p}");
    assert!(!p.contains("+SYM_FUNC_START(rep_movs_alternative)"));
    assert!(!p.contains("copygen_call"));
    assert!(
        p.contains("+\t\tALTERNATIVE(\"call pc__slow_copy_user\",\n+\t\t\t    \"rep movsb\", X86_FEATURE_FSRM)\n"),
        "{p}"
    );
    for name in [
        "copygen_copy_user",
        "pc__fast_copy_user",
        "pc__slow_copy_user",
    ] {
        assert!(
            p.contains(&format!(
                "+\t\"{name}\", /* copygen: called with STAC done */"
            )),
            "{name}: {p}"
        );
    }
    if let Some(t) = tree("6.12") {
        applies(t, &p).unwrap();
    }
}

#[test]
fn caller_bracketed_c_routine_gets_stac_in_the_glue_and_objtool_learns_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c-caller.toml");
    std::fs::write(
        &file,
        "name = \"c-caller\"\ndescription = \"C convention, caller brackets\"\narch = \"x86_64\"\n\
         [linux]\nuaccess = \"caller\"\n[methods.bytes]\nkind = \"bytes\"\n[[dispatch]]\nsizes = \"0..\"\nuse = \"bytes\"\n",
    )
    .unwrap();
    for version in ["6.1", "6.12"] {
        let p = patch_of(&[file.to_str().unwrap(), "--kernel", version, "--no-verify"]);
        assert!(p.contains("+\tstac();\n") && p.contains("+\tclac();\n"));
        assert!(p.contains("+\t\"copygen_copy_user\", /* copygen: called with STAC done */"));
        if let Some(t) = tree(version) {
            applies(t, &p).unwrap_or_else(|e| panic!("{version}: {e}"));
        }
    }
}

#[test]
fn unfit_strategies_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.patch");
    for (args, why) in [
        (
            vec!["intel-unrolled-zeroing", "--kernel", "6.1"],
            "emits only from_user",
        ),
        (
            vec!["unrolled64", "--kernel", "5.10"],
            "not a supported tree",
        ),
        (
            vec!["no-such-strategy", "--kernel", "6.1"],
            "neither a strategy file",
        ),
    ] {
        let o = copygen()
            .arg("kernel-patch")
            .args(&args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(!out.exists());
    }
}

/// Each reason a valid strategy cannot go into a tree names the file, the
/// line and column and the field that makes it so (the file's own words
/// where it has them, else the table that would hold them).
#[test]
fn an_unfit_strategy_is_refused_at_the_field_that_makes_it_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.patch");
    let bytes = "[methods.b]\nkind = \"bytes\"\n[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n";
    let per_cpu = "[linux]\nkernel = \"6.12\"\n[[variants]]\nname = \"a\"\nwhen = [\"erms\"]\n\
                   [[variants]]\nname = \"d\"\ndefault = true\n";
    for (arch, kernel, head, at, field, why) in [
        (
            "x86_64",
            "6.12",
            "directions = [\"to_user\"]\n",
            "4:1",
            "directions",
            "through one call site; this strategy emits only to_user",
        ),
        (
            "i386",
            "6.1",
            "[fault]\nzero_tail = true\n",
            "5:13",
            "fault.zero_tail",
            "zeroes in C (copy_from_user)",
        ),
        (
            "x86_64",
            "6.12",
            "[linux]\nconvention = \"rep_movs\"\nuaccess = \"routine\"\n",
            "6:11",
            "linux.uaccess",
            "uaccess = \"caller\"",
        ),
        // The convention is not written: the error points at its table.
        (
            "x86_64",
            "6.12",
            per_cpu,
            "4:2",
            "linux.convention",
            "6.12 inlines copy_user_generic()",
        ),
        (
            "armv6",
            "6.12",
            "routine = \"both\"\n",
            "4:11",
            "routine",
            "calls arm_copy_from_user and arm_copy_to_user: use one routine per direction",
        ),
        (
            "armv6",
            "6.1",
            "[fault]\nzero_tail = true\n",
            "5:13",
            "fault.zero_tail",
            "arm_copy_from_user does not zero",
        ),
        (
            "riscv64",
            "6.12",
            "[fault]\nzero_tail = true\n",
            "5:13",
            "fault.zero_tail",
            "__asm_copy_from_user does not zero",
        ),
    ] {
        let file = dir.path().join(format!("{arch}.toml"));
        let text = format!("name = \"u\"\ndescription = \"d\"\narch = \"{arch}\"\n{head}{bytes}");
        std::fs::write(&file, &text).unwrap();
        let o = copygen()
            .arg("kernel-patch")
            .arg(&file)
            .args(["--kernel", kernel, "--no-verify", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{arch} {kernel}: {err}");
        let located = format!("{}:{at}: error in `{field}`: ", file.display());
        assert!(err.starts_with(&located), "{arch} {kernel}: {err}\n{text}");
        assert!(err.contains(why), "{arch} {kernel}: {err}");
        assert!(!out.exists());
    }
}

#[test]
fn aarch64_routines_replace_arm64s_own_copy_files_under_their_names() {
    for version in ["6.1", "6.12"] {
        let p = patch_of(&["a64-overlap", "--arch", "aarch64", "--kernel", version]);
        assert!(
            p.contains("\nSubject: [PATCH] arm64: uaccess: Copy user memory with "),
            "{p}"
        );
        // Verified before writing: both roles fault-injected under qemu-aarch64.
        assert!(
            p.contains("a64_overlap_from_user: 92264 cases, 0 violations"),
            "{p}"
        );
        assert!(
            p.contains("a64_overlap_to_user: 92264 cases, 0 violations"),
            "{p}"
        );
        // The generated file replaces copy_from_user.o and copy_to_user.o
        // in the Makefile, and defines and exports arm64's own symbols.
        assert!(p.contains("+++ b/arch/arm64/lib/copygen_user.S\n"));
        assert!(p.contains(
            "-lib-y\t\t:= clear_user.o delay.o copy_from_user.o\t\t\\\n-\t\t   copy_to_user.o copy_page.o\t\t\t\t\\\n"
        ));
        assert!(p.contains(
            "+lib-y\t\t:= clear_user.o delay.o copygen_user.o\t\t\t\\\n+\t\t   copy_page.o\t"
        ));
        for sym in ["__arch_copy_from_user", "__arch_copy_to_user"] {
            assert!(p.contains(&format!("+SYM_FUNC_START({sym})\n")));
            assert!(p.contains(&format!("+EXPORT_SYMBOL({sym})\n")));
        }
        assert!(p.contains("+\t_asm_extable_uaccess\t"));
        // What the generated file supersedes goes: the two files and the
        // template only they include, each with its blob id for git am -3.
        for f in ["copy_from_user.S", "copy_template.S", "copy_to_user.S"] {
            assert!(
                p.contains(&format!(
                    "diff --git a/arch/arm64/lib/{f} b/arch/arm64/lib/{f}\ndeleted file mode 100644\nindex "
                )),
                "{f}"
            );
            assert!(p.contains(&format!("--- a/arch/arm64/lib/{f}\n+++ /dev/null\n")));
        }
        if let Some(t) = tree(version) {
            applies(t, &p).unwrap_or_else(|e| panic!("{version}: {e}"));
        }
    }
    // arm64 calls one routine per direction, and its ldtr/sttr could not
    // serve the kernel side of one for both: refused by validation.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("both.toml");
    std::fs::write(
        &file,
        "name = \"both\"\ndescription = \"d\"\narch = \"aarch64\"\nroutine = \"both\"\n\
         [methods.b]\nkind = \"bytes\"\n[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n",
    )
    .unwrap();
    let o = copygen()
        .args(["kernel-patch", file.to_str().unwrap(), "--kernel", "6.12"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(&format!("{}:4:11: error in `routine`: ", file.display())),
        "{err}"
    );
    assert!(
        err.contains("arm64 calls __arch_copy_from_user and __arch_copy_to_user"),
        "{err}"
    );
}
