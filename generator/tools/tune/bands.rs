//! This CPU's alias bands: where `rep movsb` has a cliff in
//! `(dst - src) mod 4096`, how wide it is at each size, and the guard
//! space the search draws from.
//!
//! [`measure_bands`] times `rep movsb` and a plain register loop at every
//! distance 0..=64 and a few beyond, at sizes from 16 B to 4 KiB
//! ([`BandTable`]). [`detect_bands`] is a function of that table alone (no
//! timing): at each size, a distance is in a cliff when `rep movsb` there
//! costs at least [`CLIFF_MIN`] times its own cost at distance 0 and as
//! much over its median cost past 64 (a CPU whose distance 0 is merely
//! its best, mutually aligned case has no band), *and* more than the
//! register loop at the same distance (a guard could only help there); runs of such distances are bands, split where the level
//! changes by more than [`LEVEL_SPLIT`] (an AMD Zen's 1..15 at 20-30x next
//! to its 16..31 at 2-6x are two bands), and a run narrower than
//! [`MIN_WIDTH`] distances is taken for noise. The bands seen at any size
//! are the guards a candidate may use ([`BandSpace`]); with none, no
//! candidate has an alias guard.

use std::fmt::Write as _;

use serde::Serialize;

use super::space::{BandGuard, LoopShape};
use super::{round_ratios, Candidate};
use crate::tools::bench::{self, Results, Subject, Sweep};

/// Sizes the table is measured at (one per size class from 16 B up).
pub const BAND_SIZES: &[usize] = &[16, 64, 256, 1024, 4096];
/// Distances past 64 the table also measures.
pub const FAR_DISTANCES: &[usize] = &[80, 96, 128, 256, 1024, 2061, 4095];
/// `rep movsb` at a distance over its cost at distance 0, from which the
/// distance may be in a cliff.
pub const CLIFF_MIN: f64 = 1.5;
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
                ratio(i) >= CLIFF_MIN && t.movsb[s][i] / away >= CLIFF_MIN && vs_loop(i) > 1.0
            };
            let mut bands: Vec<Band> = Vec::new();
            let mut far = Vec::new();
            let mut open: Option<Band> = None;
            let mut last_d = 0usize;
            for i in 1..t.distances.len() {
                let d = t.distances[i];
                if d > 64 {
                    if ratio(i) >= CLIFF_MIN && vs_loop(i) > 1.0 {
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

// ---- the guard space -----------------------------------------------------------

/// The guards a candidate may use: each band measured, with the smallest
/// size it was seen at and the largest measured size below that.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BandSpace {
    /// `(lo, hi, seed_from, seed_until)`: a band, the size its seed guards
    /// from and, where a larger measured size no longer shows it, the size
    /// the seed stops at.
    pub options: Vec<(u32, u32, u32, Option<u32>)>,
}

impl BandSpace {
    pub fn from_detected(per_size: &[SizeBands]) -> BandSpace {
        let mut options: Vec<(u32, u32, u32, Option<u32>)> = Vec::new();
        let shows =
            |sb: &SizeBands, lo: u32, hi: u32| sb.bands.iter().any(|b| (b.lo, b.hi) == (lo, hi));
        for (i, sb) in per_size.iter().enumerate() {
            // Guard from just above the largest size measured below.
            let from = if i == 0 {
                0
            } else {
                per_size[i - 1].size as u32 + 1
            };
            for b in &sb.bands {
                if options.iter().any(|o| (o.0, o.1) == (b.lo, b.hi)) {
                    continue;
                }
                // Until the measured size after the largest that shows it
                // (none when the largest measured size shows it).
                let last = per_size
                    .iter()
                    .rposition(|s| shows(s, b.lo, b.hi))
                    .unwrap_or(i);
                let until = per_size.get(last + 1).map(|s| s.size as u32);
                options.push((b.lo, b.hi, from, until));
            }
        }
        BandSpace { options }
    }

    /// The band sets each size showed, as option indices (distinct).
    pub fn size_sets(&self, per_size: &[SizeBands]) -> Vec<Vec<usize>> {
        let mut sets: Vec<Vec<usize>> = Vec::new();
        for sb in per_size {
            let set: Vec<usize> = sb
                .bands
                .iter()
                .filter_map(|b| self.options.iter().position(|o| (o.0, o.1) == (b.lo, b.hi)))
                .collect();
            if !set.is_empty() && !sets.contains(&set) {
                sets.push(set);
            }
        }
        sets
    }
}

// ---- the report ----------------------------------------------------------------

fn ratio_range(lo: f64, hi: f64) -> String {
    if (hi - lo).abs() < 0.05 {
        format!("{hi:.1}x")
    } else {
        format!("{lo:.1}-{hi:.1}x")
    }
}

/// What the band measurement found, per size, and what the tune chose
/// for each band (with the tuned strategy's worst ratio to `rep movsb`
/// there on the final grid of `res`, subject `subject`).
pub fn bands_text(
    per_size: &[SizeBands],
    chosen: Option<&Candidate>,
    res: &Results,
    subject: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Alias bands: rep movsb at (dst - src) mod 4096 = 0..64 and {} against its cost at 0 and a register loop (a band: >= {CLIFF_MIN}x its cost at 0 and past 64, and slower than the loop):",
        FAR_DISTANCES
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for sb in per_size {
        let _ = write!(out, "  {:>5} B: ", sb.size);
        if sb.bands.is_empty() {
            if sb.worst_at == 0 {
                let _ = write!(out, "no band (no distance slower than 0)");
            } else {
                let _ = write!(
                    out,
                    "no band (worst: distance {}, {:.2}x its cost at 0)",
                    sb.worst_at, sb.worst
                );
            }
        } else {
            let parts: Vec<String> = sb
                .bands
                .iter()
                .map(|b| {
                    format!(
                        "{}..{} at {} its cost at 0, {:.1}x the register loop",
                        b.lo,
                        b.hi,
                        ratio_range(b.least, b.most),
                        b.vs_loop
                    )
                })
                .collect();
            let _ = write!(out, "{}", parts.join("; "));
        }
        if !sb.far.is_empty() {
            let _ = write!(
                out,
                "; also slow past 64 at {:?} (not guarded: a band is a run within 1..64)",
                sb.far
            );
        }
        out.push('\n');
    }
    let any = per_size.iter().any(|s| !s.bands.is_empty());
    let guards = chosen.map(|c| c.bands.as_slice()).unwrap_or(&[]);
    if !any {
        let _ = writeln!(
            out,
            "  no band on this CPU: the search had no alias guard to offer, and the tuned strategy has none"
        );
        return out;
    }
    let ratios = round_ratios(res, subject);
    let worst_in = |lo: u32, hi: u32, from: usize, to: usize| {
        res.sweep
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.dist.is_none()
                    && (lo as usize..=hi as usize).contains(&(r.x as usize))
                    && (from..=to).contains(&r.n)
            })
            .map(|(i, _)| ratios[i])
            .reduce(f64::max)
    };
    let _ = writeln!(
        out,
        "Chosen per band (the tuned strategy's worst ratio to rep_movsb in the band on the final grid, per size range):"
    );
    let mut seen: Vec<(u32, u32)> = Vec::new();
    for sb in per_size {
        for b in &sb.bands {
            if seen.contains(&(b.lo, b.hi)) {
                continue;
            }
            seen.push((b.lo, b.hi));
            let g = guards.iter().find(|g| g.lo <= b.hi && b.lo <= g.hi);
            let what = match g {
                Some(g) => format!(
                    "guard {}..={} {} -> {}",
                    g.lo,
                    g.hi,
                    g.sizes(),
                    g.method.describe()
                ),
                None => "no guard (rep movsb)".into(),
            };
            let ranges = [(0usize, 255usize), (256, 1023), (1024, 4096)]
                .iter()
                .filter_map(|&(a, z)| {
                    worst_in(b.lo, b.hi, a, z).map(|w| format!("{a}..{z} B {w:.2}x"))
                })
                .collect::<Vec<_>>()
                .join(", ");
            let _ = writeln!(out, "  band {}..{}: {what}; {ranges}", b.lo, b.hi);
        }
    }
    out
}

// ---- candidates over the measured bands ------------------------------------------

/// Sizes a band guard may start at.
const GUARD_FROM: &[u32] = &[0, 17, 65, 128, 257, 512, 1025, 2048];
/// Sizes a band guard may stop at (none: it covers every size from its
/// start up).
const GUARD_UNTIL: &[Option<u32>] = &[
    None,
    Some(256),
    Some(512),
    Some(768),
    Some(1024),
    Some(2048),
    Some(4096),
];
const SHORT_MAX: &[u32] = &[0, 8, 16, 32, 64, 128];
const BLOCK: &[u32] = &[32, 64, 128];
const REGS: &[u32] = &[2, 4];
const ALIGN: &[Option<(&str, u32)>] =
    &[None, Some(("dst", 8)), Some(("dst", 16)), Some(("src", 8))];
const PREFETCH: &[Option<u32>] = &[None, Some(256), Some(512)];

fn pick<T: Clone>(rng: &mut bench::Rng, v: &[T]) -> T {
    v[(rng.next_u64() % v.len() as u64) as usize].clone()
}

/// The loop a band seed starts with: the branch-light one (overlapping
/// block tail) or the word-tail one.
fn seed_loop(block_tail: bool) -> LoopShape {
    LoopShape {
        block: 64,
        registers: 4,
        interleaved: false,
        align: Some(("dst", 8)),
        prefetch: None,
        overlap_tail: true,
        block_tail,
    }
}

impl Candidate {
    /// `rep movsb` with no alias guard, and optionally a short class.
    pub fn unguarded(short_max: u32) -> Candidate {
        Candidate {
            short_max,
            narrow: 0,
            ..Candidate::bare_guarded()
        }
    }

    /// Where a search over measured bands starts: no guard (with and
    /// without a short class), then, for each set of bands one size
    /// showed, every band guarded from where it was seen, with the
    /// branch-light loop and with the word-tail loop. With no band: only
    /// the unguarded ones.
    pub fn band_seeds(space: &BandSpace, sets: &[Vec<usize>]) -> Vec<Candidate> {
        let mut out = vec![Candidate::unguarded(16), Candidate::unguarded(0)];
        for set in sets {
            for block_tail in [false, true] {
                let mut bands: Vec<BandGuard> = set
                    .iter()
                    .map(|&i| {
                        let (lo, hi, from, until) = space.options[i];
                        BandGuard {
                            lo,
                            hi,
                            from,
                            until,
                            method: seed_loop(block_tail),
                        }
                    })
                    .collect();
                bands.sort_by_key(|g| g.lo);
                out.push(Candidate {
                    bands,
                    ..Candidate::unguarded(0)
                });
            }
        }
        out
    }

    /// A neighbour within the measured bands: one or two changes among
    /// the short class, adding, removing or moving a guard, and a guard's
    /// loop. Guards stay disjoint and come only from `space`.
    pub fn mutate_bands(&self, rng: &mut bench::Rng, space: &BandSpace) -> Candidate {
        let mut c = self.clone();
        c.narrow = 0;
        let changes = 1 + (rng.next_u64() % 2) as usize;
        for _ in 0..changes {
            let op = if space.options.is_empty() {
                rng.next_u64() % 2
            } else {
                rng.next_u64() % 6
            };
            match op {
                0 => c.short_max = pick(rng, SHORT_MAX),
                1 => c.short_registers = pick(rng, &[2, 4]),
                2 => {
                    // Add a band not overlapping a guarded one.
                    let (lo, hi, from, until) = pick(rng, &space.options);
                    if !c.bands.iter().any(|g| g.lo <= hi && lo <= g.hi) {
                        let method = c
                            .bands
                            .first()
                            .map(|g| g.method.clone())
                            .unwrap_or_else(|| seed_loop(true));
                        c.bands.push(BandGuard {
                            lo,
                            hi,
                            from,
                            until,
                            method,
                        });
                        c.bands.sort_by_key(|g| g.lo);
                    }
                }
                3 if !c.bands.is_empty() => {
                    let i = (rng.next_u64() % c.bands.len() as u64) as usize;
                    c.bands.remove(i);
                }
                4 if !c.bands.is_empty() => {
                    // Move one end of a guard's size range, keeping
                    // from < until.
                    let i = (rng.next_u64() % c.bands.len() as u64) as usize;
                    let g = &mut c.bands[i];
                    if rng.next_u64() % 2 == 0 {
                        g.from = pick(rng, GUARD_FROM);
                    } else {
                        g.until = pick(rng, GUARD_UNTIL);
                    }
                    if g.until.is_some_and(|u| u <= g.from) {
                        g.until = None;
                    }
                }
                _ if !c.bands.is_empty() => {
                    let i = (rng.next_u64() % c.bands.len() as u64) as usize;
                    let l = &mut c.bands[i].method;
                    match rng.next_u64() % 7 {
                        0 => l.block = pick(rng, BLOCK),
                        1 => l.registers = pick(rng, REGS),
                        2 => l.interleaved = !l.interleaved,
                        3 => l.align = pick(rng, ALIGN),
                        4 => l.prefetch = pick(rng, PREFETCH),
                        5 => l.overlap_tail = !l.overlap_tail,
                        _ => l.block_tail = !l.block_tail,
                    }
                }
                _ => c.short_max = pick(rng, SHORT_MAX),
            }
        }
        c
    }
}

/// Comment lines of the tuned file: the bands measured, the guards chosen.
pub fn file_comments(per_size: &[SizeBands], chosen: Option<&Candidate>) -> Vec<String> {
    let mut c = Vec::new();
    let found: Vec<String> = per_size
        .iter()
        .filter(|s| !s.bands.is_empty())
        .map(|s| {
            let b: Vec<String> = s
                .bands
                .iter()
                .map(|b| format!("{}..{} ({:.1}x)", b.lo, b.hi, b.most))
                .collect();
            format!("{} B: {}", s.size, b.join(", "))
        })
        .collect();
    if found.is_empty() {
        c.push(format!(
            "Alias bands of rep movsb: no band (no distance 1..64 at >= {CLIFF_MIN}x its cost at 0 and past 64 and slower than a register loop, at any size); no alias guard."
        ));
        return c;
    }
    c.push(format!("Alias bands of rep movsb: {}.", found.join("; ")));
    let guards = chosen.map(|c| c.bands.as_slice()).unwrap_or(&[]);
    if guards.is_empty() {
        c.push("Guards chosen: none (rep movsb measured best).".into());
    }
    for g in guards {
        c.push(format!(
            "Guard {}..={} {}: {}.",
            g.lo,
            g.hi,
            g.sizes(),
            g.method.describe()
        ));
    }
    c
}
