//! x86 `ALTERNATIVE`s: the code the kernel runs is not always the code in
//! the object. At boot `apply_alternatives` copies each `.altinstructions`
//! entry's replacement over its site when the entry's feature condition
//! holds, pads the rest of the site with NOPs and relocates the
//! replacement's branches that leave it. An exception-table entry may be
//! there for the replacement only (6.12's `rep_movs_alternative`: `jmp
//! .Llarge_movsq` in the object, `rep movsb` on an ERMS CPU), and code may
//! be reached only when several sites are patched (copygen's per-CPU entry
//! points: `zen && erms` is two sites).
//!
//! So the checker analyses a function as it stands and once per set of
//! the feature bits its sites test (each present or absent, entries
//! applied in table order as the kernel does, so a later entry of a nested
//! `ALTERNATIVE_2` wins), up to [`MAX_COMBINED`] bits; beyond, one bit at a
//! time. `checks::check_function` merges the verdicts.

use object::elf;

use crate::checks::objfile::{
    self, AltEntry, Loc, ObjectFile, RelocTarget, ALT_FLAG_DIRECT_CALL, ALT_FLAG_NOT,
};
use crate::front::strategy::Arch;
use crate::front::variant::CpuFeature;

/// Feature bits of the kernel's copy routines that copygen's own variants
/// do not name (those are in `arch::cpu::FEATURES`).
const KERNEL_ONLY_FEATURES: &[(u16, &str)] = &[
    (3 * 32 + 21, "X86_FEATURE_ALWAYS"),
    (9 * 32 + 20, "X86_FEATURE_SMAP"),
];

/// Feature bits of one function combined in every way; with more, each
/// is tried alone (2^6 analyses of a small dispatcher are cheap).
const MAX_COMBINED: usize = 6;

/// The code of one way the kernel may patch the object.
pub(super) struct PatchedCopy {
    /// What was applied, as findings name it.
    pub(super) label: String,
    pub(super) obj: ObjectFile,
}

/// What a site's finding says about the variants not analysed.
pub(super) struct SiteNote {
    pub(super) site: Loc,
    /// Code the kernel may run is not analysed (else it is only a note).
    pub(super) gap: bool,
    pub(super) message: String,
}

/// The condition of an entry: its feature bit, and whether it applies when
/// the bit is absent (`ALT_NOT`).
fn condition_of(e: &AltEntry) -> (u16, bool) {
    (e.feature, e.flags & ALT_FLAG_NOT != 0)
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

/// The patched variants of the code whose sites `here` accepts (the
/// original is not among them), with notes on those that are not analysed.
pub(super) fn variants(
    obj: &ObjectFile,
    here: impl Fn(&Loc) -> bool,
) -> (Vec<PatchedCopy>, Vec<SiteNote>) {
    let entries: Vec<&AltEntry> = obj.alternatives.iter().filter(|e| here(&e.site)).collect();
    let mut notes = Vec::new();
    if entries.is_empty() {
        return (Vec::new(), notes);
    }
    let patches: Vec<Result<Patch, String>> = entries.iter().map(|e| prepare(obj, e)).collect();
    // A variant with some of its sites left unpatched is not code the
    // kernel runs: no variant with a condition that cannot be applied is
    // analysed, and each of that condition's sites says so.
    let mut bad = Vec::new();
    for (e, p) in entries.iter().zip(&patches) {
        if let Err(why) = p {
            bad.push((condition_of(e), *e, why.clone()));
        }
    }
    for e in &entries {
        let Some((_, first, _)) = bad.iter().find(|(c, ..)| *c == condition_of(e)) else {
            continue;
        };
        let why = match bad.iter().find(|(_, b, _)| b.at == e.at) {
            Some((.., why)) => why.clone(),
            None => format!(
                "the one at {} (.altinstructions+{:#x}) cannot be",
                first.site, first.at
            ),
        };
        notes.push(SiteNote {
            site: e.site.clone(),
            gap: true,
            message: format!(
                "the alternative for {} (.altinstructions+{:#x}) cannot be applied: {why}; the code with it is not analysed",
                condition(e),
                e.at
            ),
        });
    }
    let mut features: Vec<u16> = entries.iter().map(|e| e.feature).collect();
    features.sort();
    features.dedup();
    let present_sets: Vec<Vec<u16>> = if features.len() <= MAX_COMBINED {
        (1..1u32 << features.len())
            .map(|m| {
                (0..features.len())
                    .filter(|&b| m & 1 << b != 0)
                    .map(|b| features[b])
                    .collect()
            })
            .chain([Vec::new()])
            .collect()
    } else {
        notes.push(SiteNote {
            site: entries[0].site.clone(),
            gap: false,
            message: format!(
                "{} feature bits: their alternatives are checked one bit at a time, not in combination",
                features.len()
            ),
        });
        features
            .iter()
            .map(|&f| vec![f])
            .chain([Vec::new()])
            .collect()
    };
    let mut out = Vec::new();
    let mut seen: Vec<Vec<usize>> = Vec::new();
    for present in present_sets {
        let applied: Vec<usize> = (0..entries.len())
            .filter(|&k| {
                let (bit, not) = condition_of(entries[k]);
                present.contains(&bit) != not
            })
            .collect();
        if applied.is_empty()
            || seen.contains(&applied)
            || applied
                .iter()
                .any(|&k| bad.iter().any(|(c, ..)| *c == condition_of(entries[k])))
        {
            continue;
        }
        let mut patched = obj.clone();
        let mut what: Vec<String> = Vec::new();
        for &k in &applied {
            if let Ok(p) = &patches[k] {
                patch(&mut patched, entries[k], p);
            }
            let c = condition(entries[k]);
            if !what.contains(&c) {
                what.push(c);
            }
        }
        seen.push(applied);
        out.push(PatchedCopy {
            label: format!("with the alternatives for {} applied", what.join(", ")),
            obj: patched,
        });
    }
    (out, notes)
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

/// What patching one site writes: the site's bytes and the relocations
/// the replacement brings (by place).
struct Patch {
    bytes: Vec<u8>,
    relocs: Vec<(Loc, RelocTarget)>,
}

/// `e`'s replacement as it lands on its site, as `apply_alternatives`
/// makes it; an error says why it cannot be made faithfully.
fn prepare(obj: &ObjectFile, e: &AltEntry) -> Result<Patch, String> {
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
    if obj
        .code
        .get(&e.site.section)
        .is_none_or(|c| (c.len() as u64) < e.site.offset + len)
    {
        return Err(format!("its site {} is not in a code section", e.site));
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
    let mut relocs = Vec::new();
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
            _ if relative || absolute => relocs.push((at(k), r.target.clone())),
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
        let reloc = i.len() >= 5 && obj.replacement_relocs.contains_key(&(i.next_ip() - 4));
        if !reloc && !(start..=start + rlen).contains(&target) {
            return Err(format!(
                "`{}` leaves the replacement but stays in .altinstr_replacement",
                objfile::format_x86(&i)
            ));
        }
    }
    Ok(Patch { bytes, relocs })
}

/// Write `p` over `e`'s site in `patched`.
fn patch(patched: &mut ObjectFile, e: &AltEntry, p: &Patch) {
    let (start, end) = (e.site.offset, e.site.offset + p.bytes.len() as u64);
    // The site's own relocations go with what it held.
    patched
        .code_relocs
        .retain(|l, _| !(l.section == e.site.section && (start..end).contains(&l.offset)));
    patched.code_relocs.extend(p.relocs.iter().cloned());
    if let Some(code) = patched
        .code
        .get_mut(&e.site.section)
        .and_then(|c| c.get_mut(start as usize..end as usize))
    {
        code.copy_from_slice(&p.bytes);
    }
}

/// The object as `apply_alternatives()` leaves it on one CPU: every entry
/// whose condition holds (`present` says which feature bits the CPU has)
/// copied over its site in table order, the rest of the site padded with
/// NOPs, and every site's runs of one-byte NOPs merged as
/// `optimize_nops()` merges them (patched or not: both 6.1 and 6.12 do),
/// into what `nops(len)` gives (the kernels differ: 6.1's longest NOP is
/// 8 bytes, 6.12's 11).
/// An entry that cannot be applied faithfully (see [`prepare`]) is an
/// error when its condition holds.
pub fn apply_for(
    obj: &ObjectFile,
    present: &dyn Fn(u16) -> bool,
    nops: &dyn Fn(usize) -> Vec<u8>,
) -> Result<ObjectFile, String> {
    let mut patched = obj.clone();
    for e in &obj.alternatives {
        let (bit, not) = condition_of(e);
        if present(bit) != not {
            let p = prepare(obj, e).map_err(|why| {
                format!(
                    "the alternative at {} for {} (.altinstructions+{:#x}) cannot be applied: {why}",
                    e.site,
                    condition(e),
                    e.at
                )
            })?;
            patch(&mut patched, e, &p);
        }
    }
    // optimize_nops() runs on each site once it is final.
    let mut sites: Vec<(String, u64, u64)> = obj
        .alternatives
        .iter()
        .map(|e| (e.site.section.clone(), e.site.offset, site_len(obj, e)))
        .collect();
    sites.sort();
    sites.dedup();
    for (section, start, len) in sites {
        if let Some(code) = patched
            .code
            .get_mut(&section)
            .and_then(|c| c.get_mut(start as usize..(start + len) as usize))
        {
            optimize_nops(code, obj.arch, nops);
        }
    }
    Ok(patched)
}

/// `optimize_nops()`: each run of two or more one-byte NOPs (0x90) that
/// starts at an instruction boundary becomes `nops(run)`.
fn optimize_nops(site: &mut [u8], arch: Arch, nops: &dyn Fn(usize) -> Vec<u8>) {
    let mut i = 0;
    while i < site.len() {
        if site[i] == 0x90 {
            let run = site[i..].iter().take_while(|&&b| b == 0x90).count();
            if run > 1 {
                site[i..i + run].copy_from_slice(&nops(run));
            }
            i += run;
            continue;
        }
        let insn = objfile::decode_x86(arch, &site[i..], 0);
        match insn.first() {
            Some(d) if !d.is_invalid() && d.len() > 0 => i += d.len(),
            _ => return,
        }
    }
}
