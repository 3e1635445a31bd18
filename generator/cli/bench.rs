//! `copygen bench`: strategies (JIT) and baselines timed in one run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::{Arch, KernelVersion};
use copygen::input::BadInput;

use super::{command_line, Failure};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Strategy files, catalog names, or baselines: rep_movsb, rep_movsq, memcpy.
    /// With --site kernel, `stock` times the stock site once more beside the
    /// baseline (an A/A control: its ratios are the run's noise).
    #[arg(required_unless_present = "kernel")]
    subjects: Vec<String>,
    /// Re-run a kernel thread's table: abeni, wilson, morton, anand; or alias.
    #[arg(long, conflicts_with_all = ["sizes", "alias_offsets", "distribution"])]
    table: Option<String>,
    /// Sizes drawn from a measured distribution (llvm-libc's CSV format; a
    /// file, or a built-in name such as MemcpyGoogleA); repeatable. src and
    /// dst at independent random page offsets, a fresh sequence every round.
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["sizes", "alias_offsets"])]
    distribution: Vec<String>,
    /// Replay a workload trace (CSV: direction,size,dst_offset,src_offset[,caller];
    /// see docs/benchmarking.md) in the recorded order at the recorded page offsets.
    #[arg(long, value_name = "FILE.csv",
          conflicts_with_all = ["table", "sizes", "alias_offsets", "distribution", "cold", "kernel", "plot", "alias_share", "pointers"])]
    workload: Option<PathBuf>,
    /// With --workload: bytes of source plus destination buffers the calls
    /// rotate over, 8192 to 536870912 (default 262144, L2-resident).
    #[arg(long, value_name = "BYTES", requires = "workload",
          default_value_t = copygen::tools::bench::DEFAULT_WORKING_SET,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(8192..=2 * MAX_SIZE as u64))]
    working_set: usize,
    /// With --distribution: where the pointers sit in their pages: uniform
    /// (independent random offsets), malloc (glibc malloc blocks: 16-aligned,
    /// from 128 KiB at offset 16) or page-cache (src at offset 0, dst a malloc block).
    #[arg(long, default_value = "uniform", value_parser = pointers)]
    pointers: copygen::tools::bench::distribution::Pointers,
    /// With --distribution: calls per sequence, 1 to 1048576 (with
    /// --workload: calls per replayed segment; a shorter trace wraps).
    #[arg(long, default_value_t = copygen::tools::bench::DEFAULT_CALLS,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_CALLS as u64))]
    calls: usize,
    /// With --distribution: share of calls (0..1) sent into the aliasing
    /// band, (dst - src) mod 4096 in 1..=63 (default: its natural rate).
    #[arg(long, default_value_t = 0.0, value_parser = share)]
    alias_share: f64,
    /// The subject the ratio columns divide by (default: rep_movsb when
    /// measured, else the first subject); added when not listed.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Seed of the measuring order and the random sequences.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sizes: `1,2,8`, `0..=64` or `64..=4096:64`; each at most 268435456
    /// (256 MiB), at most 65536 of them.
    #[arg(long, value_parser = sizes)]
    sizes: Option<List>,
    /// Source offsets from a page boundary (list or range), each 0 to 4095.
    #[arg(long, default_value = "0", value_parser = offsets)]
    src_offsets: List,
    /// Destination offsets from a page boundary (list or range), each 0 to 4095.
    #[arg(long, default_value = "0", value_parser = offsets)]
    dst_offsets: List,
    /// Sweep `(dst - src) mod 4096` over these values, each 0 to 4095 (at
    /// --sizes, default 1024).
    #[arg(long, value_parser = offsets)]
    alias_offsets: Option<List>,
    /// Flush the buffers from the caches before every call.
    #[arg(long)]
    cold: bool,
    /// Add the running kernel: `pread()` of a cached memfd into the destination
    /// (its copy_to_user), as the first column.
    #[arg(long)]
    kernel: bool,
    /// Rounds, 1 to 10000; each figure is the median over them.
    #[arg(long, default_value_t = 15,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=MAX_REPEATS as u64))]
    repeats: usize,
    /// Write Google Benchmark JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write an SVG plot here.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Run this per-CPU variant of each strategy instead of the one this CPU selects.
    #[arg(long)]
    variant: Option<String>,
    /// Time what the kernel executes (`kernel`): each strategy's call site
    /// as alternatives leave it for this CPU, inline in the timing loop with
    /// the routine it calls, against the stock kernel's site.
    #[arg(long, value_name = "WHERE", value_parser = ["kernel"],
          conflicts_with_all = ["kernel", "baseline", "variant"])]
    site: Option<String>,
    /// With --site kernel: the kernel whose call site is timed (6.1 or
    /// 6.12).
    #[arg(
        long,
        value_name = "VERSION",
        default_value = "6.12",
        requires = "site"
    )]
    site_kernel: String,
    /// With --site kernel: the kernel tree whose arch/x86/lib/copy_user_64.S
    /// is the stock routine (built with kbuild into copygen's cache). Default:
    /// $COPYGEN_KERNEL_CACHE/linux-VERSION, else Debian's
    /// /usr/src/linux-source-VERSION.tar.xz, unpacked into the cache.
    #[arg(long, value_name = "DIR", requires = "site")]
    tree: Option<PathBuf>,
    #[command(flatten)]
    stock: super::StockFeaturesArg,
    /// With --site kernel: measure the figures `kernel-patch --figures`
    /// takes (distributions, sizes 0..64, 8 KiB at offsets 0..0x20, the
    /// alias band) for one strategy and write them here.
    #[arg(long, value_name = "FILE", requires = "site",
          conflicts_with_all = ["table", "sizes", "alias_offsets", "distribution", "workload", "json", "plot", "cold"])]
    figures_out: Option<PathBuf>,
}

/// The largest `--sizes` value: the bench allocates twice the largest size
/// (source and destination buffers) and fills it.
pub const MAX_SIZE: usize = 256 << 20;
/// Offsets are from a page boundary (and `--alias-offsets` mod 4096).
pub const MAX_OFFSET: usize = 4095;
/// The most `--calls` per sequence (8 bytes each, kept for every round).
pub const MAX_CALLS: usize = 1 << 20;
/// The most `--repeats`.
pub const MAX_REPEATS: usize = 10_000;
/// The most rows one sweep measures (sizes times offsets).
pub const MAX_ROWS: usize = 65_536;

/// A list option's values (`1,2,8`, `0..=64`, `64..=4096:64`), range-checked
/// as clap parses them, so a bad one is a usage error naming the option.
#[derive(Clone, Debug)]
pub struct List(Vec<usize>);

fn sizes(s: &str) -> Result<List, String> {
    copygen::tools::bench::parse_list_bounded(s, MAX_SIZE)
        .map(List)
        .map_err(|e| format!("{e:#} (256 MiB)"))
}

fn offsets(s: &str) -> Result<List, String> {
    copygen::tools::bench::parse_list_bounded(s, MAX_OFFSET)
        .map(List)
        .map_err(|e| format!("{e:#} (offsets are within a 4096-byte page)"))
}

fn pointers(s: &str) -> Result<copygen::tools::bench::distribution::Pointers, String> {
    use copygen::tools::bench::distribution::Pointers;
    Pointers::parse(s.trim())
        .ok_or_else(|| format!("a pointer model is one of: {}", Pointers::NAMES.join(", ")))
}

fn share(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err("a share of calls is a number from 0 to 1".into()),
    }
}

/// Refuse a sweep of more than [`MAX_ROWS`] rows before building it.
fn check_rows(what: &str, lens: &[usize]) -> Result<(), Failure> {
    let rows = lens.iter().fold(1usize, |a, &n| a.saturating_mul(n));
    if rows > MAX_ROWS {
        return Err(Failure::Input(BadInput(format!(
            "error: {what} make {rows} rows; a bench measures at most {MAX_ROWS}"
        ))));
    }
    Ok(())
}

pub fn cmd_bench(a: BenchArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::bench;
    super::check_outputs(&[
        ("--json", &a.json),
        ("--plot", &a.plot),
        ("--figures-out", &a.figures_out),
    ])?;
    if let Some(w) = &a.workload {
        return cmd_replay(&a, w);
    }
    let input = |e: anyhow::Error| Failure::Input(BadInput(format!("error: {e:#}")));
    let mut sweep = if let Some(t) = &a.table {
        bench::table(t).map_err(input)?
    } else if !a.distribution.is_empty() {
        let dists = a
            .distribution
            .iter()
            .map(|d| bench::distribution::Distribution::load(d))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Failure::Input(BadInput(format!("{e:#}"))))?;
        bench::distribution_sweep_with(dists, a.calls, a.alias_share, a.pointers)
    } else if let Some(List(alias)) = &a.alias_offsets {
        let sizes = a.sizes.as_ref().map_or(vec![1024], |l| l.0.clone());
        check_rows("--sizes and --alias-offsets", &[sizes.len(), alias.len()])?;
        bench::Sweep {
            name: "alias".into(),
            title: "(dst - src) mod 4096 sweep".into(),
            x_label: "(dst - src) mod 4096".into(),
            rows: bench::alias_rows(&sizes, alias),
            ..bench::Sweep::default()
        }
    } else {
        let sizes = a.sizes.as_ref().map_or((0..=64).collect(), |l| l.0.clone());
        let (src, dst) = (&a.src_offsets.0, &a.dst_offsets.0);
        check_rows(
            "--sizes, --src-offsets and --dst-offsets",
            &[sizes.len(), src.len(), dst.len()],
        )?;
        bench::custom(&sizes, src, dst)
    };
    sweep.cold = a.cold;
    if a.site.is_some() {
        return cmd_site(&a, &sweep);
    }
    let mut subjects = Vec::new();
    if a.kernel {
        let largest = sweep.rows.iter().map(|r| r.n).max().unwrap_or(0);
        subjects.push(bench::kernel_subject(largest.max(1))?);
    }
    let (subjects, baseline) = subjects_and_baseline(&a, subjects)?;
    let opts = run_options(&a);
    let mut results = with_progress(&sweep.name, |p| {
        bench::run_with(&sweep, &subjects, &opts, p)
    });
    if let Some(b) = baseline {
        results.baseline = b;
    }
    results.command = command_line();
    table(&a, format_args!("{}", bench::text_table(&results)))?;
    write_outputs(&a, &results)
}

/// The subjects named on the command line after `pre` (the kernel column),
/// and the index of `--baseline` when given (added when not listed).
fn subjects_and_baseline(
    a: &BenchArgs,
    mut subjects: Vec<copygen::tools::bench::Subject>,
) -> Result<(Vec<copygen::tools::bench::Subject>, Option<usize>), Failure> {
    let found = copygen::arch::cpu::host_features();
    let mut any_variants = false;
    for name in &a.subjects {
        let (subject, has_variants) = bench_subject(name, a.variant.as_deref(), found)?;
        subjects.push(subject);
        any_variants |= has_variants;
    }
    if let (Some(v), false) = (&a.variant, any_variants) {
        return Err(Failure::Input(BadInput(format!(
            "error: --variant {v}: no strategy benchmarked has per-CPU variants"
        ))));
    }
    let baseline = match &a.baseline {
        None => None,
        Some(b) => Some(match subjects.iter().position(|s| &s.name == b) {
            Some(i) => i,
            None => {
                subjects.push(bench_subject(b, None, found)?.0);
                subjects.len() - 1
            }
        }),
    };
    Ok((subjects, baseline))
}

pub(super) fn run_options(a: &BenchArgs) -> copygen::tools::bench::BenchOptions {
    copygen::tools::bench::BenchOptions {
        repeats: a.repeats,
        seed: a.seed,
        ..copygen::tools::bench::BenchOptions::default()
    }
}

/// `run` with a progress bar that it advances and that is cleared after.
pub(super) fn with_progress<T>(name: &str, run: impl FnOnce(&dyn Fn(u64, u64)) -> T) -> T {
    let bar = progress_bar(name);
    let out = run(&|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    out
}

fn progress_bar(name: &str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .expect("template")
            .progress_chars("=> "),
    );
    bar.set_message(format!("bench {name}"));
    bar
}

/// `--workload`: replay a trace.
fn cmd_replay(a: &BenchArgs, path: &std::path::Path) -> Result<ExitCode, Failure> {
    use copygen::tools::bench;
    let trace = copygen::tools::trace::Trace::load(path)
        .map_err(|e| Failure::Input(BadInput(format!("{e:#}"))))?;
    let sites = a.site.is_some().then(|| sites(a)).transpose()?;
    let (subjects, baseline) = match sites {
        Some(_) => (Vec::new(), None),
        None => subjects_and_baseline(a, Vec::new())?,
    };
    let replay = bench::Replay::new(trace, a.calls, a.working_set);
    if replay.trace.calls.len() < replay.calls {
        errln!(
            "note: the trace holds {} calls, fewer than a round's {}: each round replays it {:.1} times over, so a branch predictor may learn it",
            replay.trace.calls.len(),
            replay.calls,
            replay.calls as f64 / replay.trace.calls.len() as f64
        );
    }
    let opts = run_options(a);
    let mut results = match &sites {
        Some(s) => {
            let empty = bench::site::empty_site(&s.model).map_err(Failure::Other)?;
            with_progress("workload", |p| {
                bench::run_replay_sites(&replay, &s.subjects, &empty, &opts, p)
            })
        }
        None => with_progress("workload", |p| {
            bench::run_replay(&replay, &subjects, &opts, p)
        }),
    };
    if let Some(b) = baseline {
        results.baseline = b;
    }
    results.command = command_line();
    match &sites {
        Some(s) => table(a, format_args!("{}\n{}", s.stock_path, results.text()))?,
        None => table(a, format_args!("{}", results.text()))?,
    }
    if let Some(p) = &a.json {
        let text = serde_json::to_string_pretty(&results.json()).expect("json");
        copygen::output::write::write_file(p, &(text + "\n"))?;
        errln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A baseline by name, or a strategy (file or catalog name) compiled by the
/// JIT; with per-CPU variants, the one chosen (and `true`).
fn bench_subject(
    name: &str,
    variant: Option<&str>,
    found: copygen::arch::cpu::CpuFeatures,
) -> Result<(copygen::tools::bench::Subject, bool), Failure> {
    if let Some(b) = copygen::tools::bench::baseline(name) {
        return Ok((b, false));
    }
    let s = load_strategy(name, None)?;
    let chosen = copygen::tools::bench::bench_variant(&s, variant, found)
        .map_err(|e| Failure::Input(BadInput(format!("error: {e:#}"))))?;
    if let Some(v) = chosen {
        let why = match variant {
            Some(_) => "forced by --variant".to_string(),
            None => format!("this CPU has: {found}"),
        };
        errln!(
            "{}: variant `{}` ({}; {why})",
            s.name,
            v.name,
            v.condition_text()
        );
    }
    Ok((
        copygen::tools::bench::variant_subject(&s, variant, found)?,
        !s.variants.is_empty(),
    ))
}

/// A strategy (file or catalog name) the bench can run: x86_64. With
/// `site_kernel` (`--site kernel`), a catalog name in its form for that
/// kernel where the catalog has one: what `kernel-patch NAME --kernel V`
/// patches, said on stderr.
pub(super) fn load_strategy(
    name: &str,
    site_kernel: Option<KernelVersion>,
) -> Result<copygen::front::strategy::Strategy, Failure> {
    let path = std::path::Path::new(name);
    let s = if path.extension().is_some_and(|e| e == "toml") {
        parse::load(path, None)?
    } else {
        let all = catalog()?;
        let form = site_kernel.and_then(|k| {
            copygen::front::catalog::kernel_form(&all, name, k).map(|f| (k, f.clone()))
        });
        if let Some((k, form)) = form {
            errln!(
                "{name}: Linux {}'s form, {} (what kernel-patch {name} --kernel {} patches)",
                k.name(),
                form.name,
                k.name()
            );
            form
        } else if let Some(s) = all.into_iter().find(|s| s.name == name) {
            s
        } else {
            return Err(Failure::Input(BadInput(format!(
                "error: `{name}` is not a strategy file, a catalog strategy or a baseline ({})",
                copygen::tools::bench::BASELINES
                    .iter()
                    .map(|b| b.0)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))));
        }
    };
    match s.arch {
        Arch::X86_64 => {}
        // Their code runs on this host only under qemu's translation.
        Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64 => {
            return Err(Failure::Input(BadInput(format!(
                "error: `{name}` is {0} code, which this x86_64 host runs only under qemu emulation: \
                 emulated timings say nothing about a real {0} CPU, so the bench does not time it \
                 (it times x86_64 routines in-process; run `copygen verify` for {0}'s correctness)",
                s.arch
            ))));
        }
        Arch::I386 => {
            return Err(Failure::Input(BadInput(format!(
                "error: `{name}` is {}: the bench runs x86_64 routines in-process",
                s.arch
            ))));
        }
    }
    Ok(s)
}

/// The subject that times the stock site again, beside the baseline.
const STOCK_AGAIN: &str = "stock";

/// What `--site kernel` times: the stock kernel's site first (the
/// baseline), then each strategy's; and the report's line naming the stock
/// path this CPU runs.
struct Sites {
    model: copygen::tools::bench::site::KernelModel,
    subjects: Vec<copygen::tools::bench::site::SiteSubject>,
    stock_path: String,
}

/// The checks of `--site kernel`'s arguments, and its sites.
fn sites(a: &BenchArgs) -> Result<Sites, Failure> {
    use copygen::tools::bench::{self, site};
    let kernel = super::site_target(&a.site_kernel, a.stock.stock_features.as_deref())?;
    if let Some(t) = &a.tree {
        copygen::tools::bench::stock::locate_tree(kernel, Some(t))
            .map_err(|e| Failure::Input(BadInput(format!("error: {e:#}"))))?;
    }
    if a.subjects.is_empty() {
        return Err(Failure::Input(BadInput(
            "error: --site kernel: name the strategies whose sites to time (files or catalog names)"
                .into(),
        )));
    }
    let mut strategies = Vec::new();
    let mut control = false;
    for name in &a.subjects {
        if name == STOCK_AGAIN {
            let why = if control {
                Some("named twice: the stock site again is one control column")
            } else {
                a.figures_out.as_ref().map(|_| {
                    "--figures-out measures one strategy's site against the stock site, no control"
                })
            };
            if let Some(why) = why {
                return Err(Failure::Input(BadInput(format!(
                    "error: `{STOCK_AGAIN}`: {why}"
                ))));
            }
            control = true;
            continue;
        }
        if bench::baseline(name).is_some() {
            return Err(Failure::Input(BadInput(format!(
                "error: `{name}`: with --site kernel the stock kernel's site is the baseline; \
                 name strategies (files or catalog names)"
            ))));
        }
        let s = load_strategy(name, Some(kernel))?;
        // Refused as kernel-patch refuses it, before the tree is read.
        site::wired(&s, kernel).map_err(|e| super::unfit(&s, e))?;
        strategies.push(s);
    }
    if a.figures_out.is_some() && strategies.len() != 1 {
        return Err(Failure::Input(BadInput(format!(
            "error: --figures-out: name one strategy (the patch's), not {}",
            strategies.len()
        ))));
    }
    let fail = |e: anyhow::Error| Failure::Input(BadInput(format!("error: {e:#}")));
    let model =
        site::KernelModel::new(kernel, a.tree.as_deref(), a.stock.stock_features.as_deref())
            .map_err(Failure::Other)?;
    let stock_path = model.path_text().map_err(fail)?;
    errln!("stock routine: {}", model.stock.path.display());
    let mut subjects = vec![site::stock_subject(&model).map_err(fail)?];
    if control {
        subjects.push(site::stock_again_subject(&model).map_err(fail)?);
    }
    for s in &strategies {
        subjects.push(site::site_subject(s, &model).map_err(fail)?);
    }
    Ok(Sites {
        model,
        subjects,
        stock_path,
    })
}

/// `--site kernel`: the strategies' call sites against the stock site.
fn cmd_site(a: &BenchArgs, sweep: &copygen::tools::bench::Sweep) -> Result<ExitCode, Failure> {
    use copygen::tools::bench::site;
    let Sites {
        subjects,
        stock_path,
        ..
    } = sites(a)?;
    let opts = run_options(a);
    if let Some(path) = &a.figures_out {
        let sweep = site::figures_sweep(a.calls);
        let mut results =
            with_progress("figures", |p| site::run_sites(&sweep, &subjects, &opts, p));
        results.command = command_line();
        let text = site::figures_text(&results, &subjects, &stock_path);
        copygen::tools::kernel_patch::mail::figures(&text).map_err(|(line, e)| {
            Failure::Input(BadInput(format!(
                "error: --figures-out: line {line} of the figures: {e}"
            )))
        })?;
        out!("{text}");
        copygen::output::write::write_file(path, &text)?;
        errln!("wrote {}", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut results = with_progress(&sweep.name, |p| site::run_sites(sweep, &subjects, &opts, p));
    results.command = command_line();
    table(
        a,
        format_args!("{stock_path}\n{}", site::site_text(&results, &subjects)),
    )?;
    write_outputs(a, &results)
}

/// The run's table: on standard output, unless `--json -` writes the JSON
/// there (then on standard error: one stream, one format).
fn table(a: &BenchArgs, text: std::fmt::Arguments) -> Result<(), Failure> {
    if a.json.as_deref().is_some_and(|p| p.as_os_str() == "-") {
        err!("{text}");
    } else {
        out!("{text}");
    }
    Ok(())
}

/// `--json` and `--plot` of a finished run.
fn write_outputs(
    a: &BenchArgs,
    results: &copygen::tools::bench::Results,
) -> Result<ExitCode, Failure> {
    let mut outputs = Vec::new();
    if let Some(p) = &a.json {
        let text =
            serde_json::to_string_pretty(&copygen::tools::bench::google_benchmark_json(results))
                .expect("json");
        outputs.push((p.clone(), text + "\n"));
    }
    if let Some(p) = &a.plot {
        outputs.push((p.clone(), copygen::tools::bench::plot_svg(results)?));
    }
    copygen::output::write::write_all(&outputs)?;
    for (p, _) in &outputs {
        errln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
