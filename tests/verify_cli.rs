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

    let victim = "\t_ASM_EXTABLE_UA(.Lto_unrolled_loop_store2, ";
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
