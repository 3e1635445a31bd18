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

/// One `rep movsb` for every size, no guard, no per-CPU variant: what the
/// tune chooses where no band is worth a guard, and the baseline's code.
pub fn is_bare_rep_movsb(s: &crate::front::strategy::Strategy) -> bool {
    s.variants.is_empty()
        && crate::front::strategy::is_bare_rep_movsb(&s.classes, s.alias_first.as_ref())
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
    let tuned_traces: Vec<f64> = o
        .traces
        .iter()
        .filter(|t| t.tuned_on)
        .map(|t| t.ratio())
        .collect();
    let sc = score_with(
        res,
        o.tuned_subject,
        o.tuned_count,
        o.cliff.is_some(),
        &tuned_traces,
    );
    let met = |ok: bool| {
        if ok {
            "met"
        } else {
            missed.set(missed.get() + 1);
            "MISSED"
        }
    };
    let all_d: Vec<f64> = round_ratios(res, o.tuned_subject)
        .into_iter()
        .zip(&res.sweep.rows)
        .filter(|(_, r)| r.dist.is_some())
        .map(|(q, _)| q)
        .collect();
    let worst_d = all_d
        .iter()
        .chain(&tuned_traces)
        .copied()
        .fold(0.0, f64::max);
    let _ = writeln!(out, "\nTargets for `{}`:", o.strategy.name);
    let _ = writeln!(
        out,
        "  every distribution and tuned-on trace <= 1.00x {}: worst {worst_d:.2}x, {}",
        res.subjects[res.baseline],
        met(worst_d <= 1.0)
    );
    let _ = writeln!(
        out,
        "  every grid cell <= {BOUND:.2}x {}: worst {:.2}x ({} B, distance {}), {}",
        res.subjects[res.baseline],
        sc.worst.0,
        sc.worst.1,
        sc.worst.2,
        met(sc.worst.0 <= BOUND)
    );
    if is_bare_rep_movsb(&o.strategy) && (worst_d > 1.0 || sc.worst.0 > BOUND) {
        let _ = writeln!(
            out,
            "  (`{}` is one unguarded `rep movsb` for every size, the baseline's own instruction: what is above 1.00x is the noise of identical code in this run)",
            o.strategy.name
        );
    }
    if let Some(w) = sc.worst_band {
        let _ = writeln!(
            out,
            "  band 1..=15 from {BAND_FROM} B <= {BAND_BOUND:.2}x: worst {:.2}x ({} B, distance {}), {}",
            w.0,
            w.1,
            w.2,
            met(w.0 <= BAND_BOUND)
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
            "replay": t.results.json(),
        })).collect::<Vec<_>>(),
        "strategy": o.strategy.name,
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
    use super::is_bare_rep_movsb;
    use crate::front::parse::parse;

    const HEAD: &str = "name = \"t\"\ndescription = \"d\"\narch = \"x86_64\"\n[linux]\nuaccess = \"routine\"\nextable = \"copy\"\n[fault]\nprecision = \"exact\"\n";

    fn strategy(rest: &str) -> crate::front::strategy::Strategy {
        parse("t.toml".as_ref(), &format!("{HEAD}{rest}"), None).unwrap()
    }

    #[test]
    fn only_one_unguarded_rep_movsb_counts_as_the_baseline_itself() {
        let bare = "[methods.movsb]\nkind = \"rep_movs\"\nunit = 1\n[[dispatch]]\nsizes = \"0..\"\nuse = \"movsb\"\n";
        assert!(is_bare_rep_movsb(&strategy(bare)));
        let movsq = bare.replace("unit = 1", "unit = 8");
        assert!(!is_bare_rep_movsb(&strategy(&movsq)));
        let split = "[methods.movsb]\nkind = \"rep_movs\"\nunit = 1\n[methods.bytes]\nkind = \"bytes\"\n[[dispatch]]\nsizes = \"0..8\"\nuse = \"bytes\"\n[[dispatch]]\nsizes = \"8..\"\nuse = \"movsb\"\n";
        assert!(!is_bare_rep_movsb(&strategy(split)));
    }
}
