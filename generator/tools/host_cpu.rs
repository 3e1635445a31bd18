//! The CPU the figures come from, described once: its model name
//! (`/proc/cpuinfo`, as lscpu shows it) and what CPUID says
//! ([`HostCpu`]), and the record a tune keeps of it ([`CpuInfo`]: the
//! `[tuned_on]` table, the tuned file's comments, the report). Each tool
//! prints it its own way, from here: `bench` results carry
//! [`HostCpu::name`], `bench --site kernel` [`HostCpu::site_label`],
//! `kernel-patch --figures` [`HostCpu::mail_line`], `tune`
//! [`CpuInfo::describe`].

use serde::Serialize;

use crate::arch::cpu::{is_zen, zen_generation, CpuFeatures, Cpuid};
use crate::front::variant::{CpuFeature, TunedOn};

// ---- the host --------------------------------------------------------------------

/// The CPU this runs on: its model name and, on x86, its CPUID.
#[derive(Debug, Clone)]
pub struct HostCpu {
    /// The model name `/proc/cpuinfo` gives (`unknown CPU` without one).
    pub name: String,
    pub cpuid: Option<Cpuid>,
}

impl HostCpu {
    /// Read the running CPU's description.
    pub fn read() -> HostCpu {
        HostCpu {
            name: model_name(),
            cpuid: Cpuid::host(),
        }
    }

    /// `AMD EPYC 7763 (family 0x19, model 0x1; erms fsrm)`: the name,
    /// family and model, and the features a call site's alternatives were
    /// resolved for.
    pub fn site_label(&self, features: CpuFeatures) -> String {
        let name = &self.name;
        match &self.cpuid {
            Some(c) => format!(
                "{name} (family {:#x}, model {:#x}; {features})",
                c.family(),
                c.model()
            ),
            None => format!("{name} ({features})"),
        }
    }

    /// `AMD EPYC 7763 (family 0x19, model 0x1)`: the line naming the CPU
    /// in a patch mail's figures, control characters in the name shown
    /// as `?`.
    pub fn mail_line(&self) -> String {
        let name: String = self
            .name
            .chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect();
        match &self.cpuid {
            Some(c) => format!("{name} (family {:#x}, model {:#x})", c.family(), c.model()),
            None => name,
        }
    }

    /// What a tune records of this CPU (CPUID all zero where there is none).
    pub fn info(&self) -> CpuInfo {
        let id = self.cpuid.unwrap_or(Cpuid::from_words(0, [0; 3], 0, None));
        CpuInfo::from_cpuid(&id, self.name.clone())
    }
}

/// The model name `/proc/cpuinfo` gives, `unknown CPU` without one.
pub fn model_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

// ---- what a tune records ---------------------------------------------------------

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
    HostCpu::read().info()
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
