//! Property tests: random *valid* x86_64 strategies over every knob
//! (methods and their parameters, dispatch classes, guards, precision,
//! zero_tail, fixed sizes, linux options), written as TOML text, go through
//! `strategy::parse` → render (both flavours) → JIT; then the contract
//! (`jit::contract`) must hold on a handful of random cases each, and no
//! stage may panic. `COPYGEN_PROP_CASES` sets the number of strategies
//! (default 2000). Shrunk failures land in `jit_props.proptest-regressions`
//! and as explicit tests at the end of this file.

use std::path::Path;

use copygen::front::parse as strategy;
use copygen::front::strategy::{Arch, Flavor};
use copygen::jit;
use copygen::jit::contract::{Case, Harness, Kernel, Promise, MAX_SIZE};
use copygen::output::render;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

use crate::common;
use common::{spec, toml_of};

/// A random call: which routine, size, fault offset and kernel placement
/// (as fractions, so they shrink and fit any routine).
#[derive(Debug, Clone)]
struct CaseSpec {
    routine: usize,
    size: u32,
    large: bool,
    fault: Option<u32>,
    kernel: (bool, u32),
}

fn case_spec() -> impl Strategy<Value = CaseSpec> {
    (
        any::<usize>(),
        0u32..=300,
        proptest::bool::weighted(0.2),
        proptest::option::weighted(0.7, any::<u32>()),
        (any::<bool>(), 0u32..4096),
    )
        .prop_map(|(routine, size, large, fault, kernel)| CaseSpec {
            routine,
            size,
            large,
            fault,
            kernel,
        })
}

thread_local! {
    static HARNESS: std::cell::RefCell<Harness> = std::cell::RefCell::new(Harness::new().expect("guard-page buffers"));
}

/// Parse, render, assemble and compile `text`, then check `cases`: the
/// violations found (empty when the contract held), a panic included.
fn check_text(text: &str, cases: &[CaseSpec]) -> Vec<String> {
    quiet_panics();
    QUIET.with(|q| q.set(true));
    let result = std::panic::catch_unwind(|| run_text(text, cases));
    QUIET.with(|q| q.set(false));
    result.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        vec![format!("panicked: {msg}")]
    })
}

thread_local! {
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Shrinking re-runs a panicking input many times: print nothing for the
/// panics caught in `check_text` (their message is in the final report).
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                default(info)
            }
        }))
    });
}

fn run_text(text: &str, cases: &[CaseSpec]) -> Vec<String> {
    let s = strategy::parse(Path::new("prop.toml"), text, None)
        .unwrap_or_else(|e| panic!("the generator wrote an invalid strategy:\n{e}\n{text}"));
    for flavor in Flavor::ALL {
        let out = render::render(&s, flavor);
        assert!(
            out.contains(".note.GNU-stack"),
            "rendered {flavor} file is truncated"
        );
        jit::assemble(&s, flavor).unwrap_or_else(|e| panic!("assemble {flavor}: {e}"));
    }
    let m = jit::compile(&s).unwrap_or_else(|e| panic!("compile: {e}"));
    let routines = m.routines();
    let mut found = Vec::new();
    HARNESS.with(|h| {
        let mut h = h.borrow_mut();
        for c in cases {
            let r = &routines[c.routine % routines.len()];
            let n = match r.fixed() {
                Some(n) => n as usize,
                None if c.large => 301 + (c.size as usize * 41) % (MAX_SIZE - 300),
                None => c.size as usize,
            };
            let fault = c.fault.filter(|_| n > 0).map(|f| f as usize % n);
            let kernel = if c.kernel.0 {
                Kernel::Skew(c.kernel.1 as usize % 64)
            } else {
                Kernel::Alias(c.kernel.1 as usize)
            };
            let case = Case { n, fault, kernel };
            // SAFETY: r belongs to m, alive here.
            let out = unsafe { h.run(r, Promise::of(&s, r.direction()), case) };
            found.extend(
                out.violations
                    .into_iter()
                    .map(|v| format!("{}: {v}", r.symbol())),
            );
        }
    });
    found
}

fn prop_cases() -> u32 {
    std::env::var("COPYGEN_PROP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: prop_cases(),
        max_shrink_iters: 2000,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("tests/jit_props.proptest-regressions"))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_strategies_keep_the_contract(spec in spec(), cases in proptest::collection::vec(case_spec(), 6)) {
        let text = toml_of(&spec, Arch::X86_64);
        let violations = check_text(&text, &cases);
        prop_assert!(violations.is_empty(), "{}\n--- strategy ---\n{text}", violations.join("\n"));
    }
}

// ---- shrunk failures, kept as explicit tests ------------------------------

/// Constant-size entry points alternated scratch 0 and 1 even under the
/// x86_64 linux `rep_movs` convention, which has only rax: the printer
/// indexed past the scratch table and panicked (a fix in lower/mod.rs).
#[test]
fn regression_fixed_sizes_with_the_rep_movs_convention() {
    let text = r#"
name = "prop"
description = "random"
arch = "x86_64"
directions = ["from_user", "to_user"]
fixed_sizes = [9]

[fault]
precision = "block"

[linux]
convention = "rep_movs"

[methods.m0]
kind = "bytes"

[[dispatch]]
sizes = "0.."
use = "m0"
"#;
    let cases: Vec<CaseSpec> = (0..4)
        .map(|i| CaseSpec {
            routine: i,
            size: 9,
            large: false,
            fault: Some(i as u32 * 3),
            kernel: (true, 1),
        })
        .collect();
    assert_eq!(check_text(text, &cases), Vec::<String>::new());
}

/// i386's fourth scratch register (ebp) has no byte form: a width-1
/// method with 4 registers validated, then the printer panicked. Now the
/// validator says so, at the field; 3 registers work.
#[test]
fn regression_i386_byte_methods_use_byte_registers() {
    let text = |regs: u32| {
        format!(
            "name = \"b\"\ndescription = \"d\"\narch = \"i386\"\n\n[methods.s]\nkind = \"head_tail\"\n\
             width = 1\nregisters = {regs}\n\n[methods.b]\nkind = \"bytes\"\n\n[[dispatch]]\n\
             sizes = \"0..=8\"\nuse = \"s\"\n\n[[dispatch]]\nsizes = \"9..\"\nuse = \"b\"\n"
        )
    };
    let err = strategy::parse(Path::new("b.toml"), &text(4), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("b.toml:8:13")
            && err.contains("methods.s.registers")
            && err.contains("byte form"),
        "{err}"
    );
    let s = strategy::parse(Path::new("b.toml"), &text(3), None).unwrap();
    for flavor in Flavor::ALL {
        assert!(render::render(&s, flavor).contains("%bl"));
    }
}
