//! `copygen verify --static` on files from outside the catalog: a clean
//! routine passes, the same routine with one exception-table entry removed
//! fails with exit 1 and names the unprotected instruction.

use std::process::Command;

use copygen::front::catalog::catalog;
use copygen::front::strategy::Flavor;
use copygen::output::render::render;

fn verify_static(path: &std::path::Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["verify", "--static"])
        .arg(path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_removed_entry_fails_verify_static() {
    let s = catalog()
        .unwrap()
        .into_iter()
        .find(|s| s.name == "unrolled64")
        .unwrap();
    let text = render(&s, Flavor::Linux);
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("unrolled64.S");
    std::fs::write(&good, &text).unwrap();
    let (code, report) = verify_static(&good);
    assert_eq!(code, 0, "{report}");

    let victim = "\tCOPYGEN_EXTABLE(.Lto_unrolled_loop_store2, ";
    assert!(text.contains(victim));
    let mutant: String = text
        .lines()
        .filter(|l| !l.starts_with(victim))
        .map(|l| format!("{l}\n"))
        .collect();
    let bad = dir.path().join("mutant.S");
    std::fs::write(&bad, mutant).unwrap();
    let (code, report) = verify_static(&bad);
    assert_eq!(code, 1, "{report}");
    assert!(
        report.contains("without an exception-table entry") && report.contains("%rdi"),
        "{report}"
    );
}

#[test]
fn static_options_need_static() {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["verify", "--convention", "c"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

fn copygen(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn verify_fault_injects_a_hand_written_assembly_file() {
    let (code, out) = copygen(&["verify", "tests/fixtures/static/bytecopy.S"]);
    assert_eq!(code, 0, "{out}");
    // Static table, then the fault-injection rows of both routines.
    assert!(out.contains("bytecopy_from_user"), "{out}");
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("bytecopy.S "))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(out.contains(" 0 violations"), "{out}");

    // The same routine returning 0 after a fault claims bytes it never
    // copied: fault injection (not the static check) catches it.
    let text = std::fs::read_to_string("tests/fixtures/static/bytecopy.S").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("liar.S");
    let lie = text.replacen(
        "4:\tmovq\t%rdx, %rax\n\tsubq\t%rcx, %rax\n",
        "4:\txorl\t%eax, %eax\n",
        1,
    );
    assert_ne!(lie, text, "fixture changed: update the mutation");
    std::fs::write(&bad, lie).unwrap();
    let (code, out) = copygen(&["verify", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(!out.contains(" 0 violations"), "{out}");
}

#[test]
fn jit_emit_and_verify_take_catalog_names_and_several_inputs() {
    let (code, out) = copygen(&["jit", "rep-movsb", "unrolled64"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("rep_movsb_from_user") && out.contains("unrolled64_to_user"),
        "{out}"
    );
    let (code, out) = copygen(&["emit", "movsl", "--flavor", "standalone"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("movsl_from_user:"), "{out}");
    let (code, out) = copygen(&["verify", "--static", "word-loop"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("word_loop_to_user"), "{out}");
    let (code, out) = copygen(&["jit", "no-such-strategy"]);
    assert_eq!(code, 2, "{out}");
}
