//! `copygen kernel-patch --arch riscv64`: the patch `git am`s onto the
//! pristine Debian 6.1 and 6.12 trees, passes each tree's own
//! `scripts/checkpatch.pl --strict`, and leaves uaccess.S its entry points,
//! exports, `__clear_user` and (6.12) the vector path, removing only the
//! scalar copy's body, which the generated arch/riscv/lib/copygen_user.S
//! defines. Strategies the riscv call sites cannot use exit 2.
//! The trees come from /usr/src/linux-source-<v>.tar.xz (verify/install-deps
//! installs both); only the files the patch touches are extracted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::kernel_source::excerpt;

const AUTHOR: &str = "J. Random Hacker <jrh@example.org>";

/// The files the patch edits, and what checkpatch reads.
const EDITED: &[&str] = &[
    "arch/riscv/lib/uaccess.S",
    "arch/riscv/lib/Makefile",
    "MAINTAINERS",
];
const CHECKPATCH: &[&str] = &[
    "scripts/checkpatch.pl",
    "scripts/spelling.txt",
    "scripts/const_structs.checkpatch",
];

fn copygen(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .arg("kernel-patch")
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("copygen runs")
}

/// The patch for `preset` on `version` (not verified: the routine's checks
/// have their own tests; this file is about the glue).
fn patch(preset: &str, version: &str) -> String {
    let o = copygen(&[
        preset,
        "--arch",
        "riscv64",
        "--kernel",
        version,
        "--no-verify",
        "--author",
        AUTHOR,
    ]);
    assert!(
        o.status.success(),
        "{preset} {version}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8")
}

fn git(tree: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=Tree", "-c", "user.email=tree@example.org"])
        .args(args)
        .current_dir(tree)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `patch` applied with `git am` to a pristine excerpt of the tree of
/// `version`: the folder, and the pristine uaccess.S.
fn applied(version: &str, patch: &str) -> Option<(tempfile::TempDir, String)> {
    let tree = excerpt(version, EDITED)?;
    let pristine = std::fs::read_to_string(tree.path().join("arch/riscv/lib/uaccess.S")).unwrap();
    git(tree.path(), &["init", "-q"]);
    git(tree.path(), &["add", "-A"]);
    git(tree.path(), &["commit", "-qm", "pristine"]);
    // Outside the tree (git am would see it) and in a folder of its own:
    // the tree's parent is the shared temporary folder, where the other
    // version's test writes its patch at the same time.
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("copygen-riscv64.patch");
    std::fs::write(&file, patch).unwrap();
    git(tree.path(), &["am", "-q", file.to_str().unwrap()]);
    Some((tree, pristine))
}

/// The text from the line `from` to the line `to` (both included).
fn lines_between<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    let a = text
        .find(from)
        .unwrap_or_else(|| panic!("no `{from}` in\n{text}"));
    let b = text[a..]
        .find(to)
        .unwrap_or_else(|| panic!("no `{to}` after `{from}`"));
    &text[a..a + b + to.len()]
}

fn read(tree: &Path, path: &str) -> String {
    std::fs::read_to_string(tree.join(path)).unwrap()
}

#[test]
fn linux_6_1_entry_points_tail_call_the_generated_routine() {
    let p = patch("riscv-uaccess", "6.1");
    assert!(
        p.contains("\nSubject: [PATCH] riscv: uaccess: "),
        "{}",
        p.lines().find(|l| l.starts_with("Subject:")).unwrap_or("")
    );
    assert!(p.contains("+++ b/arch/riscv/lib/copygen_user.S\n"));
    let Some((tree, pristine)) = applied("6.1", &p) else {
        return;
    };
    let t = tree.path();
    let s = read(t, "arch/riscv/lib/uaccess.S");
    // Both entry points and their exports stay; their body is one tail call.
    assert!(s.contains(
        "ENTRY(__asm_copy_to_user)\nENTRY(__asm_copy_from_user)\n\t/*\n\t * copygen: the copy is copygen_copy_user (copygen_user.S, generated);\n\t * it sets and clears SR_SUM itself.\n\t */\n\ttail\tcopygen_copy_user\nENDPROC(__asm_copy_to_user)\nENDPROC(__asm_copy_from_user)\nEXPORT_SYMBOL(__asm_copy_to_user)\nEXPORT_SYMBOL(__asm_copy_from_user)\n"
    ), "{s}");
    // __clear_user and everything before the copy are untouched.
    let clear = lines_between(
        &pristine,
        "ENTRY(__clear_user)",
        "EXPORT_SYMBOL(__clear_user)\n",
    );
    assert!(s.ends_with(&pristine[pristine.find(clear).unwrap()..]));
    assert!(s.starts_with(&pristine[..pristine.find("ENTRY(__asm_copy_to_user)").unwrap()]));
    // Only __clear_user still touches user memory in uaccess.S.
    assert_eq!(s.matches("csrs CSR_STATUS, t6").count(), 1, "{s}");
    let g = read(t, "arch/riscv/lib/copygen_user.S");
    assert!(g.contains("SYM_FUNC_START(copygen_copy_user)\n"), "{g}");
    assert!(g.contains("_asm_extable"), "{g}");
    let mk = read(t, "arch/riscv/lib/Makefile");
    assert!(
        mk.contains("lib-$(CONFIG_MMU)\t+= uaccess.o\n# copygen: copygen_copy_user, behind __asm_copy_{to,from}_user (generated)\nlib-$(CONFIG_MMU)\t+= copygen_user.o\n"),
        "{mk}"
    );
    assert!(!read(t, "MAINTAINERS").contains("copygen"));
}

#[test]
fn linux_6_12_keeps_the_vector_path_and_generates_fallback_scalar_usercopy() {
    let p = patch("riscv-uaccess", "6.12");
    let Some((tree, pristine)) = applied("6.12", &p) else {
        return;
    };
    let t = tree.path();
    let s = read(t, "arch/riscv/lib/uaccess.S");
    // The vector prologue stays as it was; below the threshold (or without
    // Zve32x) it branches to the generated scalar routine, which is also
    // where the prologue falls through to.
    let vector = lines_between(
        &pristine,
        "SYM_FUNC_START(__asm_copy_to_user)\n",
        "#endif\n",
    );
    assert!(vector.contains("tail enter_vector_usercopy"));
    assert!(s.contains(&format!(
        "{vector}\t/*\n\t * copygen: the copy is fallback_scalar_usercopy (copygen_user.S, generated);\n\t * it sets and clears SR_SUM itself.\n\t */\n\ttail\tfallback_scalar_usercopy\nSYM_FUNC_END(__asm_copy_to_user)\nEXPORT_SYMBOL(__asm_copy_to_user)\nSYM_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)\nEXPORT_SYMBOL(__asm_copy_from_user)\n"
    )), "{s}");
    assert!(!s.contains("SYM_FUNC_START(fallback_scalar_usercopy)"));
    assert!(!s.contains("SYM_FUNC_END(fallback_scalar_usercopy)"));
    let clear = lines_between(
        &pristine,
        "SYM_FUNC_START(__clear_user)",
        "EXPORT_SYMBOL(__clear_user)\n",
    );
    assert!(s.ends_with(&pristine[pristine.find(clear).unwrap()..]));
    assert_eq!(s.matches("csrs CSR_STATUS, t6").count(), 1, "{s}");
    let g = read(t, "arch/riscv/lib/copygen_user.S");
    assert!(
        g.contains("SYM_FUNC_START(fallback_scalar_usercopy)\n"),
        "{g}"
    );
    let mk = read(t, "arch/riscv/lib/Makefile");
    assert!(
        mk.contains("lib-$(CONFIG_MMU)\t+= uaccess.o\n# copygen: fallback_scalar_usercopy, behind __asm_copy_{to,from}_user (generated)\nlib-$(CONFIG_MMU)\t+= copygen_user.o\n"),
        "{mk}"
    );
    // uaccess_vector.o is still built under CONFIG_RISCV_ISA_V.
    assert!(mk.contains("lib-$(CONFIG_RISCV_ISA_V)\t+= uaccess_vector.o\n"));
}

#[test]
fn both_versions_pass_their_trees_checkpatch_strict() {
    for version in ["6.1", "6.12"] {
        let Some(cp) = excerpt(version, CHECKPATCH) else {
            return;
        };
        for preset in ["riscv-uaccess", "riscv-word-loop"] {
            let p = patch(preset, version);
            let file = cp.path().join("p.patch");
            std::fs::write(&file, &p).unwrap();
            let o = Command::new("perl")
                .arg(cp.path().join("scripts/checkpatch.pl"))
                .args(["--no-tree", "--strict", "--no-color"])
                .arg(&file)
                .current_dir(cp.path())
                .output()
                .expect("perl runs");
            let report = String::from_utf8_lossy(&o.stdout);
            assert!(
                report.contains("total: 0 errors, 0 warnings, 0 checks"),
                "{preset} {version}:\n{report}"
            );
        }
    }
}

#[test]
fn a_per_direction_strategy_is_emitted_as_one_routine_for_both() {
    // riscv-word-loop has one routine per direction; the kernel has one
    // body behind both entry points (6.1) and one fallback for both (6.12).
    for (version, name) in [
        ("6.1", "copygen_copy_user"),
        ("6.12", "fallback_scalar_usercopy"),
    ] {
        let p = patch("riscv-word-loop", version);
        assert!(
            p.contains("The strategy is emitted as one routine serving both"),
            "{p}"
        );
        assert!(p.contains(&format!("+SYM_FUNC_START({name})\n")), "{p}");
        assert_eq!(p.matches("+SYM_FUNC_START(").count(), 1, "{p}");
    }
}

#[test]
fn unfit_riscv64_strategies_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.patch");
    let bytes = "[methods.b]\nkind = \"bytes\"\n";
    for (name, body, why) in [
        (
            "zeroing",
            format!("[fault]\nzero_tail = true\n{bytes}[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n"),
            "__asm_copy_from_user does not zero; copy_from_user zeroes the rest in C: drop zero_tail",
        ),
        (
            "per-cpu",
            format!(
                "{bytes}[[variants]]\nname = \"a\"\nwhen = [\"erms\"]\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n\
                 [[variants]]\nname = \"d\"\ndefault = true\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n"
            ),
            "per-CPU variants",
        ),
    ] {
        let file = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!("name = \"{name}\"\ndescription = \"d\"\narch = \"riscv64\"\n{body}"),
        )
        .unwrap();
        for version in ["6.1", "6.12"] {
            let o = copygen(&[
                file.to_str().unwrap(),
                "--kernel",
                version,
                "--no-verify",
                "--author",
                AUTHOR,
                "-o",
                out.to_str().unwrap(),
            ]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} {version}: {err}");
            assert!(err.contains(why), "{name} {version}: {err}");
            assert!(!out.exists());
        }
    }
}
