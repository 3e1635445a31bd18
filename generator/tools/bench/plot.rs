//! SVG plots of bench results: one panel per series, one colour per
//! subject, a marker at every measured point and the rounds' interquartile
//! range as a bar. The axes' ticks are chosen here rather than by plotters:
//! sizes spanning decades get a log axis, an aliasing sweep spaces its
//! measured distances evenly and shades the band, labels are integers where
//! the values are and never repeat, and grid lines are few and light.

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Results, SweepRow};

/// How x values map to the plot's horizontal coordinate `u`.
#[derive(Debug, Clone, PartialEq)]
enum XMap {
    /// `u = x`.
    Linear,
    /// `u = log2(x + 1)`: sizes from 0 to thousands of bytes.
    Log,
    /// `u` = the index of `x` among the measured values (`xs`, sorted).
    Evenly { xs: Vec<f64> },
}

impl XMap {
    fn u(&self, x: f64) -> f64 {
        match self {
            XMap::Linear => x,
            XMap::Log => (x + 1.0).log2(),
            XMap::Evenly { xs } => xs.iter().position(|&v| v == x).unwrap_or(0) as f64,
        }
    }
}

/// An axis: its coordinate range and labelled ticks (coordinate, text).
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

/// A value as a tick label: an integer when it is one (or large), else the
/// fewest decimals that tell it apart.
fn number(v: f64) -> String {
    if v.fract().abs() < 1e-9 || v.abs() >= 100.0 {
        format!("{:.0}", v)
    } else if (v * 10.0).fract().abs() < 1e-9 || v.abs() >= 10.0 {
        format!("{:.1}", v)
    } else {
        format!("{:.2}", v)
    }
}

/// Ticks with repeated labels dropped (the first of each kept).
fn dedup(ticks: Vec<(f64, String)>) -> Vec<(f64, String)> {
    let mut out: Vec<(f64, String)> = Vec::new();
    for t in ticks {
        if !out.iter().any(|o| o.1 == t.1) {
            out.push(t);
        }
    }
    out
}

/// A "nice" step (1, 2 or 5 times a power of ten) giving about `n` ticks.
fn nice_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

fn linear_ticks(lo: f64, hi: f64, n: f64, integers: bool) -> Vec<(f64, String)> {
    let mut step = nice_step(hi - lo, n);
    if integers {
        step = step.max(1.0).round();
    }
    let mut v = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while v <= hi + step * 1e-9 {
        out.push((v, number(v)));
        v += step;
    }
    dedup(out)
}

/// Is this sweep's x a distance `(dst - src) mod 4096`?
fn is_alias_axis(x_label: &str) -> bool {
    x_label.contains("mod 4096")
}

/// The x axis of one panel, from its rows.
fn x_axis(rows: &[&SweepRow], x_label: &str, categorical: bool) -> (XMap, Axis) {
    let mut xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
    xs.sort_by(|a, b| a.total_cmp(b));
    xs.dedup();
    let (min, max) = (xs[0], xs[xs.len() - 1]);
    if categorical || is_alias_axis(x_label) {
        let map = XMap::Evenly { xs: xs.clone() };
        // Categories: every one. Distances: by priority (round distances
        // and the band's edges first), each at least `gap` points from the
        // labels already placed, so labels never collide.
        let gap = if categorical {
            0.0
        } else {
            (xs.len() as f64 / 14.0).ceil()
        };
        let priority = |x: f64| -> u32 {
            match x as u64 {
                0 | 16 | 32 | 64 => 0,
                v if v % 64 == 0 => 1,
                v if v % 8 == 0 => 2,
                1 | 15 | 31 | 63 => 3,
                _ => 4,
            }
        };
        let mut order: Vec<usize> = (0..xs.len()).collect();
        order.sort_by_key(|&i| (priority(xs[i]), i));
        let mut placed: Vec<usize> = Vec::new();
        for i in order {
            if placed
                .iter()
                .all(|&p| (p as f64 - i as f64).abs() >= gap.max(1.0))
            {
                placed.push(i);
            }
        }
        placed.sort();
        let ticks = placed
            .into_iter()
            .map(|i| {
                let x = xs[i];
                let text = if categorical {
                    rows.iter()
                        .find(|r| r.x == x)
                        .map(|r| r.label.split(" (").next().unwrap_or("").to_string())
                        .unwrap_or_default()
                } else {
                    number(x)
                };
                (i as f64, text)
            })
            .collect();
        let axis = Axis {
            lo: -0.5,
            hi: xs.len() as f64 - 0.5,
            ticks: dedup(ticks),
        };
        return (map, axis);
    }
    if max >= 64.0 * min.max(1.0) {
        // Powers of two (and 0) across the range, every other one if many.
        let mut pow: Vec<f64> = (0..40)
            .map(|k| (1u64 << k) as f64)
            .filter(|p| *p >= min && *p <= max)
            .collect();
        if pow.len() > 12 {
            pow = pow.into_iter().step_by(2).collect();
        }
        let mut ticks: Vec<(f64, String)> = Vec::new();
        if min == 0.0 {
            ticks.push((0.0, "0".into()));
        }
        ticks.extend(pow.iter().map(|p| (XMap::Log.u(*p), number(*p))));
        let axis = Axis {
            lo: XMap::Log.u(min) - 0.2,
            hi: XMap::Log.u(max) + 0.2,
            ticks: dedup(ticks),
        };
        return (XMap::Log, axis);
    }
    let pad = ((max - min) * 0.03).max(0.5);
    let axis = Axis {
        lo: min - pad,
        hi: max + pad,
        ticks: linear_ticks(min, max, 10.0, true),
    };
    (XMap::Linear, axis)
}

/// The y axis (ticks per call): linear from 0, or log10 when the figures
/// span more than 8x. Returns the axis and whether it is logarithmic.
fn y_axis(ymin: f64, ymax: f64) -> (Axis, bool) {
    if ymax / ymin.max(0.1) > 8.0 {
        let (lo, hi) = ((ymin.max(0.1) * 0.8).log10(), (ymax * 1.25).log10());
        let mut ticks = Vec::new();
        for k in (lo.floor() as i32)..=(hi.ceil() as i32) {
            for m in [1.0, 2.0, 5.0] {
                let v = m * 10f64.powi(k);
                if v.log10() >= lo && v.log10() <= hi {
                    ticks.push((v.log10(), number(v)));
                }
            }
        }
        (
            Axis {
                lo,
                hi,
                ticks: dedup(ticks),
            },
            true,
        )
    } else {
        let hi = ymax * 1.15;
        (
            Axis {
                lo: 0.0,
                hi,
                ticks: linear_ticks(0.0, hi, 6.0, false),
            },
            false,
        )
    }
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(215, 25, 28),
    RGBColor(43, 131, 186),
    RGBColor(0, 150, 0),
    RGBColor(160, 32, 200),
    RGBColor(255, 128, 0),
    RGBColor(0, 0, 0),
    RGBColor(0, 190, 190),
    RGBColor(128, 90, 0),
];

/// An SVG plot of ticks per call against the sweep's x, a panel per
/// series, as text (the caller writes it with the command's other outputs).
pub fn plot_svg(res: &Results) -> Result<String> {
    let mut svg = String::new();
    draw(res, &mut svg)?;
    Ok(svg)
}

fn draw(res: &Results, svg: &mut String) -> Result<()> {
    let mut series: Vec<String> = Vec::new();
    for r in &res.sweep.rows {
        if !series.contains(&r.series) {
            series.push(r.series.clone());
        }
    }
    let cols = if series.len() > 1 { 2 } else { 1 };
    let rows = series.len().div_ceil(cols);
    let width = if cols > 1 { 1400 } else { 1000 };
    let root = SVGBackend::with_string(svg, (width, 80 + 480 * rows as u32)).into_drawing_area();
    let e = |e: DrawingAreaErrorKind<_>| anyhow::anyhow!("plot: {e}");
    root.fill(&WHITE).map_err(e)?;
    let (head, body) = root.split_vertically(80);
    head.draw(&Text::new(
        res.sweep.title.clone(),
        (12, 8),
        ("sans-serif", 17).into_font(),
    ))
    .map_err(e)?;
    let sub = ("sans-serif", 13).into_font().color(&RGBColor(60, 60, 60));
    head.draw(&Text::new(
        format!(
            "TSC ticks per call, median of {} rounds (bars: interquartile range); CPU: {}",
            res.repeats, res.cpu
        ),
        (12, 34),
        sub.clone(),
    ))
    .map_err(e)?;
    if !res.command.is_empty() {
        // About 7 px a character: cut what would run off the picture.
        let room = (width as usize - 24) / 7;
        let mut cmd: String = res.command.chars().take(room).collect();
        if cmd.len() < res.command.len() {
            cmd.push_str(" ...");
        }
        head.draw(&Text::new(cmd, (12, 54), sub)).map_err(e)?;
    }
    let label_font = ("sans-serif", 12).into_font();
    for (panel, ser) in body.split_evenly((rows, cols)).iter().zip(&series) {
        let here: Vec<(usize, &SweepRow)> = res
            .sweep
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| &r.series == ser)
            .collect();
        let row_refs: Vec<&SweepRow> = here.iter().map(|(_, r)| *r).collect();
        // Workloads (and named cases) are categories, one x position each.
        let workloads = here.iter().any(|(_, r)| r.dist.is_some());
        let categorical = workloads || res.sweep.x_label == "case";
        let x_desc = if workloads {
            "distribution"
        } else {
            res.sweep.x_label.as_str()
        };
        let (xmap, xa) = x_axis(&row_refs, x_desc, categorical);
        let (ymin, ymax) = here
            .iter()
            .flat_map(|(i, _)| res.cells[*i].iter().map(|c| c.cycles))
            .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(y), b.max(y)));
        let (ya, ylog) = y_axis(ymin, ymax.max(ymin + 1e-6));
        // Medians set the range; a noisy round's bar is cut at its edge.
        let v = |y: f64| {
            let w = if ylog { y.max(1e-3).log10() } else { y };
            w.clamp(ya.lo, ya.hi)
        };
        let mut chart = ChartBuilder::on(panel)
            .caption(ser.as_str(), ("sans-serif", 15))
            .margin(14)
            .margin_right(24)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(xa.lo..xa.hi, ya.lo..ya.hi)
            .map_err(e)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(0)
            .y_labels(0)
            .x_desc(x_desc)
            .y_desc(if ylog {
                "TSC ticks per call (log scale)"
            } else {
                "TSC ticks per call"
            })
            .draw()
            .map_err(e)?;
        // The aliasing band, shaded: 1..=15 (rep movsb's cliff on some
        // CPUs) darker than 16..=31.
        if let (XMap::Evenly { xs }, true) = (&xmap, !categorical && is_alias_axis(x_desc)) {
            for (lo, hi, shade) in [(1.0, 15.0, 0.16), (16.0, 31.0, 0.07)] {
                let inside: Vec<f64> = xs
                    .iter()
                    .filter(|x| **x >= lo && **x <= hi)
                    .map(|x| xmap.u(*x))
                    .collect();
                if let (Some(a), Some(b)) = (inside.first(), inside.last()) {
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(a - 0.5, ya.lo), (b + 0.5, ya.hi)],
                            RGBColor(230, 80, 30).mix(shade).filled(),
                        )))
                        .map_err(e)?;
                }
            }
        }
        let grid = RGBColor(222, 222, 222);
        for (u, text) in &xa.ticks {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(*u, ya.lo), (*u, ya.hi)],
                    grid,
                )))
                .map_err(e)?;
            let (px, py) = chart.backend_coord(&(*u, ya.lo));
            root.draw(&Text::new(
                text.clone(),
                (px, py + 6),
                TextStyle::from(label_font.clone()).pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(e)?;
        }
        for (w, text) in &ya.ticks {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(xa.lo, *w), (xa.hi, *w)],
                    grid,
                )))
                .map_err(e)?;
            let (px, py) = chart.backend_coord(&(xa.lo, *w));
            root.draw(&Text::new(
                text.clone(),
                (px - 6, py),
                TextStyle::from(label_font.clone()).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(e)?;
        }
        let n = res.subjects.len() as f64;
        for (s, subject) in res.subjects.iter().enumerate() {
            let color = PALETTE[s % PALETTE.len()];
            // Categories: subjects side by side so their bars stay apart.
            let du = if categorical {
                (s as f64 - (n - 1.0) / 2.0) * (0.6 / n)
            } else {
                0.0
            };
            let mut pts: Vec<(f64, usize)> =
                here.iter().map(|(i, r)| (xmap.u(r.x) + du, *i)).collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let line: Vec<(f64, f64)> = pts
                .iter()
                .map(|(u, i)| (*u, v(res.cells[*i][s].cycles)))
                .collect();
            let style = color.stroke_width(2);
            let legend = move |(x, y): (i32, i32)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], color.stroke_width(2))
                    + Circle::new((10, 0), 3, color.filled())
            };
            if categorical {
                chart
                    .draw_series(line.iter().map(|p| Circle::new(*p, 4, color.filled())))
                    .map_err(e)?
                    .label(subject.as_str())
                    .legend(legend);
            } else {
                chart
                    .draw_series(LineSeries::new(line.clone(), style))
                    .map_err(e)?
                    .label(subject.as_str())
                    .legend(legend);
                chart
                    .draw_series(line.iter().map(|p| Circle::new(*p, 2, color.filled())))
                    .map_err(e)?;
            }
            chart
                .draw_series(pts.iter().map(|(u, i)| {
                    let c = &res.cells[*i][s];
                    PathElement::new(vec![(*u, v(c.q1)), (*u, v(c.q3))], color.stroke_width(1))
                }))
                .map_err(e)?;
        }
        chart
            .configure_series_labels()
            // An alias sweep's peaks are in the band, at the left.
            .position(if !categorical && is_alias_axis(x_desc) {
                SeriesLabelPosition::UpperRight
            } else {
                SeriesLabelPosition::UpperLeft
            })
            .border_style(BLACK)
            .background_style(WHITE.mix(0.9))
            .draw()
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}
