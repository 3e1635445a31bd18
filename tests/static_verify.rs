//! `copygen verify --static` (static_verify): the catalog passes on x86_64,
//! i386, ARMv6 and AArch64, hand-written fixtures get the verdicts they deserve, and each
//! mutant of emitted text — made by editing the generator's own output so the
//! mutants track it — is caught with a finding naming the instruction and
//! its source line (one table, [`mutants`]).

use std::path::Path;

use copygen::backend;
use copygen::front::catalog::catalog;

use copygen::checks::static_verify::{check_catalog, check_object, Options, Severity};
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::output::render::render;
use proptest::strategy::{Strategy as _, ValueTree};
use proptest::test_runner::TestRunner;

use crate::common;

use common::mutant::{mutant, At, Edit, Mutant};
use common::static_check::{
    assert_caught, check_text, errors, fixture_strategies, line_number, static_fixture, strategy,
    user_sites,
};

#[test]
fn the_catalog_passes_and_counts_the_lowerings_user_accesses() {
    let reports = check_catalog(&Options::default()).unwrap();
    let mut text = String::new();
    for r in &reports {
        text.push_str(&r.to_string());
    }
    assert!(reports.iter().all(|r| r.passed()), "{text}");
    for arch in [Arch::X86_64, Arch::I386, Arch::Armv6, Arch::Aarch64] {
        assert!(
            reports.iter().any(|r| r.arch == arch),
            "no {arch} in the catalog"
        );
    }
    // The analysis finds exactly the accesses the lowering marked as user.
    for s in catalog().unwrap() {
        for flavor in Flavor::ALL {
            let r = reports
                .iter()
                .find(|r| {
                    r.file
                        .ends_with(copygen::output::render::emitted_path(&s, flavor))
                })
                .unwrap();
            for (routine, _) in backend::functions(&s, flavor) {
                let f = r
                    .functions
                    .iter()
                    .find(|f| f.name == routine.symbol)
                    .unwrap();
                assert_eq!(
                    (f.user_accesses, f.entries),
                    (routine.user_sites().len(), routine.user_sites().len()),
                    "{}",
                    f.name
                );
            }
        }
    }
}

#[test]
fn i386_strategies_pass_and_touch_loads_name_their_check() {
    let mut notes = 0;
    for s in fixture_strategies().iter().filter(|s| s.arch == Arch::I386) {
        for flavor in Flavor::ALL {
            let text = render(s, flavor);
            let r = check_text(&text, &format!("{}.S", s.name), &Options::default());
            assert!(r.passed(), "{r}");
            for (routine, _) in backend::functions(s, flavor) {
                let f = r
                    .functions
                    .iter()
                    .find(|f| f.name == routine.symbol)
                    .unwrap();
                assert_eq!(f.user_accesses, routine.user_sites().len(), "{}", f.name);
            }
            for (_, f) in r.findings().filter(|(_, f)| {
                f.severity == Severity::Note && !f.message.starts_with("the count after a fault")
            }) {
                // The note sits on the touch load and names the check's line.
                let lines: Vec<&str> = text.lines().collect();
                let at = |n: u32| lines[n as usize - 1];
                assert_eq!(at(f.line.unwrap()), "\tmovl\t64(%esi), %eax", "{f}");
                let check = f
                    .message
                    .split("(line ")
                    .nth(1)
                    .and_then(|t| t.split(')').next())
                    .unwrap();
                assert_eq!(at(check.parse().unwrap()), "\tcmpl\t$68, %ecx", "{f}");
                assert!(f.message.contains("guarded by `cmp $0x44, %ecx`"), "{f}");
                notes += 1;
            }
        }
    }
    assert_eq!(
        notes, 4,
        "one touch load per routine of i386-touch32, both flavours"
    );
}

#[test]
fn hand_written_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/static");
    let r = check_object(&dir.join("bytecopy.S"), &Options::default()).unwrap();
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
    assert_eq!(r.functions.len(), 2);
    assert!(r
        .functions
        .iter()
        .all(|f| f.user_accesses == 1 && f.entries == 1));

    // ARM, kernel style (conditional return, post-indexed writeback, subs):
    // the architecture comes from `.arm`/`.syntax` in a file with no header.
    let r = check_object(&dir.join("arm-bytecopy.S"), &Options::default()).unwrap();
    assert_eq!(r.arch, Arch::Armv6);
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
    assert_eq!(r.functions.len(), 2);
    assert!(r
        .functions
        .iter()
        .all(|f| f.user_accesses == 1 && f.entries == 1));

    // ARM, linux flavour: the fixup in .text.fixup branches back into .text
    // through a relocation; what it does there is checked.
    let path = dir.join("arm-kstyle-linux.S");
    let r = check_object(&path, &Options::default()).unwrap();
    assert_eq!((r.arch, r.flavor), (Arch::Armv6, Flavor::Linux));
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
    assert_eq!(
        (r.functions[0].user_accesses, r.functions[0].entries),
        (1, 1)
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let m = text.replace(
        "9001:\tmov\tr4, r2\n\tmov\tr2, r4",
        "9001:\tmov\tr5, r2\n\tmov\tr2, r5",
    );
    let r = check_text(&m, "arm-kstyle-linux.S", &Options::default());
    let f = assert_caught(
        &r,
        "kstyle_from_user",
        "r5 is not preserved",
        line_number(&m, "\tpop\t{r4, pc}"),
    );
    assert!(
        f.message.contains(&format!(
            "written by `mov r5, r2` at .text.fixup+0x0 (line {})",
            line_number(&m, "9001:\tmov\tr5, r2")
        )),
        "{f}"
    );

    let opts = Options {
        arch: Some(Arch::I386),
        ..Options::default()
    };
    let path = dir.join("wordloop-noretry.S");
    let r = check_object(&path, &opts).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let f = assert_caught(
        &r,
        "wordloop_from_user",
        "no byte retry",
        line_number(&text, "3:\tmovl\t(%esi), %eax"),
    );
    assert!(
        f.message.contains("not proven aligned to its 4 bytes"),
        "{f}"
    );
    assert_eq!(errors(&r).len(), 1, "{r}");
    // The same loop behind a check that the source is word-aligned cannot
    // straddle a page: it keeps the progress rule without a byte retry.
    let aligned = text.replace(
        "\tshrl\t$2, %ecx\n",
        "\tshrl\t$2, %ecx\n\ttestl\t$3, %esi\n\tjnz\t2f\n",
    );
    assert_ne!(aligned, text);
    let r = check_text(&aligned, "wordloop-aligned.S", &opts);
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
}

// ---------------------------------------------------------------------------
// ARMv6 (A32).

#[test]
fn armv6_sinks_pass_with_the_lowerings_user_accesses_and_guarded_preloads() {
    // The test-only strategies that reach every armv6 backend path: head/tail
    // with end-relative words (`add ip, r1, r2`), ldm/stm at offsets, far
    // touch loads and preloads through ip, constant sizes, zero_tail.
    let sinks: Vec<Strategy> = fixture_strategies()
        .into_iter()
        .filter(|s| s.arch == Arch::Armv6)
        .collect();
    assert_eq!(sinks.len(), 2);
    let mut preloads = 0;
    for s in &sinks {
        for flavor in Flavor::ALL {
            let text = render(s, flavor);
            let r = check_text(&text, &format!("{}.S", s.name), &Options::default());
            assert!(r.passed(), "{r}");
            assert!(
                r.findings().all(|(_, f)| f.severity == Severity::Note),
                "{r}"
            );
            for (symbol, sites) in user_sites(s, flavor) {
                let f = r.functions.iter().find(|f| f.name == symbol).unwrap();
                assert_eq!((f.user_accesses, f.entries), (sites, sites), "{symbol}");
            }
            // Every preload of the source names the length check that keeps
            // it inside, on the source line of a `cmp r2, ...`.
            let lines: Vec<&str> = text.lines().collect();
            for (_, f) in r.findings().filter(|(_, f)| f.insn.starts_with("pld")) {
                assert!(
                    lines[f.line.unwrap() as usize - 1].contains("\tpld\t"),
                    "{f}"
                );
                let check: u32 = f
                    .message
                    .split("(line ")
                    .nth(1)
                    .and_then(|t| t.split(')').next())
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!(lines[check as usize - 1].starts_with("\tcmp\tr2, "), "{f}");
                preloads += 1;
            }
        }
    }
    // pld +32 and +4096 in each `inter` loop: 3 loops x 2 routines x 2 flavours x 2 sinks.
    assert_eq!(preloads, 48);
}

#[test]
fn armv6_ldm_stm_report_names_the_pld_guard() {
    let text = render(&strategy("ldm-stm"), Flavor::Linux);
    let r = check_text(&text, "ldm-stm.S", &Options::default());
    assert!(r.passed(), "{r}");
    let pld = line_number(&text, "\tpld\t[r1, #64]");
    let notes: Vec<_> = r
        .findings()
        .filter(|(n, _)| *n == "ldm_stm_from_user")
        .collect();
    assert_eq!(notes.len(), 1, "{r}");
    let f = notes[0].1;
    assert_eq!(
        (f.severity, f.line, f.insn.as_str()),
        (Severity::Note, Some(pld), "pld [r1, #64]")
    );
    // The guard is `cmp r2, #65; blo` right before the preload.
    assert!(
        f.message.contains(&format!(
            "guarded by `cmp r2, #65` at {:#x} (line {})",
            f.addr - 8,
            line_number(&text, "\tcmp\tr2, #65")
        )) && f.message.contains("needs no exception-table entry"),
        "{f}"
    );
}

/// Random valid aarch64 strategies (every width, pairs, prfm, alignment
/// prologues, guards, tails, constant sizes): each passes, with exactly
/// the lowering's user accesses found and entered.
#[test]
fn random_aarch64_strategies_pass_with_the_lowerings_user_accesses() {
    let mut runner = TestRunner::deterministic();
    for i in 0..24 {
        let spec = common::spec().new_tree(&mut runner).unwrap().current();
        let text = common::toml_of(&spec, Arch::Aarch64)
            .replace("name = \"prop\"", &format!("name = \"rand{i}\""));
        let s = copygen::front::parse::parse(Path::new("random.toml"), &text, None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        for flavor in Flavor::ALL {
            let r = check_text(&render(&s, flavor), "rand.S", &Options::default());
            assert!(r.passed(), "{r}\n{text}");
            for (symbol, sites) in user_sites(&s, flavor) {
                let f = r.functions.iter().find(|f| f.name == symbol).unwrap();
                assert_eq!(
                    (f.user_accesses, f.entries),
                    (sites, sites),
                    "{symbol}\n{text}"
                );
            }
        }
    }
}

/// Shaped like the kernel's ARM copy_template.S: a byte prologue aligns the
/// destination, so the word stores after it need no byte retry. The checker
/// proves it case by case on the destination's alignment; prologues that
/// leave it unaligned are caught at the word store.
#[test]
fn arm_byte_prologue_aligns_the_word_stores() {
    let (path, text) = static_fixture("arm-align-prologue.S");
    let opts = Options::default();
    let r = check_object(&path, &opts).unwrap();
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
    assert_eq!(r.functions[0].user_accesses, 5, "{r}");
    for (what, from, to) in [
        // ip = 3 stores two bytes, not three: to & 3 == 1 ends at 3 mod 4.
        ("one byte short", "\tcmp\tip, #2\n", "\tcmp\tip, #3\n"),
        // The prologue counts the source's misalignment, not the destination's.
        (
            "the wrong pointer",
            "\tands\tip, r0, #3\n",
            "\tands\tip, r1, #3\n",
        ),
    ] {
        let m = text.replacen(from, to, 1);
        assert_ne!(m, text, "{what}");
        let r = check_text(&m, "arm-align-prologue.S", &opts);
        assert_caught(
            &r,
            "armalign_to_user",
            "not proven aligned to its 4 bytes",
            line_number(&m, "13:\tstr\tr3, [r0], #4"),
        );
        assert_eq!(errors(&r).len(), 1, "{what}: {r}");
    }
}

/// i386 C with a frame pointer: the source pointer and the callee-saved
/// registers live in %ebp-relative slots. The checker follows them, so a
/// reload of the wrong slot is caught.
#[test]
fn i386_frame_pointer_slots_are_followed() {
    let (path, text) = static_fixture("i386-frame.S");
    let opts = Options {
        arch: Some(Arch::I386),
        ..Options::default()
    };
    let r = check_object(&path, &opts).unwrap();
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
    assert_eq!(r.functions[0].user_accesses, 1, "{r}");
    // The spilled pointer is `to`, the kernel buffer: the entry is stray.
    let m = text.replacen("\tmovl\t12(%ebp), %eax\n", "\tmovl\t8(%ebp), %eax\n", 1);
    assert_ne!(m, text);
    let r = check_text(&m, "i386-frame.S", &opts);
    assert_caught(
        &r,
        "frame_from_user",
        "stray exception-table entry",
        line_number(&m, "3:\tmovb\t(%esi), %al"),
    );
    // %esi restored from %edi's slot.
    let m = text.replacen("5:\tmovl\t-4(%ebp), %esi", "5:\tmovl\t-8(%ebp), %esi", 1);
    assert_ne!(m, text);
    let r = check_text(&m, "i386-frame.S", &opts);
    assert_caught(
        &r,
        "frame_from_user",
        "esi is not preserved",
        line_number(&m, "\tret"),
    );
}

/// The kernel's i386 __copy_user: `rep movsb` of (-to) & 7 bytes aligns the
/// destination for `rep movsl`, whose fixup has no byte retry. As to_user
/// that is proven; as from_user the source words may straddle a page (a
/// real property, as in usercopy_32.o); without the `neg` the destination
/// is not aligned either.
#[test]
fn i386_rep_movsb_prologue_aligns_rep_movsl() {
    let (path, text) = static_fixture("i386-rep-align.S");
    let opts = Options {
        arch: Some(Arch::I386),
        ..Options::default()
    };
    let r = check_object(&path, &opts).unwrap();
    assert!(r.passed() && no_findings_but_notes(&r), "{r}");
    let movsl = line_number(&text, "0:\trep movsl");
    let from = text.replace("repalign_to_user", "repalign_from_user");
    let r = check_text(&from, "i386-rep-align.S", &opts);
    assert_caught(&r, "repalign_from_user", "not proven aligned", movsl);
    assert_eq!(errors(&r).len(), 1, "{r}");
    let m = text.replacen("\tnegl\t%ecx\n", "", 1);
    assert_ne!(m, text);
    let r = check_text(&m, "i386-rep-align.S", &opts);
    assert_caught(
        &r,
        "repalign_to_user",
        "not proven aligned",
        line_number(&m, "0:\trep movsl"),
    );
    assert_eq!(errors(&r).len(), 1, "{r}");
}

// ---------------------------------------------------------------------------
// Mutants: one table for x86, ARMv6 and AArch64. Each row edits the text
// the generator emits for a preset (so the mutants track it) and lists
// what the verifier must report on the result (`common/mutant.rs`).

fn arm_entry(insn: &str, fixup: &str) -> String {
    format!(
        "\t.pushsection __ex_table, \"a\"\n\t.align\t3\n\t.long\t{insn}, {fixup}\n\t.popsection\n"
    )
}

fn a64_entry(insn: &str) -> String {
    format!("\t_asm_extable_uaccess\t{insn}, .Lto_fixup_retry\n")
}

/// A vector instruction at the top of `function`.
fn vector(arch: Arch, preset: &'static str, start: &'static str, insn: &'static str) -> Mutant {
    mutant(
        arch,
        preset,
        Flavor::Linux,
        "vector state in the linux flavour",
    )
    .after(start, &format!("{insn}\n"))
}

fn mutants() -> Vec<Mutant> {
    use Arch::*;
    use Flavor::*;
    let lin = "\tmovz\tx0, #0\n\tret\n";
    let arm_ret = "\tmov\tr0, #0\n\tpop\t{r4-r10, pc}\n";
    vec![
        // x86_64 and i386.
        mutant(X86_64, "unrolled64", Linux, "missing entry")
            .first("\tCOPYGEN_EXTABLE(.Lfrom_unrolled_loop_load3, .Lfrom_fixup_retry)\n", "")
            .error("unrolled64_from_user", "without an exception-table entry")
            .at(At::Label(".Lfrom_unrolled_loop_load3"))
            .insn("mov 0x18(%rsi), %r9")
            .only(),
        mutant(X86_64, "unrolled64", Linux, "stray entry on a compare")
            .edit(Edit::First(
                "SYM_FUNC_END(unrolled64_from_user)\n",
                "\tCOPYGEN_EXTABLE(.Lfrom_unrolled_aligned, .Lfrom_fixup_retry)\nSYM_FUNC_END(unrolled64_from_user)\n".into(),
            ))
            .error("unrolled64_from_user", "stray exception-table entry")
            .at(At::Label(".Lfrom_unrolled_aligned"))
            .insn("cmp $0x40, %rdx")
            .only(),
        mutant(X86_64, "unrolled64", Standalone, "fixup in the other function")
            .first(
                "\t.long\t.Lfrom_unrolled_byte_load - ., .Lfrom_fixup_retry - .\n",
                "\t.long\t.Lfrom_unrolled_byte_load - ., .Lto_fixup_retry - .\n",
            )
            .error("unrolled64_from_user", "lies outside the function (in unrolled64_to_user)")
            .at(At::Label(".Lfrom_unrolled_byte_load"))
            .insn("mov (%rsi), %al"),
        mutant(I386, "i386-headtail", Standalone, "ebx written, not saved")
            .after("i386_headtail_from_user_1:\n", "\tmovl\t$1, %ebx\n")
            .error("i386_headtail_from_user_1", "ebx is not preserved")
            .msg("written by `mov $1, %ebx` at")
            .msg_line("", At::Line("\tmovl\t$1, %ebx"))
            .insn("ret")
            .only_failing(),
        mutant(X86_64, "unrolled64", Standalone, "rbx written, not saved")
            .after(".Lfrom_unrolled_aligned:\n", "\tmovq\t%rax, %rbx\n")
            .error("unrolled64_from_user", "rbx is not preserved")
            .msg("written by `mov %rax, %rbx` at")
            .msg_line("", At::Line("\tmovq\t%rax, %rbx")),
        vector(X86_64, "unrolled64", "SYM_FUNC_START(unrolled64_to_user)\n", "\tpxor\t%xmm0, %xmm0")
            .error("unrolled64_to_user", "MMX/SSE/AVX")
            .at(At::Line("\tpxor\t%xmm0, %xmm0"))
            .insn("pxor %xmm0, %xmm0")
            .only()
            .vector_allowed_passes(),
        mutant(X86_64, "unrolled64", Standalone, "touch load past the checked length")
            .after(".Lto_unrolled_loop:\n", "\tmovq\t64(%rsi), %rax\n")
            .error("unrolled64_to_user", "touch load past the checked length")
            .at(At::Line("\tmovq\t64(%rsi), %rax"))
            .msg("needs 72 bytes left, only 64 proven by `cmp $0x40, %rdx`"),
        mutant(I386, "i386-touch32", Linux, "touch load's length check removed")
            .first("\tcmpl\t$68, %ecx\n\tjb\t.Lfrom_unrolled_prefetched\n", "")
            .error("i386_touch32_from_user", "touch load past the checked length")
            .at(At::Label(".Lfrom_unrolled_touch64"))
            .insn("mov 0x40(%esi), %eax"),
        // ARMv6.
        mutant(Armv6, "ldm-stm", Linux, "missing entry")
            .edit(Edit::First(
                "\t.pushsection __ex_table, \"a\"\n\t.align\t3\n\t.long\t.Lfrom_ldm_ldm0, .Lfrom_fixup_retry\n\t.popsection\n",
                String::new(),
            ))
            .error("ldm_stm_from_user", "without an exception-table entry")
            .at(At::Label(".Lfrom_ldm_ldm0"))
            .insn("ldm r1, {r3-r10}")
            .only(),
        mutant(Armv6, "ldm-stm", Linux, "stray entry on a compare")
            .after("ENDPROC(ldm_stm_to_user)\n", &arm_entry(".Lto_ldm_aligned", ".Lto_fixup_retry"))
            .error("ldm_stm_to_user", "stray exception-table entry: this instruction does not access user memory")
            .at(At::Label(".Lto_ldm_aligned"))
            .insn("cmp r2, #32")
            .only(),
        mutant(Armv6, "ldm-stm", Linux, "stray entry on a kernel-side store")
            .after("\tstrb\tr3, [r0]\n", ".Lfrom_kernel_store:\n")
            .after(
                "ENDPROC(ldm_stm_from_user)\n",
                &arm_entry(".Lfrom_kernel_store - 4", ".Lfrom_fixup_retry"),
            )
            .error("ldm_stm_from_user", "stray exception-table entry")
            .at(At::Before(".Lfrom_kernel_store:"))
            .insn("strb r3, [r0]"),
        mutant(Armv6, "ldm-stm", Linux, "stray entry on a pld")
            .edit(Edit::LabelBefore("\tpld\t[r1, #64]\n", ".Lto_pld", true))
            .after("ENDPROC(ldm_stm_to_user)\n", &arm_entry(".Lto_pld", ".Lto_fixup_retry"))
            .error("ldm_stm_to_user", "a preload cannot fault, so it needs none")
            .at(At::Label(".Lto_pld"))
            .insn("pld [r1, #64]"),
        mutant(Armv6, "ldm-stm", Linux, "fixup in the other function's .text.fixup")
            .first(
                "\t.long\t.Lfrom_ldm_byte_load, .Lfrom_fixup_retry\n",
                "\t.long\t.Lfrom_ldm_byte_load, .Lto_fixup_retry\n",
            )
            .error(
                "ldm_stm_from_user",
                "lies outside the function (in the .text.fixup piece of ldm_stm_to_user)",
            )
            .at(At::Label(".Lfrom_ldm_byte_load"))
            .insn("ldrb r3, [r1]")
            .only(),
        mutant(Armv6, "ldm-stm", Standalone, "fixup in the other function")
            .first(
                "\t.long\t.Lfrom_ldm_byte_load - ., .Lfrom_fixup_retry - .\n",
                "\t.long\t.Lfrom_ldm_byte_load - ., .Lto_fixup_retry - .\n",
            )
            .error("ldm_stm_from_user", "lies outside the function (in ldm_stm_to_user)")
            .at(At::Label(".Lfrom_ldm_byte_load")),
        // r4 no longer saved by from_user: one error per return, the
        // fixup's return in .text.fixup included.
        mutant(Armv6, "ldm-stm", Linux, "r4 written, not saved")
            .edit(Edit::AllBefore("ENTRY(ldm_stm_to_user)", "push\t{r4-r10, lr}", "push\t{r5-r10, lr}"))
            .edit(Edit::AllBefore("ENTRY(ldm_stm_to_user)", "pop\t{r4-r10, pc}", "pop\t{r5-r10, pc}"))
            .error("ldm_stm_from_user", "r4 is not preserved")
            .msg_line("written by `ldr r4, [r1, #4]` at 0x6c ", At::Line("\tldr\tr4, [r1, #4]"))
            .insn("pop {r5-r10, pc}")
            .line_text("\tpop\t{r5-r10, pc}")
            .all(Some(3))
            .error("ldm_stm_from_user", "r4 is not preserved")
            .section(".text.fixup")
            .at(At::PastLabel(".Lfrom_fixup_done")),
        mutant(Armv6, "ldm-stm", Linux, "return skips the pop")
            .first(arm_ret, "\tmov\tr0, #0\n\tbx\tlr\n")
            .error("ldm_stm_from_user", "stack not balanced at return (sp = entry -32)")
            .at(At::Line("\tbx\tlr"))
            .insn("bx lr"),
        mutant(Armv6, "ldm-stm", Linux, "lr clobbered and returned through")
            .first(arm_ret, "\tmov\tr0, #0\n\tpop\t{r4-r10, lr}\n\tmov\tlr, r0\n\tbx\tlr\n")
            .error("ldm_stm_from_user", "returns to an address other than the entry lr")
            .at(At::Line("\tbx\tlr")),
        vector(Armv6, "ldm-stm", "ENTRY(ldm_stm_to_user)\n", "\tvmov\ts0, r0")
            .error("ldm_stm_to_user", "uses VFP/NEON state")
            .at(At::Line("\tvmov\ts0, r0"))
            .insn("vmov s0, r0")
            .only()
            .vector_allowed_passes(),
        mutant(Armv6, "ldm-stm", Linux, "touch load past the checked length")
            .after(".Lto_ldm_loop:\n", "\tldr\tr3, [r1, #64]\n")
            .error("ldm_stm_to_user", "touch load past the checked length")
            .at(At::Line("\tldr\tr3, [r1, #64]"))
            .insn("ldr r3, [r1, #64]")
            .msg("needs 68 bytes left, only 32 proven by `cmp r2, #32`")
            .only(),
        // A preload cannot fault: a warning, the verdict stays ok.
        mutant(Armv6, "ldm-stm", Linux, "pld's guard removed")
            .first("\tcmp\tr2, #65\n\tblo\t.Lfrom_ldm_prefetched\n", "")
            .warning("ldm_stm_from_user", "preload past the checked length")
            .msg("needs 65 bytes left, only 32 proven by `cmp r2, #32`")
            .msg("contract forbids touching memory outside the source")
            .insn("pld [r1, #64]")
            .at(At::Label(".Lfrom_ldm_loop"))
            .only(),
        // AArch64.
        mutant(Aarch64, "arm64-template", Linux, "missing entry")
            .first("\t_asm_extable_uaccess\t.Lfrom_template_loop_load0_hi, .Lfrom_fixup_step\n", "")
            .error("arm64_template_from_user", "without an exception-table entry")
            .at(At::Label(".Lfrom_template_loop_load0_hi"))
            .insn("ldtr x4, [x1, #0x8]")
            .only(),
        mutant(Aarch64, "a64-overlap", Linux, "stray entry on a compare")
            .after("SYM_FUNC_END(a64_overlap_to_user)\n", &a64_entry(".Lto_loop_aligned"))
            .error("a64_overlap_to_user", "stray exception-table entry: this instruction does not access user memory")
            .at(At::Label(".Lto_loop_aligned"))
            .insn_prefix("cmp x2")
            .only(),
        mutant(Aarch64, "a64-overlap", Linux, "stray entry on a kernel-side ldp")
            .edit(Edit::LabelBefore("\tldp\tx3, x4, [x1]\n", ".Lto_kernel_load", false))
            .after("SYM_FUNC_END(a64_overlap_to_user)\n", &a64_entry(".Lto_kernel_load"))
            .error("a64_overlap_to_user", "stray exception-table entry")
            .at(At::Label(".Lto_kernel_load"))
            .insn("ldp x3, x4, [x1]"),
        mutant(Aarch64, "a64-overlap", Linux, "stray entry on a prfm")
            .edit(Edit::LabelBefore("\tprfm\tpldl1strm, [x1, #256]\n", ".Lto_prfm", true))
            .after("SYM_FUNC_END(a64_overlap_to_user)\n", &a64_entry(".Lto_prfm"))
            .error("a64_overlap_to_user", "a preload cannot fault, so it needs none")
            .at(At::Label(".Lto_prfm"))
            .insn("prfm pldl1strm, [x1, #0x100]"),
        mutant(Aarch64, "arm64-template", Standalone, "fixup in the other function")
            .first(
                "\t.long\t.Lfrom_template_byte_load - ., .Lfrom_fixup_step - .\n",
                "\t.long\t.Lfrom_template_byte_load - ., .Lto_fixup_step - .\n",
            )
            .error("arm64_template_from_user", "lies outside the function (in arm64_template_to_user)")
            .at(At::Label(".Lfrom_template_byte_load"))
            .insn("ldtrb w3, [x1]")
            .only(),
        // x19 (callee-saved) as the byte loop's register.
        mutant(Aarch64, "arm64-template", Linux, "x19 written, not saved")
            .edit(Edit::AllBefore(
                "SYM_FUNC_START(arm64_template_to_user)",
                "\tldtrb\tw3, [x1]\n\tstrb\tw3, [x0]\n\tadd\tx1, x1, #1\n",
                "\tldtrb\tw19, [x1]\n\tstrb\tw19, [x0]\n\tadd\tx1, x1, #1\n",
            ))
            .error("arm64_template_from_user", "x18-x29 is not preserved")
            .msg_line("", At::Line("\tldtrb\tw19, [x1]"))
            .insn("ret")
            .all(None),
        mutant(Aarch64, "arm64-template", Linux, "lr overwritten before a return")
            .first(lin, "\tmovz\tx0, #0\n\tmov\tx30, x1\n\tret\n")
            .error("arm64_template_from_user", "x30 (lr) is not preserved")
            .at(At::After("\tmov\tx30, x1")),
        mutant(Aarch64, "arm64-template", Linux, "sp moved, not restored")
            .first(lin, "\tmovz\tx0, #0\n\tsub\tsp, sp, #16\n\tret\n")
            .error("arm64_template_from_user", "stack not balanced at return (sp = entry -16)")
            .at(At::After("\tsub\tsp, sp, #16")),
        vector(Aarch64, "arm64-template", "SYM_FUNC_START(arm64_template_to_user)\n", "\tfmov\ts0, w0")
            .error("arm64_template_to_user", "uses FP/SIMD state")
            .at(At::Line("\tfmov\ts0, w0"))
            .insn("fmov s0, w0")
            .only()
            .vector_allowed_passes(),
        mutant(Aarch64, "arm64-template", Linux, "touch load past the checked length")
            .after(".Lto_template_loop:\n", "\tldr\tx3, [x1, #128]\n")
            .error("arm64_template_to_user", "touch load past the checked length")
            .at(At::Line("\tldr\tx3, [x1, #128]"))
            .insn("ldr x3, [x1, #0x80]")
            .msg("needs 136 bytes left, only 64 proven")
            .only(),
        mutant(Aarch64, "a64-overlap", Linux, "prfm's guard removed")
            .first("\tcmp\tx2, #257\n\tb.lo\t.Lfrom_loop_prefetched\n", "")
            .warning("a64_overlap_from_user", "preload past the checked length")
            .msg("needs 257 bytes left, only 64 proven")
            .insn("prfm pldl1strm, [x1, #0x100]")
            .only(),
    ]
}

/// Every mutant of the table is caught as its row says.
#[test]
fn mutants_are_caught() {
    let rows = mutants();
    assert_eq!(rows.len(), 31);
    let bad: Vec<String> = rows.iter().flat_map(Mutant::check).collect();
    assert!(bad.is_empty(), "{}", bad.join("\n\n"));
}

/// The table can fail: a row that expects the wrong line, instruction or
/// count of findings is reported.
#[test]
fn a_wrong_mutant_row_fails() {
    let wrong = [
        mutant(Arch::X86_64, "unrolled64", Flavor::Linux, "missing entry")
            .first(
                "\tCOPYGEN_EXTABLE(.Lfrom_unrolled_loop_load3, .Lfrom_fixup_retry)\n",
                "",
            )
            .error("unrolled64_from_user", "without an exception-table entry")
            .insn("mov 0x18(%rsi), %r8"),
        mutant(
            Arch::Aarch64,
            "arm64-template",
            Flavor::Linux,
            "x19 written, not saved",
        )
        .edit(Edit::AllBefore(
            "SYM_FUNC_START(arm64_template_to_user)",
            "\tldtrb\tw3, [x1]\n",
            "\tldtrb\tw19, [x1]\n",
        ))
        .error("arm64_template_from_user", "x18-x29 is not preserved")
        .all(Some(99)),
        mutant(Arch::Armv6, "ldm-stm", Flavor::Linux, "pld's guard removed")
            .first("\tcmp\tr2, #65\n\tblo\t.Lfrom_ldm_prefetched\n", "")
            .error("ldm_stm_from_user", "preload past the checked length"),
    ];
    for row in &wrong {
        assert_eq!(row.check().len(), 1, "{}", row.what);
    }
}

/// Nothing but notes (what the analysis could not decide, such as a count
/// it cannot tie to the length).
fn no_findings_but_notes(r: &copygen::checks::static_verify::Report) -> bool {
    r.findings().all(|(_, f)| f.severity == Severity::Note)
}
