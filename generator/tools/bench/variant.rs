//! Benchmarking a strategy with per-CPU variants: the variant that runs,
//! forced by name or picked as the resolver would on this CPU.

use anyhow::Result;

use super::{jit_subject, strategy_subject, Subject};
use crate::arch::cpu::CpuFeatures;
use crate::arch::symbols;
use crate::front::strategy::{Direction, Flavor, Strategy};
use crate::front::variant::Variant;
use crate::lower::variants::{select, variant_strategy};

/// The variant a benchmark of `s` runs: `forced` by name, else the one
/// `found` selects. `None` for a strategy without variants (whatever is forced).
pub fn bench_variant<'a>(
    s: &'a Strategy,
    forced: Option<&str>,
    found: CpuFeatures,
) -> Result<Option<&'a Variant>> {
    match (forced, s.variants.is_empty()) {
        (_, true) => Ok(None),
        (None, false) => Ok(select(s, found)),
        (Some(name), false) => match s.variants.iter().find(|v| v.name == name) {
            Some(v) => Ok(Some(v)),
            None => anyhow::bail!(
                "`{}` has no variant `{name}` (it has {})",
                s.name,
                s.variants
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

/// The bench subject of `s`: with variants, the chosen one alone, JIT-compiled
/// and named `strategy[variant]`.
pub fn variant_subject(s: &Strategy, forced: Option<&str>, found: CpuFeatures) -> Result<Subject> {
    let Some(v) = bench_variant(s, forced, found)? else {
        return strategy_subject(s);
    };
    let vs = variant_strategy(s, v);
    let dir = if s.directions.contains(&Direction::FromUser) {
        Direction::FromUser
    } else {
        Direction::ToUser
    };
    jit_subject(
        &vs,
        &symbols::entry(&vs, Flavor::Standalone, dir, None),
        format!("{}[{}]", s.name, v.name),
    )
}
