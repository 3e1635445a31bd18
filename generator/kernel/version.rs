//! The kernel trees copygen targets (`[linux] kernel`, [`KernelVersion`]),
//! the one table of what differs between them, and the releases where
//! those differences begin. The strategy types name [`KernelVersion`], so
//! this module is of their stage (0).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::front::strategy::Arch;

/// A kernel layout the linux flavour is written for (file conventions and
/// call sites differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
pub enum KernelVersion {
    /// 6.1 LTS: `<asm/export.h>` in assembly; x86_64 `copy_user_generic()`
    /// picks a `copy_user_*` routine that does its own STAC/CLAC.
    #[serde(rename = "6.1")]
    V6_1,
    /// 6.12 LTS: `<linux/export.h>` in assembly; x86_64 calls
    /// `rep_movs_alternative` with STAC/CLAC in the caller.
    #[serde(rename = "6.12")]
    V6_12,
}

impl KernelVersion {
    pub const ALL: [KernelVersion; 2] = [KernelVersion::V6_1, KernelVersion::V6_12];
    pub fn name(self) -> &'static str {
        match self {
            KernelVersion::V6_1 => "6.1",
            KernelVersion::V6_12 => "6.12",
        }
    }
    pub fn parse(s: &str) -> Option<KernelVersion> {
        KernelVersion::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// A kernel release, `major.minor`, ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    pub major: u8,
    pub minor: u8,
}

impl Release {
    pub const fn new(major: u8, minor: u8) -> Release {
        Release { major, minor }
    }

    /// `KERNEL_VERSION(major, minor, 0)`'s arguments, as C writes them.
    pub fn c_args(self) -> String {
        format!("{}, {}, 0", self.major, self.minor)
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// 6.4 removed `EX_TYPE_COPY` (`_ASM_EXTABLE_CPY`) and moved x86_64's
/// copies to `rep_movs_alternative`, which `copy_user_generic()` calls
/// (out of line, STAC already done) on CPUs without FSRM.
pub const EX_TYPE_COPY_REMOVED: Release = Release::new(6, 4);

/// 6.5 moved `EXPORT_SYMBOL` in assembly from `<asm/export.h>` to
/// `<linux/export.h>`.
pub const EXPORT_H_MOVED: Release = Release::new(6, 5);

/// The block of a file for every tree (`[linux] kernel` unset) that only
/// kernels before a release keep: 6.1's `_ASM_EXTABLE_CPY` half. `None`
/// for a file for one tree, which has it or not as a whole.
pub fn extable_copy_only_before(kernel: Option<KernelVersion>) -> Option<Release> {
    kernel.is_none().then_some(EX_TYPE_COPY_REMOVED)
}

/// Whether a file for `kernel` (`None`: every tree) may use, and on
/// x86_64 defaults to, `_ASM_EXTABLE_CPY`.
pub fn may_use_extable_copy(kernel: Option<KernelVersion>) -> bool {
    kernel.is_none_or(KernelVersion::has_extable_copy)
}

impl KernelVersion {
    /// The release of this tree.
    pub fn release(self) -> Release {
        match self {
            KernelVersion::V6_1 => Release::new(6, 1),
            KernelVersion::V6_12 => Release::new(6, 12),
        }
    }

    /// Whether the tree still has `EX_TYPE_COPY` (`_ASM_EXTABLE_CPY`).
    pub fn has_extable_copy(self) -> bool {
        self.release() < EX_TYPE_COPY_REMOVED
    }

    /// Whether x86_64's `copy_user_generic()` calls `rep_movs_alternative`
    /// (with STAC done, on CPUs without FSRM) rather than inlining a copy
    /// routine of its own choosing.
    pub fn x86_64_calls_rep_movs_alternative(self) -> bool {
        self.release() >= EX_TYPE_COPY_REMOVED
    }

    /// The header that declares `EXPORT_SYMBOL` for assembly.
    pub fn export_header(self, arch: Arch) -> &'static str {
        if self.release() < EXPORT_H_MOVED {
            export_header_before_move(arch)
        } else {
            "linux/export.h"
        }
    }
}

/// Before [`EXPORT_H_MOVED`]: `<asm/export.h>`, except on RISC-V, which has
/// none (6.1's arch/riscv/lib/uaccess.S includes `<asm-generic/export.h>`).
pub fn export_header_before_move(arch: Arch) -> &'static str {
    match arch {
        Arch::Riscv64 => "asm-generic/export.h",
        _ => "asm/export.h",
    }
}

/// The tree a file for both kernel versions is modelled on where one must
/// be chosen (the JIT, the shim headers): the oldest.
pub const MODELLED: KernelVersion = KernelVersion::V6_1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_ordered_and_only_6_1_has_the_copy_extable() {
        assert!(Release::new(6, 4) < Release::new(6, 12));
        assert!(Release::new(6, 1) < EX_TYPE_COPY_REMOVED);
        assert!(KernelVersion::V6_1.has_extable_copy());
        assert!(!KernelVersion::V6_12.has_extable_copy());
        assert_eq!(EX_TYPE_COPY_REMOVED.to_string(), "6.4");
        assert_eq!(EX_TYPE_COPY_REMOVED.c_args(), "6, 4, 0");
        assert!(!KernelVersion::V6_1.x86_64_calls_rep_movs_alternative());
        assert!(KernelVersion::V6_12.x86_64_calls_rep_movs_alternative());
        assert_eq!(
            KernelVersion::V6_1.export_header(Arch::X86_64),
            "asm/export.h"
        );
        assert_eq!(
            KernelVersion::V6_1.export_header(Arch::Riscv64),
            "asm-generic/export.h"
        );
        assert_eq!(
            KernelVersion::V6_12.export_header(Arch::Riscv64),
            "linux/export.h"
        );
    }

    #[test]
    fn a_file_for_every_tree_keeps_the_copy_extable_for_old_ones_only() {
        assert_eq!(extable_copy_only_before(None), Some(EX_TYPE_COPY_REMOVED));
        assert_eq!(extable_copy_only_before(Some(KernelVersion::V6_1)), None);
        assert!(may_use_extable_copy(None));
        assert!(may_use_extable_copy(Some(KernelVersion::V6_1)));
        assert!(!may_use_extable_copy(Some(KernelVersion::V6_12)));
    }
}
