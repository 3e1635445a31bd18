//! `copygen verify --static` on x86 `ALTERNATIVE` sites: the checker
//! applies `.altinstructions` entries (both layouts, their flags) and
//! checks every variant, alone and combined across sites.

use std::path::PathBuf;

use copygen::checks::static_verify::{check_object, FunctionSpec, Options};
use copygen::front::strategy::{Arch, Flavor};

use crate::common;

use common::static_check::{assert_caught, check_text, errors, line_number, static_fixture};

/// `x86-alternative.S`, the options that check it (linux flavour,
/// `rep_movs` convention, both sides user) and the source line of its
/// `ALTERNATIVE` site.
fn alternative_fixture() -> (PathBuf, String, Options, u32) {
    let (path, text) = static_fixture("x86-alternative.S");
    let opts = Options {
        flavor: Some(Flavor::Linux),
        functions: vec![FunctionSpec::parse("altcopy:both:rep_movs").unwrap()],
        ..Options::default()
    };
    let site = line_number(&text, "10:\tjmp\t.Lmovsq");
    (path, text, opts, site)
}

/// Shaped like Linux 6.12's rep_movs_alternative: the exception-table
/// entry at the `ALTERNATIVE` site serves the `rep movsb` an ERMS CPU runs
/// there, not the `jmp` in the object. The checker applies the
/// `.altinstructions` entry (14-byte layout, and 6.1's 12-byte one) and
/// checks both variants: the entry is used, the replacement's fault path
/// is checked, and what only the patched code gets wrong names the variant.
#[test]
fn x86_alternative_site_is_checked_in_every_variant() {
    let (path, text, opts, site) = alternative_fixture();
    let erms = "[with the alternatives for X86_FEATURE_ERMS (9*32+9) applied]";
    let r = check_object(&path, &opts).unwrap();
    assert!(r.passed() && errors(&r).is_empty(), "{r}");
    // movb, movb, rep movsq and the replacement's rep movsb.
    assert_eq!(r.functions[0].user_accesses, 4, "{r}");
    assert_eq!(r.functions[0].entries_analysed, 4, "{r}");

    // 6.1's 12-byte entries (a u16 feature word, no flags).
    let v61 = text.replacen(".4byte\t9 * 32 + 9", ".word\t9 * 32 + 9", 1);
    assert_ne!(v61, text);
    let r = check_text(&v61, "x86-alternative.S", &opts);
    assert!(r.passed() && errors(&r).is_empty(), "{r}");
    assert_eq!(r.functions[0].user_accesses, 4, "{r}");

    // A replacement that accesses no memory either: the entry is stray in
    // every variant.
    let m = text.replacen("13:\trep movsb", "13:\tmovl\t%ecx, %eax", 1);
    assert_ne!(m, text);
    let r = check_text(&m, "x86-alternative.S", &opts);
    let f = assert_caught(&r, "altcopy", "stray exception-table entry", site);
    assert!(!f.message.contains('['), "{f}");
    assert_eq!(errors(&r).len(), 1, "{r}");

    // `rep movsq` patched in: its fixup returns without a byte retry, a
    // finding of the ERMS variant only.
    let m = text.replacen("13:\trep movsb", "13:\trep movsq", 1);
    let r = check_text(&m, "x86-alternative.S", &opts);
    let f = assert_caught(&r, "altcopy", "no byte retry after a fault here", site);
    assert!(f.message.ends_with(erms), "{f}");
    assert_eq!(errors(&r).len(), 1, "{r}");

    // No entry on the site: the replacement's access has none.
    let m = text.replacen("\t.long\t10b - ., 12b - .\n", "", 1);
    assert_ne!(m, text);
    let r = check_text(&m, "x86-alternative.S", &opts);
    let f = assert_caught(&r, "altcopy", "without an exception-table entry", site);
    assert!(f.message.ends_with(erms), "{f}");
    assert_eq!(errors(&r).len(), 1, "{r}");

    // A replacement that jumps back into .text: the jump is relocated to
    // where the replacement runs, so the `ret` only it reaches is reached.
    let m = text
        .replacen("13:\trep movsb", "13:\trep movsb\n\tjmp\t.Llarge_done", 1)
        .replacen(
            "\t.size\taltcopy",
            ".Llarge_done:\n\tret\n\t.size\taltcopy",
            1,
        );
    let r = check_text(&m, "x86-alternative.S", &opts);
    assert!(r.passed() && errors(&r).is_empty(), "{r}");
    // A jump that stays in .altinstr_replacement cannot be applied: said,
    // not guessed.
    let m = text.replacen("14:\n", "\tjmp\t15f\n14:\n\tnop\n15:\tret\n", 1);
    assert_ne!(m, text);
    let r = check_text(&m, "x86-alternative.S", &opts);
    assert_caught(&r, "altcopy", "cannot be applied: `jmp", site);
    // Another site of the same condition is then not analysed patched
    // either (the kernel would patch both): it says so too.
    let m = m
        .replacen("altcopy:
", "altcopy:
20:	.skip	3, 0x90
", 1)
        .replacen(".section .altinstr_replacement, \"ax\"\n", ".section .altinstr_replacement, \"ax\"\n22:\tstac\n", 1)
        .replacen(
            "\t.section __ex_table",
            "\t.section .altinstructions, \"a\"\n\t.long\t20b - ., 22b - .\n\t.4byte\t9 * 32 + 9\n\t.byte\t3, 3\n\t.section __ex_table",
            1,
        );
    let r = check_text(&m, "x86-alternative.S", &opts);
    let site = line_number(&m, "10:\tjmp\t.Lmovsq");
    assert_caught(&r, "altcopy", "cannot be applied: `jmp", site);
    // (`.skip` bytes have no source line)
    let other = errors(&r)
        .into_iter()
        .find(|(_, f)| f.addr == 0 && f.message.contains("cannot be applied: the one at 0x"));
    assert!(other.is_some(), "{r}");
}

/// The `.altinstructions` flags and layout: an `ALT_NOT` entry is patched
/// when the feature is absent (and findings say so), an
/// `ALT_FLAG_DIRECT_CALL` one is not guessed at, and a table in neither
/// layout is a located error.
#[test]
fn x86_alternative_flags_and_bad_layout() {
    let (_, text, opts, site) = alternative_fixture();
    let flagged = |flags: &str| {
        text.replacen(
            ".4byte\t9 * 32 + 9",
            &format!(".4byte\t({flags} << 16) | (9 * 32 + 9)"),
            1,
        )
    };
    // ALT_NOT: a flag of 6.3+'s 14-byte entries; in 6.1's 12-byte ones the
    // feature word's top bit.
    let v61 = text.replacen(".4byte\t9 * 32 + 9", ".word\t(1 << 15) | (9 * 32 + 9)", 1);
    for not_erms in [flagged("1"), v61] {
        let m = not_erms.replacen("13:\trep movsb", "13:\trep movsq", 1);
        let r = check_text(&m, "x86-alternative.S", &opts);
        let f = assert_caught(&r, "altcopy", "no byte retry after a fault here", site);
        assert!(
            f.message
                .ends_with("[with the alternatives for no X86_FEATURE_ERMS (9*32+9) applied]"),
            "{f}"
        );
    }
    let r = check_text(&flagged("2"), "x86-alternative.S", &opts);
    assert_caught(&r, "altcopy", "ALT_FLAG_DIRECT_CALL", site);

    let m = text.replacen(
        "\t.byte\t14b - 13b\n",
        "\t.byte\t14b - 13b\n\t.byte\t0\n",
        1,
    );
    assert_ne!(m, text);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x86-alternative.S");
    std::fs::write(&path, &m).unwrap();
    let err = format!("{:#}", check_object(&path, &opts).unwrap_err());
    assert!(
        err.contains(".altinstructions: 15 bytes with 2 relocations"),
        "{err}"
    );
}

/// Code reached only when two sites are patched (copygen's per-CPU entry
/// points test `zen && erms` as two `ALTERNATIVE`s): the checker combines
/// the feature bits, so the access there is analysed; sites that no CPU
/// patches together (ZEN and not ZEN) leave it unreached.
#[test]
fn x86_alternatives_are_combined_across_sites() {
    // i386 objects are REL: the table's addends sit in its bytes.
    for (arch, copy, ret) in [
        (
            Arch::X86_64,
            "0:\tmovb\t(%rsi), %al\n\tmovb\t%al, (%rdi)\n",
            "1:\tmovq\t%rdx, %rax\n",
        ),
        (
            Arch::I386,
            "0:\tmovb\t(%edx), %cl\n\tmovb\t%cl, (%eax)\n",
            "1:\tmovl\t%ecx, %eax\n",
        ),
    ] {
        let text = format!(
            "\t.text
\t.globl\tboth_from_user
\t.type\tboth_from_user, @function
both_from_user:
10:\tjmp\t.Lnot
11:
20:\tjmp\t.Lnot
21:
{copy}\txorl\t%eax, %eax
\tret
.Lnot:
{ret}\tret
\t.size\tboth_from_user, . - both_from_user
\t.section .altinstr_replacement, \"ax\"
12:
\t.section .altinstructions, \"a\"
\t.long\t10b - ., 12b - .
\t.4byte\t7 * 32 + 28
\t.byte\t11b - 10b, 0
\t.long\t20b - ., 12b - .
\t.4byte\t9 * 32 + 9
\t.byte\t21b - 20b, 0
\t.section __ex_table, \"a\"
\t.balign\t4
\t.long\t0b - ., 1b - .
\t.section .note.GNU-stack, \"\", @progbits
"
        );
        let opts = Options {
            arch: Some(arch),
            flavor: Some(Flavor::Linux),
            ..Options::default()
        };
        let r = check_text(&text, "both.S", &opts);
        assert!(r.passed() && errors(&r).is_empty(), "{arch}: {r}");
        assert_eq!(r.functions[0].user_accesses, 1, "{arch}: {r}");
        let m = text.replacen(
            "\t.4byte\t9 * 32 + 9",
            "\t.4byte\t(1 << 16) | (7 * 32 + 28)",
            1,
        );
        let r = check_text(&m, "both.S", &opts);
        assert_caught(
            &r,
            "both_from_user",
            "never reached from the entry",
            line_number(&m, copy.lines().next().unwrap()),
        );
    }
}
