//! The documentation: the generated catalog table is fresh (and a stale
//! one is caught), every relative link between the markdown files resolves,
//! the catalog and its origin table agree, and no text in the repository
//! speaks of how it was made.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use copygen::front::catalog::{catalog_in, origin, thread, ORIGINS, THREADS};
use copygen::output::catalog_doc::{markdown_table, BEGIN, END};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copygen_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn docs_catalog_table_is_fresh() {
    let out = copygen_in(&repo(), &["list", "--markdown", "--check"]);
    assert!(
        out.status.success(),
        "docs/catalog.md is stale (run `copygen list --markdown --update`):\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // And the file really holds the table of the catalog on disk.
    let doc = std::fs::read_to_string(repo().join("docs/catalog.md")).unwrap();
    let table = markdown_table(&catalog_in(Some(&repo())).unwrap());
    assert!(doc.contains(&format!("{BEGIN}\n{table}{END}\n")));
}

/// A checkout of two strategies whose docs/catalog.md has `body` between
/// its markers.
fn small_checkout(body: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    std::fs::create_dir_all(root.join("generator/strategies")).unwrap();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    for name in ["rep-movsb", "short-unrolled"] {
        let rel = format!("generator/strategies/{name}.toml");
        std::fs::copy(repo().join(&rel), root.join(&rel)).unwrap();
    }
    std::fs::write(
        root.join("docs/catalog.md"),
        format!("# head\n\n{BEGIN}\n{body}{END}\n\ntail text\n"),
    )
    .unwrap();
    tmp
}

#[test]
fn stale_catalog_doc_fails_the_check_and_update_repairs_it() {
    let tmp = small_checkout("| `rep-movsb` | x86_64 | an old description | |\n");
    let root = tmp.path();
    let out = copygen_in(root, &["list", "--markdown", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("-| `rep-movsb` | x86_64 | an old description | |"),
        "{diff}"
    );
    assert!(diff.contains("+| `short-unrolled` | x86_64 |"), "{diff}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("docs/catalog.md is stale"));

    let out = copygen_in(root, &["list", "--markdown", "--update"]);
    assert!(out.status.success(), "{out:?}");
    let doc = std::fs::read_to_string(root.join("docs/catalog.md")).unwrap();
    assert!(
        doc.starts_with(&format!("# head\n\n{BEGIN}\n| strategy | arch |")),
        "{doc}"
    );
    assert!(doc.ends_with(&format!("{END}\n\ntail text\n")), "{doc}");
    assert!(!doc.contains("an old description"));
    assert!(doc.contains("Paolo Abeni"), "{doc}");
    assert!(copygen_in(root, &["list", "--markdown", "--check"])
        .status
        .success());

    // The table on stdout is the one written.
    let printed = copygen_in(root, &["list", "--markdown"]);
    assert!(doc.contains(String::from_utf8_lossy(&printed.stdout).as_ref()));
}

#[test]
fn catalog_doc_without_markers_is_bad_input() {
    let tmp = small_checkout("");
    let path = tmp.path().join("docs/catalog.md");
    std::fs::write(&path, "# no markers here\n").unwrap();
    for flag in ["--check", "--update"] {
        let out = copygen_in(tmp.path(), &["list", "--markdown", flag]);
        assert_eq!(out.status.code(), Some(2), "{flag}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("docs/catalog.md") && err.contains("no line"),
            "{err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "# no markers here\n"
    );
    // --check and --update only make sense with --markdown.
    assert_eq!(
        copygen_in(tmp.path(), &["list", "--check"]).status.code(),
        Some(2)
    );
}

#[test]
fn every_catalog_strategy_has_an_origin_and_every_thread_is_cited() {
    let names: BTreeSet<String> = catalog_in(Some(&repo()))
        .unwrap()
        .into_iter()
        .map(|s| s.name)
        .collect();
    let recorded: BTreeSet<String> = ORIGINS.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(names, recorded, "ORIGINS and generator/strategies disagree");
    for (name, o) in ORIGINS {
        if let Some(key) = o.thread {
            assert_eq!(thread(key).key, key, "{name}");
        }
        assert!(origin(name).is_some());
    }
    let origins = std::fs::read_to_string(repo().join("docs/origins.md")).unwrap();
    for t in THREADS {
        assert!(
            ORIGINS.iter().any(|(_, o)| o.thread == Some(t.key)),
            "no preset cites {}",
            t.author
        );
        assert!(
            origins.contains(t.author),
            "docs/origins.md lacks {}",
            t.author
        );
        assert!(
            origins.replace('\\', "").contains(t.subject),
            "docs/origins.md lacks the subject of {}'s thread",
            t.author
        );
    }
    // `copygen bench --table KEY` re-runs a thread's measurement and cites
    // the thread in its title (Whitchurch's is ARM: no table, bench refuses ARM).
    for key in ["anand", "morton", "wilson", "abeni"] {
        let sweep = copygen::tools::bench::table(key).unwrap();
        assert!(
            sweep.title.starts_with(&thread(key).cite()),
            "{}",
            sweep.title
        );
    }
}

/// Every file of the repository, skipping build output, git's data and
/// the kernel cache (and, for `skip_generated`, emitted/ and hidden folders).
fn repo_files(skip_generated: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![repo()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let skip = matches!(name.as_str(), "target" | ".git" | ".cache")
                || (skip_generated && (name == "emitted" || name.starts_with('.')));
            if p.is_dir() && !skip {
                stack.push(p);
            } else if p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every markdown file of the repository outside generated trees.
fn markdown_files() -> Vec<PathBuf> {
    repo_files(true)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect()
}

/// GitHub's anchor for a heading: lower case, punctuation dropped except
/// `-` and `_`, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut fenced = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// `(target, line)` of every inline link `[text](target)` outside code.
fn links(text: &str) -> Vec<(String, usize)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans, where `](` means nothing.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push((rest[..end].to_string(), i + 1));
                rest = &rest[end..];
            }
        }
    }
    out
}

#[test]
fn relative_links_between_docs_resolve() {
    let files = markdown_files();
    assert!(files.len() >= 10, "{files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (target, line) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let rel = file.strip_prefix(repo()).unwrap().display().to_string();
            if !dest.exists() {
                broken.push(format!("{rel}:{line}: {target}: no such file"));
                continue;
            }
            if let Some(anchor) = anchor {
                if dest.extension().is_some_and(|e| e == "md") {
                    let text = std::fs::read_to_string(&dest).unwrap();
                    if !anchors(&text).contains(anchor) {
                        broken.push(format!("{rel}:{line}: {target}: no such heading"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn link_checker_sees_a_broken_link() {
    let found = links("see [a](docs/a.md#x) and `[b](not-a-link)`\n```\n[c](in-code)\n```\n");
    assert_eq!(found, vec![("docs/a.md#x".to_string(), 1)]);
    assert!(
        anchors("# Where the strategies come from\n").contains("where-the-strategies-come-from")
    );
    assert!(anchors("## `emit --check`: review\n").contains("emit---check-review"));
}

#[test]
fn readme_is_short_and_keeps_the_two_commands() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.lines().count() < 250,
        "README.md has {} lines",
        readme.lines().count()
    );
    assert!(readme.contains("\ncargo run --release -- emit\n"));
    assert!(readme.contains("\nverify/run-tests\n"));
    assert!(readme.contains("`.ci/run` calls `verify/run-tests`."));
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    assert!(ci.contains("exec verify/run-tests"), "{ci}");
    let run_tests = std::fs::read_to_string(repo().join("verify/run-tests")).unwrap();
    assert!(run_tests.contains("target/release/copygen emit --check"));
    assert!(run_tests.contains("target/release/copygen list --markdown --check"));
}

/// Words that describe how the repository was produced rather than what
/// it is; spelt in pieces so this file does not match itself.
fn process_words() -> Vec<String> {
    let mut w = vec![
        format!("{}{}", "ses", "sion"),
        format!("this {}", "stop"),
        format!("last {}", "stop"),
    ];
    for d in 0..10 {
        w.push(format!("seed {d}"));
        w.push(format!("{} {d}", "stop"));
        w.push(format!("{} {d}", "issue"));
    }
    w
}

#[test]
fn no_text_speaks_of_how_the_repository_was_made() {
    let words = process_words();
    let mut hits = Vec::new();
    for p in repo_files(false) {
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let lower = text.to_lowercase();
        for (i, line) in lower.lines().enumerate() {
            for w in &words {
                // Only where a word starts (not inside a longer word).
                let mut from = 0;
                while let Some(at) = line[from..].find(w.as_str()) {
                    let at = from + at;
                    let before = line[..at].chars().next_back();
                    if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        hits.push(format!(
                            "{}:{}: {w}",
                            p.strip_prefix(repo()).unwrap().display(),
                            i + 1
                        ));
                    }
                    from = at + w.len();
                }
            }
        }
    }
    assert!(hits.is_empty(), "{}", hits.join("\n"));
}
