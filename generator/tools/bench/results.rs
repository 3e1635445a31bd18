//! The figures: each (row, subject) cell's rounds summarised (median,
//! quartiles, extremes) and the results of a run.

use serde::Serialize;

use super::sweep::Sweep;

/// One (row, subject) figure over the rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub row: usize,
    pub subject: usize,
    /// Median TSC ticks per call.
    pub cycles: f64,
    /// First and third quartile of the rounds.
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    /// Calls per round.
    pub iterations: u32,
    /// Ticks per call in each round, in round order.
    #[serde(skip)]
    pub rounds: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub sweep: Sweep,
    pub subjects: Vec<String>,
    /// The subject the ratio columns divide by.
    pub baseline: usize,
    pub repeats: usize,
    pub tsc_hz: f64,
    pub cpu: String,
    /// What was run (the command line), for titles.
    pub command: String,
    /// `cells[row][subject]`
    pub cells: Vec<Vec<Measurement>>,
}

impl Results {
    /// `cells[row][subject]` over the baseline's figure of the same row.
    pub fn ratio(&self, row: usize, subject: usize) -> f64 {
        self.cells[row][subject].cycles / self.cells[row][self.baseline].cycles
    }
}

/// The default ratio baseline: `rep_movsb` when it is a subject (what the
/// kernel runs on FSRM CPUs), else the first subject that is not the
/// system-call figure, else the first.
pub fn default_baseline(subjects: &[String]) -> usize {
    subjects
        .iter()
        .position(|s| s == "rep_movsb")
        .or_else(|| subjects.iter().position(|s| s != "kernel_read"))
        .unwrap_or(0)
}

/// Linear-interpolated quantile of sorted, non-empty `v`.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < v.len() {
        v[i] * (1.0 - frac) + v[i + 1] * frac
    } else {
        v[i]
    }
}

/// Each cell's rounds (`samples[row][subject]`) summarised: median,
/// quartiles and extremes, with the calls each round timed.
pub(crate) fn measurements(
    samples: Vec<Vec<Vec<f64>>>,
    iters: &[Vec<u32>],
) -> Vec<Vec<Measurement>> {
    samples
        .into_iter()
        .enumerate()
        .map(|(r, per_subject)| {
            per_subject
                .into_iter()
                .enumerate()
                .map(|(s, rounds)| {
                    let mut v = rounds.clone();
                    v.sort_by(|a, b| a.total_cmp(b));
                    Measurement {
                        row: r,
                        subject: s,
                        cycles: quantile(&v, 0.5),
                        q1: quantile(&v, 0.25),
                        q3: quantile(&v, 0.75),
                        min: v[0],
                        max: v[v.len() - 1],
                        iterations: iters[r][s],
                        rounds,
                    }
                })
                .collect()
        })
        .collect()
}
