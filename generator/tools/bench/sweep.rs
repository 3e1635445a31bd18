//! Sweeps: the rows a benchmark measures (sizes, offsets, aliasing
//! distances, distributions), the kernel threads' tables, and the list syntax of
//! `--sizes`.

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::distribution::{self, Distribution};

/// One measured configuration: a copy of `n` bytes with the pointers at
/// these offsets from page-aligned buffers.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    /// Row label in the text table (`1024 B`, `+0x0f`).
    pub label: String,
    /// Plot series this row belongs to (e.g. the size in an alias sweep).
    pub series: String,
    /// Plot x value.
    pub x: f64,
    pub n: usize,
    pub src_off: usize,
    pub dst_off: usize,
    /// A workload row instead: sizes from `Sweep::distributions[d]`, a
    /// fresh random sequence of `Sweep::calls` calls every round (`n` is
    /// then the largest size, the offsets 0).
    pub dist: Option<usize>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Sweep {
    pub name: String,
    pub title: String,
    pub x_label: String,
    pub rows: Vec<SweepRow>,
    pub cold: bool,
    /// The distributions that rows with `dist` draw from.
    pub distributions: Vec<Distribution>,
    /// Calls per sequence of a distribution row.
    pub calls: usize,
    /// Share of a distribution row's calls sent into the aliasing band.
    pub alias_share: f64,
    /// Where a distribution row's calls put their pointers.
    pub pointers: distribution::Pointers,
}

fn row(label: String, series: &str, x: f64, n: usize, src_off: usize, dst_off: usize) -> SweepRow {
    SweepRow {
        label,
        series: series.to_string(),
        x,
        n,
        src_off,
        dst_off,
        dist: None,
    }
}

/// Calls per sequence of a distribution row unless told otherwise.
pub const DEFAULT_CALLS: usize = 4096;

/// Rows for workloads: one per distribution.
pub fn distribution_rows(dists: &[Distribution]) -> Vec<SweepRow> {
    dists
        .iter()
        .enumerate()
        .map(|(i, d)| SweepRow {
            label: format!("{} (mean {:.0} B)", d.name, d.mean),
            series: String::new(),
            x: i as f64,
            n: d.max_size,
            src_off: 0,
            dst_off: 0,
            dist: Some(i),
        })
        .collect()
}

/// A sweep over workloads drawn from `dists` (see [`distribution`]).
pub fn distribution_sweep(dists: Vec<Distribution>, calls: usize, alias_share: f64) -> Sweep {
    distribution_sweep_with(dists, calls, alias_share, distribution::Pointers::Uniform)
}

/// [`distribution_sweep`] with a pointer model.
pub fn distribution_sweep_with(
    dists: Vec<Distribution>,
    calls: usize,
    alias_share: f64,
    pointers: distribution::Pointers,
) -> Sweep {
    let band = if alias_share > 0.0 {
        format!(
            ", {:.1} % of calls at (dst - src) mod 4096 in 1..={}",
            alias_share * 100.0,
            distribution::ALIAS_BAND_MAX
        )
    } else {
        String::new()
    };
    Sweep {
        name: "distribution".into(),
        title: format!(
            "sizes drawn from measured distributions, pointers {}: {}{band}; a fresh sequence of {calls} calls every round",
            pointers.name(),
            pointers.rule()
        ),
        x_label: "distribution".into(),
        rows: distribution_rows(&dists),
        distributions: dists,
        calls,
        alias_share,
        pointers,
        ..Sweep::default()
    }
}

/// The tables of the kernel threads copygen grew from
/// ([`crate::front::catalog::THREADS`]), re-run here.
pub fn table(name: &str) -> Result<Sweep> {
    let cite = |key: &str| crate::front::catalog::thread(key).cite();
    let (title, x_label, rows): (String, &str, Vec<SweepRow>) = match name {
        "abeni" => (
            format!("{}: short copies, 0..64 bytes, hot", cite("abeni")),
            "bytes",
            (0..=64).map(|n| row(format!("{n}"), "", n as f64, n, 0, 0)).collect(),
        ),
        "wilson" => (
            format!("{}: benchmark_copy_user(hot), 1..128 bytes", cite("wilson")),
            "bytes",
            [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128]
                .into_iter()
                .map(|n| row(format!("{n}"), "", n as f64, n, 0, 0))
                .collect(),
        ),
        "morton" => (
            format!("{}: 8192-byte copies to a user buffer at offset 0x00..0x20 from a page-aligned buffer", cite("morton")),
            "user-buffer offset",
            (0..=0x20)
                .map(|k| row(format!("+0x{k:02x}"), "", k as f64, 8192, 0, k))
                .collect(),
        ),
        "anand" => (
            format!("{}: 1448-byte copies, aligned and misaligned", cite("anand")),
            "case",
            [(0, 0, "aligned"), (0, 1, "dst+1"), (1, 0, "src+1"), (3, 5, "src+3 dst+5"), (4, 0, "src+4"), (0, 4, "dst+4")]
                .into_iter()
                .enumerate()
                .map(|(i, (s, d, l))| row(l.to_string(), "", i as f64, 1448, s, d))
                .collect(),
        ),
        "alias" => (
            "(dst - src) mod 4096 sweep: where rep movsb collapses".into(),
            "(dst - src) mod 4096",
            alias_rows(&[64, 256, 1024, 4096], &alias_offsets()),
        ),
        other => bail!("unknown table `{other}`: abeni, wilson, morton, anand or alias"),
    };
    Ok(Sweep {
        name: name.into(),
        title,
        x_label: x_label.into(),
        rows,
        ..Sweep::default()
    })
}

/// Every distance through the band and a little past it, then two far ones.
pub fn alias_offsets() -> Vec<usize> {
    (0..=72).chain([96, 128]).collect()
}

pub fn alias_rows(sizes: &[usize], alias: &[usize]) -> Vec<SweepRow> {
    let mut rows = Vec::new();
    for &n in sizes {
        for &a in alias {
            // src page-aligned + 64, dst so that (dst - src) mod 4096 == a.
            let src_off = 64;
            let dst_off = (src_off + a) % 4096;
            rows.push(row(
                format!("{n} B, {a}"),
                &format!("{n} B"),
                a as f64,
                n,
                src_off,
                dst_off,
            ));
        }
    }
    rows
}

/// A sweep from `--sizes` and offsets.
pub fn custom(sizes: &[usize], src_offs: &[usize], dst_offs: &[usize]) -> Sweep {
    let mut rows = Vec::new();
    for &s in src_offs {
        for &d in dst_offs {
            let series = if src_offs.len() * dst_offs.len() > 1 {
                format!("src+{s} dst+{d}")
            } else {
                String::new()
            };
            for &n in sizes {
                let label = if series.is_empty() {
                    format!("{n}")
                } else {
                    format!("{n} {series}")
                };
                rows.push(row(label, &series, n as f64, n, s, d));
            }
        }
    }
    Sweep {
        name: "custom".into(),
        title: format!(
            "sizes {}, src offsets {}, dst offsets {} from page-aligned buffers",
            list_text(sizes),
            list_text(src_offs),
            list_text(dst_offs)
        ),
        x_label: "bytes".into(),
        rows,
        ..Sweep::default()
    }
}

/// `0..=64` for a run of consecutive values, else the list (abridged).
fn list_text(v: &[usize]) -> String {
    match v {
        [] => String::new(),
        [one] => one.to_string(),
        _ if v.windows(2).all(|w| w[1] == w[0] + 1) => format!("{}..={}", v[0], v[v.len() - 1]),
        _ if v.len() > 8 => format!("{},{},...,{}", v[0], v[1], v[v.len() - 1]),
        _ => v
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// The most values one list (`--sizes`, `--src-offsets`, ...) expands to.
pub const MAX_LIST: usize = 65_536;

/// Parse `1,2,8` or `0..=64` or `0..64` or `64..=4096:64` (step); at most
/// [`MAX_LIST`] values.
pub fn parse_list(s: &str) -> Result<Vec<usize>> {
    parse_list_bounded(s, usize::MAX)
}

/// [`parse_list`], every value at most `max`; checked before a range is
/// expanded, so `0..=18446744073709551615` is an error, not an allocation.
pub fn parse_list_bounded(s: &str, max: usize) -> Result<Vec<usize>> {
    let too_big = |x: u64| anyhow::anyhow!("{x} is above {max}, the largest value here");
    let too_many = || anyhow::anyhow!("more than {MAX_LIST} values");
    let s = s.trim();
    if let Some((range, step)) = s
        .split_once(':')
        .or(Some((s, "1")))
        .filter(|_| s.contains(".."))
    {
        let step: usize = step.parse().context("range step")?;
        let (lo, hi) = crate::front::parse::parse_range(range)
            .with_context(|| format!("`{range}` is not a range"))?;
        let hi = hi.with_context(|| format!("`{range}` needs an upper bound"))?;
        if step == 0 {
            bail!("range step must be positive");
        }
        if hi > max as u64 {
            return Err(too_big(hi));
        }
        if (hi - lo) / step as u64 >= MAX_LIST as u64 {
            return Err(too_many());
        }
        return Ok((lo as usize..=hi as usize).step_by(step).collect());
    }
    if s.split(',').count() > MAX_LIST {
        return Err(too_many());
    }
    s.split(',')
        .map(|x| {
            let x = x.trim();
            let v = if let Some(h) = x.strip_prefix("0x") {
                usize::from_str_radix(h, 16).with_context(|| format!("`{x}`"))?
            } else {
                x.parse()
                    .with_context(|| format!("`{x}` is not a number"))?
            };
            if v > max {
                return Err(too_big(v as u64));
            }
            Ok(v)
        })
        .collect()
}
