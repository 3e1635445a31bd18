//! `copygen tune`: search x86_64 strategies for the CPU this runs on and a
//! set of workloads (size distributions and recorded traces), JIT-timed
//! against `rep movsb` in the same runs, and write the winner as an
//! ordinary strategy file.
//!
//! First the CPU's alias bands are measured ([`bands`]): where `rep movsb`
//! has a cliff in `(dst - src) mod 4096`, at which sizes, how wide. The
//! search space is then an optional head/tail class for short copies, an
//! optional mid class (an unrolled loop up to a searched size), the large
//! class's `rep movsb` or `rep movsq` (each with or without the
//! destination aligned to 8), and for each measured band an optional guard
//! (the band, for a size range) sending it to an unrolled loop of its own
//! — block, registers, grouping, alignment, prefetch and tail free; a guard
//! is tested before the mid or large class's method. With no band, no
//! candidate has an alias guard. Every candidate is written as
//! TOML and parsed by the ordinary validator, so what is measured is
//! exactly what a strategy file says.
//!
//! The objective is the mean cost over the distributions and the traces
//! ([`traces`]; per-round ratio to `rep movsb`, median over rounds), the
//! worst one's excess, and penalties that bound every cell of a fixed-size
//! x alias grid: no cell above [`BOUND`] x `rep movsb`, and, on a CPU whose
//! `rep movsb` collapses inside the band, every cell of sizes from 1 KiB
//! with `(dst - src) mod 4096` in 1..=15 at most [`BAND_BOUND`]. Mean and
//! bounds hold at once: fixed sizes flatter branchy code (every branch
//! predicted), the distributions and traces keep it honest.
//!
//! Leaders are re-measured together (interleaved, more rounds) before one
//! is chosen, and only a strategy that passes the full JIT fault suite is
//! returned.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::front::strategy::{Arch, Strategy};
use crate::tools::bench::{self, distribution::Distribution, Results, Subject};
use anyhow::{bail, Result};

/// No cell of the fixed-size x alias grid may cost more than this many
/// times `rep movsb`.
pub const BOUND: f64 = 1.05;
/// On a CPU with the alias cliff: cells of sizes >= [`BAND_FROM`] with
/// `(dst - src) mod 4096` in 1..=15 cost at most this many times `rep movsb`.
pub const BAND_BOUND: f64 = 0.15;
pub const BAND_FROM: usize = 1024;
/// `rep movsb` at 1 KiB inside the band 1..=15 over its cost at distance
/// 0, above which the CPU is said to have the alias cliff (and
/// [`BAND_BOUND`] applies).
const ALIAS_CLIFF_RATIO: f64 = 4.0;

mod band_report;
pub mod bands;
mod kernel;
mod measure;
pub mod merge;
mod report;
pub mod space;
pub mod traces;

pub use crate::tools::host_cpu::{cpu_info, CpuInfo};
use measure::{compile, QUICK_ALIAS, QUICK_SIZES};
pub use measure::{round_ratios, score, score_with, tune_sweep, Score, GRID_ALIAS, GRID_SIZES};
pub use report::{
    class_table, plot_results, report, report_json, report_text, ALIAS_CLASSES, SIZE_CLASSES,
};
pub use space::{
    BandGuard, BandSpace, Candidate, CandidateBase, ClassChoice, ClassKind, LargeMethod, LoopShape,
    LARGE, MID_MAX,
};

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

pub struct TuneOptions {
    pub dists: Vec<Distribution>,
    /// Distributions reported but not tuned on.
    pub extra: Vec<Distribution>,
    pub budget: Duration,
    pub header: CandidateBase,
    /// A base strategy measured as a contender of its own.
    pub base: Option<Strategy>,
    pub seed: u64,
    /// Workload traces tuned on (objectives beside the distributions).
    pub workloads: Vec<crate::tools::trace::Trace>,
    /// Workload traces reported but not tuned on.
    pub check_workloads: Vec<crate::tools::trace::Trace>,
    /// Score call sites as this kernel runs them against its stock site
    /// (`kernel.rs`), instead of called routines against `rep movsb`.
    pub site: Option<crate::front::strategy::KernelVersion>,
    /// With `site`: the features the kernel's alternatives are resolved
    /// for, changed from this CPU's (`-erms,-fsrm`: the code a CPU without
    /// ERMS runs, timed on this one); `bench --site kernel --stock-features`.
    pub stock_features: Option<String>,
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
    /// The baseline timed again in the final run, as a subject of its own:
    /// an A/A control, whose ratios are the run's noise (its worst grid
    /// cell is what a worst of that many cells of identical code reads).
    pub control: usize,
    /// How many of the report's distributions were tuned on (the first ones).
    pub tuned_count: usize,
    pub evaluated: usize,
    pub stopped_early: bool,
    pub fault_report: String,
    /// The band measurement, and the bands it found at each size.
    pub band_table: bands::BandTable,
    pub bands: Vec<bands::SizeBands>,
    /// The candidate chosen (None when the base won).
    pub chosen: Option<Candidate>,
    /// The final replay of each trace, tuned on or checked.
    pub traces: Vec<traces::TraceReport>,
    /// With `--site kernel`: the stock path the baseline runs (and, with
    /// `--stock-features`, that it is another CPU's code timed on this one).
    pub stock_path: Option<String>,
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

/// Screen one candidate: it and `rep movsb`, interleaved, on the
/// distributions and the quick grid, then on the traces.
fn screen(
    c: &Candidate,
    o: &TuneOptions,
    replays: &[bench::Replay],
    cliff: bool,
    seed: u64,
) -> Option<Score> {
    if let Some(k) = o.site {
        return kernel::screen(c, o, replays, cliff, seed, k);
    }
    let (_, subject) = compile(c, &o.header)?;
    let sweep = tune_sweep(&o.dists, QUICK_SIZES, QUICK_ALIAS, 2048);
    let subjects = [bench::baseline("rep_movsb").expect("built in"), subject];
    let opts = bench::BenchOptions {
        repeats: 7,
        target_ticks: 6_000.0,
        seed,
    };
    let res = bench::run_with(&sweep, &subjects, &opts, &|_, _| {});
    let tr = traces::trace_ratios(replays, &subjects, 5, seed);
    Some(score_with(&res, 1, o.dists.len(), cliff, &tr[0]))
}

/// Run the search; `progress(fraction, message)` is told as it goes.
pub fn tune(o: &TuneOptions, progress: &dyn Fn(f64, &str)) -> Result<Outcome> {
    if o.dists.is_empty() && o.workloads.is_empty() {
        bail!("tune needs at least one --distribution or --workload");
    }
    catch_ctrl_c();
    let start = Instant::now();
    let cpu = cpu_info();
    // The stock site is loaded (and its tree built) before anything is measured.
    let stock_path = match o.site {
        Some(k) => Some(kernel::stock_path(k, o.stock_features.as_deref())?),
        None => None,
    };
    progress(0.0, "measuring the alias bands");
    let band_table = bands::measure_bands(o.seed);
    let per_size = bands::detect_bands(&band_table);
    let space = BandSpace::from_detected(&per_size);
    let cliff_ratio = band_table.cliff_ratio();
    let cliff = cliff_ratio > ALIAS_CLIFF_RATIO;
    let replays = traces::replays(&o.workloads, traces::SEGMENT_CALLS);
    let mut rng = bench::Rng::new(o.seed);
    // 70 % of the budget searches; the rest confirms, checks and reports.
    let search_until = o.budget.mul_f64(0.7);
    let mut pool: Vec<Evaluated> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Every candidate within the convention's scratch registers.
    let registers = o.header.registers();
    let mut seeds: Vec<Candidate> = Candidate::band_seeds(&space, &space.size_sets(&per_size))
        .into_iter()
        .map(|c| c.within(registers))
        .collect();
    let mut round = 0u64;
    let mut stopped_early = false;
    // Loading the stock site and measuring the bands count against the
    // budget; on a loaded machine they can use up a short one, so the first
    // candidates are measured regardless and a tune always has a result.
    const FIRST_TRIES: u64 = 8;
    while start.elapsed() < search_until || (pool.is_empty() && round < FIRST_TRIES) {
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
            let mut c = parent.mutate_bands(&mut rng, &space).within(registers);
            let mut tries = 0;
            while seen.contains(&c) && tries < 20 {
                c = parent.mutate_bands(&mut rng, &space).within(registers);
                tries += 1;
            }
            c
        };
        seen.insert(cand.clone());
        let Some(sc) = screen(&cand, o, &replays, cliff, rng.next_u64()) else {
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
                "{} measured; best: {} vs rep_movsb on the distributions and traces, worst cell {:.2}x",
                pool.len(),
                best.last
                    .distributions
                    .iter()
                    .chain(&best.last.traces)
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
    let opts = bench::BenchOptions {
        repeats: if stopped_early { 5 } else { 9 },
        target_ticks: 8_000.0,
        seed: rng.next_u64(),
    };
    let (res, tr) = match o.site {
        None => {
            let res = bench::run_with(&sweep, &subjects, &opts, &|_, _| {});
            let tr = traces::trace_ratios(&replays, &subjects, opts.repeats, opts.seed);
            (res, tr)
        }
        Some(k) => {
            let all: Vec<&Strategy> = strategies.iter().collect();
            let target = (k, o.stock_features.as_deref());
            let res = kernel::measure(&sweep, &all, target, &opts)?;
            let tr = kernel::trace_ratios(&replays, &all, target, opts.repeats, opts.seed)?;
            (res, tr)
        }
    };
    let mut ranked: Vec<(usize, Score)> = (1..subjects.len())
        .map(|i| (i, score_with(&res, i, o.dists.len(), cliff, &tr[i - 1])))
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
    let opts = bench::BenchOptions {
        repeats: 9,
        target_ticks: 8_000.0,
        seed: rng.next_u64(),
    };
    let (report, tuned_subject, control) = match o.site {
        None => final_report(&sweep, &strategy, &opts)?,
        Some(k) => {
            kernel::final_report(&sweep, &strategy, (k, o.stock_features.as_deref()), &opts)?
        }
    };
    // Traces replay called routines against rep movsb, or with `--site
    // kernel` the sites against the stock site.
    progress(0.95, "replaying the traces");
    let traces = if let Some(k) = o.site {
        kernel::final_trace_reports(
            o,
            &strategy,
            (k, o.stock_features.as_deref()),
            rng.next_u64(),
        )?
    } else {
        let mut tuned = bench::strategy_subject(&strategy)?;
        tuned.name = format!("{} (tuned)", strategy.name);
        let subjects = [
            bench::baseline("rep_movsb").expect("built in"),
            bench::baseline("rep_movsq").expect("built in"),
            tuned,
            rep_movsb_again(),
        ];
        traces::final_reports(
            &o.workloads,
            &o.check_workloads,
            &subjects,
            (2, 3),
            rng.next_u64(),
        )
    };
    let tuned_traces: Vec<f64> = traces
        .iter()
        .filter(|t| t.tuned_on)
        .map(|t| t.ratio())
        .collect();
    let fin = score_with(&report, tuned_subject, o.dists.len(), cliff, &tuned_traces);
    let _ = sc;

    // The file: comments with the CPU, the distributions and the figures.
    let mut header = o.header.clone();
    header.comments = run_comments(
        &cpu,
        cliff_ratio,
        o,
        (&report, tuned_subject, control),
        &fin,
        evaluated,
        stock_path.as_deref(),
    );
    if let Some(c) = &cand {
        header.comments.push(format!(
            "Size classes (ratio to {} on the final grid outside alias guards: median, worst):",
            report.subjects[report.baseline]
        ));
        header.comments.extend(
            report::class_choice_lines(c, &strategy, &report, tuned_subject)
                .into_iter()
                .map(|l| format!("  {l}")),
        );
    }
    header.comments.extend(traces::trace_comments(&traces));
    header
        .comments
        .extend(band_report::band_comments(&per_size, cand.as_ref()));
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
        control,
        tuned_count: o.dists.len(),
        evaluated,
        stopped_early,
        fault_report,
        band_table,
        bands: per_size,
        chosen: cand,
        traces,
        stock_path,
    })
}

/// `rep movsb` as the final run's A/A control: the baseline's code, timed
/// as a subject of its own.
fn rep_movsb_again() -> Subject {
    let mut again = bench::baseline("rep_movsb").expect("built in");
    again.name = "rep_movsb again".into();
    again
}

/// The final report's run: `rep movsb`, `rep movsq`, the tuned strategy,
/// the catalog, each called, and `rep movsb` again (the control). Returns
/// the results, the tuned strategy's subject and the control's.
fn final_report(
    sweep: &bench::Sweep,
    strategy: &Strategy,
    opts: &bench::BenchOptions,
) -> Result<(Results, usize, usize)> {
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
    subjects.push(rep_movsb_again());
    let control = subjects.len() - 1;
    Ok((
        bench::run_with(sweep, &subjects, opts, &|_, _| {}),
        2,
        control,
    ))
}

/// The tuned file's first comment lines: the CPU, its alias cliff, what
/// was tuned on and the figures.
fn run_comments(
    cpu: &CpuInfo,
    cliff_ratio: f64,
    o: &TuneOptions,
    (res, tuned, control): (&Results, usize, usize),
    fin: &Score,
    evaluated: usize,
    stock_path: Option<&str>,
) -> Vec<String> {
    let versus = match o.site {
        None => "rep movsb".to_string(),
        Some(k) => format!(
            "the stock {} call site (call sites inline, as the kernel runs them)",
            k.name()
        ),
    };
    let mut c = vec![format!("Tuned by `copygen tune` on {}.", cpu.describe())];
    c.extend(
        stock_path
            .into_iter()
            .flat_map(str::lines)
            .map(str::to_string),
    );
    c.extend([
        format!(
            "rep movsb at 1 KiB with (dst - src) mod 4096 in 1..=15: {cliff_ratio:.1}x its cost at 0{}.",
            if cliff_ratio > ALIAS_CLIFF_RATIO {
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
                .chain(o.workloads.iter().map(|t| t.origin.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
            evaluated,
            o.budget.as_secs()
        ),
        format!(
            "Cost per call vs {versus}, same run (median of {} rounds, random page offsets):",
            res.repeats
        ),
    ]);
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
    let noise = score(res, control, 0, false).worst;
    c.push(format!(
        "Worst cell of the fixed-size x alias grid: {:.2}x ({} B, distance {}); the baseline timed again: {:.2}x ({} B, distance {}).",
        fin.worst.0, fin.worst.1, fin.worst.2, noise.0, noise.1, noise.2
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
