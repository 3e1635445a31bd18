//! Assembled objects: assemble a `.S` with GNU as (through gcc), then read
//! back what the tests, `copygen verify --static` and `copygen diff` look at:
//! the functions (symbol → byte range), the exception table (each entry's
//! instruction and fixup, resolved through its relocations), the code bytes
//! and, for objects built with `-g`, address → source line.
//!
//! Only ELF relocatable objects are read (what `gcc -c` writes on Linux).
//! Relocation types are compared raw after branching on the machine: the
//! numbers overlap (`R_X86_64_PC32`, `R_386_PC32` and `R_ARM_ABS32` are all 2).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use object::{elf, Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

use crate::checks::sandbox::{bound_assembler, exceeded, AS_CPU_SECS, AS_MEMORY, AS_OUTPUT};
use crate::front::strategy::{Arch, Flavor};

/// A source or object that cannot be used as what it claims: GNU as
/// rejects it (or stops on it at its bounds), its object is malformed, it
/// holds more code than the static check analyses. The file's fault: where
/// the user gave the file, [`crate::checks::static_verify::check_user_file`]
/// makes it [`crate::input::BadInput`]; where copygen wrote it, an
/// internal error.
#[derive(Debug)]
pub struct Unusable(pub String);

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unusable {}

mod lines;
mod riscv;

use lines::read_lines;

/// A place in a code section.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Loc {
    pub section: String,
    pub offset: u64,
}

impl std::fmt::Display for Loc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.section == ".text" {
            write!(f, "{:#x}", self.offset)
        } else {
            write!(f, "{}+{:#x}", self.section, self.offset)
        }
    }
}

/// A function symbol: `[start, end)` in `section`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FnSym {
    pub name: String,
    pub section: String,
    pub start: u64,
    pub end: u64,
    pub global: bool,
}

impl FnSym {
    pub fn contains(&self, l: &Loc) -> bool {
        l.section == self.section && (self.start..self.end).contains(&l.offset)
    }
}

/// How an exception-table word is relocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// `.long x - .`: `R_X86_64_PC32`, `R_386_PC32`, `R_ARM_REL32`.
    Relative,
    /// `.long x`: `R_386_32`, `R_ARM_ABS32`.
    Absolute,
}

/// One exception-table entry, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtableEntry {
    /// Offset of the entry in `__ex_table`.
    pub at: u64,
    pub insn: Loc,
    pub fixup: Loc,
    pub kind: EntryKind,
    /// The raw ELF relocation type of the insn word.
    pub reloc: u32,
    /// The third word of 12-byte (linux x86) entries: the entry type.
    pub type_word: Option<u32>,
}

/// One `ALTERNATIVE` site: an `.altinstructions` entry (`struct alt_instr`
/// of `arch/x86/include/asm/alternative.h`), resolved. At boot the kernel
/// copies the replacement over the site when the feature condition holds,
/// pads the rest of the site with NOPs and relocates the replacement's
/// relative branches (`apply_alternatives`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AltEntry {
    /// Offset of the entry in `.altinstructions`.
    pub at: u64,
    /// The original instruction(s), patched in place.
    pub site: Loc,
    /// The replacement, in `.altinstr_replacement`.
    pub replacement: Loc,
    /// The CPU feature bit (`X86_FEATURE_*`: word * 32 + bit).
    pub feature: u16,
    /// Patching flags (Linux 6.3+: [`ALT_FLAG_NOT`], [`ALT_FLAG_DIRECT_CALL`]);
    /// in 12-byte entries only [`ALT_FLAG_NOT`], from [`ALTINSTR_FLAG_INV`].
    pub flags: u16,
    /// Bytes of the site (the original and its NOP padding).
    pub site_len: u8,
    pub replacement_len: u8,
}

/// `ALT_FLAG_NOT`: patch when the feature is absent.
pub const ALT_FLAG_NOT: u16 = 1;
/// Linux 6.1's `ALT_NOT`: the top bit of a 12-byte entry's feature word.
pub const ALTINSTR_FLAG_INV: u16 = 1 << 15;
/// `ALT_FLAG_DIRECT_CALL`: the kernel turns the original's indirect call
/// into a direct one (the replacement is only a placeholder).
pub const ALT_FLAG_DIRECT_CALL: u16 = 2;

/// A relocation in full: what moving the relocated bytes needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reloc {
    /// The ELF relocation type (compare after branching on the machine).
    pub r_type: elf::RelocationType,
    /// The symbol (a defined one: its place).
    pub target: RelocTarget,
    /// The addend (REL objects: the one stored in the relocated bytes).
    pub addend: i64,
}

/// What `read` finds in an object.
#[derive(Debug, Clone)]
pub struct ObjectFile {
    pub arch: Arch,
    /// Code sections by name (`.text`, `.text.fixup`).
    pub code: BTreeMap<String, Vec<u8>>,
    pub functions: Vec<FnSym>,
    pub extable: Vec<ExtableEntry>,
    /// Bytes per exception-table entry (8, or 12 with the type word).
    pub entry_size: u64,
    /// `.text` offset → source line, sorted (empty without debug info).
    pub lines: Vec<(u64, u32)>,
    /// The same for every code section (`.text.fixup` too).
    pub section_lines: BTreeMap<String, Vec<(u64, u32)>>,
    /// Relocated words in code sections (branches to other sections or to
    /// global symbols), by place: what a decoder alone cannot resolve.
    pub code_relocs: BTreeMap<Loc, RelocTarget>,
    /// Every named symbol in a code section; with `keep_locals` this
    /// includes the `.L` labels, so entries can be matched to their names.
    pub labels: BTreeMap<String, Loc>,
    /// x86 `ALTERNATIVE` sites, in table order (the order the kernel
    /// applies them).
    pub alternatives: Vec<AltEntry>,
    /// Relocations in `.altinstr_replacement`, by offset.
    pub replacement_relocs: BTreeMap<u64, Reloc>,
    /// Every relocation, and the data symbols (what writes a pointer).
    pub data: crate::checks::static_verify::DataFacts,
}

impl ObjectFile {
    /// The function containing `l`.
    pub fn function_at(&self, l: &Loc) -> Option<&FnSym> {
        self.functions.iter().find(|f| f.contains(l))
    }

    pub fn function(&self, name: &str) -> Option<&FnSym> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Entries whose instruction lies in `f`.
    pub fn entries_of<'a>(&'a self, f: &'a FnSym) -> impl Iterator<Item = &'a ExtableEntry> + 'a {
        self.extable.iter().filter(move |e| f.contains(&e.insn))
    }

    /// The bytes of `f`.
    pub fn bytes_of(&self, f: &FnSym) -> &[u8] {
        &self.code[&f.section][f.start as usize..f.end as usize]
    }

    /// The source line of the instruction at `.text` offset `addr`.
    pub fn line_of(&self, addr: u64) -> Option<u32> {
        let i = self.lines.partition_point(|&(a, _)| a <= addr);
        (i > 0).then(|| self.lines[i - 1].1)
    }

    /// The source line of the instruction at `l`, in any code section.
    pub fn line_at(&self, l: &Loc) -> Option<u32> {
        let lines = self.section_lines.get(&l.section)?;
        let i = lines.partition_point(|&(a, _)| a <= l.offset);
        (i > 0).then(|| lines[i - 1].1)
    }
}

/// Where a relocated word in code points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RelocTarget {
    /// A defined symbol: its place (the addend, which depends on the
    /// instruction's encoding, is left to the decoder).
    Symbol(Loc),
    /// An undefined symbol, by name.
    Undefined(String),
}

/// How to assemble a `.S` file.
#[derive(Debug, Clone)]
pub struct Assemble {
    pub arch: Arch,
    /// Use the kernel-macro shims of `verify/shim` (linux flavour).
    pub kernel_shims: bool,
    /// Emit DWARF line info (`-g`) so findings can name source lines.
    pub debug: bool,
    /// Keep `.L` labels in the symbol table (`-Wa,-L`).
    pub keep_locals: bool,
    /// More compiler-driver flags (e.g. `-mfpu=vfp`).
    pub flags: Vec<String>,
}

impl Assemble {
    pub fn new(arch: Arch, flavor: Flavor) -> Self {
        Assemble {
            arch,
            kernel_shims: flavor == Flavor::Linux,
            debug: false,
            keep_locals: false,
            flags: Vec::new(),
        }
    }
}

/// The folder holding the kernel-macro shims (`verify/shim`).
pub fn shim_dir() -> PathBuf {
    crate::front::catalog::repo_root()
        .join("verify")
        .join("shim")
}

/// The kernel-macro shims for `arch` (`verify/shim-arm` for ARM).
pub fn shim_dir_for(arch: Arch) -> PathBuf {
    match arch {
        Arch::Armv6 => crate::front::catalog::repo_root()
            .join("verify")
            .join("shim-arm"),
        Arch::Aarch64 => crate::front::catalog::repo_root()
            .join("verify")
            .join("shim-arm64"),
        Arch::Riscv64 => crate::front::catalog::repo_root()
            .join("verify")
            .join("shim-riscv64"),
        _ => shim_dir(),
    }
}

/// Assemble `src` into `out` with gcc; the error carries gcc's messages.
pub fn assemble(src: &Path, out: &Path, how: &Assemble) -> Result<()> {
    let tc = crate::toolchain::toolchain(how.arch);
    let cc = tc.cc.program;
    let mut cmd = tc.cc.command();
    cmd.arg("-c").args(tc.arch_flags);
    if how.kernel_shims {
        cmd.arg("-nostdinc")
            .arg("-I")
            .arg(shim_dir_for(how.arch))
            .arg("-D__ASSEMBLY__");
    }
    if how.debug {
        cmd.arg("-g");
    }
    if how.keep_locals {
        cmd.arg("-Wa,-L");
    }
    cmd.args(&how.flags);
    cmd.arg(src).arg("-o").arg(out);
    bound_assembler(&mut cmd);
    let output = tc.cc.output(&mut cmd)?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        if exceeded(&output.status, &err) {
            return Err(Unusable(format!(
                "{}: the assembler exceeded its limits ({} MiB of memory, {} MiB of output, {} s of CPU time): a `.rept` or `.fill` that large is no copy routine",
                src.display(),
                AS_MEMORY >> 20,
                AS_OUTPUT >> 20,
                AS_CPU_SECS
            ))
            .into());
        }
        let hint = if how.arch == Arch::I386 && err.contains("bits/") {
            format!(" (is `{}` installed?)", tc.cc.package_list())
        } else {
            String::new()
        };
        return Err(Unusable(format!(
            "{cc} could not assemble {}{hint}:\n{err}",
            src.display()
        ))
        .into());
    }
    Ok(())
}

/// Assemble the text of a `.S` file in a temporary folder and read the object.
pub fn assemble_text(text: &str, name: &str, how: &Assemble) -> Result<ObjectFile> {
    let dir = tempfile::tempdir()?;
    let src = dir.path().join(name);
    std::fs::write(&src, text)?;
    let obj = dir.path().join("out.o");
    assemble(&src, &obj, how)?;
    read_path(&obj)
}

pub fn read_path(path: &Path) -> Result<ObjectFile> {
    let data =
        crate::input::read_bytes(path).with_context(|| format!("reading {}", path.display()))?;
    read(&data).with_context(|| format!("reading {}", path.display()))
}

/// Read an ELF relocatable object.
pub fn read(data: &[u8]) -> Result<ObjectFile> {
    let file = object::File::parse(data)?;
    let arch = match file.architecture() {
        object::Architecture::X86_64 => Arch::X86_64,
        object::Architecture::I386 => Arch::I386,
        object::Architecture::Arm => Arch::Armv6,
        object::Architecture::Aarch64 => Arch::Aarch64,
        object::Architecture::Riscv64 => Arch::Riscv64,
        a => bail!(
            "unsupported architecture {a:?}: copygen reads x86_64, i386, ARM, AArch64 and RISC-V (rv64) objects"
        ),
    };
    let mut code = BTreeMap::new();
    for s in file.sections() {
        if s.kind() == object::SectionKind::Text {
            code.insert(s.name()?.to_string(), s.data()?.to_vec());
        }
    }
    let section_lines = read_lines(&file).unwrap_or_default();
    let mut labels = BTreeMap::new();
    // (name, section, start, size: None without `.size`, global, a function symbol)
    let mut syms: Vec<(String, String, u64, Option<u64>, bool, bool)> = Vec::new();
    for sym in file.symbols() {
        let (Some(idx), Ok(name)) = (sym.section_index(), sym.name()) else {
            continue;
        };
        let section = file.section_by_index(idx)?;
        if section.kind() != object::SectionKind::Text
            || name.is_empty()
            || sym.kind() == object::SymbolKind::Section
        {
            continue;
        }
        let section = section.name()?.to_string();
        labels.insert(
            name.to_string(),
            Loc {
                section: section.clone(),
                offset: sym.address(),
            },
        );
        let function = sym.kind() == object::SymbolKind::Text;
        // A function symbol, or a plain global label (hand-written
        // assembly without `.type`/`.size`).
        if function || sym.is_global() {
            let size = (sym.size() > 0).then(|| sym.size());
            syms.push((
                name.to_string(),
                section,
                sym.address(),
                size,
                sym.is_global(),
                function,
            ));
        }
    }
    let mut functions = Vec::new();
    for (name, section, start, size, global, _) in &syms {
        let len = code.get(section).map_or(0, |c: &Vec<u8>| c.len() as u64);
        let at = |o: u64| {
            let line = section_lines.get(section).and_then(|lines| {
                let i = lines.partition_point(|&(a, _)| a <= o);
                (i > 0).then(|| lines[i - 1].1)
            });
            line.map(|l| format!(" (line {l})")).unwrap_or_default()
        };
        let end = match size {
            Some(n) => start.checked_add(*n).filter(|&e| e <= len).ok_or_else(|| {
                anyhow!(
                    "function `{name}`{}: its extent {start:#x}+{n:#x} leaves {section} ({len:#x} bytes): its `.size` is wrong",
                    at(*start)
                )
            })?,
            // Without `.size`: to the next global or function symbol of its
            // section, else the section end (what objdump shows).
            None => syms
                .iter()
                .filter(|o| &o.1 == section && o.2 > *start && (o.4 || o.5))
                .map(|o| o.2)
                .min()
                .unwrap_or(len),
        };
        if *start > len {
            bail!(
                "function `{name}` starts at {start:#x}, past the end of {section} ({len:#x} bytes)"
            );
        }
        if end <= *start {
            continue;
        }
        functions.push(FnSym {
            name: name.clone(),
            section: section.clone(),
            start: *start,
            end,
            global: *global,
        });
    }
    functions.sort_by(|a, b| (&a.section, a.start).cmp(&(&b.section, b.start)));
    let (extable, entry_size) = read_extable(&file, arch)?;
    // Every entry's instruction and fixup lie in a code section.
    for e in &extable {
        for (what, l) in [("instruction", &e.insn), ("fixup", &e.fixup)] {
            let len = code.get(&l.section).map(|c| c.len() as u64);
            if len.is_none_or(|n| l.offset >= n) {
                bail!(
                    "__ex_table+{:#x}: its {what} {l} lies outside any code section",
                    e.at
                );
            }
        }
    }
    let lines = section_lines.get(".text").cloned().unwrap_or_default();
    let code_relocs = read_code_relocs(&file)?;
    let alternatives = match arch {
        Arch::X86_64 | Arch::I386 => read_alternatives(&file, arch)?,
        Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64 => Vec::new(),
    };
    let replacement_relocs = match file.section_by_name(".altinstr_replacement") {
        Some(sec) => read_relocs(&file, &sec)?,
        None => BTreeMap::new(),
    };
    Ok(ObjectFile {
        arch,
        code,
        functions,
        extable,
        entry_size,
        lines,
        section_lines,
        code_relocs,
        labels,
        alternatives,
        replacement_relocs,
        data: crate::checks::static_verify::read_data(&file)?,
    })
}

/// A relocated word: the raw type and the place it refers to.
struct Word {
    reloc: u32,
    kind: EntryKind,
    target: Loc,
}

/// The relocated words of a table of `.long x - .` (or `.long x`) words,
/// by offset: each one's raw type and the place it refers to.
fn relocated_words(
    file: &object::File,
    sec: &object::Section,
    name: &str,
) -> Result<BTreeMap<u64, (elf::RelocationType, Loc)>> {
    let data = sec.data()?;
    let mut words = BTreeMap::new();
    // RISC-V writes `.long x - .` as R_RISCV_ADD32 x with R_RISCV_SUB32 of
    // the word's own place (linker relaxation may move code): the pair is
    // one place-relative word.
    let riscv = file.architecture() == object::Architecture::Riscv64;
    let mut subtracted = std::collections::BTreeSet::new();
    for (offset, r) in sec.relocations() {
        let RelocationFlags::Elf { r_type } = r.flags() else {
            bail!("{name}+{offset:#x}: not an ELF relocation");
        };
        let addend = if r.has_implicit_addend() {
            let b = data
                .get(offset as usize..offset as usize + 4)
                .ok_or_else(|| anyhow!("{name}+{offset:#x}: relocation past the section end"))?;
            i32::from_le_bytes(b.try_into().unwrap()) as i64
        } else {
            r.addend()
        };
        let RelocationTarget::Symbol(si) = r.target() else {
            bail!("{name}+{offset:#x}: relocation without a symbol");
        };
        let sym = file.symbol_by_index(si)?;
        let Some(sx) = sym.section_index() else {
            bail!(
                "{name}+{offset:#x}: refers to undefined symbol `{}`",
                sym.name()?
            );
        };
        let section = file.section_by_index(sx)?.name()?.to_string();
        let target = Loc {
            section,
            offset: (sym.address() as i64 + addend) as u64,
        };
        if riscv && r_type == elf::R_RISCV_SUB32 {
            riscv::subtracted_place(name, offset, &target)?;
            subtracted.insert(offset);
            continue;
        }
        words.insert(offset, (r_type, target));
    }
    if riscv {
        riscv::check_pairs(name, &words, subtracted)?;
    }
    Ok(words)
}

fn read_extable(file: &object::File, arch: Arch) -> Result<(Vec<ExtableEntry>, u64)> {
    let Some(sec) = file.section_by_name("__ex_table") else {
        return Ok((Vec::new(), 8));
    };
    let data = sec.data()?;
    let mut words: BTreeMap<u64, Word> = BTreeMap::new();
    for (offset, (r_type, target)) in relocated_words(file, &sec, "__ex_table")? {
        let kind = match (arch, r_type) {
            (Arch::X86_64, elf::R_X86_64_PC32) => EntryKind::Relative,
            (Arch::I386, elf::R_386_PC32) => EntryKind::Relative,
            (Arch::I386, elf::R_386_32) => EntryKind::Absolute,
            (Arch::Armv6, elf::R_ARM_REL32) => EntryKind::Relative,
            (Arch::Armv6, elf::R_ARM_ABS32) => EntryKind::Absolute,
            (Arch::Aarch64, elf::R_AARCH64_PREL32) => EntryKind::Relative,
            // (paired with R_RISCV_SUB32 of its place: `relocated_words`)
            (Arch::Riscv64, elf::R_RISCV_ADD32) => EntryKind::Relative,
            (_, t) => bail!(
                "__ex_table+{offset:#x}: unexpected {arch} relocation type {}",
                t.0
            ),
        };
        words.insert(
            offset,
            Word {
                reloc: r_type.0,
                kind,
                target,
            },
        );
    }
    // 12-byte entries (insn, fixup, type) leave every third word unrelocated.
    let size = data.len() as u64;
    let entry_size = if words.contains_key(&8) || size % 12 != 0 {
        8
    } else {
        12
    };
    if size % entry_size != 0 {
        bail!("__ex_table is {size} bytes, not a whole number of {entry_size}-byte entries");
    }
    let mut entries = Vec::new();
    for at in (0..size).step_by(entry_size as usize) {
        let insn = words
            .remove(&at)
            .ok_or_else(|| anyhow!("__ex_table+{at:#x}: insn word has no relocation"))?;
        let fixup = words
            .remove(&(at + 4))
            .ok_or_else(|| anyhow!("__ex_table+{:#x}: fixup word has no relocation", at + 4))?;
        if fixup.kind != insn.kind {
            bail!("__ex_table+{at:#x}: insn and fixup words are relocated differently");
        }
        let type_word = (entry_size == 12).then(|| {
            let o = (at + 8) as usize;
            u32::from_le_bytes(data[o..o + 4].try_into().unwrap())
        });
        entries.push(ExtableEntry {
            at,
            insn: insn.target,
            fixup: fixup.target,
            kind: insn.kind,
            reloc: insn.reloc,
            type_word,
        });
    }
    if let Some((&o, _)) = words.iter().next() {
        bail!("__ex_table+{o:#x}: relocation inside an entry's type word");
    }
    Ok((entries, entry_size))
}

/// The `.altinstructions` entries. Linux 6.1 writes 12-byte entries
/// (`s32 instr_offset, s32 repl_offset, u16 cpuid, u8 instrlen, u8
/// replacementlen`), 6.3+ 14-byte ones (a `u32 ft_flags`: the feature bit
/// in the low half, patching flags in the high half); the two offsets are
/// `.long x - .` words, so there are two relocations an entry and the
/// section size over their count is the entry size.
fn read_alternatives(file: &object::File, arch: Arch) -> Result<Vec<AltEntry>> {
    const NAME: &str = ".altinstructions";
    let Some(sec) = file.section_by_name(NAME) else {
        return Ok(Vec::new());
    };
    let data = sec.data()?;
    let mut words = relocated_words(file, &sec, NAME)?;
    let size = data.len() as u64;
    if size == 0 {
        return Ok(Vec::new());
    }
    let count = words.len() as u64 / 2;
    let entry_size = if count > 0 && size % count == 0 {
        size / count
    } else {
        0
    };
    if !matches!(entry_size, 12 | 14) {
        bail!(
            "{NAME}: {size} bytes with {} relocations: not 12-byte (Linux 6.1) or 14-byte (6.3+) entries",
            words.len()
        );
    }
    let pc32 = match arch {
        Arch::I386 => elf::R_386_PC32,
        _ => elf::R_X86_64_PC32,
    };
    let mut word = |at: u64, what: &str| -> Result<Loc> {
        match words.remove(&at) {
            Some((t, l)) if t == pc32 => Ok(l),
            Some((t, _)) => bail!(
                "{NAME}+{at:#x}: {what} word has relocation type {}, not a PC-relative one",
                t.0
            ),
            None => bail!("{NAME}+{at:#x}: {what} word has no relocation"),
        }
    };
    let mut entries = Vec::new();
    for at in (0..size).step_by(entry_size as usize) {
        let site = word(at, "instr_offset")?;
        let replacement = word(at + 4, "repl_offset")?;
        let b = |o: u64| data[(at + o) as usize];
        let half = |o: u64| u16::from_le_bytes([b(o), b(o + 1)]);
        let (feature, flags, lens) = if entry_size == 12 {
            // 6.1: `ALT_NOT` is the feature word's top bit (ALTINSTR_FLAG_INV).
            let word = half(8);
            let not = if word & ALTINSTR_FLAG_INV != 0 {
                ALT_FLAG_NOT
            } else {
                0
            };
            (word & !ALTINSTR_FLAG_INV, not, 10)
        } else {
            (half(8), half(10), 12)
        };
        entries.push(AltEntry {
            at,
            site,
            replacement,
            feature,
            flags,
            site_len: b(lens),
            replacement_len: b(lens + 1),
        });
    }
    if let Some((&o, _)) = words.iter().next() {
        bail!("{NAME}+{o:#x}: relocation inside an entry's feature or length fields");
    }
    Ok(entries)
}

/// Every relocation of `sec`, in full, by offset.
pub(crate) fn read_relocs(
    file: &object::File,
    sec: &object::Section,
) -> Result<BTreeMap<u64, Reloc>> {
    let data = sec.data()?;
    let mut out = BTreeMap::new();
    for (offset, r) in sec.relocations() {
        let (RelocationFlags::Elf { r_type }, RelocationTarget::Symbol(si)) =
            (r.flags(), r.target())
        else {
            continue;
        };
        let addend = match data.get(offset as usize..offset as usize + 4) {
            Some(b) if r.has_implicit_addend() => i32::from_le_bytes(b.try_into().unwrap()) as i64,
            _ => r.addend(),
        };
        out.insert(
            offset,
            Reloc {
                r_type,
                target: symbol_target(file, si)?,
                addend,
            },
        );
    }
    Ok(out)
}

/// Where symbol `si` is: its place, or its name when undefined.
fn symbol_target(file: &object::File, si: object::SymbolIndex) -> Result<RelocTarget> {
    let sym = file.symbol_by_index(si)?;
    Ok(match sym.section_index() {
        Some(sx) => RelocTarget::Symbol(Loc {
            section: file.section_by_index(sx)?.name()?.to_string(),
            offset: sym.address(),
        }),
        None => RelocTarget::Undefined(sym.name()?.to_string()),
    })
}

/// Relocations inside code sections, by place.
fn read_code_relocs(file: &object::File) -> Result<BTreeMap<Loc, RelocTarget>> {
    let mut out = BTreeMap::new();
    for sec in file.sections() {
        if sec.kind() != object::SectionKind::Text {
            continue;
        }
        let name = sec.name()?.to_string();
        for (offset, r) in sec.relocations() {
            let RelocationTarget::Symbol(si) = r.target() else {
                continue;
            };
            out.insert(
                Loc {
                    section: name.clone(),
                    offset,
                },
                symbol_target(file, si)?,
            );
        }
    }
    Ok(out)
}

/// Decode `bytes` (starting at section offset `start`) as x86 code.
pub fn decode_x86(arch: Arch, bytes: &[u8], start: u64) -> Vec<iced_x86::Instruction> {
    let bitness = match arch {
        Arch::X86_64 => 64,
        Arch::I386 => 32,
        Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64 => panic!("decode_x86 on {arch} code"),
    };
    let mut d = iced_x86::Decoder::with_ip(bitness, bytes, start, iced_x86::DecoderOptions::NONE);
    let mut v = Vec::new();
    while d.can_decode() {
        v.push(d.decode());
    }
    v
}

/// GNU as (AT&T) text of one decoded instruction.
pub fn format_x86(i: &iced_x86::Instruction) -> String {
    use iced_x86::Formatter;
    let mut f = iced_x86::GasFormatter::new();
    f.options_mut().set_uppercase_hex(false);
    f.options_mut().set_space_after_operand_separator(true);
    let mut s = String::new();
    f.format(i, &mut s);
    s
}
