//! `copygen kernel-patch` as a mail a kernel developer sends: author and
//! `Signed-off-by:` from options or git config (validated), the figures in
//! the commit message, the target tree's `scripts/checkpatch.pl --strict`
//! clean, and `git am` applying it to a pristine tree with the author and
//! trailers intact. The tree's files come from
//! /usr/src/linux-source-<v>.tar.xz (verify/install-deps installs both).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

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

/// Members of the 6.12 tarball, extracted once per run (`None` without it).
fn members(version: &str, files: &[&str]) -> Option<tempfile::TempDir> {
    let tarball = format!("/usr/src/linux-source-{version}.tar.xz");
    if !Path::new(&tarball).exists() {
        eprintln!("SKIPPED: {tarball} is absent (verify/install-deps installs it)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| format!("linux-source-{version}/{f}"))
        .collect();
    let ok = Command::new("tar")
        .args(["-xJf", &tarball, "--strip-components=1", "-C"])
        .arg(dir.path())
        .args(&names)
        .status()
        .unwrap()
        .success();
    assert!(ok, "extracting {names:?} from {tarball}");
    Some(dir)
}

fn checkpatch() -> Option<&'static Path> {
    static DIR: OnceLock<Option<tempfile::TempDir>> = OnceLock::new();
    DIR.get_or_init(|| {
        members(
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
        (&["movs-alternative", "--kernel", "6.12"][..], false),
        (&["unrolled64", "--kernel", "6.1"][..], false),
        (&["movsl", "--kernel", "6.1"][..], false),
        (&["ldm-stm", "--kernel", "6.1"][..], false),
        (&["a64-overlap", "--kernel", "6.12"][..], false),
        (&["guarded-movsb", "--kernel", "6.12"][..], true),
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
    let Some(tree) = members(
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
        Some("x86/uaccess: Copy user memory with copygen's guarded-movsb-612")
    );
    assert!(log.ends_with(
        "\nSigned-off-by: Jörg Rödel <joro@example.org>\nSigned-off-by: A. Maintainer <am@example.net>\n\n"
    ) || log.ends_with(
        "\nSigned-off-by: Jörg Rödel <joro@example.org>\nSigned-off-by: A. Maintainer <am@example.net>\n"
    ), "{log}");
    // The tables verbatim, under the CPU; the long header line wrapped.
    let tables: String = FIGURES.lines().skip(1).map(|l| format!("{l}\n")).collect();
    assert!(log.contains(&tables), "{log}");
    assert!(log.contains("Measured with copygen bench (TSC ticks per call) on\n"));
    assert!(
        log.contains(
            "\nTSC ticks per call (TSC: constant 2.60 GHz reference clock, not core\ncycles)"
        ),
        "{log}"
    );
    assert!(!log.contains("No measurements are included"));
    assert!(log.lines().all(|l| l.chars().count() <= 75), "{log}");
    // The generated file is in the tree, with its MAINTAINERS entry.
    assert!(tree.path().join("arch/x86/lib/copygen_user_64.S").is_file());
    let m = std::fs::read_to_string(tree.path().join("MAINTAINERS")).unwrap();
    assert!(m.contains(
        "\nCOPYGEN GENERATED USER COPY ROUTINES\nM:\tJörg Rödel <joro@example.org>\nS:\tMaintained\nF:\tarch/x86/lib/copygen_user_64.S\n\nCORETEMP"
    ));
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
    let wide = write(
        dir.path(),
        "wide.txt",
        &format!("bytes  a\n{}  1\n", "9".repeat(80)),
    );
    let dash = write(dir.path(), "dash.txt", "a\n---\n");
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
            vec!["--author", "A <a@b.c>", "--figures", wide.to_str().unwrap()],
            "wide.txt:2: a table line of 83 columns",
        ),
        (
            None,
            vec!["--author", "A <a@b.c>", "--figures", dash.to_str().unwrap()],
            "dash.txt:2: begins with `---`",
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
