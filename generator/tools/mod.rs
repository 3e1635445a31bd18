//! Tools over the stages: `copygen diff`, benchmarks, tuning, recording,
//! kernel patches.
//!
//! A tool (`diff`, `kernel_patch`, `record`, `tune`) names no other tool;
//! what two tools share lives in a shared module they both use, and a
//! shared module names no tool (`tests/stage_order.rs` checks both):
//! `bench` (subjects, the timing loop and its results: `copygen bench`,
//! `tune` and `diff --bench` measure with it), `trace` (the workload trace
//! format `record` writes and `bench` and `tune` replay), `host_cpu` (the
//! CPU the figures come from) and `mail_text` (lines laid out for a patch
//! mail).

pub mod bench;
pub mod diff;
pub mod host_cpu;
pub mod kernel_patch;
pub mod mail_text;
pub mod record;
pub mod trace;
pub mod tune;
