//! The kernel objective (`tune --site kernel`): candidates scored by their
//! call site as a kernel runs it, inline in the timing loop with the
//! routine it calls, against the stock kernel's site in the same run
//! (`bench::site`), instead of a called routine against a called
//! `rep movsb`. On an FSRM CPU the stock 6.12 site is an inline `rep
//! movsb`, which a called `rep movsb` overstates by the call.

use anyhow::Result;

use super::measure::{compile, score_with, tune_sweep, Score, QUICK_ALIAS, QUICK_SIZES};
use super::{traces, Candidate, TuneOptions};
use crate::front::strategy::{Arch, KernelVersion, Strategy};
use crate::tools::bench::{self, site, Replay, Results, Sweep};

/// The stock site first (the baseline), then each strategy's site, for a
/// CPU with this one's features changed by `force` (`--stock-features`).
fn sites(
    strategies: &[&Strategy],
    (kernel, force): (KernelVersion, Option<&str>),
) -> Result<Vec<site::SiteSubject>> {
    let model = site::host_model(kernel, force)?;
    let mut subjects = vec![site::stock_subject(model)?];
    for s in strategies {
        subjects.push(site::site_subject(s, model)?);
    }
    Ok(subjects)
}

/// Each strategy's site against the stock site on `sweep`.
pub(super) fn measure(
    sweep: &Sweep,
    strategies: &[&Strategy],
    kernel: (KernelVersion, Option<&str>),
    opts: &bench::BenchOptions,
) -> Result<Results> {
    let subjects = sites(strategies, kernel)?;
    Ok(site::run_sites(sweep, &subjects, opts, &|_, _| {}))
}

/// [`traces::trace_ratios`] of the strategies' sites against the stock
/// site: per strategy, per replay, the median over rounds of the ratio.
pub(super) fn trace_ratios(
    replays: &[Replay],
    strategies: &[&Strategy],
    kernel: (KernelVersion, Option<&str>),
    repeats: usize,
    seed: u64,
) -> Result<Vec<Vec<f64>>> {
    if replays.is_empty() {
        return Ok(vec![Vec::new(); strategies.len()]);
    }
    let subjects = sites(strategies, kernel)?;
    Ok(traces::ratios_by(
        replays,
        subjects.len(),
        repeats,
        seed,
        &|r, opts| bench::replay_rounds_sites(r, &subjects, opts),
    ))
}

/// The final replay of each trace: the stock site (the baseline) and the
/// tuned strategy's site, with the size x distance table.
pub(super) fn final_trace_reports(
    o: &TuneOptions,
    tuned: &Strategy,
    kernel: (KernelVersion, Option<&str>),
    seed: u64,
) -> Result<Vec<traces::TraceReport>> {
    let mut subjects = sites(&[tuned], kernel)?;
    subjects[1].name = format!("{} (tuned)", tuned.name);
    subjects.push(stock_again(kernel)?);
    let empty = site::empty_site(site::host_model(kernel.0, kernel.1)?)?;
    Ok(traces::final_reports_by(
        &o.workloads,
        &o.check_workloads,
        (1, 2),
        seed,
        &|r, opts| bench::run_replay_sites(r, &subjects, &empty, opts, &|_, _| {}),
    ))
}

/// [`super::screen`] against the stock site.
pub(super) fn screen(
    c: &Candidate,
    o: &TuneOptions,
    replays: &[Replay],
    cliff: bool,
    seed: u64,
    kernel: KernelVersion,
) -> Option<Score> {
    let (s, _) = compile(c, &o.header)?;
    let sweep = tune_sweep(&o.dists, QUICK_SIZES, QUICK_ALIAS, 2048);
    let opts = bench::BenchOptions {
        repeats: 7,
        target_ticks: 6_000.0,
        seed,
    };
    let target = (kernel, o.stock_features.as_deref());
    let res = measure(&sweep, &[&s], target, &opts).ok()?;
    let tr = trace_ratios(replays, &[&s], target, 5, seed).ok()?;
    Some(score_with(&res, 1, o.dists.len(), cliff, &tr[0]))
}

/// The stock site timed again, as a subject of its own: the A/A control.
fn stock_again(kernel: (KernelVersion, Option<&str>)) -> Result<site::SiteSubject> {
    site::stock_again_subject(site::host_model(kernel.0, kernel.1)?)
}

/// The final report against the stock site: the tuned strategy's site,
/// then the catalog's x86_64 strategies' sites as this CPU would run them
/// (those a patch can put there: on 6.12 `guarded-movsb-612`, not
/// `guarded-movsb`), then the stock site again (the control). Returns the
/// results, the tuned strategy's subject and the control's.
pub(super) fn final_report(
    sweep: &Sweep,
    tuned: &Strategy,
    kernel: (KernelVersion, Option<&str>),
    opts: &bench::BenchOptions,
) -> Result<(Results, usize, usize)> {
    let catalog: Vec<Strategy> = crate::front::catalog::catalog()?
        .into_iter()
        .filter(|s| {
            s.arch == Arch::X86_64 && s.name != tuned.name && site::wired(s, kernel.0).is_ok()
        })
        .collect();
    let mut all = vec![tuned];
    all.extend(catalog.iter());
    let mut subjects = sites(&all, kernel)?;
    subjects[1].name = format!("{} (tuned)", tuned.name);
    subjects.push(stock_again(kernel)?);
    let control = subjects.len() - 1;
    Ok((
        site::run_sites(sweep, &subjects, opts, &|_, _| {}),
        1,
        control,
    ))
}

/// The stock path the model's CPU runs and, with `--stock-features`, that
/// its features were forced (the code such a CPU runs, timed on this one).
pub(super) fn stock_path(kernel: KernelVersion, force: Option<&str>) -> Result<String> {
    site::host_model(kernel, force)?.path_text()
}
