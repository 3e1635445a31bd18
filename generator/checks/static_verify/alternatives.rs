//! x86 `ALTERNATIVE`s: the code the kernel runs is not always the code in
//! the object. At boot `apply_alternatives` copies each `.altinstructions`
//! entry's replacement over its site when the entry's feature condition
//! holds, pads the rest of the site with NOPs and relocates the
//! replacement's branches that leave it. An exception-table entry may be
//! there for the replacement only (6.12's `rep_movs_alternative`: `jmp
//! .Llarge_movsq` in the object, `rep movsb` on an ERMS CPU).
//!
//! So the checker analyses a function once per variant: the original, and
//! with all entries of one feature condition applied (entries of other
//! conditions left as they are; combinations of conditions are not tried).
//! `checks::check_function` merges the verdicts.

use object::elf;

use crate::checks::objfile::{
    self, AltEntry, Loc, ObjectFile, RelocTarget, ALT_FLAG_DIRECT_CALL, ALT_FLAG_NOT,
};
use crate::front::strategy::Arch;
use crate::variants::CpuFeature;

/// Feature bits of the kernel's copy routines that copygen's own variants
/// do not name (those are in `variants::FEATURES`).
const KERNEL_ONLY_FEATURES: &[(u16, &str)] = &[
    (3 * 32 + 21, "X86_FEATURE_ALWAYS"),
    (9 * 32 + 20, "X86_FEATURE_SMAP"),
];

/// The code of one way the kernel may patch the object.
pub(super) struct Variant {
    /// What was applied: None for the original.
    pub(super) label: Option<String>,
    pub(super) obj: ObjectFile,
    /// The sites patched.
    pub(super) sites: Vec<Loc>,
}

/// An alternative that cannot be applied faithfully, at its site: that
/// variant is not analysed.
pub(super) struct Unapplied {
    pub(super) site: Loc,
    pub(super) message: String,
}

/// The feature condition of an entry, as findings name it.
fn condition(e: &AltEntry) -> String {
    let bit = format!("{}*32+{}", e.feature / 32, e.feature % 32);
    let name = CpuFeature::from_kernel_bit(e.feature)
        .map(|f| f.kernel_macro())
        .or_else(|| {
            KERNEL_ONLY_FEATURES
                .iter()
                .find(|(b, _)| *b == e.feature)
                .map(|(_, n)| *n)
        })
        .map(|n| format!("{n} ({bit})"))
        .unwrap_or_else(|| format!("feature {bit}"));
    if e.flags & ALT_FLAG_NOT != 0 {
        format!("no {name}")
    } else {
        name
    }
}

/// The original (first) and one variant per feature condition of `obj`'s
/// `.altinstructions`, with the alternatives that could not be applied.
pub(super) fn variants(obj: &ObjectFile) -> (Vec<Variant>, Vec<Unapplied>) {
    let mut out = vec![Variant {
        label: None,
        obj: obj.clone(),
        sites: Vec::new(),
    }];
    let mut unapplied = Vec::new();
    let mut conditions: Vec<(u16, u16)> = Vec::new();
    for e in &obj.alternatives {
        if !conditions.contains(&(e.feature, e.flags)) {
            conditions.push((e.feature, e.flags));
        }
    }
    for (feature, flags) in conditions {
        let entries: Vec<&AltEntry> = obj
            .alternatives
            .iter()
            .filter(|e| (e.feature, e.flags) == (feature, flags))
            .collect();
        let what = condition(entries[0]);
        let mut patched = obj.clone();
        let failed: Vec<(&AltEntry, String)> = entries
            .iter()
            .filter_map(|e| apply(&mut patched, obj, e).err().map(|why| (*e, why)))
            .collect();
        if failed.is_empty() {
            out.push(Variant {
                label: Some(format!("with the alternatives for {what} applied")),
                obj: patched,
                sites: entries.iter().map(|e| e.site.clone()).collect(),
            });
            continue;
        }
        // A variant with some of its sites left unpatched is not code the
        // kernel runs: none of its sites is analysed patched.
        for e in entries {
            let why = match failed.iter().find(|(f, _)| f.at == e.at) {
                Some((_, why)) => why.clone(),
                None => format!(
                    "the one at {} (.altinstructions+{:#x}) cannot be",
                    failed[0].0.site, failed[0].0.at
                ),
            };
            unapplied.push(Unapplied {
                site: e.site.clone(),
                message: format!(
                    "the alternative for {what} (.altinstructions+{:#x}) cannot be applied: {why}; the code with it is not analysed",
                    e.at
                ),
            });
        }
    }
    (out, unapplied)
}

/// Bytes the kernel patches at `e`'s site: nested alternatives (consecutive
/// entries for one site) all patch the longest of their lengths.
fn site_len(obj: &ObjectFile, e: &AltEntry) -> u64 {
    obj.alternatives
        .iter()
        .filter(|o| o.site == e.site)
        .map(|o| o.site_len as u64)
        .max()
        .unwrap_or(e.site_len as u64)
}

/// Copy `e`'s replacement over its site in `patched` (the object `obj` as
/// patched so far), as `apply_alternatives` does.
fn apply(patched: &mut ObjectFile, obj: &ObjectFile, e: &AltEntry) -> Result<(), String> {
    if e.flags & ALT_FLAG_DIRECT_CALL != 0 {
        return Err(
            "ALT_FLAG_DIRECT_CALL: the kernel builds the call from the original's indirect call"
                .into(),
        );
    }
    let len = site_len(obj, e);
    let (start, rlen) = (e.replacement.offset, e.replacement_len as u64);
    if rlen > len {
        return Err(format!(
            "its replacement ({rlen} bytes) is longer than the site ({len} bytes)"
        ));
    }
    let repl = obj
        .code
        .get(&e.replacement.section)
        .and_then(|c| c.get(start as usize..(start + rlen) as usize))
        .ok_or_else(|| {
            format!(
                "its replacement at {} is not in a code section",
                e.replacement
            )
        })?;
    let mut bytes = repl.to_vec();
    bytes.resize(len as usize, 0x90);
    let at = |k: u64| Loc {
        section: e.site.section.clone(),
        offset: e.site.offset + k,
    };
    // The site's own relocations go with the original.
    patched.code_relocs.retain(|l, _| {
        !(l.section == e.site.section && (e.site.offset..e.site.offset + len).contains(&l.offset))
    });
    // The replacement's relocations, applied where it now sits.
    for (&o, r) in obj.replacement_relocs.range(start..start + rlen) {
        let k = o - start;
        let relative = match obj.arch {
            Arch::I386 => [elf::R_386_PC32, elf::R_386_PLT32].contains(&r.r_type),
            _ => [elf::R_X86_64_PC32, elf::R_X86_64_PLT32].contains(&r.r_type),
        };
        let absolute = match obj.arch {
            Arch::I386 => r.r_type == elf::R_386_32,
            _ => [elf::R_X86_64_32, elf::R_X86_64_32S, elf::R_X86_64_64].contains(&r.r_type),
        };
        match &r.target {
            // A place in the site's section: the value the linker would
            // write at the new place (S + A - P).
            RelocTarget::Symbol(s) if relative && s.section == e.site.section => {
                let value = s.offset as i64 + r.addend - at(k).offset as i64;
                let field = bytes.get_mut(k as usize..k as usize + 4).ok_or_else(|| {
                    format!(
                        "a relocation at .altinstr_replacement+{o:#x} ends past the replacement"
                    )
                })?;
                field.copy_from_slice(&(value as i32).to_le_bytes());
            }
            RelocTarget::Symbol(s) if s.section == e.replacement.section => {
                return Err(format!(
                    "it refers to {}+{:#x} in its own section, which the kernel frees after boot",
                    s.section,
                    s.offset as i64 + r.addend
                ));
            }
            // Elsewhere (another section, an undefined symbol), or a value
            // that does not depend on the place: the same relocation, moved.
            _ if relative || absolute => {
                patched.code_relocs.insert(at(k), r.target.clone());
            }
            _ => {
                return Err(format!(
                "relocation type {} at .altinstr_replacement+{o:#x} is not one the checker applies",
                r.r_type.0
            ))
            }
        }
    }
    // A branch that gas resolved inside `.altinstr_replacement` (no
    // relocation) must stay inside the replacement: the kernel would
    // relocate it into freed memory.
    for i in objfile::decode_x86(obj.arch, repl, start) {
        if !i.is_jmp_short_or_near() && !i.is_jcc_short_or_near() && !i.is_call_near() {
            continue;
        }
        let target = i.near_branch_target();
        let end = i.next_ip();
        let reloc = i.len() >= 5 && obj.replacement_relocs.contains_key(&(end - 4));
        if !reloc && !(start..=start + rlen).contains(&target) {
            return Err(format!(
                "`{}` leaves the replacement but stays in .altinstr_replacement",
                objfile::format_x86(&i)
            ));
        }
    }
    let code = patched
        .code
        .get_mut(&e.site.section)
        .and_then(|c| c.get_mut(e.site.offset as usize..(e.site.offset + len) as usize))
        .ok_or_else(|| format!("its site {} is not in a code section", e.site))?;
    code.copy_from_slice(&bytes);
    Ok(())
}
