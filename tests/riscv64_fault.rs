//! RISC-V (rv64) under fault injection: every riscv64 preset keeps the
//! uaccess contract exactly under qemu-riscv64, and the harness catches a
//! riscv64 routine whose fixup claims too much.

use copygen::checks::faultinject::{self, check_tools, run_asm, EntryPoint};
use copygen::front::catalog::catalog;
use copygen::front::strategy::{Arch, Direction, Flavor, Precision, Strategy};

fn riscv_presets() -> Vec<Strategy> {
    let v: Vec<_> = catalog()
        .expect("catalog validates")
        .into_iter()
        .filter(|s| s.arch == Arch::Riscv64)
        .collect();
    assert!(v.len() >= 3, "the riscv64 presets are in the catalog");
    v
}

fn toolchain() {
    check_tools(Arch::Riscv64)
        .unwrap_or_else(|e| panic!("riscv64 toolchain (verify/install-deps): {e:#}"));
}

fn run_preset(name: &str) {
    toolchain();
    let s = riscv_presets()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("{name} is a preset"));
    assert_eq!(s.precision, Precision::Exact, "{name}: exact");
    let r = faultinject::run_strategy(&s).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    assert_eq!(r.routines.len(), faultinject::entries(&s).len());
    let printed = copygen::backend::file_functions(&s, Flavor::Standalone);
    for x in &r.routines {
        assert!(x.cases > 0, "{name} {}: no cases ran", x.symbol);
        assert_eq!(x.violations, 0, "{name} {}: {:#?}", x.symbol, r.details);
        assert_eq!(x.max_shortfall, 0, "{name} {}: exact", x.symbol);
        let entries = printed
            .iter()
            .find(|f| f.symbol == x.symbol || f.aliases.contains(&x.symbol))
            .map(|f| f.extable.len())
            .expect("printed");
        assert_eq!(x.extable_entries, entries, "{name} {}", x.symbol);
        assert!(entries > 0);
    }
}

#[test]
fn riscv_uaccess_keeps_the_contract_exactly() {
    run_preset("riscv-uaccess");
}

#[test]
fn riscv_word_loop_keeps_the_contract_exactly() {
    run_preset("riscv-word-loop");
}

#[test]
fn riscv_misaligned_fast_keeps_the_contract_exactly() {
    run_preset("riscv-misaligned-fast");
}

/// The shift-and-combine loop of `riscv-uaccess` with its pointers
/// advanced before the store instead of after it: a fault in the store
/// then claims 8 bytes it never stored. The harness must see it.
#[test]
fn a_shift_combine_fixup_that_claims_too_much_is_caught() {
    toolchain();
    let s = riscv_presets()
        .into_iter()
        .find(|s| s.name == "riscv-uaccess")
        .expect("preset");
    let text = copygen::output::render::render(&s, Flavor::Standalone);
    // The store of the first shift iteration, and the pointer updates after it.
    let store = "\tsd\ta7, 0(a0)\n\taddi\ta1, a1, 8\n\taddi\ta0, a0, 8\n\taddi\ta2, a2, -8\n";
    assert!(text.contains(store), "the printed shift loop:\n{text}");
    let wrong = text.replacen(
        store,
        "\taddi\ta1, a1, 8\n\taddi\ta0, a0, 8\n\taddi\ta2, a2, -8\n\tsd\ta7, -8(a0)\n",
        1,
    );
    let e = EntryPoint {
        symbol: "riscv_uaccess_to_user".into(),
        direction: Direction::ToUser,
        fixed: None,
        zero_tail: false,
        exact: true,
    };
    let r = run_asm(Arch::Riscv64, &wrong, std::slice::from_ref(&e))
        .unwrap_or_else(|err| panic!("{err:#}"));
    let x = r.routine("riscv_uaccess_to_user").expect("reported");
    assert!(x.violations > 0, "the harness missed the wrong fixup");
    // The same file unchanged is clean in the same role.
    let r = run_asm(Arch::Riscv64, &text, std::slice::from_ref(&e))
        .unwrap_or_else(|err| panic!("{err:#}"));
    assert_eq!(r.routine("riscv_uaccess_to_user").unwrap().violations, 0);
}
