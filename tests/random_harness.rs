//! Random valid strategies for i386, ARMv6 and AArch64, run on their real CPU modes
//! by the fault-injection harness (the JIT property test covers x86_64
//! in-process; these architectures only run assembled). A small fixed
//! sample per run: each strategy takes seconds under gcc -m32 or qemu.

use crate::common;

use std::path::Path;

use copygen::checks::faultinject;
use copygen::front::strategy::{Arch, Precision};
use proptest::strategy::{Strategy as _, ValueTree};
use proptest::test_runner::TestRunner;

fn check(arch: Arch, count: usize) {
    let mut runner = TestRunner::deterministic();
    let mut failures = Vec::new();
    for i in 0..count {
        let spec = common::spec().new_tree(&mut runner).unwrap().current();
        let text =
            common::toml_of(&spec, arch).replace("name = \"prop\"", &format!("name = \"rand{i}\""));
        let s = copygen::front::parse::parse(Path::new("random.toml"), &text, None)
            .unwrap_or_else(|e| panic!("the generator wrote an invalid strategy:\n{e}\n{text}"));
        let r = faultinject::run_strategy(&s).unwrap_or_else(|e| panic!("{e:#}\n{text}"));
        for x in &r.routines {
            let bad_shortfall = s.precision == Precision::Exact && x.max_shortfall > 0;
            if x.violations > 0 || bad_shortfall || x.cases == 0 {
                failures.push(format!(
                    "{}: {} violations, shortfall {}\n{:?}\n{text}",
                    x.symbol, x.violations, x.max_shortfall, r.details
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn random_i386_strategies_keep_the_contract_natively() {
    check(Arch::I386, 6);
}

#[test]
fn random_armv6_strategies_keep_the_contract_on_an_arm1176() {
    check(Arch::Armv6, 10);
}

#[test]
fn random_aarch64_strategies_keep_the_contract_under_qemu_aarch64() {
    check(Arch::Aarch64, 10);
}
