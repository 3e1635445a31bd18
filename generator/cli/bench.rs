//! `copygen bench`: strategies (JIT) and baselines timed in one run.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::Arch;

use super::{command_line, Failure};

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Strategy files, catalog names, or baselines: rep_movsb, rep_movsq, memcpy.
    #[arg(required_unless_present = "kernel")]
    subjects: Vec<String>,
    /// Re-run a seed's table: abeni, wilson, morton, anand, alias.
    #[arg(long, conflicts_with_all = ["sizes", "alias_offsets", "distribution"])]
    table: Option<String>,
    /// Sizes drawn from a measured distribution (llvm-libc's CSV format; a
    /// file, or a built-in name such as MemcpyGoogleA); repeatable. src and
    /// dst at independent random page offsets, a fresh sequence every round.
    #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["sizes", "alias_offsets"])]
    distribution: Vec<String>,
    /// With --distribution: calls per sequence.
    #[arg(long, default_value_t = copygen::tools::bench::DEFAULT_CALLS)]
    calls: usize,
    /// With --distribution: share of calls (0..1) sent into the aliasing
    /// band, (dst - src) mod 4096 in 1..=63 (default: its natural rate).
    #[arg(long, default_value_t = 0.0)]
    alias_share: f64,
    /// The subject the ratio columns divide by (default: rep_movsb when
    /// measured, else the first subject); added when not listed.
    #[arg(long, value_name = "NAME")]
    baseline: Option<String>,
    /// Seed of the measuring order and the random sequences.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sizes: `1,2,8`, `0..=64` or `64..=4096:64`.
    #[arg(long)]
    sizes: Option<String>,
    /// Source offsets from a page boundary (list or range).
    #[arg(long, default_value = "0")]
    src_offsets: String,
    /// Destination offsets from a page boundary (list or range).
    #[arg(long, default_value = "0")]
    dst_offsets: String,
    /// Sweep `(dst - src) mod 4096` over these values (at --sizes, default 1024).
    #[arg(long)]
    alias_offsets: Option<String>,
    /// Flush the buffers from the caches before every call.
    #[arg(long)]
    cold: bool,
    /// Add the running kernel: `pread()` of a cached memfd into the destination
    /// (its copy_to_user), as the first column.
    #[arg(long)]
    kernel: bool,
    /// Rounds; each figure is the median over them.
    #[arg(long, default_value_t = 15)]
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
}

pub fn cmd_bench(a: BenchArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::bench;
    let input = |e: anyhow::Error| Failure::Input(format!("error: {e:#}"));
    let mut sweep = if let Some(t) = &a.table {
        bench::table(t).map_err(input)?
    } else if !a.distribution.is_empty() {
        if a.calls == 0 {
            return Err(Failure::Input("error: --calls must be at least 1".into()));
        }
        if !(0.0..=1.0).contains(&a.alias_share) {
            return Err(Failure::Input(
                "error: --alias-share is a share of calls, between 0 and 1".into(),
            ));
        }
        let dists = a
            .distribution
            .iter()
            .map(|d| bench::distribution::Distribution::load(d))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Failure::Input(format!("{e:#}")))?;
        bench::distribution_sweep(dists, a.calls, a.alias_share)
    } else if let Some(al) = &a.alias_offsets {
        let sizes = a
            .sizes
            .as_deref()
            .map(bench::parse_list)
            .transpose()
            .map_err(input)?
            .unwrap_or(vec![1024]);
        let alias = bench::parse_list(al).map_err(input)?;
        bench::Sweep {
            name: "alias".into(),
            title: "(dst - src) mod 4096 sweep".into(),
            x_label: "(dst - src) mod 4096".into(),
            rows: bench::alias_rows(&sizes, &alias),
            ..bench::Sweep::default()
        }
    } else {
        let sizes = bench::parse_list(a.sizes.as_deref().unwrap_or("0..=64")).map_err(input)?;
        let src = bench::parse_list(&a.src_offsets).map_err(input)?;
        let dst = bench::parse_list(&a.dst_offsets).map_err(input)?;
        bench::custom(&sizes, &src, &dst)
    };
    sweep.cold = a.cold;
    if a.repeats == 0 {
        return Err(Failure::Input("error: --repeats must be at least 1".into()));
    }
    let mut subjects = Vec::new();
    if a.kernel {
        let largest = sweep.rows.iter().map(|r| r.n).max().unwrap_or(0);
        subjects.push(bench::kernel_subject(largest.max(1))?);
    }
    let found = copygen::variants::host_features();
    let mut any_variants = false;
    for name in &a.subjects {
        let (subject, has_variants) = bench_subject(name, a.variant.as_deref(), found)?;
        subjects.push(subject);
        any_variants |= has_variants;
    }
    if let (Some(v), false) = (&a.variant, any_variants) {
        return Err(Failure::Input(format!(
            "error: --variant {v}: no strategy benchmarked has per-CPU variants"
        )));
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
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .expect("template")
            .progress_chars("=> "),
    );
    bar.set_message(format!("bench {}", sweep.name));
    let opts = bench::Options {
        repeats: a.repeats,
        seed: a.seed,
        ..bench::Options::default()
    };
    let mut results = bench::run_with(&sweep, &subjects, &opts, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    if let Some(b) = baseline {
        results.baseline = b;
    }
    results.command = command_line();
    out!("{}", bench::text_table(&results));
    if let Some(p) = &a.json {
        let text =
            serde_json::to_string_pretty(&bench::google_benchmark_json(&results)).expect("json");
        copygen::output::write::write_file(p, &(text + "\n"))?;
        errln!("wrote {}", p.display());
    }
    if let Some(p) = &a.plot {
        bench::plot_svg(&results, p)?;
        errln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// A baseline by name, or a strategy (file or catalog name) compiled by the
/// JIT; with per-CPU variants, the one chosen (and `true`).
fn bench_subject(
    name: &str,
    variant: Option<&str>,
    found: copygen::variants::CpuFeatures,
) -> Result<(copygen::tools::bench::Subject, bool), Failure> {
    if let Some(b) = copygen::tools::bench::baseline(name) {
        return Ok((b, false));
    }
    let path = std::path::Path::new(name);
    let s = if path.extension().is_some_and(|e| e == "toml") {
        parse::load(path, None)?
    } else if let Some(s) = catalog()?.into_iter().find(|s| s.name == name) {
        s
    } else {
        return Err(Failure::Input(format!(
            "error: `{name}` is not a strategy file, a catalog strategy or a baseline ({})",
            copygen::tools::bench::BASELINES
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    match s.arch {
        Arch::X86_64 => {}
        // Their code runs on this host only under qemu's translation.
        Arch::Armv6 | Arch::Aarch64 => {
            return Err(Failure::Input(format!(
                "error: `{name}` is {0} code, which this x86_64 host runs only under qemu emulation: \
                 emulated timings say nothing about a real {0} CPU, so the bench does not time it \
                 (it times x86_64 routines in-process; run `copygen verify` for {0}'s correctness)",
                s.arch
            )));
        }
        Arch::I386 => {
            return Err(Failure::Input(format!(
                "error: `{name}` is {}: the bench runs x86_64 routines in-process",
                s.arch
            )));
        }
    }
    let chosen = copygen::variants::bench_variant(&s, variant, found)
        .map_err(|e| Failure::Input(format!("error: {e:#}")))?;
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
        copygen::variants::bench_subject(&s, variant, found)?,
        !s.variants.is_empty(),
    ))
}
