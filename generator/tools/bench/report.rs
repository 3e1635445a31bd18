//! Results out: the aligned text table and Google Benchmark's JSON.

use std::fmt::Write as _;

use super::{Measurement, Results};

/// An aligned text table like the kernel threads': rows, and per subject its
/// median, the interquartile range of the rounds (the noise), and its
/// ratio to the baseline subject (named in the header).
pub fn text_table(res: &Results) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", res.sweep.title);
    let _ = writeln!(
        out,
        "TSC ticks per call (TSC: constant {:.2} GHz reference clock, not core cycles): median of {} rounds{}, IQR = interquartile range of the rounds; CPU: {}",
        res.tsc_hz / 1e9,
        res.repeats,
        if res.sweep.cold { ", cold caches" } else { ", hot" },
        res.cpu
    );
    let base_name = &res.subjects[res.baseline];
    let ratio_head = format!("vs {base_name}");
    let iqr = |c: &Measurement| format!("{:.1}-{:.1}", c.q1, c.q3);
    let label_w = res
        .sweep
        .rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4)
        .max(res.sweep.x_label.chars().count());
    let col_w: Vec<usize> = res.subjects.iter().map(|s| s.len().max(8)).collect();
    let iqr_w: Vec<usize> = (0..res.subjects.len())
        .map(|s| {
            res.cells
                .iter()
                .map(|row| iqr(&row[s]).len())
                .max()
                .unwrap_or(3)
                .max(3)
        })
        .collect();
    let ratio_w = ratio_head.len().max(6);
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    let _ = write!(out, "{}", pad(&res.sweep.x_label, label_w));
    for (i, s) in res.subjects.iter().enumerate() {
        let _ = write!(
            out,
            "  {:>w$}  {:>iw$}",
            s,
            "IQR",
            w = col_w[i],
            iw = iqr_w[i]
        );
        if i != res.baseline {
            let _ = write!(out, "  {:>ratio_w$}", ratio_head);
        }
    }
    out.push('\n');
    for (r, row) in res.sweep.rows.iter().enumerate() {
        let _ = write!(out, "{}", pad(&row.label, label_w));
        for (s, cell) in res.cells[r].iter().enumerate() {
            let _ = write!(
                out,
                "  {:>w$.1}  {:>iw$}",
                cell.cycles,
                iqr(cell),
                w = col_w[s],
                iw = iqr_w[s]
            );
            if s != res.baseline {
                let ratio = format!("{:.2}x", res.ratio(r, s));
                let _ = write!(out, "  {:>ratio_w$}", ratio);
            }
        }
        out.push('\n');
    }
    out
}

/// Google Benchmark's JSON shape, so its `compare.py` reads it. Times are
/// in nanoseconds (from the TSC rate); `tsc_ticks` holds the raw figure.
pub fn google_benchmark_json(res: &Results) -> serde_json::Value {
    let mut benchmarks = Vec::new();
    for (s, subject) in res.subjects.iter().enumerate() {
        for (r, row) in res.sweep.rows.iter().enumerate() {
            let cell = &res.cells[r][s];
            let name = match row.dist {
                Some(d) => format!(
                    "{}/{}/{}",
                    res.sweep.name, subject, res.sweep.distributions[d].name
                ),
                None => format!(
                    "{}/{}/n:{}/src:{}/dst:{}",
                    res.sweep.name, subject, row.n, row.src_off, row.dst_off
                ),
            };
            let ns = cell.cycles / res.tsc_hz * 1e9;
            benchmarks.push(serde_json::json!({
                "name": name,
                "family_index": s,
                "per_family_instance_index": r,
                "run_name": name,
                "run_type": "iteration",
                "repetitions": res.repeats,
                "repetition_index": 0,
                "threads": 1,
                "iterations": cell.iterations,
                "real_time": ns,
                "cpu_time": ns,
                "time_unit": "ns",
                "tsc_ticks": cell.cycles,
                "tsc_ticks_q1": cell.q1,
                "tsc_ticks_q3": cell.q3,
                "tsc_ticks_min": cell.min,
                "tsc_ticks_max": cell.max,
                "ratio": res.ratio(r, s),
                "baseline": res.subjects[res.baseline],
                "bytes": row.n,
            }));
        }
    }
    serde_json::json!({
        "context": {
            "executable": "copygen bench",
            "host_name": std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default().trim(),
            "num_cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "mhz_per_cpu": (res.tsc_hz / 1e6).round() as u64,
            "cpu_scaling_enabled": false,
            "library_build_type": "release",
            "cpu": res.cpu,
            "clock": "tsc (reference clock, not core cycles)",
            "table": res.sweep.name,
            "cold": res.sweep.cold,
            "command": res.command,
            "title": res.sweep.title,
        },
        "benchmarks": benchmarks,
    })
}
