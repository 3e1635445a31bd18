//! Every emitted x86 file, assembled with GNU as and read back with `object`
//! and iced-x86: one exception-table entry per user access the lowering made,
//! each on an instruction boundary that touches the user side, each fixup in
//! its own function, relocated as the flavour's format says.
//!
//! Strategies: the built-in catalog (iterated by architecture, so presets
//! added later are covered without touching this file) plus the i386
//! fixtures in tests/fixtures/strategies/.

use std::collections::BTreeSet;
use std::path::Path;

use iced_x86::{Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};
use object::elf;

use copygen::backend;
use copygen::checks::objfile::{self, Assemble, EntryKind, ObjectFile};
use copygen::front::catalog::catalog;
use copygen::front::strategy::{
    Arch, Direction, ExtableFormat, Flavor, KernelVersion, RoutineShape, Strategy,
};
use copygen::output::render::render;

/// The catalog and the fixture strategies, x86 only.
fn strategies() -> Vec<Strategy> {
    let mut v: Vec<Strategy> = catalog().expect("catalog validates");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/strategies");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for f in files {
        v.push(
            copygen::front::parse::load(&f, None)
                .unwrap_or_else(|e| panic!("{}: {e:#}", f.display())),
        );
    }
    v.retain(|s| matches!(s.arch, Arch::X86_64 | Arch::I386));
    v
}

fn assemble(s: &Strategy, flavor: Flavor) -> ObjectFile {
    let how = Assemble {
        keep_locals: true,
        ..Assemble::new(s.arch, flavor)
    };
    objfile::assemble_text(&render(s, flavor), &format!("{}.S", s.name), &how)
        .unwrap_or_else(|e| panic!("{} {} {flavor}: {e:#}", s.name, s.arch))
}

#[test]
fn catalog_and_fixtures_cover_both_x86_architectures() {
    let archs: BTreeSet<Arch> = strategies().iter().map(|s| s.arch).collect();
    assert!(
        archs.contains(&Arch::X86_64) && archs.contains(&Arch::I386),
        "{archs:?}"
    );
}

/// Does `i` touch the user side of `dir` through the ABI's pointer register
/// (rsi/esi loads for from_user, rdi/edi stores for to_user) or `rep movs`?
fn touches_user(i: &Instruction, dir: Direction) -> bool {
    if matches!(
        i.mnemonic(),
        Mnemonic::Movsb | Mnemonic::Movsw | Mnemonic::Movsd | Mnemonic::Movsq
    ) && i.has_rep_prefix()
        && matches!(i.op0_kind(), OpKind::MemoryESEDI | OpKind::MemoryESRDI)
    {
        return true;
    }
    let mut f = InstructionInfoFactory::new();
    let info = f.info(i);
    info.used_memory().iter().any(|m| match dir {
        Direction::FromUser => {
            matches!(m.base(), Register::RSI | Register::ESI)
                && matches!(m.access(), OpAccess::Read | OpAccess::CondRead)
        }
        Direction::ToUser => {
            matches!(m.base(), Register::RDI | Register::EDI)
                && matches!(m.access(), OpAccess::Write | OpAccess::CondWrite)
        }
    })
}

/// What every entry of `s` in `flavor` must look like: (bytes per entry,
/// relative or absolute, raw ELF relocation type, type word).
fn expected_format(s: &Strategy, flavor: Flavor) -> (u64, EntryKind, u32, Option<u32>) {
    const EX_TYPE_UACCESS: u32 = 3;
    match (s.arch, flavor, s.linux.extable) {
        (Arch::X86_64, Flavor::Standalone, _) => {
            (8, EntryKind::Relative, elf::R_X86_64_PC32.0, None)
        }
        // (the shims are 6.1's: a file for both kernels takes _ASM_EXTABLE_CPY)
        (Arch::X86_64, Flavor::Linux, ExtableFormat::Copy) => (
            12,
            EntryKind::Relative,
            elf::R_X86_64_PC32.0,
            Some(EX_TYPE_COPY),
        ),
        (Arch::X86_64, Flavor::Linux, _) => (
            12,
            EntryKind::Relative,
            elf::R_X86_64_PC32.0,
            Some(EX_TYPE_UACCESS),
        ),
        (Arch::I386, Flavor::Standalone, _) => (8, EntryKind::Relative, elf::R_386_PC32.0, None),
        (Arch::I386, Flavor::Linux, ExtableFormat::Relative) => (
            12,
            EntryKind::Relative,
            elf::R_386_PC32.0,
            Some(EX_TYPE_UACCESS),
        ),
        (Arch::I386, Flavor::Linux, ExtableFormat::Absolute) => {
            (8, EntryKind::Absolute, elf::R_386_32.0, None)
        }
        (Arch::I386, Flavor::Linux, ExtableFormat::Copy) => {
            unreachable!("_ASM_EXTABLE_CPY is x86_64's (validated)")
        }
        (Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64, ..) => unreachable!("x86 only"),
    }
}

/// All problems with one strategy in one flavour (empty: correct).
fn check(s: &Strategy, flavor: Flavor) -> Vec<String> {
    let obj = assemble(s, flavor);
    let mut errs = Vec::new();
    let (size, kind, reloc, type_word) = expected_format(s, flavor);
    if !obj.extable.is_empty() && obj.entry_size != size {
        errs.push(format!(
            "entries are {} bytes, expected {size}",
            obj.entry_size
        ));
    }
    let mut seen = 0;
    for (routine, printed) in backend::functions(s, flavor) {
        let name = &routine.symbol;
        let Some(f) = obj.function(name) else {
            errs.push(format!("{name}: no function symbol in the object"));
            continue;
        };
        if !f.global {
            errs.push(format!("{name}: not global"));
        }
        let entries: Vec<_> = obj.entries_of(f).collect();
        seen += entries.len();
        let sites = routine.user_sites().len();
        if entries.len() != sites {
            errs.push(format!(
                "{name}: {} exception-table entries, {sites} user accesses in the lowering",
                entries.len()
            ));
        }
        let insns = objfile::decode_x86(s.arch, obj.bytes_of(f), f.start);
        let starts: BTreeSet<u64> = insns.iter().map(|i| i.ip()).collect();
        for (k, e) in entries.iter().enumerate() {
            let at = format!("{name}: entry {k} (insn {}, fixup {})", e.insn, e.fixup);
            if (e.kind, e.reloc, e.type_word) != (kind, reloc, type_word) {
                errs.push(format!(
                    "{at}: {:?} relocation type {} type word {:?}, expected {kind:?} {reloc} {type_word:?}",
                    e.kind, e.reloc, e.type_word
                ));
            }
            if !starts.contains(&e.insn.offset) {
                errs.push(format!("{at}: not an instruction boundary"));
            } else {
                let i = insns.iter().find(|i| i.ip() == e.insn.offset).unwrap();
                // A routine serving both directions (`routine = "both"`): each
                // side may be the user one, so an access to either has an entry.
                let either = s.routine == RoutineShape::Both
                    && [Direction::FromUser, Direction::ToUser]
                        .iter()
                        .any(|&d| touches_user(i, d));
                if !touches_user(i, routine.direction) && !either {
                    errs.push(format!(
                        "{at}: `{}` does not access the user side",
                        objfile::format_x86(i)
                    ));
                }
            }
            if !f.contains(&e.fixup) {
                errs.push(format!("{at}: fixup outside the function"));
            }
            if !starts.contains(&e.fixup.offset) {
                errs.push(format!("{at}: fixup not on an instruction boundary"));
            }
            // The entry is the one the printer wrote, in order, by label.
            if let Some(p) = printed.extable.get(k) {
                if obj.labels.get(&p.insn) != Some(&e.insn)
                    || obj.labels.get(&p.fixup) != Some(&e.fixup)
                {
                    errs.push(format!(
                        "{at}: expected ({}, {}) at ({:?}, {:?})",
                        p.insn,
                        p.fixup,
                        obj.labels.get(&p.insn),
                        obj.labels.get(&p.fixup)
                    ));
                }
            }
        }
    }
    if seen != obj.extable.len() {
        errs.push(format!(
            "{} entries in __ex_table, {seen} inside the functions",
            obj.extable.len()
        ));
    }
    errs.into_iter()
        .map(|e| format!("{} {} {flavor}: {e}", s.name, s.arch))
        .collect()
}

fn check_arch(arch: Arch) {
    let mut errs = Vec::new();
    let mut n = 0;
    for s in strategies().iter().filter(|s| s.arch == arch) {
        for flavor in Flavor::ALL {
            errs.extend(check(s, flavor));
            n += 1;
        }
    }
    assert!(n > 0, "no {arch} strategy to check");
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

#[test]
fn x86_64_objects_have_one_entry_per_user_access() {
    check_arch(Arch::X86_64);
}

#[test]
fn i386_objects_have_one_entry_per_user_access() {
    check_arch(Arch::I386);
}

/// `<asm/extable_fixup_types.h>` of 6.1: `_ASM_EXTABLE_CPY`'s type, whose
/// handler puts the trap number in eax (unused since 6.4).
const EX_TYPE_COPY: u32 = 4;

/// x86_64 copy routines use the macro of their tree: every catalog strategy
/// that may go into 6.1 takes `_ASM_EXTABLE_CPY`, a 6.12-only one `_UA`.
#[test]
fn x86_64_linux_files_use_the_trees_copy_routine_macro() {
    let mut n = 0;
    for s in strategies().iter().filter(|s| s.arch == Arch::X86_64) {
        let text = render(s, Flavor::Linux);
        let six_twelve = s.linux.kernel == Some(KernelVersion::V6_12);
        let (want, not) = if six_twelve {
            ("_ASM_EXTABLE_UA(", "_ASM_EXTABLE_CPY(")
        } else {
            ("_ASM_EXTABLE_CPY(", "_ASM_EXTABLE_UA(.L")
        };
        assert!(
            text.contains(want) && !text.contains(not),
            "{}: {want} expected",
            s.name
        );
        if s.linux.kernel.is_none() {
            // Both kernels: 6.1's half only, by version (6.4 removed the macro).
            assert!(
                text.contains(
                    "#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 4, 0)\n/* 6.1's copy routines"
                ),
                "{}: the macro is not picked by version",
                s.name
            );
        }
        n += 1;
    }
    assert!(n > 0);
}

/// 6.1's rule for `_ASM_EXTABLE_CPY`: no byte retry after a machine check.
/// In every x86_64 linux object (6.1's half) whose fixups retry bytes, each
/// path into a byte retry or step first runs `cmp $18, %eax` (X86_TRAP_MC),
/// whose `je` leads to a return touching no memory; and no jump comes back
/// to that compare from below (the retry loop's loads change eax).
#[test]
fn x86_64_6_1_fixups_skip_the_byte_retry_after_a_machine_check() {
    let mut checked = 0;
    let mut errs = Vec::new();
    for s in strategies().iter().filter(|s| s.arch == Arch::X86_64) {
        if s.linux.extable != ExtableFormat::Copy {
            continue;
        }
        let obj = assemble(s, Flavor::Linux);
        for (routine, printed) in backend::functions(s, Flavor::Linux) {
            let name = &routine.symbol;
            let f = obj.function(name).expect("function in the object");
            let retries = printed
                .fixups
                .iter()
                .any(|l| l.contains("byte retry") || l.contains("one byte more"));
            let insns = objfile::decode_x86(s.arch, obj.bytes_of(f), f.start);
            let checks: Vec<usize> = (0..insns.len())
                .filter(|&k| {
                    let i = &insns[k];
                    i.mnemonic() == Mnemonic::Cmp
                        && i.op0_register() == Register::EAX
                        && i.op1_kind() == OpKind::Immediate8to32
                        && i.immediate32() == 18
                })
                .collect();
            if retries == checks.is_empty() {
                errs.push(format!(
                    "{name}: byte retry {retries}, machine-check exits {}",
                    checks.len()
                ));
                continue;
            }
            for &k in &checks {
                let (cmp, je) = (&insns[k], insns.get(k + 1));
                let Some(je) = je.filter(|j| j.mnemonic() == Mnemonic::Je) else {
                    errs.push(format!(
                        "{name}: no je after cmp $18, %eax at {:#x}",
                        cmp.ip()
                    ));
                    continue;
                };
                let target = je.near_branch_target();
                let Some(t) = insns.iter().position(|i| i.ip() == target) else {
                    errs.push(format!("{name}: je to {target:#x} outside the function"));
                    continue;
                };
                let mut info = InstructionInfoFactory::new();
                for i in insns[t..]
                    .iter()
                    .take_while(|i| i.mnemonic() != Mnemonic::Ret)
                {
                    if !info.info(i).used_memory().is_empty() {
                        errs.push(format!(
                            "{name}: after a machine check `{}` touches memory",
                            objfile::format_x86(i)
                        ));
                    }
                }
                if insns[k + 1..].iter().any(|i| {
                    (i.is_jmp_short_or_near() || i.is_jcc_short_or_near())
                        && i.near_branch_target() == cmp.ip()
                }) {
                    errs.push(format!(
                        "{name}: a jump back to the machine-check compare at {:#x}",
                        cmp.ip()
                    ));
                }
            }
            checked += retries as usize;
        }
    }
    assert!(checked > 0, "no x86_64 linux routine with a byte retry");
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

/// The checks above can fail: an entry taken out of the emitted text is
/// noticed (count), and one moved to a kernel-side instruction too.
#[test]
fn a_missing_or_misplaced_entry_is_noticed() {
    let s = catalog()
        .unwrap()
        .into_iter()
        .find(|s| s.name == "unrolled64")
        .expect("unrolled64 in the catalog");
    let text = render(&s, Flavor::Linux);
    let line = text
        .lines()
        .find(|l| l.contains("_EXTABLE(.Lfrom_unrolled_loop_load3"))
        .unwrap();
    let how = Assemble {
        keep_locals: true,
        ..Assemble::new(s.arch, Flavor::Linux)
    };
    let full = objfile::assemble_text(&text, "a.S", &how).unwrap();
    let fewer =
        objfile::assemble_text(&text.replacen(&format!("{line}\n"), "", 1), "b.S", &how).unwrap();
    assert_eq!(fewer.extable.len() + 1, full.extable.len());
    // Point it at the store after the load instead: a kernel-side access.
    let moved = text.replacen(
        "\tmovq\t%rax, (%rdi)\n\tmovq\t%rcx, 8(%rdi)",
        "\t.Lmoved: movq\t%rax, (%rdi)\n\tmovq\t%rcx, 8(%rdi)",
        1,
    );
    let moved = moved.replacen(line, "\tCOPYGEN_EXTABLE(.Lmoved, .Lfrom_fixup_retry)", 1);
    let obj = objfile::assemble_text(&moved, "c.S", &how).unwrap();
    let f = obj.function("unrolled64_from_user").unwrap();
    let at = obj.labels[".Lmoved"].offset;
    let insns = objfile::decode_x86(s.arch, obj.bytes_of(f), f.start);
    let i = insns.iter().find(|i| i.ip() == at).unwrap();
    assert!(
        !touches_user(i, Direction::FromUser),
        "{}",
        objfile::format_x86(i)
    );
    assert!(obj.extable.iter().any(|e| e.insn.offset == at));
}

/// The ARM side of the reader, ready for the armv6 backend: absolute
/// (`R_ARM_ABS32`, linux) and relative (`R_ARM_REL32`, standalone) entries,
/// fixups in `.text.fixup`, REL addends read from the section bytes.
#[test]
fn arm_entries_resolve_both_formats() {
    let text = "\t.text\n\t.globl\tf_from_user\n\t.type\tf_from_user, %function\nf_from_user:\n\
        \tmov\tr3, r0\n1:\tldrb\tr12, [r1], #1\n\tstrb\tr12, [r0], #1\n\tbx\tlr\n\
        \t.size\tf_from_user, . - f_from_user\n\
        \t.section .text.fixup, \"ax\"\n\t.align\t2\n\tnop\n9:\tmov\tr0, r2\n\tbx\tlr\n\
        \t.pushsection __ex_table, \"a\"\n\t.align\t3\n\t.long\t1b, 9b\n\t.popsection\n\
        \t.pushsection __ex_table, \"a\"\n\t.long\t1b - ., 9b - .\n\t.popsection\n";
    let how = Assemble::new(Arch::Armv6, Flavor::Standalone);
    let obj = objfile::assemble_text(text, "arm.S", &how).unwrap();
    assert_eq!(obj.arch, Arch::Armv6);
    let f = obj.function("f_from_user").unwrap();
    assert_eq!(obj.extable.len(), 2);
    for (e, kind, reloc) in [
        (&obj.extable[0], EntryKind::Absolute, 2),
        (&obj.extable[1], EntryKind::Relative, 3),
    ] {
        assert_eq!((e.kind, e.reloc), (kind, reloc));
        assert_eq!((e.insn.section.as_str(), e.insn.offset), (".text", 4));
        assert!(f.contains(&e.insn));
        assert_eq!(
            (e.fixup.section.as_str(), e.fixup.offset),
            (".text.fixup", 4)
        );
    }
}
