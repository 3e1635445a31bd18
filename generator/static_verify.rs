//! `copygen verify --static`: check a copy routine from its object code
//! alone, so it works on any `.S`/`.o`, not only on what copygen emitted.
//!
//! For each global `*_from_user` / `*_to_user` (and fixed-size
//! `*_<dir>_<N>`) function it decodes `.text` and runs one forward data-flow
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
//! - linux-flavour code touches no MMX/SSE/AVX/x87 register;
//! - every touch load (a load from the source whose value is dead) is
//!   dominated by a length check that keeps it inside the source.
//!
//! x86_64 and i386; ARM objects are read but not analysed yet.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use iced_x86::{
    ConditionCode, FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind,
    Register,
};

use crate::ir::{Arch, Convention, Direction, Flavor};
use crate::objfile::{self, Assemble, FnSym, ObjectFile};

/// What the object cannot say about itself.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Architecture of a `.S` input (default: the copygen header's, else x86_64).
    pub arch: Option<Arch>,
    /// Flavour (default: the copygen header's; else linux when the file
    /// includes kernel headers, standalone otherwise; `.o`: standalone).
    pub flavor: Option<Flavor>,
    /// x86_64 linux calling convention (default: the header's, else C).
    pub convention: Option<Convention>,
    /// i386: arguments in eax/edx/ecx (default: on for the linux flavour).
    pub regparm: Option<bool>,
    /// The routines own the vector state: allow MMX/SSE/AVX in the linux flavour.
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
    pub addr: u64,
    /// The instruction in AT&T syntax.
    pub insn: String,
    /// Source line (from DWARF; `.S` inputs are assembled with `-g`).
    pub line: Option<u32>,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {:#x}", self.severity, self.addr)?;
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

/// What the copygen header of an emitted `.S` says (` * name: arch, flavour flavour, abi.`).
fn header_facts(text: &str) -> (Option<Arch>, Option<Flavor>, Option<Convention>) {
    for line in text.lines().take(12) {
        let Some(rest) = line.trim_start_matches(" * ").split_once(": ").map(|p| p.1) else {
            continue;
        };
        let mut parts = rest.splitn(3, ", ");
        let (Some(a), Some(fl)) = (parts.next(), parts.next()) else {
            continue;
        };
        let (Some(arch), Some(flavor)) = (
            Arch::parse(a),
            fl.strip_suffix(" flavour").and_then(Flavor::parse),
        ) else {
            continue;
        };
        let abi = parts.next().unwrap_or("");
        let conv = if abi.starts_with("rep_movs convention") {
            Convention::RepMovs
        } else {
            Convention::C
        };
        return (Some(arch), Some(flavor), Some(conv));
    }
    (None, None, None)
}

/// Check the `.S` or `.o` at `path`.
pub fn check_object(path: &Path, options: &Options) -> Result<Report> {
    let is_source = matches!(path.extension().and_then(|e| e.to_str()), Some("S" | "s"));
    let (obj, mut flavor, mut convention) = if is_source {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let (h_arch, h_flavor, h_conv) = header_facts(&text);
        let arch = options.arch.or(h_arch).unwrap_or(Arch::X86_64);
        let kernel = text.contains("#include <linux/") || text.contains("#include <asm/");
        let flavor = options.flavor.or(h_flavor).unwrap_or(if kernel {
            Flavor::Linux
        } else {
            Flavor::Standalone
        });
        let how = Assemble {
            arch,
            kernel_shims: kernel,
            debug: true,
            keep_locals: false,
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
    if arch == Arch::Armv6 {
        bail!(
            "{}: static verification of ARM code is not implemented yet",
            path.display()
        );
    }
    let regparm = options.regparm.unwrap_or(flavor == Flavor::Linux);
    let abi = AbiSpec::new(arch, flavor, convention, regparm);
    let mut functions = Vec::new();
    let mut checked: Vec<&FnSym> = Vec::new();
    for f in obj
        .functions
        .iter()
        .filter(|f| f.global && f.section == ".text")
    {
        let Some((direction, fixed)) = classify(&f.name) else {
            continue;
        };
        checked.push(f);
        let vector_ok = options.allow_vector || flavor == Flavor::Standalone;
        functions.push(check_function(obj, f, direction, fixed, &abi, vector_ok));
    }
    let mut file_findings = Vec::new();
    for e in &obj.extable {
        if !checked.iter().any(|f| f.contains(&e.insn)) && obj.function_at(&e.insn).is_none() {
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
const RSP: usize = 4;

fn reg_name(arch: Arch, r: usize) -> &'static str {
    const R64: [&str; NREGS] = [
        "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    const R32: [&str; 8] = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"];
    match arch {
        Arch::I386 => R32[r],
        _ => R64[r],
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
    describe: String,
}

impl AbiSpec {
    fn new(arch: Arch, flavor: Flavor, convention: Convention, regparm: bool) -> Self {
        let (ax, cx, dx, si, di) = (0, 1, 2, 6, 7);
        match arch {
            Arch::X86_64 if flavor == Flavor::Linux && convention == Convention::RepMovs => AbiSpec {
                arch,
                ptr: 8,
                arg_regs: Some([di, si, cx]),
                ret: cx,
                clobber: vec![ax, cx, si, di],
                describe: "rep_movs convention: rdi=to rsi=from rcx=n -> rcx, may clobber rax rcx rsi rdi".into(),
            },
            Arch::X86_64 => AbiSpec {
                arch,
                ptr: 8,
                arg_regs: Some([di, si, dx]),
                ret: ax,
                clobber: vec![ax, cx, dx, si, di, 8, 9, 10, 11],
                describe: "C convention: rdi=to rsi=from rdx=n -> rax, may clobber rax rcx rdx rsi rdi r8-r11".into(),
            },
            _ => AbiSpec {
                arch,
                ptr: 4,
                arg_regs: regparm.then_some([ax, dx, cx]),
                ret: ax,
                clobber: vec![ax, cx, dx],
                describe: if regparm {
                    "regparm(3): eax=to edx=from ecx=n -> eax, may clobber eax ecx edx".into()
                } else {
                    "cdecl: to, from, n at 4/8/12(%esp) -> eax, may clobber eax ecx edx".into()
                },
            },
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

/// One register or stack slot. `off` is meaningful when `tags` is exactly
/// `SRC` (`src_end - value == LEN + off`) or `LEN` (`value == LEN + off`).
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
    fn is_ptr(self) -> bool {
        self.tags & (SRC | DST) != 0
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

/// `LEN >= value`, established by the compare at `origin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bound {
    value: i64,
    origin: Option<u64>,
}

/// The last flag-setting compare of a register with an immediate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cmp {
    reg: usize,
    imm: i64,
    /// `test r, r` rather than `cmp $imm, r`.
    test: bool,
    addr: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
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

fn gpr(r: Register) -> Option<usize> {
    if r.is_gpr() {
        let n = r.full_register().number();
        (n < NREGS).then_some(n)
    } else {
        None
    }
}

/// Register writes that replace the whole value (32/64-bit GPR writes).
fn full_write(r: Register) -> bool {
    r.is_gpr() && r.size() >= 4
}

fn imm_of(i: &Instruction, op: u32) -> i64 {
    let v = i.immediate(op);
    match i.op_kind(op) {
        OpKind::Immediate64 | OpKind::Immediate8to64 | OpKind::Immediate32to64 => v as i64,
        _ => v as u32 as i32 as i64,
    }
}

// ---------------------------------------------------------------------------
// One function.

struct Func<'a> {
    obj: &'a ObjectFile,
    abi: &'a AbiSpec,
    insns: Vec<Instruction>,
    index: BTreeMap<u64, usize>,
    /// Entry (fixup index) of each instruction that has one.
    fault: BTreeMap<usize, usize>,
    succ: Vec<Vec<usize>>,
    findings: Vec<Finding>,
}

impl Func<'_> {
    fn finding(&mut self, severity: Severity, k: usize, message: String) {
        let i = &self.insns[k];
        let f = Finding {
            severity,
            addr: i.ip(),
            insn: objfile::format_x86(i),
            line: self.obj.line_of(i.ip()),
            message,
        };
        if !self.findings.contains(&f) {
            self.findings.push(f);
        }
    }

    fn describe(&self, k: usize) -> String {
        let i = &self.insns[k];
        match self.obj.line_of(i.ip()) {
            Some(l) => format!("`{}` at {:#x} (line {l})", objfile::format_x86(i), i.ip()),
            None => format!("`{}` at {:#x}", objfile::format_x86(i), i.ip()),
        }
    }
}

fn check_function(
    obj: &ObjectFile,
    f: &FnSym,
    direction: Direction,
    fixed: Option<u64>,
    abi: &AbiSpec,
    vector_ok: bool,
) -> FunctionReport {
    let insns = objfile::decode_x86(obj.arch, obj.bytes_of(f), f.start);
    let index: BTreeMap<u64, usize> = insns.iter().enumerate().map(|(k, i)| (i.ip(), k)).collect();
    let mut func = Func {
        obj,
        abi,
        insns,
        index,
        fault: BTreeMap::new(),
        succ: Vec::new(),
        findings: Vec::new(),
    };
    let entries: Vec<_> = obj.entries_of(f).cloned().collect();

    // Exception-table entries: boundaries and fixups inside the function.
    for e in &entries {
        let Some(&k) = func.index.get(&e.insn.offset) else {
            let near = func
                .index
                .range(..e.insn.offset)
                .next_back()
                .map(|(_, &k)| k)
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
        if !f.contains(&e.fixup) {
            let other = obj
                .function_at(&e.fixup)
                .map(|g| format!(" (in {})", g.name))
                .unwrap_or_default();
            func.finding(
                Severity::Error,
                k,
                format!("fixup {} lies outside the function{other}", e.fixup),
            );
            continue;
        }
        let Some(&fx) = func.index.get(&e.fixup.offset) else {
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

    // Control flow.
    let n = func.insns.len();
    let mut succ = vec![Vec::new(); n];
    for (k, out) in succ.iter_mut().enumerate() {
        let i = func.insns[k];
        match i.flow_control() {
            FlowControl::Return | FlowControl::Interrupt | FlowControl::Exception => {}
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch => {
                if i.flow_control() == FlowControl::ConditionalBranch {
                    out.push(k + 1);
                }
                match func.index.get(&i.near_branch_target()) {
                    Some(&t) => out.push(t),
                    None => func.finding(Severity::Error, k, "jumps outside the function".into()),
                }
            }
            FlowControl::IndirectBranch => func.finding(
                Severity::Warning,
                k,
                "indirect jump: paths through it are not checked".into(),
            ),
            _ => out.push(k + 1),
        }
        if out.contains(&n) {
            out.retain(|&s| s != n);
            func.finding(
                Severity::Error,
                k,
                "runs off the end of the function".into(),
            );
        }
    }
    func.succ = succ;

    // The forward analysis.
    let entry = entry_state(abi, fixed);
    let states = analyse(&mut func, entry);

    // User accesses, entries and everything else that reads the states.
    let user_tag = match direction {
        Direction::FromUser => SRC,
        Direction::ToUser => DST,
    };
    let mut factory = InstructionInfoFactory::new();
    let mut user_accesses = 0;
    let live = liveness(&func, abi);
    for k in 0..n {
        let Some(st) = states[k].clone() else {
            continue;
        };
        let i = func.insns[k];
        let info = factory.info(&i);
        let mems: Vec<_> = info
            .used_memory()
            .iter()
            .filter(|m| m.access() != OpAccess::NoMemAccess)
            .copied()
            .collect();
        let regs: Vec<_> = info.used_registers().to_vec();
        let val = |r: Register| gpr(r).map(|g| st.regs[g]).unwrap_or(Val::OTHER);
        let user = mems
            .iter()
            .any(|m| (val(m.base()).tags | val(m.index()).tags) & user_tag != 0);
        if user {
            user_accesses += 1;
            if !func.fault.contains_key(&k) {
                func.finding(
                    Severity::Error,
                    k,
                    format!(
                        "accesses user memory (through `{}`) without an exception-table entry",
                        pointer_name(direction)
                    ),
                );
            }
        } else if func.fault.contains_key(&k) {
            func.finding(
                Severity::Error,
                k,
                "stray exception-table entry: this instruction does not access user memory".into(),
            );
        }
        if !vector_ok {
            if let Some(r) = regs
                .iter()
                .map(|u| u.register())
                .find(|r| r.is_vector_register() || r.is_mm() || r.is_st() || r.is_k())
            {
                func.finding(
                    Severity::Error,
                    k,
                    format!(
                        "uses {r:?}: linux-flavour routines may not touch MMX/SSE/AVX/x87 state"
                    ),
                );
            }
        }
        // Touch loads: a load from the source whose value is dead.
        if i.mnemonic() == Mnemonic::Mov
            && i.op0_kind() == OpKind::Register
            && i.op1_kind() == OpKind::Memory
        {
            let dst = i.op0_register();
            let base = val(i.memory_base());
            let dead = gpr(dst).is_some_and(|g| !live[k].contains_key(&g));
            if dead && base.tags & SRC != 0 && i.memory_index() == Register::None {
                let disp = displacement(&i, abi);
                let need = disp + dst.size() as i64;
                let proven = base
                    .off
                    .filter(|_| base.tags == SRC)
                    .map(|c| st.lb.value + c);
                match (proven, st.lb.origin) {
                    (Some(p), Some(o)) if p >= need => {
                        let check = func.describe(func.index[&o]);
                        func.finding(
                            Severity::Note,
                            k,
                            format!("touch load of source bytes [{disp}, {need}) is inside the source: guarded by {check} (at least {p} bytes left)"),
                        );
                    }
                    (Some(p), _) if p >= need => {}
                    (p, o) => {
                        let what = match (p, o) {
                            (Some(p), Some(o)) => {
                                format!("only {p} proven by {}", func.describe(func.index[&o]))
                            }
                            (Some(p), None) => format!("only {p} proven"),
                            (None, _) => {
                                "the length check cannot be related to this pointer".into()
                            }
                        };
                        func.finding(
                            Severity::Error,
                            k,
                            format!("touch load past the checked length: reads source bytes [{disp}, {need}), needs {need} bytes left, {what}"),
                        );
                    }
                }
            }
        }
        // Preserved registers and the stack at every return.
        if i.flow_control() == FlowControl::Return {
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
                if r == RSP || abi.clobber.contains(&r) || st.regs[r].tags == 1 << r {
                    continue;
                }
                let by = first_write(&func, &states, r)
                    .map(|w| func.describe(w))
                    .unwrap_or_else(|| "an unknown path".into());
                func.finding(
                    Severity::Error,
                    k,
                    format!("{} is not preserved: the convention does not let it be clobbered, written by {by}", reg_name(abi.arch, r)),
                );
            }
        }
    }

    // Every fixup reaches a return; a wide access's fixup copies a byte
    // before it gives up (the progress rule), or we cannot prove it.
    for (&k, &fx) in func.fault.clone().iter() {
        if states[fx].is_none() {
            continue;
        }
        let (returns, byte) = fixup_paths(&func, &states, fx, user_tag, &mut factory);
        if !returns {
            func.finding(
                Severity::Error,
                k,
                format!("its fixup {} never reaches a return", func.describe(fx)),
            );
        }
        let wide = access_width(&func.insns[k]) > 1;
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
    findings.sort_by_key(|f| (std::cmp::Reverse(f.severity), f.addr));
    FunctionReport {
        name: f.name.clone(),
        direction,
        fixed,
        bytes: f.end - f.start,
        instructions: func.insns.len(),
        user_accesses,
        entries: entries.len(),
        findings,
    }
}

fn pointer_name(d: Direction) -> &'static str {
    match d {
        Direction::FromUser => "from",
        Direction::ToUser => "to",
    }
}

fn displacement(i: &Instruction, abi: &AbiSpec) -> i64 {
    if abi.ptr == 8 {
        i.memory_displacement64() as i64
    } else {
        i.memory_displacement32() as i32 as i64
    }
}

/// Bytes an instruction's memory operand covers (1 for `rep movsb`).
fn access_width(i: &Instruction) -> usize {
    i.memory_size().size().max(1)
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
    stack.insert(0, Val::tagged(RETADDR, None));
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
    let mut factory = InstructionInfoFactory::new();
    while let Some(k) = work.pop_front() {
        let st = states[k].clone().unwrap();
        let i = func.insns[k];
        let mut outs: Vec<(usize, State)> = Vec::new();
        if let Some(&fx) = func.fault.get(&k) {
            // A fault leaves before the instruction has any effect.
            let mut s = st.clone();
            s.flags = None;
            outs.push((fx, s));
        }
        let after = transfer(&i, &st, func.abi, &mut factory);
        for &s in &func.succ[k] {
            let mut o = after.clone();
            refine(
                &i,
                &mut o,
                s != k + 1 || i.flow_control() == FlowControl::UnconditionalBranch,
            );
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
                    if visits[s] > 64 && j.lb.value < old.lb.value {
                        // Widen: a bound still falling after many rounds is lost.
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

/// Narrow the length bound on a conditional branch's edge.
fn refine(i: &Instruction, st: &mut State, taken: bool) {
    if i.flow_control() != FlowControl::ConditionalBranch {
        return;
    }
    let Some(c) = st.flags else { return };
    let v = st.regs[c.reg];
    let (true, Some(o)) = (v.tags == LEN, v.off) else {
        return;
    };
    use ConditionCode as C;
    // The value is at least `min` on this edge (unsigned compares only).
    let min = match (c.test, i.condition_code(), taken) {
        (false, C::ae, true) | (false, C::b, false) | (false, C::e, true) => Some(c.imm),
        (false, C::a, true) | (false, C::be, false) => Some(c.imm + 1),
        (true, C::ne, true) | (true, C::e, false) => Some(1),
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

/// The state after `i` on its normal path.
fn transfer(
    i: &Instruction,
    st: &State,
    abi: &AbiSpec,
    factory: &mut InstructionInfoFactory,
) -> State {
    let mut s = st.clone();
    let pw = abi.ptr as usize;
    let reg0 = if i.op_count() > 0 && i.op0_kind() == OpKind::Register {
        gpr(i.op0_register())
    } else {
        None
    };
    let wide0 =
        i.op_count() > 0 && i.op0_kind() == OpKind::Register && i.op0_register().size() == pw;
    let val = |r: Register| gpr(r).map(|g| st.regs[g]).unwrap_or(Val::OTHER);
    let stack_slot = |s: &State| -> Option<i64> {
        (i.memory_base().full_register() == Register::RSP || i.memory_base() == Register::ESP)
            .then_some(())
            .and(s.sp)
            .filter(|_| i.memory_index() == Register::None)
            .map(|sp| sp + displacement(i, abi))
    };

    // Generic effects first: every written GPR loses what it held.
    let info = factory.info(i);
    for u in info.used_registers() {
        if matches!(
            u.access(),
            OpAccess::Write | OpAccess::ReadWrite | OpAccess::CondWrite | OpAccess::ReadCondWrite
        ) {
            if let Some(g) = gpr(u.register()) {
                if g != RSP {
                    s.regs[g] = Val::OTHER;
                }
                if s.flags.is_some_and(|c| c.reg == g) {
                    s.flags = None;
                }
            }
        }
    }
    if i.rflags_modified() != 0 {
        s.flags = None;
    }

    let m = i.mnemonic();
    match m {
        Mnemonic::Mov if i.op_count() == 2 => match (i.op0_kind(), i.op1_kind()) {
            (OpKind::Register, OpKind::Register) => {
                if let Some(d) = reg0 {
                    s.regs[d] = if wide0 {
                        val(i.op1_register())
                    } else {
                        Val::OTHER
                    };
                }
            }
            (OpKind::Register, OpKind::Memory) => {
                if let (Some(d), Some(slot)) = (reg0, stack_slot(st)) {
                    if wide0 {
                        s.regs[d] = st.stack.get(&slot).copied().unwrap_or(Val::OTHER);
                    }
                }
            }
            (OpKind::Memory, _) => {
                if let Some(slot) = stack_slot(st) {
                    let v = if i.op1_kind() == OpKind::Register && i.op1_register().size() == pw {
                        val(i.op1_register())
                    } else {
                        Val::OTHER
                    };
                    s.stack.insert(slot, v);
                }
            }
            _ => {}
        },
        Mnemonic::Push => {
            let v = if i.op0_kind() == OpKind::Register {
                val(i.op0_register())
            } else {
                Val::OTHER
            };
            s.sp = st.sp.map(|sp| sp - abi.ptr);
            if let Some(sp) = s.sp {
                s.stack.insert(sp, v);
            }
        }
        Mnemonic::Pop => {
            if let (Some(d), Some(sp)) = (reg0, st.sp) {
                s.regs[d] = st.stack.get(&sp).copied().unwrap_or(Val::OTHER);
            }
            s.sp = st.sp.map(|sp| sp + abi.ptr);
        }
        Mnemonic::Add | Mnemonic::Sub if i.op_count() == 2 && i.op0_kind() == OpKind::Register => {
            let sign = if m == Mnemonic::Add { 1 } else { -1 };
            let Some(d) = reg0 else { return s };
            let imm = matches!(
                i.op1_kind(),
                OpKind::Immediate8
                    | OpKind::Immediate8to32
                    | OpKind::Immediate8to64
                    | OpKind::Immediate32
                    | OpKind::Immediate32to64
            );
            if d == RSP {
                s.sp = if imm {
                    st.sp.map(|sp| sp + sign * imm_of(i, 1))
                } else {
                    None
                };
                return s;
            }
            let old = st.regs[d];
            if !wide0 {
                return s;
            }
            if imm {
                let k = sign * imm_of(i, 1);
                s.regs[d] = if old.tags == SRC {
                    Val::tagged(SRC, old.off.map(|c| c - k))
                } else if old.tags == LEN {
                    Val::tagged(LEN, old.off.map(|o| o + k))
                } else if old.is_ptr() {
                    Val::tagged(old.tags & (SRC | DST), None)
                } else {
                    Val::OTHER
                };
            } else if i.op1_kind() == OpKind::Register {
                let other = val(i.op1_register());
                s.regs[d] = match (old.is_ptr(), other.is_ptr()) {
                    (true, false) => Val::tagged(old.tags & (SRC | DST), None),
                    (false, true) if m == Mnemonic::Add => {
                        Val::tagged(other.tags & (SRC | DST), None)
                    }
                    _ => Val::OTHER,
                };
            }
        }
        Mnemonic::Lea => {
            let Some(d) = reg0 else { return s };
            let (b, x) = (val(i.memory_base()), val(i.memory_index()));
            let disp = displacement(i, abi);
            s.regs[d] = if !wide0 {
                Val::OTHER
            } else if i.memory_index() == Register::None && b.tags == SRC {
                Val::tagged(SRC, b.off.map(|c| c - disp))
            } else if i.memory_index() == Register::None && b.tags == LEN {
                Val::tagged(LEN, b.off.map(|o| o + disp))
            } else if b.is_ptr() && !x.is_ptr() {
                Val::tagged(b.tags & (SRC | DST), None)
            } else if x.is_ptr() && !b.is_ptr() && i.memory_index_scale() == 1 {
                Val::tagged(x.tags & (SRC | DST), None)
            } else {
                Val::OTHER
            };
        }
        Mnemonic::Movsb
        | Mnemonic::Movsw
        | Mnemonic::Movsd
        | Mnemonic::Movsq
        | Mnemonic::Stosb
        | Mnemonic::Stosd
        | Mnemonic::Stosq
            if i.op0_kind() == OpKind::MemoryESEDI || i.op0_kind() == OpKind::MemoryESRDI =>
        {
            // The string pointers advance: still the same pointers.
            for r in [6usize, 7] {
                if st.regs[r].is_ptr() {
                    s.regs[r] = Val::tagged(st.regs[r].tags & (SRC | DST), None);
                }
            }
        }
        Mnemonic::Cmp if i.op0_kind() == OpKind::Register && wide_or_32(i.op0_register(), abi) => {
            if let Some(r) = reg0 {
                if i.op1_kind() != OpKind::Register && i.op1_kind() != OpKind::Memory {
                    s.flags = Some(Cmp {
                        reg: r,
                        imm: imm_of(i, 1),
                        test: false,
                        addr: i.ip(),
                    });
                }
            }
        }
        Mnemonic::Test
            if i.op0_kind() == OpKind::Register
                && i.op1_kind() == OpKind::Register
                && i.op0_register() == i.op1_register()
                && wide_or_32(i.op0_register(), abi) =>
        {
            if let Some(r) = reg0 {
                s.flags = Some(Cmp {
                    reg: r,
                    imm: 0,
                    test: true,
                    addr: i.ip(),
                });
            }
        }
        _ => {
            // Anything else that moves the stack pointer makes it unknown.
            let writes_sp = info.used_registers().iter().any(|u| {
                gpr(u.register()) == Some(RSP)
                    && !matches!(u.access(), OpAccess::Read | OpAccess::CondRead)
            });
            if writes_sp && !matches!(i.flow_control(), FlowControl::Call | FlowControl::Return) {
                s.sp = None;
            }
            if i.flow_control() == FlowControl::Call {
                for &r in &abi.clobber {
                    s.regs[r] = Val::OTHER;
                }
            }
        }
    }
    s
}

/// A compare of the length is meaningful at pointer width (or 32 bits).
fn wide_or_32(r: Register, abi: &AbiSpec) -> bool {
    r.size() == abi.ptr as usize || r.size() == 4
}

/// The first reachable instruction (in address order) after which `r`
/// no longer holds its entry value.
fn first_write(func: &Func, states: &[Option<State>], r: usize) -> Option<usize> {
    let mut factory = InstructionInfoFactory::new();
    (0..func.insns.len()).find(|&k| {
        states[k]
            .as_ref()
            .is_some_and(|s| s.regs[r].tags & (1 << r) != 0)
            && factory
                .info(&func.insns[k])
                .used_registers()
                .iter()
                .any(|u| {
                    gpr(u.register()) == Some(r)
                        && matches!(
                            u.access(),
                            OpAccess::Write
                                | OpAccess::ReadWrite
                                | OpAccess::CondWrite
                                | OpAccess::ReadCondWrite
                        )
                })
    })
}

/// Live general-purpose registers after each instruction (normal path),
/// each with the bytes of it still to be read (so `movb (%esi), %al` kills
/// a live `%al` but not a live `%eax`): what a touch load's destination is
/// checked against.
fn liveness(func: &Func, abi: &AbiSpec) -> Vec<BTreeMap<usize, usize>> {
    type Live = BTreeMap<usize, usize>;
    let n = func.insns.len();
    let mut factory = InstructionInfoFactory::new();
    let mut uses: Vec<Live> = vec![Live::new(); n];
    let mut defs: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    let read_width = |r: Register| {
        if matches!(r, Register::AH | Register::CH | Register::DH | Register::BH) {
            2
        } else {
            r.size()
        }
    };
    for k in 0..n {
        let i = &func.insns[k];
        for u in factory.info(i).used_registers() {
            let Some(g) = gpr(u.register()) else { continue };
            match u.access() {
                OpAccess::Write => {
                    // 32-bit writes zero-extend: the whole register.
                    let w = if full_write(u.register()) {
                        8
                    } else if read_width(u.register()) == 2 && u.register().size() == 1 {
                        0
                    } else {
                        u.register().size()
                    };
                    defs[k].push((g, w));
                }
                OpAccess::CondWrite => {}
                _ => {
                    let e = uses[k].entry(g).or_insert(0);
                    *e = (*e).max(read_width(u.register()));
                }
            }
        }
        if i.flow_control() == FlowControl::Return {
            // The result and everything the caller keeps.
            uses[k].insert(abi.ret, 8);
            for r in (0..abi.regs()).filter(|r| !abi.clobber.contains(r)) {
                uses[k].insert(r, 8);
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
            for &(g, w) in &defs[k] {
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
fn fixup_paths(
    func: &Func,
    states: &[Option<State>],
    fx: usize,
    user_tag: u32,
    factory: &mut InstructionInfoFactory,
) -> (bool, bool) {
    let mut seen = BTreeSet::new();
    let mut work = vec![fx];
    let (mut returns, mut byte) = (false, false);
    while let Some(k) = work.pop() {
        if !seen.insert(k) {
            continue;
        }
        let i = &func.insns[k];
        if i.flow_control() == FlowControl::Return {
            returns = true;
        }
        if let Some(st) = &states[k] {
            byte |= factory.info(i).used_memory().iter().any(|m| {
                m.access() != OpAccess::NoMemAccess
                    && m.memory_size().size() == 1
                    && gpr(m.base()).is_some_and(|g| st.regs[g].tags & user_tag != 0)
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

/// Check every x86 strategy of the built-in catalog in both flavours, from
/// freshly rendered text (what `copygen emit` writes to `emitted/`).
pub fn check_catalog(options: &Options) -> Result<Vec<Report>> {
    let dir = tempfile::tempdir()?;
    let mut reports = Vec::new();
    for s in crate::emit::catalog()? {
        if !matches!(s.arch, Arch::X86_64 | Arch::I386) {
            continue;
        }
        for flavor in Flavor::ALL {
            let rel = crate::render::emitted_path(&s, flavor);
            let path = dir.path().join(&rel);
            std::fs::create_dir_all(path.parent().unwrap())?;
            std::fs::write(&path, crate::render::render(&s, flavor))?;
            let mut r = check_object(&path, options)?;
            r.file = PathBuf::from("emitted").join(rel);
            reports.push(r);
        }
    }
    Ok(reports)
}
