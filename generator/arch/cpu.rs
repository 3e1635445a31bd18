//! The x86 CPU-feature table: the one home of what each per-CPU variant
//! condition means — the kernel's `X86_FEATURE_*` bit, the CPUID test the
//! standalone resolver emits (`backend/x86/entry.rs`), and the same test in
//! Rust for `copygen bench` and `copygen tune` ([`Cpuid`]).
//!
//! The synthetic bits (`zen`, `zen1`..`zen5`, `rep_good`) are decoded the
//! way `arch/x86/kernel/cpu/{amd,hygon,intel}.c` of Linux 6.1 and 6.12 set
//! them, from the vendor, family, model and leaf-1 signature.

use crate::front::variant::{CpuCondition, CpuFeature, VariantCondition};
use crate::kernel::version::KernelVersion;

/// How user space finds a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detect {
    /// `cpuid` leaf 7, subleaf 0: bit `bit` of register `reg`.
    Leaf7 { reg: Leaf7Reg, bit: u32 },
    /// A Zen vendor ([`ZEN_VENDORS`]), family >= [`ZEN_FAMILY`].
    ZenFamily,
    /// An AMD CPU of `family` whose model is in one of `models` (inclusive
    /// ranges): amd.c's "Figure out Zen generations" switch.
    ZenGeneration {
        family: u32,
        models: &'static [(u32, u32)],
    },
    /// The kernel's `X86_FEATURE_REP_GOOD` on x86_64, by vendor
    /// ([`rep_good`]).
    RepGood,
}

/// The leaf-7 output register a feature bit is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leaf7Reg {
    Ebx,
    Edx,
}

/// One row of the table.
#[derive(Debug)]
pub struct FeatureInfo {
    pub feature: CpuFeature,
    /// The kernel's `X86_FEATURE_*` macro.
    pub kernel: &'static str,
    /// The kernel's number for it (`word * 32 + bit`, as in Linux 6.1 and
    /// 6.12's `cpufeatures.h`), which `.altinstructions` entries carry.
    pub kernel_bit: u16,
    pub detect: Detect,
    /// The oldest tree copygen writes for that defines the bit
    /// (`X86_FEATURE_ZEN5` is not in 6.1).
    pub since: KernelVersion,
}

/// Every feature, in the order of its bit in the resolver's feature mask
/// ([`CpuFeature::ALL`]'s order).
pub const FEATURES: &[FeatureInfo] = &[
    FeatureInfo {
        feature: CpuFeature::Erms,
        kernel: "X86_FEATURE_ERMS",
        kernel_bit: 9 * 32 + 9,
        detect: Detect::Leaf7 {
            reg: Leaf7Reg::Ebx,
            bit: 9,
        },
        since: KernelVersion::V6_1,
    },
    FeatureInfo {
        feature: CpuFeature::Fsrm,
        kernel: "X86_FEATURE_FSRM",
        kernel_bit: 18 * 32 + 4,
        detect: Detect::Leaf7 {
            reg: Leaf7Reg::Edx,
            bit: 4,
        },
        since: KernelVersion::V6_1,
    },
    FeatureInfo {
        feature: CpuFeature::Zen,
        kernel: "X86_FEATURE_ZEN",
        kernel_bit: 7 * 32 + 28,
        detect: Detect::ZenFamily,
        since: KernelVersion::V6_1,
    },
    FeatureInfo {
        feature: CpuFeature::Zen1,
        kernel: "X86_FEATURE_ZEN1",
        kernel_bit: 11 * 32 + 31,
        detect: Detect::ZenGeneration {
            family: 0x17,
            models: &[(0x00, 0x2f), (0x50, 0x5f)],
        },
        since: KernelVersion::V6_1,
    },
    FeatureInfo {
        feature: CpuFeature::Zen2,
        kernel: "X86_FEATURE_ZEN2",
        kernel_bit: 11 * 32 + 28,
        detect: Detect::ZenGeneration {
            family: 0x17,
            models: &[(0x30, 0x4f), (0x60, 0x7f), (0x90, 0x91), (0xa0, 0xaf)],
        },
        since: KernelVersion::V6_1,
    },
    FeatureInfo {
        feature: CpuFeature::Zen3,
        kernel: "X86_FEATURE_ZEN3",
        kernel_bit: 11 * 32 + 29,
        detect: Detect::ZenGeneration {
            family: 0x19,
            models: &[(0x00, 0x0f), (0x20, 0x5f)],
        },
        since: KernelVersion::V6_1,
    },
    FeatureInfo {
        feature: CpuFeature::Zen4,
        kernel: "X86_FEATURE_ZEN4",
        kernel_bit: 11 * 32 + 30,
        detect: Detect::ZenGeneration {
            family: 0x19,
            models: &[(0x10, 0x1f), (0x60, 0xaf)],
        },
        since: KernelVersion::V6_1,
    },
    // 6.12 only: Debian's 6.1 has ZEN1..ZEN4 and no family 0x1a case.
    FeatureInfo {
        feature: CpuFeature::Zen5,
        kernel: "X86_FEATURE_ZEN5",
        kernel_bit: 3 * 32 + 5,
        detect: Detect::ZenGeneration {
            family: 0x1a,
            models: &[(0x00, 0x2f), (0x40, 0x4f), (0x60, 0x7f), (0xd0, 0xd7)],
        },
        since: KernelVersion::V6_12,
    },
    FeatureInfo {
        feature: CpuFeature::RepGood,
        kernel: "X86_FEATURE_REP_GOOD",
        kernel_bit: 3 * 32 + 16,
        detect: Detect::RepGood,
        since: KernelVersion::V6_1,
    },
];

/// The vendor whose Zen generations amd.c names (Hygon sets only
/// `X86_FEATURE_ZEN`).
pub const AMD: [u32; 3] = ZEN_VENDORS[0].1;
/// `GenuineIntel`, for [`rep_good`].
pub const INTEL: [u32; 3] = [0x756e_6547, 0x4965_6e69, 0x6c65_746e];

/// On AMD, the leaf-1 signatures (eax) amd.c marks `REP_GOOD` from:
/// K8 revision C (`0x0f48..0x0f50`) and from `0x0f58` on, which covers
/// every family from 0x10 (init_amd sets it there too).
pub const AMD_REP_GOOD_K8C: (u32, u32) = (0x0f48, 0x0f50);
pub const AMD_REP_GOOD_FROM: u32 = 0x0f58;
/// The Intel family intel.c marks `REP_GOOD` on x86_64.
pub const INTEL_REP_GOOD_FAMILY: u32 = 6;

/// Whether the x86_64 kernel sets `X86_FEATURE_REP_GOOD` on a CPU of this
/// vendor (leaf 0) and leaf-1 signature: AMD by signature (amd.c), Hygon
/// always (hygon.c), Intel family 6 (intel.c; the kernel clears it again
/// when IA32_MISC_ENABLE has fast strings off, which CPUID cannot show).
/// Centaur and Zhaoxin, which set it by their own rules, are not decoded.
pub fn rep_good(vendor: [u32; 3], leaf1_eax: u32) -> bool {
    let id = Cpuid::from_words(1, vendor, leaf1_eax, None);
    if vendor == AMD {
        (AMD_REP_GOOD_K8C.0..AMD_REP_GOOD_K8C.1).contains(&leaf1_eax)
            || leaf1_eax >= AMD_REP_GOOD_FROM
    } else if vendor == ZEN_VENDORS[1].1 {
        true
    } else if vendor == INTEL {
        id.family() == INTEL_REP_GOOD_FAMILY
    } else {
        false
    }
}

/// Whether `f` is one of the Zen generation bits (`zen1`..`zen5`).
pub fn is_zen_generation(f: CpuFeature) -> bool {
    matches!(f.info().detect, Detect::ZenGeneration { .. })
}

/// Whether `f` names CPUs by vendor and family (`zen`, `zen1`..`zen5`)
/// rather than by what an instruction does.
pub fn names_family(f: CpuFeature) -> bool {
    matches!(
        f.info().detect,
        Detect::ZenFamily | Detect::ZenGeneration { .. }
    )
}

/// The Zen generation bit amd.c sets for an AMD `family` and `model`.
pub fn zen_generation(vendor: &str, family: u32, model: u32) -> Option<CpuFeature> {
    if vendor != ZEN_VENDORS[0].0 {
        return None;
    }
    FEATURES.iter().find_map(|i| match i.detect {
        Detect::ZenGeneration { family: f, models }
            if f == family && models.iter().any(|&(lo, hi)| (lo..=hi).contains(&model)) =>
        {
            Some(i.feature)
        }
        _ => None,
    })
}

/// Lowest family the kernel marks `X86_FEATURE_ZEN` (amd.c, hygon.c).
pub const ZEN_FAMILY: u32 = 0x17;
/// CPUID leaf 0 vendor strings (ebx, edx, ecx) that the kernel treats as Zen.
pub const ZEN_VENDORS: &[(&str, [u32; 3])] = &[
    ("AuthenticAMD", [0x6874_7541, 0x6974_6e65, 0x444d_4163]),
    ("HygonGenuine", [0x6f67_7948, 0x6e65_476e, 0x656e_6975]),
];

/// Whether the kernel sets `X86_FEATURE_ZEN` on a CPU with this CPUID
/// vendor string and family.
pub fn is_zen(vendor: &str, family: u32) -> bool {
    family >= ZEN_FAMILY && ZEN_VENDORS.iter().any(|(v, _)| *v == vendor)
}

impl CpuFeature {
    pub fn info(self) -> &'static FeatureInfo {
        FEATURES
            .iter()
            .find(|f| f.feature == self)
            .expect("every feature has a row")
    }
    /// Its bit in the resolver's feature mask.
    pub fn bit(self) -> u32 {
        1 << FEATURES
            .iter()
            .position(|f| f.feature == self)
            .expect("every feature has a row")
    }
    /// The kernel's `X86_FEATURE_*` macro.
    pub fn kernel_macro(self) -> &'static str {
        self.info().kernel
    }
    /// Whether the kernel tree `k` defines the feature's bit.
    pub fn in_tree(self, k: KernelVersion) -> bool {
        k >= self.info().since
    }
    /// The feature the kernel numbers `bit`, if copygen knows it.
    pub fn from_kernel_bit(bit: u16) -> Option<CpuFeature> {
        FEATURES
            .iter()
            .find(|f| f.kernel_bit == bit)
            .map(|f| f.feature)
    }
}

impl CpuCondition {
    /// The resolver's mask of the features the condition names.
    pub fn mask(&self) -> u32 {
        self.require
            .iter()
            .chain(&self.exclude)
            .map(|f| f.bit())
            .sum()
    }
    /// The bits of [`CpuCondition::mask`] that must be set.
    pub fn want(&self) -> u32 {
        self.require.iter().map(|f| f.bit()).sum()
    }
    pub fn holds(&self, found: CpuFeatures) -> bool {
        found.0 & self.mask() == self.want()
    }
    /// The condition in the kernel's bits: `X86_FEATURE_ZEN && X86_FEATURE_ERMS`.
    pub fn kernel_text(&self) -> String {
        self.spelt(CpuFeature::kernel_macro)
    }
}

impl VariantCondition {
    pub fn holds(&self, found: CpuFeatures) -> bool {
        self.any.iter().any(|c| c.holds(found))
    }
    /// The condition in the kernel's bits: `X86_FEATURE_ZEN3 || X86_FEATURE_ZEN4`.
    pub fn kernel_text(&self) -> String {
        self.spelt(CpuFeature::kernel_macro)
    }
}

/// The features of a CPU, as the standalone resolver's mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuFeatures(u32);

impl CpuFeatures {
    pub fn from_list(features: &[CpuFeature]) -> Self {
        CpuFeatures(features.iter().map(|f| f.bit()).sum())
    }
    pub fn has(self, f: CpuFeature) -> bool {
        self.0 & f.bit() != 0
    }
    /// Every subset of `features`, in counting order (the first feature
    /// the lowest bit).
    pub fn subsets(features: &[CpuFeature]) -> impl Iterator<Item = CpuFeatures> + '_ {
        (0..1u32 << features.len()).map(|m| {
            CpuFeatures(
                features
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| m & 1 << i != 0)
                    .map(|(_, f)| f.bit())
                    .sum(),
            )
        })
    }
    /// The features of both.
    pub fn union(self, other: CpuFeatures) -> Self {
        CpuFeatures(self.0 | other.0)
    }
    /// The features of a resolver's mask (bits beyond the table dropped).
    pub fn from_mask(mask: u32) -> Self {
        CpuFeatures(mask & ((1 << FEATURES.len()) - 1))
    }
    /// The resolver's mask.
    pub fn mask(self) -> u32 {
        self.0
    }
    /// Whether a kernel can report these bits together. amd.c sets at
    /// most one Zen generation, and `X86_FEATURE_ZEN` with it
    /// (`init_amd_zen_common()`); it sets `X86_FEATURE_REP_GOOD` on every
    /// family from 0x10 and hygon.c always: a generation implies `zen`, and
    /// `zen` implies `rep_good` (the resolver decodes them alike). Only a
    /// bit cleared by hand (`clearcpuid=`) breaks this; such a CPU may
    /// enter another variant than the resolver picks, still a whole copy.
    pub fn kernel_can_report(self) -> bool {
        let generations = self
            .list()
            .into_iter()
            .filter(|&f| is_zen_generation(f))
            .count();
        generations <= 1
            && (generations == 0 || self.has(CpuFeature::Zen))
            && (!self.has(CpuFeature::Zen) || self.has(CpuFeature::RepGood))
    }
    /// The features present, in table order.
    pub fn list(self) -> Vec<CpuFeature> {
        FEATURES
            .iter()
            .map(|i| i.feature)
            .filter(|&f| self.has(f))
            .collect()
    }
}

impl std::fmt::Display for CpuFeatures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<_> = self.list().iter().map(|x| x.name()).collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(" "))
        }
    }
}

/// The CPUID words copygen reads, and what they decode to. Decoding lives
/// here only: [`Cpuid::host`] reads the running CPU, [`Cpuid::from_words`]
/// takes the words from anywhere (tests, a recorded CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cpuid {
    /// Leaf 0: highest leaf (eax) and vendor (ebx, edx, ecx).
    pub max_leaf: u32,
    pub vendor: [u32; 3],
    /// Leaf 1 eax (family, model, stepping).
    pub leaf1_eax: u32,
    /// Leaf 7 subleaf 0 (ebx, edx), when `max_leaf >= 7`.
    pub leaf7: Option<(u32, u32)>,
}

impl Cpuid {
    pub fn from_words(
        max_leaf: u32,
        vendor: [u32; 3],
        leaf1_eax: u32,
        leaf7: Option<(u32, u32)>,
    ) -> Cpuid {
        Cpuid {
            max_leaf,
            vendor,
            leaf1_eax,
            leaf7: if max_leaf >= 7 { leaf7 } else { None },
        }
    }

    /// The running CPU (leaf 7 read only when leaf 0 reports it).
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    pub fn host() -> Option<Cpuid> {
        #[cfg(target_arch = "x86")]
        use std::arch::x86::__cpuid_count;
        #[cfg(target_arch = "x86_64")]
        use std::arch::x86_64::__cpuid_count;
        let l0 = __cpuid_count(0, 0);
        let l1 = __cpuid_count(1, 0);
        let l7 = (l0.eax >= 7).then(|| {
            let l = __cpuid_count(7, 0);
            (l.ebx, l.edx)
        });
        Some(Cpuid::from_words(
            l0.eax,
            [l0.ebx, l0.edx, l0.ecx],
            l1.eax,
            l7,
        ))
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    pub fn host() -> Option<Cpuid> {
        None
    }

    /// The vendor string (`AuthenticAMD`).
    pub fn vendor_string(&self) -> String {
        let bytes: Vec<u8> = self.vendor.iter().flat_map(|r| r.to_le_bytes()).collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn base_family(&self) -> u32 {
        self.leaf1_eax >> 8 & 0xf
    }

    /// Family: base, plus extended when base is 0xf.
    pub fn family(&self) -> u32 {
        let base = self.base_family();
        if base == 0xf {
            base + (self.leaf1_eax >> 20 & 0xff)
        } else {
            base
        }
    }

    /// Model: with the extended model when the base family is 6 or 0xf.
    pub fn model(&self) -> u32 {
        let eax = self.leaf1_eax;
        if matches!(self.base_family(), 0x6 | 0xf) {
            (eax >> 4 & 0xf) | ((eax >> 16 & 0xf) << 4)
        } else {
            eax >> 4 & 0xf
        }
    }

    pub fn stepping(&self) -> u32 {
        self.leaf1_eax & 0xf
    }

    /// The table's features this CPU has, the way the resolver finds them.
    pub fn features(&self) -> CpuFeatures {
        let mut found = 0;
        for info in FEATURES {
            let has = match info.detect {
                Detect::Leaf7 { reg, bit } => self.leaf7.is_some_and(|(ebx, edx)| {
                    let r = match reg {
                        Leaf7Reg::Ebx => ebx,
                        Leaf7Reg::Edx => edx,
                    };
                    r >> bit & 1 == 1
                }),
                Detect::ZenFamily => {
                    ZEN_VENDORS.iter().any(|(_, v)| *v == self.vendor)
                        && self.family() >= ZEN_FAMILY
                }
                Detect::ZenGeneration { .. } => {
                    zen_generation(&self.vendor_string(), self.family(), self.model())
                        == Some(info.feature)
                }
                Detect::RepGood => rep_good(self.vendor, self.leaf1_eax),
            };
            if has {
                found |= info.feature.bit();
            }
        }
        CpuFeatures(found)
    }
}

/// The running CPU's features, found the way the standalone resolver finds them.
pub fn host_features() -> CpuFeatures {
    Cpuid::host().map(|c| c.features()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_order_is_the_vocabulary_order() {
        let order: Vec<_> = FEATURES.iter().map(|f| f.feature).collect();
        assert_eq!(order, CpuFeature::ALL);
    }

    #[test]
    fn decodes_a_zen4_and_an_old_intel() {
        // EPYC 9004: family 0x19 (0xf + 0xa), model 0x11, ERMS and FSRM.
        let amd = ZEN_VENDORS[0].1;
        let zen4 = Cpuid::from_words(0x10, amd, 0x00a1_0f11, Some((1 << 9, 1 << 4)));
        assert_eq!(
            (zen4.family(), zen4.model(), zen4.stepping()),
            (0x19, 0x11, 1)
        );
        assert_eq!(zen4.vendor_string(), "AuthenticAMD");
        assert_eq!(
            zen4.features().list(),
            [
                CpuFeature::Erms,
                CpuFeature::Fsrm,
                CpuFeature::Zen,
                CpuFeature::Zen4,
                CpuFeature::RepGood
            ]
        );
        // An Intel without leaf 7: the leaf-7 words are ignored.
        let old = Cpuid::from_words(5, INTEL, 0x0000_06f6, Some((!0, !0)));
        assert_eq!(old.vendor_string(), "GenuineIntel");
        assert_eq!((old.family(), old.model()), (6, 0xf));
        assert_eq!(old.features().list(), [CpuFeature::RepGood]);
        // A Pentium 4 (family 0xf): no REP_GOOD on x86_64.
        let p4 = Cpuid::from_words(5, INTEL, 0x0000_0f41, None);
        assert_eq!(p4.features(), CpuFeatures::default());
        // Family 0x15 AMD is not Zen.
        let bulldozer = Cpuid::from_words(0xd, amd, 0x0060_0f20, None);
        assert_eq!(bulldozer.family(), 0x15);
        assert!(!bulldozer.features().has(CpuFeature::Zen));
        assert!(bulldozer.features().has(CpuFeature::RepGood));
        // K8: revision C (0x0f48) has REP_GOOD, revision B (0x0f40) not.
        assert!(rep_good(amd, 0x0000_0f48));
        assert!(!rep_good(amd, 0x0000_0f40));
        assert!(!rep_good(amd, 0x0000_0f50));
        assert!(rep_good(amd, 0x0002_0f32));
    }

    #[test]
    fn every_decoded_cpu_is_one_a_kernel_can_report() {
        let vendors = [AMD, ZEN_VENDORS[1].1, INTEL, [0; 3]];
        for vendor in vendors {
            for ext_family in 0..=0xb {
                for model in 0..=0xffu32 {
                    let eax = ext_family << 20 | (model >> 4) << 16 | 0xf00 | (model & 0xf) << 4;
                    for leaf7 in [(0, 0), (1 << 9, 0), (1 << 9, 1 << 4), (0, 1 << 4)] {
                        let f = Cpuid::from_words(0xd, vendor, eax, Some(leaf7)).features();
                        assert!(f.kernel_can_report(), "{vendor:x?} {eax:#x}: {f}");
                    }
                }
            }
        }
        let of = |l: &[CpuFeature]| CpuFeatures::from_list(l).kernel_can_report();
        use CpuFeature::*;
        assert!(of(&[Zen, RepGood]) && of(&[Zen, Zen2, RepGood]) && of(&[RepGood, Erms]));
        assert!(!of(&[Zen]), "zen without rep_good");
        assert!(!of(&[Zen1, RepGood]), "a generation without zen");
        assert!(!of(&[Zen, Zen1, Zen2, RepGood]), "two generations");
    }

    #[test]
    fn zen_generations_are_amd_c_s_model_ranges() {
        let gen = |f, m| zen_generation("AuthenticAMD", f, m);
        assert_eq!(gen(0x17, 0x01), Some(CpuFeature::Zen1));
        assert_eq!(gen(0x17, 0x31), Some(CpuFeature::Zen2));
        assert_eq!(gen(0x17, 0x8f), None);
        assert_eq!(gen(0x19, 0x01), Some(CpuFeature::Zen3));
        assert_eq!(gen(0x19, 0x11), Some(CpuFeature::Zen4));
        assert_eq!(gen(0x19, 0xb0), None);
        assert_eq!(gen(0x1a, 0x02), Some(CpuFeature::Zen5));
        assert_eq!(gen(0x1a, 0x30), None);
        assert_eq!(zen_generation("HygonGenuine", 0x18, 0x01), None);
        assert!(!CpuFeature::Zen5.in_tree(KernelVersion::V6_1));
        assert!(CpuFeature::Zen4.in_tree(KernelVersion::V6_1));
        assert!(CpuFeature::Zen5.in_tree(KernelVersion::V6_12));
    }
}
