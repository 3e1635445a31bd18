//! The static verifier and fault injection agree on fixup mutants: every
//! mutant of an emitted standalone `.S` (tests/common/fixup_mutants.rs)
//! that fault injection catches, `copygen verify --static` catches too, on
//! every arch copygen emits and under both fault precisions. The table of
//! both verdicts goes to stderr; docs/verification.md holds a copy and
//! the command that prints it.

use std::time::Duration;

use copygen::checks::faultinject::{self, check_tools, run_asm_with, HarnessReport};
use copygen::checks::sandbox::Limits;
use copygen::checks::static_verify::{Options, Report, Severity};
use copygen::front::strategy::Arch;

use crate::common;

use common::fixup_mutants::{fixup_mutants, FixupMutant, Kind};
use common::static_check::{check_text, strategy};

/// (preset, the function whose fixups are mutated): one per arch and per
/// fault precision the arch has.
const PRESETS: &[(&str, &str)] = &[
    ("unrolled64", "unrolled64_to_user"),
    ("rep-movsb", "rep_movsb_from_user"),
    ("guarded-movsb-32", "guarded_movsb_32__erms_to_user"),
    ("intel-unrolled", "intel_unrolled_to_user"),
    ("ldm-stm", "ldm_stm_to_user"),
    ("a64-overlap", "a64_overlap_to_user"),
    ("riscv-misaligned-fast", "riscv_misaligned_fast_to_user"),
];

/// Why the static verifier cannot decide a fixup path that returns 0.
const RETURNS_0: &str = "undecidable: 0 is right where the byte retry exits with no \
    length left; that this exit is unreachable after a fault (the retry faults again at \
    the faulting byte: exact precision) is not modelled";

/// Mutants fault injection catches and the static verifier cannot
/// decide: (preset, mutant name, why). The test fails on any other.
const UNDECIDABLE: &[(&str, &str, &str)] = &[
    ("unrolled64", "`to_fixup_done` returns 0", RETURNS_0),
    ("rep-movsb", "`from_fixup_done` returns 0", RETURNS_0),
    (
        "guarded-movsb-32",
        "`erms_to_fixup_done` returns 0",
        RETURNS_0,
    ),
    ("intel-unrolled", "`to_fixup_done` returns 0", RETURNS_0),
    ("ldm-stm", "`to_fixup_done` returns 0", RETURNS_0),
    ("a64-overlap", "`to_fixup_done` returns 0", RETURNS_0),
    (
        "riscv-misaligned-fast",
        "`to_fixup_done` returns 0",
        RETURNS_0,
    ),
];

const ALIGNED: &str = "equivalent: the destination is aligned to the store's width \
    (proven), so a store faults at its first byte and the count is exact without a retry";

/// Mutants neither check catches, with why they keep the contract.
const EQUIVALENT: &[(&str, &str, &str)] = &[
    (
        "unrolled64",
        "no retry: `to_fixup_retry` is `to_fixup_done`",
        ALIGNED,
    ),
    (
        "unrolled64",
        "`to_fixup_56_then_retry` jumps to `to_fixup_done`",
        ALIGNED,
    ),
    (
        "ldm-stm",
        "`to_fixup_28_then_retry` jumps to `to_fixup_done`",
        ALIGNED,
    ),
    // (`andi t5, a0, 7; beqz t5` proves it: a branch of t5 against zero
    // tests a0's low bits.)
    (
        "riscv-misaligned-fast",
        "`to_fixup_56_then_retry` jumps to `to_fixup_done`",
        ALIGNED,
    ),
    (
        "rep-movsb",
        "no retry: `from_fixup_step` is `from_fixup_done`",
        "equivalent: `rep movsb` ends at the faulting byte with an exact count; the step \
         would fault again on that byte",
    ),
];

const NEVER_FIRST: &str = "the fixup serves only the store at +56 of a 16-byte-aligned \
    block, which never faults first (a page boundary there faults the store at +48): fault \
    injection never runs it; the verifier takes every user access as one that may fault";

/// Mutants only the static verifier catches, with why fault injection
/// does not.
const STATIC_ONLY: &[(&str, &str, &str)] = &[
    (
        "intel-unrolled",
        "`to_fixup_60_then_step` jumps to `to_fixup_done`",
        "equivalent: under block precision the step only makes progress, and a fault \
         there follows 60 stored bytes; the verifier asks for a byte step after any wide \
         access it does not prove aligned",
    ),
    (
        "riscv-misaligned-fast",
        "no retry: `to_fixup_retry` is `to_fixup_done`",
        "equivalent: every store is proven aligned but the overlapping tail store \
         (`sd a3, -8(t5)`, at the end of the buffer), which runs only after at least 8 \
         bytes were stored, so a fault there still reports progress; the verifier asks \
         for a byte retry after any wide access it does not prove aligned",
    ),
    (
        "a64-overlap",
        "`to_fixup_56_then_retry`: length +1",
        NEVER_FIRST,
    ),
    (
        "a64-overlap",
        "`to_fixup_56_then_retry`: length -1",
        NEVER_FIRST,
    ),
    (
        "a64-overlap",
        "`to_fixup_56_then_retry`: length +8",
        NEVER_FIRST,
    ),
    (
        "a64-overlap",
        "`to_fixup_56_then_retry`: length -8",
        NEVER_FIRST,
    ),
    (
        "a64-overlap",
        "`to_fixup_56_then_retry` jumps to `to_fixup_done`",
        NEVER_FIRST,
    ),
];

type Listed = &'static [(&'static str, &'static str, &'static str)];

/// The lists, by name: a mutant the two checks do not both catch is in
/// exactly the one its verdicts call for.
const LISTS: [(&str, Listed); 3] = [
    ("undecidable", UNDECIDABLE),
    ("equivalent", EQUIVALENT),
    ("static only", STATIC_ONLY),
];

/// The list `r` is in and why.
fn listed(r: &Row) -> Option<(&'static str, &'static str)> {
    LISTS.iter().find_map(|(list, l)| {
        l.iter()
            .find(|(p, n, _)| *p == r.preset && *n == r.name)
            .map(|(_, _, why)| (*list, *why))
    })
}

struct Row {
    preset: &'static str,
    arch: Arch,
    name: String,
    kind: &'static str,
    static_caught: Option<String>,
    fault_caught: Option<String>,
}

fn first_error(r: &Report) -> Option<String> {
    if r.passed() {
        return None;
    }
    Some(
        r.findings()
            .find(|(_, f)| f.severity == Severity::Error)
            .map(|(_, f)| f.message.clone())
            .unwrap_or_else(|| format!("{:?}", r.verdict())),
    )
}

fn fault_verdict(r: anyhow::Result<HarnessReport>) -> Option<String> {
    match r {
        Ok(r) if r.violations() == 0 => None,
        Ok(r) => Some(format!("{} violations", r.violations())),
        // The harness died (a fixup that runs wild): caught.
        Err(e) => Some(format!("{e:#}").lines().next().unwrap_or("").to_string()),
    }
}

fn yes(v: &Option<String>) -> &'static str {
    if v.is_some() {
        "caught"
    } else {
        "-"
    }
}

#[test]
fn every_fixup_mutant_fault_injection_catches_the_static_verifier_catches() {
    // A mutant that loops is killed after this long.
    let limits = Limits {
        timeout: Duration::from_secs(20),
        ..Limits::default()
    };
    let mut rows = Vec::new();
    for &(preset, function) in PRESETS {
        let s = strategy(preset);
        check_tools(s.arch).unwrap_or_else(|e| {
            panic!(
                "the {} fault-injection toolchain (verify/install-deps): {e:#}",
                s.arch
            )
        });
        let path = format!("emitted/{}/standalone/{preset}.S", s.arch);
        let text =
            std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&path))
                .unwrap_or_else(|e| panic!("{path}: {e}"));
        let entries: Vec<_> = faultinject::entries(&s)
            .into_iter()
            .filter(|e| e.symbol == function)
            .collect();
        assert_eq!(entries.len(), 1, "{preset}: {function} is an entry point");
        let file = format!("{preset}.S");
        // The emitted file itself passes the static check.
        let clean = check_text(&text, &file, &Options::default());
        assert!(clean.passed(), "{path}:\n{clean}");
        let mutants: Vec<FixupMutant> = fixup_mutants(s.arch, &text, function);
        assert!(mutants.len() >= 3, "{preset}: {} mutants", mutants.len());
        let mut names: Vec<&str> = mutants.iter().map(|m| m.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), mutants.len(), "{preset}: mutant names repeat");
        for m in mutants {
            // (A mutant that does not assemble panics here, so the harness
            // fails only on what the code does.)
            let r = check_text(&m.text, &file, &Options::default());
            let fault = fault_verdict(run_asm_with(s.arch, &m.text, &entries, &limits));
            rows.push(Row {
                preset,
                arch: s.arch,
                name: m.name,
                kind: m.kind.name(),
                static_caught: first_error(&r),
                fault_caught: fault,
            });
        }
    }

    for kind in [
        Kind::Swap,
        Kind::Offset,
        Kind::DroppedRetry,
        Kind::WrongReturn,
    ] {
        assert!(
            rows.iter().any(|r| r.kind == kind.name()),
            "no {} mutant",
            kind.name()
        );
    }

    let why = |r: &Row| listed(r).map(|(_, w)| w).unwrap_or("");
    let mut table = String::from(
        "| arch | preset | kind | mutant | static | fault injection | why not both |\n|---|---|---|---|---|---|---|\n",
    );
    for r in &rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.arch,
            r.preset,
            r.kind,
            r.name,
            yes(&r.static_caught),
            yes(&r.fault_caught),
            why(r)
        ));
    }
    eprintln!("{table}");
    for r in &rows {
        eprintln!(
            "{} {}: static: {}; fault injection: {}",
            r.preset,
            r.name,
            r.static_caught.as_deref().unwrap_or("passes"),
            r.fault_caught.as_deref().unwrap_or("passes")
        );
    }

    let mut bad = Vec::new();
    for r in &rows {
        let want = match (r.static_caught.is_some(), r.fault_caught.is_some()) {
            (true, true) => None,
            (false, true) => Some("undecidable"),
            (false, false) => Some("equivalent"),
            (true, false) => Some("static only"),
        };
        let has = listed(r).map(|(list, _)| list);
        if want != has {
            bad.push(format!(
                "{} {}: static {}, fault injection {}: belongs in {want:?}, listed in {has:?}",
                r.preset,
                r.name,
                yes(&r.static_caught),
                yes(&r.fault_caught),
            ));
        }
    }
    for (p, n, _) in UNDECIDABLE.iter().chain(EQUIVALENT).chain(STATIC_ONLY) {
        if !rows.iter().any(|r| r.preset == *p && r.name == *n) {
            bad.push(format!("{p} {n}: listed, but no such mutant"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
