//! The x86_64 call site of `copy_user_generic()` per kernel and CPU
//! feature set: what a site's bytes are once the kernel's
//! `apply_alternatives()` has patched them for one CPU's features.
//!
//! The stock 6.12 site is
//! `ALTERNATIVE("rep movsb", "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))`
//! in the `rep movs` convention (rdi = to, rsi = from, rcx = n → rcx = bytes
//! not copied; only rax clobbered besides); 6.1's is an out-of-line
//! `alternative_call_2` in the C convention. A site is a [`Chain`] of
//! ALTERNATIVEs; for one feature set it becomes one [`SiteCode`]. The chain
//! a per-CPU strategy makes of the site is [`super::variant_chain`]'s. The
//! kernel patch (which writes the chain), the benchmark of what the kernel
//! executes (which runs the resolved bytes) and the static check of the
//! site (which assembles the chain) all take the site from here, so they
//! cannot drift apart.

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

use super::nops::optimized_nops;
use super::symbols::{
    COPY_USER_ENHANCED_FAST_STRING, COPY_USER_GENERIC_STRING, COPY_USER_GENERIC_UNROLLED,
    REP_MOVS_ALTERNATIVE,
};
use super::version::KernelVersion;
use crate::arch::cpu::CpuFeatures;
use crate::front::strategy::Convention;
use crate::front::variant::CpuFeature;

/// The most ALTERNATIVEs one site nests. 6.12's macros nest to any depth
/// (`arch/x86/include/asm/alternative.h` defines `ALTERNATIVE_2` and
/// `ALTERNATIVE_3` as `ALTERNATIVE`s around `ALTERNATIVE`s, and copygen
/// wraps further ones the same way), but each costs every inline site 14
/// bytes of `.altinstructions` and its replacement: past this many, the
/// site calls the entry, whose dispatch is patched once.
pub const MAX_ALTERNATIVES: usize = 8;

/// The most alternatives one of 6.12's named macros takes (`ALTERNATIVE_3`).
const MAX_NAMED_MACRO: usize = 3;

/// The widest line checkpatch accepts, tabs at 8 columns.
const MAX_C_COLUMNS: usize = 100;

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
            SiteTarget::RepMovsAlternative => REP_MOVS_ALTERNATIVE,
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
    ///
    /// Past three, the chain is named macros around named macros, as the
    /// kernel builds `ALTERNATIVE_3` itself out of `ALTERNATIVE`s: the
    /// first three in `ALTERNATIVE_3`, each further one to three around
    /// it (`ALTERNATIVE(ALTERNATIVE_3(...), "d", X86_FEATURE_D)`,
    /// `ALTERNATIVE_3(ALTERNATIVE_3(...), ...)` for six), whose entries
    /// come out innermost first.
    pub fn c_text(&self, tabs: usize) -> String {
        self.c_text_at(tabs * 8, self.alts.len())
    }

    /// [`Self::c_text`] written from `column` (its first line follows
    /// other text there, as `asm volatile(` in the kernel's style).
    pub fn c_text_from(&self, column: usize) -> String {
        self.c_text_at(column, self.alts.len())
    }

    /// The C text of the first `n` alternatives, its first character at
    /// `column`.
    fn c_text_at(&self, column: usize, n: usize) -> String {
        let q = |i: &SiteInsn| format!("\"{}\"", i.gas());
        let indent =
            |column: usize| format!("{}{}", "\t".repeat(column / 8), " ".repeat(column % 8));
        // An alternative from `column`: its feature on a line of its own
        // where the pair would run past checkpatch's 100 columns (with the
        // `,` or `),` after it).
        let alt_at = |a: &Alt, column: usize| {
            let pair = format!("{}, {}", q(&a.insn), a.flags());
            if column + pair.len() + 2 <= MAX_C_COLUMNS {
                pair
            } else {
                format!("{},\n{}{}", q(&a.insn), indent(column), a.flags())
            }
        };
        if n == 0 {
            return q(&self.old);
        }
        // Past `ALTERNATIVE_3`, the first alternatives' text wrapped in a
        // named macro of the last one to three (a depth that fits
        // checkpatch's columns where a wrap per alternative would not).
        let (inner_n, name) = if n > MAX_NAMED_MACRO {
            let outer = n - MAX_NAMED_MACRO * ((n - 1) / MAX_NAMED_MACRO);
            (n - outer, macro_name(outer))
        } else {
            (0, macro_name(n))
        };
        let inner = column + name.len() + 1;
        let old = if inner_n == 0 {
            q(&self.old)
        } else {
            self.c_text_at(inner, inner_n)
        };
        let mut out = format!("{name}({old}");
        for a in &self.alts[inner_n..n] {
            out.push_str(&format!(",\n{}{}", indent(inner), alt_at(a, inner)));
        }
        out.push(')');
        out
    }
}

/// `ALTERNATIVE` for one alternative, `ALTERNATIVE_<n>` for more.
fn macro_name(n: usize) -> String {
    match n {
        1 => "ALTERNATIVE".to_string(),
        n => format!("ALTERNATIVE_{n}"),
    }
}

/// The stock site of `kernel` (6.12:
/// `ALTERNATIVE("rep movsb", "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))`).
/// 6.1's `copy_user_generic()` is an `alternative_call_2` on REP_GOOD and
/// ERMS, out of line in the C convention: its chain is the call of
/// `copy_user_enhanced_fast_string` with ERMS, else
/// `copy_user_generic_string` (REP_GOOD, which copygen's feature table
/// lacks, taken as set, as the kernel sets it on every CPU with ERMS and on
/// most without); [`stock_callee`] has REP_GOOD.
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
            old: SiteInsn::Call(SiteTarget::Routine(COPY_USER_GENERIC_STRING.into())),
            alts: vec![Alt {
                feature: CpuFeature::Erms,
                negate: false,
                insn: SiteInsn::Call(SiteTarget::Routine(COPY_USER_ENHANCED_FAST_STRING.into())),
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

/// The stock site of `kernel` on a CPU with `features` where 6.1's
/// REP_GOOD is `rep_good` (6.12 does not test it): [`stock_site`] for 6.12;
/// for 6.1 the call of the routine `alternative_call_2` picks, in the C
/// convention (three `call rel32` of one length, so no padding).
pub fn stock_site_with(kernel: KernelVersion, features: CpuFeatures, rep_good: bool) -> SiteCode {
    if kernel.x86_64_calls_rep_movs_alternative() {
        return stock_site(kernel, features);
    }
    let routine = stock_callee(kernel, features, rep_good).expect("6.1 always calls");
    let mut bytes = SiteInsn::Call(SiteTarget::Routine(routine.into())).bytes();
    bytes.extend(optimized_nops(CALL_LEN - bytes.len()));
    SiteCode {
        bytes,
        calls: vec![SiteCall {
            at: 1,
            target: SiteTarget::Routine(routine.into()),
        }],
        convention: Convention::C,
    }
}

/// The routine the stock site of `kernel` calls on a CPU with `features`
/// (6.1's REP_GOOD: `rep_good`); `None` where it calls none (6.12 on FSRM
/// CPUs: the inline `rep movsb`).
pub fn stock_callee(
    kernel: KernelVersion,
    features: CpuFeatures,
    rep_good: bool,
) -> Option<&'static str> {
    if kernel.x86_64_calls_rep_movs_alternative() {
        (!features.has(CpuFeature::Fsrm)).then_some(REP_MOVS_ALTERNATIVE)
    } else if features.has(CpuFeature::Erms) {
        Some(COPY_USER_ENHANCED_FAST_STRING)
    } else if rep_good {
        Some(COPY_USER_GENERIC_STRING)
    } else {
        Some(COPY_USER_GENERIC_UNROLLED)
    }
}

/// The routines a stock site of `kernel` may call.
pub fn stock_routines(kernel: KernelVersion) -> &'static [&'static str] {
    if kernel.x86_64_calls_rep_movs_alternative() {
        &[REP_MOVS_ALTERNATIVE]
    } else {
        &[
            COPY_USER_GENERIC_UNROLLED,
            COPY_USER_GENERIC_STRING,
            COPY_USER_ENHANCED_FAST_STRING,
        ]
    }
}

/// What `chain` costs per site against `stock`: (.text bytes,
/// .altinstructions bytes, .altinstr_replacement bytes), each the
/// difference.
pub fn cost_per_site(chain: &Chain, stock: &Chain) -> (isize, isize, isize) {
    let repl = |c: &Chain| -> usize { c.alts.iter().map(|a| a.insn.bytes().len()).sum() };
    (
        chain.len() as isize - stock.len() as isize,
        (chain.alts.len() as isize - stock.alts.len() as isize)
            * super::alternative::ALT_INSTR_BYTES as isize,
        repl(chain) as isize - repl(stock) as isize,
    )
}
