//! What CPUID says about the CPU a tune ran on, for the output's comments
//! and the report.

use serde::Serialize;

use crate::arch::cpu::{is_zen, Cpuid};
use crate::front::variant::CpuFeature;
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

/// The comment line a tune writes so that `--merge` knows the CPU:
/// `cpu: vendor=AuthenticAMD family=0x19 model=0x11 erms=yes fsrm=yes`.
pub const RECORD_PREFIX: &str = "cpu: ";

impl CpuInfo {
    pub fn record(&self) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        format!(
            "{RECORD_PREFIX}vendor={} family={:#x} model={:#x} erms={} fsrm={}",
            self.vendor,
            self.family,
            self.model,
            yes(self.erms),
            yes(self.fsrm)
        )
    }

    /// The CPU of a [`CpuInfo::record`] line (without the `# `).
    pub fn from_record(line: &str) -> Option<CpuInfo> {
        let rest = line.strip_prefix(RECORD_PREFIX)?;
        let mut cpu = CpuInfo {
            vendor: String::new(),
            family: 0,
            model: 0,
            stepping: 0,
            erms: false,
            fsrm: false,
            name: String::new(),
        };
        let mut seen = 0;
        for word in rest.split_whitespace() {
            let (k, v) = word.split_once('=')?;
            let hex = || u32::from_str_radix(v.strip_prefix("0x")?, 16).ok();
            let flag = || match v {
                "yes" => Some(true),
                "no" => Some(false),
                _ => None,
            };
            match k {
                "vendor" if !v.is_empty() => cpu.vendor = v.to_string(),
                "family" => cpu.family = hex()?,
                "model" => cpu.model = hex()?,
                "erms" => cpu.erms = flag()?,
                "fsrm" => cpu.fsrm = flag()?,
                _ => return None,
            }
            seen += 1;
        }
        (seen == 5).then_some(cpu)
    }

    /// The feature bits a per-CPU variant may test that this CPU has.
    pub fn features(&self) -> Vec<CpuFeature> {
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
