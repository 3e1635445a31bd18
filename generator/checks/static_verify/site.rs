//! The inline call site of a per-CPU strategy (6.12 x86_64), checked per
//! CPU: for every feature set over the bits the variants name, the bytes
//! the site holds after alternatives (`lower/call_site.rs`) are decoded and
//! must be the stock site's length, one `rep movsb` or one `call` of a
//! routine the static check passed in the `rep_movs` convention (the CPU's
//! variant's routine or the entry point), then only padding NOPs; a
//! `rep movsb` sits at the site's start, where its exception-table entry
//! (`_ASM_EXTABLE_UA(1b, 2b)`) points, and is the stock site's bytes.

use crate::arch::cpu::CpuFeatures;
use crate::front::strategy::{Direction, Flavor, KernelVersion, Strategy};
use crate::lower::call_site::{self, Chain, SiteInsn};

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

/// Check `chain` (of the wired `t`) on every CPU; `checked` are the
/// routines the static check passed. `Err`: one line per fault found.
pub fn check_sites(
    t: &Strategy,
    kernel: KernelVersion,
    chain: &Chain,
    checked: &[String],
) -> Result<Vec<SiteRow>, Vec<String>> {
    let stock = call_site::stock_chain(kernel);
    let entry = crate::lower::entry_symbol(t, Flavor::Linux, Direction::FromUser, None);
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for f in call_site::feature_sets(t) {
        let name = call_site::features_text(f);
        let Some(v) = call_site::variant_for(t, f) else {
            bad.push(format!("{name}: no variant holds"));
            continue;
        };
        let code = chain.resolve(f);
        let stock_code = stock.resolve(f);
        let mut fail = |m: String| bad.push(format!("{name}: {m}"));
        if code.bytes.len() != stock_code.bytes.len() {
            fail(format!(
                "{} bytes, the stock site {}",
                code.bytes.len(),
                stock_code.bytes.len()
            ));
        }
        let insns = crate::checks::objfile::decode_x86(t.arch, &code.bytes, 0);
        let total: usize = insns.iter().map(|i| i.len()).sum();
        if total != code.bytes.len() || insns.iter().any(|i| i.is_invalid()) {
            fail("bytes that do not decode".into());
        }
        let texts: Vec<String> = insns
            .iter()
            .map(crate::checks::objfile::format_x86)
            .collect();
        match insns.first().map(|i| i.mnemonic()) {
            Some(iced_x86::Mnemonic::Movsb) if insns[0].has_rep_prefix() => {
                if !call_site::is_bare_movsb(v) {
                    fail(format!(
                        "rep movsb inline, but variant `{}` is not one",
                        v.name
                    ));
                }
                if stock.chosen(f) == &SiteInsn::RepMovsb && code != stock_code {
                    fail("rep movsb, but not the stock site's bytes".into());
                }
            }
            Some(iced_x86::Mnemonic::Call) => {
                let target = code.calls.first().map(|c| c.target.symbol().to_string());
                let own = crate::lower::variants::variant_symbol(
                    t,
                    v,
                    Flavor::Linux,
                    Direction::FromUser,
                );
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
                && insn.near_branch_target() == code.bytes.len() as u64);
            if !pad {
                fail(format!("{} after the site's instruction", texts[i]));
            }
        }
        rows.push(SiteRow {
            features: f,
            variant: v.name.clone(),
            insns: texts,
            stock: code == stock_code,
        });
    }
    if bad.is_empty() {
        Ok(rows)
    } else {
        Err(bad)
    }
}
