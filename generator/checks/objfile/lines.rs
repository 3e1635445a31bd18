//! The DWARF line table of an object: code address to source line, per
//! code section.

use std::collections::BTreeMap;

use anyhow::Result;
use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};

use super::riscv;

/// Code-section address → line from DWARF `.debug_line` (objects built
/// with `-g`), per section. In a relocatable object each sequence starts
/// with a `DW_LNE_set_address` relocated against its section (REL: the
/// addend sits in the bytes, so the raw address already holds it; RELA: 0
/// there, the addend in the relocation). gas writes one sequence per code
/// section, in the order of those relocations, which names the section.
pub(super) fn read_lines(file: &object::File) -> Result<BTreeMap<String, Vec<(u64, u32)>>> {
    let endian = gimli::RunTimeEndian::Little;
    // RISC-V leaves the line program's address advances to the linker
    // (R_RISCV_ADD16/SUB16 pairs, for relaxation): resolve them here.
    let riscv_lines = (file.architecture() == object::Architecture::Riscv64)
        .then(|| riscv::resolved(file, ".debug_line"))
        .flatten();
    let load = |id: gimli::SectionId| -> Result<gimli::EndianSlice<'_, gimli::RunTimeEndian>, gimli::Error> {
        if id == gimli::SectionId::DebugLine {
            if let Some(d) = &riscv_lines {
                return Ok(gimli::EndianSlice::new(d, endian));
            }
        }
        let data = file.section_by_name(id.name()).and_then(|s| s.data().ok()).unwrap_or(&[]);
        Ok(gimli::EndianSlice::new(data, endian))
    };
    // (section, base) of each sequence, in order.
    let mut bases: Vec<(String, u64)> = Vec::new();
    if let Some(sec) = file.section_by_name(".debug_line") {
        let mut rel: Vec<_> = sec.relocations().collect();
        rel.sort_by_key(|(o, _)| *o);
        for (_, r) in rel {
            let RelocationTarget::Symbol(si) = r.target() else {
                continue;
            };
            let sym = file.symbol_by_index(si)?;
            let Some(sx) = sym.section_index() else {
                continue;
            };
            let target = file.section_by_index(sx)?;
            if target.kind() != object::SectionKind::Text {
                continue;
            }
            let addend = if r.has_implicit_addend() {
                0
            } else {
                r.addend()
            };
            bases.push((
                target.name()?.to_string(),
                (sym.address() as i64 + addend) as u64,
            ));
        }
    }
    let dwarf = gimli::Dwarf::load(load)?;
    let mut out: BTreeMap<String, Vec<(u64, u32)>> = BTreeMap::new();
    let mut units = dwarf.units();
    let mut sequence = 0;
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        let Some(program) = unit.line_program.clone() else {
            continue;
        };
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                sequence += 1;
                continue;
            }
            // Without relocations (a linked file) everything is `.text`.
            let (section, base) = bases
                .get(sequence)
                .cloned()
                .unwrap_or_else(|| (".text".to_string(), 0));
            if let Some(line) = row.line() {
                out.entry(section)
                    .or_default()
                    .push((base + row.address(), line.get() as u32));
            }
        }
    }
    for v in out.values_mut() {
        v.sort();
        v.dedup_by_key(|p| p.0);
    }
    Ok(out)
}
