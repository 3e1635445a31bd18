//! Alias-first dispatch (`[alias_first]`): one test of `(dst - src) mod
//! 4096` before the size classes. It jumps on exactly its band (JIT code
//! run at every distance); the routine keeps the uaccess contract on all
//! five arches; the strategy writer and the parser agree on it; the front
//! end refuses a guard it makes unreachable; and the tuner's alias-first
//! candidates run the same method for every copy as the same candidate
//! with guards in its classes.

use std::path::Path;

use copygen::backend::x86::{Inst, Line, Reg};
use copygen::checks::faultinject;
use copygen::front::parse::parse;
use copygen::front::strategy::{class_of, Arch, Condition, Method, SizeClass, Strategy};
use copygen::front::to_toml;
use copygen::jit;
use copygen::lower::routine::Op;
use copygen::tools::tune::space::{BandGuard, Candidate, CandidateBase};

/// Head/tail copies up to 32 bytes and `rep movsb` above (bytes where the
/// arch has no `rep movs`); in the band 1..=63, a 32-byte loop above 32
/// bytes, and `rep movsb` again in 32..=63.
fn strategy_text(arch: Arch) -> String {
    let x86 = matches!(arch, Arch::X86_64 | Arch::I386);
    let width = if matches!(arch, Arch::I386 | Arch::Armv6) {
        4
    } else {
        8
    };
    let registers = if arch == Arch::Armv6 { 2 } else { 4 };
    let large = if x86 {
        "kind = \"rep_movs\"\nunit = 1"
    } else {
        "kind = \"bytes\""
    };
    format!(
        r#"name = "af"
description = "alias first"
arch = "{arch}"

[methods.small]
kind = "head_tail"
width = {width}
registers = 2

[methods.large]
{large}

[methods.band]
kind = "unrolled"
block = 32
width = {width}
registers = {registers}
grouping = "loads_first"
tail = "words"

[[dispatch]]
sizes = "0..=32"
use = "small"

[[dispatch]]
sizes = "33.."
use = "large"

[alias_first]
alias = [1, 63]

[[alias_first.dispatch]]
sizes = "0..=32"
use = "small"

[[alias_first.dispatch]]
sizes = "33.."
use = "band"
[[alias_first.dispatch.guard]]
alias = [32, 63]
use = "large"
"#
    )
}

fn strategy(arch: Arch) -> Strategy {
    parse(Path::new("af.toml"), &strategy_text(arch), None).unwrap()
}

/// `return 1` where the band's classes start, `return 0` where the main
/// ones do: the routine then reports which way its first test went.
fn first_test_only(lines: &mut Vec<Line>) {
    let ret = |v| {
        [
            Inst::MovImm {
                width: 4,
                dst: Reg::Ax,
                imm: v,
            },
            Inst::Ret,
        ]
        .map(|inst| Line {
            inst,
            user: None,
            fixup_start: false,
        })
    };
    let band = lines
        .iter()
        .position(|l| matches!(&l.inst, Inst::Label(n) if n.ends_with("alias_first")))
        .expect("the alias-first label");
    lines.splice(band + 1..band + 1, ret(1));
    let main = lines
        .iter()
        .position(|l| matches!(&l.inst, Inst::Comment(c) if c.starts_with("class 0:")))
        .expect("the main dispatch's first class");
    lines.splice(main + 1..main + 1, ret(0));
}

#[test]
fn the_first_test_takes_exactly_its_band() {
    let s = strategy(Arch::X86_64);
    let m = jit::compile_edited(&s, |_, lines| first_test_only(lines)).unwrap();
    let r = m.routine("af_from_user").unwrap();
    for (src, high) in [(0x7f00_1000usize, 0), (0x1234_5ff8, 0x3_0000_7000)] {
        for d in 0..4096usize {
            let dst = src.wrapping_add(high).wrapping_add(d);
            // SAFETY: the edited routine returns before any access.
            let got = unsafe { (r.entry())(dst as *mut u8, src as *const u8, 100) };
            assert_eq!(got, usize::from((1..=63).contains(&d)), "distance {d}");
        }
    }
}

/// The size and alias branches of `s`'s first x86_64 routine, in order.
fn branches(s: &Strategy) -> Vec<Op> {
    let target = copygen::lower::Target {
        arch: Arch::X86_64,
        flavor: copygen::front::strategy::Flavor::Standalone,
    };
    let routine = copygen::lower::lower(s, target).into_iter().next().unwrap();
    routine
        .ops
        .into_iter()
        .filter(|o| matches!(o, Op::JumpIfAlias { .. } | Op::JumpIfLen { .. }))
        .collect()
}

#[test]
fn the_common_path_tests_the_alias_once_before_the_size() {
    let s = strategy(Arch::X86_64);
    let branches = branches(&s);
    assert!(
        matches!(branches[0], Op::JumpIfAlias { lo: 1, hi: 63, .. }),
        "{branches:?}"
    );
    let alias_tests = branches
        .iter()
        .filter(|o| matches!(o, Op::JumpIfAlias { .. }))
        .count();
    // The first test, and the 32..=63 guard inside the band's classes.
    assert_eq!(alias_tests, 2);
}

#[test]
fn every_arch_keeps_the_contract_with_an_alias_first_band() {
    for arch in [
        Arch::X86_64,
        Arch::I386,
        Arch::Armv6,
        Arch::Aarch64,
        Arch::Riscv64,
    ] {
        let s = strategy(arch);
        let r = faultinject::run_strategy(&s).unwrap_or_else(|e| panic!("{arch}: {e:#}"));
        assert_eq!(r.routines.len(), 2, "{arch}");
        for x in &r.routines {
            assert!(x.cases > 90_000, "{arch} {}: {} cases", x.symbol, x.cases);
            assert_eq!(x.violations, 0, "{arch} {}: {:?}", x.symbol, r.details);
            assert_eq!(x.max_shortfall, 0, "{arch} {}", x.symbol);
        }
    }
    // In process too, where the suite also places short copies in the band.
    let s = strategy(Arch::X86_64);
    let sums = jit::contract::run_suite(&jit::compile(&s).unwrap(), &s).unwrap();
    for sum in &sums {
        assert_eq!(sum.violations, 0, "{}: {:?}", sum.symbol, sum.examples);
    }
}

#[test]
fn the_writer_and_the_parser_agree() {
    let s = strategy(Arch::X86_64);
    let text = to_toml::render(&s).unwrap();
    assert!(
        text.contains("\n[alias_first]\nalias = [1, 63]\n"),
        "{text}"
    );
    let back = parse(Path::new("again.toml"), &text, None).unwrap();
    assert_eq!(back.classes, s.classes);
    assert_eq!(back.alias_first, s.alias_first);
    assert_eq!(back.alias_first.unwrap().classes.len(), 2);
}

/// The 1-based line and the message of the one error `text` gets.
fn one_error(text: &str) -> (usize, String) {
    let e = parse(Path::new("case.toml"), text, None).expect_err("refused");
    assert!(e.also.is_empty(), "{e}");
    (e.line, e.message)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_guard_the_first_test_makes_unreachable_is_refused_where_it_is() {
    let base = strategy_text(Arch::X86_64);
    // In the main classes, a band inside the first test's.
    let inside = base.replace(
        "sizes = \"33..\"\nuse = \"large\"\n",
        "sizes = \"33..\"\nuse = \"large\"\n[[dispatch.guard]]\nalias = [1, 15]\nuse = \"band\"\n",
    );
    let (line, msg) = one_error(&inside);
    assert_eq!(line, line_of(&inside, "alias = [1, 15]"));
    assert!(
        msg.contains("can never be taken") && msg.contains("1..=63"),
        "{msg}"
    );
    // In the band's classes, a band outside it.
    let outside = base.replace("alias = [32, 63]", "alias = [100, 200]");
    let (line, msg) = one_error(&outside);
    assert_eq!(line, line_of(&outside, "alias = [100, 200]"));
    assert!(msg.contains("only copies with"), "{msg}");
    // A band that is not one.
    let wrong = base.replace("alias = [1, 63]", "alias = [63, 1]");
    let (line, msg) = one_error(&wrong);
    assert_eq!(line, line_of(&wrong, "alias = [63, 1]"));
    assert!(msg.contains("lo <= hi < 4096"), "{msg}");
}

#[test]
fn a_variant_sharing_the_dispatch_shares_its_alias_first() {
    let base = strategy_text(Arch::X86_64).replace(
        "[[dispatch]]\nsizes = \"0..=32\"",
        "[[variants]]\nname = \"fast\"\nwhen = [\"fsrm\"]\n\n[[variants]]\nname = \"other\"\ndefault = true\n\n[[dispatch]]\nsizes = \"0..=32\"",
    );
    let s = parse(Path::new("v.toml"), &base, None).unwrap();
    assert!(s.variants.iter().all(|v| v.alias_first == s.alias_first));
    assert!(s.alias_first.is_some());
    // One of its own beside no dispatch of its own is refused.
    let own = base.replace(
        "default = true\n",
        "default = true\n[variants.alias_first]\nalias = [1, 15]\n",
    );
    let e = parse(Path::new("v.toml"), &own, None).expect_err("refused");
    assert!(
        std::iter::once(&e)
            .chain(e.also.iter())
            .any(|x| x.message.contains("goes with the dispatch it sits beside")),
        "{e}"
    );
}

/// The method that runs a copy of `n` bytes at distance `x` mod 4096.
fn method_for(s: &Strategy, n: u64, x: u32) -> Method {
    let at = |classes: &[SizeClass]| -> Method {
        let c = class_of(classes, n).expect("every size has a class");
        c.guards
            .iter()
            .find(|g| match g.condition {
                Condition::Alias { lo, hi } => (lo..=hi).contains(&x),
                Condition::Aligned { .. } => false,
            })
            .map_or(c.method.clone(), |g| g.method.clone())
    };
    match &s.alias_first {
        Some(a) if n >= a.from && (a.lo..=a.hi).contains(&x) => at(&a.classes),
        _ => at(&s.classes),
    }
}

#[test]
fn the_tuners_alias_first_candidates_run_what_their_guards_ran() {
    let loop_of = |block| copygen::tools::tune::space::LoopShape {
        block,
        registers: 4,
        interleaved: false,
        align: None,
        prefetch: None,
        overlap_tail: true,
        block_tail: false,
    };
    let guarded = Candidate {
        short_max: 16,
        mid_max: 1024,
        bands: vec![
            BandGuard {
                lo: 1,
                hi: 15,
                from: 65,
                until: None,
                method: loop_of(64),
            },
            BandGuard {
                lo: 16,
                hi: 63,
                from: 128,
                until: Some(2048),
                method: loop_of(32),
            },
        ],
        ..Candidate::unguarded(16)
    };
    let first = Candidate {
        alias_first: true,
        ..guarded.clone()
    };
    let header = CandidateBase::new("t");
    // Both are valid strategy files.
    let a = parse(Path::new("a.toml"), &guarded.toml(&header), None).unwrap();
    let b = parse(Path::new("b.toml"), &first.toml(&header), None).unwrap();
    let band = b.alias_first.as_ref().expect("an alias-first band");
    // The hull of the bands, tested from the first guarded size.
    assert_eq!((band.lo, band.hi, band.from), (1, 63, 65));
    assert!(b.classes.iter().all(|c| c.guards.is_empty()));
    // Outside the band: the short class, the mid loop below the test and
    // from it (one class where the guards had cut three), rep movsb.
    let sizes: Vec<(u64, Option<u64>)> = b.classes.iter().map(|c| (c.lo, c.hi)).collect();
    assert_eq!(
        sizes,
        [
            (0, Some(16)),
            (17, Some(64)),
            (65, Some(1024)),
            (1025, None)
        ]
    );
    for n in [0, 1, 16, 17, 64, 65, 127, 128, 1024, 1025, 2047, 2048, 9000] {
        for x in [0, 1, 8, 15, 16, 40, 63, 64, 4095] {
            assert_eq!(
                method_for(&a, n, x).name,
                method_for(&b, n, x).name,
                "{n} bytes at distance {x}"
            );
        }
    }
    // A candidate without guards has nothing to test first.
    let plain = Candidate {
        alias_first: true,
        ..Candidate::unguarded(16)
    };
    let p = parse(Path::new("p.toml"), &plain.toml(&header), None).unwrap();
    assert!(p.alias_first.is_none());
}

/// The strategy above with the band tested from 33 bytes: the head/tail
/// copies below never pay for it.
fn from_33(arch: Arch) -> String {
    strategy_text(arch)
        .replace("alias = [1, 63]\n", "alias = [1, 63]\nfrom = 33\n")
        .replace(
            "[[alias_first.dispatch]]\nsizes = \"0..=32\"\nuse = \"small\"\n\n",
            "",
        )
}

#[test]
fn a_band_tested_from_a_size_leaves_the_smaller_copies_alone() {
    let text = from_33(Arch::X86_64);
    let s = parse(Path::new("from.toml"), &text, None).unwrap();
    assert_eq!(s.alias_first.as_ref().map(|a| a.from), Some(33));
    // The first branch is the size check of the head/tail class; the alias
    // test comes after it, on the way to the larger classes.
    let branches = branches(&s);
    assert!(
        matches!(branches[0], Op::JumpIfLen { imm: 32, .. }),
        "{branches:?}"
    );
    assert!(
        branches
            .iter()
            .any(|o| matches!(o, Op::JumpIfAlias { lo: 1, hi: 63, .. })),
        "{branches:?}"
    );
    let sums = jit::contract::run_suite(&jit::compile(&s).unwrap(), &s).unwrap();
    for sum in &sums {
        assert_eq!(sum.violations, 0, "{}: {:?}", sum.symbol, sum.examples);
    }
    let written = to_toml::render(&s).unwrap();
    assert!(
        written.contains("alias = [1, 63]\nfrom = 33\n"),
        "{written}"
    );
    // A guard below the test's size is still reachable; the band's
    // classes start at it; the test goes where a class starts.
    let guarded_below = text.replace(
        "sizes = \"0..=32\"\nuse = \"small\"\n",
        "sizes = \"0..=32\"\nuse = \"small\"\n[[dispatch.guard]]\nalias = [1, 15]\nuse = \"band\"\n",
    );
    parse(Path::new("below.toml"), &guarded_below, None).unwrap();
    let gap = text.replace(
        "sizes = \"33..\"\nuse = \"band\"",
        "sizes = \"40..\"\nuse = \"band\"",
    );
    let (line, msg) = one_error(&gap);
    assert_eq!(line, line_of(&gap, "sizes = \"40..\""));
    assert!(msg.contains("gap: sizes 33..=39"), "{msg}");
    let nowhere = text.replace("from = 33", "from = 40");
    let e = parse(Path::new("nowhere.toml"), &nowhere, None).expect_err("refused");
    assert_eq!(e.line, line_of(&nowhere, "from = 40"));
    assert!(
        e.message
            .contains("where a size class of the dispatch starts (0, 33)"),
        "{e}"
    );
}

/// The three files the Zen 3 results page times against each other run
/// the same method for every copy: only where the alias test sits differs.
#[test]
fn the_benchmarked_forms_run_the_same_copies() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/results/strategies");
    let load = |name: &str| {
        let path = dir.join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap();
        parse(&path, &text, None).unwrap()
    };
    let in_class = load("band-guards-in-class");
    for other in ["band-guards-alias-first", "band-guards-alias-first-33"] {
        let s = load(other);
        assert!(s.alias_first.is_some(), "{other}");
        for n in [0, 8, 16, 32, 33, 64, 1024, 1025, 4096] {
            for x in [0, 1, 8, 15, 16, 20, 31, 32, 100] {
                assert_eq!(
                    method_for(&in_class, n, x).name,
                    method_for(&s, n, x).name,
                    "{other}: {n} bytes at distance {x}"
                );
            }
        }
    }
}
