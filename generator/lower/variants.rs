//! Lowering per-CPU variants (`front/variant.rs`): every variant is lowered
//! as a complete strategy of its own, `<symbol>__<variant>`, so it is
//! tested on any host; the entry points that pick one are the backend's
//! (`backend/x86/entry.rs`).

use super::{lower, Target};
use crate::arch::cpu::CpuFeatures;
use crate::arch::symbols;
use crate::front::strategy::{Direction, Flavor, Strategy};
use crate::front::variant::Variant;
use crate::lower::routine::Routine;

/// The variant `found` selects: the first whose condition holds.
pub fn select(s: &Strategy, found: CpuFeatures) -> Option<&Variant> {
    s.variants
        .iter()
        .find(|v| v.when.as_ref().is_none_or(|c| c.holds(found)))
}

/// A variant as a strategy of its own: same options, its classes, the
/// symbol `<symbol>__<variant>`. The names the strategy gives its linux
/// routines (`[linux] symbol`, `from_user`, `to_user`) belong to the entry
/// points; a variant's routines are named after the variant.
pub fn variant_strategy(s: &Strategy, v: &Variant) -> Strategy {
    let mut linux = s.linux.clone();
    linux.both = None;
    linux.from_user = None;
    linux.to_user = None;
    Strategy {
        symbol: symbols::variant_base(s, v),
        classes: v.classes.clone(),
        alias_first: v.alias_first.clone(),
        variants: Vec::new(),
        linux,
        ..s.clone()
    }
}

/// The routine of variant `v` that the entry point of `dir` enters.
pub fn variant_symbol(s: &Strategy, v: &Variant, flavor: Flavor, dir: Direction) -> String {
    symbols::variant_entry(s, v, flavor, dir)
}

/// Every variant's routines, their labels prefixed with the variant name so
/// they can share a file.
pub fn lower_variants(s: &Strategy, target: Target) -> Vec<Routine> {
    s.variants
        .iter()
        .flat_map(|v| {
            lower(&variant_strategy(s, v), target)
                .into_iter()
                .map(move |mut r| {
                    r.tag = symbols::variant_tag(v, &r.tag);
                    r
                })
        })
        .collect()
}
