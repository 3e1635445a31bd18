//! `copygen diff OLD NEW`: what a change does to the code, its size and its
//! exception table, in the formats reviewers already read.
//!
//! A side is a strategy file (both flavours rendered for its arch), an
//! emitted `.S`, a folder holding an emitted tree, `WORKTREE` (this
//! checkout's `emitted/`) or a git revision (its `emitted/**.S`). Every file
//! is assembled with GNU as ([`objfile`]); sizes are the function symbols'
//! sizes (what `nm --size-sort` prints), entries are resolved `__ex_table`
//! entries, and the listings are the decoded instructions with branch
//! targets and fixups renamed `L1`, `L2`, ... in order of first appearance,
//! so renumbered labels are not noise.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::checks::objfile::{self, Assemble, FnSym, Loc, ObjectFile};
use crate::front::strategy::{symbol_of, Arch, Flavor, Strategy};

/// Bad input (exit 2): an unknown revision, an unreadable or unassemblable
/// file, a file whose architecture cannot be told.
#[derive(Debug)]
pub struct InputError(pub String);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InputError {}

fn input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(InputError(msg.into()))
}

/// The word that names this checkout's `emitted/` as a side.
pub const WORKTREE: &str = "WORKTREE";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Architecture of `.S` files (overrides header and path).
    pub arch: Option<Arch>,
    /// Only this flavour; for `.S` files, their flavour.
    pub flavor: Option<Flavor>,
    /// Keep the assembled objects here: `old/<rel>.o`, `new/<rel>.o`.
    pub save_objects: Option<PathBuf>,
    /// Where git runs and `WORKTREE` is looked up (default: the current folder).
    pub cwd: Option<PathBuf>,
}

// ---------------------------------------------------------------------------
// Sides

/// One `.S` text of a side.
#[derive(Debug, Clone)]
pub struct Source {
    /// Path relative to `emitted/` (`x86_64/linux/unrolled64.S`), or the
    /// file name of a foreign file.
    pub rel: String,
    pub text: String,
    pub arch: Arch,
    pub flavor: Flavor,
    /// The strategy's name, from the copygen header (or the strategy file).
    pub strategy: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideKind {
    /// A whole emitted tree (revision, folder, `WORKTREE`).
    Tree,
    /// A strategy file rendered in its flavours.
    Strategy,
    /// One `.S` file.
    File,
}

#[derive(Debug, Clone)]
pub struct Side {
    /// The argument as given.
    pub label: String,
    pub kind: SideKind,
    pub files: Vec<Source>,
    /// The validated strategy of a strategy-file side.
    pub strategy: Option<Strategy>,
}

/// Arch and flavour from an `.../<arch>/<flavor>/<file>` path.
fn path_facts(rel: &str) -> (Option<Arch>, Option<Flavor>) {
    let parts: Vec<&str> = rel.split(['/', '\\']).collect();
    for w in parts.windows(3) {
        if let (Some(a), Some(f)) = (Arch::parse(w[0]), Flavor::parse(w[1])) {
            return (Some(a), Some(f));
        }
    }
    (None, None)
}

/// A `.S` text read from `rel` (shown in errors as `shown`), classified.
fn source(rel: String, text: String, shown: &str, opts: &Options) -> Result<Source> {
    let header = crate::output::header::read(&text).map(|h| (h.name, h.arch, h.flavor));
    let (p_arch, p_flavor) = path_facts(&rel);
    let arch = opts
        .arch
        .or(header.as_ref().map(|h| h.1))
        .or(p_arch)
        .ok_or_else(|| {
            input(format!(
                "error: {shown}: no copygen header and no emitted/<arch>/<flavor>/ path: give --arch"
            ))
        })?;
    let kernel = text.contains("#include <linux/") || text.contains("#include <asm/");
    let flavor = opts
        .flavor
        .or(header.as_ref().map(|h| h.2))
        .or(p_flavor)
        .unwrap_or(if kernel {
            Flavor::Linux
        } else {
            Flavor::Standalone
        });
    Ok(Source {
        rel,
        text,
        arch,
        flavor,
        strategy: header.map(|h| h.0),
    })
}

fn run_git(dir: &Path, args: &[&str]) -> Result<std::process::Output> {
    crate::toolchain::GIT
        .command()
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| anyhow!("running git (Debian package `git`): {e}"))
}

fn git_toplevel(cwd: &Path) -> Option<PathBuf> {
    let out = run_git(cwd, &["rev-parse", "--show-toplevel"]).ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// `emitted/**.S` at a git revision.
fn revision_side(rev: &str, opts: &Options, cwd: &Path) -> Result<Side> {
    let top = git_toplevel(cwd).ok_or_else(|| {
        input(format!(
            "error: `{rev}` is not a file, a folder or `{WORKTREE}`, and {} is not in a git repository",
            cwd.display()
        ))
    })?;
    let spec = format!("{rev}^{{commit}}");
    let ok = run_git(&top, &["rev-parse", "--verify", "--quiet", &spec])?;
    if !ok.status.success() {
        return Err(input(format!(
            "error: `{rev}` is not a file, a folder, `{WORKTREE}` or a revision of {}",
            top.display()
        )));
    }
    let commit = String::from_utf8_lossy(&ok.stdout).trim().to_string();
    let ls = run_git(
        &top,
        &[
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            &commit,
            "--",
            "emitted",
        ],
    )?;
    if !ls.status.success() {
        return Err(anyhow!(
            "git ls-tree {rev}: {}",
            String::from_utf8_lossy(&ls.stderr)
        ));
    }
    let mut files = Vec::new();
    // -z: names as they are, not quoted.
    for path in String::from_utf8_lossy(&ls.stdout).split('\0') {
        let Some(rel) = path.strip_prefix("emitted/") else {
            continue;
        };
        if !rel.ends_with(".S") {
            continue;
        }
        let show = run_git(&top, &["show", &format!("{commit}:{path}")])?;
        if !show.status.success() {
            return Err(anyhow!(
                "git show {rev}:{path}: {}",
                String::from_utf8_lossy(&show.stderr)
            ));
        }
        let text = String::from_utf8(show.stdout)
            .map_err(|_| input(format!("error: {rev}:{path} is not UTF-8 text")))?;
        files.push(source(
            rel.to_string(),
            text,
            &format!("{rev}:{path}"),
            opts,
        )?);
    }
    Ok(Side {
        label: rev.to_string(),
        kind: SideKind::Tree,
        files: filter_flavor(files, opts),
        strategy: None,
    })
}

fn filter_flavor(mut files: Vec<Source>, opts: &Options) -> Vec<Source> {
    if let Some(f) = opts.flavor {
        files.retain(|s| s.flavor == f);
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// Every `.S` under `dir` (an emitted tree), relative to it.
fn folder_side(label: &str, dir: &Path, opts: &Options) -> Result<Side> {
    let root = if dir.join("emitted").is_dir() {
        dir.join("emitted")
    } else {
        dir.to_path_buf()
    };
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).map_err(|e| input(format!("error: {}: {e}", d.display())))?;
        for e in entries {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "S") {
                let rel = p
                    .strip_prefix(&root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&p)
                    .map_err(|e| input(format!("error: {}: {e}", p.display())))?;
                files.push(source(rel, text, &p.display().to_string(), opts)?);
            }
        }
    }
    Ok(Side {
        label: label.to_string(),
        kind: SideKind::Tree,
        files: filter_flavor(files, opts),
        strategy: None,
    })
}

/// A strategy file: its flavours rendered for its arch.
fn strategy_side(path: &Path, opts: &Options) -> Result<Side> {
    let s = crate::front::parse::load(path, opts.arch).map_err(|e| {
        if e.downcast_ref::<crate::front::diagnostics::StrategyError>()
            .is_some()
        {
            e
        } else {
            input(format!("error: {e:#}"))
        }
    })?;
    let flavors = match opts.flavor {
        Some(f) => vec![f],
        None => Flavor::ALL.to_vec(),
    };
    let files = flavors
        .into_iter()
        .map(|fl| Source {
            rel: crate::output::render::emitted_path(&s, fl),
            text: crate::output::render::render(&s, fl),
            arch: s.arch,
            flavor: fl,
            strategy: Some(s.name.clone()),
        })
        .collect();
    Ok(Side {
        label: path.display().to_string(),
        kind: SideKind::Strategy,
        files,
        strategy: Some(s),
    })
}

/// Read one side from its command-line argument.
pub fn load_side(arg: &str, opts: &Options) -> Result<Side> {
    let cwd = match &opts.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()?,
    };
    if arg == WORKTREE {
        let top = git_toplevel(&cwd).unwrap_or_else(crate::front::catalog::repo_root);
        return folder_side(arg, &top.join("emitted"), opts);
    }
    let path = cwd.join(arg);
    if path.is_dir() {
        return folder_side(arg, &path, opts);
    }
    if path.is_file() {
        if path.extension().is_some_and(|x| x == "toml") {
            return strategy_side(&path, opts).map(|mut s| {
                s.label = arg.to_string();
                s
            });
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| input(format!("error: {arg}: cannot read: {e}")))?;
        // An emitted file keeps its place under emitted/ so it pairs by path.
        let shown = path.to_string_lossy().replace('\\', "/");
        let rel = match shown.rfind("emitted/") {
            Some(i) => shown[i + "emitted/".len()..].to_string(),
            None => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| arg.to_string()),
        };
        let src = source(rel, text, arg, opts)?;
        return Ok(Side {
            label: arg.to_string(),
            kind: SideKind::File,
            files: vec![src],
            strategy: None,
        });
    }
    revision_side(arg, opts, &cwd)
}

// ---------------------------------------------------------------------------
// Assembly and listings

/// One assembled file.
struct Built {
    obj: ObjectFile,
    path: PathBuf,
}

fn object_rel(rel: &str) -> PathBuf {
    Path::new(rel).with_extension("o")
}

/// Assemble `src` into `dir/<rel>.o`; a file GNU as rejects is bad input.
fn build(src: &Source, dir: &Path, shown_side: &str) -> Result<Built> {
    let obj_path = dir.join(object_rel(&src.rel));
    let s_path = obj_path.with_extension("S");
    std::fs::create_dir_all(obj_path.parent().expect("has parent"))?;
    std::fs::write(&s_path, &src.text)?;
    objfile::assemble(&s_path, &obj_path, &Assemble::new(src.arch, src.flavor)).map_err(|e| {
        let msg = format!("{e:#}");
        if msg.contains("not found: install") {
            e
        } else {
            input(format!(
                "error: {shown_side}: {} does not assemble: {}",
                src.rel,
                msg.replace(&s_path.display().to_string(), &src.rel)
            ))
        }
    })?;
    let obj = objfile::read_path(&obj_path).map_err(|e| {
        input(format!(
            "error: {shown_side}: {}: cannot read the object: {e:#}",
            src.rel
        ))
    })?;
    Ok(Built {
        obj,
        path: obj_path,
    })
}

/// Decoded instructions of one function: `(address, text)` in order.
type Insns = Vec<(u64, String, Option<u64>)>;

/// x86 instructions of `f`: (address, text with `{target}` for a near
/// branch, branch target).
fn insns_x86(obj: &ObjectFile, f: &FnSym) -> Insns {
    use iced_x86::OpKind;
    objfile::decode_x86(obj.arch, obj.bytes_of(f), f.start)
        .iter()
        .map(|i| {
            let target = (0..i.op_count())
                .any(|k| {
                    matches!(
                        i.op_kind(k),
                        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                    )
                })
                .then(|| i.near_branch_target());
            (i.ip(), format_branch_x86(i, target), target)
        })
        .collect()
}

/// GNU as text of `i`, with its branch target printed as `{target}`.
fn format_branch_x86(i: &iced_x86::Instruction, target: Option<u64>) -> String {
    use iced_x86::{Formatter, SymbolResolver, SymbolResult};
    struct Placeholder(Option<u64>);
    impl SymbolResolver for Placeholder {
        fn symbol(
            &mut self,
            instruction: &iced_x86::Instruction,
            _operand: u32,
            instruction_operand: Option<u32>,
            address: u64,
            _size: u32,
        ) -> Option<SymbolResult<'_>> {
            use iced_x86::OpKind;
            let k = instruction.op_kind(instruction_operand?);
            (Some(address) == self.0
                && matches!(
                    k,
                    OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                ))
            .then(|| SymbolResult::with_str(address, "{target}"))
        }
    }
    let mut f = iced_x86::GasFormatter::with_options(Some(Box::new(Placeholder(target))), None);
    f.options_mut().set_uppercase_hex(false);
    f.options_mut().set_space_after_operand_separator(true);
    // `movq`, as the emitted files spell it.
    f.options_mut().set_gas_show_mnemonic_size_suffix(true);
    let mut s = String::new();
    f.format(i, &mut s);
    s
}

/// objdump's disassembly of every code section: section → [(address, text
/// with `{target}`, branch target)].
fn objdump_all(path: &Path, arch: Arch) -> Result<BTreeMap<String, Insns>> {
    let objdump = crate::toolchain::toolchain(arch).objdump;
    let tool = objdump.program;
    let out = objdump.output(
        objdump
            .command()
            .args(["-d", "--no-show-raw-insn", "-z"])
            .arg(path),
    )?;
    if !out.status.success() {
        return Err(anyhow!(
            "{tool} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut sections: BTreeMap<String, Insns> = BTreeMap::new();
    let mut current = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(s) = line.strip_prefix("Disassembly of section ") {
            current = s.trim_end_matches(':').to_string();
            continue;
        }
        let Some((addr, rest)) = line.split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        // Drop objdump's comments (`@ 0x14 <x+0x14>`, `; ...`).
        let rest = rest.split(['@', ';']).next().unwrap_or("").trim_end();
        let mut text = rest.replace('\t', " ");
        let mut target = None;
        // A branch operand reads `1c <sym+0x1c>`.
        if let Some(lt) = text.find(" <") {
            let head = &text[..lt];
            let start = head.rfind([' ', ',']).map_or(0, |i| i + 1);
            if let Ok(t) = u64::from_str_radix(&head[start..], 16) {
                target = Some(t);
                text = format!("{}{{target}}", &head[..start]);
            }
        }
        sections
            .entry(current.clone())
            .or_default()
            .push((addr, text, target));
    }
    Ok(sections)
}

/// The listing of `f`: labels numbered by first appearance, user accesses
/// marked with their fixup, no addresses or encodings.
fn listing(obj: &ObjectFile, f: &FnSym, insns: &Insns) -> Vec<String> {
    let fixups: BTreeMap<u64, Loc> = obj
        .entries_of(f)
        .map(|e| (e.insn.offset, e.fixup.clone()))
        .collect();
    let inside = |l: &Loc| f.contains(l);
    // Addresses that get a label line: branch targets and fixups inside f.
    let mut targets: std::collections::BTreeSet<u64> = insns
        .iter()
        .filter_map(|i| i.2)
        .filter(|&t| (f.start..f.end).contains(&t))
        .collect();
    targets.extend(fixups.values().filter(|l| inside(l)).map(|l| l.offset));
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut outside: HashMap<Loc, String> = HashMap::new();
    let name_of = |at: u64, names: &mut HashMap<u64, String>| -> String {
        let n = names.len() + 1;
        names.entry(at).or_insert_with(|| format!("L{n}")).clone()
    };
    let far = |l: &Loc, outside: &mut HashMap<Loc, String>| -> String {
        let n = outside.len() + 1;
        outside
            .entry(l.clone())
            .or_insert_with(|| format!("F{n}"))
            .clone()
    };
    let mut out = Vec::new();
    for (addr, text, target) in insns {
        if targets.contains(addr) {
            let l = name_of(*addr, &mut names);
            out.push(format!("{l}:"));
        }
        let mut line = text.clone();
        if let Some(t) = target {
            let tl = Loc {
                section: f.section.clone(),
                offset: *t,
            };
            let label = if inside(&tl) {
                name_of(*t, &mut names)
            } else if let Some(g) = obj.function_at(&tl) {
                format!("{}+{:#x}", g.name, t - g.start)
            } else {
                far(&tl, &mut outside)
            };
            line = line.replace("{target}", &label);
        }
        if let Some(fx) = fixups.get(addr) {
            let label = if inside(fx) {
                name_of(fx.offset, &mut names)
            } else {
                far(fx, &mut outside)
            };
            line.push_str(&format!(" ; user \u{2192} fixup {label}"));
        }
        out.push(format!("\t{line}"));
    }
    out
}

/// A listing line with its label names (`L3`, `F1`) replaced by `L?`, and
/// the names in order.
fn abstract_labels(line: &str) -> (String, Vec<&str>) {
    let mut out = String::with_capacity(line.len());
    let mut labels = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (word, tail) = if end == 0 {
            let n = rest.chars().next().map_or(1, char::len_utf8);
            rest.split_at(n)
        } else {
            rest.split_at(end)
        };
        let is_label = word.len() > 1
            && (word.starts_with('L') || word.starts_with('F'))
            && word[1..].bytes().all(|b| b.is_ascii_digit());
        if is_label {
            out.push_str("L?");
            labels.push(word);
        } else {
            out.push_str(word);
        }
        rest = tail;
    }
    (out, labels)
}

/// Rename the labels of `new` after the `old` labels they stand for, so an
/// inserted or dropped label does not renumber every later one: lines that
/// are equal with the names abstracted pair their labels up; labels only
/// `new` has get numbers after the highest of `old`, in order of appearance.
fn align_labels(old: &[String], new: &[String]) -> Vec<String> {
    let a: Vec<(String, Vec<&str>)> = old.iter().map(|l| abstract_labels(l)).collect();
    let b: Vec<(String, Vec<&str>)> = new.iter().map(|l| abstract_labels(l)).collect();
    let ka: Vec<&str> = a.iter().map(|x| x.0.as_str()).collect();
    let kb: Vec<&str> = b.iter().map(|x| x.0.as_str()).collect();
    let mut map: HashMap<&str, String> = HashMap::new();
    let mut taken: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &ka, &kb);
    // A label is where it is defined: pair definitions first, so a branch
    // that now goes elsewhere shows as changed; then references to labels
    // defined elsewhere (fixups in another section).
    for definitions in [true, false] {
        for op in &ops {
            let similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = *op
            else {
                continue;
            };
            for k in 0..len {
                if (ka[old_index + k] == "L?:") != definitions {
                    continue;
                }
                let (la, lb) = (&a[old_index + k].1, &b[new_index + k].1);
                for (x, y) in la.iter().zip(lb) {
                    if x[..1] == y[..1] && !map.contains_key(y) && !taken.contains(x) {
                        map.insert(y, x.to_string());
                        taken.insert(x);
                    }
                }
            }
        }
    }
    let mut next: HashMap<char, usize> = HashMap::new();
    for (_, labels) in &a {
        for l in labels {
            let n: usize = l[1..].parse().unwrap_or(0);
            let e = next.entry(l.chars().next().unwrap()).or_insert(0);
            *e = (*e).max(n);
        }
    }
    b.iter()
        .map(|(text, labels)| {
            let mut out = String::new();
            let mut parts = text.split("L?");
            out.push_str(parts.next().unwrap_or(""));
            for (label, part) in labels.iter().zip(parts) {
                let name = map.entry(label).or_insert_with(|| {
                    let kind = label.chars().next().unwrap();
                    let e = next.entry(kind).or_insert(0);
                    *e += 1;
                    format!("{kind}{e}")
                });
                out.push_str(name);
                out.push_str(part);
            }
            out
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Tables (scripts/bloat-o-meter)

/// One row: a function's figure on each side.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub old: Option<u64>,
    pub new: Option<u64>,
    pub delta: i64,
}

/// bloat-o-meter's summary and rows (all of them; the text skips delta 0).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Table {
    pub add: usize,
    pub remove: usize,
    pub grow: usize,
    pub shrink: usize,
    pub up: u64,
    pub down: u64,
    pub net: i64,
    pub before: u64,
    pub after: u64,
    pub change_percent: f64,
    pub rows: Vec<Row>,
}

/// bloat-o-meter's `calc`: rows sorted by (delta, name), descending.
pub fn table(old: &BTreeMap<String, u64>, new: &BTreeMap<String, u64>) -> Table {
    let (mut add, mut remove, mut grow, mut shrink, mut up, mut down) = (0, 0, 0, 0, 0u64, 0u64);
    let mut rows = Vec::new();
    for (name, &o) in old {
        match new.get(name) {
            None => {
                remove += 1;
                down += o;
            }
            Some(&n) if n > o => {
                grow += 1;
                up += n - o;
            }
            Some(&n) if n < o => {
                shrink += 1;
                down += o - n;
            }
            Some(_) => {}
        }
        let n = new.get(name).copied();
        rows.push(Row {
            name: name.clone(),
            old: Some(o),
            new: n,
            delta: n.unwrap_or(0) as i64 - o as i64,
        });
    }
    for (name, &n) in new {
        if !old.contains_key(name) {
            add += 1;
            up += n;
            rows.push(Row {
                name: name.clone(),
                old: None,
                new: Some(n),
                delta: n as i64,
            });
        }
    }
    rows.sort_by(|a, b| (b.delta, &b.name).cmp(&(a.delta, &a.name)));
    let before: u64 = old.values().sum();
    let after: u64 = new.values().sum();
    let change_percent = if before != 0 {
        (after as f64 - before as f64) * 100.0 / before as f64
    } else {
        0.0
    };
    Table {
        add,
        remove,
        grow,
        shrink,
        up,
        down,
        net: up as i64 - down as i64,
        before,
        after,
        change_percent,
        rows,
    }
}

/// The table exactly as `scripts/bloat-o-meter` prints it; `kind` is the
/// first column's heading (`Function`).
pub fn format_bloat(t: &Table, kind: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "add/remove: {}/{} grow/shrink: {}/{} up/down: {}/{} ({})",
        t.add,
        t.remove,
        t.grow,
        t.shrink,
        t.up,
        -(t.down as i64),
        t.net
    );
    let _ = writeln!(s, "{:<40} {:>7} {:>7} {:>7}", kind, "old", "new", "delta");
    let dash = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for r in t.rows.iter().filter(|r| r.delta != 0) {
        let _ = writeln!(
            s,
            "{:<40} {:>7} {:>7} {:>+7}",
            r.name,
            dash(r.old),
            dash(r.new),
            r.delta
        );
    }
    let _ = writeln!(
        s,
        "Total: Before={}, After={}, chg {:+.2}%",
        t.before, t.after, t.change_percent
    );
    s
}

// ---------------------------------------------------------------------------
// The report

/// A pair of files compared.
#[derive(Debug, Clone, Serialize)]
pub struct FilePair {
    pub old: Option<String>,
    pub new: Option<String>,
    pub arch: Arch,
    pub flavor: Flavor,
    /// `unchanged` (same text), `modified`, `added` or `removed`.
    pub status: &'static str,
}

/// A function whose code or exception table changed.
#[derive(Debug, Clone, Serialize)]
pub struct FnChange {
    pub name: String,
    /// `modified`, `added` or `removed`.
    pub status: &'static str,
    pub old_size: Option<u64>,
    pub new_size: Option<u64>,
    pub old_entries: Option<u64>,
    pub new_entries: Option<u64>,
    /// The listings' unified diff (empty when they could not be made).
    pub diff: String,
    /// The symbol in its own objects (without the file qualifier).
    pub symbol: String,
    /// `rel` of the file on each side.
    pub old_file: Option<String>,
    pub new_file: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub old: String,
    pub new: String,
    pub files: Vec<FilePair>,
    /// `.text` bytes per function (symbol sizes).
    pub text: Table,
    /// `__ex_table` entries per function.
    pub entries: Table,
    pub changed: Vec<FnChange>,
    pub notes: Vec<String>,
}

/// What one side knows of a function.
struct FnView {
    size: u64,
    entries: u64,
    listing: Option<Vec<String>>,
    symbol: String,
    file: String,
}

/// Pair the files of the two sides: two single arguments pair directly
/// (by flavour when one is a strategy file), a single file against a tree
/// pairs with the tree's file at the same path, two trees pair by path.
fn pair_files(old: &Side, new: &Side) -> Vec<(Option<usize>, Option<usize>)> {
    let single = |s: &Side| s.kind != SideKind::Tree;
    let mut pairs = Vec::new();
    if single(old) && single(new) {
        if old.files.len() == 1 && new.files.len() == 1 {
            return vec![(Some(0), Some(0))];
        }
        for (i, o) in old.files.iter().enumerate() {
            if let Some(j) = new.files.iter().position(|n| n.flavor == o.flavor) {
                pairs.push((Some(i), Some(j)));
            }
        }
        return pairs;
    }
    let rels = |s: &Side| -> BTreeMap<String, usize> {
        s.files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.rel.clone(), i))
            .collect()
    };
    let (o, n) = (rels(old), rels(new));
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        // A single file against a tree looks at that file only.
        if (single(old) && !o.contains_key(k)) || (single(new) && !n.contains_key(k)) {
            continue;
        }
        pairs.push((o.get(k).copied(), n.get(k).copied()));
    }
    pairs
}

/// Compare two sides.
pub fn diff(old: &Side, new: &Side, opts: &Options) -> Result<Report> {
    let tmp = tempfile::tempdir()?;
    let dir = opts
        .save_objects
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let pairs = pair_files(old, new);
    let qualify = pairs.len() > 1;
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut collected = Vec::new();
    // Same text, same flags: assemble once.
    let mut cache: HashMap<(String, Arch, Flavor), (ObjectFile, PathBuf)> = HashMap::new();
    for (oi, ni) in &pairs {
        let o = oi.map(|i| &old.files[i]);
        let n = ni.map(|i| &new.files[i]);
        let any = n.or(o).expect("a pair has a side");
        let display = n.map_or(&any.rel, |n| &n.rel).clone();
        let status = match (o, n) {
            (Some(a), Some(b)) if a.text == b.text => "unchanged",
            (Some(_), Some(_)) => "modified",
            (None, _) => "added",
            (_, None) => "removed",
        };
        files.push(FilePair {
            old: o.map(|s| s.rel.clone()),
            new: n.map(|s| s.rel.clone()),
            arch: any.arch,
            flavor: any.flavor,
            status,
        });
        // Directly paired files of differently named strategies: compare
        // `<old>_from_user` with `<new>_from_user`.
        let rename = match (
            o.and_then(|s| s.strategy.as_ref()),
            n.and_then(|s| s.strategy.as_ref()),
        ) {
            (Some(a), Some(b)) if a != b => Some((symbol_of(a), symbol_of(b))),
            _ => None,
        };
        for (k, (src, side)) in [(o, "old"), (n, "new")].into_iter().enumerate() {
            let Some(src) = src else { continue };
            let key = (src.text.clone(), src.arch, src.flavor);
            let side_dir = dir.join(side);
            let (obj, path) = match cache.get(&key) {
                Some((obj, p)) => {
                    let to = side_dir.join(object_rel(&src.rel));
                    if opts.save_objects.is_some() && *p != to {
                        std::fs::create_dir_all(to.parent().expect("parent"))?;
                        std::fs::copy(p, &to)?;
                    }
                    (obj.clone(), p.clone())
                }
                None => {
                    let label = if k == 0 { &old.label } else { &new.label };
                    let b = build(src, &side_dir, label)?;
                    cache.insert(key, (b.obj.clone(), b.path.clone()));
                    (b.obj, b.path)
                }
            };
            let dump = match obj.arch {
                Arch::Armv6 => match objdump_all(&path, obj.arch) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        let note = format!("no ARM listings: {e:#}");
                        if !notes.contains(&note) {
                            notes.push(note);
                        }
                        None
                    }
                },
                _ => None,
            };
            for f in &obj.functions {
                let insns = match obj.arch {
                    Arch::X86_64 | Arch::I386 => Some(insns_x86(&obj, f)),
                    Arch::Armv6 => dump.as_ref().map(|d| {
                        d.get(&f.section)
                            .map(|v| {
                                v.iter()
                                    .filter(|i| (f.start..f.end).contains(&i.0))
                                    .cloned()
                                    .collect()
                            })
                            .unwrap_or_default()
                    }),
                };
                // The new side keeps its names; the old side is renamed.
                let sym = match (&rename, k) {
                    (Some((a, b)), 0) => match f.name.strip_prefix(a.as_str()) {
                        Some(rest) => format!("{b}{rest}"),
                        None => f.name.clone(),
                    },
                    _ => f.name.clone(),
                };
                collected.push((
                    k,
                    format!("{}/{}", any.arch, any.flavor),
                    display.clone(),
                    sym,
                    FnView {
                        size: f.end - f.start,
                        entries: obj.entries_of(f).count() as u64,
                        listing: insns.map(|i| listing(&obj, f, &i)),
                        symbol: f.name.clone(),
                        file: src.rel.clone(),
                    },
                ));
            }
        }
    }
    // Rows are `<arch>/<flavor>:<symbol>` when several files are compared,
    // `<path>:<symbol>` should two files of one arch and flavour share a symbol.
    let short_ok = [0, 1].iter().all(|&k| {
        let mut seen = std::collections::HashSet::new();
        collected
            .iter()
            .filter(|c| c.0 == k)
            .all(|c| seen.insert((&c.1, &c.3)))
    });
    let mut fns: [BTreeMap<String, FnView>; 2] = [BTreeMap::new(), BTreeMap::new()];
    for (k, short, full, sym, view) in collected {
        let name = match (qualify, short_ok) {
            (false, _) => sym,
            (true, true) => format!("{short}:{sym}"),
            (true, false) => format!("{full}:{sym}"),
        };
        fns[k].insert(name, view);
    }
    if let Some(rn) = pairs.iter().find_map(|(o, n)| {
        let a = old.files[(*o)?].strategy.clone()?;
        let b = new.files[(*n)?].strategy.clone()?;
        (a != b).then_some((a, b))
    }) {
        notes.push(format!(
            "old symbols {}_* compared with new {}_*",
            symbol_of(&rn.0),
            symbol_of(&rn.1)
        ));
    }
    let sizes = |m: &BTreeMap<String, FnView>| m.iter().map(|(k, v)| (k.clone(), v.size)).collect();
    let counts =
        |m: &BTreeMap<String, FnView>| m.iter().map(|(k, v)| (k.clone(), v.entries)).collect();
    let text = table(&sizes(&fns[0]), &sizes(&fns[1]));
    let entries = table(&counts(&fns[0]), &counts(&fns[1]));
    let mut names: Vec<&String> = fns[0].keys().chain(fns[1].keys()).collect();
    names.sort();
    names.dedup();
    let mut changed = Vec::new();
    for name in names {
        let (o, n) = (fns[0].get(name), fns[1].get(name));
        let joined = |l: &[String]| -> String {
            let mut s = l.join("\n");
            s.push('\n');
            s
        };
        let (lo, ln) = match (o.map(|v| &v.listing), n.map(|v| &v.listing)) {
            (Some(Some(a)), Some(Some(b))) => (Some(joined(a)), Some(joined(&align_labels(a, b)))),
            (Some(a), Some(b)) => (a.as_deref().map(joined), b.as_deref().map(joined)),
            (None, b) => (
                Some(String::new()),
                b.and_then(|b| b.as_deref().map(joined)),
            ),
            (a, None) => (
                a.and_then(|a| a.as_deref().map(joined)),
                Some(String::new()),
            ),
        };
        let same_figures =
            matches!((o, n), (Some(a), Some(b)) if a.size == b.size && a.entries == b.entries);
        let same_code = lo.is_some() && lo == ln;
        if same_figures && (same_code || lo.is_none() || ln.is_none()) {
            continue;
        }
        let diff = match (&lo, &ln) {
            (Some(a), Some(b)) if a != b => {
                let ha = if o.is_some() {
                    format!("a/{name}")
                } else {
                    "/dev/null".into()
                };
                let hb = if n.is_some() {
                    format!("b/{name}")
                } else {
                    "/dev/null".into()
                };
                similar::TextDiff::from_lines(a.as_str(), b.as_str())
                    .unified_diff()
                    .context_radius(3)
                    .header(&ha, &hb)
                    .to_string()
            }
            _ => String::new(),
        };
        changed.push(FnChange {
            name: name.clone(),
            status: match (o, n) {
                (Some(_), Some(_)) => "modified",
                (None, _) => "added",
                (_, None) => "removed",
            },
            old_size: o.map(|v| v.size),
            new_size: n.map(|v| v.size),
            old_entries: o.map(|v| v.entries),
            new_entries: n.map(|v| v.entries),
            diff,
            symbol: n.or(o).map(|v| v.symbol.clone()).unwrap_or_default(),
            old_file: o.map(|v| v.file.clone()),
            new_file: n.map(|v| v.file.clone()),
        });
    }
    Ok(Report {
        old: old.label.clone(),
        new: new.label.clone(),
        files,
        text,
        entries,
        changed,
        notes,
    })
}

/// Load both sides and compare them.
pub fn run(old: &str, new: &str, opts: &Options) -> Result<Report> {
    let o = load_side(old, opts).with_context(|| format!("reading {old}"))?;
    let n = load_side(new, opts).with_context(|| format!("reading {new}"))?;
    diff(&o, &n, opts)
}

// ---------------------------------------------------------------------------
// Output

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The plain-text report; `color` adds ANSI colours to the diffs.
pub fn render_text(r: &Report, color: bool) -> String {
    let mut s = String::new();
    let title = |s: &mut String, t: &str| {
        if color {
            let _ = writeln!(s, "{BOLD}# {t}{RESET}");
        } else {
            let _ = writeln!(s, "# {t}");
        }
    };
    let changed_files = r.files.iter().filter(|f| f.status != "unchanged").count();
    let _ = writeln!(
        s,
        "copygen diff {} {}: {} file pair{}, {} changed",
        r.old,
        r.new,
        r.files.len(),
        if r.files.len() == 1 { "" } else { "s" },
        changed_files
    );
    s.push('\n');
    title(&mut s, ".text bytes per function");
    s.push_str(&format_bloat(&r.text, "Function"));
    s.push('\n');
    title(&mut s, "__ex_table entries per function");
    s.push_str(&format_bloat(&r.entries, "Function"));
    s.push('\n');
    title(&mut s, "instructions of changed functions");
    let diffs: Vec<&FnChange> = r.changed.iter().filter(|c| !c.diff.is_empty()).collect();
    if diffs.is_empty() {
        let _ = writeln!(s, "(no instruction changes)");
    }
    for c in diffs {
        for line in c.diff.lines() {
            let paint = if !color {
                None
            } else if line.starts_with("---") || line.starts_with("+++") {
                Some(BOLD)
            } else if line.starts_with("@@") {
                Some(CYAN)
            } else if line.starts_with('+') {
                Some(GREEN)
            } else if line.starts_with('-') {
                Some(RED)
            } else {
                None
            };
            match paint {
                Some(p) => {
                    let _ = writeln!(s, "{p}{line}{RESET}");
                }
                None => {
                    let _ = writeln!(s, "{line}");
                }
            }
        }
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The report as JSON (the same figures as the text).
pub fn render_json(r: &Report) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("report serialises");
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------
// --bench

/// A changed routine `--bench` times in both versions.
pub struct BenchPair {
    /// The row name in the report.
    pub name: String,
    /// The symbol on each side (they differ when two differently named
    /// strategy files were compared).
    pub old_symbol: String,
    pub new_symbol: String,
    pub old: Strategy,
    pub new: Strategy,
}

/// The changed x86_64 routines present on both sides, with their
/// strategies (strategy files as given; emitted files through the strategy
/// their header restates). The JIT runs the standalone (SysV) ABI, so each
/// routine is timed once, from the standalone file if both flavours changed.
pub fn bench_pairs(r: &Report, old: &Side, new: &Side) -> Result<Vec<BenchPair>> {
    let strategy_of = |side: &Side, rel: &str| -> Result<Option<Strategy>> {
        if let Some(s) = &side.strategy {
            return Ok(Some(s.clone()));
        }
        let Some(src) = side.files.iter().find(|f| f.rel == rel) else {
            return Ok(None);
        };
        crate::output::header::restated_strategy(&src.text, Some(src.arch)).transpose()
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut changed: Vec<&FnChange> = r
        .changed
        .iter()
        .filter(|c| c.status == "modified")
        .collect();
    // Standalone first: that is the ABI the JIT runs.
    changed.sort_by_key(|c| !c.new_file.as_deref().unwrap_or("").contains("/standalone/"));
    for c in changed {
        let (Some(of), Some(nf)) = (&c.old_file, &c.new_file) else {
            continue;
        };
        let (Some(os), Some(ns)) = (strategy_of(old, of)?, strategy_of(new, nf)?) else {
            continue;
        };
        if os.arch != Arch::X86_64 || ns.arch != Arch::X86_64 || !seen.insert(c.symbol.clone()) {
            continue;
        }
        let old_symbol = if os.symbol != ns.symbol {
            c.symbol.replacen(&ns.symbol, &os.symbol, 1)
        } else {
            c.symbol.clone()
        };
        out.push(BenchPair {
            name: c.symbol.clone(),
            old_symbol,
            new_symbol: c.symbol.clone(),
            old: os,
            new: ns,
        });
    }
    Ok(out)
}

/// The old and new routine of `pair`, JIT-compiled and ready to call,
/// named `old:<sym>`/`new:<sym>`.
pub fn bench_subjects(pair: &BenchPair) -> Result<Vec<crate::tools::bench::Subject>> {
    [
        ("old", &pair.old, &pair.old_symbol),
        ("new", &pair.new, &pair.new_symbol),
    ]
    .into_iter()
    .map(|(tag, s, sym)| crate::tools::bench::jit_subject(s, sym, format!("{tag}:{sym}")))
    .collect()
}

/// Sizes `--bench` times each changed routine at (bytes, page-aligned).
pub const BENCH_SIZES: &[usize] = &[1, 7, 8, 63, 64, 256, 1024, 4096];

/// Time the old and new version of every changed routine: a text table of
/// median cycles per call (bench's format), or why it cannot.
pub fn bench_changed(r: &Report, old: &Side, new: &Side) -> Result<String> {
    let pairs = bench_pairs(r, old, new)?;
    if pairs.is_empty() {
        return Ok("\n# bench\n(no changed x86_64 routine on both sides to time)\n".into());
    }
    // One sweep per routine, old first: bench's ratio column is new/old.
    let mut subjects = Vec::new();
    for p in &pairs {
        subjects.push(bench_subjects(p)?);
    }
    let sweep = crate::tools::bench::custom(BENCH_SIZES, &[0], &[0]);
    let mut out = String::from("\n# bench: old and new version of each changed routine\n");
    for (p, subjects) in pairs.iter().zip(&subjects) {
        let results = crate::tools::bench::run(&sweep, subjects, 15, &|_, _| {});
        let _ = writeln!(out, "## {}", p.name);
        out.push_str(&crate::tools::bench::text_table(&results));
    }
    Ok(out)
}
