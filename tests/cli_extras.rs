//! Shell completions, the manual page and `--version` with the revision.

use std::process::Command;

fn copygen(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_cover_the_subcommands() {
    let bash = copygen(&["completions", "bash"]);
    assert!(bash.contains("_copygen()"), "{bash}");
    for sub in ["emit", "diff", "verify", "bench", "jit"] {
        assert!(bash.contains(sub), "{sub} missing");
    }
    let zsh = copygen(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef copygen"), "{zsh}");
}

#[test]
fn the_manual_page_is_roff() {
    let man = copygen(&["man"]);
    assert!(man.contains(".TH copygen"), "{man}");
    assert!(man.contains("emit"), "{man}");
}

#[test]
fn version_names_the_git_revision_built() {
    let version = copygen(&["--version"]);
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let want = head.unwrap_or_else(|| "no git revision".into());
    assert_eq!(
        version.trim(),
        format!("copygen {} ({want})", env!("CARGO_PKG_VERSION"))
    );
}
