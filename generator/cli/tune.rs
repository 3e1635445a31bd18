//! `copygen tune`: search x86_64 strategies for this CPU.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use copygen::front::diagnostics::{at_field_of, FieldPath};
use copygen::front::parse;
use copygen::front::strategy::{Arch, KernelVersion};
use copygen::input::BadInput;

use super::{command_line, Failure};

#[derive(clap::Args)]
pub struct TuneArgs {
    /// A strategy (file or catalog name) to start from: its name, directions, linux options and
    /// precision are kept, and it competes as it is.
    base: Option<PathBuf>,
    /// Size distribution to tune on (llvm-libc CSV; a file or a built-in
    /// name); repeatable.
    #[arg(long, value_name = "FILE.csv", required_unless_present_any = ["merge", "workload"])]
    distribution: Vec<String>,
    /// Workload trace to tune on (CSV: direction,size,dst_offset,src_offset[,caller],
    /// as `bench --workload` reads), replayed in the recorded order at the
    /// recorded page offsets; an objective beside the distributions; repeatable.
    #[arg(long, value_name = "TRACE.csv")]
    workload: Vec<PathBuf>,
    /// Workload trace to report on but not tune on; repeatable.
    #[arg(long, value_name = "TRACE.csv")]
    check_workload: Vec<PathBuf>,
    /// Combine tune results from several CPUs (files `copygen tune` wrote)
    /// into one per-CPU strategy: a variant per CPU, conditioned on the
    /// feature bits it has; fault-checked before it is written.
    #[arg(long, value_name = "TUNED.toml", num_args = 2.., conflicts_with_all = ["base", "distribution", "workload", "check_workload"])]
    merge: Vec<PathBuf>,
    /// Seconds for the whole run (search about 70 %, then confirmation,
    /// fault suite and report); more than 0, at most 604800 (a week).
    #[arg(long, default_value_t = 180.0, value_parser = budget, allow_negative_numbers = true)]
    budget: f64,
    /// Write the tuned strategy here (default: stdout, after the report).
    #[arg(short, long, value_name = "OUT.toml")]
    output: Option<PathBuf>,
    /// Name of the tuned strategy (default: the base's, else `tuned`).
    #[arg(long)]
    name: Option<String>,
    /// Also report on these distributions (default: the built-in ones not tuned on).
    #[arg(long, value_name = "FILE.csv")]
    also: Vec<String>,
    /// Exit 1 (after writing everything) when the report misses a target.
    #[arg(long, conflicts_with = "merge")]
    require_targets: bool,
    /// Write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write an SVG plot of the final measurement here.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Seed of the search and the sequences.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tune for a kernel (`kernel`): score each candidate's call site as the
    /// kernel runs it on this CPU, inline with the routine it calls,
    /// against the stock kernel's site (as `bench --site kernel` does).
    #[arg(long, value_name = "WHERE", value_parser = ["kernel"], conflicts_with = "merge")]
    site: Option<String>,
    /// With --site kernel: the kernel whose call site is the target (6.12).
    #[arg(
        long,
        value_name = "VERSION",
        default_value = "6.12",
        requires = "site"
    )]
    site_kernel: String,
    #[command(flatten)]
    stock: super::StockFeaturesArg,
}

/// The longest `--budget`, in seconds (a week).
pub const MAX_BUDGET: f64 = 7.0 * 24.0 * 3600.0;

fn budget(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= MAX_BUDGET => Ok(v),
        _ => Err(format!(
            "a budget is a number of seconds, more than 0 and at most {MAX_BUDGET} (a week)"
        )),
    }
}

pub fn cmd_tune(a: TuneArgs) -> Result<ExitCode, Failure> {
    if !a.merge.is_empty() {
        return cmd_merge(&a);
    }
    super::check_outputs(&[("--json", &a.json), ("--plot", &a.plot), ("-o", &a.output)])?;
    use copygen::tools::bench::distribution::{Distribution, BUILTIN};
    use copygen::tools::tune;
    let load = |names: &[String]| -> Result<Vec<Distribution>, Failure> {
        names
            .iter()
            .map(|d| Distribution::load(d))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Failure::Input(BadInput(format!("{e:#}"))))
    };
    let dists = load(&a.distribution)?;
    let traces = |paths: &[PathBuf]| -> Result<Vec<_>, Failure> {
        paths
            .iter()
            .map(|p| copygen::tools::trace::Trace::load(p))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Failure::Input(BadInput(format!("{e:#}"))))
    };
    let workloads = traces(&a.workload)?;
    let check_workloads = traces(&a.check_workload)?;
    let mut extra = if a.also.is_empty() {
        BUILTIN
            .iter()
            .filter(|(n, _)| !dists.iter().any(|d| d.name == *n))
            .map(|(n, _)| Distribution::load(n))
            .collect::<Result<Vec<_>>>()?
    } else {
        load(&a.also)?
    };
    extra.retain(|e| !dists.iter().any(|d| d.name == e.name));
    let base = a
        .base
        .as_deref()
        .map(|p| super::strategy_arg(p, None))
        .transpose()?;
    let site = site_kernel(&a)?;
    if let Some(b) = &base {
        let refuse = |field: &str, why: String| {
            Failure::Input(at_field_of(b, &FieldPath::root().key(field), why).into())
        };
        if b.arch != Arch::X86_64 {
            return Err(refuse(
                "arch",
                format!(
                    "tune measures x86_64 strategies on this CPU; this one is {}",
                    b.arch
                ),
            ));
        }
        if !b.variants.is_empty() {
            return Err(refuse(
                "variants",
                format!(
                    "tune starts from a strategy without per-CPU variants; this one has {} \
                     (tune each CPU from a plain strategy and combine the results with --merge)",
                    b.variants.len()
                ),
            ));
        }
        // Its candidates keep what a tree cannot call (one direction,
        // zero_tail): refused as kernel-patch refuses it, before any search.
        if let Some(k) = site {
            copygen::tools::bench::site::wired(b, k).map_err(|e| super::unfit(b, e))?;
        }
    }
    // Without a base, the convention of the site tuned for: 6.12's inline
    // site calls rep_movs_alternative's; 6.1's glue (and a called routine)
    // the C convention.
    let mut header = match (&base, site) {
        (Some(b), _) => tune::CandidateBase::from_base(b),
        (None, Some(KernelVersion::V6_12)) => tune::CandidateBase::for_612_site("tuned"),
        (None, _) => tune::CandidateBase::new("tuned"),
    };
    if let Some(n) = &a.name {
        check_name_option(n)?;
        header.name = n.clone();
    }
    let opts = tune::TuneOptions {
        dists,
        extra,
        budget: std::time::Duration::from_secs_f64(a.budget),
        header,
        base,
        seed: a.seed,
        workloads,
        check_workloads,
        site,
        stock_features: a.stock.stock_features.clone(),
    };
    let bar = indicatif::ProgressBar::new(1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template("tune [{bar:30}] {elapsed}/{msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    let budget = a.budget;
    let outcome = tune::tune(&opts, &|frac, msg| {
        bar.set_position((frac.min(1.0) * 1000.0) as u64);
        bar.set_message(format!("{budget:.0}s {msg}"));
    })?;
    bar.finish_and_clear();
    let mut outcome = outcome;
    outcome.report.command = command_line();
    let (report, missed) = tune::report(&outcome);
    out!("{report}");
    let mut outputs = Vec::new();
    if let Some(p) = &a.json {
        let j = tune::report_json(&outcome, opts.dists.len());
        outputs.push((
            p.clone(),
            serde_json::to_string_pretty(&j).expect("json") + "\n",
        ));
    }
    if let Some(p) = &a.plot {
        let svg = copygen::tools::bench::plot_svg(&tune::plot_results(&outcome.report))?;
        outputs.push((p.clone(), svg));
    }
    match &a.output {
        Some(p) => outputs.push((p.clone(), outcome.text.clone())),
        None => out!("\n{}", outcome.text),
    }
    copygen::output::write::write_all(&outputs)?;
    for (p, _) in &outputs {
        errln!("wrote {}", p.display());
    }
    // The next steps, on standard error (standard output may be the file).
    let file = a.output.as_ref().map_or("TUNED.toml".to_string(), |p| {
        copygen::front::diagnostics::escape(&p.display().to_string(), false).into_owned()
    });
    // The kernel tuned for (`--site-kernel`), else the newest.
    let kernel = if a.site.is_some() {
        a.site_kernel.as_str()
    } else {
        "6.12"
    };
    errln!(
        "next: `copygen kernel-patch {file} --kernel {kernel}` makes it a kernel patch; \
         tune on other CPUs and `copygen tune --merge {file} OTHER.toml -o merged.toml` \
         makes one per-CPU strategy"
    );
    if missed > 0 && a.require_targets {
        errln!("error: {missed} target(s) missed (--require-targets)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--site kernel`'s kernel (6.1 or 6.12).
fn site_kernel(a: &TuneArgs) -> Result<Option<copygen::front::strategy::KernelVersion>, Failure> {
    match a.site {
        None => Ok(None),
        Some(_) => super::site_target(&a.site_kernel, a.stock.stock_features.as_deref()).map(Some),
    }
}

/// `--name`: a strategy name (letters, digits, `-` and `_`).
fn check_name_option(n: &str) -> Result<(), Failure> {
    if n.is_empty()
        || !n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Failure::Input(BadInput(format!(
            "error: --name `{n}`: letters, digits, - and _ only"
        ))));
    }
    Ok(())
}

/// `copygen tune --merge`: validated (the text parses back to the merged
/// strategy) and fault-checked (every variant) before anything is written.
fn cmd_merge(a: &TuneArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::tune::merge::{merge, Input};
    let inputs = a
        .merge
        .iter()
        .map(|p| {
            let text = parse::read_text(p).map_err(|e| Failure::Input(BadInput(e.to_string())))?;
            Ok(Input {
                path: p.clone(),
                text,
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    if let Some(n) = &a.name {
        check_name_option(n)?;
    }
    let (_, text) = merge(&inputs, a.name.as_deref()).map_err(|e| Failure::Input(BadInput(e)))?;
    let out_name = a
        .output
        .as_deref()
        .unwrap_or(std::path::Path::new("merged.toml"));
    // The merged text is checked as any strategy file is; what fails is
    // reported at what caused it (the --name option or the inputs), not at
    // a line of a file that is never written.
    let s = match parse::parse(out_name, &text, None) {
        Ok(s) => s,
        Err(e) => {
            let unnamed_ok = a.name.is_some()
                && merge(&inputs, None)
                    .is_ok_and(|(_, t)| parse::parse(out_name, &t, None).is_ok());
            let shown: Vec<String> = std::iter::once(&e)
                .chain(e.also.iter())
                .map(|e| e.message.clone())
                .collect();
            return Err(Failure::Input(BadInput(if unnamed_ok {
                format!(
                    "error: --name `{}`: {}",
                    a.name.as_deref().unwrap_or_default(),
                    shown.join("; ")
                )
            } else {
                let files: Vec<String> = a.merge.iter().map(|p| p.display().to_string()).collect();
                format!(
                    "error: {} do not merge into a valid strategy (nothing written): {}",
                    files.join(", "),
                    shown.join("; ")
                )
            })));
        }
    };
    let (report, ok) = copygen::jit::contract::run_strategy(&s).map_err(anyhow::Error::from)?;
    err!("{report}");
    if !ok {
        errln!("error: the merged strategy failed the JIT fault suite; nothing written");
        return Ok(ExitCode::from(1));
    }
    match &a.output {
        Some(p) => {
            copygen::output::write::write_file(p, &text)?;
            errln!("wrote {}", p.display());
        }
        None => out!("{text}"),
    }
    let file = a.output.as_ref().map_or("merged.toml".to_string(), |p| {
        copygen::front::diagnostics::escape(&p.display().to_string(), false).into_owned()
    });
    errln!("next: `copygen kernel-patch {file} --kernel 6.12` makes it a kernel patch");
    Ok(ExitCode::SUCCESS)
}
