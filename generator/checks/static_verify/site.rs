//! The inline call site of a per-CPU strategy (6.12 x86_64), checked per
//! CPU in the object the kernel builds for it: the chain's C text (what
//! the kernel patch writes into `copy_user_generic()`) is compiled by gcc
//! with the kernel's `ALTERNATIVE` macros (`kernel::alternative`), and for
//! every feature set over the bits the variants name, the object's
//! `.altinstructions` are applied as `apply_alternatives()` applies them
//! ([`super::apply_alternatives`]). The site's bytes then must be the stock
//! site's length (`kernel::site`), one `rep movsb` or one `call` of a
//! routine the static check passed in the `rep_movs` convention (the CPU's
//! variant's routine or the entry point), then only padding NOPs; a `rep
//! movsb` sits at the site's start, where its exception-table entry
//! (`_ASM_EXTABLE_UA(1b, 2b)`) points, and is the stock site's bytes.

use crate::arch::cpu::CpuFeatures;
use crate::checks::objfile::{self, Assemble, Loc, ObjectFile, RelocTarget};
use crate::front::strategy::{Arch, Strategy};
use crate::front::variant::CpuFeature;
use crate::kernel::alternative::{site_c_source, SITE_FUNCTION};
use crate::kernel::nops::kernel_nops;
use crate::kernel::site::{stock_chain, Chain};
use crate::kernel::variant_chain::{
    entry_routine, feature_sets, features_text, is_bare_movsb, variant_for, variant_routine,
};
use crate::kernel::version::KernelVersion;

/// What one CPU's site became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteRow {
    pub features: CpuFeatures,
    /// The variant the entry point's first match picks.
    pub variant: String,
    /// The site's instructions, as GNU as prints them.
    pub insns: Vec<String>,
    /// Whether the bytes are the stock site's on that CPU.
    pub stock: bool,
}

/// The site in the object gcc makes of `chain`'s C text: the object, where
/// the site starts in `.text`, and its length.
fn assemble_site(chain: &Chain) -> Result<(ObjectFile, u64, usize), String> {
    let how = Assemble {
        arch: Arch::X86_64,
        kernel_shims: false,
        debug: false,
        keep_locals: false,
        flags: [
            "-O2",
            "-fcf-protection=none",
            "-fno-asynchronous-unwind-tables",
        ]
        .map(String::from)
        .to_vec(),
    };
    let obj = objfile::assemble_text(&site_c_source(chain), "site.c", &how)
        .map_err(|e| format!("the site's C text does not compile: {e:#}"))?;
    let f = obj
        .function(SITE_FUNCTION)
        .ok_or("the site's object has no site function")?;
    let (start, end) = (f.start, f.end);
    let len = match obj.alternatives.first() {
        Some(e) => {
            if e.site.offset != start {
                return Err(format!(
                    "the alternatives patch {}, not the site at .text+{start:#x}",
                    e.site
                ));
            }
            obj.alternatives
                .iter()
                .map(|a| a.site_len as usize)
                .max()
                .unwrap_or(0)
        }
        // No alternative: the site is the function before its `ret`.
        None => (end - start).saturating_sub(1) as usize,
    };
    Ok((obj, start, len))
}

/// The symbol a relocation at `at` in `obj`'s `.text` names.
fn call_target(obj: &ObjectFile, at: u64) -> Option<String> {
    let place = Loc {
        section: ".text".into(),
        offset: at,
    };
    match obj.code_relocs.get(&place)? {
        RelocTarget::Undefined(s) => Some(s.clone()),
        RelocTarget::Symbol(l) => obj
            .labels
            .iter()
            .find(|(_, v)| *v == l)
            .map(|(k, _)| k.clone()),
    }
}

/// Check `chain` (of the wired `t`) on every CPU, in the object compiled
/// from its C text; `checked` are the routines the static check passed.
/// `Err`: one line per fault found.
pub fn check_sites(
    t: &Strategy,
    kernel: KernelVersion,
    chain: &Chain,
    checked: &[String],
) -> Result<Vec<SiteRow>, Vec<String>> {
    let (obj, start, len) = assemble_site(chain).map_err(|e| vec![e])?;
    let stock = stock_chain(kernel);
    let entry = entry_routine(t);
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for f in feature_sets(t) {
        let name = features_text(f);
        let Some(v) = variant_for(t, f) else {
            bad.push(format!("{name}: no variant holds"));
            continue;
        };
        let mut fail = |m: String| bad.push(format!("{name}: {m}"));
        let present = |bit: u16| CpuFeature::from_kernel_bit(bit).is_some_and(|x| f.has(x));
        let patched = match super::apply_alternatives(&obj, &present, &|n| kernel_nops(kernel, n)) {
            Ok(p) => p,
            Err(why) => {
                fail(why);
                continue;
            }
        };
        let bytes = &patched.code[".text"][start as usize..start as usize + len];
        let stock_code = stock.resolve(f);
        if bytes.len() != stock_code.bytes.len() {
            fail(format!(
                "{} bytes, the stock site {}",
                bytes.len(),
                stock_code.bytes.len()
            ));
        }
        let insns = objfile::decode_x86(t.arch, bytes, 0);
        let total: usize = insns.iter().map(|i| i.len()).sum();
        if total != bytes.len() || insns.iter().any(|i| i.is_invalid()) {
            fail("bytes that do not decode".into());
        }
        let texts: Vec<String> = insns.iter().map(objfile::format_x86).collect();
        let target = call_target(&patched, start + 1);
        let stock_target = stock_code
            .calls
            .first()
            .map(|c| c.target.symbol().to_string());
        let is_stock = bytes == stock_code.bytes.as_slice() && target == stock_target;
        match insns.first().map(|i| i.mnemonic()) {
            Some(iced_x86::Mnemonic::Movsb) if insns[0].has_rep_prefix() => {
                if !is_bare_movsb(v) {
                    fail(format!(
                        "rep movsb inline, but variant `{}` is not one",
                        v.name
                    ));
                }
                if stock_code.calls.is_empty() && !is_stock {
                    fail("rep movsb, but not the stock site's bytes".into());
                }
            }
            Some(iced_x86::Mnemonic::Call) => {
                let own = variant_routine(t, v);
                match target {
                    Some(s) if !checked.contains(&s) => {
                        fail(format!("calls {s}, which the static check did not pass"))
                    }
                    Some(s) if s != own && s != entry => fail(format!(
                        "calls {s}, neither variant `{}`'s routine nor the entry point",
                        v.name
                    )),
                    Some(_) => {}
                    None => fail("a call without a target".into()),
                }
            }
            _ => fail(format!("starts with {:?}", texts.first())),
        }
        // After the one instruction: padding only (NOPs, or add_nop()'s
        // jmp over int3).
        for (i, insn) in insns.iter().enumerate().skip(1) {
            let pad = matches!(
                insn.mnemonic(),
                iced_x86::Mnemonic::Nop | iced_x86::Mnemonic::Int3
            ) || (i == 1
                && insn.mnemonic() == iced_x86::Mnemonic::Jmp
                && insn.near_branch_target() == bytes.len() as u64);
            if !pad {
                fail(format!("{} after the site's instruction", texts[i]));
            }
        }
        rows.push(SiteRow {
            features: f,
            variant: v.name.clone(),
            insns: texts,
            stock: is_stock,
        });
    }
    if bad.is_empty() {
        Ok(rows)
    } else {
        Err(bad)
    }
}
