//! The x86_64 call site of a strategy in a kernel whose `copy_user_generic()`
//! is inline (6.12): what a site's bytes are once the kernel's
//! `apply_alternatives()` has patched them for one CPU's features.
//!
//! The stock 6.12 site is
//! `ALTERNATIVE("rep movsb", "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))`
//! in the `rep movs` convention (rdi = to, rsi = from, rcx = n → rcx = bytes
//! not copied; only rax clobbered besides). A strategy's site is a chain of
//! ALTERNATIVEs over its variants; for one feature set it becomes one
//! [`SiteCode`]. Both the kernel patch (which writes the chain) and the
//! benchmark of what the kernel executes (which runs the resolved bytes)
//! take the site from here, so the two cannot drift apart.

/// A call site as the CPU executes it after alternatives are applied:
/// the site's bytes, padding included (as `optimize_nops()` leaves it), and
/// the rel32 calls in them, whose targets are linked by whoever places the
/// bytes (the kernel's linker, or the JIT).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteCode {
    pub bytes: Vec<u8>,
    pub calls: Vec<SiteCall>,
    /// How the site passes the copy: `rep movs` (rdi, rsi, rcx -> rcx =
    /// bytes left; 6.12's inline site) or C (rdi, rsi, rdx -> rax = bytes
    /// left, rcx and r8-r11 clobbered: 6.1's `alternative_call_2`, and a
    /// patched 6.1 site calling a C-convention routine).
    pub convention: Convention,
}

/// One `call rel32` in a [`SiteCode`]: `at` is the offset of the four
/// displacement bytes in `bytes` (the opcode is at `at - 1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteCall {
    pub at: usize,
    pub target: SiteTarget,
}

/// What a site calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteTarget {
    /// The stock kernel's `rep_movs_alternative` (the non-FSRM path).
    RepMovsAlternative,
    /// A routine of the strategy, by its linux-flavour symbol (the entry
    /// point or one variant's routine), in the `rep movs` convention.
    Routine(String),
}

use crate::arch::cpu::CpuFeatures;
use crate::front::strategy::{
    Arch, Convention, Direction, Flavor, KernelVersion, MethodKind, Strategy,
};
use crate::front::variant::{CpuFeature, Variant};

/// The most ALTERNATIVEs one site nests: 6.12's `ALTERNATIVE_3`
/// (`arch/x86/include/asm/alternative.h`). A longer chain calls the entry.
pub const MAX_ALTERNATIVES: usize = 3;

/// The length of `call rel32`.
pub const CALL_LEN: usize = 5;

/// What one alternative of a site holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SiteInsn {
    /// The inline `rep movsb` (the stock FSRM site).
    RepMovsb,
    /// `call` in the `rep movs` convention.
    Call(SiteTarget),
}

impl SiteInsn {
    /// The instruction's bytes, a call's displacement left 0 (linked by
    /// whoever places the site), encoded by iced-x86.
    pub fn bytes(&self) -> Vec<u8> {
        let insn = match self {
            SiteInsn::RepMovsb => iced_x86::Instruction::with_rep_movsb(64),
            // A target right after the call: displacement 0.
            SiteInsn::Call(_) => {
                iced_x86::Instruction::with_branch(iced_x86::Code::Call_rel32_64, CALL_LEN as u64)
            }
        }
        .expect("a fixed, valid instruction");
        let mut e = iced_x86::Encoder::new(64);
        e.encode(&insn, 0).expect("a fixed, valid instruction");
        e.take_buffer()
    }

    /// The instruction as GNU as (and the kernel's C string) spells it.
    pub fn gas(&self) -> String {
        match self {
            SiteInsn::RepMovsb => "rep movsb".into(),
            SiteInsn::Call(t) => format!("call {}", t.symbol()),
        }
    }
}

impl SiteTarget {
    /// The symbol called.
    pub fn symbol(&self) -> &str {
        match self {
            SiteTarget::RepMovsAlternative => "rep_movs_alternative",
            SiteTarget::Routine(s) => s,
        }
    }
}

/// One `ALTERNATIVE` of a chain: `insn` replaces the site when `feature`
/// is present (`negate`: absent, the kernel's `ALT_NOT`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alt {
    pub feature: CpuFeature,
    pub negate: bool,
    pub insn: SiteInsn,
}

impl Alt {
    /// Whether the kernel patches this alternative in on a CPU with `f`.
    pub fn applies(&self, f: CpuFeatures) -> bool {
        f.has(self.feature) != self.negate
    }

    /// The flags argument as C writes it: `X86_FEATURE_ZEN`,
    /// `ALT_NOT(X86_FEATURE_ERMS)`.
    pub fn flags(&self) -> String {
        let bit = self.feature.kernel_macro();
        if self.negate {
            format!("ALT_NOT({bit})")
        } else {
            bit.to_string()
        }
    }
}

/// A call site as written: the original instruction and the alternatives
/// nested around it, innermost first (a later one overrides an earlier one
/// that also applies, as `apply_alternatives()` patches them in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    pub old: SiteInsn,
    pub alts: Vec<Alt>,
    /// Why the chain is a call of the entry on every CPU, when it is (it
    /// would need more than [`MAX_ALTERNATIVES`]).
    pub fallback: Option<String>,
    /// The convention of every call in the chain (see [`SiteCode`]).
    pub convention: Convention,
}

impl Chain {
    /// The site's length: every alternative is padded to the longest.
    pub fn len(&self) -> usize {
        self.alts
            .iter()
            .map(|a| a.insn.bytes().len())
            .chain([self.old.bytes().len()])
            .max()
            .unwrap_or(0)
    }

    /// Never true (a site has its original instruction); for clippy.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// What the site holds once the kernel has applied the alternatives on
    /// a CPU with `features`.
    pub fn chosen(&self, features: CpuFeatures) -> &SiteInsn {
        self.alts
            .iter()
            .rfind(|a| a.applies(features))
            .map_or(&self.old, |a| &a.insn)
    }

    /// The site's bytes after alternatives for `features`, padded as
    /// `apply_alternatives()` and `optimize_nops()` leave them.
    pub fn resolve(&self, features: CpuFeatures) -> SiteCode {
        let insn = self.chosen(features);
        let mut bytes = insn.bytes();
        let calls = match insn {
            SiteInsn::Call(t) => vec![SiteCall {
                at: 1,
                target: t.clone(),
            }],
            SiteInsn::RepMovsb => Vec::new(),
        };
        let pad = self.len() - bytes.len();
        bytes.extend(optimized_nops(pad));
        SiteCode {
            bytes,
            calls,
            convention: self.convention,
        }
    }

    /// The C text of the chain for an inline-asm string:
    /// `ALTERNATIVE_2("old", "a", X86_FEATURE_A, "b", ALT_NOT(X86_FEATURE_B))`,
    /// written at `tabs` tabs, its continuation lines aligned with the
    /// open parenthesis (tabs, then spaces, as kernel style has it).
    pub fn c_text(&self, tabs: usize) -> String {
        let q = |i: &SiteInsn| format!("\"{}\"", i.gas());
        if self.alts.is_empty() {
            return q(&self.old);
        }
        let name = match self.alts.len() {
            1 => "ALTERNATIVE".to_string(),
            n => format!("ALTERNATIVE_{n}"),
        };
        let column = tabs * 8 + name.len() + 1;
        let indent = format!("{}{}", "\t".repeat(column / 8), " ".repeat(column % 8));
        let mut out = format!("{name}({}", q(&self.old));
        for a in &self.alts {
            out.push_str(&format!(",\n{indent}{}, {}", q(&a.insn), a.flags()));
        }
        out.push(')');
        out
    }
}

/// The NOPs `optimize_nops()` leaves for `n` bytes of 0x90 padding at the
/// end of a site: one NOP of the 64-bit `x86_nops[n]` (asm/nops.h) up to
/// `ASM_NOP_MAX` (11), else a short jmp over int3s (`add_nop()`). A single
/// 0x90 stays as it is.
pub fn optimized_nops(n: usize) -> Vec<u8> {
    const NOPS: [&[u8]; 12] = [
        &[],
        &[0x90],
        &[0x66, 0x90],
        &[0x0f, 0x1f, 0x00],
        &[0x0f, 0x1f, 0x40, 0x00],
        &[0x0f, 0x1f, 0x44, 0x00, 0x00],
        &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
        &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
        &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[
            0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
        ],
    ];
    match NOPS.get(n) {
        Some(nop) => nop.to_vec(),
        None => {
            // add_nop(): jmp8 (len < 128) or jmp32, then int3 to the end.
            let mut v = if n < 128 {
                vec![0xeb, (n - 2) as u8]
            } else {
                let mut v = vec![0xe9];
                v.extend(((n - 5) as u32).to_le_bytes());
                v
            };
            v.resize(n, 0xcc);
            v
        }
    }
}

/// The stock site of `kernel` (6.12:
/// `ALTERNATIVE("rep movsb", "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))`).
/// 6.1's `copy_user_generic()` is an `alternative_call_2` on REP_GOOD and
/// ERMS, out of line in the C convention: its chain is the call of
/// `copy_user_enhanced_fast_string` with ERMS, else
/// `copy_user_generic_string` (REP_GOOD, which copygen's feature table
/// lacks, taken as set, as the kernel sets it on every CPU with ERMS and on
/// most without). The site benchmark takes 6.1's stock site, REP_GOOD
/// included, from `tools::bench::stock`.
pub fn stock_chain(kernel: KernelVersion) -> Chain {
    if kernel.x86_64_calls_rep_movs_alternative() {
        Chain {
            old: SiteInsn::RepMovsb,
            alts: vec![Alt {
                feature: CpuFeature::Fsrm,
                negate: true,
                insn: SiteInsn::Call(SiteTarget::RepMovsAlternative),
            }],
            fallback: None,
            convention: Convention::RepMovs,
        }
    } else {
        Chain {
            old: SiteInsn::Call(SiteTarget::Routine("copy_user_generic_string".into())),
            alts: vec![Alt {
                feature: CpuFeature::Erms,
                negate: false,
                insn: SiteInsn::Call(SiteTarget::Routine("copy_user_enhanced_fast_string".into())),
            }],
            fallback: None,
            convention: Convention::C,
        }
    }
}

/// The stock site's bytes on a CPU with `features`.
pub fn stock_site(kernel: KernelVersion, features: CpuFeatures) -> SiteCode {
    stock_chain(kernel).resolve(features)
}

/// The site of the strategy `t` (wired for `kernel`: one routine for both
/// directions, named as the glue calls it) on a CPU with `features`.
pub fn site(t: &Strategy, kernel: KernelVersion, features: CpuFeatures) -> SiteCode {
    chain(t, kernel).resolve(features)
}

/// Whether the kernel's sites are inline and the strategy's site is the
/// chain over its variants (x86_64, 6.12, per-CPU, `rep_movs` convention).
pub fn is_variant_chain(t: &Strategy, kernel: KernelVersion) -> bool {
    t.arch == Arch::X86_64
        && kernel.x86_64_calls_rep_movs_alternative()
        && t.linux.convention == Convention::RepMovs
        && !t.variants.is_empty()
}

/// Whether a variant is a bare `rep movsb`: one size class for every size,
/// `rep movs` of unit 1 without alignment prologue or guards.
pub fn is_bare_movsb(v: &Variant) -> bool {
    matches!(
        v.classes.as_slice(),
        [c] if c.lo == 0
            && c.hi.is_none()
            && c.guards.is_empty()
            && c.method.kind == MethodKind::RepMovs { unit: 1, align: None }
    )
}

/// The site of one variant: the inline `rep movsb` when it is one, else a
/// call of its routine.
fn variant_insn(t: &Strategy, v: &Variant) -> SiteInsn {
    if is_bare_movsb(v) {
        SiteInsn::RepMovsb
    } else {
        SiteInsn::Call(SiteTarget::Routine(super::variants::variant_symbol(
            t,
            v,
            Flavor::Linux,
            Direction::FromUser,
        )))
    }
}

/// The chain of the wired strategy `t` in `kernel`.
///
/// For x86_64 6.12 per-CPU strategies in the `rep_movs` convention: from
/// the lowest priority (the default variant, the original instruction) to
/// the highest, "if the variant's first bit holds, the variant's site",
/// then for each further bit of its condition, "if that bit fails, call
/// the entry" (whose own ALTERNATIVEs make the exact first-match choice).
/// A CPU therefore runs the site of its variant or calls the entry, both
/// right; a variant whose condition holds is never overridden by a
/// higher-priority one (that one's condition fails, so at most its entry
/// call applies). Otherwise (6.1, the C convention, no variants) the site
/// is a call of the routine on every CPU, or, for a strategy that *is*
/// 6.12's `rep_movs_alternative`, the stock site.
pub fn chain(t: &Strategy, kernel: KernelVersion) -> Chain {
    let entry = super::entry_symbol(t, Flavor::Linux, Direction::FromUser, None);
    let call_entry = || SiteInsn::Call(SiteTarget::Routine(entry.clone()));
    // 6.1's glue calls the entry in the strategy's own convention; a 6.12
    // site is in the `rep movs` convention (a C-convention routine is
    // reached through its `rep movs` entry, `jit::site`).
    let convention = if kernel.x86_64_calls_rep_movs_alternative() {
        Convention::RepMovs
    } else {
        t.linux.convention
    };
    let calls_entry = |fallback: Option<String>| Chain {
        old: call_entry(),
        alts: Vec::new(),
        fallback,
        convention,
    };
    if !is_variant_chain(t, kernel) {
        if t.arch == Arch::X86_64
            && kernel.x86_64_calls_rep_movs_alternative()
            && t.linux.convention == Convention::RepMovs
        {
            return stock_chain(kernel);
        }
        return calls_entry(None);
    }
    let (default, rest) = t.variants.split_last().expect("variants");
    let mut alts = Vec::new();
    for v in rest.iter().rev() {
        let Some(c) = &v.when else { continue };
        let bits: Vec<(CpuFeature, bool)> = c
            .require
            .iter()
            .map(|&f| (f, false))
            .chain(c.exclude.iter().map(|&f| (f, true)))
            .collect();
        let Some((&(first, first_neg), others)) = bits.split_first() else {
            continue;
        };
        alts.push(Alt {
            feature: first,
            negate: first_neg,
            insn: variant_insn(t, v),
        });
        for &(f, neg) in others {
            alts.push(Alt {
                feature: f,
                negate: !neg,
                insn: call_entry(),
            });
        }
    }
    if alts.len() > MAX_ALTERNATIVES {
        return calls_entry(Some(format!(
            "the chain over the variants would nest {} ALTERNATIVEs; 6.12's macros nest at most {MAX_ALTERNATIVES} (ALTERNATIVE_3), so every site calls {entry}",
            alts.len()
        )));
    }
    Chain {
        old: variant_insn(t, default),
        alts,
        fallback: None,
        convention: Convention::RepMovs,
    }
}

/// Every combination of the features `t`'s variants name (each feature
/// outside them absent), in counting order: the CPUs a site differs on.
pub fn feature_sets(t: &Strategy) -> Vec<CpuFeatures> {
    let named: Vec<CpuFeature> = CpuFeature::ALL
        .into_iter()
        .filter(|f| {
            t.variants.iter().any(|v| {
                v.when
                    .as_ref()
                    .is_some_and(|c| c.require.contains(f) || c.exclude.contains(f))
            })
        })
        .collect();
    (0..1u32 << named.len())
        .map(|m| {
            let on: Vec<CpuFeature> = named
                .iter()
                .enumerate()
                .filter(|(i, _)| m & (1 << i) != 0)
                .map(|(_, &f)| f)
                .collect();
            CpuFeatures::from_list(&on)
        })
        .collect()
}

/// The variant the first-match rule picks on `features`.
pub fn variant_for(t: &Strategy, features: CpuFeatures) -> Option<&Variant> {
    t.variants
        .iter()
        .find(|v| v.when.as_ref().is_none_or(|c| c.holds(features)))
}

/// `erms+fsrm`, or `none`: a feature set as the site reports name it.
pub fn features_text(f: CpuFeatures) -> String {
    let names: Vec<String> = f.list().iter().map(|x| x.name()).collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join("+")
    }
}
