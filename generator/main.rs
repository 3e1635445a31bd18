//! The `copygen` command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};

use copygen::front::catalog::catalog;
use copygen::front::diagnostics::StrategyError;
use copygen::front::parse;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::output::render::{emitted_path, render};
use copygen::output::tree::{self, check_tree, render_tree_with_stats, write_tree};

#[derive(Parser)]
#[command(
    name = "copygen",
    version,
    about = "Generate, test, benchmark and review copy_{to,from}_user routines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate emitted/ from the catalog, or emit the given strategy files.
    Emit {
        /// Strategy files; without any, the whole built-in catalog.
        files: Vec<PathBuf>,
        /// Exit 1 and print a diff when emitted/ is stale (catalog only).
        #[arg(long)]
        check: bool,
        /// Emit for this architecture instead of the file's (i386, x86_64, armv6).
        #[arg(long)]
        arch: Option<String>,
        /// Only this flavour (linux, standalone).
        #[arg(long)]
        flavor: Option<String>,
        /// Output file, folder (several outputs) or `-` for stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// The emitted/ folder to regenerate (default: the repository's).
        #[arg(long)]
        emitted: Option<PathBuf>,
    },
    /// List the built-in strategies, one line each.
    List,
    /// Time strategies (JIT) and baselines (rep_movsb, rep_movsq, memcpy) in one run.
    Bench(BenchArgs),
    /// Check strategies on real CPU modes (fault injection); exit 1 on any violation.
    Verify(VerifyArgs),
    /// Compare two versions: .text per function and exception-table entries
    /// (bloat-o-meter format), then the instruction diff of changed functions.
    /// Each side: a strategy .toml, an emitted .S, an emitted folder,
    /// WORKTREE, or a git revision (its emitted/ tree).
    Diff(DiffArgs),
    /// A patch (git format-patch form) that puts a strategy's linux-flavour
    /// routine into a pristine Debian kernel tree, with the glue that makes
    /// the kernel call it; verified (static check and fault injection) first.
    KernelPatch {
        /// A strategy file or a catalog strategy's name.
        strategy: String,
        /// The tree: 6.1 or 6.12.
        #[arg(long)]
        kernel: String,
        /// Architecture instead of the strategy's (i386, x86_64, armv6).
        #[arg(long)]
        arch: Option<String>,
        /// Output file (default: stdout).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Skip the static check and fault injection (the patch says so).
        #[arg(long)]
        no_verify: bool,
    },
    /// JIT-compile a strategy and run the in-process fault-injection suite;
    /// exit 1 on any contract violation.
    Jit {
        /// The strategy file.
        file: PathBuf,
        /// Architecture instead of the file's (only x86_64 runs in-process).
        #[arg(long)]
        arch: Option<String>,
    },
}

#[derive(clap::Args)]
struct DiffArgs {
    /// Old side.
    old: String,
    /// New side.
    new: String,
    /// Architecture of foreign .S files (i386, x86_64, armv6); for strategy files, overrides theirs.
    #[arg(long)]
    arch: Option<String>,
    /// Only this flavour (linux, standalone); for foreign .S files, their flavour.
    #[arg(long)]
    flavor: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
    /// Also time the old and new versions of every changed routine (JIT).
    #[arg(long)]
    bench: bool,
    /// No ANSI colours even on a terminal.
    #[arg(long)]
    no_color: bool,
    /// Keep the assembled objects in DIR/old and DIR/new.
    #[arg(long, value_name = "DIR")]
    save_objects: Option<PathBuf>,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Strategy files, catalog names, or baselines: rep_movsb, rep_movsq, memcpy.
    #[arg(required_unless_present = "kernel")]
    subjects: Vec<String>,
    /// Re-run a seed's table: abeni, wilson, morton, anand, alias.
    #[arg(long, conflicts_with_all = ["sizes", "alias_offsets"])]
    table: Option<String>,
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

#[derive(clap::Args)]
struct VerifyArgs {
    /// Strategy files; without any, the whole built-in catalog.
    files: Vec<PathBuf>,
    /// Only this architecture (catalog), or build the files for it instead of theirs.
    #[arg(long)]
    arch: Option<String>,
    /// Strategies run at once.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Static verification only, of `.S`/`.o` files (ours or hand-written) or
    /// strategy files: exception-table coverage, preserved registers, no
    /// vector state in the linux flavour, no unguarded read-ahead.
    #[arg(long = "static")]
    static_only: bool,
    /// With --static: flavour of `.S` files without a copygen header.
    #[arg(long, requires = "static_only")]
    flavor: Option<String>,
    /// With --static: x86_64 linux calling convention, c or rep_movs.
    #[arg(long, requires = "static_only")]
    convention: Option<String>,
    /// With --static: i386 arguments in eax/edx/ecx (default for the linux flavour).
    #[arg(long, conflicts_with = "cdecl", requires = "static_only")]
    regparm: bool,
    /// With --static: i386 arguments on the stack (default for standalone).
    #[arg(long, requires = "static_only")]
    cdecl: bool,
    /// With --static: the routines own the vector state (MMX/SSE/AVX, ARM VFP allowed).
    #[arg(long, requires = "static_only")]
    allow_vector: bool,
}

/// Exit 2 for a bad strategy or argument, 1 for anything else that failed.
enum Failure {
    Input(String),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        match e.downcast::<StrategyError>() {
            Ok(se) => Failure::Input(se.to_string()),
            Err(e) => Failure::Other(e),
        }
    }
}

impl From<StrategyError> for Failure {
    fn from(e: StrategyError) -> Self {
        Failure::Input(e.to_string())
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Emit {
            files,
            check,
            arch,
            flavor,
            output,
            emitted,
        } => cmd_emit(files, check, arch, flavor, output, emitted),
        Command::List => cmd_list(),
        Command::Verify(args) => cmd_verify(args),
        Command::Bench(args) => cmd_bench(args),
        Command::Diff(args) => cmd_diff(args),
        Command::Jit { file, arch } => cmd_jit(file, arch),
        Command::KernelPatch {
            strategy,
            kernel,
            arch,
            output,
            no_verify,
        } => cmd_kernel_patch(strategy, kernel, arch, output, no_verify),
    };
    match result {
        Ok(code) => code,
        Err(Failure::Input(msg)) => {
            eprintln!("{msg}");
            ExitCode::from(2)
        }
        Err(Failure::Other(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn parse_flavor(f: Option<String>) -> Result<Vec<Flavor>, Failure> {
    match f {
        None => Ok(Flavor::ALL.to_vec()),
        Some(f) => Flavor::parse(&f).map(|f| vec![f]).ok_or_else(|| {
            Failure::Input(format!(
                "error: unknown flavour `{f}`; copygen emits linux and standalone"
            ))
        }),
    }
}

fn parse_arch(a: Option<String>) -> Result<Option<Arch>, Failure> {
    match a {
        None => Ok(None),
        Some(a) => Arch::parse(&a).map(Some).ok_or_else(|| {
            Failure::Input(format!(
                "error: unknown architecture `{a}`; copygen targets i386, x86_64 and armv6"
            ))
        }),
    }
}

fn cmd_emit(
    files: Vec<PathBuf>,
    check: bool,
    arch: Option<String>,
    flavor: Option<String>,
    output: Option<PathBuf>,
    emitted: Option<PathBuf>,
) -> Result<ExitCode, Failure> {
    let arch = parse_arch(arch)?;
    let flavors = parse_flavor(flavor)?;
    if files.is_empty() {
        if arch.is_some() || output.is_some() || flavors.len() != 2 {
            return Err(Failure::Input("error: --arch, --flavor and -o apply to strategy files; the catalog always emits everything".into()));
        }
        return emit_catalog(check, emitted);
    }
    if check {
        return Err(Failure::Input(
            "error: --check compares the catalog with emitted/; give no files".into(),
        ));
    }
    // Validate everything before writing anything.
    let strategies: Vec<Strategy> = files
        .iter()
        .map(|f| parse::load(f, arch))
        .collect::<Result<_>>()?;
    let mut outputs = Vec::new();
    for s in &strategies {
        for &fl in &flavors {
            outputs.push((emitted_path(s, fl), render(s, fl)));
        }
    }
    match output.as_deref() {
        None => print_all(&outputs),
        Some(p) if p.as_os_str() == "-" => print_all(&outputs),
        Some(p) if outputs.len() == 1 && !p.is_dir() => tree::write_atomic(p, &outputs[0].1)?,
        Some(dir) => {
            for (rel, text) in &outputs {
                tree::write_atomic(&dir.join(rel), text)?;
                eprintln!("wrote {}", dir.join(rel).display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_all(outputs: &[(String, String)]) {
    for (_, text) in outputs {
        print!("{text}");
    }
}

fn emit_catalog(check: bool, emitted: Option<PathBuf>) -> Result<ExitCode, Failure> {
    let start = Instant::now();
    // In a checkout: its strategy files and its emitted/. Outside one, the
    // embedded catalog, and only to an emitted/ folder given explicitly.
    let checkout = copygen::front::catalog::checkout();
    let dir = match (emitted, &checkout) {
        (Some(dir), _) => dir,
        (None, Some(root)) => root.join("emitted"),
        (None, None) => {
            return Err(Failure::Input(
                "error: not in a copygen checkout (no generator/strategies above the working directory): give --emitted DIR".into(),
            ))
        }
    };
    let strategies = copygen::front::catalog::catalog_in(checkout.as_deref())?;
    let (files, stats) = render_tree_with_stats(&strategies);
    if check {
        let diff = check_tree(&dir, &files)?;
        if diff.is_empty() {
            println!("emitted/ is up to date ({} files)", files.len());
            return Ok(ExitCode::SUCCESS);
        }
        print!("{diff}");
        eprintln!("emitted/ is stale: run `copygen emit`");
        return Ok(ExitCode::from(1));
    }
    let report = write_tree(&dir, &files)?;
    let elapsed = start.elapsed();
    println!(
        "{:<24} {:<7} {:<11} {:>8} {:>8}",
        "strategy", "arch", "flavour", "routines", "entries"
    );
    for st in &stats {
        println!(
            "{:<24} {:<7} {:<11} {:>8} {:>8}",
            st.strategy, st.arch, st.flavor, st.routines, st.entries
        );
    }
    println!(
        "{} files in {}: {} written, {} unchanged, {} removed ({:.1} ms)",
        files.len(),
        dir.display(),
        report.written.len(),
        report.unchanged.len(),
        report.removed.len(),
        elapsed.as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}

fn cmd_list() -> Result<ExitCode, Failure> {
    for s in catalog()? {
        let first = s.description.lines().next().unwrap_or("");
        println!("{:<24} {:<7} {}", s.name, s.arch.name(), first);
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_bench(a: BenchArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::bench;
    let input = |e: anyhow::Error| Failure::Input(format!("error: {e:#}"));
    let mut sweep = if let Some(t) = &a.table {
        bench::table(t).map_err(input)?
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
            cold: false,
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
    let bar = indicatif::ProgressBar::new(0);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({eta})")
            .expect("template")
            .progress_chars("=> "),
    );
    bar.set_message(format!("bench {}", sweep.name));
    let results = bench::run(&sweep, &subjects, a.repeats, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    });
    bar.finish_and_clear();
    print!("{}", bench::text_table(&results));
    if let Some(p) = &a.json {
        let text =
            serde_json::to_string_pretty(&bench::google_benchmark_json(&results)).expect("json");
        tree::write_atomic(p, &(text + "\n"))?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &a.plot {
        bench::plot_svg(&results, p)?;
        eprintln!("wrote {}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `copygen kernel-patch`.
fn cmd_kernel_patch(
    name: String,
    kernel: String,
    arch: Option<String>,
    output: Option<PathBuf>,
    no_verify: bool,
) -> Result<ExitCode, Failure> {
    use copygen::front::strategy::KernelVersion;
    let kernel = KernelVersion::parse(&kernel).ok_or_else(|| {
        Failure::Input(format!(
            "error: --kernel: `{kernel}` is not a supported tree (6.1, 6.12)"
        ))
    })?;
    let arch = parse_arch(arch)?;
    let path = std::path::Path::new(&name);
    let s = if path.extension().is_some_and(|e| e == "toml") || path.is_file() {
        parse::load(path, arch)?
    } else if let Some(s) = catalog()?.into_iter().find(|s| s.name == name) {
        match arch {
            Some(a) if a != s.arch => {
                let text = s.text.clone();
                parse::parse(std::path::Path::new(&s.source), &text, Some(a))?
            }
            _ => s,
        }
    } else {
        return Err(Failure::Input(format!(
            "error: `{name}` is neither a strategy file nor a catalog strategy (copygen list)"
        )));
    };
    let w = copygen::kernel_patch::wire(&s, kernel)
        .map_err(|e| Failure::Input(format!("error: {e}")))?;
    let verified = if no_verify {
        None
    } else {
        let asm = copygen::output::render::render(&w.strategy, Flavor::Linux);
        Some(
            copygen::kernel_patch::verify(&w.strategy, &asm)
                .map_err(|e| Failure::Other(e.context(format!("{}: not verified", s.name))))?,
        )
    };
    let text = copygen::kernel_patch::patch(&s, kernel, verified.as_ref())?;
    match output {
        Some(p) if p.as_os_str() != "-" => copygen::output::tree::write_atomic(&p, &text)?,
        _ => print!("{text}"),
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
    if s.arch != Arch::X86_64 {
        return Err(Failure::Input(format!(
            "error: `{name}` is {}: the bench runs x86_64 routines in-process",
            s.arch
        )));
    }
    let chosen = copygen::variants::bench_variant(&s, variant, found)
        .map_err(|e| Failure::Input(format!("error: {e:#}")))?;
    if let Some(v) = chosen {
        let why = match variant {
            Some(_) => "forced by --variant".to_string(),
            None => format!("this CPU has: {found}"),
        };
        eprintln!(
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

fn cmd_diff(a: DiffArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::review;
    use std::io::IsTerminal;
    let flavor = match a.flavor {
        None => None,
        f => Some(parse_flavor(f)?[0]),
    };
    let opts = review::Options {
        arch: parse_arch(a.arch)?,
        flavor,
        save_objects: a.save_objects,
        cwd: None,
    };
    // Bad input (a revision, file or strategy) exits 2; differences do not.
    let classify = |e: anyhow::Error| -> Failure {
        if let Some(ie) = e.downcast_ref::<review::InputError>() {
            return Failure::Input(ie.to_string());
        }
        Failure::from(e)
    };
    let old = review::load_side(&a.old, &opts).map_err(classify)?;
    let new = review::load_side(&a.new, &opts).map_err(classify)?;
    let report = review::diff(&old, &new, &opts).map_err(classify)?;
    let bench = if a.bench {
        Some(review::bench_changed(&report, &old, &new)?)
    } else {
        None
    };
    if a.json {
        print!("{}", review::render_json(&report));
    } else {
        let color = !a.no_color
            && std::io::stdout().is_terminal()
            && std::env::var_os("NO_COLOR").is_none();
        print!("{}", review::render_text(&report, color));
    }
    if let Some(b) = bench {
        print!("{b}");
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_verify(args: VerifyArgs) -> Result<ExitCode, Failure> {
    use copygen::static_verify::{check_object, check_strategies, render_reports};
    let arch = parse_arch(args.arch.clone())?;
    let options = static_options(&args, arch)?;
    let is_strategy = |f: &PathBuf| f.extension().is_some_and(|e| e == "toml");
    if args.static_only && !args.files.iter().all(is_strategy) {
        // Assembly or objects, ours or not.
        let reports = args
            .files
            .iter()
            .map(|f| check_object(f, &options))
            .collect::<Result<Vec<_>>>()?;
        let (text, ok) = render_reports(&reports);
        print!("{text}");
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let strategies: Vec<Strategy> = if args.files.is_empty() {
        catalog()?
            .into_iter()
            .filter(|s| arch.is_none_or(|a| s.arch == a))
            .collect()
    } else {
        args.files
            .iter()
            .map(|f| parse::load(f, arch))
            .collect::<Result<_>>()?
    };
    // Static first (seconds), then fault injection (the long part).
    let (text, static_ok) = render_reports(&check_strategies(&strategies, &options)?);
    print!("{text}");
    if args.static_only {
        return Ok(if static_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let outcomes = copygen::checks::verify::fault_suite(&strategies, args.jobs, true);
    print!("{}", copygen::checks::verify::table(&outcomes));
    let faults_ok = !outcomes.iter().any(|o| o.failed());
    Ok(if static_ok && faults_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn static_options(
    args: &VerifyArgs,
    arch: Option<Arch>,
) -> Result<copygen::static_verify::Options, Failure> {
    use copygen::front::strategy::Convention;
    let convention = match args.convention.as_deref() {
        None => None,
        Some("c") => Some(Convention::C),
        Some("rep_movs") => Some(Convention::RepMovs),
        Some(c) => {
            return Err(Failure::Input(format!(
                "error: unknown convention `{c}`; use c or rep_movs"
            )))
        }
    };
    let flavor = match &args.flavor {
        None => None,
        f => Some(parse_flavor(f.clone())?[0]),
    };
    Ok(copygen::static_verify::Options {
        arch,
        flavor,
        convention,
        regparm: (args.regparm || args.cdecl).then_some(args.regparm),
        allow_vector: args.allow_vector,
    })
}

fn cmd_jit(file: PathBuf, arch: Option<String>) -> Result<ExitCode, Failure> {
    let s = parse::load(&file, parse_arch(arch)?)?;
    let (report, ok) = copygen::jit::contract::run_strategy(&s).map_err(|e| match e {
        copygen::jit::JitError::NotExecutable(_) => Failure::Input(format!("error: {e}")),
        e => Failure::Other(e.into()),
    })?;
    print!("{report}");
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
