//! The 6.12 x86_64 call site of a per-CPU strategy: `copy_user_generic()`'s
//! inline `ALTERNATIVE` becomes a chain over the strategy's variants
//! ([`chain`]), and what each CPU feature set runs follows from it
//! ([`site`], [`per_cpu_table`]). The routines the chain calls are named by
//! `arch::symbols`, as the backend names them.

use super::site::{stock_chain, Alt, Chain, SiteCode, SiteInsn, SiteTarget, MAX_ALTERNATIVES};
use super::version::KernelVersion;
use crate::arch::cpu::CpuFeatures;
use crate::arch::symbols;
use crate::front::strategy::{Arch, Convention, Direction, Flavor, Strategy, Uaccess};
use crate::front::variant::{CpuFeature, Variant};

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

/// Why `t` cannot be the 6.12 x86_64 site's chain, if it cannot, and the
/// field that says so: a per-CPU strategy is called from between
/// `copy_user_generic()`'s `stac()` and `clac()`, in
/// `rep_movs_alternative`'s convention. Both `kernel-patch` and `bench
/// --site kernel` refuse such a strategy with this reason (the bench times
/// only sites a patch can make).
pub fn chain_unfit(
    t: &Strategy,
    kernel: KernelVersion,
) -> Option<(&'static [&'static str], &'static str)> {
    let chain_site = t.arch == Arch::X86_64
        && kernel.x86_64_calls_rep_movs_alternative()
        && !t.variants.is_empty();
    if !chain_site {
        return None;
    }
    let field: &'static [&'static str] = if t.linux.convention != Convention::RepMovs {
        &["linux", "convention"]
    } else if t.linux.uaccess != Uaccess::Caller {
        &["linux", "uaccess"]
    } else {
        return None;
    };
    Some((
        field,
        "6.12 inlines copy_user_generic(): a per-CPU strategy's site is a chain of ALTERNATIVEs that keeps the inline rep movsb where a variant is one and calls the other variants from between the site's stac() and clac(), in rep_movs_alternative's convention; set [linux] convention = \"rep_movs\" and uaccess = \"caller\" (rax is then a method's only scratch register: registers = 1), as guarded-movsb-612 does for guarded-movsb",
    ))
}

/// Whether a variant is a bare `rep movsb` (one class for every size,
/// [`crate::front::strategy::is_bare_rep_movsb`]).
pub fn is_bare_movsb(v: &Variant) -> bool {
    crate::front::strategy::is_bare_rep_movsb(&v.classes, v.alias_first.as_ref())
}

/// The routine a site calls for variant `v` of the wired `t` (in the
/// `rep movs` convention, one routine for both directions).
pub fn variant_routine(t: &Strategy, v: &Variant) -> String {
    symbols::variant_entry(t, v, Flavor::Linux, Direction::FromUser)
}

/// The entry point a site calls when it cannot pick the variant itself.
pub fn entry_routine(t: &Strategy) -> String {
    symbols::entry(t, Flavor::Linux, Direction::FromUser, None)
}

/// The site of one variant: the inline `rep movsb` when it is one, else a
/// call of its routine.
fn variant_insn(t: &Strategy, v: &Variant) -> SiteInsn {
    if is_bare_movsb(v) {
        SiteInsn::RepMovsb
    } else {
        SiteInsn::Call(SiteTarget::Routine(variant_routine(t, v)))
    }
}

/// 6.1's site as the glue writes it, `copy_user_generic()`'s
/// `alternative_call_2` calling copygen's routines
/// ([`super::wiring::ALTERNATIVE_CALL_2`]), in the strategy's convention.
fn alternative_call_2(t: &Strategy) -> Chain {
    let call = |symbol: &str| SiteInsn::Call(SiteTarget::Routine(symbol.to_string()));
    let [(_, old), later @ ..] = &super::wiring::ALTERNATIVE_CALL_2;
    Chain {
        old: call(old),
        alts: later
            .iter()
            .filter_map(|&(feature, symbol)| {
                Some(Alt {
                    feature: feature?,
                    negate: false,
                    insn: call(symbol),
                })
            })
            .collect(),
        fallback: None,
        convention: t.linux.convention,
    }
}

/// The chain of the wired strategy `t` in `kernel`.
///
/// For x86_64 6.12 per-CPU strategies in the `rep_movs` convention: from
/// the lowest priority (the default variant, the original instruction) to
/// the highest, per conjunction of the variant's condition "if its first
/// bit holds, the variant's site", then for each further bit of it, "if
/// that bit fails, call the entry" (whose own ALTERNATIVEs make the exact
/// first-match choice).
/// A CPU therefore runs the site of its variant or calls the entry, both
/// right; a variant whose condition holds is never overridden by a
/// higher-priority one (that one's condition fails, so at most its entry
/// call applies). On 6.1 the site is the glue's `alternative_call_2` of
/// the routines that stand for the tree's three ([`alternative_call_2`]).
/// Otherwise (6.12 in the C convention or without variants) the site is
/// the glue's call of the routine on every CPU, in the strategy's
/// convention, or, for a strategy that *is* 6.12's
/// `rep_movs_alternative`, the stock site. (A per-CPU strategy in another
/// convention gets no 6.12 site: [`chain_unfit`].)
pub fn chain(t: &Strategy, kernel: KernelVersion) -> Chain {
    let entry = entry_routine(t);
    let call_entry = || SiteInsn::Call(SiteTarget::Routine(entry.clone()));
    // The glue's call of the entry (`raw_copy_{from,to}_user` on 6.1, and
    // on 6.12 for a strategy that is not the chain) is in the strategy's
    // own convention: inline asm whose constraints are that convention's.
    let calls_entry = |fallback: Option<String>| Chain {
        old: call_entry(),
        alts: Vec::new(),
        fallback,
        convention: t.linux.convention,
    };
    if !is_variant_chain(t, kernel) {
        if t.arch == Arch::X86_64
            && kernel.x86_64_calls_rep_movs_alternative()
            && t.linux.convention == Convention::RepMovs
        {
            return stock_chain(kernel);
        }
        if !t.linux.feature_entries.is_empty() {
            return alternative_call_2(t);
        }
        return calls_entry(None);
    }
    let (default, rest) = t.variants.split_last().expect("variants");
    let mut alts = Vec::new();
    for v in rest.iter().rev() {
        for c in v.when.iter().flat_map(|w| &w.any) {
            let mut tests = c.tests();
            let Some((first, present)) = tests.next() else {
                continue;
            };
            alts.push(Alt {
                feature: first,
                negate: !present,
                insn: variant_insn(t, v),
            });
            // Where a further test fails: the entry.
            alts.extend(tests.map(|(f, present)| Alt {
                feature: f,
                negate: present,
                insn: call_entry(),
            }));
        }
    }
    if alts.len() > MAX_ALTERNATIVES {
        return calls_entry(Some(format!(
            "the chain over the variants would nest {} ALTERNATIVEs, each 14 bytes of .altinstructions and a replacement at every inline site; past {MAX_ALTERNATIVES}, every site calls {entry}, whose dispatch is patched once",
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

/// The features `t`'s variants name, in table order.
fn named_features(t: &Strategy) -> Vec<CpuFeature> {
    CpuFeature::ALL
        .into_iter()
        .filter(|f| {
            t.variants.iter().any(|v| {
                v.when
                    .as_ref()
                    .is_some_and(|c| c.features().any(|g| g == *f))
            })
        })
        .collect()
}

/// Every combination of the features `t`'s variants name (each feature
/// outside them absent), in counting order: the CPUs a site differs on.
pub fn feature_sets(t: &Strategy) -> Vec<CpuFeatures> {
    CpuFeatures::subsets(&named_features(t)).collect()
}

/// The [`feature_sets`] some CPU can have: those that, with some choice
/// of the bits the variants leave unnamed, a kernel can report together
/// ([`CpuFeatures::kernel_can_report`]: a Zen 5 bit without `zen` is no
/// CPU).
pub fn reportable_feature_sets(t: &Strategy) -> Vec<CpuFeatures> {
    let named = named_features(t);
    let unnamed: Vec<CpuFeature> = CpuFeature::ALL
        .into_iter()
        .filter(|f| !named.contains(f))
        .collect();
    CpuFeatures::subsets(&named)
        .filter(|&f| CpuFeatures::subsets(&unnamed).any(|u| f.union(u).kernel_can_report()))
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

/// One line per feature set over the bits `t` names that a CPU can have
/// ([`reportable_feature_sets`]): the variant the entry's
/// first-match rule picks and what the site becomes (`entry` when it calls
/// the entry point), and whether that is the stock site's bytes.
pub fn per_cpu_table(t: &Strategy, kernel: KernelVersion) -> Vec<String> {
    let chain = chain(t, kernel);
    let stock = stock_chain(kernel);
    let rows: Vec<(String, &str, String)> = reportable_feature_sets(t)
        .into_iter()
        .map(|f| {
            let v = variant_for(t, f).map_or("-", |v| v.name.as_str());
            let same = chain.resolve(f) == stock.resolve(f);
            let site = chain.chosen(f).gas() + if same { " (stock bytes)" } else { "" };
            (features_text(f), v, site)
        })
        .collect();
    let width = |column: &dyn Fn(&(String, &str, String)) -> usize| {
        rows.iter().map(column).max().unwrap_or(0) + 1
    };
    let (features, variant) = (width(&|r| r.0.len()), width(&|r| r.1.len()));
    rows.iter()
        .map(|(f, v, site)| format!("{f:<features$}{v:<variant$}{site}"))
        .collect()
}
