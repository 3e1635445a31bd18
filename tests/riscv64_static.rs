//! The static verifier on RISC-V (rv64, raki's decoding): every riscv64
//! preset passes in both flavours with its user accesses all found and
//! entried, and edits of the emitted text are caught at their source line:
//! a missing table entry, a system call, a trap, an indirect jump and a
//! write of a callee-saved register.

use crate::common;

use copygen::backend;
use copygen::checks::static_verify::{check_strategies, Options};
use copygen::front::catalog::catalog;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::output::render::render;

use common::static_check::{assert_caught, check_text, line_number};

fn presets() -> Vec<Strategy> {
    let v: Vec<_> = catalog()
        .unwrap()
        .into_iter()
        .filter(|s| s.arch == Arch::Riscv64)
        .collect();
    assert!(v.len() >= 3);
    v
}

#[test]
fn every_riscv64_preset_passes_and_its_user_accesses_are_found() {
    let strategies = presets();
    let reports = check_strategies(&strategies, &Options::default()).unwrap();
    assert_eq!(reports.len(), 2 * strategies.len());
    for (s, pair) in strategies.iter().zip(reports.chunks(2)) {
        for (r, flavor) in pair.iter().zip(Flavor::ALL) {
            assert!(r.passed(), "{} {flavor}:\n{r}", s.name);
            assert_eq!(r.arch, Arch::Riscv64);
            for (routine, _) in backend::functions(s, flavor) {
                let f = r
                    .functions
                    .iter()
                    .find(|f| f.name == routine.symbol)
                    .unwrap_or_else(|| panic!("{}: {} checked", s.name, routine.symbol));
                let n = routine.user_sites().len();
                assert!(n > 0);
                assert_eq!((f.user_accesses, f.entries), (n, n), "{}", f.name);
            }
        }
    }
}

fn word_loop() -> (String, String) {
    let s = presets()
        .into_iter()
        .find(|s| s.name == "riscv-word-loop")
        .unwrap();
    (
        render(&s, Flavor::Standalone),
        "riscv-word-loop.S".to_string(),
    )
}

/// `text` with the first `line` (exactly) replaced by `with`.
fn edit(text: &str, line: &str, with: &str) -> String {
    let needle = format!("\n{line}\n");
    assert!(text.contains(&needle), "no line {line:?}");
    text.replacen(&needle, &format!("\n{with}\n"), 1)
}

const FROM: &str = "riscv_word_loop_from_user";

#[test]
fn a_user_access_without_its_entry_is_caught() {
    let (text, file) = word_loop();
    let entry = text
        .lines()
        .find(|l| l.starts_with("\t.long\t.Lfrom_"))
        .expect("an entry of from_user")
        .to_string();
    let insn_label = entry
        .trim_start_matches("\t.long\t")
        .split(" - .")
        .next()
        .unwrap()
        .to_string();
    let broken = edit(&text, &entry, "");
    let r = check_text(&broken, &file, &Options::default());
    // The instruction after the label lost its entry.
    let labelled = broken
        .lines()
        .skip_while(|l| *l != format!("{insn_label}:"))
        .nth(1)
        .unwrap()
        .to_string();
    let line = line_number(&broken, &labelled);
    assert_caught(&r, FROM, "without an exception-table entry", line);
}

#[test]
fn ecall_ebreak_indirect_jumps_and_callee_saved_writes_are_refused() {
    let (text, file) = word_loop();
    let first_ret = "\tret";
    for (with, what) in [
        ("\tecall", "system call"),
        ("\tebreak", "software trap"),
        ("\tjr\ta5", "indirect jump"),
    ] {
        let broken = edit(&text, first_ret, with);
        let r = check_text(&broken, &file, &Options::default());
        assert_caught(&r, FROM, what, line_number(&broken, with));
    }
    let broken = edit(&text, first_ret, "\tli\ts1, 1\n\tret");
    let r = check_text(&broken, &file, &Options::default());
    let errs = common::static_check::errors(&r);
    assert!(
        errs.iter()
            .any(|(n, f)| n == FROM && f.message.contains("s0-s11 is not preserved")),
        "{r}"
    );
    // The text unedited passes.
    assert!(check_text(&text, &file, &Options::default()).passed());
}
