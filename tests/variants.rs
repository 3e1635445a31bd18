//! Per-CPU variants: the schema's located errors, first-match selection, the
//! emitted entry points (ALTERNATIVE chain in the linux flavour, CPUID
//! resolver in the standalone one), and every variant under fault injection,
//! the JIT and the bench.

use std::path::Path;
use std::process::Command;

use copygen::arch::cpu::{self, CpuFeatures};
use copygen::arch::symbols;
use copygen::front::catalog::{catalog, repo_root};
use copygen::front::parse::parse;
use copygen::front::strategy::{Direction, Flavor, Strategy};
use copygen::front::variant::CpuFeature;
use copygen::lower::variants;
use copygen::output::render::render;

/// Two variants over shared methods: rep movsb where ERMS and not Zen, a
/// byte/word split elsewhere. Small, so the fault suites run fast.
const PER_CPU: &str = r#"name = "per-cpu"
description = "test"
arch = "x86_64"

[methods.bytes]
kind = "bytes"

[methods.movsb]
kind = "rep_movs"
unit = 1

[methods.loop]
kind = "unrolled"
block = 16
width = 8
registers = 2

[[dispatch]]
sizes = "0..=7"
use = "bytes"
[[dispatch]]
sizes = "8.."
use = "loop"

[[variants]]
name = "erms"
when = ["erms", "!zen"]
[[variants.dispatch]]
sizes = "0.."
use = "movsb"

[[variants]]
name = "other"
default = true
"#;

fn per_cpu(arch: &str) -> Strategy {
    let text = PER_CPU
        .replace("x86_64", arch)
        .replace("width = 8", "width = 4");
    parse(Path::new("per-cpu.toml"), &text, None).unwrap()
}

fn guarded_movsb() -> Strategy {
    catalog()
        .unwrap()
        .into_iter()
        .find(|s| s.name == "guarded-movsb")
        .unwrap()
}

fn features(list: &[CpuFeature]) -> CpuFeatures {
    CpuFeatures::from_list(list)
}

#[test]
fn first_matching_variant_wins_and_the_default_catches_the_rest() {
    use CpuFeature::*;
    let s = guarded_movsb();
    let pick = |f: &[CpuFeature]| variants::select(&s, features(f)).unwrap().name.clone();
    // Zen 4: zen, zen4, erms and fsrm: the guard, not plain rep movsb.
    assert_eq!(pick(&[Zen, Zen4, Erms, Fsrm]), "zen");
    // Zen 3 under qemu TCG, which drops FSRM: still the guard.
    assert_eq!(pick(&[Zen, Zen3, Erms]), "zen");
    // Zen 5, and a later Zen no generation bit names: plain rep movsb.
    assert_eq!(pick(&[Zen, Zen5, Erms, Fsrm]), "fsrm");
    assert_eq!(pick(&[Zen, Erms, Fsrm]), "fsrm");
    // Zen 1/2 have no ERMS: head/tail, the loop, then `rep movsq`.
    assert_eq!(pick(&[Zen]), "zen_movsq");
    // Intel Ice Lake and later.
    assert_eq!(pick(&[Erms, Fsrm]), "fsrm");
    // Skylake: ERMS without FSRM.
    assert_eq!(pick(&[Erms]), "erms");
    assert_eq!(pick(&[]), "loop");
    // Negated features.
    let t = per_cpu("x86_64");
    let pick = |f: &[CpuFeature]| variants::select(&t, features(f)).unwrap().name.clone();
    assert_eq!(pick(&[Erms]), "erms");
    assert_eq!(pick(&[Erms, Zen]), "other");
}

#[test]
fn variants_share_the_strategys_dispatch_or_bring_their_own() {
    let s = per_cpu("x86_64");
    assert_eq!(s.variants.len(), 2);
    assert_eq!(s.variants[0].classes.len(), 1);
    assert_eq!(s.variants[0].classes[0].method.name, "movsb");
    // The default took the strategy's dispatch.
    assert_eq!(s.variants[1].classes.len(), 2);
    assert_eq!(s.variants[1].when, None);
}

/// One case: a change to PER_CPU and where its error must point.
fn rejected(from: &str, to: &str, line_with: &str, field: &str, message: &str) {
    assert!(PER_CPU.contains(from), "base lacks {from}");
    let text = PER_CPU.replacen(from, to, 1);
    let e = parse(Path::new("case.toml"), &text, None).expect_err(message);
    let line = text.lines().position(|l| l.contains(line_with)).unwrap() + 1;
    assert_eq!(e.file, Path::new("case.toml"));
    assert_eq!((e.line, e.field.as_str()), (line, field), "{e}");
    assert!(e.message.contains(message), "{e}");
}

#[test]
fn bad_variants_are_located_errors() {
    rejected(
        "when = [\"erms\", \"!zen\"]",
        "when = [\"erms\", \"avx9\"]",
        "avx9",
        "variants[0].when[1]",
        "unknown CPU feature `avx9` (known: erms, fsrm, zen, zen1, zen2, zen3, zen4, zen5, rep_good)",
    );
    rejected(
        "when = [\"erms\", \"!zen\"]",
        "when = [\"erms\", \"!erms\"]",
        "!erms",
        "variants[0].when[1]",
        "`erms` is named twice",
    );
    rejected(
        "when = [\"erms\", \"!zen\"]",
        "when = []",
        "when = []",
        "variants[0].when",
        "always holds",
    );
    rejected(
        "name = \"other\"",
        "name = \"erms\" # again",
        "# again",
        "variants[1].name",
        "two variants are named `erms`",
    );
    rejected(
        "name = \"erms\"",
        "name = \"e-rms\"",
        "e-rms",
        "variants[0].name",
        "only letters, digits and `_`",
    );
    rejected(
        "name = \"erms\"",
        "name = \"erms\"\ndefault = true",
        "default = true",
        "variants[0].default",
        "has no `when`",
    );
    rejected(
        "default = true",
        "when = [\"fsrm\"]",
        "fsrm",
        "variants[1].when",
        "the last variant must be the default",
    );
    rejected(
        "when = [\"erms\", \"!zen\"]",
        "default = true",
        "default = true",
        "variants[0].default",
        "must come last",
    );
    rejected(
        "name = \"erms\"\n",
        "name = \"erms\"\ncolour = \"red\"\n",
        "colour",
        "variants[0].colour",
        "unknown field `colour`",
    );
    rejected(
        "use = \"movsb\"\n\n[[variants]]",
        "use = \"nothing\"\n\n[[variants]]",
        "nothing",
        "variants[0].dispatch[0].use",
        "no method named `nothing`",
    );
    rejected(
        "arch = \"x86_64\"",
        "arch = \"x86_64\"\nfixed_sizes = [8]",
        "fixed_sizes",
        "fixed_sizes",
        "do not combine",
    );
}

/// Variants are chosen by x86 feature bits: an ARM strategy with them is a
/// located error (aarch64 used to reach the x86 resolver's code).
/// `when` as several conjunctions, any of which selects the variant.
#[test]
fn a_condition_of_several_conjunctions_is_checked_term_by_term() {
    let base = "when = [\"erms\", \"!zen\"]";
    rejected(
        base,
        "when = [[\"zen3\"], [\"avx9\"]]",
        "avx9",
        "variants[0].when[1][0]",
        "unknown CPU feature `avx9`",
    );
    rejected(
        base,
        "when = [\"erms\", [\"zen3\"]]",
        "[\"zen3\"]",
        "variants[0].when[0]",
        "not both",
    );
    rejected(
        base,
        "when = [[\"zen3\"], []]",
        "[\"zen3\"], []",
        "variants[0].when[1]",
        "always holds",
    );
    rejected(
        base,
        "when = [[\"zen3\", \"erms\"], [\"erms\", \"zen3\"]]",
        "[\"erms\", \"zen3\"]",
        "variants[0].when[1]",
        "the same condition as `when[0]`",
    );
    // A conjunction another one of the variant's implies selects no CPU
    // that one does not: its slot would never be the one that jumps.
    rejected(
        base,
        "when = [[\"zen\"], [\"zen\", \"erms\"]]",
        "[\"zen\", \"erms\"]",
        "variants[0].when[1]",
        "`zen && erms` never selects `erms` alone",
    );
    rejected(
        base,
        "when = [\"erms\", 7]",
        "\"erms\", 7",
        "variants[0].when[1]",
        "a CPU feature (\"erms\", \"!fsrm\") or a list of them",
    );
    // Each conjunction is a slot of the entry: a bounded number.
    let many: Vec<String> = (0..17)
        .map(|i| format!("[\"zen\", \"!zen{}\"]", i % 4 + 1))
        .collect();
    rejected(
        base,
        &format!("when = [{}]", many.join(", ")),
        "!zen1",
        "variants[0].when[16]",
        "at most 16 conditions in one `when`",
    );
    // Linux 6.1 lacks ZEN5: located in its conjunction.
    rejected(
        base,
        "when = [[\"zen4\"], [\"erms\", \"zen5\"]]",
        "zen5",
        "variants[0].when[1][1]",
        "X86_FEATURE_ZEN5",
    );
    let text = PER_CPU.replacen(base, "when = [[\"zen3\", \"erms\"], [\"zen4\"]]", 1);
    let s = parse(Path::new("ok.toml"), &text, None).unwrap();
    let pick = |f: &[CpuFeature]| variants::select(&s, features(f)).unwrap().name.clone();
    use CpuFeature::*;
    assert_eq!(pick(&[Zen, Zen3, Erms]), "erms");
    assert_eq!(pick(&[Zen, Zen4]), "erms");
    assert_eq!(pick(&[Zen, Zen3]), "other");
    assert_eq!(pick(&[Zen, Zen5, Erms]), "other");
    // Written back as it was read.
    let written = copygen::front::to_toml::render(&s).unwrap();
    assert!(
        written.contains("when = [[\"zen3\", \"erms\"], [\"zen4\"]]\n"),
        "{written}"
    );
    let again = parse(Path::new("again.toml"), &written, None).unwrap();
    assert_eq!(again.variants, s.variants);
}

#[test]
fn strategies_for_other_arches_than_x86_refuse_variants() {
    for arch in ["armv6", "aarch64", "riscv64"] {
        let text = PER_CPU
            .replace("x86_64", arch)
            .replace("width = 8", "width = 4")
            .replace("kind = \"rep_movs\"\nunit = 1", "kind = \"bytes\"");
        let e = parse(Path::new("other.toml"), &text, None).expect_err(arch);
        assert_eq!(e.field, "variants", "{arch}: {e}");
        assert!(e.message.contains(&format!("{arch} has none")), "{e}");
    }
}

#[test]
fn a_variant_may_override_a_method() {
    let text = PER_CPU.replace(
        "name = \"other\"\ndefault = true\n",
        "name = \"other\"\ndefault = true\n[variants.methods.loop]\nkind = \"unrolled\"\nblock = 32\nwidth = 8\nregisters = 4\n",
    );
    let s = parse(Path::new("o.toml"), &text, None).unwrap();
    let m = &s.variants[1].classes[1].method;
    assert!(format!("{m:?}").contains("block: 32"), "{m:?}");
    // The shared definition is untouched for the other variant's use.
    let bad = text.replace("block = 32", "block = 30");
    let e = parse(Path::new("o.toml"), &bad, None).unwrap_err();
    assert_eq!(e.field, "variants[1].methods.loop.block", "{e}");
}

#[test]
fn a_bad_variant_exits_2_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(&f, PER_CPU.replace("\"!zen\"", "\"zen9\"")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["emit", f.to_str().unwrap(), "-o"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    let line = PER_CPU.lines().position(|l| l.contains("!zen")).unwrap() + 1;
    assert!(err.contains(&format!("bad.toml:{line}:")), "{err}");
    assert!(err.contains("variants[0].when[1]"), "{err}");
    assert!(!dir.path().join("out").exists());
}

/// The lines of linux function `name` in `text`, comments left out.
fn entry_lines<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let start = format!("SYM_FUNC_START({name})");
    text.lines()
        .skip_while(|l| *l != start)
        .take_while(|l| !l.starts_with("SYM_FUNC_END"))
        .filter(|l| !l.trim_start().starts_with("/*"))
        .collect()
}

#[test]
fn the_linux_entry_is_an_alternative_slot_per_variant_on_feature_bits() {
    let text = render(&guarded_movsb(), Flavor::Linux);
    assert_eq!(
        entry_lines(&text, "guarded_movsb_from_user"),
        [
            "SYM_FUNC_START(guarded_movsb_from_user)",
            "\tALTERNATIVE_2 \"\", \"jmp guarded_movsb__zen_from_user\", X86_FEATURE_ZEN3, \"\", ALT_NOT(X86_FEATURE_ERMS)",
            "\tALTERNATIVE_2 \"\", \"jmp guarded_movsb__zen_from_user\", X86_FEATURE_ZEN4, \"\", ALT_NOT(X86_FEATURE_ERMS)",
            "\tALTERNATIVE \"\", \"jmp guarded_movsb__fsrm_from_user\", X86_FEATURE_FSRM",
            "\tALTERNATIVE \"\", \"jmp guarded_movsb__erms_from_user\", X86_FEATURE_ERMS",
            "\tALTERNATIVE_2 \"\", \"jmp guarded_movsb__zen_movsq_from_user\", X86_FEATURE_ZEN, \"\", X86_FEATURE_ERMS",
            "\tALTERNATIVE \"\", \"jmp guarded_movsb__movsq_from_user\", X86_FEATURE_REP_GOOD",
            "\tjmp\tguarded_movsb__loop_from_user",
            "",
        ]
    );
    assert!(text.contains("#include <asm/alternative.h>"));
    assert!(!text.contains("cpuid"));
    // An excluded feature puts the NOPs back when present.
    let t = render(&per_cpu("i386"), Flavor::Linux);
    assert!(
        t.contains("\tALTERNATIVE_2 \"\", \"jmp per_cpu__erms_to_user\", X86_FEATURE_ERMS, \"\", X86_FEATURE_ZEN"),
        "{t}"
    );
    // Every variant's user accesses have their own entries.
    for v in ["zen", "fsrm", "erms", "zen_movsq", "movsq", "loop"] {
        for dir in ["from", "to"] {
            assert!(
                text.contains(&format!("COPYGEN_EXTABLE(.L{v}_{dir}_")),
                "{v} {dir}"
            );
        }
    }
}

/// A per-CPU routine serving both directions under a name of its own (what
/// `copygen kernel-patch` wires): one linux entry point under that name, its
/// ALTERNATIVE chain entering each variant's own routine, every name once.
#[test]
fn a_per_cpu_routine_for_both_directions_has_one_entry_and_a_routine_per_variant() {
    let text = PER_CPU.replace(
        "arch = \"x86_64\"\n",
        "arch = \"x86_64\"\nroutine = \"both\"\n[linux]\nsymbol = \"my_copy\"\n",
    );
    let s = parse(Path::new("both.toml"), &text, None).unwrap();
    let linux = render(&s, Flavor::Linux);
    let functions: Vec<&str> = linux
        .lines()
        .filter_map(|l| l.strip_prefix("SYM_FUNC_START("))
        .map(|l| l.trim_end_matches(')'))
        .collect();
    assert_eq!(
        functions,
        [
            "my_copy",
            "per_cpu__erms_copy_user",
            "per_cpu__other_copy_user"
        ],
        "{linux}"
    );
    assert_eq!(
        entry_lines(&linux, "my_copy"),
        [
            "SYM_FUNC_START(my_copy)",
            "\tALTERNATIVE_2 \"\", \"jmp per_cpu__erms_copy_user\", X86_FEATURE_ERMS, \"\", X86_FEATURE_ZEN",
            "\tjmp\tper_cpu__other_copy_user",
            "",
        ]
    );
    // Each variant's routine serves both directions: loads and stores have entries.
    assert!(linux.contains("COPYGEN_EXTABLE(.Lerms_copy_"), "{linux}");
    // The standalone flavour keeps the contract's names (§3), both directions each.
    let standalone = render(&s, Flavor::Standalone);
    for name in [
        "per_cpu_from_user:",
        "per_cpu_to_user:",
        "per_cpu__erms_from_user:",
        "per_cpu__erms_to_user",
        "per_cpu__other_from_user:",
        "per_cpu__other_to_user",
    ] {
        assert!(standalone.contains(name), "{name}: {standalone}");
    }
}

/// Link the standalone file of `s` with a C program that calls each entry
/// point once and prints which variant its pointer then holds.
fn resolved_by_cpuid(s: &Strategy, m32: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.S"), render(s, Flavor::Standalone)).unwrap();
    let mut c = String::from("#include <stdio.h>\n");
    for v in &s.variants {
        for &d in &s.directions {
            c += &format!("extern char {}__{}_{}[];\n", s.symbol, v.name, d.name());
        }
    }
    for &d in &s.directions {
        c += &format!(
            "extern unsigned long {0}_{1}(void *, const void *, unsigned long);\nextern void *{2};\n",
            s.symbol,
            d.name(),
            symbols::pointer(s, d)
        );
    }
    c += "int main(void) {\n\tchar a[64] = \"copied\", b[64];\n";
    for &d in &s.directions {
        c += &format!(
            "\tif ({}_{}(b, a, 7) != 0 || b[5] != 'd') return 1;\n",
            s.symbol,
            d.name()
        );
        for v in &s.variants {
            c += &format!(
                "\tif ({} == (void *){}__{}_{}) puts(\"{}\");\n",
                symbols::pointer(s, d),
                s.symbol,
                v.name,
                d.name(),
                v.name
            );
        }
    }
    c += "\treturn 0;\n}\n";
    std::fs::write(dir.path().join("main.c"), c).unwrap();
    let mut cc = Command::new("gcc");
    if m32 {
        cc.arg("-m32");
    }
    let st = cc
        .args(["-O1", "-o", "t", "s.S", "main.c"])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
    let out = Command::new(dir.path().join("t")).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_standalone_resolver_picks_what_cpuid_says_on_this_host() {
    let host = cpu::host_features();
    for (s, m32) in [
        (guarded_movsb(), false),
        (per_cpu("x86_64"), false),
        (per_cpu("i386"), true),
    ] {
        let want = variants::select(&s, host).unwrap().name.clone();
        assert_eq!(
            resolved_by_cpuid(&s, m32),
            vec![want.clone(); s.directions.len()],
            "{} on a CPU with {host}",
            s.name
        );
    }
}

/// The resolver tests each conjunction of a condition: on this host it
/// picks the variant whose only holding conjunction is the last, and
/// passes over one none of whose conjunctions holds.
#[test]
fn the_standalone_resolver_tries_every_conjunction() {
    let host = cpu::host_features();
    let Some(f) = CpuFeature::ALL.into_iter().find(|&f| host.has(f)) else {
        eprintln!("SKIPPED: this CPU has none of the features");
        return;
    };
    let mut others = ["zen1", "zen2", "zen3"]
        .into_iter()
        .filter(|g| *g != f.name());
    let (g, h) = (others.next().unwrap(), others.next().unwrap());
    for (when, want) in [
        (format!("[[\"!{f}\", \"{g}\"], [\"{f}\"]]"), "erms"),
        (
            format!("[[\"!{f}\", \"{g}\"], [\"!{f}\", \"{h}\"]]"),
            "other",
        ),
    ] {
        let text = PER_CPU.replacen("when = [\"erms\", \"!zen\"]", &format!("when = {when}"), 1);
        let s = parse(Path::new("any.toml"), &text, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(variants::select(&s, host).unwrap().name, want, "{when}");
        assert_eq!(resolved_by_cpuid(&s, false), [want, want], "{when}");
    }
}

#[test]
fn fault_injection_runs_every_variant_and_the_entry_points() {
    for s in [per_cpu("x86_64"), per_cpu("i386")] {
        let names: Vec<String> = copygen::checks::faultinject::entries(&s)
            .into_iter()
            .map(|e| e.symbol)
            .collect();
        assert_eq!(
            names,
            [
                "per_cpu__erms_from_user",
                "per_cpu__erms_to_user",
                "per_cpu__other_from_user",
                "per_cpu__other_to_user",
                "per_cpu_from_user",
                "per_cpu_to_user",
            ]
        );
        let r = copygen::checks::faultinject::run_strategy(&s).unwrap();
        assert_eq!(r.routines.len(), 6);
        assert_eq!(r.violations(), 0, "{}: {:?}", s.arch, r.details);
        assert!(r.routines.iter().all(|x| x.cases > 10_000));
    }
}

#[test]
fn the_jit_checks_every_variant() {
    let s = per_cpu("x86_64");
    let (report, ok) = copygen::jit::contract::run_strategy(&s).unwrap();
    assert!(ok, "{report}");
    for v in ["erms", "other"] {
        for d in [Direction::FromUser, Direction::ToUser] {
            let sym = format!("per_cpu__{v}_{}", d.name());
            assert!(
                report.lines().any(|l| l.starts_with(&sym)),
                "{sym}: {report}"
            );
        }
    }
}

fn bench(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .arg("bench")
        .args(args)
        .current_dir(repo_root())
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        out.status.code().unwrap(),
        text(out.stdout),
        text(out.stderr),
    )
}

#[test]
fn bench_runs_this_cpus_variant_and_names_it_or_the_one_forced() {
    let s = guarded_movsb();
    let host = variants::select(&s, cpu::host_features())
        .unwrap()
        .name
        .clone();
    let (code, out, err) = bench(&["guarded-movsb", "--sizes", "8", "--repeats", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("guarded-movsb[{host}]")), "{out}");
    assert!(err.contains(&format!("variant `{host}`")), "{err}");
    for v in ["zen", "fsrm", "loop"] {
        let (code, out, err) = bench(&[
            "guarded-movsb",
            "rep_movsb",
            "--sizes",
            "8",
            "--repeats",
            "1",
            "--variant",
            v,
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(&format!("guarded-movsb[{v}]")), "{out}");
    }
    let (code, _, err) = bench(&["guarded-movsb", "--sizes", "8", "--variant", "avx"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no variant `avx` (it has zen, fsrm, erms, zen_movsq, movsq, loop)"),
        "{err}"
    );
    let (code, _, err) = bench(&["rep_movsb", "--sizes", "8", "--variant", "zen"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no strategy benchmarked has per-CPU variants"),
        "{err}"
    );
}

#[test]
fn parse_entry_reads_back_what_entry_makes() {
    use copygen::front::strategy::{Direction, Flavor};
    let s = &copygen::front::catalog::catalog().unwrap()[0];
    for dir in [Direction::FromUser, Direction::ToUser] {
        for fixed in [None, Some(16)] {
            let name = symbols::entry(s, Flavor::Standalone, dir, fixed);
            assert_eq!(
                symbols::parse_entry(&name),
                Some((dir, fixed.map(u64::from))),
                "{name}"
            );
        }
    }
    assert_eq!(symbols::parse_entry("x_from_user_"), None);
    assert_eq!(symbols::parse_entry("x_from_user_1a"), None);
    assert_eq!(symbols::parse_entry("memcpy"), None);
}
