//! This CPU's alias bands: where `rep movsb` has a cliff in
//! `(dst - src) mod 4096`, and how wide it is at each size.
//!
//! [`measure_bands`] times `rep movsb` and a plain register loop at every
//! distance 0..=64 and a few beyond, at sizes from 16 B to 4 KiB
//! ([`BandTable`]). [`detect_bands`] is a function of that table alone (no
//! timing): at each size, a distance is in a cliff when `rep movsb` there
//! costs at least [`SLOW_DISTANCE_RATIO`] times its own cost at distance 0
//! and as much over its median cost past 64 (a CPU whose distance 0 is
//! merely its best, mutually aligned case has no band), *and* more than
//! the register loop at the same distance (a guard could only help there);
//! runs of such distances are bands, split where the level changes by more
//! than [`LEVEL_SPLIT`] (an AMD Zen's 1..15 at 20-30x next to its 16..31 at
//! 2-6x are two bands), and a run narrower than [`MIN_WIDTH`] distances is
//! taken for noise. The bands seen at any size are the guards a candidate
//! may use (`BandSpace`, in the search space, `space.rs`); with none, no
//! candidate has an alias guard. `band_report.rs` says what was found.

use serde::Serialize;

use crate::tools::bench::{self, Subject, Sweep};

/// Sizes the table is measured at (one per size class from 16 B up).
pub const BAND_SIZES: &[usize] = &[16, 64, 256, 1024, 4096];
/// Distances past 64 the table also measures.
pub const FAR_DISTANCES: &[usize] = &[80, 96, 128, 256, 1024, 2061, 4095];
/// `rep movsb` at a distance over its cost at distance 0 (and over its
/// median past 64), from which the distance is slow enough to be in a band.
pub const SLOW_DISTANCE_RATIO: f64 = 1.5;
/// Within one band, the highest ratio over the lowest stays at most this.
pub const LEVEL_SPLIT: f64 = 4.0;
/// The fewest consecutive distances a band has.
pub const MIN_WIDTH: u32 = 2;

/// Every distance the table measures: 0..=64, then [`FAR_DISTANCES`].
pub fn band_distances() -> Vec<usize> {
    (0..=64).chain(FAR_DISTANCES.iter().copied()).collect()
}

/// TSC ticks per call, `[size][distance]`, of `rep movsb` and of the
/// register loop, hot, at `(dst - src) mod 4096` = each distance.
#[derive(Debug, Clone, Serialize)]
pub struct BandTable {
    pub sizes: Vec<usize>,
    /// Ascending; the first is 0.
    pub distances: Vec<usize>,
    pub movsb: Vec<Vec<f64>>,
    pub register_loop: Vec<Vec<f64>>,
}

impl BandTable {
    /// `rep movsb` at 1 KiB with the distance in 1..=15 over its cost at
    /// 0 (the highest of the distances measured there), the figure the
    /// tuned file's comments and the 1..=15 bound have always used.
    pub fn cliff_ratio(&self) -> f64 {
        let Some(s) = self.sizes.iter().position(|&n| n == super::BAND_FROM) else {
            return 1.0;
        };
        let base = self.movsb[s][0].max(1e-9);
        self.distances
            .iter()
            .zip(&self.movsb[s])
            .filter(|(d, _)| (1..=15).contains(*d))
            .map(|(_, t)| t / base)
            .fold(1.0, f64::max)
    }
}

/// One band at one size: distances `lo..=hi`, and what was measured there.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    pub lo: u32,
    pub hi: u32,
    /// `rep movsb` over its cost at distance 0: lowest and highest in the band.
    pub least: f64,
    pub most: f64,
    /// `rep movsb` over the register loop, highest in the band.
    pub vs_loop: f64,
}

/// The bands at one size, and the far distances (past 64) in a cliff.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeBands {
    pub size: usize,
    pub bands: Vec<Band>,
    pub far: Vec<usize>,
    /// Highest `rep movsb` ratio to distance 0 over every distance, and
    /// where (0: none above 1).
    pub worst: f64,
    pub worst_at: usize,
}

/// The bands of `t` at each of its sizes (see the module text).
pub fn detect_bands(t: &BandTable) -> Vec<SizeBands> {
    t.sizes
        .iter()
        .enumerate()
        .map(|(s, &size)| {
            let base = t.movsb[s][0].max(1e-9);
            let ratio = |i: usize| t.movsb[s][i] / base;
            // The level away from any band: the median past 64 (or the
            // cost at 0 when none was measured).
            let mut far_costs: Vec<f64> = (1..t.distances.len())
                .filter(|&i| t.distances[i] > 64)
                .map(|i| t.movsb[s][i])
                .collect();
            far_costs.sort_by(|a, b| a.total_cmp(b));
            let away = if far_costs.is_empty() {
                base
            } else {
                bench::quantile(&far_costs, 0.5).max(base)
            };
            let vs_loop = |i: usize| t.movsb[s][i] / t.register_loop[s][i].max(1e-9);
            let in_cliff = |i: usize| {
                ratio(i) >= SLOW_DISTANCE_RATIO
                    && t.movsb[s][i] / away >= SLOW_DISTANCE_RATIO
                    && vs_loop(i) > 1.0
            };
            let mut bands: Vec<Band> = Vec::new();
            let mut far = Vec::new();
            let mut open: Option<Band> = None;
            let mut last_d = 0usize;
            for i in 1..t.distances.len() {
                let d = t.distances[i];
                if d > 64 {
                    if ratio(i) >= SLOW_DISTANCE_RATIO && vs_loop(i) > 1.0 {
                        far.push(d);
                    }
                    continue;
                }
                let cliff = in_cliff(i);
                let (r, l) = (ratio(i), vs_loop(i));
                if let Some(b) = &mut open {
                    let fits =
                        cliff && d == last_d + 1 && r.max(b.most) / r.min(b.least) <= LEVEL_SPLIT;
                    if fits {
                        b.hi = d as u32;
                        b.least = b.least.min(r);
                        b.most = b.most.max(r);
                        b.vs_loop = b.vs_loop.max(l);
                    } else {
                        bands.extend(open.take());
                    }
                }
                if open.is_none() && cliff {
                    open = Some(Band {
                        lo: d as u32,
                        hi: d as u32,
                        least: r,
                        most: r,
                        vs_loop: l,
                    });
                }
                last_d = d;
            }
            bands.extend(open);
            bands.retain(|b| b.hi - b.lo + 1 >= MIN_WIDTH);
            let (worst, worst_at) = (1..t.distances.len())
                .map(|i| (ratio(i), t.distances[i]))
                .fold((1.0, 0), |a, b| if b.0 > a.0 { b } else { a });
            SizeBands {
                size,
                bands,
                far,
                worst,
                worst_at,
            }
        })
        .collect()
}

/// A plain register loop: 8-byte words, then bytes (what a band guard
/// would send the copy to, in its simplest form).
///
/// # Safety
/// `to` and `from` must be valid for `n` bytes and not overlap.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn register_loop(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
    core::arch::naked_asm!(
        "mov rcx, rdx",
        "shr rcx, 3",
        "jz 3f",
        "2:",
        "mov rax, [rsi]",
        "mov [rdi], rax",
        "add rsi, 8",
        "add rdi, 8",
        "dec rcx",
        "jnz 2b",
        "3:",
        "and edx, 7",
        "jz 5f",
        "4:",
        "mov al, [rsi]",
        "mov [rdi], al",
        "inc rsi",
        "inc rdi",
        "dec edx",
        "jnz 4b",
        "5:",
        "xor eax, eax",
        "ret"
    )
}

/// Measure this CPU's [`BandTable`] (interleaved, median of rounds).
pub fn measure_bands(seed: u64) -> BandTable {
    let distances = band_distances();
    let sweep = Sweep {
        rows: bench::alias_rows(BAND_SIZES, &distances),
        ..Sweep::default()
    };
    let subjects = [
        bench::baseline("rep_movsb").expect("built in"),
        Subject {
            name: "register_loop".into(),
            f: register_loop,
            _owner: None,
        },
    ];
    let opts = bench::BenchOptions {
        repeats: 7,
        target_ticks: 4_000.0,
        seed,
    };
    let res = bench::run_with(&sweep, &subjects, &opts, &|_, _| {});
    let per = distances.len();
    let column = |subject: usize| -> Vec<Vec<f64>> {
        (0..BAND_SIZES.len())
            .map(|s| {
                (0..per)
                    .map(|d| res.cells[s * per + d][subject].cycles)
                    .collect()
            })
            .collect()
    };
    BandTable {
        sizes: BAND_SIZES.to_vec(),
        movsb: column(0),
        register_loop: column(1),
        distances,
    }
}
