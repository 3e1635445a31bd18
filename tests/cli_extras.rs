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

/// What `copygen` prints, its standard error and its exit code.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_subcommand_has_its_manual_page() {
    let top = copygen(&["man"]);
    for sub in [
        "emit",
        "list",
        "bench",
        "verify",
        "diff",
        "kernel-patch",
        "tune",
        "jit",
        "record",
    ] {
        // The command's page refers to copygen-SUB(1); that page exists.
        assert!(
            top.contains(&format!("copygen\\-{}(1)", sub.replace('-', "\\-"))),
            "{sub}"
        );
        let page = copygen(&["man", sub]);
        assert!(
            page.starts_with(&format!(
                ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n.TH copygen-{sub} 1"
            )),
            "{sub}: {}",
            &page[..page.len().min(200)]
        );
        assert!(page.contains(".SH OPTIONS"), "{sub}");
    }
    let (code, _, err) = run(&["man", "nope"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("`nope` is not a copygen subcommand (emit, list,"),
        "{err}"
    );
}

#[test]
fn arch_help_lists_every_architecture_from_the_table() {
    let all = copygen::front::strategy::Arch::ALL
        .map(|a| a.name())
        .join(", ");
    assert!(all.contains("riscv64"));
    for sub in ["emit", "diff", "kernel-patch", "verify"] {
        let help = copygen(&[sub, "--help"]);
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(&format!("({all})")), "{sub}: {help}");
    }
    let (code, _, err) = run(&["emit", "--arch", "mips"]);
    assert_eq!(code, Some(2));
    assert!(err.contains(&format!("copygen targets {all}")), "{err}");
}

#[test]
fn messages_name_commands_not_internal_functions() {
    let (code, _, err) = run(&["jit", "arm64-template"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(!err.contains("jit::"), "{err}");
    assert!(err.contains("`copygen verify --arch aarch64`"), "{err}");
}

#[test]
fn completions_offer_catalog_names_and_man_pages() {
    let bash = copygen(&["completions", "bash"]);
    for name in ["unrolled64", "guarded-movsb", "arm64-template"] {
        assert!(bash.contains(name), "{name} missing");
    }
    assert!(bash.contains("kernel-patch"));
}

#[test]
fn color_is_a_global_option_and_diff_keeps_no_color() {
    for sub in [
        "emit",
        "list",
        "bench",
        "diff",
        "kernel-patch",
        "tune",
        "record",
    ] {
        let help = copygen(&[sub, "--help"]);
        assert!(help.contains("--color <WHEN>"), "{sub}: {help}");
    }
    let (code, _, err) = run(&["list", "--color", "sometimes"]);
    assert_eq!(code, Some(2), "{err}");
    // Never colours into a pipe, and never with --color never.
    let plain = copygen(&[
        "diff",
        "--color",
        "always",
        "generator/strategies/unrolled64.toml",
        "generator/strategies/unrolled64.toml",
    ]);
    let never = copygen(&[
        "diff",
        "--color",
        "never",
        "generator/strategies/unrolled64.toml",
        "generator/strategies/unrolled64.toml",
    ]);
    assert!(!never.contains('\u{1b}'), "{never}");
    assert!(plain.len() >= never.len());
}

#[test]
fn bench_json_on_stdout_is_json_alone() {
    let (code, out, err) = run(&[
        "bench",
        "rep_movsb",
        "--sizes",
        "8,64",
        "--repeats",
        "1",
        "--json",
        "-",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(v.get("benchmarks").is_some(), "{out}");
    // The table went to standard error instead.
    assert!(err.contains("rep_movsb"), "{err}");
}
