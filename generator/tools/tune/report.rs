//! The report of a tune: text, JSON, the per-class tables and the plot.

use std::fmt::Write as _;

use super::space::{Candidate, ClassKind};
use super::{round_ratios, score, score_with, Outcome, BAND_BOUND, BAND_FROM, BOUND};
use crate::tools::bench::{self, Results};

// ---- the report ------------------------------------------------------------------

/// Size classes and alias classes of the per-class tables.
pub const SIZE_CLASSES: &[(usize, usize)] =
    &[(0, 15), (16, 63), (64, 255), (256, 1023), (1024, 4096)];
pub const ALIAS_CLASSES: &[(&str, usize, usize)] = &[
    ("0", 0, 0),
    ("1..15", 1, 15),
    ("16..31", 16, 31),
    ("32..63", 32, 63),
    ("far", 64, 4095),
];

/// A target's verdict: within its bound; over it by no more than the A/A
/// control (the baseline against itself, in the same run) is over 1.00 —
/// the figure at most the bound times the control's same figure; or over
/// both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Met,
    WithinNoise,
    Missed,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::WithinNoise => "within noise",
            Verdict::Missed => "MISSED",
        }
    }
}

/// The verdict on `value` against `bound`, where the control read `noise`
/// for the same figure (a control under 1.00 allows nothing).
pub fn verdict(value: f64, bound: f64, noise: f64) -> Verdict {
    if value <= bound {
        Verdict::Met
    } else if value <= bound * noise.max(1.0) {
        Verdict::WithinNoise
    } else {
        Verdict::Missed
    }
}

/// The worst ratio of `subject` over every distribution row of `res` and
/// the given trace ratios.
fn worst_workload(res: &Results, subject: usize, traces: &[f64]) -> f64 {
    round_ratios(res, subject)
        .into_iter()
        .zip(&res.sweep.rows)
        .filter(|(_, r)| r.dist.is_some())
        .map(|(q, _)| q)
        .chain(traces.iter().copied())
        .fold(0.0, f64::max)
}

/// Worst ratio to `rep movsb` of `subject` per size class x alias class.
pub fn class_table(res: &Results, subject: usize) -> Vec<Vec<Option<f64>>> {
    let ratios = round_ratios(res, subject);
    SIZE_CLASSES
        .iter()
        .map(|&(slo, shi)| {
            ALIAS_CLASSES
                .iter()
                .map(|&(_, alo, ahi)| {
                    res.sweep
                        .rows
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| {
                            r.dist.is_none()
                                && (slo..=shi).contains(&r.n)
                                && (alo..=ahi).contains(&(r.x as usize))
                        })
                        .map(|(i, _)| ratios[i])
                        .reduce(f64::max)
                })
                .collect()
        })
        .collect()
}

/// Per size class of the chosen candidate `c` (`strategy`, subject
/// `subject` of `res`): its sizes, the method, and the median and worst
/// ratio to the baseline over the grid cells of those sizes that no alias
/// guard of `strategy` takes (guards are reported per band, `band_report.rs`).
pub fn class_choice_lines(
    c: &Candidate,
    strategy: &crate::front::strategy::Strategy,
    res: &Results,
    subject: usize,
) -> Vec<String> {
    use crate::front::strategy::{class_of, Condition, SizeClass};
    let ratios = round_ratios(res, subject);
    let guards_take = |k: &SizeClass, x: u64| {
        k.guards.iter().any(|g| match g.condition {
            Condition::Alias { lo, hi } => (lo as u64..=hi as u64).contains(&x),
            _ => true,
        })
    };
    // Whether cell (n, x) runs something else than its size class's
    // method: a guard's, or the alias-first classes' own.
    let guarded = |n: u64, x: u64| match &strategy.alias_first {
        Some(a) if n >= a.from && (a.lo as u64..=a.hi as u64).contains(&x) => {
            class_of(&a.classes, n).is_some_and(|k| {
                guards_take(k, x)
                    || class_of(&strategy.classes, n).is_none_or(|m| m.method != k.method)
            })
        }
        _ => class_of(&strategy.classes, n).is_some_and(|k| guards_take(k, x)),
    };
    c.class_choices()
        .iter()
        .map(|k| {
            let mut v: Vec<f64> = res
                .sweep
                .rows
                .iter()
                .enumerate()
                .filter(|(_, r)| {
                    let n = r.n as u64;
                    r.dist.is_none()
                        && k.lo <= n
                        && k.hi.is_none_or(|h| n <= h)
                        && !guarded(n, r.x as u64)
                })
                .map(|(i, _)| ratios[i])
                .collect();
            v.sort_by(|a, b| a.total_cmp(b));
            let figures = match v.last() {
                Some(worst) => format!(
                    "median {:.2}x, worst {worst:.2}x ({} cells)",
                    bench::quantile(&v, 0.5),
                    v.len()
                ),
                None => "no grid cell of these sizes".into(),
            };
            let class = match k.kind {
                ClassKind::Short => "short",
                ClassKind::Mid => "mid",
                ClassKind::Large => "large",
            };
            format!("{class} {}: {}; {figures}", k.sizes(), k.method)
        })
        .chain(strategy.alias_first.as_ref().map(|a| {
            format!(
                "alias first: from {} B, (dst - src) mod 4096 in {}..={} tested once, before the size classes; the classes above carry no guard",
                a.from, a.lo, a.hi
            )
        }))
        .collect()
}

/// The report `copygen tune` prints.
pub fn report_text(o: &Outcome) -> String {
    report(o).0
}

/// The report `copygen tune` prints, and how many of its targets were
/// missed (the lines that say `MISSED`).
pub fn report(o: &Outcome) -> (String, usize) {
    let missed = std::cell::Cell::new(0usize);
    let text = report_with(o, &missed);
    (text, missed.get())
}

fn report_with(o: &Outcome, missed: &std::cell::Cell<usize>) -> String {
    let res = &o.report;
    let mut out = String::new();
    let _ = writeln!(out, "CPU: {}", o.cpu.describe());
    if let Some(p) = &o.stock_path {
        let _ = writeln!(out, "{p}");
    }
    match o.cliff {
        Some(r) => {
            let _ = writeln!(
                out,
                "rep movsb alias cliff: yes ({r:.1}x at 1 KiB inside (dst - src) mod 4096 in 1..=15)"
            );
        }
        None => {
            let _ = writeln!(
                out,
                "rep movsb alias cliff: no (under {}x at 1 KiB in 1..=15; bands at other sizes and distances: `Alias bands` below)",
                super::ALIAS_CLIFF_RATIO
            );
        }
    }
    let _ = writeln!(
        out,
        "{} candidates screened{}; tuned strategy `{}` passed the JIT fault suite:",
        o.evaluated,
        if o.stopped_early {
            " (stopped by Ctrl-C: best so far)"
        } else {
            ""
        },
        o.strategy.name
    );
    out.push_str(&o.fault_report);
    let _ = writeln!(
        out,
        "\nCost per call on each distribution against {} (median of {} rounds of per-round ratios; TSC ticks in brackets):",
        res.subjects[res.baseline],
        res.repeats
    );
    let name_w = res.subjects.iter().map(|s| s.len()).max().unwrap_or(8);
    let _ = write!(out, "{:<20}", "distribution");
    for s in &res.subjects {
        let _ = write!(out, "  {:>w$}", s, w = name_w.max(14));
    }
    out.push('\n');
    let ratios: Vec<Vec<f64>> = (0..res.subjects.len())
        .map(|s| round_ratios(res, s))
        .collect();
    for (r, row) in res.sweep.rows.iter().enumerate() {
        let Some(d) = row.dist else { continue };
        let _ = write!(out, "{:<20}", res.sweep.distributions[d].name);
        for (s, ratio) in ratios.iter().enumerate() {
            let cell = format!("{:.2}x ({:.1})", ratio[r], res.cells[r][s].cycles);
            let _ = write!(out, "  {:>w$}", cell, w = name_w.max(14));
        }
        out.push('\n');
    }
    if let Some(c) = &o.chosen {
        let _ = writeln!(
            out,
            "\nChosen per size class (`{}`'s ratio to {} on the final grid's cells outside its alias guards: median, worst):",
            o.strategy.name, res.subjects[res.baseline]
        );
        for l in class_choice_lines(c, &o.strategy, res, o.tuned_subject) {
            let _ = writeln!(out, "  {l}");
        }
    }
    out.push_str(&super::traces::traces_text(&o.traces, &o.strategy.name));
    out.push('\n');
    out.push_str(&super::band_report::bands_text(
        &o.bands,
        o.chosen.as_ref(),
        res,
        o.tuned_subject,
    ));
    let (tuned_traces, control_traces): (Vec<f64>, Vec<f64>) = o
        .traces
        .iter()
        .filter(|t| t.tuned_on)
        .map(|t| (t.ratio(), t.control_ratio()))
        .unzip();
    let sc = score_with(
        res,
        o.tuned_subject,
        o.tuned_count,
        o.cliff.is_some(),
        &tuned_traces,
    );
    // The control's worst cell (the grid alone: distributions and traces
    // play no part in it).
    let control = score(res, o.control, 0, false);
    let judge = |value: f64, bound: f64, noise: f64| {
        let v = verdict(value, bound, noise);
        if v == Verdict::Missed {
            missed.set(missed.get() + 1);
        }
        v.text()
    };
    let worst_d = worst_workload(res, o.tuned_subject, &tuned_traces);
    let control_d = worst_workload(res, o.control, &control_traces);
    let _ = writeln!(
        out,
        "\nTargets for `{}` (control: `{}`, the baseline's code timed again in the same run; a figure over its bound by no more than the control is over 1.00 is the run's noise):",
        o.strategy.name, res.subjects[o.control]
    );
    let _ = writeln!(
        out,
        "  every distribution and tuned-on trace <= 1.00x {}: worst {worst_d:.2}x, control {:.2}x: {}",
        res.subjects[res.baseline],
        control_d,
        judge(worst_d, 1.0, control_d)
    );
    let _ = writeln!(
        out,
        "  every grid cell <= {BOUND:.2}x {}: worst {:.2}x ({} B, distance {}), control {:.2}x ({} B, distance {}): {}",
        res.subjects[res.baseline],
        sc.worst.0,
        sc.worst.1,
        sc.worst.2,
        control.worst.0,
        control.worst.1,
        control.worst.2,
        judge(sc.worst.0, BOUND, control.worst.0)
    );
    if let Some(w) = sc.worst_band {
        let _ = writeln!(
            out,
            "  band 1..=15 from {BAND_FROM} B <= {BAND_BOUND:.2}x: worst {:.2}x ({} B, distance {}): {}",
            w.0,
            w.1,
            w.2,
            judge(w.0, BAND_BOUND, 0.0)
        );
    }
    let _ = writeln!(
        out,
        "\nWorst ratio to {} per size class and (dst - src) mod 4096 class, fixed sizes (hot):",
        res.subjects[res.baseline]
    );
    for (s, name) in res.subjects.iter().enumerate() {
        if s == res.baseline {
            continue;
        }
        let _ = write!(out, "{name}\n  {:<12}", "bytes");
        for (a, _, _) in ALIAS_CLASSES {
            let _ = write!(out, " {:>8}", a);
        }
        out.push('\n');
        for (i, row) in class_table(res, s).into_iter().enumerate() {
            let (lo, hi) = SIZE_CLASSES[i];
            let _ = write!(out, "  {:<12}", format!("{lo}..{hi}"));
            for v in row {
                let _ = write!(out, " {:>8}", v.map_or("-".into(), |v| format!("{v:.2}x")));
            }
            out.push('\n');
        }
    }
    out
}

/// `--json`: the CPU, the scores and the final run (Google Benchmark shape).
pub fn report_json(o: &Outcome, tuned: usize) -> serde_json::Value {
    let res = &o.report;
    let subjects: Vec<serde_json::Value> = (0..res.subjects.len())
        .map(|s| {
            let sc = score(res, s, tuned, o.cliff.is_some());
            serde_json::json!({
                "name": res.subjects[s],
                "score": sc,
                "classes": class_table(res, s),
            })
        })
        .collect();
    serde_json::json!({
        "cpu": o.cpu,
        "alias_cliff": o.cliff,
        "band_table": o.band_table,
        "bands": o.bands,
        "chosen_guards": o.chosen.as_ref().map(|c| &c.bands),
        "chosen": o.chosen,
        "stock_path": o.stock_path,
        "traces": o.traces.iter().map(|t| serde_json::json!({
            "workload": t.results.replay.trace.origin,
            "tuned_on": t.tuned_on,
            "ratio": t.ratio(),
            "control_ratio": t.control_ratio(),
            "replay": t.results.json(),
        })).collect::<Vec<_>>(),
        "strategy": o.strategy.name,
        "control": res.subjects[o.control],
        "evaluated": o.evaluated,
        "stopped_early": o.stopped_early,
        "size_classes": SIZE_CLASSES,
        "alias_classes": ALIAS_CLASSES.iter().map(|a| a.0).collect::<Vec<_>>(),
        "subjects": subjects,
        "run": bench::google_benchmark_json(res),
    })
}

/// The rows `--plot` shows: the workloads and four sizes of the grid.
pub fn plot_results(res: &Results) -> Results {
    let keep: Vec<usize> = (0..res.sweep.rows.len())
        .filter(|&i| {
            let r = &res.sweep.rows[i];
            r.dist.is_some() || [64, 256, 1024, 4096].contains(&r.n)
        })
        .collect();
    let mut out = res.clone();
    out.sweep.rows = keep.iter().map(|&i| res.sweep.rows[i].clone()).collect();
    out.cells = keep.iter().map(|&i| res.cells[i].clone()).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::{verdict, Verdict};

    #[test]
    fn a_figure_over_its_bound_is_noise_only_as_far_as_the_control_reads() {
        assert_eq!(verdict(1.04, 1.05, 1.20), Verdict::Met);
        assert_eq!(verdict(1.05, 1.05, 1.00), Verdict::Met);
        // The control at 1.09 allows 1.05 x 1.09 = 1.1445.
        assert_eq!(verdict(1.08, 1.05, 1.09), Verdict::WithinNoise);
        assert_eq!(verdict(1.14, 1.05, 1.09), Verdict::WithinNoise);
        assert_eq!(verdict(1.15, 1.05, 1.09), Verdict::Missed);
        // A bound under 1.00 scales alike: 0.50 x 1.04 = 0.52.
        assert_eq!(verdict(0.51, 0.50, 1.04), Verdict::WithinNoise);
        assert_eq!(verdict(0.53, 0.50, 1.04), Verdict::Missed);
        // A control at or under 1.00 excuses nothing.
        assert_eq!(verdict(1.06, 1.05, 1.00), Verdict::Missed);
        assert_eq!(verdict(1.06, 1.05, 0.97), Verdict::Missed);
    }
}
