//! Data flows one way through the stages: no module names (`crate::…`) a
//! module of a later stage. The stages are the rows of the table in
//! `generator/lib.rs`'s documentation (stage number, name, and the modules
//! in backticks); this test reads that table, and checks that the table
//! under `## Stages` in ARCHITECTURE.md has the same rows.
//!
//! The command-line front (`generator/cli`, `main.rs`) is a separate crate
//! and may use every stage.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One row of a stage table: its number, its name and the modules it
/// holds (the module paths in backticks, without those under another path
/// of the same row: `arch::cpu` beside `arch` adds nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
struct StageRow {
    number: usize,
    name: String,
    modules: Vec<String>,
}

/// Whether `s` is a module path: lower-case `a::b` segments only (not a
/// type such as `front::strategy::Strategy`, not a command such as
/// `copygen diff`).
fn is_module_path(s: &str) -> bool {
    !s.is_empty()
        && s.split("::").all(|seg| {
            seg.starts_with(|c: char| c.is_ascii_lowercase())
                && seg
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
}

/// The rows of the first markdown table in `lines` whose first cell is a
/// number (the header and the `|---|` line are skipped); rows may be added
/// or reordered, so nothing here knows how many there are. A table row
/// whose first cell is not a number after the rows began is an error.
fn parse_stage_table<'a>(lines: impl Iterator<Item = &'a str>) -> Result<Vec<StageRow>, String> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in lines {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 3 {
            return Err(format!("a stage row with fewer than 3 cells: {line}"));
        }
        let Ok(number) = cells[0].parse::<usize>() else {
            if rows.is_empty() {
                continue; // the header or the `|---|` line
            }
            return Err(format!("a stage row without a stage number: {line}"));
        };
        let modules_cell = cells[2..].join("|");
        let paths: Vec<&str> = modules_cell
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|p| is_module_path(p))
            .collect();
        let mut modules: Vec<String> = Vec::new();
        for p in &paths {
            let under_another = paths
                .iter()
                .any(|q| q != p && p.starts_with(&format!("{q}::")));
            if !under_another && !modules.iter().any(|m| m == p) {
                modules.push(p.to_string());
            }
        }
        if modules.is_empty() {
            return Err(format!("a stage row that names no module: {line}"));
        }
        rows.push(StageRow {
            number,
            name: cells[1].to_string(),
            modules,
        });
    }
    if rows.is_empty() {
        return Err("no stage table (rows `| N | name | `module`… |`)".into());
    }
    Ok(rows)
}

fn repo_file(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The stage table of `generator/lib.rs`: its `//!` lines.
fn lib_rs_stages() -> &'static [StageRow] {
    static ROWS: OnceLock<Vec<StageRow>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let src = repo_file("generator/lib.rs");
        let doc = src
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("//!"))
            .map(str::trim);
        parse_stage_table(doc).unwrap_or_else(|e| panic!("generator/lib.rs: {e}"))
    })
}

/// The stage table under the `## Stages` heading of `text` (a markdown
/// page), up to the next heading.
fn stages_section(text: &str) -> Result<Vec<StageRow>, String> {
    let mut lines = text.lines();
    if !lines.by_ref().any(|l| l.trim() == "## Stages") {
        return Err("no `## Stages` section".into());
    }
    parse_stage_table(lines.take_while(|l| !l.starts_with('#')))
}

/// Stage of a module path (`front::parse`, `backend::x86::entry`): the
/// longest prefix in the table.
fn stage(module: &str) -> Option<usize> {
    lib_rs_stages()
        .iter()
        .flat_map(|r| r.modules.iter().map(move |m| (m.as_str(), r.number)))
        .filter(|(p, _)| module == *p || module.starts_with(&format!("{p}::")))
        .max_by_key(|(p, _)| p.len())
        .map(|(_, s)| s)
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
        [format!(
            "front::variant (stage {}) names crate::arch::cpu (stage {})",
            stage("front::variant").unwrap(),
            stage("arch::cpu").unwrap()
        )]
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

#[test]
fn lib_rs_stage_table_names_modules_that_exist_in_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let modules: Vec<String> = files
        .iter()
        .map(|f| module_of(f.strip_prefix(&root).unwrap()))
        .collect();
    let rows = lib_rs_stages();
    assert!(rows.len() >= 8, "only {} stage rows in lib.rs", rows.len());
    for w in rows.windows(2) {
        assert!(
            w[0].number <= w[1].number,
            "generator/lib.rs: stage {} ({}) after stage {} ({})",
            w[1].number,
            w[1].name,
            w[0].number,
            w[0].name
        );
    }
    for r in rows {
        for m in &r.modules {
            assert!(
                modules.contains(m),
                "generator/lib.rs: stage {} ({}) names `{m}`, which is no module under generator/",
                r.number,
                r.name
            );
        }
    }
}

#[test]
fn architecture_md_has_the_stage_table_of_lib_rs() {
    let rows = stages_section(&repo_file("ARCHITECTURE.md"))
        .unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"));
    let lib = lib_rs_stages();
    let show = |rows: &[StageRow]| {
        rows.iter()
            .map(|r| format!("{} | {} | {}", r.number, r.name, r.modules.join(", ")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        rows,
        lib,
        "the stage table under `## Stages` in ARCHITECTURE.md is not the one in generator/lib.rs:\nARCHITECTURE.md:\n{}\ngenerator/lib.rs:\n{}",
        show(&rows),
        show(lib)
    );
}

#[test]
fn the_table_parser_takes_added_rows_and_refuses_broken_ones() {
    let table = "intro\n\n| # | stage | modules |\n|---|---|---|\n\
                 | 0 | types | [`a::b`], `a::c`: text |\n\
                 | 1 | targets | `x` (`x::y`, `x::Type`), `copygen z`, `w` |\n\
                 | 1 | kernel | `k` |\n\
                 | 2 | tools | `t` |\nafter";
    let rows = parse_stage_table(table.lines()).unwrap();
    let got: Vec<(usize, &str, Vec<&str>)> = rows
        .iter()
        .map(|r| {
            (
                r.number,
                r.name.as_str(),
                r.modules.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (0, "types", vec!["a::b", "a::c"]),
            (1, "targets", vec!["x", "w"]),
            (1, "kernel", vec!["k"]),
            (2, "tools", vec!["t"]),
        ]
    );
    assert!(parse_stage_table("| 0 | empty | no module |".lines()).is_err());
    assert!(parse_stage_table("| # | a |\n| 0 | a | `a` |\n| x | b | `b` |".lines()).is_err());
    assert!(parse_stage_table("no table".lines()).is_err());
    assert!(stages_section("# A\n\n| 0 | a | `a` |").is_err());
    assert_eq!(
        stages_section(
            "## Other\n| 0 | a | `a` |\n## Stages\n\n| 1 | b | `b` |\n## Next\n| 2 | c | `c` |"
        )
        .unwrap()
        .len(),
        1
    );
}

// ---- tools do not reach into each other ------------------------------------------

/// The children of `tools` that more than one tool uses. Every other child
/// of `tools` is one tool (`diff`, `kernel_patch`, `record`, `tune`): it
/// may name itself and the shared modules, never another tool; a shared
/// module names no tool. So no tool depends on another, and no cycle runs
/// through the tools.
const SHARED_TOOL_MODULES: &[&str] = &["bench", "host_cpu", "mail_text", "trace"];

/// The child of `tools` a module path lies in (`tools::bench::site`:
/// `bench`); none outside `tools` or for `tools` itself.
fn tool_of(module: &str) -> Option<&str> {
    module.strip_prefix("tools::")?.split("::").next()
}

/// The arrows of one file between children of `tools`: `(from, to)`.
fn tool_edges(module: &str, src: &str) -> Vec<(String, String)> {
    let Some(own) = tool_of(module) else {
        return Vec::new();
    };
    let mut edges: Vec<(String, String)> = crate_paths(src)
        .iter()
        .filter_map(|p| tool_of(p))
        .filter(|other| *other != own)
        .map(|other| (own.to_string(), other.to_string()))
        .collect();
    edges.sort();
    edges.dedup();
    edges
}

/// What is wrong with one file's arrows between children of `tools`.
fn tool_arrows(module: &str, src: &str) -> Vec<String> {
    tool_edges(module, src)
        .into_iter()
        .filter(|(_, to)| !SHARED_TOOL_MODULES.contains(&to.as_str()))
        .map(|(from, to)| {
            if SHARED_TOOL_MODULES.contains(&from.as_str()) {
                format!("{module} (shared by the tools) names the tool crate::tools::{to}")
            } else {
                format!("{module} (the tool `{from}`) names the tool crate::tools::{to}")
            }
        })
        .collect()
}

/// A cycle among `edges`, as the path that closes it, if there is one.
fn find_cycle(edges: &[(String, String)]) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &[(String, String)],
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut cycle = path[i..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.iter().any(|d| d == node) {
            return None;
        }
        path.push(node.to_string());
        for (_, to) in edges.iter().filter(|(from, _)| from == node) {
            if let Some(c) = visit(to, edges, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.push(node.to_string());
        None
    }
    let mut done = Vec::new();
    edges
        .iter()
        .find_map(|(from, _)| visit(from, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_tool_names_another_tool() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator");
    let mut files = Vec::new();
    rust_files(&root.join("tools"), &mut files);
    let mut edges = Vec::new();
    let mut wrong = Vec::new();
    for f in &files {
        let module = module_of(f.strip_prefix(&root).unwrap());
        let src = std::fs::read_to_string(f).unwrap();
        assert!(
            !src.contains("super::super::"),
            "{module} reaches past its tool with super::super:: (name crate::tools::… instead)"
        );
        wrong.extend(tool_arrows(&module, &src));
        edges.extend(tool_edges(&module, &src));
    }
    assert!(
        wrong.is_empty(),
        "tool-to-tool arrows:\n{}",
        wrong.join("\n")
    );
    assert_eq!(
        find_cycle(&edges),
        None,
        "a cycle between the children of tools"
    );
    // The shared modules exist, and the tools' modules are found.
    for shared in SHARED_TOOL_MODULES {
        let dir = root.join("tools").join(shared);
        assert!(
            dir.join("mod.rs").exists() || dir.with_extension("rs").exists(),
            "the shared module tools::{shared} does not exist"
        );
    }
    for tool in ["diff", "kernel_patch", "record", "tune"] {
        assert!(
            edges.iter().any(|(from, _)| from == tool),
            "no arrow from the tool {tool}: is the checker reading generator/tools?"
        );
    }
}

#[test]
fn the_checker_sees_tool_to_tool_arrows_and_cycles() {
    // A tool naming another tool, in every form; a shared module naming a tool.
    assert_eq!(
        tool_arrows("tools::tune::space", "use crate::tools::record::parse;"),
        ["tools::tune::space (the tool `tune`) names the tool crate::tools::record"]
    );
    assert_eq!(
        tool_arrows(
            "tools::kernel_patch",
            "use crate::tools::{diff::bench, trace::Trace};"
        )
        .len(),
        1
    );
    assert_eq!(
        tool_arrows(
            "tools::bench::site",
            "let w = crate::tools::kernel_patch::mail::wrap_line(l);"
        ),
        ["tools::bench::site (shared by the tools) names the tool crate::tools::kernel_patch"]
    );
    // Its own modules and the shared ones are fine.
    assert!(tool_arrows(
        "tools::tune::kernel",
        "use crate::tools::tune::bands;\nuse crate::tools::bench::{self, site};\nuse crate::tools::trace::Trace;"
    )
    .is_empty());
    assert!(tool_arrows("tools::bench::replay", "use crate::tools::trace::cell;").is_empty());
    assert!(tool_arrows("lower::variants", "use crate::tools::tune;").is_empty());
    // The cycle the tools once had, bench -> kernel_patch -> bench, is found.
    let e = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        find_cycle(&[
            e("trace", "host_cpu"),
            e("bench", "kernel_patch"),
            e("kernel_patch", "bench")
        ]),
        Some(vec!["bench".into(), "kernel_patch".into(), "bench".into()])
    );
    assert_eq!(
        find_cycle(&[
            e("tune", "bench"),
            e("bench", "trace"),
            e("record", "trace")
        ]),
        None
    );
}
