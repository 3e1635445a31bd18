//! Choices that can never be made: a per-CPU variant every CPU matching it
//! picks an earlier one for, and a guard whose condition implies an
//! earlier guard's in the same class.

use super::*;
use crate::arch::cpu::CpuFeatures;
use crate::front::strategy::Condition;

/// Every set of features the conditions can tell apart.
fn feature_sets() -> Vec<CpuFeatures> {
    CpuFeatures::subsets(&CpuFeature::ALL).collect()
}

/// Whether a pointer `a` aligned to `ta` means `b` aligned to `tb`.
fn aligned_implies(a: AlignPointer, ta: u32, b: AlignPointer, tb: u32) -> bool {
    use AlignPointer::*;
    ta >= tb && (a == b || (a == Both && matches!(b, Dst | Src | Congruent)))
}

/// Whether guard condition `a` holding means `b` holds too (so a guard on
/// `a` after one on `b` is never taken). Only what is certain: alias bands
/// of `(dst - src) mod 4096` inside one another, alignments that imply one
/// another, and a one-value band that is a multiple of a congruence.
pub(super) fn implies(a: &Condition, b: &Condition) -> bool {
    match (a.clone(), b.clone()) {
        (Condition::Alias { lo, hi }, Condition::Alias { lo: l2, hi: h2 }) => l2 <= lo && hi <= h2,
        (
            Condition::Aligned { pointer, to },
            Condition::Aligned {
                pointer: p2,
                to: t2,
            },
        ) => aligned_implies(pointer, to, p2, t2),
        (
            Condition::Alias { lo, hi },
            Condition::Aligned {
                pointer: AlignPointer::Congruent,
                to,
            },
        ) => lo == hi && lo % to == 0,
        _ => false,
    }
}

impl Validator<'_> {
    /// Each of a variant's several conjunctions must select some CPU that
    /// neither an earlier variant nor another of its conjunctions does:
    /// else its slot in the entry is never the one that jumps.
    fn redundant_terms(
        &self,
        path: FieldPath,
        v: &Variant,
        sets: &[CpuFeatures],
        earlier: impl Fn(CpuFeatures) -> bool,
    ) {
        let Some(when) = v.when.as_ref().filter(|c| c.any.len() > 1) else {
            return;
        };
        for (k, c) in when.any.iter().enumerate() {
            let others = |f: CpuFeatures| {
                when.any
                    .iter()
                    .enumerate()
                    .any(|(i, d)| i != k && d.holds(f))
            };
            if sets
                .iter()
                .any(|&f| c.holds(f) && !earlier(f) && !others(f))
            {
                continue;
            }
            self.keep::<()>(Err(self.err(
                &path.index(k),
                format!(
                    "`{c}` never selects `{}` alone: every CPU it matches an earlier variant or another of its conditions takes; drop it",
                    v.name
                ),
            )));
        }
    }

    /// Each variant must be chosen on some CPU: one whose features every
    /// earlier variant's condition rejects. The default (`when = None`)
    /// too: the conditions before it must not cover every CPU.
    pub(super) fn unreachable_variants(&self, vpath: &FieldPath, variants: &[Variant]) {
        let sets = feature_sets();
        let line = |i: usize| self.err(&vpath.index(i).key("name"), "").line;
        for (j, v) in variants.iter().enumerate() {
            let holds = |w: &Option<VariantCondition>, f: CpuFeatures| {
                w.as_ref().is_none_or(|c| c.holds(f))
            };
            let earlier = |f: CpuFeatures| variants[..j].iter().any(|e| holds(&e.when, f));
            let reachable = sets.iter().any(|&f| holds(&v.when, f) && !earlier(f));
            if reachable {
                self.redundant_terms(vpath.index(j).key("when"), v, &sets, earlier);
                continue;
            }
            // Name the one earlier variant that covers it alone, if any;
            // else every earlier one that matches some CPU it matches.
            let covers = |e: &Variant| {
                sets.iter()
                    .all(|&f| !holds(&v.when, f) || holds(&e.when, f))
            };
            let by: Vec<usize> = match variants[..j].iter().position(covers) {
                Some(i) => vec![i],
                None => (0..j)
                    .filter(|&i| {
                        sets.iter()
                            .any(|&f| holds(&v.when, f) && holds(&variants[i].when, f))
                    })
                    .collect(),
            };
            let names: Vec<String> = by
                .iter()
                .map(|&i| {
                    format!(
                        "`{}` (line {}, when {})",
                        variants[i].name,
                        line(i),
                        variants[i].condition_text()
                    )
                })
                .collect();
            let field = if v.when.is_some() {
                vpath.index(j).key("when")
            } else {
                vpath.index(j).key("default")
            };
            self.keep::<()>(Err(self.err(
                &field,
                format!(
                    "variant `{}` can never be chosen: every CPU it matches picks {} first",
                    v.name,
                    names.join(" or ")
                ),
            )));
        }
    }
}
