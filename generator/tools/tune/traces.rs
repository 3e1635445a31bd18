//! Workload traces in a tune (`--workload`, `--check-workload`): each
//! trace replayed as `copygen bench --workload` replays it (recorded
//! order, recorded page offsets, a fresh segment each round), every
//! candidate against `rep movsb` in the same rounds, or, with `--site
//! kernel`, its call site against the stock kernel's (`kernel.rs`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::tools::bench::{self, Replay, ReplayResults, Subject};
use crate::tools::trace::Trace;

/// Calls per replayed segment while screening and confirming.
pub const SEGMENT_CALLS: usize = 2048;

/// The replays of `traces`, segments of at most [`SEGMENT_CALLS`] (the
/// final report uses [`bench::DEFAULT_CALLS`]).
pub fn replays(traces: &[Trace], calls: usize) -> Vec<Replay> {
    traces
        .iter()
        .map(|t| Replay::new(t.clone(), calls, bench::DEFAULT_WORKING_SET))
        .collect()
}

/// Per subject after the first (`rep movsb`), per replay: the median over
/// rounds of its ratio to `subjects[0]`.
pub fn trace_ratios(
    replays: &[Replay],
    subjects: &[Subject],
    repeats: usize,
    seed: u64,
) -> Vec<Vec<f64>> {
    ratios_by(replays, subjects.len(), repeats, seed, &|r, opts| {
        bench::replay_rounds(r, subjects, opts)
    })
}

/// [`trace_ratios`] of `n` subjects whose rounds `rounds` measures (the
/// first the baseline).
pub fn ratios_by(
    replays: &[Replay],
    n: usize,
    repeats: usize,
    seed: u64,
    rounds: &dyn Fn(&Replay, &bench::BenchOptions) -> Vec<Vec<f64>>,
) -> Vec<Vec<f64>> {
    let per_replay: Vec<Vec<Vec<f64>>> = replays
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let opts = bench::BenchOptions {
                repeats,
                seed: seed.wrapping_add(i as u64),
                ..bench::BenchOptions::default()
            };
            rounds(r, &opts)
        })
        .collect();
    (1..n)
        .map(|s| {
            per_replay
                .iter()
                .map(|rounds| bench::round_ratio(rounds, s, 0))
                .collect()
        })
        .collect()
}

/// One trace of the final report.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// Tuned on (`--workload`), or only checked (`--check-workload`).
    pub tuned_on: bool,
    /// Subject index of the tuned strategy in `results`.
    pub subject: usize,
    /// Subject index of the baseline timed again (the A/A control).
    pub control: usize,
    pub results: ReplayResults,
}

impl TraceReport {
    /// The tuned strategy over the baseline (`rep movsb`, or the stock site).
    pub fn ratio(&self) -> f64 {
        self.results.ratio(self.subject)
    }

    /// The baseline's own code over the baseline: the replay's noise.
    pub fn control_ratio(&self) -> f64 {
        self.results.ratio(self.control)
    }
}

/// The final replay of each trace: `subjects` (rep movsb first; the tuned
/// strategy and the control at `(tuned, control)`), full replays with the
/// size x distance table.
pub fn final_reports(
    tuned_on: &[Trace],
    checked: &[Trace],
    subjects: &[Subject],
    tuned_and_control: (usize, usize),
    seed: u64,
) -> Vec<TraceReport> {
    final_reports_by(tuned_on, checked, tuned_and_control, seed, &|r, opts| {
        let mut results = bench::run_replay(r, subjects, opts, &|_, _| {});
        results.baseline = 0;
        results
    })
}

/// [`final_reports`] with the replay `replay` runs (its baseline set).
pub fn final_reports_by(
    tuned_on: &[Trace],
    checked: &[Trace],
    (tuned, control): (usize, usize),
    seed: u64,
    replay: &dyn Fn(&Replay, &bench::BenchOptions) -> ReplayResults,
) -> Vec<TraceReport> {
    let opts = bench::BenchOptions {
        repeats: 9,
        seed,
        ..bench::BenchOptions::default()
    };
    tuned_on
        .iter()
        .map(|t| (true, t))
        .chain(checked.iter().map(|t| (false, t)))
        .map(|(on, t)| {
            let r = Replay::new(t.clone(), bench::DEFAULT_CALLS, bench::DEFAULT_WORKING_SET);
            TraceReport {
                tuned_on: on,
                subject: tuned,
                control,
                results: replay(&r, &opts),
            }
        })
        .collect()
}

/// The report's section on the traces (empty without any).
pub fn traces_text(reports: &[TraceReport], strategy: &str) -> String {
    let mut out = String::new();
    if reports.is_empty() {
        return out;
    }
    let base = &reports[0].results;
    let _ = writeln!(
        out,
        "\nWorkload traces, `{strategy}` against {} (replayed in the recorded order at the recorded page offsets, median of rounds; control: `{}`, the baseline's code again):",
        base.figures[base.baseline].subject,
        base.figures[reports[0].control].subject
    );
    for (label, on) in [
        ("tuned on", true),
        ("not tuned on (--check-workload)", false),
    ] {
        let of: Vec<&TraceReport> = reports.iter().filter(|r| r.tuned_on == on).collect();
        if of.is_empty() {
            continue;
        }
        let _ = writeln!(out, "  {label}:");
        for r in of {
            let res = &r.results;
            let _ = writeln!(
                out,
                "    {} ({} calls): {:.2}x ({:.1} vs {:.1} ticks per call); control {:.2}x",
                res.replay.trace.origin,
                res.replay.trace.calls.len(),
                r.ratio(),
                res.figures[r.subject].ticks,
                res.figures[res.baseline].ticks,
                r.control_ratio()
            );
        }
    }
    out
}

/// Comment lines of the tuned file: each trace's ratio.
pub fn trace_comments(reports: &[TraceReport]) -> Vec<String> {
    reports
        .iter()
        .map(|r| {
            format!(
                "  trace {:<12} {:.2}x{}",
                r.results.replay.trace.origin,
                r.ratio(),
                if r.tuned_on { "" } else { "  (not tuned on)" }
            )
        })
        .collect()
}
