//! What CPUID says about the CPU a tune ran on, for the output's comments
//! and the report.

use serde::Serialize;

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

pub fn cpu_info() -> CpuInfo {
    use core::arch::x86_64::__cpuid_count;
    // Leaf 7 is read only when leaf 0 reports it.
    {
        let l0 = __cpuid_count(0, 0);
        let mut vendor = Vec::new();
        for r in [l0.ebx, l0.edx, l0.ecx] {
            vendor.extend_from_slice(&r.to_le_bytes());
        }
        let l1 = __cpuid_count(1, 0);
        let base_family = (l1.eax >> 8) & 0xf;
        let family = if base_family == 0xf {
            base_family + ((l1.eax >> 20) & 0xff)
        } else {
            base_family
        };
        let model = if base_family == 0x6 || base_family == 0xf {
            ((l1.eax >> 4) & 0xf) | (((l1.eax >> 16) & 0xf) << 4)
        } else {
            (l1.eax >> 4) & 0xf
        };
        let (erms, fsrm) = if l0.eax >= 7 {
            let l7 = __cpuid_count(7, 0);
            (l7.ebx & (1 << 9) != 0, l7.edx & (1 << 4) != 0)
        } else {
            (false, false)
        };
        CpuInfo {
            vendor: String::from_utf8_lossy(&vendor).into_owned(),
            family,
            model,
            stepping: l1.eax & 0xf,
            erms,
            fsrm,
            name: bench::cpu_name(),
        }
    }
}

impl CpuInfo {
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
    pub fn features(&self) -> Vec<crate::variants::CpuFeature> {
        use crate::variants::{is_zen, CpuFeature};
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
