//! `copygen verify`: run the checks over a set of strategies and print one
//! table. Today that is fault injection ([`crate::checks::faultinject`]) on every
//! strategy's own architecture; static checks of the emitted objects slot
//! in next to it as another suite.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::checks::faultinject::{self, HarnessReport};
use crate::front::strategy::{Precision, Strategy};

/// The fault-injection results of one strategy.
pub struct FaultOutcome {
    pub strategy: String,
    pub arch: crate::front::strategy::Arch,
    pub precision: Precision,
    /// An error means the harness could not be built or run.
    pub report: Result<HarnessReport>,
}

impl FaultOutcome {
    pub fn failed(&self) -> bool {
        match &self.report {
            Ok(r) => r.violations() > 0,
            Err(_) => true,
        }
    }
}

/// Fault-inject every strategy, `jobs` at a time, with a progress bar on
/// stderr when `progress` (it hides itself when stderr is not a terminal).
/// Only strategies whose `runnable` is true are run (the others failed
/// the static check: their outcome says so); each in the sandbox with
/// `limits`.
pub fn fault_suite(
    strategies: &[Strategy],
    runnable: &[bool],
    jobs: usize,
    progress: bool,
    limits: &crate::checks::sandbox::Limits,
) -> Vec<FaultOutcome> {
    let bar = if progress {
        ProgressBar::with_draw_target(Some(strategies.len() as u64), ProgressDrawTarget::stderr())
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("fault injection {bar:30} {pos}/{len} {elapsed} {msg}")
            .expect("static template"),
    );
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Result<HarnessReport>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(s) = strategies.get(i) else { break };
                bar.set_message(format!("{} ({})", s.name, s.arch));
                let r = if runnable.get(i).copied().unwrap_or(false) {
                    faultinject::run_strategy_with(s, limits)
                } else {
                    Err(anyhow::anyhow!(
                        "not run: the static check failed (see above)"
                    ))
                };
                done.lock().expect("no panics while held").push((i, r));
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    let mut done = done.into_inner().expect("no panics while held");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter()
        .map(|(i, report)| FaultOutcome {
            strategy: strategies[i].name.clone(),
            arch: strategies[i].arch,
            precision: strategies[i].precision,
            report,
        })
        .collect()
}

/// The table `copygen verify` prints, then violation details and errors.
pub fn table(outcomes: &[FaultOutcome]) -> String {
    let mut t = String::new();
    writeln!(
        t,
        "{:<24} {:<7} {:<36} {:>7} {:>10} {:>9} {:>6} {:>8}",
        "strategy", "arch", "routine", "cases", "violations", "shortfall", "text", "extable"
    )
    .unwrap();
    for o in outcomes {
        match &o.report {
            Ok(r) => {
                for x in &r.routines {
                    writeln!(
                        t,
                        "{:<24} {:<7} {:<36} {:>7} {:>10} {:>9} {:>6} {:>8}",
                        o.strategy,
                        // Arch's Display ignores width: pad its name.
                        o.arch.name(),
                        x.symbol,
                        x.cases,
                        x.violations,
                        x.max_shortfall,
                        x.text_bytes,
                        x.extable_entries
                    )
                    .unwrap();
                }
            }
            Err(_) => writeln!(
                t,
                "{:<24} {:<7} (could not run: see below)",
                o.strategy,
                o.arch.name()
            )
            .unwrap(),
        }
    }
    let routines: usize = outcomes
        .iter()
        .filter_map(|o| o.report.as_ref().ok())
        .map(|r| r.routines.len())
        .sum();
    let cases: u64 = outcomes
        .iter()
        .filter_map(|o| o.report.as_ref().ok())
        .flat_map(|r| &r.routines)
        .map(|x| x.cases)
        .sum();
    let violations: u64 = outcomes
        .iter()
        .filter_map(|o| o.report.as_ref().ok())
        .map(|r| r.violations())
        .sum();
    writeln!(
        t,
        "{} strategies, {routines} routines, {cases} cases, {violations} violations",
        outcomes.len()
    )
    .unwrap();
    for o in outcomes {
        match &o.report {
            Ok(r) => {
                for d in &r.details {
                    writeln!(t, "{}: {d}", o.strategy).unwrap();
                }
            }
            Err(e) => writeln!(t, "{} ({}): error: {e:#}", o.strategy, o.arch.name()).unwrap(),
        }
    }
    t
}

/// Fault-inject a hand-written standalone `.S` (any arch): every
/// `*_from_user` / `*_to_user` function the static check found, in its
/// direction. Its precision is unknown, so a shortfall is reported, not a
/// violation.
pub fn fault_asm_file(
    path: &std::path::Path,
    found: &crate::checks::static_verify::Report,
    limits: &crate::checks::sandbox::Limits,
) -> FaultOutcome {
    use crate::checks::static_verify::UserSide;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let report = (|| {
        // Code the static check failed is never run.
        if !found.passed() {
            anyhow::bail!(
                "{}: not run: the static check failed (see above)",
                path.display()
            );
        }
        if found.flavor != crate::front::strategy::Flavor::Standalone {
            anyhow::bail!(
                "{}: fault injection runs the standalone flavor; this file includes kernel headers",
                path.display()
            );
        }
        let entries: Vec<faultinject::EntryPoint> = found
            .functions
            .iter()
            .filter_map(|f| {
                let direction = match f.side {
                    UserSide::FromUser => crate::front::strategy::Direction::FromUser,
                    UserSide::ToUser => crate::front::strategy::Direction::ToUser,
                    UserSide::Both => return None,
                };
                Some(faultinject::EntryPoint {
                    symbol: f.name.clone(),
                    direction,
                    fixed: f.fixed.map(|n| n as u32),
                    zero_tail: false,
                    exact: false,
                })
            })
            .collect();
        if entries.is_empty() {
            anyhow::bail!(
                "{}: no *_from_user / *_to_user function to fault-inject",
                path.display()
            );
        }
        let asm = crate::input::read_string(path)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        faultinject::run_asm_with(found.arch, &asm, &entries, limits)
    })();
    FaultOutcome {
        strategy: name,
        arch: found.arch,
        precision: Precision::Block,
        report,
    }
}
