//! `copygen verify` on hostile and careless `.S` files: refused statically
//! and never run, located errors with exit 2, hand-written files without
//! `.size` read as objdump reads them, bounded assembly.

use std::process::Command;

fn copygen(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_system_call_is_refused_statically() {
    let (code, out, _) = copygen(&["verify", "--static", "tests/fixtures/hostile/execve.S"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("`syscall` is a system call"), "{out}");
    assert!(out.contains("(line 11)"), "{out}");
}

#[test]
fn code_the_static_check_failed_is_never_run() {
    let (code, out, _) = copygen(&[
        "verify",
        "--timeout",
        "2",
        "tests/fixtures/hostile/execve.S",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not run: the static check failed"), "{out}");
    assert!(out.contains("0 routines, 0 cases"), "{out}");
}

#[test]
fn a_size_past_the_section_is_an_error() {
    let (code, out, err) = copygen(&[
        "verify",
        "--static",
        "tests/fixtures/hostile/size-past-section.S",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(!out.contains(" ok"), "{out}");
    assert!(
        err.contains("tests/fixtures/hostile/size-past-section.S"),
        "{err}"
    );
    assert!(
        err.contains("function `hidden_from_user` (line 7)"),
        "{err}"
    );
    assert!(err.contains("leaves .text"), "{err}");
    // The temporary object is not what the message names.
    assert!(!err.contains("static.o"), "{err}");
}

#[test]
fn functions_without_size_extend_to_the_next_symbol() {
    let (code, out, err) = copygen(&[
        "verify",
        "--static",
        "tests/fixtures/hostile/nosize-bytecopy.S",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("plain_from_user"), "{out}");
    assert!(out.contains("plain_to_user"), "{out}");
    assert!(out.contains("12/12"), "{out}");
    let (code, out, err) = copygen(&[
        "verify",
        "--timeout",
        "20",
        "tests/fixtures/hostile/nosize-bytecopy.S",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 routines"), "{out}");
    assert!(out.contains("0 violations"), "{out}");
}

#[test]
fn an_unknown_function_exits_2_naming_the_file() {
    let (code, out, err) = copygen(&[
        "verify",
        "--static",
        "--function",
        "nosuch",
        "tests/fixtures/static/bytecopy.S",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("tests/fixtures/static/bytecopy.S: --function nosuch: no such function (functions: bytecopy_from_user, bytecopy_to_user)"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}

#[test]
fn a_rept_bomb_is_bounded() {
    let (code, out, err) = copygen(&["verify", "--static", "tests/fixtures/hostile/rept-bomb.S"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("rept-bomb.S: the assembler exceeded its limits"),
        "{err}"
    );
}

#[test]
fn timeout_and_memory_options_are_range_checked() {
    let (code, _, err) = copygen(&[
        "verify",
        "--timeout",
        "0",
        "tests/fixtures/static/bytecopy.S",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--timeout"), "{err}");
    let (code, _, err) = copygen(&[
        "verify",
        "--memory-limit",
        "1",
        "tests/fixtures/static/bytecopy.S",
    ]);
    assert_eq!(code, 2, "{err}");
}
