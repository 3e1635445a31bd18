//! Fault injection on the real CPU modes: every catalog strategy keeps the
//! uaccess contract, and the harness catches routines that do not.

use std::path::Path;
use std::process::Command;
use std::sync::Once;

use copygen::checks::faultinject::{self, check_tools, run_asm, EntryPoint, HarnessReport};
use copygen::front::catalog::{catalog, repo_root};
use copygen::front::strategy::{Arch, Direction, Flavor, Precision, RoutineShape};

/// The toolchain for `arch`, installed by verify/install-deps if missing
/// (when that script exists); otherwise fail naming the packages.
fn tools(arch: Arch) {
    static INSTALL: Once = Once::new();
    if check_tools(arch).is_ok() {
        return;
    }
    let script = repo_root().join("verify/install-deps");
    if script.is_file() {
        INSTALL.call_once(|| {
            let status = Command::new(&script).status();
            eprintln!("{}: {status:?}", script.display());
        });
    }
    if let Err(e) = check_tools(arch) {
        panic!("the {arch} fault-injection toolchain is missing: {e:#}");
    }
}

fn summary(name: &str, r: &HarnessReport) {
    for x in &r.routines {
        println!(
            "{name:<20} {:<34} cases {:>6} violations {:>5} largest shortfall {:>4} text {:>5} extable {:>3}",
            x.symbol, x.cases, x.violations, x.max_shortfall, x.text_bytes, x.extable_entries
        );
    }
    for d in &r.details {
        println!("  {d}");
    }
}

/// Every catalog strategy of `arch` keeps the contract; exact ones exactly.
fn catalog_clean(arch: Arch) {
    let strategies: Vec<_> = catalog()
        .expect("catalog validates")
        .into_iter()
        .filter(|s| s.arch == arch)
        .collect();
    if strategies.is_empty() {
        println!("no {arch} strategies in the catalog yet");
        return;
    }
    tools(arch);
    let mut failures = Vec::new();
    for s in &strategies {
        let r = faultinject::run_strategy(s).unwrap_or_else(|e| panic!("{e:#}"));
        summary(&s.name, &r);
        let expected = faultinject::entries(s).len();
        assert_eq!(
            r.routines.len(),
            expected,
            "{}: one result per entry point",
            s.name
        );
        let printed = copygen::backend::file_functions(s, Flavor::Standalone);
        for x in &r.routines {
            assert!(x.cases > 0, "{}: {} ran no cases", s.name, x.symbol);
            // The object's table, attributed by relocation, matches the printer's.
            // (A routine serving both directions is printed once, under
            // one name, and run in each role under that role's name.)
            let f = printed
                .iter()
                .find(|f| f.symbol == x.symbol)
                .or_else(|| match s.routine {
                    RoutineShape::Both => printed.first(),
                    RoutineShape::PerDirection => None,
                })
                .expect("printed");
            assert_eq!(
                x.extable_entries,
                f.extable.len(),
                "{}: {} entries in the object",
                s.name,
                x.symbol
            );
            if x.violations > 0 {
                failures.push(format!(
                    "{} {}: {} violations",
                    s.name, x.symbol, x.violations
                ));
            }
            if s.precision == Precision::Exact && x.max_shortfall > 0 {
                failures.push(format!(
                    "{} {}: exact, but shortfall {}",
                    s.name, x.symbol, x.max_shortfall
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "contract violations:\n{}",
        failures.join("\n")
    );
}

#[test]
fn catalog_x86_64_keeps_the_contract() {
    catalog_clean(Arch::X86_64);
}

#[test]
fn catalog_i386_keeps_the_contract() {
    catalog_clean(Arch::I386);
}

#[test]
fn catalog_armv6_keeps_the_contract() {
    catalog_clean(Arch::Armv6);
}

#[test]
fn catalog_aarch64_keeps_the_contract() {
    catalog_clean(Arch::Aarch64);
}

fn fixture(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn entry(symbol: &str, exact: bool) -> EntryPoint {
    let direction = if symbol.ends_with("_to_user") {
        Direction::ToUser
    } else {
        Direction::FromUser
    };
    EntryPoint {
        symbol: symbol.into(),
        direction,
        fixed: None,
        zero_tail: false,
        exact,
    }
}

/// Run one routine of a fixture alone (the harness prints at most
/// `MAX_DETAILS` violation lines in all).
fn run_one(arch: Arch, file: &str, e: EntryPoint) -> HarnessReport {
    tools(arch);
    let r = run_asm(arch, &fixture(file), std::slice::from_ref(&e))
        .unwrap_or_else(|err| panic!("{err:#}"));
    summary(file, &r);
    r
}

fn assert_caught(arch: Arch, file: &str, e: EntryPoint, kind: &str) {
    let symbol = e.symbol.clone();
    let r = run_one(arch, file, e);
    let x = r.routine(&symbol).expect("reported");
    assert!(x.violations > 0, "{symbol}: the harness missed the bug");
    assert!(
        r.details
            .iter()
            .any(|d| d.contains(&symbol) && d.contains(kind)),
        "{symbol}: expected a `{kind}` violation, got:\n{}",
        r.details.join("\n")
    );
}

#[test]
fn harness_catches_a_word_loop_without_byte_retry() {
    // Not exact by its own account, so the progress rule is what breaks.
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("word_no_retry_from_user", false),
        "no progress",
    );
}

#[test]
fn harness_catches_a_fixup_that_claims_too_much() {
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("overclaim_from_user", true),
        "claims",
    );
}

#[test]
fn harness_catches_a_store_past_n_on_the_kernel_side() {
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("overwrite_from_user", true),
        "wrote outside [to, to+n)",
    );
}

#[test]
fn harness_catches_an_unentried_user_store() {
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("overwrite_to_user", true),
        "has no __ex_table entry",
    );
}

#[test]
fn harness_catches_a_kernel_side_fault_with_an_entry() {
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("entried_kernel_store_from_user", true),
        "fault outside the user side's guard page",
    );
}

#[test]
fn harness_catches_a_fixup_loop() {
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("fault_loop_from_user", true),
        "fixup loop",
    );
}

#[test]
fn harness_catches_a_shifted_copy() {
    assert_caught(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("shifted_from_user", true),
        "source had",
    );
}

#[test]
fn harness_catches_an_exact_strategy_falling_short() {
    // The word loop copies whole words only: short by up to 7 bytes.
    let block = run_one(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("word_no_retry_from_user", false),
    );
    assert_eq!(block.routines[0].max_shortfall, 7);
    // The same cases break the progress rule either way; declared exact,
    // every fault past the first word is a violation too.
    let exact = run_one(
        Arch::X86_64,
        "x86_64/broken.S",
        entry("word_no_retry_from_user", true),
    );
    assert!(
        exact.routines[0].violations > block.routines[0].violations,
        "exact {} vs block {}",
        exact.routines[0].violations,
        block.routines[0].violations
    );
}

fn clean_bytes(arch: Arch, file: &str) {
    for symbol in ["bytes_from_user", "bytes_to_user"] {
        let r = run_one(arch, file, entry(symbol, true));
        let x = r.routine(symbol).expect("reported");
        assert_eq!(
            (x.violations, x.max_shortfall),
            (0, 0),
            "{symbol}: {:?}",
            r.details
        );
        assert!(x.cases > 10_000, "{symbol}: only {} cases", x.cases);
        assert_eq!(x.extable_entries, 1, "{symbol}: one user access, one entry");
        assert!(x.text_bytes > 0);
    }
}

#[test]
fn i386_harness_runs_a_correct_byte_loop() {
    clean_bytes(Arch::I386, "i386/bytes.S");
}

#[test]
fn i386_harness_catches_a_fixup_that_claims_too_much() {
    assert_caught(
        Arch::I386,
        "i386/broken.S",
        entry("overclaim_from_user", true),
        "claims",
    );
}

#[test]
fn armv6_harness_runs_a_correct_byte_loop() {
    clean_bytes(Arch::Armv6, "armv6/bytes.S");
}

#[test]
fn armv6_harness_catches_a_fixup_that_claims_too_much() {
    assert_caught(
        Arch::Armv6,
        "armv6/broken.S",
        entry("overclaim_from_user", true),
        "claims",
    );
}

#[test]
fn manifest_lists_fixed_size_entries() {
    let s = catalog()
        .unwrap()
        .into_iter()
        .find(|s| !s.fixed_sizes.is_empty())
        .expect("a fixed-size preset");
    let es = faultinject::entries(&s);
    let sym = format!("{}_from_user_8", s.symbol);
    let e = es
        .iter()
        .find(|e| e.symbol == sym)
        .expect("the 8-byte entry");
    assert_eq!(e.fixed, Some(8));
    assert!(faultinject::manifest(&es).contains(&format!("{{ \"{sym}\", {sym}, 0, 8, 0, 1 }}")));
}

#[test]
fn verify_command_runs_a_strategy_file() {
    tools(Arch::I386);
    let file = repo_root().join("generator/strategies/movsl.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .arg("verify")
        .arg(&file)
        .output()
        .expect("copygen runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The static report comes first (one line per function, verdict last)...
    let static_row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("movsl_from_user"))
        .expect("a static report row");
    assert!(static_row.trim_end().ends_with("ok"), "{static_row}");
    // ...then the fault-injection table.
    let row = stdout
        .lines()
        .find(|l| l.starts_with("movsl "))
        .expect("a row per routine");
    let cols: Vec<&str> = row.split_whitespace().collect();
    // strategy arch routine cases violations shortfall text extable
    assert_eq!(cols[..3], ["movsl", "i386", "movsl_from_user"]);
    assert!(cols[3].parse::<u64>().unwrap() > 10_000);
    assert_eq!(cols[4], "0");
    assert!(stdout.contains("1 strategies, 2 routines"), "{stdout}");
}

#[test]
fn verify_command_rejects_an_unknown_arch() {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["verify", "--arch", "mips"])
        .output()
        .expect("copygen runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown architecture `mips`"));
}
