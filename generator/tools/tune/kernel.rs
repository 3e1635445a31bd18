//! The kernel objective (`tune --site kernel`): candidates scored by their
//! call site as a kernel runs it, inline in the timing loop with the
//! routine it calls, against the stock kernel's site in the same run
//! (`bench::site`), instead of a called routine against a called
//! `rep movsb`. On an FSRM CPU the stock 6.12 site is an inline `rep
//! movsb`, which a called `rep movsb` overstates by the call.

use anyhow::Result;

use super::measure::{compile, score, tune_sweep, Score, QUICK_ALIAS, QUICK_SIZES};
use super::{Candidate, TuneOptions};
use crate::front::strategy::{Arch, KernelVersion, Strategy};
use crate::tools::bench::{self, site, Results, Sweep};

/// The stock site first (the baseline), then each strategy's site, for a
/// CPU with this one's features changed by `force` (`--stock-features`).
pub(super) fn measure(
    sweep: &Sweep,
    strategies: &[&Strategy],
    (kernel, force): (KernelVersion, Option<&str>),
    opts: &bench::BenchOptions,
) -> Result<Results> {
    let model = site::host_model(kernel, force)?;
    let mut subjects = vec![site::stock_subject(model)?];
    for s in strategies {
        subjects.push(site::site_subject(s, model)?);
    }
    Ok(site::run_sites(sweep, &subjects, opts, &|_, _| {}))
}

/// [`super::screen`] against the stock site.
pub(super) fn screen(
    c: &Candidate,
    o: &TuneOptions,
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
    let res = measure(&sweep, &[&s], (kernel, o.stock_features.as_deref()), &opts).ok()?;
    Some(score(&res, 1, o.dists.len(), cliff))
}

/// The final report against the stock site: the tuned strategy's site,
/// then the catalog's x86_64 strategies' sites as this CPU would run them.
/// Returns the results and the tuned strategy's subject.
pub(super) fn final_report(
    sweep: &Sweep,
    tuned: &Strategy,
    kernel: (KernelVersion, Option<&str>),
    opts: &bench::BenchOptions,
) -> Result<(Results, usize)> {
    let catalog: Vec<Strategy> = crate::front::catalog::catalog()?
        .into_iter()
        .filter(|s| s.arch == Arch::X86_64 && s.name != tuned.name)
        .collect();
    let mut all = vec![tuned];
    all.extend(catalog.iter());
    let mut res = measure(sweep, &all, kernel, opts)?;
    res.subjects[1] = format!("{} (tuned)", tuned.name);
    Ok((res, 1))
}

/// The stock path the model's CPU runs and, with `--stock-features`, that
/// its features were forced (the code such a CPU runs, timed on this one).
pub(super) fn stock_path(kernel: KernelVersion, force: Option<&str>) -> Result<String> {
    site::host_model(kernel, force)?.path_text()
}
