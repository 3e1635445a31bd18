//! `copygen verify --static` (static_verify): the catalog passes on x86_64,
//! i386, ARMv6 and AArch64, hand-written fixtures get the verdicts they deserve, and each
//! mutant of emitted text — made by editing the generator's own output so the
//! mutants track it — is caught with a finding naming the instruction and
//! its source line.

use std::path::{Path, PathBuf};

use copygen::backend;
use copygen::checks::static_verify::{
    check_catalog, check_object, Finding, FunctionSpec, Options, Report, Severity,
};
use copygen::front::catalog::catalog;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::output::render::render;
use proptest::strategy::{Strategy as _, ValueTree};
use proptest::test_runner::TestRunner;

mod common;

fn fixture_strategies() -> Vec<Strategy> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/strategies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| copygen::front::parse::load(f, None).unwrap())
        .collect()
}

fn strategy(name: &str) -> Strategy {
    catalog()
        .unwrap()
        .into_iter()
        .chain(fixture_strategies())
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no strategy {name}"))
}

/// Check `text` as a `.S` file named like the emitted one.
fn check_text(text: &str, file: &str, options: &Options) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::write(&path, text).unwrap();
    check_object(&path, options).unwrap_or_else(|e| panic!("{file}: {e:#}"))
}

fn errors(r: &Report) -> Vec<(String, Finding)> {
    r.findings()
        .filter(|(_, f)| f.severity == Severity::Error)
        .map(|(n, f)| (n.to_string(), f.clone()))
        .collect()
}

/// 1-based line of the first instruction at or after `label:` in `text`.
fn line_of_label(text: &str, label: &str) -> u32 {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == format!("{label}:"))
        .unwrap_or_else(|| panic!("no {label}"));
    let k = (start + 1..lines.len())
        .find(|&k| {
            let t = lines[k].trim();
            !(t.is_empty() || t.starts_with("/*") || t.ends_with(':'))
        })
        .unwrap();
    k as u32 + 1
}

/// 1-based line whose text is exactly `line` (first match).
fn line_number(text: &str, line: &str) -> u32 {
    text.lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no line {line:?}")) as u32
        + 1
}

/// The single error of `r`, which must be in `function`, say `what`, and
/// sit at source line `line`.
fn assert_caught(r: &Report, function: &str, what: &str, line: u32) -> Finding {
    let errs = errors(r);
    let hit = errs
        .iter()
        .find(|(n, f)| n == function && f.message.contains(what) && f.line == Some(line));
    match hit {
        Some((_, f)) => {
            assert!(!f.insn.is_empty());
            assert!(!r.passed());
            f.clone()
        }
        None => panic!("expected `{what}` in {function} at line {line}; report:\n{r}"),
    }
}

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
            for (_, f) in r.findings().filter(|(_, f)| f.severity == Severity::Note) {
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
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
    assert_eq!(r.functions.len(), 2);
    assert!(r
        .functions
        .iter()
        .all(|f| f.user_accesses == 1 && f.entries == 1));

    // ARM, kernel style (conditional return, post-indexed writeback, subs):
    // the architecture comes from `.arm`/`.syntax` in a file with no header.
    let r = check_object(&dir.join("arm-bytecopy.S"), &Options::default()).unwrap();
    assert_eq!(r.arch, Arch::Armv6);
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
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
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
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
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
}

#[test]
fn mutant_missing_entry() {
    let text = render(&strategy("unrolled64"), Flavor::Linux);
    let entry = "\tCOPYGEN_EXTABLE(.Lfrom_unrolled_loop_load3, .Lfrom_fixup_retry)\n";
    assert!(text.contains(entry));
    let m = text.replacen(entry, "", 1);
    let r = check_text(&m, "unrolled64.S", &Options::default());
    let f = assert_caught(
        &r,
        "unrolled64_from_user",
        "without an exception-table entry",
        line_of_label(&m, ".Lfrom_unrolled_loop_load3"),
    );
    assert_eq!(f.insn, "mov 0x18(%rsi), %r9");
    assert_eq!(errors(&r).len(), 1, "{r}");
}

#[test]
fn mutant_stray_entry() {
    let text = render(&strategy("unrolled64"), Flavor::Linux);
    let anchor = "SYM_FUNC_END(unrolled64_from_user)\n";
    let m = text.replacen(
        anchor,
        &format!("\tCOPYGEN_EXTABLE(.Lfrom_unrolled_aligned, .Lfrom_fixup_retry)\n{anchor}"),
        1,
    );
    let r = check_text(&m, "unrolled64.S", &Options::default());
    let f = assert_caught(
        &r,
        "unrolled64_from_user",
        "stray exception-table entry",
        line_of_label(&m, ".Lfrom_unrolled_aligned"),
    );
    assert_eq!(f.insn, "cmp $0x40, %rdx");
    assert_eq!(errors(&r).len(), 1, "{r}");
}

#[test]
fn mutant_fixup_outside_the_function() {
    let text = render(&strategy("unrolled64"), Flavor::Standalone);
    let entry = "\t.long\t.Lfrom_unrolled_byte_load - ., .Lfrom_fixup_retry - .\n";
    assert!(text.contains(entry));
    let m = text.replacen(
        entry,
        "\t.long\t.Lfrom_unrolled_byte_load - ., .Lto_fixup_retry - .\n",
        1,
    );
    let r = check_text(&m, "unrolled64.S", &Options::default());
    let f = assert_caught(
        &r,
        "unrolled64_from_user",
        "lies outside the function (in unrolled64_to_user)",
        line_of_label(&m, ".Lfrom_unrolled_byte_load"),
    );
    assert_eq!(f.insn, "mov (%rsi), %al");
}

#[test]
fn mutant_callee_saved_register_clobbered() {
    // i386: ebx written in a routine that does not save it.
    let text = render(&strategy("i386-headtail"), Flavor::Standalone);
    let head = "i386_headtail_from_user_1:\n";
    assert!(text.contains(head));
    let m = text.replacen(head, &format!("{head}\tmovl\t$1, %ebx\n"), 1);
    let r = check_text(&m, "i386-headtail.S", &Options::default());
    let line = line_number(&m, "\tmovl\t$1, %ebx");
    let f = errors(&r)
        .into_iter()
        .find(|(n, f)| {
            n == "i386_headtail_from_user_1" && f.message.contains("ebx is not preserved")
        })
        .unwrap_or_else(|| panic!("{r}"))
        .1;
    assert!(
        f.message.contains("written by `mov $1, %ebx` at")
            && f.message.contains(&format!("(line {line})")),
        "{f}"
    );
    assert_eq!(f.insn, "ret");
    assert!(
        r.functions
            .iter()
            .filter(|f| !f.passed())
            .all(|f| f.name == "i386_headtail_from_user_1"),
        "{r}"
    );

    // x86_64: rbx.
    let text = render(&strategy("unrolled64"), Flavor::Standalone);
    let anchor = ".Lfrom_unrolled_aligned:\n";
    let m = text.replacen(anchor, &format!("{anchor}\tmovq\t%rax, %rbx\n"), 1);
    let r = check_text(&m, "unrolled64.S", &Options::default());
    let line = line_number(&m, "\tmovq\t%rax, %rbx");
    assert!(
        errors(&r).iter().any(|(n, f)| n == "unrolled64_from_user"
            && f.message.contains("rbx is not preserved")
            && f.message.contains("written by `mov %rax, %rbx` at")
            && f.message.contains(&format!("(line {line})"))),
        "{r}"
    );
}

#[test]
fn mutant_sse_in_the_linux_flavour() {
    let r = assert_vector_mutant(
        "unrolled64",
        "unrolled64_to_user",
        "\tpxor\t%xmm0, %xmm0",
        "MMX/SSE/AVX",
    );
    assert_eq!(r, "pxor %xmm0, %xmm0");
}

/// A vector instruction inserted at the top of `function` in `preset`'s
/// linux flavour is caught (the one error of the file, naming `message`),
/// and passes when the routine owns the vector state. Returns the
/// instruction as the report prints it.
fn assert_vector_mutant(preset: &str, function: &str, insn: &str, message: &str) -> String {
    let text = render(&strategy(preset), Flavor::Linux);
    let anchor = format!("SYM_FUNC_START({function})\n");
    let anchor = if text.contains(&anchor) {
        anchor
    } else {
        format!("ENTRY({function})\n")
    };
    let m = text.replacen(&anchor, &format!("{anchor}{insn}\n"), 1);
    let file = format!("{preset}.S");
    let r = check_text(&m, &file, &Options::default());
    let f = assert_caught(&r, function, message, line_number(&m, insn));
    assert_eq!(errors(&r).len(), 1, "{r}");
    let printed = f.insn.clone();
    // A strategy that owns the vector state may.
    let r = check_text(
        &m,
        &file,
        &Options {
            allow_vector: true,
            ..Options::default()
        },
    );
    assert!(r.passed(), "{r}");
    printed
}

#[test]
fn mutant_unguarded_touch_load() {
    // x86_64 to_user: a dead load 64 bytes ahead at the top of the 64-byte
    // loop, where only len >= 64 is known.
    let text = render(&strategy("unrolled64"), Flavor::Standalone);
    let anchor = ".Lto_unrolled_loop:\n";
    let m = text.replacen(anchor, &format!("{anchor}\tmovq\t64(%rsi), %rax\n"), 1);
    let r = check_text(&m, "unrolled64.S", &Options::default());
    let f = assert_caught(
        &r,
        "unrolled64_to_user",
        "touch load past the checked length",
        line_number(&m, "\tmovq\t64(%rsi), %rax"),
    );
    assert!(
        f.message
            .contains("needs 72 bytes left, only 64 proven by `cmp $0x40, %rdx`"),
        "{f}"
    );

    // i386: the 2002 touch load with its length check taken out.
    let text = render(&strategy("i386-touch32"), Flavor::Linux);
    let guard = "\tcmpl\t$68, %ecx\n\tjb\t.Lfrom_unrolled_prefetched\n";
    assert!(text.contains(guard));
    let m = text.replacen(guard, "", 1);
    let r = check_text(&m, "i386-touch32.S", &Options::default());
    let f = assert_caught(
        &r,
        "i386_touch32_from_user",
        "touch load past the checked length",
        line_of_label(&m, ".Lfrom_unrolled_touch64"),
    );
    assert_eq!(f.insn, "mov 0x40(%esi), %eax");
}

// ---------------------------------------------------------------------------
// ARMv6 (A32).

/// The lowering's user sites per entry point of `s` in `flavor`.
fn user_sites(s: &Strategy, flavor: Flavor) -> Vec<(String, usize)> {
    backend::functions(s, flavor)
        .into_iter()
        .map(|(r, _)| (r.symbol.clone(), r.user_sites().len()))
        .collect()
}

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
    assert!(
        f.message.contains(&format!(
            "guarded by `cmp r2, #65` at 0x12c (line {})",
            line_number(&text, "\tcmp\tr2, #65")
        )) && f.message.contains("needs no exception-table entry"),
        "{f}"
    );
}

#[test]
fn arm_mutant_missing_entry() {
    let text = render(&strategy("ldm-stm"), Flavor::Linux);
    let entry = "\t.pushsection __ex_table, \"a\"\n\t.align\t3\n\t.long\t.Lfrom_ldm_ldm0, .Lfrom_fixup_retry\n\t.popsection\n";
    assert!(text.contains(entry));
    let m = text.replacen(entry, "", 1);
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let f = assert_caught(
        &r,
        "ldm_stm_from_user",
        "without an exception-table entry",
        line_of_label(&m, ".Lfrom_ldm_ldm0"),
    );
    assert_eq!(f.insn, "ldm r1, {r3-r10}");
    assert_eq!(errors(&r).len(), 1, "{r}");
}

#[test]
fn arm_mutant_stray_entries() {
    let text = render(&strategy("ldm-stm"), Flavor::Linux);
    let anchor = "ENDPROC(ldm_stm_to_user)\n";
    let entry = |insn: &str| {
        format!("\t.pushsection __ex_table, \"a\"\n\t.align\t3\n\t.long\t{insn}, .Lto_fixup_retry\n\t.popsection\n")
    };
    // On a compare.
    let m = text.replacen(anchor, &format!("{anchor}{}", entry(".Lto_ldm_aligned")), 1);
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let f = assert_caught(
        &r,
        "ldm_stm_to_user",
        "stray exception-table entry: this instruction does not access user memory",
        line_of_label(&m, ".Lto_ldm_aligned"),
    );
    assert_eq!(f.insn, "cmp r2, #32");
    assert_eq!(errors(&r).len(), 1, "{r}");
    // On a kernel-side store of from_user (the buffer, not the user).
    let m = text.replacen(
        "\tstrb\tr3, [r0]\n",
        "\tstrb\tr3, [r0]\n.Lfrom_kernel_store:\n",
        1,
    );
    let m = m.replacen(
        "ENDPROC(ldm_stm_from_user)\n",
        "ENDPROC(ldm_stm_from_user)\n\t.pushsection __ex_table, \"a\"\n\t.align\t3\n\t.long\t.Lfrom_kernel_store - 4, .Lfrom_fixup_retry\n\t.popsection\n",
        1,
    );
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let line = line_number(&m, ".Lfrom_kernel_store:") - 1;
    let f = assert_caught(&r, "ldm_stm_from_user", "stray exception-table entry", line);
    assert_eq!(f.insn, "strb r3, [r0]");
    // On a pld: a preload cannot fault.
    let at = text.rfind("\tpld\t[r1, #64]\n").unwrap();
    let m = format!("{}.Lto_pld:\n{}", &text[..at], &text[at..]);
    let m = m.replacen(anchor, &format!("{anchor}{}", entry(".Lto_pld")), 1);
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let f = assert_caught(
        &r,
        "ldm_stm_to_user",
        "a preload cannot fault, so it needs none",
        line_of_label(&m, ".Lto_pld"),
    );
    assert_eq!(f.insn, "pld [r1, #64]");
}

#[test]
fn arm_mutant_fixup_outside_the_function() {
    // Linux: into the other function's piece of .text.fixup.
    let text = render(&strategy("ldm-stm"), Flavor::Linux);
    let entry = "\t.long\t.Lfrom_ldm_byte_load, .Lfrom_fixup_retry\n";
    assert!(text.contains(entry));
    let m = text.replacen(
        entry,
        "\t.long\t.Lfrom_ldm_byte_load, .Lto_fixup_retry\n",
        1,
    );
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let f = assert_caught(
        &r,
        "ldm_stm_from_user",
        "lies outside the function (in the .text.fixup piece of ldm_stm_to_user)",
        line_of_label(&m, ".Lfrom_ldm_byte_load"),
    );
    assert_eq!(f.insn, "ldrb r3, [r1]");
    assert_eq!(errors(&r).len(), 1, "{r}");

    // Standalone: into the other function.
    let text = render(&strategy("ldm-stm"), Flavor::Standalone);
    let entry = "\t.long\t.Lfrom_ldm_byte_load - ., .Lfrom_fixup_retry - .\n";
    assert!(text.contains(entry));
    let m = text.replacen(
        entry,
        "\t.long\t.Lfrom_ldm_byte_load - ., .Lto_fixup_retry - .\n",
        1,
    );
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    assert_caught(
        &r,
        "ldm_stm_from_user",
        "lies outside the function (in ldm_stm_to_user)",
        line_of_label(&m, ".Lfrom_ldm_byte_load"),
    );
}

#[test]
fn arm_mutant_callee_saved_register_clobbered() {
    // r4 no longer saved by from_user (its push and pops drop it).
    let text = render(&strategy("ldm-stm"), Flavor::Linux);
    let (from, to) = text.split_at(text.find("ENTRY(ldm_stm_to_user)").unwrap());
    let m = from
        .replace("push\t{r4-r10, lr}", "push\t{r5-r10, lr}")
        .replace("pop\t{r4-r10, pc}", "pop\t{r5-r10, pc}")
        + to;
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let written = line_number(&m, "\tldr\tr4, [r1, #4]");
    let errs = errors(&r);
    // One error per return, the fixup's return in .text.fixup included.
    assert_eq!(errs.len(), 3, "{r}");
    for (n, f) in &errs {
        assert_eq!(n, "ldm_stm_from_user");
        assert_eq!(f.insn, "pop {r5-r10, pc}");
        assert_eq!(
            m.lines().nth(f.line.unwrap() as usize - 1),
            Some("\tpop\t{r5-r10, pc}")
        );
        assert!(
            f.message.contains("r4 is not preserved")
                && f.message.contains(&format!(
                    "written by `ldr r4, [r1, #4]` at 0x6c (line {written})"
                )),
            "{f}"
        );
    }
    let in_fixup = errs
        .iter()
        .find(|(_, f)| f.section == ".text.fixup")
        .unwrap();
    assert_eq!(
        in_fixup.1.line,
        Some(line_of_label(&m, ".Lfrom_fixup_done") + 1)
    );

    // A return that skips the pop: the stack is not balanced.
    let m = text.replacen(
        "\tmov\tr0, #0\n\tpop\t{r4-r10, pc}\n",
        "\tmov\tr0, #0\n\tbx\tlr\n",
        1,
    );
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let f = assert_caught(
        &r,
        "ldm_stm_from_user",
        "stack not balanced at return (sp = entry -32)",
        line_number(&m, "\tbx\tlr"),
    );
    assert_eq!(f.insn, "bx lr");

    // lr clobbered and returned through.
    let m = text.replacen(
        "\tmov\tr0, #0\n\tpop\t{r4-r10, pc}\n",
        "\tmov\tr0, #0\n\tpop\t{r4-r10, lr}\n\tmov\tlr, r0\n\tbx\tlr\n",
        1,
    );
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    assert_caught(
        &r,
        "ldm_stm_from_user",
        "returns to an address other than the entry lr",
        line_number(&m, "\tbx\tlr"),
    );
}

#[test]
fn arm_mutant_vfp_in_the_linux_flavour() {
    let r = assert_vector_mutant(
        "ldm-stm",
        "ldm_stm_to_user",
        "\tvmov\ts0, r0",
        "uses VFP/NEON state",
    );
    assert_eq!(r, "vmov s0, r0");
}

#[test]
fn arm_mutant_unguarded_touch_load_and_pld() {
    // to_user: a dead load 64 bytes ahead at the top of the ldm loop, where
    // only len >= 32 is known.
    let text = render(&strategy("ldm-stm"), Flavor::Linux);
    let anchor = ".Lto_ldm_loop:\n";
    let m = text.replacen(anchor, &format!("{anchor}\tldr\tr3, [r1, #64]\n"), 1);
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    let f = assert_caught(
        &r,
        "ldm_stm_to_user",
        "touch load past the checked length",
        line_number(&m, "\tldr\tr3, [r1, #64]"),
    );
    assert_eq!(f.insn, "ldr r3, [r1, #64]");
    assert!(
        f.message
            .contains("needs 68 bytes left, only 32 proven by `cmp r2, #32`"),
        "{f}"
    );
    assert_eq!(errors(&r).len(), 1, "{r}");

    // from_user: the pld's own guard taken out. A preload cannot fault, so
    // this is a warning (the verdict stays ok), but it is reported.
    let guard = "\tcmp\tr2, #65\n\tblo\t.Lfrom_ldm_prefetched\n";
    assert!(text.contains(guard));
    let m = text.replacen(guard, "", 1);
    let r = check_text(&m, "ldm-stm.S", &Options::default());
    assert!(r.passed(), "{r}");
    let warns: Vec<_> = r
        .findings()
        .filter(|(_, f)| f.severity == Severity::Warning)
        .collect();
    assert_eq!(warns.len(), 1, "{r}");
    let (n, f) = warns[0];
    assert_eq!(n, "ldm_stm_from_user");
    assert_eq!(f.insn, "pld [r1, #64]");
    assert_eq!(f.line, Some(line_of_label(&m, ".Lfrom_ldm_loop")));
    assert!(
        f.message.contains("preload past the checked length")
            && f.message
                .contains("needs 65 bytes left, only 32 proven by `cmp r2, #32`")
            && f.message
                .contains("contract forbids touching memory outside the source"),
        "{f}"
    );
}

// ---------------------------------------------------------------------------
// AArch64 (A64): the same mutants, on arm64-template and a64-overlap.

#[test]
fn a64_mutant_missing_entry() {
    let text = render(&strategy("arm64-template"), Flavor::Linux);
    let entry = "\t_asm_extable_uaccess\t.Lfrom_template_loop_load0_hi, .Lfrom_fixup_step\n";
    assert!(text.contains(entry));
    let m = text.replacen(entry, "", 1);
    let r = check_text(&m, "arm64-template.S", &Options::default());
    let f = assert_caught(
        &r,
        "arm64_template_from_user",
        "without an exception-table entry",
        line_of_label(&m, ".Lfrom_template_loop_load0_hi"),
    );
    assert_eq!(f.insn, "ldtr x4, [x1, #0x8]");
    assert_eq!(errors(&r).len(), 1, "{r}");
}

#[test]
fn a64_mutant_stray_entries() {
    let text = render(&strategy("a64-overlap"), Flavor::Linux);
    let anchor = "SYM_FUNC_END(a64_overlap_to_user)\n";
    let entry = |insn: &str| format!("\t_asm_extable_uaccess\t{insn}, .Lto_fixup_retry\n");
    // On a compare.
    let m = text.replacen(
        anchor,
        &format!("{anchor}{}", entry(".Lto_loop_aligned")),
        1,
    );
    let r = check_text(&m, "a64-overlap.S", &Options::default());
    let f = assert_caught(
        &r,
        "a64_overlap_to_user",
        "stray exception-table entry: this instruction does not access user memory",
        line_of_label(&m, ".Lto_loop_aligned"),
    );
    assert!(f.insn.starts_with("cmp x2"), "{f}");
    assert_eq!(errors(&r).len(), 1, "{r}");
    // On a kernel-side `ldp` of to_user (the kernel buffer).
    let at = text.find("\tldp\tx3, x4, [x1]\n").unwrap();
    let m = format!("{}.Lto_kernel_load:\n{}", &text[..at], &text[at..]);
    let m = m.replacen(anchor, &format!("{anchor}{}", entry(".Lto_kernel_load")), 1);
    let r = check_text(&m, "a64-overlap.S", &Options::default());
    let f = assert_caught(
        &r,
        "a64_overlap_to_user",
        "stray exception-table entry",
        line_of_label(&m, ".Lto_kernel_load"),
    );
    assert_eq!(f.insn, "ldp x3, x4, [x1]");
    // On a prfm: a preload cannot fault.
    let at = text.rfind("\tprfm\tpldl1strm, [x1, #256]\n").unwrap();
    let m = format!("{}.Lto_prfm:\n{}", &text[..at], &text[at..]);
    let m = m.replacen(anchor, &format!("{anchor}{}", entry(".Lto_prfm")), 1);
    let r = check_text(&m, "a64-overlap.S", &Options::default());
    let f = assert_caught(
        &r,
        "a64_overlap_to_user",
        "a preload cannot fault, so it needs none",
        line_of_label(&m, ".Lto_prfm"),
    );
    assert_eq!(f.insn, "prfm pldl1strm, [x1, #0x100]");
}

#[test]
fn a64_mutant_fixup_outside_the_function() {
    let text = render(&strategy("arm64-template"), Flavor::Standalone);
    let entry = "\t.long\t.Lfrom_template_byte_load - ., .Lfrom_fixup_step - .\n";
    assert!(text.contains(entry));
    let m = text.replacen(
        entry,
        "\t.long\t.Lfrom_template_byte_load - ., .Lto_fixup_step - .\n",
        1,
    );
    let r = check_text(&m, "arm64-template.S", &Options::default());
    let f = assert_caught(
        &r,
        "arm64_template_from_user",
        "lies outside the function (in arm64_template_to_user)",
        line_of_label(&m, ".Lfrom_template_byte_load"),
    );
    assert_eq!(f.insn, "ldtrb w3, [x1]");
    assert_eq!(errors(&r).len(), 1, "{r}");
}

#[test]
fn a64_mutant_callee_saved_registers_clobbered() {
    let text = render(&strategy("arm64-template"), Flavor::Linux);
    let (from, to) = text.split_at(text.find("SYM_FUNC_START(arm64_template_to_user)").unwrap());
    // x19 (callee-saved) as the byte loop's register.
    let loop_byte = "\tldtrb\tw3, [x1]\n\tstrb\tw3, [x0]\n\tadd\tx1, x1, #1\n";
    assert!(from.contains(loop_byte));
    let m = from.replacen(
        loop_byte,
        "\tldtrb\tw19, [x1]\n\tstrb\tw19, [x0]\n\tadd\tx1, x1, #1\n",
        1,
    ) + to;
    let r = check_text(&m, "arm64-template.S", &Options::default());
    let written = line_number(&m, "\tldtrb\tw19, [x1]");
    let errs = errors(&r);
    assert!(!errs.is_empty(), "{r}");
    for (n, f) in &errs {
        assert_eq!(n, "arm64_template_from_user");
        assert_eq!(f.insn, "ret");
        assert!(
            f.message.contains("x18-x29 is not preserved")
                && f.message.contains(&format!("(line {written})")),
            "{f}"
        );
    }

    // lr overwritten before a return.
    let m = text.replacen(
        "\tmovz\tx0, #0\n\tret\n",
        "\tmovz\tx0, #0\n\tmov\tx30, x1\n\tret\n",
        1,
    );
    let r = check_text(&m, "arm64-template.S", &Options::default());
    assert_caught(
        &r,
        "arm64_template_from_user",
        "x30 (lr) is not preserved",
        line_number(&m, "\tmov\tx30, x1") + 1,
    );

    // sp moved and not restored.
    let m = text.replacen(
        "\tmovz\tx0, #0\n\tret\n",
        "\tmovz\tx0, #0\n\tsub\tsp, sp, #16\n\tret\n",
        1,
    );
    let r = check_text(&m, "arm64-template.S", &Options::default());
    assert_caught(
        &r,
        "arm64_template_from_user",
        "stack not balanced at return (sp = entry -16)",
        line_number(&m, "\tsub\tsp, sp, #16") + 1,
    );
}

#[test]
fn a64_mutant_fp_simd_in_the_linux_flavour() {
    let r = assert_vector_mutant(
        "arm64-template",
        "arm64_template_to_user",
        "\tfmov\ts0, w0",
        "uses FP/SIMD state",
    );
    assert_eq!(r, "fmov s0, w0");
}

#[test]
fn a64_mutant_unguarded_touch_load_and_prefetch() {
    // to_user: a dead load 128 bytes ahead at the top of the loop, where
    // only len >= 64 is known.
    let text = render(&strategy("arm64-template"), Flavor::Linux);
    let anchor = ".Lto_template_loop:\n";
    let m = text.replacen(anchor, &format!("{anchor}\tldr\tx3, [x1, #128]\n"), 1);
    let r = check_text(&m, "arm64-template.S", &Options::default());
    let f = assert_caught(
        &r,
        "arm64_template_to_user",
        "touch load past the checked length",
        line_number(&m, "\tldr\tx3, [x1, #128]"),
    );
    assert_eq!(f.insn, "ldr x3, [x1, #0x80]");
    assert!(
        f.message.contains("needs 136 bytes left, only 64 proven"),
        "{f}"
    );
    assert_eq!(errors(&r).len(), 1, "{r}");

    // from_user: the prfm's own guard taken out: a warning (a preload
    // cannot fault), but reported.
    let text = render(&strategy("a64-overlap"), Flavor::Linux);
    let guard = "\tcmp\tx2, #257\n\tb.lo\t.Lfrom_loop_prefetched\n";
    assert!(text.contains(guard));
    let m = text.replacen(guard, "", 1);
    let r = check_text(&m, "a64-overlap.S", &Options::default());
    assert!(r.passed(), "{r}");
    let warns: Vec<_> = r
        .findings()
        .filter(|(_, f)| f.severity == Severity::Warning)
        .collect();
    assert_eq!(warns.len(), 1, "{r}");
    let (n, f) = warns[0];
    assert_eq!(n, "a64_overlap_from_user");
    assert_eq!(f.insn, "prfm pldl1strm, [x1, #0x100]");
    assert!(
        f.message.contains("preload past the checked length")
            && f.message.contains("needs 257 bytes left, only 64 proven"),
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

fn static_fixture(name: &str) -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/static")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
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
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
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
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
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
    assert!(r.passed() && r.findings().next().is_none(), "{r}");
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
    let m = flagged("1").replacen("13:\trep movsb", "13:\trep movsq", 1);
    let r = check_text(&m, "x86-alternative.S", &opts);
    let f = assert_caught(&r, "altcopy", "no byte retry after a fault here", site);
    assert!(
        f.message
            .ends_with("[with the alternatives for no X86_FEATURE_ERMS (9*32+9) applied]"),
        "{f}"
    );
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
