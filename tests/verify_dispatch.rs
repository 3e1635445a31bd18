//! `copygen verify` on copygen's own standalone per-CPU files: the static
//! check resolves the entry's jump through its pointer (initializer and
//! every store), so the file is checked and run; a pointer that may hold
//! anything else keeps the jump unresolved and the file refused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn copygen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run copygen")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

const X64: &str = "emitted/x86_64/standalone/guarded-movsb.S";
const I386: &str = "emitted/i386/standalone/guarded-movsb-32.S";

#[test]
fn shipped_per_cpu_files_pass_the_static_check() {
    for (file, entry, variant) in [
        (
            X64,
            "guarded_movsb_from_user",
            "guarded_movsb__zen_from_user",
        ),
        (
            I386,
            "guarded_movsb_32_to_user",
            "guarded_movsb_32__loop_to_user",
        ),
    ] {
        let o = copygen(&["verify", "--static", file]);
        let t = text(&o);
        assert!(o.status.success(), "{file}:\n{t}");
        let line = t
            .lines()
            .find(|l| l.trim_start().starts_with(entry))
            .unwrap_or_else(|| panic!("{file}: no row for {entry}:\n{t}"));
        assert!(line.ends_with("ok"), "{file}: {line}");
        assert!(t.contains("dispatches to"), "{file}:\n{t}");
        assert!(t.contains(variant), "{file}:\n{t}");
        assert!(!t.contains("cannot tell where it goes"), "{file}:\n{t}");
    }
}

#[test]
fn shipped_per_cpu_files_run_under_verify() {
    for file in [X64, I386] {
        let o = copygen(&["verify", file]);
        let t = text(&o);
        assert!(o.status.success(), "{file}:\n{t}");
        assert!(t.contains(" 0 violations"), "{file}:\n{t}");
    }
}

/// `X64` with `from` replaced by `to` (first occurrence), in a temp dir.
fn mutated(dir: &Path, from: &str, to: &str) -> PathBuf {
    let src = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(X64)).unwrap();
    assert!(src.contains(from), "the shipped file has no `{from}`");
    let path = dir.join("guarded-movsb.S");
    std::fs::write(&path, src.replacen(from, to, 1)).unwrap();
    path
}

fn refused(path: &Path, why: &str) {
    let o = copygen(&["verify", "--static", path.to_str().unwrap()]);
    let t = text(&o);
    assert!(!o.status.success(), "accepted:\n{t}");
    let row = t
        .lines()
        .find(|l| l.trim_start().starts_with("guarded_movsb_from_user "))
        .unwrap_or_else(|| panic!("no row:\n{t}"));
    assert!(row.ends_with("FAIL"), "{row}\n{t}");
    assert!(t.contains(why), "expected `{why}`:\n{t}");
}

#[test]
fn a_store_from_an_unknown_register_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = mutated(
        dir.path(),
        "leaq\tguarded_movsb__zen_from_user(%rip), %rax",
        "movq\t%rdi, %rax",
    );
    refused(
        &p,
        "stores into the pointer a value that is not a known address",
    );
}

#[test]
fn a_store_of_an_absolute_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = mutated(
        dir.path(),
        "leaq\tguarded_movsb__zen_from_user(%rip), %rax",
        "movq\t$0x401000, %rax",
    );
    refused(
        &p,
        "stores into the pointer a value that is not a known address",
    );
}

#[test]
fn taking_the_pointers_address_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = mutated(
        dir.path(),
        "leaq\tguarded_movsb__zen_from_user(%rip), %rax",
        "leaq\tguarded_movsb__from_ptr(%rip), %rax",
    );
    refused(&p, "takes the address of");
}

#[test]
fn an_initializer_naming_a_function_that_makes_a_system_call_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "\t.text\n\t.globl\tgm_evil\n\t.type\tgm_evil, @function\ngm_evil:\n\tsyscall\n\tret\n\t.size\tgm_evil, . - gm_evil\n\n\t.pushsection .data";
    let p = mutated(dir.path(), "\t.pushsection .data", evil);
    let src = std::fs::read_to_string(&p).unwrap();
    std::fs::write(
        &p,
        src.replacen(".quad\t.Lguarded_movsb_from_resolve", ".quad\tgm_evil", 1),
    )
    .unwrap();
    refused(&p, "it dispatches to gm_evil, which fails its check");
}
