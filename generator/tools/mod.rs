//! Tools over the stages: `copygen diff`, benchmarks, tuning, kernel patches.

pub mod bench;
pub mod diff;
pub mod kernel_patch;
pub mod record;
pub mod tune;
