//! Backends: per-architecture instruction selection and GNU as printing.
//! Each takes the lowered [`Routine`]s and returns printed [`Function`]s;
//! the file around them comes from the templates (`render.rs`).

pub mod armv6;
pub mod i386;
pub mod x86;
pub mod x86_64;

use crate::ir::{Arch, Flavor, Strategy};
use crate::lower::{lower, Target};
use crate::ops::Routine;

/// One exception-table entry: the faulting instruction's label and the
/// fixup's.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ExEntry {
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
    pub extable: Vec<ExEntry>,
}

/// A selected instruction of either backend and, for a user access, its
/// (instruction label, fixup label) pair: one exception-table entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<I> {
    pub inst: I,
    pub user: Option<(String, String)>,
    /// Out-of-line fixup code starts at this line.
    pub fixup_start: bool,
}

/// What every selector shares: local labels named after the routine, and
/// the lines with their exception-table pairs.
pub struct Lines<'r, I> {
    pub r: &'r Routine,
    pub out: Vec<Line<I>>,
    pending_fixup_start: bool,
}

impl<'r, I> Lines<'r, I> {
    pub fn new(r: &'r Routine) -> Self {
        Lines {
            r,
            out: Vec::new(),
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
    pub fn emit_user(&mut self, inst: I, site: &Option<crate::ops::UserSite>) {
        let user = site.as_ref().map(|s| {
            (
                self.label(&s.name),
                self.label(&self.r.fixups[s.fixup].label),
            )
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
        if let Some((insn, fixup)) = &line.user {
            out.push(format!("{insn}:"));
            f.extable.push(ExEntry {
                insn: insn.clone(),
                fixup: fixup.clone(),
            });
        }
        out.push(print_inst(&line.inst));
    }
    f
}

/// The x86 ABI table for `routine` on `arch`/`flavor`.
pub fn x86_abi(s: &Strategy, arch: Arch, flavor: Flavor) -> x86::Abi {
    match arch {
        Arch::X86_64 => x86_64::abi(flavor, s.linux.convention),
        Arch::I386 => i386::abi(flavor),
        Arch::Armv6 => panic!("armv6 is not x86"),
    }
}

/// Lower and print every entry point of `s` for `flavor`.
pub fn functions(s: &Strategy, flavor: Flavor) -> Vec<(Routine, Function)> {
    let routines = lower(
        s,
        Target {
            arch: s.arch,
            flavor,
        },
    );
    routines
        .into_iter()
        .map(|r| {
            let mut f = match s.arch {
                Arch::X86_64 | Arch::I386 => {
                    let abi = x86_abi(s, s.arch, flavor);
                    let lines = x86::select(&r, &abi);
                    x86::print(&lines, abi.ptr_width, flavor)
                }
                Arch::Armv6 => armv6::print(&armv6::select(&r), flavor),
            };
            f.symbol = r.symbol.clone();
            f.aliases = r.aliases.iter().map(|(a, _)| a.clone()).collect();
            (r, f)
        })
        .collect()
}
