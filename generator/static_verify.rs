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
//! The checker is arch-neutral: `x86.rs` (iced-x86) and `arm.rs` (unarm,
//! A32 for ARMv6) turn each instruction into the same facts ([`Insn`]) and
//! give its effect on the abstract state (`transfer`).

mod arm;
mod x86;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::checks::objfile::{self, Assemble, FnSym, Loc, ObjectFile};
use crate::front::strategy::{Arch, Convention, Direction, Flavor};

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
    /// The routines own the vector state: allow MMX/SSE/AVX (ARM: VFP) in the linux flavour.
    pub allow_vector: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One finding, at one instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// Offset in `section`.
    pub addr: u64,
    /// `.text`, or `.text.fixup` for ARM linux-flavour fixups.
    pub section: String,
    /// The instruction (x86: AT&T syntax; ARM: unified syntax).
    pub insn: String,
    /// Source line (from DWARF; `.S` inputs are assembled with `-g`).
    pub line: Option<u32>,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.section == ".text" {
            write!(f, "{} at {:#x}", self.severity, self.addr)?;
        } else {
            write!(f, "{} at {}+{:#x}", self.severity, self.section, self.addr)?;
        }
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        write!(f, " `{}`: {}", self.insn, self.message)
    }
}

#[derive(Debug, Clone)]
pub struct FunctionReport {
    pub name: String,
    pub direction: Direction,
    /// Constant size of a fixed-size entry point.
    pub fixed: Option<u64>,
    pub bytes: u64,
    pub instructions: usize,
    pub user_accesses: usize,
    pub entries: usize,
    pub findings: Vec<Finding>,
}

impl FunctionReport {
    pub fn passed(&self) -> bool {
        self.findings.iter().all(|f| f.severity != Severity::Error)
    }
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

#[derive(Debug, Clone)]
pub struct Report {
    pub file: PathBuf,
    pub arch: Arch,
    pub flavor: Flavor,
    /// The convention the functions were checked against, in words.
    pub convention: String,
    pub functions: Vec<FunctionReport>,
    /// Problems outside any checked function (stray table entries).
    pub file_findings: Vec<String>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.file_findings.is_empty() && self.functions.iter().all(|f| f.passed())
    }

    /// Every finding of every function, for tests and summaries.
    pub fn findings(&self) -> impl Iterator<Item = (&str, &Finding)> {
        self.functions
            .iter()
            .flat_map(|f| f.findings.iter().map(move |x| (f.name.as_str(), x)))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {}, {} flavour, {}",
            self.file.display(),
            self.arch,
            self.flavor,
            self.convention
        )?;
        writeln!(
            f,
            "  {:<32} {:>6} {:>6} {:>5} {:>7}  verdict",
            "function", "bytes", "insns", "user", "entries"
        )?;
        for r in &self.functions {
            let verdict = if r.passed() { "ok" } else { "FAIL" };
            writeln!(
                f,
                "  {:<32} {:>6} {:>6} {:>5} {:>7}  {verdict}",
                r.name, r.bytes, r.instructions, r.user_accesses, r.entries
            )?;
            for x in &r.findings {
                writeln!(f, "    {x}")?;
            }
        }
        for x in &self.file_findings {
            writeln!(f, "  error: {x}")?;
        }
        if self.functions.is_empty() {
            writeln!(f, "  no *_from_user / *_to_user function found")?;
        }
        Ok(())
    }
}

/// Check the `.S` or `.o` at `path`.
pub fn check_object(path: &Path, options: &Options) -> Result<Report> {
    check_object_named(path, options, &[])
}

/// `check_object` for a file whose entry points have names of their own
/// (the linux flavour's `[linux] symbol`, `from_user`, `to_user`): each
/// name with its role, `None` for a routine serving both directions.
pub fn check_object_named(
    path: &Path,
    options: &Options,
    names: &[(String, Option<Direction>)],
) -> Result<Report> {
    let is_source = matches!(path.extension().and_then(|e| e.to_str()), Some("S" | "s"));
    let (obj, mut flavor, mut convention) = if is_source {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        // A file copygen generated in another run states its facts.
        let header = crate::output::header::read(&text);
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
        // ARM: accept VFP instructions, so the check (not the assembler)
        // reports them, with their line.
        let flags = match arch {
            Arch::Armv6 => vec!["-mfpu=vfp".to_string()],
            _ => Vec::new(),
        };
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
        (objfile::read_path(&out)?, flavor, h_conv)
    } else {
        (
            objfile::read_path(path)?,
            options.flavor.unwrap_or(Flavor::Standalone),
            None,
        )
    };
    if let Some(c) = options.convention {
        convention = Some(c);
    }
    if let Some(f) = options.flavor {
        flavor = f;
    }
    check_file_named(
        &obj,
        path,
        flavor,
        convention.unwrap_or(Convention::C),
        options,
        names,
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
    check_file_named(obj, path, flavor, convention, options, &[])
}

/// `check_file` with names of the file's own (see [`check_object_named`]).
pub fn check_file_named(
    obj: &ObjectFile,
    path: &Path,
    flavor: Flavor,
    convention: Convention,
    options: &Options,
    names: &[(String, Option<Direction>)],
) -> Result<Report> {
    let arch = obj.arch;
    let regparm = options.regparm.unwrap_or(flavor == Flavor::Linux);
    let abi = AbiSpec::new(arch, flavor, convention, regparm);
    let mut functions = Vec::new();
    let mut checked: Vec<&FnSym> = Vec::new();
    let owners = if arch == Arch::Armv6 {
        fixup_owners(obj)
    } else {
        BTreeMap::new()
    };
    let in_piece =
        |f: &FnSym, l: &Loc| l.section == ".text.fixup" && owners.get(&l.offset) == Some(&f.name);
    for f in obj
        .functions
        .iter()
        .filter(|f| f.global && f.section == ".text")
    {
        let named = names.iter().find(|(n, _)| *n == f.name);
        let Some((direction, fixed)) = classify(&f.name)
            .or_else(|| named.map(|(_, d)| (d.unwrap_or(Direction::FromUser), None)))
        else {
            continue;
        };
        // A routine serving both directions: named so, or exported under
        // both names at one address (CONTRACT §3). Both sides are user.
        let both = named.is_some_and(|(_, d)| d.is_none())
            || obj.functions.iter().any(|g| {
                g.global
                    && g.section == f.section
                    && g.start == f.start
                    && classify(&g.name).is_some_and(|(d, x)| d != direction && x == fixed)
            });
        checked.push(f);
        let vector_ok = options.allow_vector || flavor == Flavor::Standalone;
        let entries = obj
            .extable
            .iter()
            .filter(|e| f.contains(&e.insn) || in_piece(f, &e.insn))
            .cloned()
            .collect();
        functions.push(check_function(
            obj, f, &owners, entries, direction, both, fixed, &abi, vector_ok,
        ));
    }
    let mut file_findings = Vec::new();
    for e in &obj.extable {
        let owned = checked
            .iter()
            .any(|f| f.contains(&e.insn) || in_piece(f, &e.insn));
        let in_a_piece = e.insn.section == ".text.fixup" && owners.contains_key(&e.insn.offset);
        if !owned && obj.function_at(&e.insn).is_none() && !in_a_piece {
            file_findings.push(format!(
                "__ex_table+{:#x}: entry for {} lies in no function",
                e.at, e.insn
            ));
        }
    }
    Ok(Report {
        file: path.to_path_buf(),
        arch,
        flavor,
        convention: abi.describe.clone(),
        functions,
        file_findings,
    })
}

/// Direction and constant size from a symbol name (CONTRACT §3):
/// `x_from_user`, `x_to_user`, `x_from_user_16`.
pub fn classify(name: &str) -> Option<(Direction, Option<u64>)> {
    for d in [Direction::FromUser, Direction::ToUser] {
        let suffix = format!("_{}", d.name());
        if name.ends_with(&suffix) {
            return Some((d, None));
        }
        if let Some((_, n)) = name.rsplit_once(&format!("{suffix}_")) {
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                return Some((d, n.parse().ok()));
            }
        }
    }
    None
}

// ---------------------------------------------------------------------------
// The calling convention, as the analysis needs it.

const NREGS: usize = 16;

fn reg_name(arch: Arch, r: usize) -> &'static str {
    match arch {
        Arch::Armv6 => arm::reg_name(r),
        _ => x86::reg_name(arch, r),
    }
}

/// Where the arguments arrive and which registers may be clobbered.
struct AbiSpec {
    arch: Arch,
    ptr: i64,
    /// (to, from, n) registers, or None for cdecl stack arguments.
    arg_regs: Option<[usize; 3]>,
    ret: usize,
    clobber: Vec<usize>,
    sp: usize,
    /// ARM: the program counter, whose value at a return must be the entry lr.
    pc: Option<usize>,
    describe: String,
}

impl AbiSpec {
    /// The checker's view of the convention table (`arch/<arch>.rs`).
    fn new(arch: Arch, flavor: Flavor, convention: Convention, regparm: bool) -> Self {
        let table = match arch {
            Arch::I386 if regparm => &crate::arch::i386::REGPARM,
            Arch::I386 => &crate::arch::i386::CDECL,
            _ => crate::arch::abi(arch, flavor, convention),
        };
        let clobber: Vec<usize> = table.clobbers.iter().map(|&r| r as usize).collect();
        let names: Vec<&str> = clobber.iter().map(|&r| reg_name(arch, r)).collect();
        let mut describe = format!("{}, may clobber {}", table.summary, names.join(" "));
        if table.pc.is_some() {
            describe.push_str(", returns through the entry lr");
        }
        AbiSpec {
            arch,
            ptr: table.ptr_width as i64,
            arg_regs: match table.args {
                crate::arch::Args::Regs(r) => Some(r.map(usize::from)),
                crate::arch::Args::Stack => None,
            },
            ret: table.ret as usize,
            clobber,
            sp: table.sp as usize,
            pc: table.pc.map(usize::from),
            describe,
        }
    }

    fn regs(&self) -> usize {
        if self.arch == Arch::I386 {
            8
        } else {
            NREGS
        }
    }
}

// ---------------------------------------------------------------------------
// The abstract state.

const DST: u32 = 1 << 16;
const SRC: u32 = 1 << 17;
const LEN: u32 = 1 << 18;
const RETADDR: u32 = 1 << 19;
const OTHER: u32 = 1 << 20;
/// A known constant (`off` holds it): ARM builds big offsets in ip.
const CONST: u32 = 1 << 21;
const PTRS: u32 = SRC | DST;

/// One register or stack slot. `off` is meaningful when `tags` is exactly
/// `SRC` (`src_end - value == LEN + off`), `LEN` (`value == LEN + off`) or
/// `CONST` (`value == off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Val {
    tags: u32,
    off: Option<i64>,
}

impl Val {
    const OTHER: Val = Val {
        tags: OTHER,
        off: None,
    };
    fn orig(r: usize) -> Val {
        Val {
            tags: 1 << r,
            off: None,
        }
    }
    fn tagged(tags: u32, off: Option<i64>) -> Val {
        Val { tags, off }
    }
    fn konst(k: i64) -> Val {
        Val {
            tags: CONST,
            off: Some(k),
        }
    }
    fn konst_value(self) -> Option<i64> {
        self.off.filter(|_| self.tags == CONST)
    }
    fn is_ptr(self) -> bool {
        self.tags & PTRS != 0
    }
    fn join(self, o: Val) -> Val {
        let tags = self.tags | o.tags;
        let off = if self.tags == o.tags && self.off == o.off {
            self.off
        } else {
            None
        };
        Val { tags, off }
    }
}

/// `a + sign * b`: a pointer moved by anything is still that pointer (the
/// source pointer and the length keep their offsets when `b` is a known
/// constant); anything else is just a value.
fn add_val(a: Val, b: Val, sign: i64) -> Val {
    if let Some(k) = b.konst_value() {
        let k = sign * k;
        return if a.tags == SRC {
            Val::tagged(SRC, a.off.map(|c| c - k))
        } else if a.tags == LEN {
            Val::tagged(LEN, a.off.map(|o| o + k))
        } else if let Some(c) = a.konst_value() {
            Val::konst(c + k)
        } else if a.is_ptr() {
            Val::tagged(a.tags & PTRS, None)
        } else {
            Val::OTHER
        };
    }
    if sign > 0 && a.konst_value().is_some() && b.tags == SRC {
        return add_val(b, a, 1);
    }
    match (a.is_ptr(), b.is_ptr()) {
        (true, false) => Val::tagged(a.tags & PTRS, None),
        (false, true) if sign > 0 => Val::tagged(b.tags & PTRS, None),
        _ => Val::OTHER,
    }
}

/// `LEN >= value`, established by the compare at `origin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bound {
    value: i64,
    origin: Option<u64>,
}

/// The last flag-setting compare of a register with a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cmp {
    reg: usize,
    imm: i64,
    /// `test r, r` rather than `cmp $imm, r`.
    test: bool,
    /// Analysis address of the compare.
    addr: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    /// General registers (ARM: r15 holds the value a return jumps to).
    regs: [Val; NREGS],
    /// Stack slots by offset from the entry stack pointer.
    stack: BTreeMap<i64, Val>,
    /// Stack pointer relative to entry; None once unknown.
    sp: Option<i64>,
    lb: Bound,
    flags: Option<Cmp>,
}

impl State {
    /// Re-base the ghost `LEN` on the lowest-numbered length register, so
    /// loop heads see the same offsets on every iteration.
    fn normalize(&mut self) {
        let Some(o) = self.regs.iter().find(|v| v.tags == LEN).and_then(|v| v.off) else {
            return;
        };
        let shift = |v: &mut Val| {
            if let Some(x) = v.off.as_mut() {
                if v.tags == LEN || v.tags == SRC {
                    *x -= o;
                }
            }
        };
        self.regs.iter_mut().for_each(shift);
        self.stack.values_mut().for_each(shift);
        // A pending compare names a register, whose offset moved with it.
        self.lb.value += o;
        // LEN is now a register's unsigned value: never below 0.
        if self.lb.value < 0 {
            self.lb = Bound {
                value: 0,
                origin: None,
            };
        }
    }

    fn join(&self, o: &State) -> State {
        let mut regs = self.regs;
        for (r, v) in regs.iter_mut().zip(o.regs.iter()) {
            *r = r.join(*v);
        }
        let mut stack = BTreeMap::new();
        for k in self.stack.keys().chain(o.stack.keys()) {
            let a = self.stack.get(k).copied().unwrap_or(Val::OTHER);
            let b = o.stack.get(k).copied().unwrap_or(Val::OTHER);
            stack.insert(*k, a.join(b));
        }
        let sp = if self.sp == o.sp { self.sp } else { None };
        let lb = if self.lb.value <= o.lb.value {
            self.lb
        } else {
            o.lb
        };
        let flags = if self.flags == o.flags {
            self.flags
        } else {
            None
        };
        State {
            regs,
            stack,
            sp,
            lb,
            flags,
        }
    }
}

// ---------------------------------------------------------------------------
// One instruction, as the checker sees it (both architectures).

/// `.text.fixup` instructions live above this in a function's address space.
const FIXUP_BASE: u64 = 1 << 40;

#[derive(Debug, Clone)]
enum Raw {
    X86(iced_x86::Instruction),
    Arm(unarm::Ins),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Next,
    Jump(u64),
    CondJump(u64),
    Return,
    Indirect,
    Stop,
}

/// Branch (or ARM execution) conditions the length refinement understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cc {
    Eq,
    Ne,
    Hs,
    Lo,
    Hi,
    Ls,
    Ge,
    Lt,
    Gt,
    Le,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemKind {
    Load,
    Store,
    Prefetch,
    Other,
}

/// A memory operand: `base + index + disp`, `size` bytes.
#[derive(Debug, Clone, Copy)]
struct Mem {
    base: Option<usize>,
    index: Option<usize>,
    disp: i64,
    size: usize,
    kind: MemKind,
}

/// A plain load into one register (or a preload) whose reach the bounds
/// check looks at if its value is dead.
#[derive(Debug, Clone, Copy)]
struct Touch {
    dst: Option<usize>,
    base: Option<usize>,
    /// None: a register offset.
    disp: Option<i64>,
    size: usize,
    prefetch: bool,
}

#[derive(Debug, Clone)]
struct Insn {
    /// Address in the function's address space (see [`FIXUP_BASE`]).
    addr: u64,
    loc: Loc,
    len: u64,
    text: String,
    raw: Raw,
    flow: Flow,
    /// Condition of a `CondJump`, or of a conditionally executed instruction.
    cc: Cc,
    /// ARM: runs only when `cc` holds (a non-branch with a condition).
    cond_exec: bool,
    mems: Vec<Mem>,
    /// GPRs read, with the bytes read.
    uses: Vec<(usize, usize)>,
    /// GPRs surely written, with the bytes replaced (liveness kills).
    defs: Vec<(usize, usize)>,
    /// Every GPR it may write.
    written: Vec<usize>,
    /// Why it touches vector state, if it does.
    vector: Option<String>,
    touch: Option<Touch>,
    /// Bytes of the (user) memory operand, at least 1.
    width: usize,
    /// A preload (`pld`): cannot fault.
    prefetch: bool,
}

// ---------------------------------------------------------------------------
// One function.

struct Func<'a> {
    obj: &'a ObjectFile,
    abi: &'a AbiSpec,
    insns: Vec<Insn>,
    index: BTreeMap<u64, usize>,
    /// Entry (fixup index) of each instruction that has one.
    fault: BTreeMap<usize, usize>,
    succ: Vec<Vec<usize>>,
    /// The instruction after each one (fallthrough), if in the function.
    fall: Vec<Option<usize>>,
    findings: Vec<Finding>,
}

impl Func<'_> {
    fn finding(&mut self, severity: Severity, k: usize, message: String) {
        let i = &self.insns[k];
        let f = Finding {
            severity,
            addr: i.loc.offset,
            section: i.loc.section.clone(),
            insn: i.text.clone(),
            line: self.obj.line_at(&i.loc),
            message,
        };
        if !self.findings.contains(&f) {
            self.findings.push(f);
        }
    }

    fn describe(&self, k: usize) -> String {
        let i = &self.insns[k];
        match self.obj.line_at(&i.loc) {
            Some(l) => format!("`{}` at {} (line {l})", i.text, i.loc),
            None => format!("`{}` at {}", i.text, i.loc),
        }
    }

    fn transfer(&self, k: usize, st: &State) -> State {
        let insn = &self.insns[k];
        match &insn.raw {
            Raw::X86(i) => x86::transfer(insn, i, st, self.abi),
            Raw::Arm(i) => arm::transfer(insn, i, st, self.abi),
        }
    }

    /// The state an instruction runs in (a conditional one: its condition holds).
    fn exec_state(&self, k: usize, st: &State) -> State {
        let mut s = st.clone();
        if self.insns[k].cond_exec {
            refine(self.insns[k].cc, &mut s, true);
        }
        s
    }
}

/// The `.text.fixup` instructions (4-byte ARM words) of each function:
/// offset → owner. With line info a word belongs to the function whose
/// source it sits in (its `.pushsection` lies between the function's
/// first line and the next function's); without, the pieces follow the
/// order of the functions' first fixup targets there.
fn fixup_owners(obj: &ObjectFile) -> BTreeMap<u64, String> {
    let mut owners = BTreeMap::new();
    let Some(code) = obj.code.get(".text.fixup") else {
        return owners;
    };
    let text_fns: Vec<&FnSym> = obj
        .functions
        .iter()
        .filter(|f| f.section == ".text")
        .collect();
    let words = (0..code.len() as u64 / 4).map(|w| w * 4);
    let mut by_line: Vec<(u32, &str)> = text_fns
        .iter()
        .filter_map(|f| obj.line_of(f.start).map(|l| (l, f.name.as_str())))
        .collect();
    by_line.sort();
    let have_lines = obj.section_lines.contains_key(".text.fixup") && !by_line.is_empty();
    if have_lines {
        for o in words {
            let loc = Loc {
                section: ".text.fixup".into(),
                offset: o,
            };
            let Some(line) = obj.line_at(&loc) else {
                continue;
            };
            if let Some((_, name)) = by_line.iter().rev().find(|(l, _)| *l <= line) {
                owners.insert(o, name.to_string());
            }
        }
        return owners;
    }
    let mut starts: Vec<(u64, &str)> = text_fns
        .iter()
        .filter_map(|f| {
            obj.entries_of(f)
                .filter(|e| e.fixup.section == ".text.fixup")
                .map(|e| e.fixup.offset)
                .min()
                .map(|o| (o, f.name.as_str()))
        })
        .collect();
    starts.sort();
    for o in words {
        if let Some((_, name)) = starts.iter().rev().find(|(s, _)| *s <= o) {
            owners.insert(o, name.to_string());
        }
    }
    owners
}

#[allow(clippy::too_many_arguments)]
fn check_function(
    obj: &ObjectFile,
    f: &FnSym,
    owners: &BTreeMap<u64, String>,
    entries: Vec<objfile::ExEntry>,
    direction: Direction,
    both: bool,
    fixed: Option<u64>,
    abi: &AbiSpec,
    vector_ok: bool,
) -> FunctionReport {
    let piece: Vec<u64> = owners
        .iter()
        .filter(|(_, n)| **n == f.name)
        .map(|(&o, _)| o)
        .collect();
    let addr_of = |l: &Loc| -> Option<u64> {
        if l.section == f.section {
            Some(l.offset)
        } else if l.section == ".text.fixup" {
            Some(FIXUP_BASE + l.offset)
        } else {
            None
        }
    };
    let insns = match obj.arch {
        Arch::Armv6 => {
            let mut v = arm::decode(obj, &f.section, (f.start..f.end).step_by(4), &addr_of);
            v.extend(arm::decode(
                obj,
                ".text.fixup",
                piece.iter().copied(),
                &addr_of,
            ));
            v
        }
        _ => x86::decode(obj, f, abi),
    };
    let index: BTreeMap<u64, usize> = insns.iter().enumerate().map(|(k, i)| (i.addr, k)).collect();
    let mut func = Func {
        obj,
        abi,
        insns,
        index,
        fault: BTreeMap::new(),
        succ: Vec::new(),
        fall: Vec::new(),
        findings: Vec::new(),
    };
    let in_function =
        |l: &Loc| f.contains(l) || (l.section == ".text.fixup" && piece.contains(&l.offset));

    // Exception-table entries: boundaries and fixups inside the function.
    // `listed`: instructions with an entry, usable or not.
    let mut listed = BTreeSet::new();
    for e in &entries {
        let Some(&k) = addr_of(&e.insn).and_then(|a| func.index.get(&a)) else {
            let near = addr_of(&e.insn)
                .and_then(|a| func.index.range(..a).next_back().map(|(_, &k)| k))
                .unwrap_or(0);
            func.finding(
                Severity::Error,
                near,
                format!(
                    "exception-table entry at {} is not an instruction boundary",
                    e.insn
                ),
            );
            continue;
        };
        listed.insert(k);
        if !in_function(&e.fixup) {
            let other = obj
                .function_at(&e.fixup)
                .map(|g| format!(" (in {})", g.name))
                .or_else(|| {
                    (e.fixup.section == ".text.fixup")
                        .then(|| owners.get(&e.fixup.offset))
                        .flatten()
                        .map(|g| format!(" (in the .text.fixup piece of {g})"))
                })
                .unwrap_or_default();
            func.finding(
                Severity::Error,
                k,
                format!("fixup {} lies outside the function{other}", e.fixup),
            );
            continue;
        }
        let Some(&fx) = addr_of(&e.fixup).and_then(|a| func.index.get(&a)) else {
            func.finding(
                Severity::Error,
                k,
                format!("fixup {} is not an instruction boundary", e.fixup),
            );
            continue;
        };
        if func.fault.insert(k, fx).is_some() {
            func.finding(
                Severity::Error,
                k,
                "two exception-table entries for one instruction".into(),
            );
        }
    }

    // A jump to another function's entry is a tail call (a per-CPU entry
    // point entering its variant): that function is checked on its own,
    // and here the jump ends the path as a return does.
    for k in 0..func.insns.len() {
        let Flow::Jump(t) = func.insns[k].flow else {
            continue;
        };
        let section = &func.insns[k].loc.section;
        let callee = obj
            .functions
            .iter()
            .find(|g| g.global && &g.section == section && g.start == t && g.name != f.name);
        if let (false, Some(g)) = (func.index.contains_key(&t), callee) {
            func.insns[k].flow = Flow::Return;
            let note = format!("tail call to {}", g.name);
            func.finding(Severity::Note, k, note);
        }
    }

    // Control flow.
    let n = func.insns.len();
    let mut succ = vec![Vec::new(); n];
    let mut fall = vec![None; n];
    for (k, out) in succ.iter_mut().enumerate() {
        let i = func.insns[k].clone();
        fall[k] = func.index.get(&(i.addr + i.len)).copied();
        let mut needs_fall = i.cond_exec;
        match i.flow {
            Flow::Return | Flow::Stop => {}
            Flow::Jump(t) | Flow::CondJump(t) => {
                if matches!(i.flow, Flow::CondJump(_)) {
                    needs_fall = true;
                }
                match func.index.get(&t) {
                    Some(&t) => out.push(t),
                    None => func.finding(Severity::Error, k, "jumps outside the function".into()),
                }
            }
            Flow::Indirect => func.finding(
                Severity::Warning,
                k,
                "indirect jump: paths through it are not checked".into(),
            ),
            Flow::Next => needs_fall = true,
        }
        if needs_fall {
            match fall[k] {
                // Conditional branches list the fallthrough first.
                Some(s) => out.insert(0, s),
                None => func.finding(
                    Severity::Error,
                    k,
                    "runs off the end of the function".into(),
                ),
            }
        }
    }
    func.succ = succ;
    func.fall = fall;

    // The forward analysis.
    let entry = entry_state(abi, fixed);
    let states = analyse(&mut func, entry);

    // User accesses, entries and everything else that reads the states.
    let user_tag = match direction {
        _ if both => SRC | DST,
        Direction::FromUser => SRC,
        Direction::ToUser => DST,
    };
    let mut user_accesses = 0;
    let live = liveness(&func, abi);
    for k in 0..n {
        let Some(st) = states[k].as_ref().map(|s| func.exec_state(k, s)) else {
            continue;
        };
        let i = func.insns[k].clone();
        let val = |r: Option<usize>| r.map(|g| st.regs[g]).unwrap_or(Val::OTHER);
        let user = i.mems.iter().any(|m| {
            m.kind != MemKind::Prefetch && (val(m.base).tags | val(m.index).tags) & user_tag != 0
        });
        if user {
            user_accesses += 1;
            if !listed.contains(&k) {
                func.finding(
                    Severity::Error,
                    k,
                    format!(
                        "accesses user memory (through `{}`) without an exception-table entry",
                        pointer_name(direction)
                    ),
                );
            }
        } else if listed.contains(&k) {
            let why = if i.prefetch {
                "a preload cannot fault, so it needs none"
            } else {
                "this instruction does not access user memory"
            };
            func.finding(
                Severity::Error,
                k,
                format!("stray exception-table entry: {why}"),
            );
        }
        if !vector_ok {
            if let Some(why) = &i.vector {
                func.finding(Severity::Error, k, why.clone());
            }
        }
        if let Some(t) = i.touch {
            check_touch(&mut func, k, &t, &st, &live[k], user_tag);
        }
        // Preserved registers and the stack at every return.
        if i.flow == Flow::Return {
            check_return(&mut func, &states, k, &st);
        }
    }

    // Every fixup reaches a return; a wide access's fixup copies a byte
    // before it gives up (the progress rule), or we cannot prove it.
    for (&k, &fx) in func.fault.clone().iter() {
        if states[fx].is_none() {
            continue;
        }
        let (returns, byte) = fixup_paths(&func, &states, fx, user_tag);
        if !returns {
            func.finding(
                Severity::Error,
                k,
                format!("its fixup {} never reaches a return", func.describe(fx)),
            );
        }
        let wide = func.insns[k].width > 1;
        if wide && !byte && states[k].is_some() {
            func.finding(
                Severity::Warning,
                k,
                format!(
                    "no byte retry after a fault here (fixup {}): progress rule not provable",
                    func.describe(fx)
                ),
            );
        }
    }

    let mut findings = std::mem::take(&mut func.findings);
    findings.sort_by_key(|f| (std::cmp::Reverse(f.severity), f.section != ".text", f.addr));
    FunctionReport {
        name: f.name.clone(),
        direction,
        fixed,
        bytes: f.end - f.start + 4 * piece.len() as u64,
        instructions: func.insns.len(),
        user_accesses,
        entries: entries.len(),
        findings,
    }
}

/// Touch loads (a load from the source whose value is dead) and preloads:
/// each must stay inside the source, by a dominating length check.
fn check_touch(
    func: &mut Func,
    k: usize,
    t: &Touch,
    st: &State,
    live: &BTreeMap<usize, usize>,
    user_tag: u32,
) {
    let base = t.base.map(|g| st.regs[g]).unwrap_or(Val::OTHER);
    let dead = t.dst.is_none_or(|g| !live.contains_key(&g));
    let no_entry = if t.prefetch && base.tags & user_tag != 0 {
        "; a preload cannot fault, so it needs no exception-table entry"
    } else {
        ""
    };
    if !dead || base.tags & SRC == 0 {
        if !no_entry.is_empty() {
            func.finding(
                Severity::Note,
                k,
                format!("preload of user memory{no_entry}"),
            );
        }
        return;
    }
    let what = if t.prefetch { "preload" } else { "touch load" };
    let Some(disp) = t.disp else {
        let sev = if t.prefetch {
            Severity::Warning
        } else {
            Severity::Error
        };
        func.finding(
            sev,
            k,
            format!("{what} at a register offset from the source: its reach cannot be checked"),
        );
        return;
    };
    // Byte offsets count from where the length is measured (the source
    // pointer as the length register sees it), not from the base register.
    let c = base.off.filter(|_| base.tags == SRC);
    let disp = disp - c.unwrap_or(0);
    let need = disp + t.size as i64;
    let proven = c.map(|_| st.lb.value);
    match (proven, st.lb.origin) {
        (Some(p), Some(o)) if p >= need => {
            let check = func.describe(func.index[&o]);
            func.finding(
                Severity::Note,
                k,
                format!("{what} of source bytes [{disp}, {need}) is inside the source: guarded by {check} (at least {p} bytes left){no_entry}"),
            );
        }
        (Some(p), _) if p >= need => {
            if !no_entry.is_empty() {
                func.finding(
                    Severity::Note,
                    k,
                    format!(
                        "{what} of source bytes [{disp}, {need}) is inside the source{no_entry}"
                    ),
                );
            }
        }
        (p, o) => {
            let have = match (p, o) {
                (Some(p), Some(o)) => {
                    format!("only {p} proven by {}", func.describe(func.index[&o]))
                }
                (Some(p), None) => format!("only {p} proven"),
                (None, _) => "the length check cannot be related to this pointer".into(),
            };
            // A preload cannot fault or change memory, so it breaks no
            // copy; it still touches (caches) memory outside the source,
            // which the contract forbids: a warning, not an error.
            let (sev, why) = if t.prefetch {
                (
                    Severity::Warning,
                    "; a preload cannot fault, but the contract forbids touching memory outside the source",
                )
            } else {
                (Severity::Error, "")
            };
            func.finding(
                sev,
                k,
                format!("{what} past the checked length: reads source bytes [{disp}, {need}), needs {need} bytes left, {have}{why}"),
            );
        }
    }
}

/// At a return: the stack is balanced, the registers the convention keeps
/// hold their entry values and (ARM) the return goes to the entry lr.
fn check_return(func: &mut Func, states: &[Option<State>], k: usize, st: &State) {
    let abi = func.abi;
    // x86 checks before `ret` pops; ARM after the pop that returns.
    let st = if abi.pc.is_some() {
        func.transfer(k, st)
    } else {
        st.clone()
    };
    if st.sp != Some(0) {
        let sp = st
            .sp
            .map(|s| s.to_string())
            .unwrap_or_else(|| "unknown".into());
        func.finding(
            Severity::Error,
            k,
            format!("stack not balanced at return (sp = entry {sp})"),
        );
    }
    for r in 0..abi.regs() {
        if r == abi.sp || Some(r) == abi.pc || abi.clobber.contains(&r) || st.regs[r].tags == 1 << r
        {
            continue;
        }
        let by = first_write(func, states, r)
            .map(|w| func.describe(w))
            .unwrap_or_else(|| "an unknown path".into());
        func.finding(
            Severity::Error,
            k,
            format!(
                "{} is not preserved: the convention does not let it be clobbered, written by {by}",
                reg_name(abi.arch, r)
            ),
        );
    }
    if let Some(pc) = abi.pc {
        if st.regs[pc] != Val::orig(arm::LR) {
            func.finding(
                Severity::Error,
                k,
                "returns to an address other than the entry lr".into(),
            );
        }
    }
}

fn pointer_name(d: Direction) -> &'static str {
    match d {
        Direction::FromUser => "from",
        Direction::ToUser => "to",
    }
}

fn entry_state(abi: &AbiSpec, fixed: Option<u64>) -> State {
    let mut regs = [Val::OTHER; NREGS];
    for (r, v) in regs.iter_mut().enumerate() {
        *v = Val::orig(r);
    }
    let len = || {
        if fixed.is_some() {
            Val::OTHER
        } else {
            Val::tagged(LEN, Some(0))
        }
    };
    let mut stack = BTreeMap::new();
    // x86 calls push the return address; ARM passes it in lr.
    if abi.pc.is_none() {
        stack.insert(0, Val::tagged(RETADDR, None));
    }
    match abi.arg_regs {
        Some([to, from, n]) => {
            regs[to] = Val::tagged(DST, None);
            regs[from] = Val::tagged(SRC, Some(0));
            if fixed.is_none() {
                regs[n] = len();
            }
        }
        None => {
            stack.insert(abi.ptr, Val::tagged(DST, None));
            stack.insert(2 * abi.ptr, Val::tagged(SRC, Some(0)));
            if fixed.is_none() {
                stack.insert(3 * abi.ptr, len());
            }
        }
    }
    let lb = Bound {
        value: fixed.map(|n| n as i64).unwrap_or(0),
        origin: None,
    };
    State {
        regs,
        stack,
        sp: Some(0),
        lb,
        flags: None,
    }
}

/// The fixed point of the forward analysis: the state before each
/// instruction (None: unreachable).
fn analyse(func: &mut Func, entry: State) -> Vec<Option<State>> {
    let n = func.insns.len();
    let mut states: Vec<Option<State>> = vec![None; n];
    let mut visits = vec![0u32; n];
    if n == 0 {
        return states;
    }
    states[0] = Some(entry);
    let mut work: VecDeque<usize> = VecDeque::from([0]);
    while let Some(k) = work.pop_front() {
        let st = states[k].clone().unwrap();
        let insn = &func.insns[k];
        let exec = func.exec_state(k, &st);
        let mut outs: Vec<(usize, State)> = Vec::new();
        if let Some(&fx) = func.fault.get(&k) {
            // A fault leaves before the instruction has any effect.
            let mut s = exec.clone();
            s.flags = None;
            outs.push((fx, s));
        }
        let after = func.transfer(k, &exec);
        for &s in &func.succ[k] {
            let on_fall = Some(s) == func.fall[k];
            let o = match insn.flow {
                Flow::CondJump(_) => {
                    let mut o = after.clone();
                    refine(insn.cc, &mut o, !on_fall);
                    o
                }
                _ if insn.cond_exec && on_fall => {
                    // Skipped, or (when it falls through) run.
                    let mut skip = st.clone();
                    refine(insn.cc, &mut skip, false);
                    if insn.flow == Flow::Next {
                        skip.join(&after)
                    } else {
                        skip
                    }
                }
                _ => after.clone(),
            };
            outs.push((s, o));
        }
        for (s, mut o) in outs {
            o.normalize();
            let new = match &states[s] {
                None => o,
                Some(old) => {
                    let mut j = old.join(&o);
                    if &j == old {
                        continue;
                    }
                    visits[s] += 1;
                    // Widen at loop heads (every cycle has an edge back in
                    // layout order): a bound still falling after many rounds
                    // is lost. Nodes after a length check in the loop keep
                    // what the check refines.
                    if s <= k && visits[s] > 64 && j.lb.value < old.lb.value {
                        j.lb = Bound {
                            value: i64::MIN / 4,
                            origin: None,
                        };
                    }
                    j
                }
            };
            states[s] = Some(new);
            if !work.contains(&s) {
                work.push_back(s);
            }
        }
    }
    states
}

/// Narrow the length bound on the edge where condition `cc` is `taken`.
fn refine(cc: Cc, st: &mut State, taken: bool) {
    let Some(c) = st.flags else { return };
    let v = st.regs[c.reg];
    let (true, Some(o)) = (v.tags == LEN, v.off) else {
        return;
    };
    // The value is at least `min` on this edge. Signed conditions bound
    // it too when the constant is not negative: a value at or above 2^31
    // (2^63) is negative and fails them.
    let min = match (c.test, cc, taken) {
        (false, Cc::Hs, true) | (false, Cc::Lo, false) | (false, Cc::Eq, true) => Some(c.imm),
        (false, Cc::Hi, true) | (false, Cc::Ls, false) => Some(c.imm + 1),
        (false, Cc::Ge, true) | (false, Cc::Lt, false) if c.imm >= 0 => Some(c.imm),
        (false, Cc::Gt, true) | (false, Cc::Le, false) if c.imm >= 0 => Some(c.imm + 1),
        (false, Cc::Ne, true) | (false, Cc::Eq, false) if c.imm == 0 => Some(1),
        (true, Cc::Ne, true) | (true, Cc::Eq, false) => Some(1),
        _ => None,
    };
    if let Some(m) = min {
        let b = m - o;
        if b > st.lb.value {
            st.lb = Bound {
                value: b,
                origin: Some(c.addr),
            };
        }
    }
}

/// The first reachable instruction (in address order) after which `r`
/// no longer holds its entry value.
fn first_write(func: &Func, states: &[Option<State>], r: usize) -> Option<usize> {
    (0..func.insns.len()).find(|&k| {
        states[k]
            .as_ref()
            .is_some_and(|s| s.regs[r].tags & (1 << r) != 0)
            && func.insns[k].written.contains(&r)
    })
}

/// Live general-purpose registers after each instruction (normal path),
/// each with the bytes of it still to be read (so `movb (%esi), %al` kills
/// a live `%al` but not a live `%eax`): what a touch load's destination is
/// checked against.
fn liveness(func: &Func, abi: &AbiSpec) -> Vec<BTreeMap<usize, usize>> {
    type Live = BTreeMap<usize, usize>;
    let n = func.insns.len();
    let mut uses: Vec<Live> = vec![Live::new(); n];
    for (i, u) in func.insns.iter().zip(uses.iter_mut()) {
        for &(g, w) in &i.uses {
            let e = u.entry(g).or_insert(0);
            *e = (*e).max(w);
        }
        if i.flow == Flow::Return {
            // The result and everything the caller keeps.
            u.insert(abi.ret, 8);
            for r in (0..abi.regs()).filter(|r| !abi.clobber.contains(r)) {
                u.insert(r, 8);
            }
        }
    }
    let merge = |into: &mut Live, from: &Live| {
        for (&r, &w) in from {
            let e = into.entry(r).or_insert(0);
            *e = (*e).max(w);
        }
    };
    let mut live_in: Vec<Live> = vec![Live::new(); n];
    let mut live_out: Vec<Live> = vec![Live::new(); n];
    let mut changed = true;
    while changed {
        changed = false;
        for k in (0..n).rev() {
            let mut out = Live::new();
            for &s in &func.succ[k] {
                merge(&mut out, &live_in[s]);
            }
            let mut inn = out.clone();
            for &(g, w) in &func.insns[k].defs {
                if inn.get(&g).is_some_and(|&need| need <= w) {
                    inn.remove(&g);
                }
            }
            merge(&mut inn, &uses[k]);
            // A fault leaves before the instruction writes anything.
            if let Some(&fx) = func.fault.get(&k) {
                let f = live_in[fx].clone();
                merge(&mut inn, &f);
            }
            if inn != live_in[k] || out != live_out[k] {
                live_in[k] = inn;
                live_out[k] = out;
                changed = true;
            }
        }
    }
    live_out
}

/// From a fixup: does some path reach a return, and is there a one-byte
/// user access (a byte retry or step) on the way?
fn fixup_paths(func: &Func, states: &[Option<State>], fx: usize, user_tag: u32) -> (bool, bool) {
    let mut seen = BTreeSet::new();
    let mut work = vec![fx];
    let (mut returns, mut byte) = (false, false);
    while let Some(k) = work.pop() {
        if !seen.insert(k) {
            continue;
        }
        let i = &func.insns[k];
        if i.flow == Flow::Return {
            returns = true;
        }
        if let Some(st) = &states[k] {
            byte |= i.mems.iter().any(|m| {
                m.kind != MemKind::Prefetch
                    && m.size == 1
                    && m.base.is_some_and(|g| st.regs[g].tags & user_tag != 0)
            });
        }
        work.extend(func.succ[k].iter().copied());
    }
    (returns, byte)
}

/// Text of a report for several files, and whether all passed.
pub fn render_reports(reports: &[Report]) -> (String, bool) {
    let mut s = String::new();
    let mut ok = true;
    for r in reports {
        let _ = write!(s, "{r}");
        ok &= r.passed();
    }
    (s, ok)
}

/// Check every strategy of the built-in catalog (all architectures) in both
/// flavours, from freshly rendered text (what `copygen emit` writes to
/// `emitted/`).
pub fn check_catalog(options: &Options) -> Result<Vec<Report>> {
    check_strategies(&crate::front::catalog::catalog()?, options)
}

/// The entry names of `s` in `flavor` that `classify` cannot read, with
/// their roles (`None`: both directions).
fn linux_names(
    s: &crate::front::strategy::Strategy,
    flavor: Flavor,
) -> Vec<(String, Option<Direction>)> {
    let both = s.routine == crate::front::strategy::RoutineShape::Both;
    s.directions
        .iter()
        .map(|&d| {
            let name = crate::lower::entry_symbol(s, flavor, d, None);
            (name, (!both).then_some(d))
        })
        .filter(|(n, _)| classify(n).is_none())
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
            let facts = Options {
                arch: Some(s.arch),
                flavor: Some(flavor),
                convention: Some(s.linux.convention),
                ..options.clone()
            };
            let names = linux_names(s, flavor);
            let mut r = check_object_named(&path, &facts, &names)?;
            r.file = PathBuf::from("emitted").join(rel);
            reports.push(r);
        }
    }
    Ok(reports)
}
