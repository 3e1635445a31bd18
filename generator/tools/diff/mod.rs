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
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::checks::objfile::{self, Assemble, FnSym, Loc, ObjectFile};
use crate::front::strategy::{symbol_of, Arch, Flavor, Strategy};
use crate::input::BadInput;

/// How long one diff may search for the shortest edit script. Listings of
/// a few thousand lines take milliseconds; two of tens of thousands that
/// hardly match would take Myers minutes (its time grows with the length
/// times the number of edits). Past this the diff is still a correct edit
/// script, only perhaps not the shortest.
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);

/// The edit script from `old` to `new` (Myers, within [`DIFF_TIMEOUT`]).
pub(super) fn edit_script<T: std::hash::Hash + Eq + Ord>(
    old: &[T],
    new: &[T],
) -> Vec<similar::DiffOp> {
    let deadline = Instant::now() + DIFF_TIMEOUT;
    similar::capture_diff_slices_deadline(similar::Algorithm::Myers, old, new, Some(deadline))
}

/// Bad input ([`BadInput`], exit 2): an unknown revision, an unreadable or
/// unassemblable file, a file whose architecture cannot be told.
fn input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// The word that names this checkout's `emitted/` as a side.
pub const WORKTREE: &str = "WORKTREE";

#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Architecture of `.S` files (overrides header and path).
    pub arch: Option<Arch>,
    /// Only this flavour's files of a tree or strategy; the flavour of a
    /// `.S` file that states none (no copygen header, no emitted/ path).
    pub flavor: Option<Flavor>,
    /// Keep the assembled objects here: `old/<rel>.o`, `new/<rel>.o`.
    pub save_objects: Option<PathBuf>,
    /// Where git runs and `WORKTREE` is looked up (default: the current folder).
    pub cwd: Option<PathBuf>,
}

mod bench;
mod bloat;
mod listing;
mod sides;

pub use bench::{bench_changed, bench_pairs, bench_subjects, BenchPair, BENCH_SIZES};
pub use bloat::{format_bloat, table, BloatRow, Table};
use listing::{align_labels, build, insns_x86, listing, objdump_all, object_rel};
pub use sides::{load_side, Side, SideKind, Source};

// ---------------------------------------------------------------------------
// The report

/// What happened to a file or a function between the two sides (its JSON
/// spelling is the lower-case name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The same text on both sides (files only).
    Unchanged,
    Modified,
    Added,
    Removed,
}

impl Change {
    /// Present on one side or both (`Modified`: both, different).
    fn of<T>(old: Option<T>, new: Option<T>) -> Change {
        match (old, new) {
            (Some(_), Some(_)) => Change::Modified,
            (None, _) => Change::Added,
            (_, None) => Change::Removed,
        }
    }
}

/// A pair of files compared.
#[derive(Debug, Clone, Serialize)]
pub struct FilePair {
    pub old: Option<String>,
    pub new: Option<String>,
    pub arch: Arch,
    pub flavor: Flavor,
    pub status: Change,
}

/// One exception-table entry of a function, named as the listings name
/// things: the instruction's text and the fixup's label (`L2`, `F1`), so
/// renumbered labels and moved code are not a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtableRow {
    /// Offset of the instruction in its function (shown, not compared).
    pub offset: u64,
    /// The instruction (`+0x1a`, its offset, when no listing has it).
    pub insn: String,
    pub fixup: String,
    /// How its words are relocated: `relative` or `absolute`.
    pub kind: String,
    /// The entry type of 12-byte entries ([`crate::kernel::extable`]):
    /// `EX_TYPE_UACCESS`.
    #[serde(rename = "type")]
    pub entry_type: Option<String>,
    /// The type word's data fields, when any is not 0 (`reg=2 imm=-14`).
    pub data: Option<String>,
}

impl ExtableRow {
    /// What differs between two entries paired up (`insn`, `fixup`,
    /// `kind`, `type`, `data`; the offset is not compared).
    fn differences(&self, new: &ExtableRow) -> Vec<String> {
        [
            ("insn", self.insn != new.insn),
            ("fixup", self.fixup != new.fixup),
            ("kind", self.kind != new.kind),
            ("type", self.entry_type != new.entry_type),
            ("data", self.data != new.data),
        ]
        .into_iter()
        .filter(|x| x.1)
        .map(|x| x.0.to_string())
        .collect()
    }
}

/// An entry of the old side, of the new side, or of both paired up.
#[derive(Debug, Clone, Serialize)]
pub struct ExtablePair {
    /// `unchanged`, `modified` (paired, `changed` says what differs),
    /// `added` or `removed`.
    pub status: Change,
    pub old: Option<ExtableRow>,
    pub new: Option<ExtableRow>,
    /// The fields that differ ([`ExtableRow`]'s names: `type` for a type
    /// change such as `EX_TYPE_COPY` to `EX_TYPE_UACCESS`).
    pub changed: Vec<String>,
}

/// Pair the entries of the two sides, each in the order of its
/// instructions in the function: entries on the same instruction text in
/// the same order pair up; between those, entries pair by order and the
/// rest are added or removed.
fn pair_entries(old: &[ExtableRow], new: &[ExtableRow]) -> Vec<ExtablePair> {
    let ka: Vec<&str> = old.iter().map(|e| e.insn.as_str()).collect();
    let kb: Vec<&str> = new.iter().map(|e| e.insn.as_str()).collect();
    let mut out = Vec::new();
    let both = |o: &ExtableRow, n: &ExtableRow| {
        let changed = o.differences(n);
        ExtablePair {
            status: if changed.is_empty() {
                Change::Unchanged
            } else {
                Change::Modified
            },
            old: Some(o.clone()),
            new: Some(n.clone()),
            changed,
        }
    };
    let one = |e: &ExtableRow, status: Change| ExtablePair {
        status,
        old: (status == Change::Removed).then(|| e.clone()),
        new: (status == Change::Added).then(|| e.clone()),
        changed: Vec::new(),
    };
    for op in edit_script(&ka, &kb) {
        let (o, n) = (op.old_range(), op.new_range());
        let paired = o.len().min(n.len());
        for k in 0..paired {
            out.push(both(&old[o.start + k], &new[n.start + k]));
        }
        out.extend(
            old[o.start + paired..o.end]
                .iter()
                .map(|e| one(e, Change::Removed)),
        );
        out.extend(
            new[n.start + paired..n.end]
                .iter()
                .map(|e| one(e, Change::Added)),
        );
    }
    out
}

/// A function whose code or exception table changed.
#[derive(Debug, Clone, Serialize)]
pub struct FnChange {
    pub name: String,
    /// Never [`Change::Unchanged`].
    pub status: Change,
    pub old_size: Option<u64>,
    pub new_size: Option<u64>,
    pub old_entries: Option<u64>,
    pub new_entries: Option<u64>,
    /// The listings' unified diff (empty when they could not be made).
    pub diff: String,
    /// The function's exception-table entries paired old with new
    /// ([`pair_entries`]) when any entry changed; empty otherwise.
    pub extable: Vec<ExtablePair>,
    /// The symbol in its own objects (without the file qualifier).
    pub symbol: String,
    /// `rel` of the file on each side.
    pub old_file: Option<String>,
    pub new_file: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
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
    /// The entries in the order of their instructions.
    rows: Vec<ExtableRow>,
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
pub fn diff(old: &Side, new: &Side, opts: &DiffOptions) -> Result<DiffReport> {
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
            (Some(a), Some(b)) if a.text == b.text => Change::Unchanged,
            _ => Change::of(o, n),
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
                Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64 => match objdump_all(&path, obj.arch) {
                    Ok(d) => Some(d),
                    Err(e) => {
                        let note = format!("no {} listings: {e:#}", obj.arch);
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
                    Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64 => dump.as_ref().map(|d| {
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
                let named = listing(&obj, f, insns.as_deref().unwrap_or_default());
                let mut rows: Vec<ExtableRow> = obj
                    .entries_of(f)
                    .zip(named.entries)
                    .map(|(e, (insn, fixup))| {
                        let t = e
                            .type_word
                            .map(|w| crate::kernel::extable::entry_type(obj.arch, w));
                        ExtableRow {
                            offset: e.insn.offset - f.start,
                            insn,
                            fixup,
                            kind: match e.kind {
                                objfile::EntryKind::Relative => "relative",
                                objfile::EntryKind::Absolute => "absolute",
                            }
                            .to_string(),
                            entry_type: t.as_ref().map(|t| t.name.clone()),
                            data: t.and_then(|t| t.data),
                        }
                    })
                    .collect();
                rows.sort_by_key(|r| r.offset);
                collected.push((
                    k,
                    format!("{}/{}", any.arch, any.flavor),
                    display.clone(),
                    sym,
                    FnView {
                        size: f.end - f.start,
                        entries: rows.len() as u64,
                        listing: insns.is_some().then_some(named.lines),
                        rows,
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
        // The new side's entries, named after the old side's labels.
        let mut new_rows = n.map(|v| v.rows.clone()).unwrap_or_default();
        let (lo, ln) = match (o.map(|v| &v.listing), n.map(|v| &v.listing)) {
            (Some(Some(a)), Some(Some(b))) => {
                let names: Vec<String> = new_rows
                    .iter()
                    .flat_map(|r| [r.insn.clone(), r.fixup.clone()])
                    .collect();
                let (lines, names) = align_labels(a, b, &names);
                for (r, pair) in new_rows.iter_mut().zip(names.chunks(2)) {
                    r.insn = pair[0].clone();
                    r.fixup = pair[1].clone();
                }
                (Some(joined(a)), Some(joined(&lines)))
            }
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
        let old_rows = o.map(|v| v.rows.as_slice()).unwrap_or_default();
        let extable = pair_entries(old_rows, &new_rows);
        let same_entries = extable.iter().all(|p| p.status == Change::Unchanged);
        if same_figures && same_entries && (same_code || lo.is_none() || ln.is_none()) {
            continue;
        }
        let diff = match (&lo, &ln) {
            (Some(a), Some(b)) if a != b => {
                // A name (a file name from git, a symbol) is one line of
                // the header, whatever it holds.
                let shown = crate::front::diagnostics::escape(name, false);
                let ha = if o.is_some() {
                    format!("a/{shown}")
                } else {
                    "/dev/null".into()
                };
                let hb = if n.is_some() {
                    format!("b/{shown}")
                } else {
                    "/dev/null".into()
                };
                similar::TextDiff::configure()
                    .algorithm(similar::Algorithm::Myers)
                    .timeout(DIFF_TIMEOUT)
                    .diff_lines(a.as_str(), b.as_str())
                    .unified_diff()
                    .context_radius(3)
                    .header(&ha, &hb)
                    .to_string()
            }
            _ => String::new(),
        };
        changed.push(FnChange {
            name: name.clone(),
            status: Change::of(o, n),
            old_size: o.map(|v| v.size),
            new_size: n.map(|v| v.size),
            old_entries: o.map(|v| v.entries),
            new_entries: n.map(|v| v.entries),
            diff,
            extable: if same_entries { Vec::new() } else { extable },
            symbol: n.or(o).map(|v| v.symbol.clone()).unwrap_or_default(),
            old_file: o.map(|v| v.file.clone()),
            new_file: n.map(|v| v.file.clone()),
        });
    }
    Ok(DiffReport {
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
pub fn run(old: &str, new: &str, opts: &DiffOptions) -> Result<DiffReport> {
    let o = load_side(old, opts).with_context(|| format!("reading {old}"))?;
    let n = load_side(new, opts).with_context(|| format!("reading {new}"))?;
    diff(&o, &n, opts)
}

// ---------------------------------------------------------------------------
// Output

/// `r` with every text from the inputs escaped
/// ([`crate::front::diagnostics::escape`]); listings keep their lines.
fn escaped(r: &DiffReport) -> DiffReport {
    use crate::front::diagnostics::escape;
    let one = |s: &mut String| *s = escape(s, false).into_owned();
    let opt = |s: &mut Option<String>| s.iter_mut().for_each(one);
    let mut r = r.clone();
    one(&mut r.old);
    one(&mut r.new);
    for f in &mut r.files {
        opt(&mut f.old);
        opt(&mut f.new);
    }
    for row in r.text.rows.iter_mut().chain(r.entries.rows.iter_mut()) {
        one(&mut row.name);
    }
    for c in &mut r.changed {
        one(&mut c.name);
        one(&mut c.symbol);
        opt(&mut c.old_file);
        opt(&mut c.new_file);
        c.diff = escape(&c.diff, true).into_owned();
        for p in &mut c.extable {
            for e in p.old.iter_mut().chain(p.new.iter_mut()) {
                one(&mut e.insn);
                one(&mut e.fixup);
            }
        }
    }
    for n in &mut r.notes {
        *n = escape(n, true).into_owned();
    }
    r
}

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

/// The plain-text report; `color` adds ANSI colours to the diffs. Text
/// from the inputs (arguments, file and symbol names, instructions) is
/// escaped ([`crate::front::diagnostics::escape`]): only copygen's own
/// colours reach the terminal.
pub fn render_text(r: &DiffReport, color: bool) -> String {
    use crate::front::diagnostics::escape;
    let mut s = String::new();
    let title = |s: &mut String, t: &str| {
        if color {
            let _ = writeln!(s, "{BOLD}# {t}{RESET}");
        } else {
            let _ = writeln!(s, "# {t}");
        }
    };
    let changed_files = r
        .files
        .iter()
        .filter(|f| f.status != Change::Unchanged)
        .count();
    let _ = writeln!(
        s,
        "copygen diff {} {}: {} file pair{}, {} changed",
        escape(&r.old, false),
        escape(&r.new, false),
        r.files.len(),
        if r.files.len() == 1 { "" } else { "s" },
        changed_files
    );
    s.push('\n');
    title(&mut s, ".text bytes per function");
    s.push_str(&escape(&format_bloat(&r.text, "Function"), true));
    s.push('\n');
    title(&mut s, "__ex_table entries per function");
    s.push_str(&escape(&format_bloat(&r.entries, "Function"), true));
    s.push('\n');
    let tables: Vec<&FnChange> = r.changed.iter().filter(|c| !c.extable.is_empty()).collect();
    if !tables.is_empty() {
        title(&mut s, "__ex_table entries of changed functions");
        for c in tables {
            let _ = writeln!(s, "{}", escape(&c.name, false));
            for p in &c.extable {
                let (mark, paint) = match p.status {
                    Change::Unchanged => (' ', None),
                    Change::Modified => ('~', Some(CYAN)),
                    Change::Added => ('+', Some(GREEN)),
                    Change::Removed => ('-', Some(RED)),
                };
                let e = p.new.as_ref().or(p.old.as_ref()).expect("a side");
                let mut line = format!("  {mark} {}", entry_text(e));
                if let (Some(o), Some(n)) = (&p.old, &p.new) {
                    for what in &p.changed {
                        let (a, b) = match what.as_str() {
                            "insn" => (o.insn.clone(), n.insn.clone()),
                            "fixup" => (o.fixup.clone(), n.fixup.clone()),
                            "kind" => (o.kind.clone(), n.kind.clone()),
                            "type" => (shown(&o.entry_type), shown(&n.entry_type)),
                            _ => (shown(&o.data), shown(&n.data)),
                        };
                        let _ = write!(line, "; {what} changed: {a} \u{2192} {b}");
                    }
                }
                let line = escape(&line, false);
                match paint.filter(|_| color) {
                    Some(p) => {
                        let _ = writeln!(s, "{p}{line}{RESET}");
                    }
                    None => {
                        let _ = writeln!(s, "{line}");
                    }
                }
            }
        }
        s.push('\n');
    }
    title(&mut s, "instructions of changed functions");
    let diffs: Vec<&FnChange> = r.changed.iter().filter(|c| !c.diff.is_empty()).collect();
    if diffs.is_empty() {
        let _ = writeln!(s, "(no instruction changes)");
    }
    for c in diffs {
        for line in c.diff.lines() {
            let line = escape(line, true);
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
        let _ = writeln!(s, "note: {}", escape(n, true));
    }
    s
}

/// A field of an entry as the text report shows it (`none` when absent).
fn shown(field: &Option<String>) -> String {
    field.clone().unwrap_or_else(|| "none".into())
}

/// An entry on one line: `+0x1a movb (%rsi), %al → L2 [relative
/// EX_TYPE_UACCESS]` (offset in the function, instruction, fixup, then
/// how it is relocated, its type and data).
fn entry_text(e: &ExtableRow) -> String {
    let mut what = vec![e.kind.as_str()];
    what.extend(e.entry_type.as_deref());
    what.extend(e.data.as_deref());
    format!(
        "+{:#x} {} \u{2192} {} [{}]",
        e.offset,
        e.insn,
        e.fixup,
        what.join(" ")
    )
}

/// The report as JSON (the same figures as the text), its text from the
/// inputs (arguments, file and symbol names, listings) escaped as the text
/// report's is: a JSON string may hold an ESC or an RLO that a reader's
/// terminal would obey.
pub fn render_json(r: &DiffReport) -> String {
    let mut s = serde_json::to_string_pretty(&escaped(r)).expect("report serialises");
    s.push('\n');
    s
}
