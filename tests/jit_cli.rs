//! `copygen jit FILE`: the per-routine summary and the exit codes
//! (0 clean, 1 violations, 2 bad strategy or an arch that cannot run).

use std::process::Command;

use copygen::front::catalog::repo_root;

fn copygen(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
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
fn a_preset_runs_clean_with_a_summary_per_routine() {
    let (code, out, err) = copygen(&["jit", "generator/strategies/rep-movsb.toml"]);
    assert_eq!(code, 0, "{out}{err}");
    for routine in ["rep_movsb_from_user", "rep_movsb_to_user"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(routine))
            .unwrap_or_else(|| panic!("{out}"));
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert!(cols[1].parse::<usize>().unwrap() > 100_000, "{line}");
        assert_eq!(cols[2], "0", "violations: {line}");
    }
}

#[test]
fn a_bad_strategy_exits_2_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(&f, "name = \"x\"\ndescription = \"d\"\narch = \"x86_64\"\n[[dispatch]]\nsizes = \"0..\"\nuse = \"nope\"\n").unwrap();
    let (code, _, err) = copygen(&["jit", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.toml:6") && err.contains("dispatch[0].use"),
        "{err}"
    );
}

#[test]
fn i386_is_refused_with_exit_2() {
    let (code, out, err) = copygen(&[
        "jit",
        "generator/strategies/fixed-size.toml",
        "--arch",
        "i386",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.starts_with("error: --arch i386: "), "{err}");
    assert!(err.contains("encode-only"), "{err}");
    assert!(out.is_empty(), "{out}");
}

/// A strategy the JIT cannot run is refused at its `arch` line, before
/// any strategy given before it runs.
#[test]
fn a_strategy_for_another_arch_is_refused_at_its_arch_before_any_runs() {
    let (code, out, err) = copygen(&[
        "jit",
        "generator/strategies/rep-movsb.toml",
        "generator/strategies/ldm-stm.toml",
    ]);
    assert_eq!(code, 2, "{err}");
    let line = crate::common::source_lines::line_starting_with(
        "generator/strategies/ldm-stm.toml",
        "arch = ",
    );
    assert!(
        err.starts_with(&format!(
            "generator/strategies/ldm-stm.toml:{line}:8: error in `arch`: the JIT runs x86_64 code only; armv6 is encode-only"
        )),
        "{err}"
    );
    assert!(out.is_empty(), "rep-movsb ran first: {out}");
}
