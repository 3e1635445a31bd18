//! Workloads drawn from measured size distributions (llvm-libc's format,
//! `generator/distributions/README.md`): sequences of calls whose sizes
//! follow the distribution and whose source and destination sit at
//! independent random page offsets, so `(dst - src) mod 4096` lands in the
//! aliasing band at its natural rate (about 1 call in 270 for 1..=15)
//! unless a share of calls is sent there on purpose.
//!
//! Why a fresh sequence every round: replaying one fixed sequence lets the
//! branch predictor learn it, which flatters branchy code (measured on an
//! AMD EPYC: one strategy at 0.84x `rep movsb` on a replayed sequence,
//! 1.32-1.40x on fresh ones).

use anyhow::{bail, Result};
use serde::Serialize;

use super::Rng;

/// The distributions shipped with copygen (embedded; see their README).
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "MemcpyGoogleA",
        include_str!("../../distributions/MemcpyGoogleA.csv"),
    ),
    (
        "MemcpyGoogleD",
        include_str!("../../distributions/MemcpyGoogleD.csv"),
    ),
    (
        "MemcpyGoogleQ",
        include_str!("../../distributions/MemcpyGoogleQ.csv"),
    ),
    (
        "Uniform384To4096",
        include_str!("../../distributions/Uniform384To4096.csv"),
    ),
];

/// The aliasing band an `alias_share` sends calls into: `(dst - src) mod
/// 4096` in `1..=ALIAS_BAND_MAX`.
pub const ALIAS_BAND_MAX: u32 = 63;

/// Probability of each size `0..len`, normalised.
#[derive(Debug, Clone, Serialize)]
pub struct Distribution {
    pub name: String,
    #[serde(skip)]
    pub probability: Vec<f64>,
    /// Cumulative probability up to and including each size.
    #[serde(skip)]
    cumulative: Vec<f64>,
    pub mean: f64,
    pub max_size: usize,
}

impl Distribution {
    /// Parse llvm-libc's format: one line of comma-separated non-negative
    /// weights, the value at index `i` for a copy of `i` bytes. Errors name
    /// `origin`, the line and the column.
    pub fn parse(name: &str, origin: &str, text: &str) -> Result<Distribution> {
        let mut weights = Vec::new();
        // The running sum: a sum that overflows is refused where it does,
        // not turned into probabilities of 0 (and a mean of 0 B).
        let mut total = 0.0f64;
        let mut lines = 0;
        for (ln, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            lines += 1;
            if lines > 1 {
                bail!(
                    "{origin}:{}:1: error: a distribution is one line of comma-separated weights",
                    ln + 1
                );
            }
            let mut col = 1;
            for field in line.split(',') {
                let t = field.trim();
                let w: f64 = t.parse().map_err(|_| {
                    anyhow::anyhow!(
                        "{origin}:{}:{col}: error: `{t}` (weight of size {}) is not a number",
                        ln + 1,
                        weights.len()
                    )
                })?;
                if !w.is_finite() || w < 0.0 {
                    bail!(
                        "{origin}:{}:{col}: error: weight of size {} is {t}; weights are finite and not negative",
                        ln + 1,
                        weights.len()
                    );
                }
                total += w;
                if !total.is_finite() {
                    bail!(
                        "{origin}:{}:{col}: error: weight of size {} brings the sum of the weights past the largest number ({:e}): scale the weights down (only their ratios matter)",
                        ln + 1,
                        weights.len(),
                        f64::MAX
                    );
                }
                weights.push(w);
                col += field.len() + 1;
            }
        }
        if total <= 0.0 {
            bail!("{origin}: error: no size has a positive weight");
        }
        let probability: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let mut acc = 0.0;
        let cumulative = probability
            .iter()
            .map(|p| {
                acc += p;
                acc
            })
            .collect();
        let mean = probability
            .iter()
            .enumerate()
            .map(|(i, p)| i as f64 * p)
            .sum();
        let max_size = probability.iter().rposition(|&p| p > 0.0).unwrap_or(0);
        Ok(Distribution {
            name: name.to_string(),
            probability,
            cumulative,
            mean,
            max_size,
        })
    }

    /// A built-in distribution by name (`MemcpyGoogleA`), or a file.
    pub fn load(arg: &str) -> Result<Distribution> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == arg) {
            return Distribution::parse(name, &format!("{name}.csv"), text);
        }
        let path = std::path::Path::new(arg);
        let text = crate::input::read_string(path).map_err(|e| {
            anyhow::anyhow!(
                "{arg}: error: {e} (built-in distributions: {})",
                BUILTIN.iter().map(|b| b.0).collect::<Vec<_>>().join(", ")
            )
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| arg.to_string());
        Distribution::parse(&name, arg, &text)
    }

    /// The size whose cumulative probability first reaches `u` in `[0, 1)`.
    pub fn size_at(&self, u: f64) -> usize {
        self.cumulative
            .partition_point(|&c| c <= u)
            .min(self.max_size)
    }

    /// Share of the probability on sizes `lo..=hi`.
    pub fn share(&self, lo: usize, hi: usize) -> f64 {
        self.probability
            .iter()
            .enumerate()
            .filter(|(i, _)| (lo..=hi).contains(i))
            .map(|(_, p)| p)
            .sum()
    }
}

/// One call of a sequence: `n` bytes from `src + src_off` to `dst + dst_off`
/// (both bases page-aligned, offsets below 4096).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    pub n: u32,
    pub src_off: u16,
    pub dst_off: u16,
}

impl Call {
    /// `(dst - src) mod 4096`.
    pub fn alias(&self) -> u32 {
        (self.dst_off as u32 + 4096 - self.src_off as u32) % 4096
    }
}

/// `calls` calls with sizes from `d` and independent uniform page offsets;
/// a share `alias_share` of them instead gets a destination at a distance
/// drawn uniformly from the band `1..=ALIAS_BAND_MAX`.
pub fn sequence(d: &Distribution, calls: usize, alias_share: f64, rng: &mut Rng) -> Vec<Call> {
    (0..calls)
        .map(|_| {
            let n = d.size_at(rng.uniform()) as u32;
            let src_off = (rng.next_u64() % 4096) as u16;
            let dst_off = if alias_share > 0.0 && rng.uniform() < alias_share {
                let band = 1 + (rng.next_u64() % ALIAS_BAND_MAX as u64) as u16;
                (src_off + band) % 4096
            } else {
                (rng.next_u64() % 4096) as u16
            };
            Call {
                n,
                src_off,
                dst_off,
            }
        })
        .collect()
}
