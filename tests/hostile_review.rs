//! `copygen diff` on a repository an attacker committed to: file names
//! holding a newline, an ESC or an RLO are shown escaped in the tables, the
//! instruction diff and `--json`, so they cannot forge a row; a revision
//! without `emitted/` is refused as a folder without `.S` files is; git
//! missing from `PATH` is said so (exit 1), not "not in a git repository".

use std::path::Path;
use std::process::{Command, Output};

const EMITTED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/emitted/x86_64/linux/guarded-movsb.S"
);

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn diff(dir: &Path, args: &[&str], path: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_copygen"));
    cmd.arg("diff")
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1");
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    cmd.output().unwrap()
}

/// A repository whose second commit adds, beside `a.S`, a copy of it under
/// `name`: two files of one arch and flavour with the same symbols, so the
/// rows are qualified by the file's path.
fn repo_with(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let linux = d.join("emitted/x86_64/linux");
    std::fs::create_dir_all(&linux).unwrap();
    std::fs::copy(EMITTED, linux.join("a.S")).unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "one"]);
    std::fs::copy(EMITTED, linux.join(name)).unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "two"]);
    dir
}

const FORGED: &str = "b\nfake_row_from_user                          100     200    +100\n.S";

#[test]
fn a_file_name_with_a_newline_cannot_forge_a_row() {
    let dir = repo_with(FORGED);
    let out = diff(dir.path(), &["HEAD~1", "HEAD"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !stdout.lines().any(|l| l.starts_with("fake_row_from_user")),
        "a forged row:\n{stdout}"
    );
    assert!(stdout.contains("b\\u{a}fake_row_from_user"), "{stdout}");
}

#[test]
fn json_names_are_escaped_as_the_text_is() {
    let dir = repo_with("c\u{1b}]0;title\u{7}\u{202e}S.evil.S");
    let out = diff(dir.path(), &["--json", "HEAD~1", "HEAD"], None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mut strings = Vec::new();
    fn walk<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            serde_json::Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(&v, &mut strings);
    assert!(
        strings
            .iter()
            .any(|s| s.contains("c\\u{1b}]0;title\\u{7}\\u{202e}S.evil.S")),
        "{stdout}"
    );
    for s in &strings {
        assert!(
            !s.contains(['\u{1b}', '\u{7}', '\u{202e}']),
            "raw control or override in {s:?}"
        );
    }
    // The text report says the same.
    let out = diff(dir.path(), &["HEAD~1", "HEAD"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{stdout}"
    );
    assert!(stdout.contains("c\\u{1b}]0;title"), "{stdout}");
}

#[test]
fn a_revision_without_emitted_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("README"), "no emitted/ here\n").unwrap();
    git(d, &["init", "-q"]);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "one"]);
    let out = diff(d, &["HEAD", "HEAD"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{stderr}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(stderr.contains("`HEAD` has no emitted/ folder"), "{stderr}");
    // emitted/ without any .S file: refused too.
    std::fs::create_dir(d.join("emitted")).unwrap();
    std::fs::write(d.join("emitted/notes.txt"), "x\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "two"]);
    let out = diff(d, &["HEAD", "HEAD~1"], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no .S files under its emitted/"),
        "{stderr}"
    );
}

#[test]
fn git_missing_from_path_is_said_so() {
    let dir = repo_with("b.S");
    let empty = tempfile::tempdir().unwrap();
    let out = diff(
        dir.path(),
        &["HEAD~1", "HEAD"],
        Some(empty.path().to_str().unwrap()),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("git is not installed or not in PATH"),
        "{stderr}"
    );
    assert!(!stderr.contains("not in a git repository"), "{stderr}");
}
