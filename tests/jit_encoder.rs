//! The dynasm printer against GNU as: for every catalog preset on x86_64
//! and i386 (each preset that validates there) and a batch of random valid
//! strategies, in both flavours, the emitted `.S` is assembled with
//! `gcc -c` (`-m32` for i386; the linux flavour through verify/shim), each
//! function's bytes are read from `.text`, and both they and the JIT's
//! bytes are decoded with iced-x86 and compared instruction by instruction
//! (GAS syntax; branch targets as instruction indices). The exception
//! tables must name the same (instruction, fixup) indices: GNU as's are
//! read from the `__ex_table` relocations.
//!
//! The standalone flavour must be byte-identical: the JIT re-encodes every
//! instruction dynasm produced in GNU as's form and relaxes branches as GNU
//! as does (`jit::gas_form`, `jit::encode::plan`), so what `copygen bench`
//! times is what the assembler makes of the `.S`.
//!
//! The one accepted difference, in the linux flavour only: the shim's
//! `RET` is `ret; int3` (straight-line-speculation padding); the JIT's
//! `ret` has no `int3`, so that `int3` is dropped, and branches across it
//! differ in displacement (or, rarely, in rel8/rel32 form).

use std::collections::HashMap;
use std::path::Path;

use copygen::checks::objfile;
use copygen::front::catalog::catalog;
use copygen::front::parse as strategy;
use copygen::front::strategy::{Arch, Flavor, RoutineShape, Strategy};
use copygen::jit;
use copygen::output::render;
use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, Mnemonic,
};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SymbolKind};
use proptest::strategy::{Strategy as _, ValueTree};
use proptest::test_runner::TestRunner;

use crate::common;

/// One function as GNU as assembled it.
struct GasFunction {
    code: Vec<u8>,
    /// (insn, fixup) offsets from the function's start, in table order.
    extable: Vec<(u64, u64)>,
}

fn gcc_object(s: &Strategy, flavor: Flavor, dir: &Path) -> Vec<u8> {
    let src = dir.join(format!("{}-{}-{}.S", s.name, s.arch, flavor));
    let obj = src.with_extension("o");
    std::fs::write(&src, render::render(s, flavor)).unwrap();
    objfile::assemble(&src, &obj, &objfile::Assemble::new(s.arch, flavor))
        .unwrap_or_else(|e| panic!("{e:#}"));
    std::fs::read(&obj).unwrap()
}

/// Functions by symbol, with their exception-table entries.
fn gas_functions(data: &[u8], arch: Arch) -> HashMap<String, GasFunction> {
    let file = object::File::parse(data).expect("ELF object");
    let text = file.section_by_name(".text").expect(".text");
    let text_data = text.data().unwrap();
    let mut funcs: Vec<(String, u64, u64)> = file
        .symbols()
        .filter(|s| {
            s.kind() == SymbolKind::Text && s.section_index() == Some(text.index()) && s.size() > 0
        })
        .map(|s| (s.name().unwrap().to_string(), s.address(), s.size()))
        .collect();
    funcs.sort_by_key(|f| f.1);

    let mut targets = Vec::new();
    if let Some(ex) = file.section_by_name("__ex_table") {
        let ex_data = ex.data().unwrap();
        let mut relocs: Vec<_> = ex.relocations().collect();
        relocs.sort_by_key(|r| r.0);
        for (off, r) in relocs {
            // The numbers overlap between machines: decide by arch first.
            let RelocationFlags::Elf { r_type } = r.flags() else {
                panic!("not an ELF relocation")
            };
            let ok = match arch {
                Arch::X86_64 => r_type == object::elf::R_X86_64_PC32,
                _ => r_type == object::elf::R_386_PC32 || r_type == object::elf::R_386_32,
            };
            assert!(ok, "unexpected relocation type {r_type} in __ex_table");
            let addend = if r.has_implicit_addend() {
                let o = off as usize;
                i64::from(i32::from_le_bytes(ex_data[o..o + 4].try_into().unwrap()))
            } else {
                r.addend()
            };
            let RelocationTarget::Symbol(sym) = r.target() else {
                panic!("relocation without a symbol")
            };
            let sym = file.symbol_by_index(sym).unwrap();
            assert_eq!(
                sym.section_index(),
                Some(text.index()),
                "__ex_table points outside .text"
            );
            targets.push((sym.address() as i64 + addend) as u64);
        }
    }
    assert!(
        targets.len() % 2 == 0,
        "odd number of __ex_table relocations"
    );

    let mut out: HashMap<String, GasFunction> = funcs
        .iter()
        .map(|(name, addr, size)| {
            let code = text_data[*addr as usize..(*addr + *size) as usize].to_vec();
            (
                name.clone(),
                GasFunction {
                    code,
                    extable: Vec::new(),
                },
            )
        })
        .collect();
    for pair in targets.chunks(2) {
        let (insn, fixup) = (pair[0], pair[1]);
        let (name, addr, size) = funcs
            .iter()
            .find(|(_, a, s)| (*a..a + s).contains(&insn))
            .unwrap_or_else(|| panic!("__ex_table entry at .text+{insn:#x} is in no function"));
        assert!(
            (*addr..addr + size).contains(&fixup),
            "{name}: fixup outside the function"
        );
        out.get_mut(name)
            .unwrap()
            .extable
            .push((insn - addr, fixup - addr));
    }
    out
}

fn decode(code: &[u8], bitness: u32) -> Vec<Instruction> {
    let mut d = Decoder::with_ip(bitness, code, 0, DecoderOptions::NONE);
    let insns: Vec<Instruction> = d.iter().collect();
    for i in &insns {
        assert!(!i.is_invalid(), "undecodable bytes at {:#x}", i.ip());
    }
    insns
}

/// GAS text of each instruction, branch targets as instruction indices.
fn normalise(insns: &[Instruction]) -> Vec<String> {
    let index: HashMap<u64, usize> = insns.iter().enumerate().map(|(i, x)| (x.ip(), i)).collect();
    let mut f = GasFormatter::new();
    insns
        .iter()
        .map(|x| match x.flow_control() {
            FlowControl::ConditionalBranch | FlowControl::UnconditionalBranch => {
                let t = x.near_branch_target();
                let to = index
                    .get(&t)
                    .map_or_else(|| format!("{t:#x}?"), |i| format!("#{i}"));
                format!("{:?} {to}", x.mnemonic())
            }
            _ => {
                let mut s = String::new();
                f.format(x, &mut s);
                s
            }
        })
        .collect()
}

/// GNU as's instructions of a linux function without the `int3` after each
/// `ret` (the shim's RET); the kept instructions' old indices.
fn drop_sls_int3(insns: Vec<Instruction>) -> Vec<Instruction> {
    let mut out: Vec<Instruction> = Vec::with_capacity(insns.len());
    for x in insns {
        if x.mnemonic() == Mnemonic::Int3
            && out.last().is_some_and(|p| p.mnemonic() == Mnemonic::Ret)
        {
            continue;
        }
        out.push(x);
    }
    out
}

fn index_of(insns: &[Instruction], off: u64, what: &str) -> usize {
    insns
        .iter()
        .position(|x| x.ip() == off)
        .unwrap_or_else(|| panic!("{what} at {off:#x} is not an instruction boundary"))
}

#[derive(Default)]
struct Tally {
    functions: usize,
    instructions: usize,
    identical: usize,
    /// Same opcode form (iced `Code`), bytes aside.
    same_form: usize,
    /// Branches GNU as made rel8 and the JIT rel32 (and the reverse).
    longer_branches: usize,
    shorter_branches: usize,
    entries: usize,
    /// Non-branch opcode forms that differ (JIT vs GNU as), with a count.
    other_form: HashMap<String, usize>,
    /// Mnemonics whose bytes differed, with a count.
    differing: HashMap<String, usize>,
}

/// Compare the JIT with GNU as for `s` in `flavor`; panics on a difference.
fn cross_check(s: &Strategy, flavor: Flavor, dir: &Path, tally: &mut Tally) {
    let bitness = if s.arch == Arch::I386 { 32 } else { 64 };
    let gas = gas_functions(&gcc_object(s, flavor, dir), s.arch);
    let encoded = jit::assemble(s, flavor).unwrap_or_else(|e| panic!("{} {flavor}: {e}", s.name));
    // The JIT encodes the lowered routines; per-CPU entry points (which pick
    // a variant) are GNU as only.
    let pickers = copygen::backend::per_cpu_entries(s, flavor).len();
    // A routine serving both directions is exported standalone under both
    // names at one address (CONTRACT §3): the extra name is an alias.
    let aliases = match (s.routine, flavor) {
        (RoutineShape::Both, Flavor::Standalone) => s.directions.len() - 1,
        _ => 0,
    };
    assert_eq!(
        gas.len(),
        encoded.len() + pickers + aliases,
        "{} {flavor}: function count",
        s.name
    );
    for e in &encoded {
        let ctx = format!("{} {} {flavor}: {}", s.name, s.arch, e.symbol);
        let g = gas
            .get(&e.symbol)
            .unwrap_or_else(|| panic!("{ctx}: not in the object"));
        let ours = decode(&e.code, bitness);
        let mut theirs = decode(&g.code, bitness);
        let gas_ex: Vec<(usize, usize)> = g
            .extable
            .iter()
            .map(|&(i, f)| {
                (
                    index_of(&theirs, i, "GNU as entry"),
                    index_of(&theirs, f, "GNU as fixup"),
                )
            })
            .collect();
        let gas_ex = if flavor == Flavor::Linux {
            // Re-index after dropping the int3s (no entry points at one).
            let offsets: Vec<u64> = theirs.iter().map(Instruction::ip).collect();
            theirs = drop_sls_int3(theirs);
            let keep: HashMap<u64, usize> = theirs
                .iter()
                .enumerate()
                .map(|(i, x)| (x.ip(), i))
                .collect();
            gas_ex
                .iter()
                .map(|&(i, f)| (keep[&offsets[i]], keep[&offsets[f]]))
                .collect()
        } else {
            gas_ex
        };
        if flavor == Flavor::Standalone {
            assert!(
                e.code == g.code,
                "{ctx}: bytes differ from GNU as:\n JIT {:02x?}\n as  {:02x?}",
                e.code,
                g.code
            );
        }
        compare(
            &ctx,
            (&ours, &e.code),
            (&theirs, &g.code),
            &e.extable,
            &gas_ex,
            tally,
        );
    }
}

/// Instruction by instruction, then the tables; tallies identical bytes.
fn compare(
    ctx: &str,
    (ours, our_code): (&[Instruction], &[u8]),
    (theirs, their_code): (&[Instruction], &[u8]),
    jit_extable: &[(u32, u32)],
    gas_ex: &[(usize, usize)],
    tally: &mut Tally,
) {
    let (a, b) = (normalise(ours), normalise(theirs));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "{ctx}: instruction {i} differs (JIT vs GNU as)");
    }
    assert_eq!(a.len(), b.len(), "{ctx}: instruction count (JIT vs GNU as)");
    let jit_ex: Vec<(usize, usize)> = jit_extable
        .iter()
        .map(|&(i, f)| {
            (
                index_of(ours, i as u64, "JIT entry"),
                index_of(ours, f as u64, "JIT fixup"),
            )
        })
        .collect();
    assert_eq!(
        jit_ex, gas_ex,
        "{ctx}: exception tables (instruction indices) differ"
    );
    tally.functions += 1;
    tally.instructions += a.len();
    tally.entries += jit_ex.len();
    let bytes =
        |code: &'_ [u8], x: &Instruction| code[x.ip() as usize..x.ip() as usize + x.len()].to_vec();
    for (x, y) in ours.iter().zip(theirs) {
        if bytes(our_code, x) == bytes(their_code, y) {
            tally.identical += 1;
        } else {
            *tally
                .differing
                .entry(format!("{:?}", x.mnemonic()))
                .or_default() += 1;
        }
        if x.code() == y.code() {
            tally.same_form += 1;
        } else if !(x.is_jcc_short_or_near() || x.is_jmp_short_or_near()) {
            *tally
                .other_form
                .entry(format!("{:?} vs {:?}", x.code(), y.code()))
                .or_default() += 1;
        } else if x.is_jcc_short_or_near() || x.is_jmp_short_or_near() {
            if x.len() > y.len() {
                tally.longer_branches += 1;
            } else {
                tally.shorter_branches += 1;
            }
        }
    }
}

/// The x86 presets (x86_64 and i386); and on i386 each x86_64 preset that
/// validates there too.
fn presets() -> Vec<Strategy> {
    let all = catalog().expect("catalog validates");
    let mut out: Vec<Strategy> = all
        .iter()
        .filter(|s| matches!(s.arch, Arch::X86_64 | Arch::I386))
        .cloned()
        .collect();
    for s in all.iter().filter(|s| s.arch == Arch::X86_64) {
        if let Ok(s386) = strategy::parse(Path::new(&s.source), &s.text, Some(Arch::I386)) {
            out.push(s386);
        }
    }
    out
}

/// `count` random valid strategies for `arch` (fixed seed: reproducible).
fn random_strategies(arch: Arch, count: usize) -> Vec<Strategy> {
    let mut runner = TestRunner::deterministic();
    (0..count)
        .map(|i| {
            let spec = common::spec().new_tree(&mut runner).unwrap().current();
            let text = common::toml_of(&spec, arch)
                .replace("name = \"prop\"", &format!("name = \"rand{i}\""));
            strategy::parse(Path::new("random.toml"), &text, None)
                .unwrap_or_else(|e| panic!("{e}\n{text}"))
        })
        .collect()
}

fn run(strategies: &[Strategy]) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let mut tally = Tally::default();
    for s in strategies {
        for flavor in Flavor::ALL {
            cross_check(s, flavor, dir.path(), &mut tally);
        }
    }
    let mut diff: Vec<_> = tally.differing.iter().collect();
    diff.sort_by(|a, b| b.1.cmp(a.1));
    eprintln!(
        "{} functions, {} instructions: {} byte-identical, {} same opcode form; branches rel32 where GNU as has rel8: {}, \
         the reverse: {}; {} exception-table entries; bytes differ by mnemonic: {diff:?}; \
         other opcode forms: {:?}",
        tally.functions,
        tally.instructions,
        tally.identical,
        tally.same_form,
        tally.longer_branches,
        tally.shorter_branches,
        tally.entries,
        tally.other_form
    );
    tally
}

#[test]
fn presets_encode_like_gnu_as() {
    let strategies = presets();
    assert!(
        strategies.iter().any(|s| s.arch == Arch::I386),
        "no preset validates on i386"
    );
    let t = run(&strategies);
    assert!(t.functions >= 2 * strategies.len());
    assert!(t.entries > 0);
}

#[test]
fn random_x86_64_strategies_encode_like_gnu_as() {
    run(&random_strategies(Arch::X86_64, 40));
}

#[test]
fn random_i386_strategies_encode_like_gnu_as() {
    run(&random_strategies(Arch::I386, 40));
}
