//! `[tuned_on]`: the CPU a tuned strategy was measured on.

use super::*;
use crate::arch::cpu::{is_zen, zen_generation, ZEN_FAMILY};
use crate::front::variant::TunedOn;

impl Validator<'_> {
    /// The recorded CPU, if the file has one (see [`TunedOn`] for what is
    /// checked).
    pub(super) fn tuned_on(&self, arch: Arch, raw: Option<RawTunedOn>) -> R<Option<TunedOn>> {
        let Some(raw) = raw else { return Ok(None) };
        let path = FieldPath::root().key("tuned_on");
        if !matches!(arch, Arch::X86_64 | Arch::I386) {
            return Err(self.err(
                &path,
                format!("`[tuned_on]` records an x86 CPU as CPUID names it; {arch} has no CPUID"),
            ));
        }
        let v = &raw.vendor;
        if v.trim().is_empty() || v.len() > 12 || !v.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return Err(self.err(
                &path.key("vendor"),
                format!("{v:?} is not a CPUID vendor string (1 to 12 printable ASCII characters, such as \"AuthenticAMD\")"),
            ));
        }
        if raw.family > TunedOn::MAX_FAMILY {
            return Err(self.err(
                &path.key("family"),
                format!(
                    "family {:#x} is above {:#x}, the largest CPUID reports",
                    raw.family,
                    TunedOn::MAX_FAMILY
                ),
            ));
        }
        if raw.model > TunedOn::MAX_MODEL {
            return Err(self.err(
                &path.key("model"),
                format!(
                    "model {:#x} is above {:#x}, the largest CPUID reports",
                    raw.model,
                    TunedOn::MAX_MODEL
                ),
            ));
        }
        let mut features = Vec::new();
        for (i, name) in raw.features.iter().enumerate() {
            let at = path.key("features").index(i);
            let Some(f) = CpuFeature::parse(name) else {
                return Err(self.err(
                    &at,
                    format!(
                        "unknown CPU feature {name:?}; known: {}",
                        CpuFeature::names().join(", ")
                    ),
                ));
            };
            if features.contains(&f) {
                return Err(self.err(&at, format!("`{f}` is listed twice")));
            }
            features.push(f);
        }
        let zen = is_zen(v, raw.family);
        if zen != features.contains(&CpuFeature::Zen) {
            return Err(self.err(
                &path.key("features"),
                format!(
                    "`zen` is listed exactly for a Zen vendor's family {ZEN_FAMILY:#x} and up; {v} family {:#x} {}",
                    raw.family,
                    if zen { "is one, so list it" } else { "is not one" }
                ),
            ));
        }
        let generation = zen_generation(v, raw.family, raw.model);
        let listed: Vec<CpuFeature> = features
            .iter()
            .copied()
            .filter(|&f| crate::arch::cpu::is_zen_generation(f))
            .collect();
        if listed != generation.into_iter().collect::<Vec<_>>() {
            return Err(self.err(
                &path.key("features"),
                format!(
                    "the Zen generation bit is listed as the kernel sets it, by AMD family and model: {v} family {:#x} model {:#x} {}",
                    raw.family,
                    raw.model,
                    match generation {
                        Some(g) => format!("is `{g}`, so list it and no other"),
                        None => "has none".to_string(),
                    }
                ),
            ));
        }
        features.sort_by_key(|f| CpuFeature::ALL.iter().position(|a| a == f));
        Ok(Some(TunedOn {
            vendor: raw.vendor,
            family: raw.family,
            model: raw.model,
            features,
        }))
    }
}
