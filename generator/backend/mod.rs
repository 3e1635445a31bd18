//! Backends: per-architecture instruction selection and GNU as printing.
//! [`compile`] is the one compile path — strategy → lowered [`Routine`]s →
//! selected lines ([`Compiled`]) — that the GAS printer, the JIT and the
//! fault-injection harness share; each selector takes its arch's ABI table,
//! not the strategy. The file around the printed [`Function`]s comes from
//! the templates (`output/render.rs`).

pub mod aarch64;
pub mod armv6;
pub mod riscv64;
pub mod x86;

use crate::front::strategy::{Arch, Flavor, Strategy};
use crate::lower::routine::Routine;
use crate::lower::{lower, Target};

/// One exception-table entry: the faulting instruction's label and the
/// fixup's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExtableLabels {
    pub insn: String,
    pub fixup: String,
}

/// One printed entry point.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Function {
    pub symbol: String,
    /// Further global names of the same code (a routine serving both
    /// directions, standalone flavour).
    pub aliases: Vec<String>,
    /// Instructions, labels and comments, one per line.
    pub body: Vec<String>,
    /// Out-of-line fixup code (in the function on x86, `.text.fixup` on ARM).
    pub fixups: Vec<String>,
    pub extable: Vec<ExtableLabels>,
}

/// A selected instruction of either backend and, for a user access, its
/// exception-table entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<I> {
    pub inst: I,
    pub user: Option<ExtableLabels>,
    /// Out-of-line fixup code starts at this line.
    pub fixup_start: bool,
}

/// What every selector shares: local labels named after the routine, and
/// the lines with their exception-table pairs.
pub struct Lines<'r, I> {
    pub r: &'r Routine,
    pub out: Vec<Line<I>>,
    /// [`Routine::scratch_used`], counted once: every return restores the
    /// saved registers, and a count per return made selection quadratic.
    pub scratch_used: u8,
    pending_fixup_start: bool,
}

impl<'r, I> Lines<'r, I> {
    pub fn new(r: &'r Routine) -> Self {
        Lines {
            r,
            out: Vec::new(),
            scratch_used: r.scratch_used(),
            pending_fixup_start: false,
        }
    }

    /// `.L<tag>_<name>`. Built by hand: the JIT selects on every compile,
    /// and `format!` was a large part of that.
    pub fn label(&self, name: &str) -> String {
        let tag = &self.r.tag;
        let mut l = String::with_capacity(3 + tag.len() + name.len());
        l.push_str(".L");
        l.push_str(tag);
        l.push('_');
        l.push_str(name);
        l
    }

    pub fn emit(&mut self, inst: I) {
        self.emit_user(inst, &None);
    }

    /// An instruction; a user access when `site` is given.
    pub fn emit_user(&mut self, inst: I, site: &Option<crate::lower::routine::UserSite>) {
        let user = site.as_ref().map(|s| ExtableLabels {
            insn: self.label(&s.name),
            fixup: self.label(&self.r.fixups[s.fixup].label),
        });
        let fixup_start = std::mem::take(&mut self.pending_fixup_start);
        self.out.push(Line {
            inst,
            user,
            fixup_start,
        });
    }

    /// The next line starts the out-of-line fixup code.
    pub fn begin_fixups(&mut self) {
        self.pending_fixup_start = true;
    }
}

/// Print selected lines: each user access gets its label line and table
/// entry; lines from the first fixup on go to `Function::fixups`.
pub fn print_lines<I>(lines: &[Line<I>], print_inst: impl Fn(&I) -> String) -> Function {
    let mut f = Function {
        symbol: String::new(),
        aliases: Vec::new(),
        body: Vec::new(),
        fixups: Vec::new(),
        extable: Vec::new(),
    };
    let mut in_fixups = false;
    for line in lines {
        in_fixups |= line.fixup_start;
        let out = if in_fixups {
            &mut f.fixups
        } else {
            &mut f.body
        };
        if let Some(entry) = &line.user {
            out.push(format!("{}:", entry.insn));
            f.extable.push(entry.clone());
        }
        out.push(print_inst(&line.inst));
    }
    f
}

/// The x86 ABI of `s` on its arch in `flavor`.
pub fn x86_abi(s: &Strategy, flavor: Flavor) -> x86::AbiRegs {
    assert!(
        matches!(s.arch, Arch::X86_64 | Arch::I386),
        "{} is not x86",
        s.arch
    );
    x86::AbiRegs::new(crate::arch::abi(s.arch, flavor, s.linux.convention))
}

/// Selected lines of one routine, in its architecture's instruction list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selected {
    X86 {
        ptr_width: u32,
        lines: Vec<x86::Line>,
    },
    Armv6(Vec<armv6::Line>),
    Aarch64(Vec<aarch64::Line>),
    Riscv64(Vec<riscv64::Line>),
}

/// One entry point compiled: the lowered routine (ops and fixups) and its
/// selected lines. Built once by [`compile`]; the GAS printer, the JIT and
/// the fault-injection harness all read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub flavor: Flavor,
    pub routine: Routine,
    pub lines: Selected,
}

/// The compile path: lower `s` for `flavor` and select instructions for
/// each entry point with the ABI table of its arch.
pub fn compile(s: &Strategy, flavor: Flavor) -> Vec<Compiled> {
    let target = Target {
        arch: s.arch,
        flavor,
    };
    let x86 = matches!(s.arch, Arch::X86_64 | Arch::I386).then(|| x86_abi(s, flavor));
    lower(s, target)
        .into_iter()
        .map(|routine| {
            let lines = match (&x86, s.arch) {
                (Some(abi), _) => Selected::X86 {
                    ptr_width: abi.ptr_width,
                    lines: x86::select(&routine, abi),
                },
                (None, Arch::Aarch64) => Selected::Aarch64(aarch64::select(&routine)),
                (None, Arch::Riscv64) => Selected::Riscv64(riscv64::select(&routine)),
                (None, _) => Selected::Armv6(armv6::select(&routine)),
            };
            Compiled {
                flavor,
                routine,
                lines,
            }
        })
        .collect()
}

impl Compiled {
    /// The GNU as text of this routine.
    pub fn print(&self) -> Function {
        let mut f = match &self.lines {
            Selected::X86 { ptr_width, lines } => x86::print(lines, *ptr_width, self.flavor),
            Selected::Armv6(lines) => armv6::print(lines, self.flavor),
            Selected::Aarch64(lines) => aarch64::print(lines, self.flavor),
            Selected::Riscv64(lines) => riscv64::print(lines),
        };
        f.symbol = self.routine.symbol.clone();
        f.aliases = self
            .routine
            .aliases
            .iter()
            .map(|(a, _)| a.clone())
            .collect();
        f
    }
}

/// Lower and print every entry point of `s` for `flavor`.
pub fn functions(s: &Strategy, flavor: Flavor) -> Vec<(Routine, Function)> {
    compile(s, flavor)
        .into_iter()
        .map(|c| {
            let f = c.print();
            (c.routine, f)
        })
        .collect()
}

/// The entry points of `s` in `flavor` that pick a per-CPU variant, printed
/// (none without variants; [`x86::entry`]).
pub fn per_cpu_entries(s: &Strategy, flavor: Flavor) -> Vec<Function> {
    x86::entry::per_cpu_entries(s, flavor)
}

/// Every function of the file of `s` in `flavor`: with per-CPU variants, the
/// entry points that pick one ([`per_cpu_entries`]) first, then the lowered
/// routines.
pub fn file_functions(s: &Strategy, flavor: Flavor) -> Vec<Function> {
    print_file(s, flavor, &compile(s, flavor))
}

/// [`file_functions`] from routines already compiled for `s` in `flavor`.
pub fn print_file(s: &Strategy, flavor: Flavor, compiled: &[Compiled]) -> Vec<Function> {
    let mut out = per_cpu_entries(s, flavor);
    out.extend(compiled.iter().map(Compiled::print));
    if flavor == Flavor::Linux {
        x86::entry::name_feature_entries(s, &mut out);
    }
    out
}
