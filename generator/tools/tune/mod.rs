//! `copygen tune`: search x86_64 strategies for the CPU this runs on and a
//! set of workloads (size distributions), JIT-timed against `rep movsb` in
//! the same runs, and write the winner as an ordinary strategy file.
//!
//! The search space is a shape that covers what the catalog does on x86_64:
//! an optional head/tail class for short copies, `rep movsb` above it, and
//! alias guards that send `(dst - src) mod 4096` in a band to an unrolled
//! loop — a wider band below some size, a narrower one above, guards only
//! from some size up — with the loop's block, registers, grouping,
//! alignment, prefetch and tail free. Every candidate is written as TOML and
//! parsed by the ordinary validator, so what is measured is exactly what a
//! strategy file says.
//!
//! The objective is the mean cost over the distributions (per-round ratio to
//! `rep movsb`, median over rounds), the worst distribution's excess, and
//! penalties that bound every cell of a fixed-size x alias grid: no cell above [`BOUND`] x `rep movsb`, and, on
//! a CPU whose `rep movsb` collapses inside the band, every cell of sizes
//! from 1 KiB with `(dst - src) mod 4096` in 1..=15 at most [`BAND_BOUND`].
//! Mean and bounds hold at once: fixed sizes flatter branchy code (every
//! branch predicted), the distributions keep it honest.
//!
//! Leaders are re-measured together (interleaved, more rounds) before one
//! is chosen, and only a strategy that passes the full JIT fault suite is
//! returned.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::front::strategy::{Arch, Strategy};
use crate::tools::bench::{self, distribution::Distribution, Results, Subject, Sweep};
use anyhow::{bail, Result};

/// No cell of the fixed-size x alias grid may cost more than this many
/// times `rep movsb`.
pub const BOUND: f64 = 1.05;
/// On a CPU with the alias cliff: cells of sizes >= [`BAND_FROM`] with
/// `(dst - src) mod 4096` in 1..=15 cost at most this many times `rep movsb`.
pub const BAND_BOUND: f64 = 0.15;
pub const BAND_FROM: usize = 1024;
/// `rep movsb` at 1 KiB inside the band over outside it, above which the CPU
/// is said to have the alias cliff.
const CLIFF_RATIO: f64 = 4.0;

mod cpu;
mod kernel;
mod measure;
pub mod merge;
mod report;
mod space;

pub use cpu::{cpu_info, CpuInfo};
use measure::{compile, QUICK_ALIAS, QUICK_SIZES};
pub use measure::{round_ratios, score, tune_sweep, Score, GRID_ALIAS, GRID_SIZES};
pub use report::{
    class_table, plot_results, report_json, report_text, ALIAS_CLASSES, SIZE_CLASSES,
};
pub use space::{Candidate, CandidateBase, LoopShape};

// ---- Ctrl-C ----------------------------------------------------------------------

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// The first Ctrl-C asks the search to stop and return its best so far; a
/// second one (the handler resets itself) ends the process.
fn catch_ctrl_c() {
    // SAFETY: installs an async-signal-safe handler (one atomic store).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as usize;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
    }
}

pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

// ---- the search ------------------------------------------------------------------

pub struct Options {
    pub dists: Vec<Distribution>,
    /// Distributions reported but not tuned on.
    pub extra: Vec<Distribution>,
    pub budget: Duration,
    pub header: CandidateBase,
    /// A base strategy measured as a contender of its own.
    pub base: Option<Strategy>,
    pub seed: u64,
    /// Score call sites as this kernel runs them against its stock site
    /// (`kernel.rs`), instead of called routines against `rep movsb`.
    pub site: Option<crate::front::strategy::KernelVersion>,
}

/// The search's result.
pub struct Outcome {
    pub strategy: Strategy,
    /// The tuned file's text (comments, then the strategy).
    pub text: String,
    pub cpu: CpuInfo,
    pub cliff: Option<f64>,
    /// The final run: every distribution and the full grid, the tuned
    /// strategy against the baselines and the catalog.
    pub report: Results,
    pub tuned_subject: usize,
    /// How many of the report's distributions were tuned on (the first ones).
    pub tuned_count: usize,
    pub evaluated: usize,
    pub stopped_early: bool,
    pub fault_report: String,
}

struct Evaluated {
    cand: Candidate,
    objectives: Vec<f64>,
    last: Score,
}

impl Evaluated {
    fn mean(&self) -> f64 {
        self.objectives.iter().sum::<f64>() / self.objectives.len() as f64
    }
}

/// `rep movsb` at 1 KiB, inside the band over outside it (measured).
pub fn alias_cliff() -> f64 {
    let sweep = Sweep {
        rows: bench::alias_rows(&[BAND_FROM], &[0, 1, 8, 15]),
        ..Sweep::default()
    };
    let base = [bench::baseline("rep_movsb").expect("built in")];
    let res = bench::run(&sweep, &base, 5, &|_, _| {});
    let inside = (1..4).map(|r| res.cells[r][0].cycles).fold(0.0, f64::max);
    inside / res.cells[0][0].cycles
}

/// Screen one candidate: it and `rep movsb`, interleaved, on the
/// distributions and the quick grid.
fn screen(c: &Candidate, o: &Options, cliff: bool, seed: u64) -> Option<Score> {
    if let Some(k) = o.site {
        return kernel::screen(c, o, cliff, seed, k);
    }
    let (_, subject) = compile(c, &o.header)?;
    let sweep = tune_sweep(&o.dists, QUICK_SIZES, QUICK_ALIAS, 2048);
    let subjects = [bench::baseline("rep_movsb").expect("built in"), subject];
    let opts = bench::Options {
        repeats: 7,
        target_ticks: 6_000.0,
        seed,
    };
    let res = bench::run_with(&sweep, &subjects, &opts, &|_, _| {});
    Some(score(&res, 1, o.dists.len(), cliff))
}

/// Run the search; `progress(fraction, message)` is told as it goes.
pub fn tune(o: &Options, progress: &dyn Fn(f64, &str)) -> Result<Outcome> {
    if o.dists.is_empty() {
        bail!("tune needs at least one --distribution");
    }
    catch_ctrl_c();
    let start = Instant::now();
    let cpu = cpu_info();
    let cliff_ratio = alias_cliff();
    let cliff = cliff_ratio > CLIFF_RATIO;
    let mut rng = bench::Rng::new(o.seed);
    // 70 % of the budget searches; the rest confirms, checks and reports.
    let search_until = o.budget.mul_f64(0.7);
    let mut pool: Vec<Evaluated> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut seeds = Candidate::seeds();
    let mut round = 0u64;
    let mut stopped_early = false;
    while start.elapsed() < search_until {
        if stop_requested() {
            stopped_early = true;
            break;
        }
        round += 1;
        // Every tenth step re-measures a leader, so a lucky first figure
        // does not keep it on top.
        let cand = if round % 10 == 0 && !pool.is_empty() {
            pool.sort_by(|a, b| a.mean().total_cmp(&b.mean()));
            pool[(rng.next_u64() % pool.len().min(3) as u64) as usize]
                .cand
                .clone()
        } else if let Some(s) = seeds.pop() {
            s
        } else {
            pool.sort_by(|a, b| a.mean().total_cmp(&b.mean()));
            let parent = &pool[(rng.next_u64() % pool.len().min(5) as u64) as usize].cand;
            let mut c = parent.mutate(&mut rng);
            let mut tries = 0;
            while seen.contains(&c) && tries < 20 {
                c = parent.mutate(&mut rng);
                tries += 1;
            }
            c
        };
        seen.insert(cand.clone());
        let Some(sc) = screen(&cand, o, cliff, rng.next_u64()) else {
            continue;
        };
        match pool.iter_mut().find(|e| e.cand == cand) {
            Some(e) => {
                e.objectives.push(sc.objective);
                e.last = sc;
            }
            None => pool.push(Evaluated {
                cand,
                objectives: vec![sc.objective],
                last: sc,
            }),
        }
        let best = pool
            .iter()
            .min_by(|a, b| a.mean().total_cmp(&b.mean()))
            .expect("non-empty");
        progress(
            start.elapsed().as_secs_f64() / o.budget.as_secs_f64(),
            &format!(
                "{} measured; best: {} vs rep_movsb on the distributions, worst cell {:.2}x",
                pool.len(),
                best.last
                    .distributions
                    .iter()
                    .map(|d| format!("{d:.2}x"))
                    .collect::<Vec<_>>()
                    .join(" "),
                best.last.worst.0
            ),
        );
    }
    if pool.is_empty() {
        bail!("no candidate could be measured");
    }
    pool.sort_by(|a, b| a.mean().total_cmp(&b.mean()));
    let evaluated = pool.len();

    // Confirm: the leaders (and the base) together with rep movsb, every
    // distribution and the full grid, interleaved, more rounds.
    progress(0.75, "confirming the leaders");
    let mut contenders: Vec<(Option<Candidate>, Strategy, Subject)> = Vec::new();
    for e in pool.iter().take(if stopped_early { 3 } else { 6 }) {
        if let Some((s, subj)) = compile(&e.cand, &o.header) {
            contenders.push((Some(e.cand.clone()), s, subj));
        }
    }
    if let Some(b) = &o.base {
        contenders.push((None, b.clone(), bench::strategy_subject(b)?));
    }
    let sweep = tune_sweep(&o.dists, GRID_SIZES, GRID_ALIAS, bench::DEFAULT_CALLS);
    let mut subjects = vec![bench::baseline("rep_movsb").expect("built in")];
    let mut strategies = Vec::new();
    let mut cands = Vec::new();
    for (c, s, subj) in contenders {
        subjects.push(subj);
        strategies.push(s);
        cands.push(c);
    }
    let opts = bench::Options {
        repeats: if stopped_early { 5 } else { 9 },
        target_ticks: 8_000.0,
        seed: rng.next_u64(),
    };
    let res = match o.site {
        None => bench::run_with(&sweep, &subjects, &opts, &|_, _| {}),
        Some(k) => kernel::measure(&sweep, &strategies.iter().collect::<Vec<_>>(), k, &opts)?,
    };
    let mut ranked: Vec<(usize, Score)> = (1..subjects.len())
        .map(|i| (i, score(&res, i, o.dists.len(), cliff)))
        .collect();
    // By the objective, which carries the bounds: a hard "feasible first"
    // would let one noisy cell at 1.06x outweigh a workload at 1.2x.
    ranked.sort_by(|a, b| a.1.objective.total_cmp(&b.1.objective));
    drop(subjects);

    // Only a strategy that keeps the contract on every case leaves.
    progress(0.85, "fault suite");
    let mut chosen = None;
    let mut fault_report = String::new();
    for (i, sc) in &ranked {
        let s = &strategies[i - 1];
        let (text, ok) = crate::jit::contract::run_strategy(s)?;
        if ok {
            chosen = Some((i - 1, sc.clone()));
            fault_report = text;
            break;
        }
        fault_report.push_str(&text);
    }
    let Some((k, sc)) = chosen else {
        bail!("no leader passed the fault suite:\n{fault_report}");
    };
    let strategy = strategies.swap_remove(k);
    let cand = cands.swap_remove(k);

    // The final report: every distribution (tuned on or not), the full
    // grid; rep movsb, rep movsq, the tuned strategy and the catalog.
    progress(0.9, "final measurement");
    let mut all = o.dists.clone();
    all.extend(o.extra.iter().cloned());
    let sweep = tune_sweep(&all, GRID_SIZES, GRID_ALIAS, bench::DEFAULT_CALLS);
    let opts = bench::Options {
        repeats: 9,
        target_ticks: 8_000.0,
        seed: rng.next_u64(),
    };
    let (report, tuned_subject) = match o.site {
        None => (final_report(&sweep, &strategy, &opts)?, 2),
        Some(k) => kernel::final_report(&sweep, &strategy, k, &opts)?,
    };
    let fin = score(&report, tuned_subject, o.dists.len(), cliff);
    let _ = sc;

    // The file: comments with the CPU, the distributions and the figures.
    let mut header = o.header.clone();
    header.comments = file_comments(
        &cpu,
        cliff_ratio,
        o,
        (&report, tuned_subject),
        &fin,
        evaluated,
    );
    header.tuned_on = Some(cpu.tuned_on());
    let text = match &cand {
        Some(c) => c.toml(&header),
        None => {
            // The base won: it, with the CPU it was measured on.
            let mut base = strategy.clone();
            base.tuned_on = header.tuned_on.clone();
            space::file_text(&header.comments, &base)
        }
    };
    let strategy =
        crate::front::parse::parse(Path::new(&format!("{}.toml", header.name)), &text, None)
            .map_err(|e| anyhow::anyhow!("the tuned file does not parse: {e}"))?;
    Ok(Outcome {
        strategy,
        text,
        cpu,
        cliff: cliff.then_some(cliff_ratio),
        report,
        tuned_subject,
        tuned_count: o.dists.len(),
        evaluated,
        stopped_early,
        fault_report,
    })
}

/// The final report's run: `rep movsb`, `rep movsq`, the tuned strategy
/// (subject 2) and the catalog, each called.
fn final_report(sweep: &Sweep, strategy: &Strategy, opts: &bench::Options) -> Result<Results> {
    let mut subjects = vec![
        bench::baseline("rep_movsb").expect("built in"),
        bench::baseline("rep_movsq").expect("built in"),
    ];
    let mut tuned_subject = bench::strategy_subject(strategy)?;
    tuned_subject.name = format!("{} (tuned)", strategy.name);
    subjects.push(tuned_subject);
    for s in crate::front::catalog::catalog()? {
        if s.arch == Arch::X86_64 && s.name != "rep-movsb" && s.name != strategy.name {
            // Per-CPU strategies as this CPU would run them.
            let found = crate::arch::cpu::host_features();
            subjects.push(crate::tools::bench::variant_subject(&s, None, found)?);
        }
    }
    Ok(bench::run_with(sweep, &subjects, opts, &|_, _| {}))
}

fn file_comments(
    cpu: &CpuInfo,
    cliff_ratio: f64,
    o: &Options,
    (res, tuned): (&Results, usize),
    fin: &Score,
    evaluated: usize,
) -> Vec<String> {
    let versus = match o.site {
        None => "rep movsb".to_string(),
        Some(k) => format!(
            "the stock {} call site (call sites inline, as the kernel runs them)",
            k.name()
        ),
    };
    let mut c = vec![
        format!("Tuned by `copygen tune` on {}.", cpu.describe()),
        format!(
            "rep movsb at 1 KiB with (dst - src) mod 4096 in 1..=15: {cliff_ratio:.1}x its cost at 0{}.",
            if cliff_ratio > CLIFF_RATIO {
                " (the alias cliff)"
            } else {
                ""
            }
        ),
        format!(
            "Tuned on: {}; {} candidates screened, budget {} s.",
            o.dists
                .iter()
                .map(|d| d.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            evaluated,
            o.budget.as_secs()
        ),
        format!(
            "Cost per call vs {versus}, same run (median of {} rounds, random page offsets):",
            res.repeats
        ),
    ];
    let ratios = round_ratios(res, tuned);
    for (r, row) in res.sweep.rows.iter().enumerate() {
        if let Some(d) = row.dist {
            c.push(format!(
                "  {:<18} {:.2}x{}",
                res.sweep.distributions[d].name,
                ratios[r],
                if d >= o.dists.len() {
                    "  (not tuned on)"
                } else {
                    ""
                }
            ));
        }
    }
    c.push(format!(
        "Worst cell of the fixed-size x alias grid: {:.2}x ({} B, distance {}).",
        fin.worst.0, fin.worst.1, fin.worst.2
    ));
    if let Some(w) = fin.worst_band {
        c.push(format!(
            "Inside the band 1..=15 from {BAND_FROM} B: at most {:.2}x ({} B, distance {}).",
            w.0, w.1, w.2
        ));
    }
    c.push("Figures are TSC ticks (reference clock), this CPU only.".into());
    c
}
