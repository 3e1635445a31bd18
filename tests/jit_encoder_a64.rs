//! The AArch64 dynasm printer against GNU as: for every aarch64 catalog
//! preset and a batch of random valid aarch64 strategies, in both
//! flavours, the emitted `.S` is assembled with `aarch64-linux-gnu-gcc -c`
//! (the linux flavour through verify/shim-arm64) and each function's bytes
//! must equal the JIT's (`jit::assemble`, dynasm `.arch aarch64`,
//! encode-only) word for word: A64 has one 32-bit form per instruction and
//! the same instruction list gives the same layout, so no difference is
//! accepted. The exception tables must name the same (instruction, fixup)
//! offsets; GNU as's are read from the `__ex_table` relocations.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use copygen::backend::aarch64;
use copygen::front::catalog::{catalog, repo_root};
use copygen::front::parse as strategy;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::jit;
use copygen::lower::{lower, Target};
use copygen::output::render;
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget, SymbolKind};
use proptest::strategy::{Strategy as _, ValueTree};
use proptest::test_runner::TestRunner;

use crate::common;

/// One function as GNU as assembled it.
struct GasFunction {
    code: Vec<u8>,
    /// (insn, fixup) offsets from the function's start, in table order.
    extable: Vec<(u32, u32)>,
}

fn gcc_object(s: &Strategy, flavor: Flavor, dir: &Path) -> Vec<u8> {
    let src = dir.join(format!("{}-{flavor}.S", s.name));
    let obj = src.with_extension("o");
    std::fs::write(&src, render::render(s, flavor)).unwrap();
    let mut cmd = Command::new("aarch64-linux-gnu-gcc");
    cmd.args(["-c", "-Wa,--fatal-warnings"]);
    if flavor == Flavor::Linux {
        cmd.args(["-nostdinc", "-D__ASSEMBLY__", "-I"])
            .arg(repo_root().join("verify/shim-arm64"));
    }
    cmd.arg(&src).arg("-o").arg(&obj);
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run aarch64-linux-gnu-gcc ({e}): install `gcc-aarch64-linux-gnu` (verify/install-deps)")
    });
    assert!(
        out.status.success(),
        "aarch64-linux-gnu-gcc -c {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&obj).unwrap()
}

/// Functions by symbol, with their exception-table entries.
fn gas_functions(data: &[u8]) -> HashMap<String, GasFunction> {
    let file = object::File::parse(data).expect("ELF object");
    let text = file.section_by_name(".text").expect(".text");
    let text_data = text.data().unwrap();
    let funcs: Vec<(String, u64, u64)> = file
        .symbols()
        .filter(|s| {
            s.kind() == SymbolKind::Text && s.section_index() == Some(text.index()) && s.size() > 0
        })
        .map(|s| (s.name().unwrap().to_string(), s.address(), s.size()))
        .collect();
    let mut targets = Vec::new();
    if let Some(ex) = file.section_by_name("__ex_table") {
        let mut relocs: Vec<_> = ex.relocations().collect();
        relocs.sort_by_key(|r| r.0);
        for (_, r) in relocs {
            assert_eq!(
                r.flags(),
                RelocationFlags::Elf {
                    r_type: object::elf::R_AARCH64_PREL32
                },
                "__ex_table words are place-relative"
            );
            let RelocationTarget::Symbol(sym) = r.target() else {
                panic!("relocation without a symbol")
            };
            let sym = file.symbol_by_index(sym).unwrap();
            assert_eq!(sym.section_index(), Some(text.index()), "outside .text");
            // RELA: the addend is in the relocation.
            targets.push((sym.address() as i64 + r.addend()) as u64);
        }
    }
    let mut out: HashMap<String, GasFunction> = funcs
        .iter()
        .map(|(name, addr, size)| {
            let code = text_data[*addr as usize..(*addr + *size) as usize].to_vec();
            let extable = Vec::new();
            (name.clone(), GasFunction { code, extable })
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
            "{name}: fixup outside"
        );
        out.get_mut(name)
            .unwrap()
            .extable
            .push(((insn - addr) as u32, (fixup - addr) as u32));
    }
    out
}

/// Compare every routine of `s` in both flavours; returns words compared.
fn cross_check(s: &Strategy, dir: &Path, failures: &mut Vec<String>) -> usize {
    let mut words = 0;
    for flavor in Flavor::ALL {
        let gas = gas_functions(&gcc_object(s, flavor, dir));
        let jitted = jit::assemble(s, flavor).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        let routines = lower(
            s,
            Target {
                arch: s.arch,
                flavor,
            },
        );
        for (e, r) in jitted.iter().zip(&routines) {
            let g = gas
                .get(&e.symbol)
                .unwrap_or_else(|| panic!("{}: GNU as has no {}", s.name, e.symbol));
            // The printed instructions, for naming a differing word.
            let text: Vec<String> = aarch64::select(r)
                .iter()
                .filter(|l| !matches!(l.inst, aarch64::Inst::Label(_) | aarch64::Inst::Comment(_)))
                .map(|l| aarch64::print_inst(&l.inst).trim().to_string())
                .collect();
            if g.code.len() != e.code.len() {
                failures.push(format!(
                    "{} {flavor} {}: GNU as {} bytes, JIT {}",
                    s.name,
                    e.symbol,
                    g.code.len(),
                    e.code.len()
                ));
                continue;
            }
            for (i, (a, b)) in g.code.chunks(4).zip(e.code.chunks(4)).enumerate() {
                words += 1;
                if a != b {
                    let w = |c: &[u8]| u32::from_le_bytes(c.try_into().unwrap());
                    failures.push(format!(
                        "{} {flavor} {} word {i} `{}`: GNU as {:08x}, JIT {:08x}",
                        s.name,
                        e.symbol,
                        text.get(i).map_or("?", String::as_str),
                        w(a),
                        w(b)
                    ));
                }
            }
            if g.extable != e.extable {
                failures.push(format!(
                    "{} {flavor} {}: tables differ: GNU as {:?}, JIT {:?}",
                    s.name, e.symbol, g.extable, e.extable
                ));
            }
        }
    }
    words
}

#[test]
fn aarch64_presets_encode_as_gnu_as_does() {
    let dir = tempfile::tempdir().unwrap();
    let presets: Vec<Strategy> = catalog()
        .unwrap()
        .into_iter()
        .filter(|s| s.arch == Arch::Aarch64)
        .collect();
    assert!(presets.len() >= 2, "the aarch64 presets");
    let mut failures = Vec::new();
    let words: usize = presets
        .iter()
        .map(|s| cross_check(s, dir.path(), &mut failures))
        .sum();
    println!("{words} words compared");
    assert!(words > 500, "only {words} words compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn random_aarch64_strategies_encode_as_gnu_as_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut runner = TestRunner::deterministic();
    let mut failures = Vec::new();
    let mut words = 0;
    for i in 0..40 {
        let spec = common::spec().new_tree(&mut runner).unwrap().current();
        let text = common::toml_of(&spec, Arch::Aarch64)
            .replace("name = \"prop\"", &format!("name = \"rand{i}\""));
        let s = strategy::parse(Path::new("random.toml"), &text, None)
            .unwrap_or_else(|e| panic!("the generator wrote an invalid strategy:\n{e}\n{text}"));
        words += cross_check(&s, dir.path(), &mut failures);
    }
    println!("{words} words compared");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The one hand-encoded word: `prfm` with an unsigned offset, which
/// dynasm 5.1's table lacks.
#[test]
fn prfm_word_matches_the_architecture() {
    use aarch64::{Prf, Reg};
    // prfm pldl1keep, [x1, #256] and prfm pldl1strm, [x16]: as GNU as encodes them.
    assert_eq!(
        copygen::jit::a64::prfm_word(Prf::Pldl1keep, Reg(1), 256),
        0xf980_8020
    );
    assert_eq!(
        copygen::jit::a64::prfm_word(Prf::Pldl1strm, Reg(16), 0),
        0xf980_0201
    );
}
