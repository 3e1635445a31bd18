//! What a strategy must be, and how it is renamed, for a tree's call sites
//! to reach it: the rules `kernel-patch` wires a tree by and `bench --site
//! kernel` builds the patched site by, so the bench times the site the
//! patch makes. The per-arch glue (files, Makefile lines, the C that calls
//! the routine) is `kernel-patch`'s own.

use super::symbols::{GLUE_SYMBOL, GLUE_SYMBOL_ERMS, GLUE_SYMBOL_REP_GOOD, REP_MOVS_ALTERNATIVE};
use super::version::KernelVersion;
use crate::front::strategy::{
    Arch, Convention, ExtableFormat, FeatureEntry, RoutineShape, Strategy, Uaccess,
};
use crate::front::variant::{CpuCondition, CpuFeature};

/// 6.1's x86_64 call site as its `copy_user_generic()` has it, and as the
/// glue keeps it: `alternative_call_2` of a routine per feature, the
/// original first, each later one patched in over the earlier where its
/// feature is present (REP_GOOD, then ERMS). The glue calls copygen's
/// routines by these names.
pub const ALTERNATIVE_CALL_2: [(Option<CpuFeature>, &str); 3] = [
    (None, GLUE_SYMBOL),
    (Some(CpuFeature::RepGood), GLUE_SYMBOL_REP_GOOD),
    (Some(CpuFeature::Erms), GLUE_SYMBOL_ERMS),
];

/// [`ALTERNATIVE_CALL_2`]'s routines as entry points: each serves the CPUs
/// with its feature and without the features of the later ones.
pub fn alternative_call_2_entries() -> Vec<FeatureEntry> {
    ALTERNATIVE_CALL_2
        .iter()
        .enumerate()
        .map(|(i, &(feature, symbol))| FeatureEntry {
            symbol: symbol.to_string(),
            given: CpuCondition {
                require: feature.into_iter().collect(),
                exclude: ALTERNATIVE_CALL_2[i + 1..]
                    .iter()
                    .filter_map(|&(f, _)| f)
                    .collect(),
            },
        })
        .collect()
}

/// Why a strategy cannot be wired into a tree (bad input: exit 2), and
/// the field of its file that makes it so, as TOML keys (`["fault",
/// "zero_tail"]`), which the front end locates in the file
/// (`diagnostics::unfit`).
#[derive(Debug, thiserror::Error)]
#[error("{strategy}: {message}")]
pub struct Unfit {
    pub strategy: String,
    pub field: &'static [&'static str],
    pub message: String,
}

impl Unfit {
    pub fn new(s: &Strategy, field: &'static [&'static str], message: impl Into<String>) -> Unfit {
        Unfit {
            strategy: s.name.clone(),
            field,
            message: message.into(),
        }
    }
}

/// What every arch needs: both directions, `[linux] kernel` set, the
/// kernel's exception-table format, no constant-size entry points (no
/// call site uses them). Returns the adapted strategy; `notes` gets a
/// sentence on each change a reviewer should know of.
pub fn common(
    s: &Strategy,
    kernel: KernelVersion,
    notes: &mut Vec<String>,
) -> Result<Strategy, Unfit> {
    let mut t = s.clone();
    t.linux.kernel = Some(kernel);
    if !kernel.has_extable_copy() && t.linux.extable == ExtableFormat::Copy {
        // A file for both kernels defaults to 6.1's _ASM_EXTABLE_CPY; 6.4
        // removed it, and 6.12's copy routines use _ASM_EXTABLE_UA.
        t.linux.extable = ExtableFormat::Relative;
    }
    if s.directions.len() != 2 {
        return Err(Unfit::new(
            s,
            &["directions"],
            format!(
                "the kernel copies in both directions through one call site; this strategy emits only {}",
                s.directions[0].name()
            ),
        ));
    }
    if !s.fixed_sizes.is_empty() {
        notes.push(format!(
            "The constant-size entry points ({:?}) are left out: no call site uses them.",
            s.fixed_sizes
        ));
        t.fixed_sizes.clear();
    }
    Ok(t)
}

/// The x86 rules on `t` ([`common`]'s result for `s`): one routine for
/// both directions, named as the tree calls it — `rep_movs_alternative`
/// for a 6.12 x86_64 strategy in its convention without variants (the
/// drop-in: the tree builds it instead of its own), else
/// `copygen_copy_user`, which the glue or the chain calls (on 6.1 with
/// the two further entry points of [`ALTERNATIVE_CALL_2`]).
pub fn x86(
    s: &Strategy,
    t: &mut Strategy,
    kernel: KernelVersion,
    notes: &mut Vec<String>,
) -> Result<(), Unfit> {
    if s.zero_tail {
        return Err(Unfit::new(
            s,
            &["fault", "zero_tail"],
            "zero_tail routines zero from_user's kernel buffer; the kernel's one x86 routine serves both directions and zeroes in C (copy_from_user)",
        ));
    }
    t.routine = RoutineShape::Both;
    // A per-CPU strategy is never the drop-in rep_movs_alternative:
    // copy_user_generic() calls that only on CPUs without FSRM, while a
    // variant may be meant for FSRM CPUs.
    let drop_in = s.arch == Arch::X86_64
        && kernel.x86_64_calls_rep_movs_alternative()
        && s.linux.convention == Convention::RepMovs
        && s.variants.is_empty();
    if let Some((field, why)) = super::variant_chain::chain_unfit(s, kernel) {
        return Err(Unfit::new(s, field, why));
    }
    let name = if drop_in {
        if s.linux.uaccess == Uaccess::Routine {
            return Err(Unfit::new(
                s,
                &["linux", "uaccess"],
                "6.12 calls rep_movs_alternative with STAC already done; a routine that does its own STAC/CLAC would nest them (objtool refuses): set [linux] uaccess = \"caller\"",
            ));
        }
        REP_MOVS_ALTERNATIVE
    } else {
        GLUE_SYMBOL
    };
    if s.routine == RoutineShape::PerDirection {
        notes.push(
            "The strategy is emitted as one routine serving both directions (every load and store has an exception-table entry), as the x86 call sites need.".into(),
        );
    }
    if s.linux.both.as_deref().is_some_and(|n| n != name) {
        notes.push(format!(
            "The strategy names its routine `{}`; the tree calls it `{name}`.",
            s.linux.both.as_deref().unwrap_or_default()
        ));
    }
    t.linux.both = Some(name.to_string());
    if s.arch == Arch::X86_64 && !kernel.x86_64_calls_rep_movs_alternative() {
        t.linux.feature_entries = alternative_call_2_entries();
    }
    Ok(())
}
