//! Data flows one way through the stages: no module names (`crate::…`) a
//! module of a later stage. The order is the one `generator/lib.rs` maps:
//!
//! 0. the strategy types every stage shares (`front::strategy`,
//!    `front::variant`, `kernel::version`);
//! 1. what each architecture, kernel tree and toolchain offers (`arch`,
//!    `kernel`, `toolchain`, `input`);
//! 2. the rest of the front end (`front`: parse, validate, write TOML);
//! 3. lowering (`lower`); 4. backends (`backend`); 5. `jit` and `output`;
//! 6. `checks`; 7. `tools`.
//!
//! The command-line front (`generator/cli`, `main.rs`) is a separate crate
//! and may use every stage.

use std::path::{Path, PathBuf};

/// Stage of a module path (`front::parse`, `backend::x86::entry`): the
/// longest prefix in the table.
fn stage(module: &str) -> Option<usize> {
    const STAGES: &[(&str, usize)] = &[
        ("front::strategy", 0),
        ("front::variant", 0),
        ("kernel::version", 0),
        ("arch", 1),
        ("kernel", 1),
        ("toolchain", 1),
        ("input", 1),
        ("front", 2),
        ("lower", 3),
        ("backend", 4),
        ("jit", 5),
        ("output", 5),
        ("checks", 6),
        ("tools", 7),
    ];
    STAGES
        .iter()
        .filter(|(p, _)| module == *p || module.starts_with(&format!("{p}::")))
        .max_by_key(|(p, _)| p.len())
        .map(|&(_, s)| s)
}

/// The module path of a file under `generator/`.
fn module_of(rel: &Path) -> String {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts.join("::")
}

/// Every `crate::a::b` path a source names, one module path per use (a
/// braced group `crate::a::{b, c::d}` gives `a::b` and `a::c::d`; a path
/// ends at the first segment that does not start lower-case).
fn crate_paths(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `copygen_crate::`, not ours
        }
        let (path, tail) = segments(rest);
        if let Some(group) = tail.strip_prefix("::{").or_else(|| tail.strip_prefix('{')) {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let (sub, _) = segments(item.trim());
                match (path.is_empty(), sub.is_empty()) {
                    (_, true) => out.push(path.clone()),
                    (true, false) => out.push(sub),
                    (false, false) => out.push(format!("{path}::{sub}")),
                }
            }
        } else if !path.is_empty() {
            out.push(path);
        }
    }
    out
}

/// The leading `a::b` module segments of `s` and what follows them.
fn segments(s: &str) -> (String, &str) {
    let mut path = Vec::new();
    let mut rest = s;
    loop {
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..len];
        if word.is_empty() || !word.starts_with(|c: char| c.is_ascii_lowercase()) {
            break;
        }
        path.push(word.to_string());
        rest = &rest[len..];
        match rest.strip_prefix("::") {
            Some(r) if r.starts_with(|c: char| c.is_ascii_lowercase()) => rest = r,
            _ => break,
        }
    }
    (path.join("::"), rest)
}

/// The back-arrows of one file: (the module it names, why it is wrong).
fn back_arrows(module: &str, src: &str) -> Vec<String> {
    let Some(own) = stage(module) else {
        return Vec::new();
    };
    crate_paths(src)
        .into_iter()
        .filter_map(|p| {
            let s = stage(&p)?;
            (s > own).then(|| format!("{module} (stage {own}) names crate::{p} (stage {s})"))
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_module_names_a_later_stage() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut staged = 0;
    let mut wrong = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).unwrap();
        if rel.starts_with("cli") || rel == Path::new("main.rs") || rel == Path::new("build.rs") {
            continue;
        }
        let module = module_of(rel);
        if module == "lib" {
            continue;
        }
        assert!(
            stage(&module).is_some(),
            "{} is in no stage: add it to the table",
            rel.display()
        );
        staged += 1;
        wrong.extend(back_arrows(&module, &std::fs::read_to_string(f).unwrap()));
    }
    assert!(staged > 50, "only {staged} modules found");
    assert!(wrong.is_empty(), "back-arrows:\n{}", wrong.join("\n"));
}

#[test]
fn the_checker_sees_back_arrows_in_every_form() {
    // A plain path, a braced group, an inline path.
    assert_eq!(
        back_arrows("lower::variants", "use crate::backend::Function;").len(),
        1
    );
    assert_eq!(
        back_arrows(
            "front::variant",
            "use crate::{arch::cpu::CpuFeatures, front::strategy::Arch};"
        ),
        ["front::variant (stage 0) names crate::arch::cpu (stage 1)"]
    );
    assert_eq!(
        back_arrows("arch::cpu", "let x = crate::front::parse::parse(t);").len(),
        1
    );
    assert_eq!(
        back_arrows("front", "use crate::front::{parse, strategy::Strategy};"),
        Vec::<String>::new()
    );
    // Forward and same-stage paths are fine.
    assert!(back_arrows(
        "tools::bench",
        "use crate::checks::objfile;\nuse crate::tools::tune;"
    )
    .is_empty());
    assert!(back_arrows("jit::encode", "use crate::output::render;").is_empty());
    // `stage` takes the longest prefix.
    assert_eq!(stage("front::strategy"), Some(0));
    assert_eq!(stage("front::parse"), Some(2));
    assert_eq!(stage("backend::x86::entry"), Some(4));
    assert_eq!(stage("kernel::version"), Some(0));
    assert_eq!(stage("kernel::site"), Some(1));
    assert_eq!(
        back_arrows(
            "kernel::site",
            "use crate::lower::variants::variant_symbol;"
        ),
        ["kernel::site (stage 1) names crate::lower::variants::variant_symbol (stage 3)"]
    );
    assert_eq!(
        back_arrows("kernel::version", "use crate::kernel::site::Chain;"),
        ["kernel::version (stage 0) names crate::kernel::site (stage 1)"]
    );
    assert_eq!(
        module_of(Path::new("backend/x86/entry.rs")),
        "backend::x86::entry"
    );
    assert_eq!(module_of(Path::new("lower.rs")), "lower");
}
