//! Measuring candidates: the sweep (distributions, then the fixed-size x
//! alias grid), the per-round ratios and the [`Score`] the search minimises.

use std::path::Path;

use serde::Serialize;

use super::{Candidate, CandidateBase, BAND_BOUND, BAND_FROM, BOUND};
use crate::front::strategy::Strategy;
use crate::tools::bench::{self, distribution::Distribution, Results, Subject, Sweep};

// ---- measuring -------------------------------------------------------------------

/// Distances `(dst - src) mod 4096` of the grid: the band's edges, its
/// neighbours, and a far misaligned one.
pub const GRID_ALIAS: &[usize] = &[0, 1, 8, 15, 16, 24, 31, 32, 48, 63, 64, 2061];
pub const GRID_SIZES: &[usize] = &[
    0, 1, 2, 3, 4, 7, 8, 12, 15, 16, 24, 31, 32, 48, 63, 64, 65, 96, 127, 128, 192, 255, 256, 384,
    511, 512, 768, 1023, 1024, 1536, 2048, 3072, 4095, 4096,
];
/// The smaller grid each candidate is screened on.
pub(super) const QUICK_ALIAS: &[usize] = &[0, 1, 15, 16, 31, 32, 63, 2061];
pub(super) const QUICK_SIZES: &[usize] = &[
    0, 3, 8, 15, 16, 31, 48, 64, 65, 100, 128, 256, 511, 1024, 2048, 4096,
];

/// Distribution rows (series "workloads") then the grid's alias rows.
pub fn tune_sweep(dists: &[Distribution], sizes: &[usize], alias: &[usize], calls: usize) -> Sweep {
    let mut rows = bench::distribution_rows(dists);
    for r in &mut rows {
        r.series = "workloads".into();
    }
    rows.extend(bench::alias_rows(sizes, alias));
    Sweep {
        name: "tune".into(),
        title: "copygen tune: sizes from distributions (random page offsets, fresh sequence each round) and the fixed-size x (dst - src) mod 4096 grid".into(),
        x_label: "(dst - src) mod 4096".into(),
        rows,
        distributions: dists.to_vec(),
        calls,
        ..Sweep::default()
    }
}

/// Per row: the median over rounds of `subject / baseline` in the same round.
pub fn round_ratios(res: &Results, subject: usize) -> Vec<f64> {
    (0..res.sweep.rows.len())
        .map(|r| {
            let (a, b) = (
                &res.cells[r][subject].rounds,
                &res.cells[r][res.baseline].rounds,
            );
            let mut v: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y.max(1e-9)).collect();
            v.sort_by(|x, y| x.total_cmp(y));
            bench::quantile(&v, 0.5)
        })
        .collect()
}

/// How one subject did in one run, against `rep movsb`.
#[derive(Debug, Clone, Serialize)]
pub struct Score {
    /// Per tuned distribution: ratio to `rep movsb`.
    pub distributions: Vec<f64>,
    /// Per tuned workload trace: ratio to `rep movsb` (replayed).
    pub traces: Vec<f64>,
    /// Worst grid cell: ratio, size, distance.
    pub worst: (f64, usize, usize),
    /// Worst cell inside the band from 1 KiB (when the CPU has the cliff).
    pub worst_band: Option<(f64, usize, usize)>,
    /// Bound violations, summed excess.
    pub excess: f64,
    /// The objective (lower is better).
    pub objective: f64,
}

impl Score {
    pub fn feasible(&self) -> bool {
        self.excess == 0.0
    }
}

/// Score `subject` of `res` (rows from [`tune_sweep`]; the first
/// `tuned` distribution rows count in the objective).
///
/// The objective: the mean ratio over the distributions, plus the worst
/// one's excess over 1.00 (every distribution has the target, so one bad
/// workload is not averaged away), plus 4x the mean excess of the grid's
/// cells over [`BOUND`] (a normalised sum: a guard that costs a few
/// percent at every short size weighs like one cell far over), plus 4x the
/// summed excess of band cells over [`BAND_BOUND`] on a CPU with the cliff.
pub fn score(res: &Results, subject: usize, tuned: usize, cliff: bool) -> Score {
    score_with(res, subject, tuned, cliff, &[])
}

/// [`score`] with the ratios of the tuned workload traces as objectives
/// beside the distributions: the mean and the worst run over both.
pub fn score_with(
    res: &Results,
    subject: usize,
    tuned: usize,
    cliff: bool,
    traces: &[f64],
) -> Score {
    let ratios = round_ratios(res, subject);
    let mut distributions = Vec::new();
    let mut worst = (0.0, 0, 0);
    let mut worst_band: Option<(f64, usize, usize)> = None;
    let (mut grid_excess, mut cells, mut band_excess) = (0.0, 0, 0.0);
    for (r, row) in res.sweep.rows.iter().enumerate() {
        let q = ratios[r];
        if let Some(d) = row.dist {
            if d < tuned {
                distributions.push(q);
            }
            continue;
        }
        let d = row.x as usize;
        if q > worst.0 {
            worst = (q, row.n, d);
        }
        grid_excess += (q - BOUND).max(0.0);
        cells += 1;
        if cliff && row.n >= BAND_FROM && (1..=15).contains(&d) {
            if worst_band.is_none_or(|w| q > w.0) {
                worst_band = Some((q, row.n, d));
            }
            band_excess += (q - BAND_BOUND).max(0.0);
        }
    }
    let all = || distributions.iter().chain(traces);
    let n = all().count().max(1) as f64;
    let mean = all().sum::<f64>() / n;
    let worst_dist = all().copied().fold(1.0, f64::max);
    let grid = grid_excess / cells.max(1) as f64;
    Score {
        objective: mean + (worst_dist - 1.0) + 4.0 * grid + 4.0 * band_excess,
        distributions,
        traces: traces.to_vec(),
        worst,
        worst_band,
        excess: grid_excess + band_excess,
    }
}

/// A candidate compiled for timing, or `None` when it cannot be. The
/// candidate is built as a value and written by the strategy writer; its
/// text goes through the validator, the one way to a validated strategy
/// (and the text the emitted header restates).
pub(super) fn compile(c: &Candidate, header: &CandidateBase) -> Option<(Strategy, Subject)> {
    let text = c.toml(header);
    let s = crate::front::parse::parse(Path::new("tuned.toml"), &text, None).ok()?;
    let subject = bench::strategy_subject(&s).ok()?;
    Some((s, subject))
}
