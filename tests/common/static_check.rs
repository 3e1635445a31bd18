//! Helpers of the static-verifier tests: strategies by name, a `.S` text
//! checked as a file, and source lines by label or text.

use std::path::{Path, PathBuf};

use copygen::backend;
use copygen::checks::static_verify::{check_object, Finding, Options, Report, Severity};
use copygen::front::catalog::catalog;
use copygen::front::strategy::{Flavor, Strategy};

pub fn fixture_strategies() -> Vec<Strategy> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/strategies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| copygen::front::parse::load(f, None).unwrap())
        .collect()
}

/// A catalog preset or test fixture strategy by name.
pub fn strategy(name: &str) -> Strategy {
    catalog()
        .unwrap()
        .into_iter()
        .chain(fixture_strategies())
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no strategy {name}"))
}

/// Check `text` as a `.S` file named like the emitted one.
pub fn check_text(text: &str, file: &str, options: &Options) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(file);
    std::fs::write(&path, text).unwrap();
    check_object(&path, options).unwrap_or_else(|e| panic!("{file}: {e:#}"))
}

pub fn errors(r: &Report) -> Vec<(String, Finding)> {
    findings_of(r, Severity::Error)
}

pub fn findings_of(r: &Report, severity: Severity) -> Vec<(String, Finding)> {
    r.findings()
        .filter(|(_, f)| f.severity == severity)
        .map(|(n, f)| (n.to_string(), f.clone()))
        .collect()
}

/// 1-based line of the first instruction at or after `label:` in `text`.
pub fn line_of_label(text: &str, label: &str) -> u32 {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_end() == format!("{label}:"))
        .unwrap_or_else(|| panic!("no {label}"));
    let k = (start + 1..lines.len())
        .find(|&k| {
            let t = lines[k].trim();
            !(t.is_empty() || t.starts_with("/*") || t.ends_with(':'))
        })
        .unwrap();
    k as u32 + 1
}

/// 1-based line whose text is exactly `line` (first match).
pub fn line_number(text: &str, line: &str) -> u32 {
    text.lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no line {line:?}")) as u32
        + 1
}

/// The single error of `r`, which must be in `function`, say `what`, and
/// sit at source line `line`.
pub fn assert_caught(r: &Report, function: &str, what: &str, line: u32) -> Finding {
    let errs = errors(r);
    let hit = errs
        .iter()
        .find(|(n, f)| n == function && f.message.contains(what) && f.line == Some(line));
    match hit {
        Some((_, f)) => {
            assert!(!f.insn.is_empty());
            assert!(!r.passed());
            f.clone()
        }
        None => panic!("expected `{what}` in {function} at line {line}; report:\n{r}"),
    }
}

/// The lowering's user sites per entry point of `s` in `flavor`.
pub fn user_sites(s: &Strategy, flavor: Flavor) -> Vec<(String, usize)> {
    backend::functions(s, flavor)
        .into_iter()
        .map(|(r, _)| (r.symbol.clone(), r.user_sites().len()))
        .collect()
}

/// A hand-written `.S` under tests/fixtures/static, and its text.
pub fn static_fixture(name: &str) -> (PathBuf, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/static")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    (path, text)
}
