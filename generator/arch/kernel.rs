//! Kernel-version facts: the one table of what differs between the kernel
//! trees copygen targets (`[linux] kernel`, [`KernelVersion`]) and the
//! releases where those differences begin.

use std::fmt;

use crate::front::strategy::KernelVersion;

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
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// 6.4 removed `EX_TYPE_COPY` (`_ASM_EXTABLE_CPY`) and moved x86_64's
/// copies to `rep_movs_alternative`, called with STAC already done.
pub const EX_TYPE_COPY_REMOVED: Release = Release::new(6, 4);

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
    }
}
