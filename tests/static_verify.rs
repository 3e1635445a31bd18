//! `copygen verify --static` (static_verify): the catalog passes on x86_64
//! and i386, hand-written fixtures get the verdicts they deserve, and each
//! mutant of emitted text — made by editing the generator's own output so the
//! mutants track it — is caught with a finding naming the instruction and
//! its source line.

use std::path::{Path, PathBuf};

use copygen::backend;
use copygen::emit::catalog;
use copygen::ir::{Arch, Flavor, Strategy};
use copygen::render::render;
use copygen::static_verify::{check_catalog, check_object, Finding, Options, Report, Severity};

fn fixture_strategies() -> Vec<Strategy> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/strategies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| copygen::strategy::load(f, None).unwrap())
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
    // The analysis finds exactly the accesses the lowering marked as user.
    for s in catalog()
        .unwrap()
        .into_iter()
        .filter(|s| matches!(s.arch, Arch::X86_64 | Arch::I386))
    {
        for flavor in Flavor::ALL {
            let r = reports
                .iter()
                .find(|r| r.file.ends_with(copygen::render::emitted_path(&s, flavor)))
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

    let opts = Options {
        arch: Some(Arch::I386),
        ..Options::default()
    };
    let path = dir.join("wordloop-noretry.S");
    let r = check_object(&path, &opts).unwrap();
    assert!(r.passed(), "{r}");
    let text = std::fs::read_to_string(&path).unwrap();
    let warn: Vec<_> = r
        .findings()
        .filter(|(_, f)| f.severity == Severity::Warning)
        .collect();
    assert_eq!(warn.len(), 1, "{r}");
    assert!(warn[0].1.message.contains("no byte retry"), "{r}");
    assert_eq!(
        warn[0].1.line,
        Some(line_number(&text, "3:\tmovl\t(%esi), %eax"))
    );
}

#[test]
fn mutant_missing_entry() {
    let text = render(&strategy("unrolled64"), Flavor::Linux);
    let entry = "\t_ASM_EXTABLE_UA(.Lfrom_unrolled_loop_load3, .Lfrom_fixup_retry)\n";
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
        &format!("\t_ASM_EXTABLE_UA(.Lfrom_unrolled_aligned, .Lfrom_fixup_retry)\n{anchor}"),
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
    let text = render(&strategy("unrolled64"), Flavor::Linux);
    let anchor = "SYM_FUNC_START(unrolled64_to_user)\n";
    let m = text.replacen(anchor, &format!("{anchor}\tpxor\t%xmm0, %xmm0\n"), 1);
    let r = check_text(&m, "unrolled64.S", &Options::default());
    let f = assert_caught(
        &r,
        "unrolled64_to_user",
        "MMX/SSE/AVX",
        line_number(&m, "\tpxor\t%xmm0, %xmm0"),
    );
    assert_eq!(f.insn, "pxor %xmm0, %xmm0");
    // A strategy that owns the vector state may.
    let r = check_text(
        &m,
        "unrolled64.S",
        &Options {
            allow_vector: true,
            ..Options::default()
        },
    );
    assert!(r.passed(), "{r}");
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
