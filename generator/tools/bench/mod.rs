//! Benchmarks: time copy routines (JIT-compiled strategies and built-in
//! baselines) in the same run, over the sweeps the kernel threads' tables used.
//!
//! The clock is the TSC (`rdtsc`): a constant-rate reference clock, not
//! core cycles (these VMs have no performance counters). Each figure is the
//! median over `repeats` rounds; in every round all (row, subject) pairs
//! are measured in a freshly shuffled order, so drift (frequency, noisy
//! neighbours) spreads over all subjects instead of favouring one. A
//! fixed-size figure is timed from a JIT-compiled calling loop, a different
//! one each round ([`callers`]: the code around a short `rep movsb` moves
//! its cost by several percent either way), so its median is one over
//! calling contexts too.
//!
//! One file per job: `subject.rs` and `baselines.rs` what is timed,
//! `sweep.rs` what is measured (`distribution.rs` the size distributions),
//! `clock.rs` the TSC, `buffers.rs` the memory, `callers.rs` the calling
//! loops, `timing.rs` the timing loop, `rng.rs` the random order and
//! sequences, `results.rs` the figures, `report.rs` and `plot.rs` how they
//! are shown; `replay.rs` and `placement.rs` replay a workload trace
//! (`tools::trace`), `variant.rs` picks a per-CPU variant, `site.rs` and
//! `stock.rs` time kernel call sites.
//!
//! A shared module: `copygen bench`, `tune` and `diff --bench` all
//! measure with it.

mod baselines;
mod buffers;
mod callers;
mod clock;
pub mod distribution;
pub mod placement;
pub mod plot;
mod replay;
mod report;
mod results;
mod rng;
pub mod site;
pub mod stock;
mod subject;
mod sweep;
mod timing;
mod variant;

pub use baselines::{baseline, rep_movsb, rep_movsq, BASELINES};
pub use clock::tsc_hz;
pub use plot::plot_svg;
pub use replay::{
    replay_rounds, replay_rounds_sites, round_ratio, run_replay, run_replay_sites, Replay,
    ReplayFigure, ReplayResults, DEFAULT_WORKING_SET, MIN_CELL_CALLS,
};
pub use report::{google_benchmark_json, text_table};
pub use results::{default_baseline, quantile, Measurement, Results};
pub use rng::Rng;
pub use subject::{jit_subject, kernel_subject, strategy_subject, CopyFn, Subject};
pub use sweep::{
    alias_offsets, alias_rows, custom, distribution_rows, distribution_sweep,
    distribution_sweep_with, parse_list, parse_list_bounded, table, Sweep, SweepRow, DEFAULT_CALLS,
    MAX_LIST,
};
pub use timing::{round_sequences, run, run_with, BenchOptions};
pub use variant::{bench_variant, variant_subject};
