//! What the band measurement found and what the tune chose per band: the
//! report's `Alias bands` section and the tuned file's comments on them.

use std::fmt::Write as _;

use super::bands::{SizeBands, FAR_DISTANCES, SLOW_DISTANCE_RATIO};
use super::{round_ratios, Candidate};
use crate::tools::bench::Results;

fn ratio_range(lo: f64, hi: f64) -> String {
    if (hi - lo).abs() < 0.05 {
        format!("{hi:.1}x")
    } else {
        format!("{lo:.1}-{hi:.1}x")
    }
}

/// What the band measurement found, per size, and what the tune chose
/// for each band (with the tuned strategy's worst ratio to the baseline
/// of `res` — `rep movsb`, or the stock site with `--site kernel` — there
/// on the final grid, subject `subject`).
pub fn bands_text(
    per_size: &[SizeBands],
    chosen: Option<&Candidate>,
    res: &Results,
    subject: usize,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Alias bands: rep movsb at (dst - src) mod 4096 = 0..64 and {} against its cost at 0 and a register loop (a band: >= {SLOW_DISTANCE_RATIO}x its cost at 0 and past 64, and slower than the loop):",
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
        "Chosen per band (the tuned strategy's worst ratio to {} in the band on the final grid, per size range):",
        res.subjects[res.baseline]
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

/// Comment lines of the tuned file: the bands measured, the guards chosen.
pub fn band_comments(per_size: &[SizeBands], chosen: Option<&Candidate>) -> Vec<String> {
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
            "Alias bands of rep movsb: no band (no distance 1..64 at >= {SLOW_DISTANCE_RATIO}x its cost at 0 and past 64 and slower than a register loop, at any size); no alias guard."
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
