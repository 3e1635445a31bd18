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
        format!(
            "{} family {:#x} model {:#x} ({}), {}",
            self.vendor,
            self.family,
            self.model,
            self.name,
            if feats.is_empty() {
                "no ERMS/FSRM".to_string()
            } else {
                feats.join(", ")
            }
        )
    }
}
