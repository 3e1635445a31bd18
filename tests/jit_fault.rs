//! In-process fault injection (jit::contract) on the JIT-compiled catalog,
//! and proof that the checks fire: the same suite on deliberately broken
//! instruction lists must report the matching violations.

use std::path::Path;

use copygen::backend::x86::{Alu, Inst, Line, Reg};
use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::{Arch, Strategy};
use copygen::jit::contract::{check_routine, report, run_suite, suite, Harness, Summary};
use copygen::jit::{self, JitModule};
use copygen::lower::routine::Routine;

/// The suite's cases up to 100 bytes (every fault offset) on the general
/// (non-fixed) routines of `m`: enough for each broken list below.
fn general(m: &JitModule, s: &Strategy) -> Vec<Summary> {
    let mut h = Harness::new().unwrap();
    let cases: Vec<_> = suite(None).into_iter().filter(|c| c.n <= 100).collect();
    m.routines()
        .iter()
        .filter(|r| r.fixed().is_none())
        .map(|r| check_routine(&mut h, s, r, &cases))
        .collect()
}

fn mentions(sums: &[Summary], text: &str) -> bool {
    sums.iter()
        .any(|s| s.violations > 0 && s.examples.iter().any(|e| e.contains(text)))
}

#[test]
fn catalog_keeps_the_contract_under_faults() {
    let mut seen = 0;
    for s in catalog()
        .unwrap()
        .into_iter()
        .filter(|s| s.arch == Arch::X86_64)
    {
        let m = jit::compile(&s).unwrap();
        let sums = run_suite(&m, &s).unwrap();
        eprint!("{}", report(&s, &sums));
        for sum in &sums {
            assert_eq!(sum.violations, 0, "{}: {:?}", sum.symbol, sum.examples);
            // Every routine met real faults: the dense part alone has
            // 3 x (0 + 1 + ... + 300) of them.
            let min = if sum.symbol.ends_with("_user") {
                135_000
            } else {
                8
            };
            assert!(sum.cases >= min, "{}: only {} cases", sum.symbol, sum.cases);
        }
        seen += 1;
    }
    assert!(seen >= 5);
}

#[test]
fn a_user_access_without_an_entry_is_reported() {
    let s = crate::common::catalog_strategy("unrolled64");
    let m = jit::compile_edited(&s, |_, lines: &mut Vec<Line>| {
        // The byte loop's access: taken for every size below 8.
        let first = lines.iter_mut().find(|l| l.user.is_some()).unwrap();
        first.user = None;
    })
    .unwrap();
    let sums = general(&m, &s);
    assert!(mentions(&sums, "no exception-table entry"), "{sums:?}");
}

#[test]
fn a_fixup_that_skips_the_repair_is_reported() {
    let s = crate::common::catalog_strategy("unrolled64");
    // Every entry lands on the plain return of `len`: no advance, no retry.
    let m = jit::compile_edited(&s, |r: &Routine, lines: &mut Vec<Line>| {
        let done = format!(".L{}_fixup_done", r.tag);
        for l in lines.iter_mut() {
            if let Some(entry) = &mut l.user {
                entry.fixup = done.clone();
            }
        }
    })
    .unwrap();
    let sums = general(&m, &s);
    assert!(mentions(&sums, "exact precision, but copied"), "{sums:?}");
    assert!(sums.iter().all(|s| s.max_shortfall > 0));
}

#[test]
fn an_over_wide_store_is_reported() {
    let s = crate::common::catalog_strategy("unrolled64");
    // The byte loop stores 2 bytes for 1: the last one lands past the end.
    let m = jit::compile_edited(&s, |_, lines: &mut Vec<Line>| {
        for l in lines.iter_mut() {
            if let Inst::Store { width: w @ 1, .. } = &mut l.inst {
                *w = 2;
            }
        }
    })
    .unwrap();
    let sums = general(&m, &s);
    assert!(
        mentions(&sums, "wrote past the destination's end"),
        "{sums:?}"
    );
    assert!(mentions(&sums, "no fault, but returned"), "{sums:?}");
}

#[test]
fn a_nonzero_return_without_a_fault_is_reported() {
    let s = crate::common::catalog_strategy("rep-movsb");
    // `xor eax, eax` before `ret` removed: rax holds whatever rep movsb left.
    let m = jit::compile_edited(&s, |_, lines: &mut Vec<Line>| {
        lines.retain(|l| {
            !matches!(
                l.inst,
                Inst::AluReg {
                    op: Alu::Xor,
                    dst: Reg::Ax,
                    src: Reg::Ax,
                    ..
                }
            )
        });
    })
    .unwrap();
    let sums = general(&m, &s);
    assert!(
        mentions(&sums, "no fault, but returned") || mentions(&sums, "more than n"),
        "{sums:?}"
    );
}

#[test]
fn zero_tail_is_checked() {
    let text = r#"
name = "zeroing"
description = "byte loop that zeroes the rest of the kernel buffer on a fault"
arch = "x86_64"
directions = ["from_user"]
[fault]
precision = "exact"
zero_tail = true
[methods.b]
kind = "bytes"
[[dispatch]]
sizes = "0.."
use = "b"
"#;
    let s = parse::parse(Path::new("zeroing.toml"), text, None).unwrap();
    let good = jit::compile(&s).unwrap();
    assert!(general(&good, &s).iter().all(|x| x.violations == 0));
    let bad = jit::compile_edited(&s, |_, lines: &mut Vec<Line>| {
        lines.retain(|l| l.inst != Inst::RepStosb)
    })
    .unwrap();
    assert!(mentions(&general(&bad, &s), "zero_tail, but byte"));
}

#[test]
fn i386_is_encode_only() {
    let s = parse::parse(
        Path::new(&crate::common::catalog_strategy("fixed-size").source),
        &crate::common::catalog_strategy("fixed-size").text,
        Some(Arch::I386),
    )
    .unwrap();
    assert!(matches!(
        jit::compile(&s),
        Err(jit::JitError::NotExecutable(Arch::I386))
    ));
    let enc = jit::assemble(&s, copygen::front::strategy::Flavor::Standalone).unwrap();
    assert!(enc.iter().all(|e| !e.code.is_empty()));
}
