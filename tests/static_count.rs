//! `copygen verify --static` leaves nothing out and proves the count: every
//! global function is checked or listed as not checked (one that touches
//! memory through an argument makes the file incomplete, exit 3), and the
//! value a fixup path returns is the number of bytes not stored.

use std::process::Command;

use copygen::checks::static_verify::{check_object, FunctionSpec, Options, Verdict};
use copygen::front::strategy::Flavor;

use crate::common;

use common::static_check::{check_text, static_fixture};

fn copygen(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_renamed_copy_routine_without_entries_makes_the_file_incomplete() {
    let (path, _) = static_fixture("renamed-copy.S");
    let r = check_object(&path, &Options::default()).unwrap();
    assert_eq!(r.verdict(), Verdict::Incomplete, "{r}");
    assert!(!r.passed());
    let names: Vec<(&str, bool)> = r
        .unchecked
        .iter()
        .map(|u| (u.name.as_str(), u.touches_arguments))
        .collect();
    assert_eq!(
        names,
        [("copy_user_generic_bytes", true), ("helper_sum", false)],
        "{r}"
    );
    let (code, out) = copygen(&["verify", "--static", path.to_str().unwrap()]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("copy_user_generic_bytes") && out.contains("NOT CHECKED"),
        "{out}"
    );
    assert!(
        out.contains("--function copy_user_generic_bytes:from_user"),
        "{out}"
    );
    // Checked as asked, it is a copy routine without entries: a failure.
    let (code, out) = copygen(&[
        "verify",
        "--static",
        "--function",
        "copy_user_generic_bytes:from_user",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("without an exception-table entry"), "{out}");
}

#[test]
fn a_function_that_touches_no_argument_memory_is_listed_but_leaves_the_file_ok() {
    let (path, text) = static_fixture("renamed-copy.S");
    // Without the renamed routine: the helper is listed, the file is ok.
    let start = text.find("\t.globl\tcopy_user_generic_bytes").unwrap();
    let end = text.find("\t.globl\thelper_sum").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("helper.S");
    std::fs::write(&p, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let r = check_object(&p, &Options::default()).unwrap();
    assert_eq!(r.verdict(), Verdict::Ok, "{r}");
    assert_eq!(r.unchecked.len(), 1, "{r}");
    assert!(r.to_string().contains("helper_sum"), "{r}");
    let _ = path;
}

/// The static check of x86_64 standalone `preset` with `from` replaced by `to`.
fn emitted_with(preset: &str, from: &str, to: &str) -> copygen::checks::static_verify::Report {
    emitted_with_edits(preset, &[(from, to)])
}

/// The static check of x86_64 standalone `preset` with each edit's `from`
/// replaced by its `to`, in turn.
fn emitted_with_edits(
    preset: &str,
    edits: &[(&str, &str)],
) -> copygen::checks::static_verify::Report {
    let mut text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("emitted/x86_64/standalone/{preset}.S")),
    )
    .unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(format!("{preset}.S"));
    std::fs::write(&p, text).unwrap();
    check_object(&p, &Options::default()).unwrap()
}

/// The emitted unrolled64 with one edit.
fn unrolled64_with(from: &str, to: &str) -> copygen::checks::static_verify::Report {
    emitted_with("unrolled64", from, to)
}

#[test]
fn a_fixup_that_claims_bytes_it_never_stored_fails() {
    // load1 faults before any store of the block; its fixup claims 32.
    let r = unrolled64_with(
        ".long\t.Lfrom_unrolled_loop_load1 - ., .Lfrom_fixup_retry - .",
        ".long\t.Lfrom_unrolled_loop_load1 - ., .Lfrom_fixup_32_then_retry - .",
    );
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    let text = r.to_string();
    assert!(
        text.contains(
            "after a fault here, the fixup path stores 32 bytes past the bytes stored so far"
        ),
        "{text}"
    );
    // The emitted file itself proves every count.
    let r = unrolled64_with("\t.text\n", "\t.text\n\n");
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
}

#[test]
fn swapping_two_to_user_fixups_of_a64_overlap_fails() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("emitted/aarch64/standalone/a64-overlap.S"),
    )
    .unwrap();
    // Swap the targets in the table only.
    let swapped: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with(".long") && l.contains("Lto_fixup_") {
                l.replace("Lto_fixup_2_then_retry", "@")
                    .replace("Lto_fixup_4_then_retry", "Lto_fixup_2_then_retry")
                    .replace('@', "Lto_fixup_4_then_retry")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_ne!(swapped, text);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a64-overlap.S");
    std::fs::write(&p, swapped).unwrap();
    let r = check_object(&p, &Options::default()).unwrap();
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    let bad: Vec<_> = r.functions.iter().filter(|f| !f.passed()).collect();
    assert_eq!(bad.len(), 1, "{r}");
    assert_eq!(bad[0].name, "a64_overlap_to_user");
    assert!(
        r.to_string().contains(
            "`sttrh w4, [x16, #-0x2]`: after a fault here, the fixup path stores 2 bytes past"
        ),
        "{r}"
    );
}

#[test]
fn a_fixup_path_that_returns_a_pointer_fails() {
    let r = unrolled64_with(
        ".Lfrom_fixup_done:\n\tmovq\t%rdx, %rax",
        ".Lfrom_fixup_done:\n\tmovq\t%rsi, %rax",
    );
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    assert!(
        r.to_string()
            .contains("a fault here returns a pointer in rax (at `ret`"),
        "{r}"
    );
}

/// In the C convention a `rep movs` takes a copy of the length (`movq %rdx,
/// %rcx`) and its fixup hands the count back to `rdx` for a byte retry
/// that counts in `rdx`: the ghost follows the convention's length
/// register, not the stale copy. After x86's word step (`by = "word"`: one
/// word stored, then the pointers moved by 1..=8) the prefix is kept as
/// ending at the new destination pointer. A `rep movsq` (`rep movsl`)
/// counts in words, the length cut into `n >> 3` and `n & 7`: both pieces
/// are followed through the fault and the end of the string instruction,
/// and the fixup's `lea (%rax,%rcx,8)` is the length again. A fixed-size
/// entry's ghost is its size, and a `rep stos` (i386
/// `intel-unrolled-zeroing`'s fixup zeroes the rest) moves no source
/// pointer and stores no copied bytes. RISC-V's `mv a0, a2` (`add a0, x0,
/// a2`) returns the length left. So every count of the catalog is proven,
/// on every arch and in both flavours.
#[test]
fn every_count_of_the_catalog_is_proven() {
    let emitted = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("emitted");
    let mut files = 0;
    for arch in std::fs::read_dir(&emitted).unwrap() {
        for flavour in std::fs::read_dir(arch.unwrap().path()).unwrap() {
            for file in std::fs::read_dir(flavour.unwrap().path()).unwrap() {
                let p = file.unwrap().path();
                if p.extension().is_none_or(|e| e != "S") {
                    continue;
                }
                files += 1;
                let r = check_object(&p, &Options::default()).unwrap();
                assert!(r.passed(), "{r}");
                let unproven = r.findings().find(|(_, f)| {
                    f.message
                        .starts_with("the count after a fault is not proven")
                });
                assert!(unproven.is_none(), "{}: {r}", p.display());
            }
        }
    }
    assert!(files >= 40, "{files} emitted files");
}

/// The `rep movsq` fixup's `lea` is the proof: one that adds a word too
/// many is caught, one with the wrong scale or the pieces swapped is no
/// longer proven.
#[test]
fn a_rep_movsq_fixup_that_miscounts_is_caught() {
    let fixup = "leaq\t(%rdx,%rcx,8), %rdx";
    let r = emitted_with("guarded-movsb-612", fixup, &fixup.replace('(', "8("));
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    let text = r.to_string();
    assert!(
        text.contains(
            "`rep movsq (%rsi), (%rdi)`: a fault here returns the wrong count in rax (at `ret`"
        ) && text.contains("it reports 8 bytes fewer copied than were stored"),
        "{text}"
    );
    for wrong in ["leaq\t(%rdx,%rcx,4), %rdx", "leaq\t(%rcx,%rdx,8), %rdx"] {
        let r = emitted_with("guarded-movsb-612", fixup, wrong);
        let text = r.to_string();
        assert!(
            text.contains("`rep movsq (%rsi), (%rdi)`: the count after a fault is not proven"),
            "{wrong}: {text}"
        );
    }
}

/// With the prefix kept through the word step, a fixup of the aligned
/// loop that claims a word it never stored is caught (before, the prefix
/// was lost there and the count only not proven).
#[test]
fn a_fixup_after_the_word_step_that_claims_a_word_fails() {
    let entry = ".long\t.Lnoerms_from_loop_loop_load0 - ., .Lnoerms_from_fixup_retry - .";
    let r = emitted_with("guarded-movsb-612", entry, entry);
    assert!(r.passed(), "{r}");
    let r = emitted_with(
        "guarded-movsb-612",
        entry,
        &entry.replace("fixup_retry", "fixup_8_then_retry"),
    );
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    assert!(
        r.to_string()
            .contains("the fixup path stores 8 bytes past the bytes stored so far"),
        "{r}"
    );
}

/// Whether `verify --static` proves every count of the rep_movs-convention
/// function `name` in the fixture text `text` (after each `from` becomes
/// `to`), in every variant its `.altinstructions` make.
fn proves_counts(file: &str, name: &str, edits: &[(&str, &str)]) -> bool {
    let (_, mut text) = static_fixture(file);
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let opts = Options {
        flavor: Some(Flavor::Linux),
        functions: vec![FunctionSpec::parse(&format!("{name}:both:rep_movs")).unwrap()],
        ..Options::default()
    };
    let r = check_text(&text, file, &opts);
    assert!(r.passed(), "{r}");
    let proven = r.findings().all(|(_, f)| {
        !f.message
            .starts_with("the count after a fault is not proven")
    });
    proven
}

/// 6.12's rep_movs_alternative, in shape: the byte loop steps by `inc` and
/// `dec`, the `rep movsq` path (no ERMS) and the `rep movsb` an ERMS CPU
/// patches in are both proven; below 64 bytes the word loop counts in
/// `%ecx`, which is exact because `cmpq $64, %rcx` bounded the whole
/// register. A compare of `%ecx` alone bounds nothing above 32 bits, and
/// a loop that moves the count by 4 and the pointers by 8 drifts: neither
/// is proven.
#[test]
fn the_shape_of_6_12s_routine_is_proven() {
    assert!(proves_counts("x86-alternative.S", "altcopy", &[]));
    assert!(proves_counts("x86-word-loop.S", "wordcopy", &[]));
    assert!(!proves_counts(
        "x86-word-loop.S",
        "wordcopy",
        &[("cmpq\t$64, %rcx", "cmpl\t$64, %ecx")]
    ));
    assert!(!proves_counts(
        "x86-word-loop.S",
        "wordcopy",
        &[("subl\t$8, %ecx", "subl\t$4, %ecx")]
    ));
}

/// A fixed-size entry has no length argument: the ghost is its constant
/// size, and a constant in the length register (`movl $6, %edx`) or
/// returned is the length less what is copied. A fixup that returns the
/// whole size after the first piece is stored fails; one that returns the
/// rest is right.
#[test]
fn a_fixed_size_fixup_is_held_to_its_constant() {
    let returning = |k: u32| {
        let fixup = ".Lfrom6_fixup_4_then_retry";
        emitted_with_edits(
            "fixed-size",
            &[
                (&format!("{fixup} - ."), ".Lfrom6_constant - ."),
                (
                    &format!("{fixup}:"),
                    &format!(".Lfrom6_constant:\n\tmovl\t${k}, %eax\n\tret\n{fixup}:"),
                ),
            ],
        )
    };
    let r = returning(6);
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    assert!(
        r.to_string()
            .contains("`mov 4(%rsi), %cx`: a fault here returns the wrong count in rax (at `ret`")
            && r.to_string()
                .contains("it reports 4 bytes fewer copied than were stored"),
        "{r}"
    );
    // The right count (its other faults are the progress rule's: a 2-byte
    // access with no byte retry, and the fixup it replaced is dead).
    let r = returning(2);
    let text = r.to_string();
    assert!(
        text.contains("`mov 4(%rsi), %cx`: no byte retry after a fault here")
            && !text.contains("wrong count")
            && !text.contains("the count after a fault is not proven"),
        "{text}"
    );
}

/// `x86-unsigned-length.S` (6.1's `copy_user_enhanced_fast_string` and
/// `copy_user_generic_string` in shape) after each `from` becomes `to`,
/// checked with or without a 32-bit length.
fn unsigned_length_check(
    edits: &[(&str, &str)],
    unsigned_length: bool,
) -> copygen::checks::static_verify::Report {
    let file = "x86-unsigned-length.S";
    let (_, mut text) = static_fixture(file);
    for (from, to) in edits {
        assert!(text.contains(from), "{from}");
        text = text.replacen(from, to, 1);
    }
    let opts = Options {
        unsigned_length,
        ..Options::default()
    };
    check_text(&text, file, &opts)
}

fn not_proven(r: &copygen::checks::static_verify::Report) -> bool {
    r.findings().any(|(_, f)| {
        f.message
            .starts_with("the count after a fault is not proven")
    })
}

/// 6.1's routines count an `unsigned` length in 32-bit registers. Declared
/// so (`--unsigned-length`), the length is below 2^32 and every count is
/// proven: the word loop's count of words and remainder, the `rep movsb`,
/// and the tail's retry, which ends with nothing left; undeclared, the
/// 32-bit copies of a 64-bit length prove nothing. A fixup that rebuilds
/// the length with a word too many fails; with the wrong scale, it is not
/// proven.
#[test]
fn a_32_bit_length_is_proven_when_declared() {
    let r = unsigned_length_check(&[], true);
    assert!(r.passed() && !not_proven(&r), "{r}");
    assert!(
        r.to_string()
            .contains("rdx=n (32 bits, upper half undefined)"),
        "{r}"
    );
    let r = unsigned_length_check(&[], false);
    assert!(r.passed() && not_proven(&r), "{r}");

    let fixup = "leal\t(%rdx,%rcx,8), %edx";
    let r = unsigned_length_check(&[(fixup, &fixup.replace('(', "8("))], true);
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    assert!(
        r.to_string()
            .contains("it reports 8 bytes fewer copied than were stored"),
        "{r}"
    );
    let r = unsigned_length_check(&[(fixup, &fixup.replace(",8)", ",4)"))], true);
    assert!(r.passed() && not_proven(&r), "{r}");
}

/// ALIGN_DESTINATION (6.1's `copy_user_generic_string`): `%edx` is the
/// length less the bytes to the next word, counted in `%ecx` by a byte loop
/// whose fixup adds `%ecx` back; the loop head keeps the relation, and where
/// `%ecx` reaches zero the length is whole again for the `rep movsq`. A
/// fixup that does not add `%ecx` back, or a loop that steps `%ecx` by 2
/// while the pointers step by 1, is not proven.
#[test]
fn the_alignment_loop_of_6_1_is_proven() {
    let r = unsigned_length_check(&[], true);
    let f = r.functions.iter().find(|f| f.name == "ualigned").unwrap();
    assert!(
        f.passed() && (f.user_accesses, f.counts_proven) == (5, 5),
        "{r}"
    );
    for edit in [
        ("103:\taddl\t%ecx, %edx", "103:"),
        (
            "incq\t%rdi\n\tdecl\t%ecx\n\tjnz\t100b",
            "incq\t%rdi\n\tsubl\t$2, %ecx\n\tjnz\t100b",
        ),
    ] {
        let r = unsigned_length_check(&[edit], true);
        assert!(r.passed() && not_proven(&r), "{edit:?}: {r}");
    }
}

/// The upper half of a 32-bit length's register is not the caller's to
/// define: a routine that reads all 64 bits of it before writing it fails,
/// and so does the option on an object of another arch (bad input).
#[test]
fn a_32_bit_length_may_not_be_read_whole() {
    let r = unsigned_length_check(&[("movl\t%edx, %ecx", "movq\t%rdx, %rcx")], true);
    assert_eq!(r.verdict(), Verdict::Fail, "{r}");
    assert!(
        r.to_string().contains(
            "`mov %rdx, %rcx`: reads all of rdx, whose upper half the caller leaves undefined"
        ),
        "{r}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["verify", "--static", "--unsigned-length"])
        .arg("emitted/aarch64/standalone/a64-overlap.S")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--unsigned-length describes x86_64's 32-bit length argument; this object is aarch64"
        ),
        "{err}"
    );
}

/// i386's `__copy_user` counts through its exception handler: the entries
/// of its alignment `rep movsb` and its `rep movsl` are `EX_TYPE_UCOPY_LEN`
/// (type 19: `ecx = imm * ecx + edx`, imm 1 and 4), which puts the bytes
/// left back together before the fixup returns `ecx`. With the kernel's
/// 12-byte entries on `i386-rep-align.S`, every count is proven; the
/// handler's register or type changed, one is not.
#[test]
fn an_exception_handler_that_counts_is_followed() {
    let file = "i386-rep-align.S";
    let (_, text) = static_fixture(file);
    let counts = |types: [&str; 3]| {
        let mut text = text.clone();
        for (label, t) in ["4b", "0b", "1b"].iter().zip(types) {
            let entry = format!(".long\t{label} - ., 2b - .");
            assert!(text.contains(&entry), "{entry}");
            text = text.replacen(&entry, &format!("{entry}, {t}"), 1);
        }
        let opts = Options {
            arch: Some(copygen::front::strategy::Arch::I386),
            ..Options::default()
        };
        let r = check_text(&text, file, &opts);
        assert!(r.passed(), "{r}");
        let f = &r.functions[0];
        (f.user_accesses, f.counts_proven)
    };
    assert_eq!(counts(["0x10213", "0x40213", "3"]), (3, 3));
    assert_eq!(counts(["3", "3", "3"]), (3, 1));
    assert_eq!(counts(["0x10213", "0x40013", "3"]), (3, 2));
    assert_eq!(counts(["0x10013", "0x40213", "3"]), (3, 2));
}
