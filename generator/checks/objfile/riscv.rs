//! What RISC-V objects need read differently: their place-relative words
//! are pairs of relocations, and their line tables' address advances are
//! left to the linker.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};
use object::elf;
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

use super::Loc;

/// `.long x - .` is R_RISCV_ADD32 x with R_RISCV_SUB32 of the word's own
/// place (linker relaxation may move code): refuse a SUB32 of anything else.
pub(super) fn subtracted_place(name: &str, offset: u64, target: &Loc) -> Result<()> {
    if target.section != name || target.offset != offset {
        bail!("{name}+{offset:#x}: R_RISCV_SUB32 of {target}, not of the word's own place");
    }
    Ok(())
}

/// Every R_RISCV_ADD32 of `words` has its SUB32 (`subtracted`), and no
/// SUB32 is left without its ADD32.
pub(super) fn check_pairs<T>(
    name: &str,
    words: &BTreeMap<u64, (elf::RelocationType, T)>,
    mut subtracted: BTreeSet<u64>,
) -> Result<()> {
    for (offset, (r_type, _)) in words {
        if (*r_type == elf::R_RISCV_ADD32) != subtracted.remove(offset) {
            bail!("{name}+{offset:#x}: R_RISCV_ADD32 and R_RISCV_SUB32 come in pairs");
        }
    }
    if let Some(o) = subtracted.first() {
        bail!("{name}+{o:#x}: R_RISCV_SUB32 without its R_RISCV_ADD32");
    }
    Ok(())
}

/// The data of RISC-V section `name` with its add/subtract relocations
/// applied (R_RISCV_ADD8..64, SUB8..64, SUB6, SET6..32); None if it has
/// none or one lies outside the section.
pub(super) fn resolved(file: &object::File, name: &str) -> Option<Vec<u8>> {
    let sec = file.section_by_name(name)?;
    let mut data = sec.data().ok()?.to_vec();
    let mut any = false;
    for (offset, r) in sec.relocations() {
        let RelocationFlags::Elf { r_type } = r.flags() else {
            continue;
        };
        let RelocationTarget::Symbol(si) = r.target() else {
            continue;
        };
        let Ok(sym) = file.symbol_by_index(si) else {
            continue;
        };
        let value = (sym.address() as i64).wrapping_add(r.addend()) as u64;
        // (bytes, op): op 0 add, 1 subtract, 2 set; SET6/SUB6 are 6-bit.
        let (bytes, op) = match r_type {
            elf::R_RISCV_ADD8 => (1, 0),
            elf::R_RISCV_ADD16 => (2, 0),
            elf::R_RISCV_ADD32 => (4, 0),
            elf::R_RISCV_ADD64 => (8, 0),
            elf::R_RISCV_SUB8 => (1, 1),
            elf::R_RISCV_SUB16 => (2, 1),
            elf::R_RISCV_SUB32 => (4, 1),
            elf::R_RISCV_SUB64 => (8, 1),
            elf::R_RISCV_SET8 => (1, 2),
            elf::R_RISCV_SET16 => (2, 2),
            elf::R_RISCV_SET32 => (4, 2),
            elf::R_RISCV_SUB6 => (0, 1),
            elf::R_RISCV_SET6 => (0, 2),
            _ => continue,
        };
        let at = offset as usize;
        let place = data.get_mut(at..at + bytes.max(1))?;
        let mut old = [0u8; 8];
        old[..place.len()].copy_from_slice(place);
        let old = u64::from_le_bytes(old);
        let mask = if bytes == 0 {
            0x3f
        } else {
            u64::MAX >> (64 - 8 * bytes)
        };
        let new = match op {
            0 => old.wrapping_add(value),
            1 => old.wrapping_sub(value),
            _ => value,
        } & mask;
        let new = if bytes == 0 { (old & !0x3f) | new } else { new };
        place.copy_from_slice(&new.to_le_bytes()[..place.len()]);
        any = true;
    }
    any.then_some(data)
}
