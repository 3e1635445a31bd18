//! What CPUID says about the CPU a tune ran on, for the output's
//! `[tuned_on]` table, its comments and the report.

use serde::Serialize;

use crate::arch::cpu::{is_zen, zen_generation, Cpuid};
use crate::front::variant::{CpuFeature, TunedOn};
use crate::tools::bench;

// ---- the CPU -------------------------------------------------------------------

/// What CPUID says about the CPU the figures come from.
#[derive(Debug, Clone, Serialize)]
pub struct CpuInfo {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
    pub erms: bool,
    pub fsrm: bool,
    /// The kernel's `X86_FEATURE_REP_GOOD`, as CPUID lets copygen decode it.
    pub rep_good: bool,
    pub name: String,
}

/// The running CPU, decoded by the one CPUID table (`arch/cpu.rs`).
pub fn cpu_info() -> CpuInfo {
    let id = Cpuid::host().unwrap_or(Cpuid::from_words(0, [0; 3], 0, None));
    CpuInfo::from_cpuid(&id, bench::cpu_name())
}

impl CpuInfo {
    /// What `id` says, with the CPU's marketing `name`.
    pub fn from_cpuid(id: &Cpuid, name: String) -> CpuInfo {
        let f = id.features();
        CpuInfo {
            vendor: id.vendor_string(),
            family: id.family(),
            model: id.model(),
            stepping: id.stepping(),
            erms: f.has(CpuFeature::Erms),
            fsrm: f.has(CpuFeature::Fsrm),
            rep_good: f.has(CpuFeature::RepGood),
            name,
        }
    }

    /// `AuthenticAMD family 0x19 model 0x11 (AMD EPYC), ERMS, FSRM`.
    pub fn describe(&self) -> String {
        let mut feats = Vec::new();
        if self.erms {
            feats.push("ERMS");
        }
        if self.fsrm {
            feats.push("FSRM");
        }
        let name = if self.name.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.name)
        };
        format!(
            "{} family {:#x} model {:#x}{name}, {}",
            self.vendor,
            self.family,
            self.model,
            if feats.is_empty() {
                "no ERMS/FSRM".to_string()
            } else {
                feats.join(", ")
            }
        )
    }
}

impl CpuInfo {
    /// The `[tuned_on]` table a tune writes so that `--merge` knows the CPU.
    pub fn tuned_on(&self) -> TunedOn {
        TunedOn {
            vendor: self.vendor.clone(),
            family: self.family,
            model: self.model,
            features: self.features(),
        }
    }

    /// The CPU of a validated `[tuned_on]` table (no stepping or name:
    /// the table does not record them).
    pub fn from_tuned_on(t: &TunedOn) -> CpuInfo {
        CpuInfo {
            vendor: t.vendor.clone(),
            family: t.family,
            model: t.model,
            stepping: 0,
            erms: t.has(CpuFeature::Erms),
            fsrm: t.has(CpuFeature::Fsrm),
            rep_good: t.has(CpuFeature::RepGood),
            name: String::new(),
        }
    }

    /// The feature bits a per-CPU variant may test that this CPU has, in
    /// [`CpuFeature::ALL`] order.
    pub fn features(&self) -> Vec<CpuFeature> {
        let generation = self.zen_generation();
        CpuFeature::ALL
            .into_iter()
            .filter(|&f| match f {
                CpuFeature::Erms => self.erms,
                CpuFeature::Fsrm => self.fsrm,
                CpuFeature::Zen => is_zen(&self.vendor, self.family),
                CpuFeature::RepGood => self.rep_good,
                _ => generation == Some(f),
            })
            .collect()
    }

    /// The bits a merged variant's condition names first: `zen`, `fsrm`,
    /// `erms` (those the CPU has).
    pub fn base_features(&self) -> Vec<CpuFeature> {
        let mut f = Vec::new();
        if is_zen(&self.vendor, self.family) {
            f.push(CpuFeature::Zen);
        }
        if self.fsrm {
            f.push(CpuFeature::Fsrm);
        }
        if self.erms {
            f.push(CpuFeature::Erms);
        }
        f
    }

    /// The kernel's Zen generation bit for this CPU (`zen1`..`zen5`), if any.
    pub fn zen_generation(&self) -> Option<CpuFeature> {
        zen_generation(&self.vendor, self.family, self.model)
    }

    /// A variant name for this CPU: `amd_f19_m11`.
    pub fn variant_name(&self) -> String {
        let vendor = match self.vendor.as_str() {
            "AuthenticAMD" => "amd",
            "GenuineIntel" => "intel",
            "HygonGenuine" => "hygon",
            _ => "cpu",
        };
        format!("{vendor}_f{:x}_m{:x}", self.family, self.model)
    }
}
