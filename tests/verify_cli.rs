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

/// A `.S` of a Linux tree (no copygen header) is refused with the command
/// that checks it as the tree builds it; one copygen wrote into the tree is
/// checked as always.
#[test]
fn a_kernel_trees_own_source_is_refused_with_the_command_that_checks_it() {
    let tree = tempfile::tempdir().unwrap();
    let t = tree.path();
    std::fs::write(
        t.join("Makefile"),
        "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n",
    )
    .unwrap();
    std::fs::write(t.join("Kbuild"), "").unwrap();
    let lib = t.join("arch/arm64/lib");
    std::fs::create_dir_all(&lib).unwrap();
    let source = lib.join("copy_from_user.S");
    std::fs::write(
        &source,
        "#include <linux/linkage.h>\n#include <asm/asm-uaccess.h>\nSYM_FUNC_START(__arch_copy_from_user)\n\tret\nSYM_FUNC_END(__arch_copy_from_user)\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["verify", "--static"])
        .arg(&source)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let t = std::fs::canonicalize(t).unwrap();
    for needle in [
        "a source of the Linux 6.12 tree".to_string(),
        format!(
            "make -C {} ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- defconfig prepare arch/arm64/lib/copy_from_user.o",
            t.display()
        ),
        format!(
            "copygen verify --static {}/arch/arm64/lib/copy_from_user.o",
            t.display()
        ),
    ] {
        assert!(err.contains(&needle), "`{needle}` not in {err}");
    }
    // copygen's own file in the same tree is checked.
    let s = catalog()
        .unwrap()
        .into_iter()
        .find(|s| s.name == "unrolled64")
        .unwrap();
    let ours = t.join("arch/x86/lib/copy_user_copygen.S");
    std::fs::create_dir_all(ours.parent().unwrap()).unwrap();
    std::fs::write(&ours, render(&s, Flavor::Linux)).unwrap();
    let (code, text) = verify_static(&ours);
    assert_eq!(code, 0, "{text}");
}

/// An alignment prologue that could not run is left out, so the static
/// check finds no unreachable code: under a guard that proves the pointer
/// aligned (dst to 8 for a dst or a both-pointer prologue to 4), and in a
/// class no length of which reaches `min_size`.
#[test]
fn an_alignment_prologue_that_cannot_run_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    for (arch, width) in [("x86_64", 8), ("i386", 4), ("armv6", 4)] {
        for pointer in ["dst", "both"] {
            let text = format!(
                "name = \"dead_align\"\ndescription = \"d\"\narch = \"{arch}\"\n\
                 [methods.loop]\nkind = \"unrolled\"\nwidth = {width}\nblock = {b}\nregisters = 2\n\
                 tail = \"bytes\"\nalign = {{ pointer = \"{pointer}\", to = 4, min_size = 64 }}\n\
                 [methods.bytes]\nkind = \"bytes\"\n\
                 [[dispatch]]\nsizes = \"0..=31\"\nuse = \"loop\"\n\
                 [[dispatch]]\nsizes = \"32..\"\nuse = \"bytes\"\n\
                 [[dispatch.guard]]\naligned = {{ pointer = \"dst\", to = 8 }}\nuse = \"loop\"\n",
                b = 2 * width,
            );
            let file = dir.path().join(format!("{arch}-{pointer}.toml"));
            std::fs::write(&file, &text).unwrap();
            let (code, report) = verify_static(&file);
            assert_eq!(code, 0, "{arch} {pointer}:\n{report}");
        }
    }
    // RISC-V's shift-and-combine aligns dst the same way (its test of a0's
    // low bits, `andi t5, a0, 7; beqz t5`, is followed since).
    let text = "name = \"dead_align\"\ndescription = \"d\"\narch = \"riscv64\"\n\
                [methods.loop]\nkind = \"shift_combine\"\nwidth = 8\n\
                align = { pointer = \"dst\", to = 8, min_size = 64 }\n\
                [methods.bytes]\nkind = \"bytes\"\n\
                [[dispatch]]\nsizes = \"0..=31\"\nuse = \"loop\"\n\
                [[dispatch]]\nsizes = \"32..\"\nuse = \"bytes\"\n\
                [[dispatch.guard]]\naligned = { pointer = \"dst\", to = 8 }\nuse = \"loop\"\n";
    let file = dir.path().join("riscv64-shift.toml");
    std::fs::write(&file, text).unwrap();
    let (code, report) = verify_static(&file);
    assert_eq!(code, 0, "riscv64 shift_combine:\n{report}");
}

#[test]
fn a_touch_after_a_computed_alignment_is_proven_and_fault_tested() {
    // A touch prefetch in a loop entered after an alignment prologue that
    // moves the pointers by a computed amount: x86's word step (`add
    // %rax, %rsi; sub %rax, %rdx`), or a byte loop whose class bound less
    // the steps to the boundary covers the touch. The static check used to
    // refuse both, so they were never fault-tested.
    let dir = tempfile::tempdir().unwrap();
    let word = "[methods.loop]\nkind = \"unrolled\"\nwidth = 1\nblock = 1\nregisters = 1\n\
                tail = \"bytes\"\nprefetch = { kind = \"touch\", distance = 32 }\n\
                align = { pointer = \"dst\", to = 4, min_size = 32, by = \"word\" }\n\
                [[dispatch]]\nsizes = \"0..\"\nuse = \"loop\"\n";
    let bytes = "[methods.loop]\nkind = \"unrolled\"\nwidth = 1\nblock = 18\nregisters = 3\n\
                 tail = \"bytes\"\nprefetch = { kind = \"touch\", distance = 16 }\n\
                 align = { pointer = \"PTR\", to = 32, min_size = 32 }\n\
                 [methods.bytes]\nkind = \"bytes\"\n\
                 [[dispatch]]\nsizes = \"0..=64\"\nuse = \"bytes\"\n\
                 [[dispatch]]\nsizes = \"65..\"\nuse = \"loop\"\n";
    let (dst, src) = (bytes.replace("PTR", "dst"), bytes.replace("PTR", "src"));
    let cases = [
        ("x86_64", word),
        ("i386", word),
        ("x86_64", &dst),
        ("i386", &dst),
        ("armv6", &dst),
        ("riscv64", &dst),
        ("x86_64", &src),
        ("armv6", &src),
        ("riscv64", &src),
    ];
    for (k, (arch, methods)) in cases.into_iter().enumerate() {
        let file = dir.path().join(format!("touch{k}.toml"));
        let text =
            format!("name = \"touch{k}\"\ndescription = \"t\"\narch = \"{arch}\"\n{methods}");
        std::fs::write(&file, text).unwrap();
        let (code, report) = copygen(&["verify", "--color", "never", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{arch}:\n{report}");
        assert!(
            report.contains(", 2 routines, ") && report.contains(" cases, 0 violations"),
            "{arch}:\n{report}"
        );
    }
}
