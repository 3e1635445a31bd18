//! Random valid riscv64 strategies (shift_combine among their methods),
//! run under qemu-riscv64 by the fault-injection harness: each keeps the
//! contract, exact ones exactly. A small fixed sample: each takes seconds.

use crate::common;

use std::path::Path;

use copygen::checks::faultinject;
use copygen::front::strategy::{Arch, MethodKind, Precision};
use proptest::strategy::{Strategy as _, ValueTree};
use proptest::test_runner::TestRunner;

#[test]
fn random_riscv64_strategies_keep_the_contract_under_qemu_riscv64() {
    let mut runner = TestRunner::deterministic();
    let mut failures = Vec::new();
    let mut shift_combines = 0;
    for i in 0..12 {
        let spec = common::spec().new_tree(&mut runner).unwrap().current();
        let text = common::toml_of(&spec, Arch::Riscv64)
            .replace("name = \"prop\"", &format!("name = \"rand{i}\""));
        let s = copygen::front::parse::parse(Path::new("random.toml"), &text, None)
            .unwrap_or_else(|e| panic!("the generator wrote an invalid strategy:\n{e}\n{text}"));
        shift_combines += s
            .classes
            .iter()
            .filter(|c| matches!(c.method.kind, MethodKind::ShiftCombine { .. }))
            .count();
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
    assert!(shift_combines > 0, "the sample has a shift_combine method");
}
