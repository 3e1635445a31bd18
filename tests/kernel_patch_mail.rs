//! `copygen kernel-patch` as a mail a kernel developer sends: author and
//! `Signed-off-by:` from options or git config (validated), the figures in
//! the commit message, the target tree's `scripts/checkpatch.pl --strict`
//! clean, and `git am` applying it to a pristine tree with the author and
//! trailers intact. The tree's files come from
//! /usr/src/linux-source-<v>.tar.xz (verify/install-deps installs both).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use crate::common::kernel_source::excerpt;

/// copygen with git config giving no identity (no global or system
/// config, run outside any repository) unless `who` is `Some`.
fn copygen(who: Option<(&str, &str)>, dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_copygen"));
    c.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", dir.parent().unwrap_or(dir))
        .env_remove("GIT_DIR");
    match who {
        Some((n, e)) => {
            c.env("GIT_CONFIG_COUNT", "2")
                .env("GIT_CONFIG_KEY_0", "user.name")
                .env("GIT_CONFIG_VALUE_0", n)
                .env("GIT_CONFIG_KEY_1", "user.email")
                .env("GIT_CONFIG_VALUE_1", e);
        }
        None => {
            c.env("GIT_CONFIG_COUNT", "0");
        }
    }
    c
}

fn run(mut c: Command, args: &[&str]) -> Output {
    c.arg("kernel-patch")
        .args(args)
        .output()
        .expect("copygen runs")
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// `kernel-patch ARGS --no-verify` by A B, which must succeed: the patch.
fn unverified(dir: &Path, args: &[&str]) -> String {
    let mut a = args.to_vec();
    a.extend(["--no-verify", "--author", "A B <ab@example.org>"]);
    ok(run(copygen(None, dir), &a))
}

fn checkpatch() -> Option<&'static Path> {
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    DIR.get_or_init(|| {
        excerpt(
            "6.12",
            &[
                "scripts/checkpatch.pl",
                "scripts/spelling.txt",
                "scripts/const_structs.checkpatch",
            ],
        )
    })
    .as_ref()
    .map(|d| d.path())
}

/// Figures as `copygen bench` prints them (a size table and an offset
/// table), with a header line too long for the commit message.
const FIGURES: &str = "\
TSC ticks per call (TSC: constant 2.60 GHz reference clock, not core cycles): median of 15 rounds, hot
bytes  rep_movsb  guarded-movsb  ratio
0           26.0           7.0   0.27
64          28.0          12.0   0.43

offset  rep_movsb  guarded-movsb  ratio
0x00       180.0         180.0   1.00
0x08       900.0         120.0   0.13
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn every_preset_passes_checkpatch_strict() {
    let Some(cp) = checkpatch() else { return };
    let dir = tempfile::tempdir().unwrap();
    let figures = write(dir.path(), "figures.txt", FIGURES);
    for (args, with_figures) in [
        (
            &["movs-alternative", "--kernel", "6.12", "--kunit"][..],
            false,
        ),
        (&["unrolled64", "--kernel", "6.1"][..], false),
        (&["movsl", "--kernel", "6.1"][..], false),
        (&["ldm-stm", "--kernel", "6.1"][..], false),
        (&["a64-overlap", "--kernel", "6.12", "--kunit"][..], false),
        (
            &["arm64-template", "--kernel", "6.12", "--kunit"][..],
            false,
        ),
        (&["guarded-movsb", "--kernel", "6.12", "--kunit"][..], true),
    ] {
        let mut a: Vec<&str> = args.to_vec();
        a.extend([
            "--no-verify",
            "--author",
            "J. Random Hacker <jrh@example.org>",
        ]);
        if with_figures {
            a.extend(["--figures", figures.to_str().unwrap()]);
        }
        let p = ok(run(copygen(None, dir.path()), &a));
        let file = write(dir.path(), "p.patch", &p);
        let o = Command::new("perl")
            .arg(cp.join("scripts/checkpatch.pl"))
            .args(["--no-tree", "--strict", "--no-color"])
            .arg(&file)
            .current_dir(cp)
            .output()
            .expect("perl runs");
        let report = String::from_utf8_lossy(&o.stdout);
        assert!(
            report.contains("total: 0 errors, 0 warnings, 0 checks"),
            "{args:?}:\n{report}"
        );
    }
}

#[test]
fn git_am_applies_it_with_author_and_sign_offs() {
    let Some(tree) = excerpt(
        "6.12",
        &[
            "arch/x86/include/asm/uaccess_64.h",
            "arch/x86/lib/Makefile",
            "tools/objtool/check.c",
            "MAINTAINERS",
        ],
    ) else {
        return;
    };
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=Tree", "-c", "user.email=tree@example.org"])
            .args(args)
            .current_dir(tree.path())
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
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "pristine"]);
    let dir = tempfile::tempdir().unwrap();
    let figures = write(dir.path(), "figures.txt", FIGURES);
    let p = ok(run(
        copygen(Some(("Jörg Rödel", "joro@example.org")), dir.path()),
        &[
            "guarded-movsb",
            "--kernel",
            "6.12",
            "--no-verify",
            "--signed-off-by",
            "Jörg Rödel <joro@example.org>",
            "--signed-off-by",
            "A. Maintainer <am@example.net>",
            "--figures",
            figures.to_str().unwrap(),
        ],
    ));
    assert!(p.contains("\nFrom: =?UTF-8?q?J=C3=B6rg_R=C3=B6del?= <joro@example.org>\n"));
    let file = write(dir.path(), "p.patch", &p);
    git(&["am", "-q", file.to_str().unwrap()]);
    let log = git(&["log", "-1", "--format=%an%n%ae%n%s%n%B"]);
    let mut lines = log.lines();
    assert_eq!(lines.next(), Some("Jörg Rödel"));
    assert_eq!(lines.next(), Some("joro@example.org"));
    assert_eq!(
        lines.next(),
        Some("x86/uaccess: Copy user memory with 5 per-CPU variants")
    );
    assert!(log.ends_with(
        "\nSigned-off-by: Jörg Rödel <joro@example.org>\nSigned-off-by: A. Maintainer <am@example.net>\n\n"
    ) || log.ends_with(
        "\nSigned-off-by: Jörg Rödel <joro@example.org>\nSigned-off-by: A. Maintainer <am@example.net>\n"
    ), "{log}");
    // The tables as laid out (they fit: unchanged), indented under the
    // CPU; the long header line wrapped, indented too.
    let tables: String = FIGURES
        .lines()
        .skip(1)
        .map(|l| {
            if l.is_empty() {
                "\n".into()
            } else {
                format!("  {l}\n")
            }
        })
        .collect();
    assert!(log.contains(&tables), "{log}");
    assert!(log.contains("Measured with copygen bench (TSC ticks per call) on\n"));
    assert!(
        log.contains(
            "\n  TSC ticks per call (TSC: constant 2.60 GHz reference clock, not core\n  cycles)"
        ),
        "{log}"
    );
    assert!(!log.contains("No measurements are included"));
    assert!(log.lines().all(|l| l.chars().count() <= 75), "{log}");
    // The generated file is in the tree; MAINTAINERS is as it was (the
    // X86 ARCHITECTURE entry covers arch/x86/).
    assert!(tree.path().join("arch/x86/lib/copygen_user_64.S").is_file());
    assert_eq!(git(&["status", "--porcelain"]), "");
    assert_eq!(git(&["diff", "--stat", "HEAD~1", "--", "MAINTAINERS"]), "");
}

#[test]
fn without_figures_the_message_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let p = ok(run(
        copygen(Some(("A B", "ab@example.org")), dir.path()),
        &["unrolled64", "--kernel", "6.1", "--no-verify"],
    ));
    assert!(p.contains("\nFrom: A B <ab@example.org>\n"));
    assert!(p.contains("\nSigned-off-by: A B <ab@example.org>\n---\n"));
    assert!(p.contains("No measurements are included (kernel-patch was run without --figures)."));
    assert!(!p.contains("copygen@localhost"));
}

#[test]
fn bad_identities_and_figures_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.patch");
    let tab = write(dir.path(), "tab.txt", "a\nb\tc\n");
    // A right-to-left override: the line would read differently from what
    // it holds.
    let bidi = write(dir.path(), "bidi.txt", "a  b\n1.00x  \u{202e}0.98x\n");
    let zero_width = write(dir.path(), "zw.txt", "a\n\nb\u{200b}c\n");
    let o = |who: Option<(&str, &str)>, extra: &[&str]| {
        let mut a = vec!["unrolled64", "--kernel", "6.1", "--no-verify", "-o"];
        a.push(out.to_str().unwrap());
        a.extend(extra);
        run(copygen(who, dir.path()), &a)
    };
    for (who, extra, why) in [
        (
            None,
            vec![],
            "set `git config user.name` and `git config user.email`",
        ),
        (
            Some(("A", "not an address")),
            vec![],
            "git config user.name / user.email",
        ),
        (
            Some(("A\nBcc: x@y.z", "a@b.c")),
            vec![],
            "which a mail header cannot carry",
        ),
        (None, vec!["--author", "A <a@b.c>\nBcc: x@y.z"], "--author"),
        (
            None,
            vec!["--author", "A\rB <a@b.c>"],
            "which a mail header cannot carry",
        ),
        (None, vec!["--author", "a@b.c"], "is not `Name <addr@host>`"),
        (
            None,
            vec!["--author", "A <a@b.c>", "--signed-off-by", "B <b@c.d>"],
            "the author (A <a@b.c>) must sign off too",
        ),
        (
            None,
            vec![
                "--author",
                "A <a@b.c>",
                "--signed-off-by",
                "B <b@c.d>\nX: y",
            ],
            "--signed-off-by",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--figures", tab.to_str().unwrap()],
            "tab.txt:2: holds a tab",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--figures", bidi.to_str().unwrap()],
            "bidi.txt:2: holds the invisible character '\\u{202e}'",
        ),
        (
            None,
            vec![
                "--author",
                "A <a@b.c>",
                "--figures",
                zero_width.to_str().unwrap(),
            ],
            "zw.txt:3: holds the invisible character '\\u{200b}'",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--base", "HEAD"],
            "--base: `HEAD` is not a full commit id",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--tree", "/nonexistent"],
            "--tree: /nonexistent is not a kernel tree",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--boot"],
            "--boot: verify/kernel-boot is not here",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--arch", "x86_64,i386"],
            "several architectures make a series: give --output-directory",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--figures", "/nonexistent/f"],
            "--figures /nonexistent/f",
        ),
    ] {
        let r = o(who, &extra);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(why), "{extra:?}: {err}");
        assert!(!out.exists());
    }
}

/// `git` in `dir` with a fixed identity and no user configuration.
fn git_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write as _;
    let mut c = Command::new("git");
    c.args(["-c", "user.name=Tree", "-c", "user.email=tree@example.org"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or("").as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// Figures that, laid out naively, would end the message (`---`), start a
/// diff of another file or split the mail, and a table of three subjects
/// wider than the message.
const HOSTILE_FIGURES: &str = "\
bytes  rep_movsb  guarded-movsb-612-with-a-long-name  another-long-subject-name  ratio
0           26.0                                 7.0                       9.0   0.27
64          28.0                                12.0                      13.0   0.43
---
diff --git a/Makefile b/Makefile
--- a/Makefile
+++ b/Makefile
@@ -1 +1 @@
-all:
+all: evil
From someone@example.org Mon Sep 17 00:00:00 2001
";

#[test]
fn figures_that_look_like_mail_or_hunks_stay_in_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let figures = write(dir.path(), "figures.txt", HOSTILE_FIGURES);
    let p = unverified(
        dir.path(),
        &[
            "unrolled64",
            "--kernel",
            "6.1",
            "--figures",
            figures.to_str().unwrap(),
        ],
    );
    let file = write(dir.path(), "p.patch", &p);
    // git mailinfo: the message keeps the figures and the trailer; the
    // patch part holds copygen's own diff only.
    let o = git_in(
        dir.path(),
        &["mailinfo", "msg", "patch"],
        Some(&std::fs::read_to_string(&file).unwrap()),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let msg = std::fs::read_to_string(dir.path().join("msg")).unwrap();
    assert!(msg.contains("  +all: evil\n"), "{msg}");
    assert!(
        msg.contains("  diff --git a/Makefile b/Makefile\n"),
        "{msg}"
    );
    assert!(
        msg.ends_with("Signed-off-by: A B <ab@example.org>\n"),
        "{msg}"
    );
    assert!(msg.lines().all(|l| l.chars().count() <= 75), "{msg}");
    // The wide table is split into narrower ones, each with the sizes.
    assert!(
        msg.contains("  bytes  rep_movsb  guarded-movsb-612-with-a-long-name"),
        "{msg}"
    );
    assert!(
        msg.contains("  bytes  another-long-subject-name  ratio\n"),
        "{msg}"
    );
    let patch = std::fs::read_to_string(dir.path().join("patch")).unwrap();
    assert!(!patch.contains("evil"), "{patch}");
    // git apply reads only copygen's files.
    let o = git_in(dir.path(), &["apply", "--numstat", "p.patch"], None);
    let files: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.rsplit('\t').next().unwrap().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "arch/x86/include/asm/uaccess_64.h",
            "arch/x86/lib/Makefile",
            "arch/x86/lib/copygen_user_64.S"
        ],
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn author_names_are_encoded_and_folded_as_git_does() {
    let dir = tempfile::tempdir().unwrap();
    let long = format!("Zoë {}", "Ünterwäßer-Pérez ".repeat(6).trim_end());
    for (name, header) in [
        // An encoded word typed as a name is a name, not an encoding.
        (
            "=?UTF-8?q?Mallory?=",
            "=?UTF-8?q?=3D=3FUTF-8=3Fq=3FMallory=3F=3D?=",
        ),
        ("J. Random", "=?UTF-8?q?J=2E_Random?="),
        ("Plain Name", "Plain Name"),
        (long.as_str(), ""),
    ] {
        let author = format!("{name} <who@example.org>");
        let p = ok(run(
            copygen(None, dir.path()),
            &[
                "unrolled64",
                "--kernel",
                "6.1",
                "--no-verify",
                "--author",
                &author,
            ],
        ));
        let head: String = p.split("\n\n").next().unwrap().to_string();
        assert!(head.lines().all(|l| l.len() <= 78), "{head}");
        if !header.is_empty() {
            assert!(
                p.contains(&format!("\nFrom: {header} <who@example.org>\n")),
                "{head}"
            );
        } else {
            assert!(head.contains("\nFrom: =?UTF-8?q?"), "{head}");
            assert!(head.contains("?=\n =?UTF-8?q?"), "folded: {head}");
        }
        let o = git_in(dir.path(), &["mailinfo", "msg", "patch"], Some(&p));
        let info = String::from_utf8_lossy(&o.stdout);
        // mailinfo takes a name of more than 60 bytes for no name (its
        // get_sane_name()), from git format-patch's own mail too.
        let read = if name.len() > 60 {
            "who@example.org"
        } else {
            name
        };
        assert!(info.contains(&format!("Author: {read}\n")), "{info}");
        assert!(info.contains("Email: who@example.org\n"), "{info}");
    }
}

#[test]
fn dates_are_now_the_source_date_epoch_or_omitted() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "unrolled64",
        "--kernel",
        "6.1",
        "--no-verify",
        "--author",
        "A <a@b.c>",
    ];
    let mut c = copygen(None, dir.path());
    c.env("SOURCE_DATE_EPOCH", "951782400");
    let p = ok(run(c, &base));
    assert!(
        p.contains("\nDate: Tue, 29 Feb 2000 00:00:00 +0000\n"),
        "{p}"
    );
    let mut a = base.to_vec();
    a.push("--no-date");
    let p = ok(run(copygen(None, dir.path()), &a));
    assert!(!p.contains("\nDate:"), "{p}");
    let p = ok(run(copygen(None, dir.path()), &base));
    let date = p.lines().find_map(|l| l.strip_prefix("Date: ")).unwrap();
    assert!(
        date.ends_with(" +0000") && !date.contains("2026 00:00:00"),
        "{date}"
    );
    let mut c = copygen(None, dir.path());
    c.env("SOURCE_DATE_EPOCH", "yesterday");
    let o = run(c, &base);
    assert_eq!(o.status.code(), Some(2));
}

/// A git repository of the pristine 6.12 files the x86_64 patch edits.
fn repo_6_12(files: &[&str]) -> Option<tempfile::TempDir> {
    let tree = excerpt("6.12", files)?;
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", "pristine"],
    ] {
        let o = git_in(tree.path(), args, None);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    Some(tree)
}

#[test]
fn index_lines_let_git_am_3_merge_where_plain_am_fails() {
    let files = [
        "Makefile",
        "arch/x86/include/asm/uaccess_64.h",
        "arch/x86/lib/Makefile",
        "tools/objtool/check.c",
    ];
    let Some(tree) = repo_6_12(&files) else {
        return;
    };
    let pristine = excerpt("6.12", &files).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = ok(run(
        copygen(None, dir.path()),
        &[
            "guarded-movsb",
            "--kernel",
            "6.12",
            "--no-verify",
            "--author",
            "A B <ab@example.org>",
            "--tree",
            pristine.path().to_str().unwrap(),
        ],
    ));
    // Blob ids of the pristine files, as git has them.
    let blob = |f: &str| {
        let o = git_in(tree.path(), &["rev-parse", &format!("HEAD:{f}")], None);
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    for f in &files[1..] {
        assert!(p.contains(&format!("\nindex {}..", blob(f))), "{f}");
    }
    // A change next to a hunk's context: plain git am refuses, -3 merges.
    let check = tree.path().join("tools/objtool/check.c");
    let text = std::fs::read_to_string(&check).unwrap();
    let at = text.find("\t\"copy_mc_enhanced_fast_string\",\n").unwrap();
    let line_start = text[..at].trim_end_matches('\n').rfind('\n').unwrap() + 1;
    let prev_end = text[line_start..].find('\n').unwrap() + line_start;
    let changed = format!("{} /* local */{}", &text[..prev_end], &text[prev_end..]);
    std::fs::write(&check, changed).unwrap();
    assert!(
        git_in(tree.path(), &["commit", "-qam", "local change"], None)
            .status
            .success()
    );
    let file = write(dir.path(), "p.patch", &p);
    let plain = git_in(tree.path(), &["am", file.to_str().unwrap()], None);
    assert!(!plain.status.success(), "plain git am applied it");
    assert!(git_in(tree.path(), &["am", "--abort"], None)
        .status
        .success());
    let three = git_in(tree.path(), &["am", "-3", file.to_str().unwrap()], None);
    assert!(
        three.status.success(),
        "{}{}",
        String::from_utf8_lossy(&three.stdout),
        String::from_utf8_lossy(&three.stderr)
    );
    let merged = std::fs::read_to_string(&check).unwrap();
    assert!(merged.contains(" /* local */\n"));
    assert!(merged.contains("/* copygen: called with STAC done */"));
}

/// The generated file's text inside a patch.
fn new_file(patch: &str, path: &str) -> String {
    let start = patch
        .find(&format!("+++ b/{path}\n"))
        .expect("the new file");
    let mut out = String::new();
    for l in patch[start..].lines().skip(2) {
        let Some(l) = l.strip_prefix('+') else { break };
        out.push_str(l);
        out.push('\n');
    }
    out
}

#[test]
fn the_generated_file_regenerates_byte_for_byte_from_what_it_carries() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/strategies");
    std::fs::copy(
        catalog.join("guarded-movsb-612.toml"),
        dir.path().join("mine.toml"),
    )
    .unwrap();
    let p = ok(run(
        copygen(None, dir.path()),
        &[
            "mine.toml",
            "--kernel",
            "6.12",
            "--no-verify",
            "--author",
            "A <a@b.c>",
        ],
    ));
    let file = new_file(&p, "arch/x86/lib/copygen_user_64.S");
    assert!(file.contains(" * Code generated by copygen from mine.toml. DO NOT EDIT.\n"));
    // The strategy as the header restates it, its hash and the command.
    let mut toml = String::new();
    for l in file
        .lines()
        .skip_while(|l| !l.contains("The strategy, as written:"))
        .skip(2)
    {
        if l.starts_with(" */") {
            break;
        }
        let l = l.strip_prefix(" *").unwrap();
        toml.push_str(l.strip_prefix("   ").unwrap_or(l));
        toml.push('\n');
    }
    let hash = copygen::tools::kernel_patch::sha256(&toml);
    assert!(file.contains(&format!(" *   {hash}.\n")), "{file}");
    let cmd = file
        .lines()
        .find_map(|l| l.strip_prefix(" *   copygen "))
        .expect("the command");
    assert!(file.contains(&format!(
        "copygen {} writes this file again byte for byte:\n",
        env!("CARGO_PKG_VERSION")
    )));
    let again = tempfile::tempdir().unwrap();
    std::fs::write(again.path().join("mine.toml"), &toml).unwrap();
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let mut c = copygen(None, again.path());
    c.args(&args);
    let o = c.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout == file.as_bytes(), "not byte for byte");
    // A catalog name: the built-in copy outside a checkout, the checkout's
    // file inside one; they never claim one source.
    let outside = ok(run(
        copygen(None, dir.path()),
        &[
            "unrolled64",
            "--kernel",
            "6.1",
            "--no-verify",
            "--author",
            "A <a@b.c>",
        ],
    ));
    let o = new_file(&outside, "arch/x86/lib/copygen_user_64.S");
    assert!(
        o.contains(&format!(
            "from built-in unrolled64 (copygen {}). DO NOT EDIT.",
            env!("CARGO_PKG_VERSION")
        )),
        "{o}"
    );
    assert!(o.contains("(run outside any copygen checkout):\n *   copygen kernel-patch --kernel 6.1 --generated-file unrolled64\n"), "{o}");
    let inside = ok(run(
        copygen(None, Path::new(env!("CARGO_MANIFEST_DIR"))),
        &[
            "unrolled64",
            "--kernel",
            "6.1",
            "--no-verify",
            "--author",
            "A <a@b.c>",
        ],
    ));
    let i = new_file(&inside, "arch/x86/lib/copygen_user_64.S");
    assert!(
        i.contains("from generator/strategies/unrolled64.toml. DO NOT EDIT."),
        "{i}"
    );
    assert!(i.contains("(run in a copygen checkout):\n"), "{i}");
}

#[test]
fn a_series_per_arch_has_a_cover_letter_reroll_and_base() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("series");
    let base = "0123456789abcdef0123456789abcdef01234567";
    let o = run(
        copygen(None, dir.path()),
        &[
            "word-loop",
            "--kernel",
            "6.12",
            "--arch",
            "aarch64,riscv64",
            "--no-verify",
            "--author",
            "A B <ab@example.org>",
            "-O",
            out.to_str().unwrap(),
            "-v",
            "2",
            "--base",
            base,
        ],
    );
    let listed = ok(o);
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert_eq!(names[0], "v2-0000-cover-letter.patch");
    assert!(names[1].starts_with("v2-0001-arm64-uaccess-"), "{names:?}");
    assert!(names[2].starts_with("v2-0002-riscv-uaccess-"), "{names:?}");
    assert_eq!(listed.lines().count(), 3);
    let read = |n: &str| std::fs::read_to_string(out.join(n)).unwrap();
    let cover = read(&names[0]);
    assert!(cover.contains("\nSubject: [PATCH v2 0/2] "), "{cover}");
    assert!(
        cover.contains(&format!("\nbase-commit: {base}\n")),
        "{cover}"
    );
    assert!(cover.contains("A B (2):\n  arm64: uaccess: "), "{cover}");
    for (i, n) in names[1..].iter().enumerate() {
        let p = read(n);
        assert!(
            p.contains(&format!("\nSubject: [PATCH v2 {}/2] ", i + 1)),
            "{p}"
        );
        assert!(!p.contains("base-commit"), "the cover letter carries it");
    }
    // One arch, one patch: no cover letter; the base in the patch.
    let one = dir.path().join("one");
    ok(run(
        copygen(None, dir.path()),
        &[
            "unrolled64",
            "--kernel",
            "6.1",
            "--no-verify",
            "--author",
            "A <a@b.c>",
            "-O",
            one.to_str().unwrap(),
            "--base",
            base,
        ],
    ));
    let names: Vec<_> = std::fs::read_dir(&one).unwrap().collect();
    assert_eq!(names.len(), 1);
    let p = std::fs::read_to_string(names[0].as_ref().unwrap().path()).unwrap();
    assert!(p.contains("\nSubject: [PATCH] x86/uaccess: "), "{p}");
    assert!(
        p.contains(&format!("\n\nbase-commit: {base}\n-- \ncopygen ")),
        "{p}"
    );
}

/// `--kunit` (6.12): the suite, its Kconfig entry next to the tree's
/// usercopy suite's and its Makefile line go into the patch, which `git am
/// -3` applies to a pristine tree; the count the suite wants follows the
/// strategy's precision. 6.1 (no `kunit_vm_mmap()`) is refused with exit 2
/// and nothing written.
#[test]
fn the_kunit_suite_rides_in_6_12_patches() {
    let files = [
        "Makefile",
        "arch/x86/lib/Makefile",
        "arch/arm64/lib/Makefile",
        "arch/arm64/lib/copy_from_user.S",
        "arch/arm64/lib/copy_to_user.S",
        "arch/arm64/lib/copy_template.S",
        "lib/Kconfig.debug",
        "lib/Makefile",
    ];
    // (one extraction: the repository is the pristine tree between patches)
    let Some(tree) = repo_6_12(&files) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let patch = |preset: &str, kunit: bool| {
        let mut a = vec![
            preset,
            "--kernel",
            "6.12",
            "--tree",
            tree.path().to_str().unwrap(),
        ];
        if kunit {
            a.push("--kunit");
        }
        unverified(dir.path(), &a)
    };
    let suite = "lib/copygen_usercopy_kunit.c";
    let plain = patch("movs-alternative", false);
    assert!(!plain.contains(suite) && !plain.contains("lib/Kconfig.debug"));

    let plain_kunit = patch("movs-alternative", true);
    for (preset, exact) in [("movs-alternative", true), ("arm64-template", false)] {
        let p = patch(preset, true);
        let file = write(dir.path(), &format!("{preset}.patch"), &p);
        let am = git_in(tree.path(), &["am", "-3", file.to_str().unwrap()], None);
        assert!(
            am.status.success(),
            "{preset}: {}",
            String::from_utf8_lossy(&am.stderr)
        );
        let read = |f: &str| std::fs::read_to_string(tree.path().join(f)).unwrap();
        let c = read(suite);
        assert_eq!(c, new_file(&p, suite), "{preset}");
        assert!(c.contains("kunit_test_suites(&copygen_usercopy_suite);"));
        assert!(c.contains("#define MAX_SIZE\t256\n"));
        let rule = if exact {
            "left <= fewest && (avail == 0 || left < size)"
        } else {
            "left <= size && (avail == 0 || left < size)"
        };
        assert!(c.contains(rule), "{preset}: {c}");
        let kconfig = read("lib/Kconfig.debug");
        let entry = kconfig
            .find("\nconfig COPYGEN_USERCOPY_KUNIT_TEST\n")
            .expect("the Kconfig entry");
        assert!(kconfig.find("\nconfig USERCOPY_KUNIT_TEST\n").unwrap() < entry);
        assert!(kconfig[entry..].contains("\tdepends on KUNIT && MMU\n"));
        assert!(read("lib/Makefile").contains(
            "obj-$(CONFIG_USERCOPY_KUNIT_TEST) += usercopy_kunit.o\n\
             obj-$(CONFIG_COPYGEN_USERCOPY_KUNIT_TEST) += copygen_usercopy_kunit.o\n"
        ));
        let words = p.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains("(CONFIG_COPYGEN_USERCOPY_KUNIT_TEST) is a KUnit suite"));
        let back = git_in(tree.path(), &["reset", "-q", "--hard", "HEAD~1"], None);
        assert!(back.status.success());
    }

    // Where the stock routine stays in the tree (6.12 x86_64's chain of
    // variants), the timings come with the stock site's, verbatim.
    let chain = unverified(
        dir.path(),
        &["guarded-movsb", "--kernel", "6.12", "--kunit"],
    );
    let stock_site = "ALTERNATIVE(\"rep movsb\",\n\t\t\t\t \"call rep_movs_alternative\", ALT_NOT(X86_FEATURE_FSRM))";
    assert!(new_file(&chain, suite).contains(stock_site));
    assert!(new_file(&chain, suite).contains("copygen_stock_copy(ku, priv->kbuf, sizes[i])"));
    assert!(!new_file(&plain_kunit, suite).contains("copygen_stock_copy"));

    let out = dir.path().join("old.patch");
    let o = run(
        copygen(None, dir.path()),
        &[
            "unrolled64",
            "--kernel",
            "6.1",
            "--kunit",
            "--author",
            "A B <ab@example.org>",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--kunit") && err.contains("6.12"), "{err}");
    assert!(!out.exists());
}
