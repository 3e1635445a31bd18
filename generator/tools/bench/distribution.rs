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
use crate::tools::trace::{csv_fields, Call};

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
            for (col, field) in csv_fields(line) {
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

/// Where the pointers of a distribution's calls sit in their pages
/// (`--pointers`); see `docs/benchmarking.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pointers {
    /// Source and destination at independent uniform page offsets, 0..=4095.
    #[default]
    Uniform,
    /// Both buffers from glibc's `malloc`, a block as large as the copy:
    /// below the mmap threshold (128 KiB) a heap chunk, whose user pointer
    /// is `MALLOC_ALIGNMENT` (16) aligned, at a uniform 16-aligned page
    /// offset; from 128 KiB an `mmap`'d chunk, page-aligned with its
    /// 16-byte header first, so the user pointer is at page offset 16.
    Malloc,
    /// A `read()` from the page cache: the source (the kernel's page-cache
    /// page) at page offset 0, the destination a `malloc` block as above,
    /// so `(dst - src) mod 4096` is 16 from 128 KiB.
    PageCache,
}

/// glibc's default `M_MMAP_THRESHOLD` (`DEFAULT_MMAP_THRESHOLD_MIN`): blocks
/// this large or larger come from `mmap`.
pub const MMAP_THRESHOLD: usize = 128 << 10;
/// glibc's `MALLOC_ALIGNMENT` on x86_64 (and the mmap'd chunk's header,
/// `2 * SIZE_SZ`, on 64-bit): where an mmap'd block's user pointer starts.
pub const MALLOC_ALIGNMENT: u16 = 16;

impl Pointers {
    pub const NAMES: &'static [&'static str] = &["uniform", "malloc", "page-cache"];

    pub fn parse(s: &str) -> Option<Pointers> {
        match s {
            "uniform" => Some(Pointers::Uniform),
            "malloc" => Some(Pointers::Malloc),
            "page-cache" => Some(Pointers::PageCache),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pointers::Uniform => "uniform",
            Pointers::Malloc => "malloc",
            Pointers::PageCache => "page-cache",
        }
    }

    /// The rule in words, for titles.
    pub fn rule(self) -> &'static str {
        match self {
            Pointers::Uniform => "src and dst at independent random page offsets",
            Pointers::Malloc => "src and dst glibc malloc blocks (16-aligned random page offsets; from 128 KiB mmap'd, at page offset 16)",
            Pointers::PageCache => "src a page-cache page (offset 0), dst a glibc malloc block (16-aligned; from 128 KiB at offset 16)",
        }
    }

    /// The source's page offset for a call of `n` bytes.
    pub fn src(self, n: usize, rng: &mut Rng) -> u16 {
        match self {
            Pointers::Uniform => (rng.next_u64() % 4096) as u16,
            Pointers::Malloc => malloc_offset(n, rng),
            Pointers::PageCache => 0,
        }
    }

    /// The destination's page offset for a call of `n` bytes.
    pub fn dst(self, n: usize, rng: &mut Rng) -> u16 {
        match self {
            Pointers::Uniform => (rng.next_u64() % 4096) as u16,
            Pointers::Malloc | Pointers::PageCache => malloc_offset(n, rng),
        }
    }
}

/// The page offset of a glibc `malloc(n)` block's user pointer.
pub fn malloc_offset(n: usize, rng: &mut Rng) -> u16 {
    if n >= MMAP_THRESHOLD {
        MALLOC_ALIGNMENT
    } else {
        (rng.next_u64() % (4096 / MALLOC_ALIGNMENT as u64)) as u16 * MALLOC_ALIGNMENT
    }
}

/// `calls` calls with sizes from `d` and page offsets by `pointers`; a
/// share `alias_share` of them instead gets a destination at a distance
/// drawn uniformly from the band `1..=ALIAS_BAND_MAX`.
pub fn sequence(d: &Distribution, calls: usize, alias_share: f64, rng: &mut Rng) -> Vec<Call> {
    sequence_with(d, calls, alias_share, Pointers::Uniform, rng)
}

/// [`sequence`] with a pointer model.
pub fn sequence_with(
    d: &Distribution,
    calls: usize,
    alias_share: f64,
    pointers: Pointers,
    rng: &mut Rng,
) -> Vec<Call> {
    (0..calls)
        .map(|_| {
            let n = d.size_at(rng.uniform()) as u32;
            let src_off = pointers.src(n as usize, rng);
            let dst_off = if alias_share > 0.0 && rng.uniform() < alias_share {
                let band = 1 + (rng.next_u64() % ALIAS_BAND_MAX as u64) as u16;
                (src_off + band) % 4096
            } else {
                pointers.dst(n as usize, rng)
            };
            Call {
                n,
                src_off,
                dst_off,
            }
        })
        .collect()
}
