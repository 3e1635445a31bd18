//! `copygen verify --static`: check a copy routine from its object code
//! alone, so it works on any `.S`/`.o`, not only on what copygen emitted.
//!
//! For each global `*_from_user` / `*_to_user` (and fixed-size
//! `*_<dir>_<N>`) function it decodes `.text` (and, for ARM, the function's
//! piece of `.text.fixup`) and runs one forward data-flow
//! analysis over the instructions (fault edges from each entry's instruction
//! to its fixup included). The abstract value of a register or stack slot is
//! a set of tags — "holds its own entry value", "derives from `to`/`from`",
//! "is the length" — plus, for the source pointer and the length, an offset
//! against a ghost `LEN` so length checks bound how far a load may reach.
//! From that:
//!
//! - every memory access through the user pointer has an exception-table
//!   entry and no other instruction has one; every fixup lies in the
//!   function and reaches a return;
//! - registers the convention does not let the routine clobber hold their
//!   entry value at every return, and the stack is balanced;
//! - linux-flavour code touches no MMX/SSE/AVX/x87 (ARM: VFP/NEON) register;
//! - every touch load (a load from the source whose value is dead) and every
//!   ARM `pld` of the source is dominated by a length check that keeps it
//!   inside the source (a `pld` cannot fault: it needs no table entry, and
//!   one past the end is a warning, not an error).
//!
//! x86 code with `ALTERNATIVE`s (`.altinstructions`) is checked in every
//! variant the kernel may patch in (`alternatives`), and the verdicts merged.
//!
//! The checker is arch-neutral: `x86.rs` (iced-x86), `arm.rs` (unarm,
//! A32 for ARMv6) and `a64.rs` (yaxpeax-arm, A64 for AArch64) turn each
//! instruction into the same facts and give its effect on the abstract
//! state.
//!
//! Layout: `report` (verdicts), `abi` (the conventions), `domain` (the
//! abstract values), `isa` (instruction facts and the [`isa::Isa`] trait),
//! `x86`/`arm`/`a64` (the ISAs), `cfg` (one function's graph), `analysis` (fixed
//! points), `alternatives` (x86 patched variants) and `checks` (what is reported).

mod a64;
mod abi;
mod alternatives;
pub use alternatives::apply_for as apply_alternatives;
mod analysis;
mod arm;
mod arm_text;
mod cfg;
mod checks;
mod domain;
mod isa;
mod report;
mod rv64;
pub mod site;
mod tree_source;
mod variant_pointer;
mod x86;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::checks::objfile::{self, Assemble, FnSym, Loc, ObjectFile};
use crate::front::strategy::{Arch, Convention, Direction, Flavor};

use abi::AbiSpec;
use cfg::fixup_owners;
use checks::{check_function, CheckTarget};
pub use report::{
    render_reports, Finding, FunctionReport, Report, Severity, Unchecked, UserSide, Verdict,
};
pub use variant_pointer::{read_data, DataFacts, DataSym};

/// What the object cannot say about itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Architecture of a `.S` input (default: the copygen header's, else
    /// armv6 for a file with `.arm`/`.syntax`, else x86_64).
    pub arch: Option<Arch>,
    /// Flavour (default: the copygen header's; else linux when the file
    /// includes kernel headers, standalone otherwise; `.o`: standalone).
    pub flavor: Option<Flavor>,
    /// x86_64 linux calling convention (default: the header's, else C).
    pub convention: Option<Convention>,
    /// i386: arguments in eax/edx/ecx (default: on for the linux flavour).
    pub regparm: Option<bool>,
    /// x86_64: the length is a 32-bit `unsigned`, the upper half of its
    /// register undefined (6.1's `copy_user_generic(void *to, const void
    /// *from, unsigned len)`): the routines may read only the low half, and
    /// the counts they return are proven for lengths below 2^32.
    pub unsigned_length: bool,
    /// The routines own the vector state: allow MMX/SSE/AVX (ARM: VFP) in the linux flavour.
    pub allow_vector: bool,
    /// Code the analysis cannot reach or follow is a warning, not an error.
    pub allow_unanalysed: bool,
    /// Per-CPU entry points (copygen's own): their choice of variant (an
    /// `ALTERNATIVE` chain assembled with the shims, which write no
    /// `.altinstructions`; a resolved-once pointer) cannot be followed, so
    /// what it leaves unreached is a warning; each variant they enter is
    /// checked as a routine.
    pub per_cpu_entries: Vec<String>,
    /// The functions to check (default: every function with exception-table
    /// entries, and every global `*_from_user` / `*_to_user`).
    pub functions: Vec<FunctionSpec>,
    /// Entry points with names of the file's own, which `classify` cannot
    /// read (the linux flavour's `[linux] symbol`, `from_user`, `to_user`),
    /// with their roles; checked beside the default selection when no
    /// `functions` are given.
    pub roles: Vec<FunctionSpec>,
}

/// An x86_64 linux calling convention by its command-line name.
pub fn parse_convention(s: &str) -> Option<Convention> {
    match s {
        "c" => Some(Convention::C),
        "rep_movs" => Some(Convention::RepMovs),
        _ => None,
    }
}

/// `--function NAME[:SIDE[:CONVENTION]]`: a function to check, which
/// pointer is the user one (default: from its name, else both) and its
/// x86_64 calling convention (default: the file's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSpec {
    pub name: String,
    pub side: Option<UserSide>,
    pub convention: Option<Convention>,
}

impl FunctionSpec {
    /// Parse `NAME[:SIDE[:CONVENTION]]`.
    pub fn parse(s: &str) -> Result<FunctionSpec, String> {
        let mut parts = s.split(':');
        let name = parts.next().unwrap_or_default().to_string();
        if name.is_empty() {
            return Err(format!(
                "`{s}`: no function name (NAME[:from_user|to_user|both[:c|rep_movs]])"
            ));
        }
        let side = match parts.next() {
            None | Some("") => None,
            Some(p) => Some(UserSide::parse(p).ok_or_else(|| {
                format!("`{s}`: unknown user side `{p}`; use from_user, to_user or both")
            })?),
        };
        let convention = match parts.next() {
            None | Some("") => None,
            Some(p) => Some(
                parse_convention(p)
                    .ok_or_else(|| format!("`{s}`: unknown convention `{p}`; use c or rep_movs"))?,
            ),
        };
        if let Some(extra) = parts.next() {
            return Err(format!(
                "`{s}`: unexpected `:{extra}` (NAME[:SIDE[:CONVENTION]])"
            ));
        }
        Ok(FunctionSpec {
            name,
            side,
            convention,
        })
    }
}
/// The most code bytes (all code sections together) the static check
/// analyses in one object: its memory and time grow with the instructions
/// it holds (some kilobytes per instruction), and the largest routine
/// copygen emits is under 2 KiB. A `.rept` of a million `nop`s is refused
/// here, before any analysis.
pub const MAX_CODE_BYTES: usize = 64 << 10;

/// [`MAX_CODE_BYTES`], checked.
fn within_code_limit(obj: &ObjectFile, path: &Path) -> Result<()> {
    let bytes: usize = obj.code.values().map(Vec::len).sum();
    if bytes > MAX_CODE_BYTES {
        return Err(objfile::Unusable(format!(
            "{}: {bytes} bytes of code, more than the {} KiB the static check analyses in one object",
            path.display(),
            MAX_CODE_BYTES >> 10
        ))
        .into());
    }
    Ok(())
}

/// Check the `.S` or `.o` the user gave at `path`: a file that cannot be
/// read, does not assemble or holds no usable object is bad input
/// (`error: …`); a missing tool is not.
pub fn check_user_file(path: &Path, options: &Options) -> Result<Report> {
    check_object(path, options).map_err(|e| {
        if e.downcast_ref::<objfile::Unusable>().is_some() {
            crate::input::BadInput(format!("error: {e:#}")).into()
        } else {
            e
        }
    })
}

/// Check the `.S` or `.o` at `path` (one copygen wrote, or see
/// [`check_user_file`]).
pub fn check_object(path: &Path, options: &Options) -> Result<Report> {
    let is_source = matches!(path.extension().and_then(|e| e.to_str()), Some("S" | "s"));
    let (obj, mut flavor, mut convention) = if is_source {
        let text = crate::input::read_string(path)
            .map_err(|e| objfile::Unusable(format!("{}: {e}", path.display())))?;
        // A file copygen generated in another run states its facts.
        let header = crate::output::header::read(&text);
        if header.is_none() {
            if let Some((tree, version)) = tree_source::linux_tree_of(path) {
                let i386 = options.arch == Some(Arch::I386);
                return Err(crate::input::BadInput(tree_source::refusal(
                    path, &tree, &version, i386,
                ))
                .into());
            }
        }
        let (h_arch, h_flavor, h_conv) = (
            header.as_ref().map(|h| h.arch),
            header.as_ref().map(|h| h.flavor),
            header.as_ref().map(|h| h.convention),
        );
        // Unified-syntax ARM files say so; x86 never does.
        let arm = text.lines().any(|l| {
            let l = l.trim();
            l == ".arm" || l.starts_with(".syntax")
        });
        let arch = options
            .arch
            .or(h_arch)
            .unwrap_or(if arm { Arch::Armv6 } else { Arch::X86_64 });
        let kernel = text.contains("#include <linux/") || text.contains("#include <asm/");
        let flavor = options.flavor.or(h_flavor).unwrap_or(if kernel {
            Flavor::Linux
        } else {
            Flavor::Standalone
        });
        let flags = crate::toolchain::toolchain(arch)
            .check_flags
            .iter()
            .map(|f| f.to_string())
            .collect();
        let how = Assemble {
            arch,
            kernel_shims: kernel,
            debug: true,
            keep_locals: false,
            flags,
        };
        let dir = tempfile::tempdir()?;
        let out = dir.path().join("static.o");
        objfile::assemble(path, &out, &how)?;
        // Errors name the source, not the temporary object.
        let data = std::fs::read(&out)?;
        let obj = objfile::read(&data).map_err(|e| {
            objfile::Unusable(format!("{}: the assembled object: {e:#}", path.display()))
        })?;
        (obj, flavor, h_conv)
    } else {
        (
            objfile::read_path(path).map_err(|e| objfile::Unusable(format!("{e:#}")))?,
            options.flavor.unwrap_or(Flavor::Standalone),
            None,
        )
    };
    within_code_limit(&obj, path)?;
    if let Some(c) = options.convention {
        convention = Some(c);
    }
    if let Some(f) = options.flavor {
        flavor = f;
    }
    check_file(
        &obj,
        path,
        flavor,
        convention.unwrap_or(Convention::C),
        options,
    )
}

/// Check an object already read (`check_object` without the file handling).
pub fn check_file(
    obj: &ObjectFile,
    path: &Path,
    flavor: Flavor,
    convention: Convention,
    options: &Options,
) -> Result<Report> {
    let arch = obj.arch;
    if options.unsigned_length && arch != Arch::X86_64 {
        return Err(crate::input::BadInput(format!(
            "error: {}: --unsigned-length describes x86_64's 32-bit length argument; this object is {arch}",
            path.display()
        ))
        .into());
    }
    let regparm = options.regparm.unwrap_or(flavor == Flavor::Linux);
    let abi_of = |c| {
        let abi = AbiSpec::new(arch, flavor, c, regparm);
        if options.unsigned_length {
            abi.with_len32()
        } else {
            abi
        }
    };
    let abi = abi_of(convention);
    let owners = if arch == Arch::Armv6 {
        fixup_owners(obj)
    } else {
        BTreeMap::new()
    };
    let mut functions = Vec::new();
    let mut covered: BTreeSet<Loc> = BTreeSet::new();
    let mut file_findings = Vec::new();
    for (f, spec) in select_functions(obj, &owners, options, &mut file_findings) {
        let (side, fixed) = match (spec.and_then(|s| s.side), classify(&f.name)) {
            (Some(side), named) => (side, named.and_then(|n| n.1)),
            // Exported under both directions' names at one address
            // (CONTRACT §3): one routine serving both, either side is user.
            (None, Some((d, fixed))) if other_direction_alias(obj, f, d, fixed) => {
                (UserSide::Both, fixed)
            }
            (None, Some((d, fixed))) => (d.into(), fixed),
            // A routine named for neither direction: either pointer may be
            // the user one.
            (None, None) => (UserSide::Both, None),
        };
        let own_abi = spec.and_then(|s| s.convention).map(abi_of);
        let target = CheckTarget {
            side,
            fixed,
            vector_ok: options.allow_vector || flavor == Flavor::Standalone,
            allow_unanalysed: options.allow_unanalysed || options.per_cpu_entries.contains(&f.name),
            per_cpu_entry: options.per_cpu_entries.contains(&f.name),
        };
        let (mut report, code) =
            check_function(obj, f, &owners, own_abi.as_ref().unwrap_or(&abi), &target);
        if let Some(a) = &own_abi {
            report.convention = Some(a.describe.clone());
        }
        covered.extend(code);
        functions.push(report);
    }
    check_per_cpu_entry_targets(
        obj,
        &owners,
        &abi,
        options,
        flavor,
        &mut functions,
        &mut covered,
    );
    for e in &obj.extable {
        let in_a_piece = e.insn.section == ".text.fixup" && owners.contains_key(&e.insn.offset);
        if !covered.contains(&e.insn) && obj.function_at(&e.insn).is_none() && !in_a_piece {
            file_findings.push(format!(
                "__ex_table+{:#x}: entry for {} lies in no function, and no checked function reaches it",
                e.at, e.insn
            ));
        }
    }
    let unchecked = if options.functions.is_empty() {
        unchecked_functions(obj, &owners, &abi, &functions)
    } else {
        Vec::new()
    };
    Ok(Report {
        file: path.to_path_buf(),
        arch,
        flavor,
        convention: abi.describe.clone(),
        functions,
        file_findings,
        all_functions: obj.functions.iter().map(|f| f.name.clone()).collect(),
        unchecked,
    })
}

/// The global functions the default selection left out (not an alias of a
/// checked one), each probed for loads and stores through a pointer that
/// derives from an argument: such a function may be a copy routine under a
/// name of its own, and the file is not "ok" until it is checked.
fn unchecked_functions(
    obj: &ObjectFile,
    owners: &BTreeMap<u64, String>,
    abi: &AbiSpec,
    checked: &[FunctionReport],
) -> Vec<report::Unchecked> {
    let is_checked = |f: &FnSym| {
        checked.iter().any(|r| {
            r.name == f.name
                || obj
                    .function(&r.name)
                    .is_some_and(|g| g.section == f.section && g.start == f.start)
        })
    };
    obj.functions
        .iter()
        .filter(|f| f.global && !is_checked(f))
        .map(|f| {
            let probe = CheckTarget {
                side: UserSide::Both,
                fixed: None,
                vector_ok: true,
                allow_unanalysed: true,
                per_cpu_entry: false,
            };
            let (r, _) = check_function(obj, f, owners, abi, &probe);
            report::Unchecked {
                name: f.name.clone(),
                touches_arguments: r.user_accesses > 0,
            }
        })
        .collect()
}

/// Each function a per-CPU entry point enters must pass its check for the
/// entry point's user side (or for both sides); one not selected is checked
/// here. A target that fails (or was checked for the other side) is an
/// error of the entry point.
fn check_per_cpu_entry_targets(
    obj: &ObjectFile,
    owners: &BTreeMap<u64, String>,
    abi: &AbiSpec,
    options: &Options,
    flavor: Flavor,
    functions: &mut Vec<FunctionReport>,
    covered: &mut BTreeSet<Loc>,
) {
    let mut k = 0;
    while k < functions.len() {
        let (side, fixed) = (functions[k].side, functions[k].fixed);
        for name in functions[k].dispatches.clone() {
            let at = match functions.iter().position(|r| r.name == name) {
                Some(at) => at,
                None => {
                    let Some(f) = obj.function(&name) else {
                        continue;
                    };
                    let target = CheckTarget {
                        side,
                        fixed,
                        vector_ok: options.allow_vector || flavor == Flavor::Standalone,
                        allow_unanalysed: options.allow_unanalysed,
                        per_cpu_entry: false,
                    };
                    let (report, code) = check_function(obj, f, owners, abi, &target);
                    covered.extend(code);
                    functions.push(report);
                    functions.len() - 1
                }
            };
            let t = &functions[at];
            let why = if t.side != side && t.side != UserSide::Both {
                Some(format!(
                    "it dispatches to {name}, which is checked for the other user side"
                ))
            } else if !t.passed() {
                Some(format!("it dispatches to {name}, which fails its check"))
            } else {
                None
            };
            if let Some(why) = why {
                let r = &mut functions[k];
                let mut f = r
                    .findings
                    .iter()
                    .find(|f| f.message.starts_with("dispatches to"))
                    .cloned()
                    .unwrap_or_else(|| Finding {
                        severity: Severity::Error,
                        addr: 0,
                        section: String::new(),
                        insn: String::new(),
                        line: None,
                        message: String::new(),
                    });
                f.severity = Severity::Error;
                f.message = why;
                r.findings.insert(0, f);
            }
        }
        k += 1;
    }
}

/// The functions to check, with what the command line says of each:
/// the `--function` list, or by default every function with
/// exception-table entries and every global `*_from_user`/`*_to_user`.
fn select_functions<'a>(
    obj: &'a ObjectFile,
    owners: &BTreeMap<u64, String>,
    options: &'a Options,
    file_findings: &mut Vec<String>,
) -> Vec<(&'a FnSym, Option<&'a FunctionSpec>)> {
    if !options.functions.is_empty() {
        let mut out = Vec::new();
        for spec in &options.functions {
            match obj.function(&spec.name) {
                Some(f) => out.push((f, Some(spec))),
                None => file_findings.push(format!(
                    "no function `{}` in the object (functions: {})",
                    spec.name,
                    obj.functions
                        .iter()
                        .map(|f| f.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
        return out;
    }
    let has_entries = |f: &FnSym| {
        obj.extable.iter().any(|e| {
            f.contains(&e.insn)
                || f.contains(&e.fixup)
                || (e.insn.section == ".text.fixup" && owners.get(&e.insn.offset) == Some(&f.name))
        })
    };
    let role = |f: &FnSym| options.roles.iter().find(|r| f.global && r.name == f.name);
    obj.functions
        .iter()
        .filter(|f| {
            (f.global && classify(&f.name).is_some()) || role(f).is_some() || has_entries(f)
        })
        .map(|f| (f, role(f)))
        .collect()
}

/// Whether a global of the other direction's name (same constant size)
/// starts where `f` does.
fn other_direction_alias(
    obj: &ObjectFile,
    f: &FnSym,
    direction: Direction,
    fixed: Option<u64>,
) -> bool {
    obj.functions.iter().any(|g| {
        g.global
            && g.section == f.section
            && g.start == f.start
            && classify(&g.name).is_some_and(|(d, x)| d != direction && x == fixed)
    })
}

/// Direction and constant size from a symbol name (CONTRACT §3):
/// `x_from_user`, `x_to_user`, `x_from_user_16`.
pub fn classify(name: &str) -> Option<(Direction, Option<u64>)> {
    crate::arch::symbols::parse_entry(name)
}

/// Check every strategy of the built-in catalog (all architectures) in both
/// flavours, from freshly rendered text (what `copygen emit` writes to
/// `emitted/`).
pub fn check_catalog(options: &Options) -> Result<Vec<Report>> {
    check_strategies(&crate::front::catalog::catalog()?, options)
}

/// The entry names of `s` in `flavor` that `classify` cannot read (a
/// strategy's own linux names), with their roles.
pub fn entry_roles(s: &crate::front::strategy::Strategy, flavor: Flavor) -> Vec<FunctionSpec> {
    let both = s.routine == crate::front::strategy::RoutineShape::Both;
    s.directions
        .iter()
        .map(|&d| FunctionSpec {
            name: crate::lower::entry_symbol(s, flavor, d, None),
            side: Some(if both { UserSide::Both } else { d.into() }),
            convention: None,
        })
        .filter(|r| classify(&r.name).is_none())
        .collect()
}

/// Render each strategy in both flavours and check the files.
pub fn check_strategies(
    strategies: &[crate::front::strategy::Strategy],
    options: &Options,
) -> Result<Vec<Report>> {
    let dir = tempfile::tempdir()?;
    let mut reports = Vec::new();
    for s in strategies {
        for flavor in Flavor::ALL {
            let rel = crate::output::render::emitted_path(s, flavor);
            let path = dir.path().join(&rel);
            std::fs::create_dir_all(path.parent().unwrap())?;
            std::fs::write(&path, crate::output::render::render(s, flavor))?;
            // The strategy states the facts; the header is not read back.
            let per_cpu_entries = crate::backend::per_cpu_entries(s, flavor)
                .into_iter()
                .map(|f| f.symbol)
                .collect();
            let facts = Options {
                arch: Some(s.arch),
                flavor: Some(flavor),
                convention: Some(s.linux.convention),
                per_cpu_entries,
                roles: entry_roles(s, flavor),
                ..options.clone()
            };
            let mut r = check_object(&path, &facts)?;
            r.file = PathBuf::from("emitted").join(rel);
            reports.push(r);
        }
    }
    Ok(reports)
}
