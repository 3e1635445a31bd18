//! The `emitted/` tree: render every catalog strategy ([`crate::front::catalog`]) in both flavours,
//! write atomically, or compare (`--check`). Nothing is written unless
//! every strategy validated and rendered.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::front::strategy::{Arch, Flavor, Strategy};
use crate::output::render::{emitted_path, render_functions};

/// Every file of the tree: relative path → contents.
pub fn render_tree(strategies: &[Strategy]) -> BTreeMap<String, String> {
    render_tree_with_stats(strategies).0
}

/// One line of `copygen emit`'s summary.
#[derive(Debug, Clone)]
pub struct FileStats {
    pub strategy: String,
    pub arch: Arch,
    pub flavor: Flavor,
    pub routines: usize,
    pub entries: usize,
}

/// The tree and, per file, how many routines and table entries it holds.
pub fn render_tree_with_stats(
    strategies: &[Strategy],
) -> (BTreeMap<String, String>, Vec<FileStats>) {
    let mut files = BTreeMap::new();
    let mut stats = Vec::new();
    for s in strategies {
        for flavor in Flavor::ALL {
            let functions = crate::backend::file_functions(s, flavor);
            stats.push(FileStats {
                strategy: s.name.clone(),
                arch: s.arch,
                flavor,
                routines: functions.len(),
                entries: functions.iter().map(|f| f.extable.len()).sum(),
            });
            files.insert(
                emitted_path(s, flavor),
                render_functions(s, flavor, functions),
            );
        }
    }
    (files, stats)
}

/// The `.S` files now under `dir`, relative to it.
fn existing_files(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for arch in Arch::ALL {
        for flavor in Flavor::ALL {
            let sub = dir.join(arch.name()).join(flavor.name());
            let Ok(entries) = fs::read_dir(&sub) else {
                continue;
            };
            for e in entries {
                let p = e?.path();
                if p.extension().is_some_and(|x| x == "S") {
                    let rel = p
                        .strip_prefix(dir)
                        .expect("under dir")
                        .to_string_lossy()
                        .into_owned();
                    out.insert(
                        rel,
                        crate::input::read_string(&p)
                            .with_context(|| format!("reading {}", p.display()))?,
                    );
                }
            }
        }
    }
    Ok(out)
}

/// What `copygen emit` did to the tree.
#[derive(Debug, Default)]
pub struct TreeReport {
    pub written: Vec<String>,
    pub unchanged: Vec<String>,
    pub removed: Vec<String>,
}

/// Regenerate `dir` (the `emitted/` folder) from `files`.
pub fn write_tree(dir: &Path, files: &BTreeMap<String, String>) -> Result<TreeReport> {
    let existing = existing_files(dir)?;
    let mut report = TreeReport::default();
    let mut changed = Vec::new();
    for (rel, text) in files {
        if existing.get(rel) == Some(text) {
            report.unchanged.push(rel.clone());
        } else {
            changed.push((dir.join(rel), text.clone()));
            report.written.push(rel.clone());
        }
    }
    // All the changed files or none; stale ones go only after that.
    crate::output::write::write_all(&changed)?;
    for rel in existing.keys().filter(|k| !files.contains_key(*k)) {
        fs::remove_file(dir.join(rel)).with_context(|| format!("removing stale {rel}"))?;
        report.removed.push(rel.clone());
    }
    Ok(report)
}

/// Differences between `dir` and `files`, as unified diffs; empty if fresh.
pub fn check_tree(dir: &Path, files: &BTreeMap<String, String>) -> Result<String> {
    let existing = existing_files(dir)?;
    let mut out = String::new();
    for (rel, text) in files {
        let old = existing.get(rel).map(String::as_str).unwrap_or("");
        if old != text {
            let diff = similar::TextDiff::from_lines(old, text);
            let a = if existing.contains_key(rel) {
                format!("a/emitted/{rel}")
            } else {
                "/dev/null".into()
            };
            out.push_str(
                &diff
                    .unified_diff()
                    .context_radius(3)
                    .header(&a, &format!("b/emitted/{rel}"))
                    .to_string(),
            );
        }
    }
    for rel in existing.keys().filter(|k| !files.contains_key(*k)) {
        out.push_str(&format!(
            "--- a/emitted/{rel}\n+++ /dev/null\n(stale: no catalog strategy generates it)\n"
        ));
    }
    Ok(out)
}
