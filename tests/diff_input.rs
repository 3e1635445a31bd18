//! `copygen diff` on arguments that name nothing useful: exit 2 with a
//! reason, never a guess and never a panic.

use std::process::Command;

fn diff(old: &str, new: &str, cwd: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["diff", old, new])
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn an_empty_argument_is_not_the_current_folder() {
    let o = diff("", "WORKTREE", env!("CARGO_MANIFEST_DIR").as_ref());
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("empty argument"));
}

#[test]
fn a_folder_without_assembly_is_not_everything_removed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let o = diff("WORKTREE", "empty", dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no .S files"), "{stderr}");
}

#[test]
fn a_strategy_that_once_panicked_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let big = "name = \"t\"\ndescription = \"x\"\narch = \"x86_64\"\n\n[methods.bytes]\nkind = \"bytes\"\n\n\
               [[dispatch]]\nsizes = \"0..=3000000000\"\nuse = \"bytes\"\n\n\
               [[dispatch]]\nsizes = \"3000000001..\"\nuse = \"bytes\"\n";
    std::fs::write(dir.path().join("big.toml"), big).unwrap();
    let o = diff("big.toml", "big.toml", dir.path());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("big.toml:") && stderr.contains("dispatch[0].sizes"),
        "{stderr}"
    );
}
