//! Per-CPU variants as a strategy states them: one strategy, the right code
//! on each CPU.
//!
//! A strategy may hold variants, each a complete dispatch (its own size
//! classes, methods overridden by name) under a CPU condition; the first
//! variant whose condition holds wins and exactly one, the last, is the
//! default. This module is the vocabulary (the names a strategy file may
//! write); what each feature means on a CPU — the kernel's bit, the CPUID
//! test — is the feature table in `arch/cpu.rs`, the variant lowering is
//! `lower/variants.rs`, and the entry points that pick a variant are
//! `backend/x86/entry.rs`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::strategy::{toml_name, AliasFirst, SizeClass};

/// A CPU property a variant's condition may name. Its spelling in a
/// strategy file is the serde name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuFeature {
    /// Enhanced `rep movsb`.
    Erms,
    /// Fast short `rep movsb`.
    Fsrm,
    /// AMD Zen or later (the kernel's synthetic `X86_FEATURE_ZEN`).
    Zen,
    /// The kernel's Zen generations, by AMD family and model
    /// (`X86_FEATURE_ZEN1`..`ZEN5`; Linux 6.1 has `ZEN1`..`ZEN4`).
    Zen1,
    Zen2,
    Zen3,
    Zen4,
    Zen5,
    /// The kernel's `X86_FEATURE_REP_GOOD` ("REP microcode works well"),
    /// set by vendor and family.
    #[serde(rename = "rep_good")]
    RepGood,
}

impl CpuFeature {
    /// Every feature, in the order of its bit in the resolver's feature mask.
    pub const ALL: [CpuFeature; 9] = [
        CpuFeature::Erms,
        CpuFeature::Fsrm,
        CpuFeature::Zen,
        CpuFeature::Zen1,
        CpuFeature::Zen2,
        CpuFeature::Zen3,
        CpuFeature::Zen4,
        CpuFeature::Zen5,
        CpuFeature::RepGood,
    ];

    /// The strategy file's spelling.
    pub fn name(self) -> String {
        toml_name(&self)
    }
    pub fn parse(s: &str) -> Option<CpuFeature> {
        Self::ALL.into_iter().find(|f| f.name() == s)
    }
    pub fn names() -> Vec<String> {
        Self::ALL.iter().map(|f| f.name()).collect()
    }
}

impl fmt::Display for CpuFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Features present (`require`) and absent (`exclude`), all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuCondition {
    pub require: Vec<CpuFeature>,
    pub exclude: Vec<CpuFeature>,
}

impl CpuCondition {
    /// Its tests in the order every printer and slot uses: each required
    /// feature present (`true`), then each excluded one absent (`false`).
    /// The first is the bit a 6.12 site chain tests for the variant.
    pub fn tests(&self) -> impl Iterator<Item = (CpuFeature, bool)> + '_ {
        let present = self.require.iter().map(|&f| (f, true));
        present.chain(self.exclude.iter().map(|&f| (f, false)))
    }
    /// Its tests as a strategy file writes them, each feature spelt by
    /// `name`: `["a", "b", "!c"]`'s words.
    pub fn words<S: fmt::Display>(&self, name: impl Fn(CpuFeature) -> S) -> Vec<String> {
        self.tests()
            .map(|(f, present)| {
                let bang = if present { "" } else { "!" };
                format!("{bang}{}", name(f))
            })
            .collect()
    }
    /// The condition with each feature spelt by `name`: `a && b && !c`.
    pub fn spelt<S: fmt::Display>(&self, name: impl Fn(CpuFeature) -> S) -> String {
        self.words(name).join(" && ")
    }
}

impl fmt::Display for CpuCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelt(CpuFeature::name))
    }
}

/// A variant's condition: the CPUs any one of its conjunctions describes.
/// `when = ["zen", "erms"]` is one conjunction; `when = [["zen3", "erms"],
/// ["zen4", "erms"]]` two, as the kernel writes `ZEN3 || ZEN4` where no
/// one bit names the CPUs a variant is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantCondition {
    /// Never empty.
    pub any: Vec<CpuCondition>,
}

impl VariantCondition {
    pub fn one(c: CpuCondition) -> VariantCondition {
        VariantCondition { any: vec![c] }
    }
    /// The condition with each feature spelt by `name`: `a && b || c`.
    pub fn spelt<S: fmt::Display>(&self, name: impl Fn(CpuFeature) -> S + Copy) -> String {
        let terms: Vec<String> = self.any.iter().map(|c| c.spelt(name)).collect();
        terms.join(" || ")
    }
    /// Every feature some conjunction names, present or absent.
    pub fn features(&self) -> impl Iterator<Item = CpuFeature> + '_ {
        self.any.iter().flat_map(|c| c.tests().map(|(f, _)| f))
    }
}

impl fmt::Display for VariantCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelt(CpuFeature::name))
    }
}

/// One variant: its condition (`None`: the default) and its dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Letters, digits and `_`: it becomes part of symbols and labels.
    pub name: String,
    pub when: Option<VariantCondition>,
    pub classes: Vec<SizeClass>,
    pub alias_first: Option<AliasFirst>,
}

impl Variant {
    pub fn condition_text(&self) -> String {
        match &self.when {
            Some(c) => c.to_string(),
            None => "default".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_come_from_serde_and_parse_back() {
        assert_eq!(
            CpuFeature::names(),
            ["erms", "fsrm", "zen", "zen1", "zen2", "zen3", "zen4", "zen5", "rep_good"]
        );
        for f in CpuFeature::ALL {
            assert_eq!(CpuFeature::parse(&f.name()), Some(f));
        }
        assert_eq!(CpuFeature::parse("Zen"), None);
    }
}

/// The CPU a strategy was tuned on (`[tuned_on]`: what `copygen tune`
/// records and `copygen tune --merge` reads to name and condition each
/// input's variant). Validated: a CPUID vendor string (1 to 12 printable
/// ASCII characters), a family and model CPUID can report, and the
/// features of [`CpuFeature`] the CPU has, in [`CpuFeature::ALL`] order,
/// `zen` and the Zen generations exactly when the vendor, family and model
/// say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunedOn {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
    pub features: Vec<CpuFeature>,
}

impl TunedOn {
    /// The largest family CPUID reports (base 0xf plus extended 0xff).
    pub const MAX_FAMILY: u32 = 0xf + 0xff;
    /// The largest model CPUID reports (extended and base nibbles).
    pub const MAX_MODEL: u32 = 0xff;

    pub fn has(&self, f: CpuFeature) -> bool {
        self.features.contains(&f)
    }
}
