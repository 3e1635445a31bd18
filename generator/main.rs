//! The `copygen` command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};

use copygen::front::catalog::catalog;
use copygen::front::diagnostics::StrategyError;
use copygen::front::parse;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::output::render::{emitted_path, render};
use copygen::output::tree::{check_tree, render_tree_with_stats, write_tree};

/// `--version`: the package version and the git revision built.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("COPYGEN_GIT_REVISION"),
    ")"
);

#[derive(Parser)]
#[command(
    name = "copygen",
    version = VERSION,
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
        /// Emit for this architecture instead of the file's (i386, x86_64, armv6, aarch64).
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
    /// Search x86_64 strategies for this CPU and the given size
    /// distributions (JIT-timed against rep movsb, bounded on a fixed-size x
    /// alias grid); write the winner, which passed the JIT fault suite.
    Tune(TuneArgs),
    /// JIT-compile a strategy and run the in-process fault-injection suite;
    /// exit 1 on any contract violation.
    Jit {
        /// Strategy files or catalog names.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Architecture instead of the file's (only x86_64 runs in-process).
        #[arg(long)]
        arch: Option<String>,
    },
    /// Print a shell's completion script: `copygen completions bash >
    /// /usr/share/bash-completion/completions/copygen`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `copygen man > copygen.1; man ./copygen.1`.
    Man,
}

#[derive(clap::Args)]
struct DiffArgs {
    /// Old side.
    old: String,
    /// New side.
    new: String,
    /// Architecture of foreign .S files (i386, x86_64, armv6, aarch64); for strategy files, overrides theirs.
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

#[derive(clap::Args)]
struct TuneArgs {
    /// A strategy to start from: its name, directions, linux options and
    /// precision are kept, and it competes as it is.
    base: Option<PathBuf>,
    /// Size distribution to tune on (llvm-libc CSV; a file or a built-in
    /// name); repeatable.
    #[arg(long, value_name = "FILE.csv", required = true)]
    distribution: Vec<String>,
    /// Seconds for the whole run (search about 70 %, then confirmation,
    /// fault suite and report).
    #[arg(long, default_value_t = 180.0)]
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
    /// Write the report as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write an SVG plot of the final measurement here.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Seed of the search and the sequences.
    #[arg(long, default_value_t = 1)]
    seed: u64,
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
    /// With --static: code the analysis cannot reach or follow (an indirect
    /// jump, code no path reaches) is a warning instead of an error.
    #[arg(long, requires = "static_only")]
    allow_unanalysed: bool,
    /// With --static: check this function, NAME[:from_user|to_user|both[:c|rep_movs]]
    /// (repeatable; default: every function with exception-table entries and
    /// every *_from_user / *_to_user; the user side defaults to the name's, else both).
    #[arg(
        long = "function",
        value_name = "NAME[:SIDE[:CONV]]",
        requires = "static_only"
    )]
    functions: Vec<String>,
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
        Command::Tune(args) => cmd_tune(args),
        Command::Diff(args) => cmd_diff(args),
        Command::Jit { files, arch } => cmd_jit(files, arch),
        Command::KernelPatch {
            strategy,
            kernel,
            arch,
            output,
            no_verify,
        } => cmd_kernel_patch(strategy, kernel, arch, output, no_verify),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "copygen", &mut out);
            write_stdout(&out)
        }
        Command::Man => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut out)
                .expect("rendering to memory");
            write_stdout(&out)
        }
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
                "error: unknown architecture `{a}`; copygen targets i386, x86_64, armv6 and aarch64"
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
    let strategies = load_all(&files, arch)?;
    let mut outputs = Vec::new();
    for s in &strategies {
        for &fl in &flavors {
            outputs.push((emitted_path(s, fl), render(s, fl)));
        }
    }
    match output.as_deref() {
        None => print_all(&outputs)?,
        Some(p) if p.as_os_str() == "-" => print_all(&outputs)?,
        Some(p) if outputs.len() == 1 && !p.is_dir() => {
            copygen::output::write::write_file(p, &outputs[0].1)?
        }
        Some(p) if !p.is_dir() && (p.extension().is_some_and(|e| e == "S") || p.exists()) => {
            let why = if flavors.len() > 1 {
                "both flavours: choose one with `--flavor linux` or `--flavor standalone`, or give a folder"
            } else {
                "give a folder instead"
            };
            return Err(Failure::Input(format!(
                "error: -o {} names one file, but this run emits {} files ({why})",
                p.display(),
                outputs.len()
            )));
        }
        Some(dir) => {
            let files: Vec<_> = outputs
                .iter()
                .map(|(rel, text)| (dir.join(rel), text.clone()))
                .collect();
            copygen::output::write::write_all(&files)?;
            for (path, _) in &files {
                eprintln!("wrote {}", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Generated text to stdout (a closed pipe is an error, not a panic).
fn write_stdout(bytes: &[u8]) -> Result<ExitCode, Failure> {
    copygen::output::write::write_file(std::path::Path::new("-"), &String::from_utf8_lossy(bytes))?;
    Ok(ExitCode::SUCCESS)
}

/// Every strategy file, validated; the errors of every file at once.
fn load_all(files: &[PathBuf], arch: Option<Arch>) -> Result<Vec<Strategy>, Failure> {
    let mut strategies = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match strategy_arg(f, arch) {
            Ok(s) => strategies.push(s),
            Err(Failure::Input(msg)) => errors.push(msg),
            Err(other) => return Err(other),
        }
    }
    if errors.is_empty() {
        Ok(strategies)
    } else {
        Err(Failure::Input(errors.join("\n\n")))
    }
}

/// Every output to stdout, one after the other (a closed pipe is an error,
/// not a panic).
fn print_all(outputs: &[(String, String)]) -> Result<(), Failure> {
    let text: String = outputs.iter().map(|(_, t)| t.as_str()).collect();
    write_stdout(text.as_bytes()).map(drop)
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
    print!("{}", bench::text_table(&results));
    if let Some(p) = &a.json {
        let text =
            serde_json::to_string_pretty(&bench::google_benchmark_json(&results)).expect("json");
        copygen::output::write::write_file(p, &(text + "\n"))?;
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
        Some(p) if p.as_os_str() != "-" => copygen::output::write::write_file(&p, &text)?,
        _ => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

fn cmd_tune(a: TuneArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::bench::distribution::{Distribution, BUILTIN};
    use copygen::tools::tune;
    let load = |names: &[String]| -> Result<Vec<Distribution>, Failure> {
        names
            .iter()
            .map(|d| Distribution::load(d))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| Failure::Input(format!("{e:#}")))
    };
    let dists = load(&a.distribution)?;
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
    if !(a.budget.is_finite() && a.budget > 0.0) {
        return Err(Failure::Input(
            "error: --budget is a positive number of seconds".into(),
        ));
    }
    let base = a
        .base
        .as_deref()
        .map(|p| parse::load(p, None))
        .transpose()?;
    if let Some(b) = &base {
        if b.arch != Arch::X86_64 {
            return Err(Failure::Input(format!(
                "error: {}: tune measures x86_64 strategies on this CPU; this one is {}",
                b.source, b.arch
            )));
        }
    }
    let mut header = match &base {
        Some(b) => tune::Header::from_base(b),
        None => tune::Header::new("tuned"),
    };
    if let Some(n) = &a.name {
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(Failure::Input(format!(
                "error: --name `{n}`: letters, digits, - and _ only"
            )));
        }
        header.name = n.clone();
    }
    let opts = tune::Options {
        dists,
        extra,
        budget: std::time::Duration::from_secs_f64(a.budget),
        header,
        base,
        seed: a.seed,
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
    print!("{}", tune::report_text(&outcome));
    if let Some(p) = &a.json {
        let j = tune::report_json(&outcome, opts.dists.len());
        copygen::output::write::write_file(
            p,
            &(serde_json::to_string_pretty(&j).expect("json") + "\n"),
        )?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = &a.plot {
        copygen::tools::bench::plot_svg(&tune::plot_results(&outcome.report), p)?;
        eprintln!("wrote {}", p.display());
    }
    match &a.output {
        Some(p) => {
            copygen::output::write::write_file(p, &outcome.text)?;
            eprintln!("wrote {}", p.display());
        }
        None => print!("\n{}", outcome.text),
    }
    Ok(ExitCode::SUCCESS)
}

/// What was run, for plot titles and JSON: `copygen` and its arguments.
fn command_line() -> String {
    std::iter::once("copygen".to_string())
        .chain(std::env::args().skip(1))
        .collect::<Vec<_>>()
        .join(" ")
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
    // Hand-written assembly (and, with --static, objects) is checked as it
    // is; everything else is a strategy (a file or a catalog name).
    let is_code = |f: &PathBuf| {
        f.extension()
            .is_some_and(|e| e == "S" || e == "s" || (args.static_only && e == "o"))
    };
    let asm: Vec<&PathBuf> = args.files.iter().filter(|f| is_code(f)).collect();
    let strategies: Vec<Strategy> = if args.files.is_empty() {
        catalog()?
            .into_iter()
            .filter(|s| arch.is_none_or(|a| s.arch == a))
            .collect()
    } else {
        let strategy_files: Vec<PathBuf> =
            args.files.iter().filter(|f| !is_code(f)).cloned().collect();
        load_all(&strategy_files, arch)?
    };
    let asm_reports = asm
        .iter()
        .map(|f| check_object(f, &options))
        .collect::<Result<Vec<_>>>()?;
    // Static first (seconds), then fault injection (the long part).
    let mut reports = check_strategies(&strategies, &options)?;
    reports.extend(asm_reports.iter().cloned());
    let (text, static_ok) = render_reports(&reports);
    print!("{text}");
    if args.static_only {
        return Ok(if static_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let mut outcomes = copygen::checks::verify::fault_suite(&strategies, args.jobs, true);
    for (f, r) in asm.iter().zip(&asm_reports) {
        outcomes.push(copygen::checks::verify::fault_asm_file(f, r));
    }
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
    use copygen::static_verify::{parse_convention, FunctionSpec};
    let convention = match args.convention.as_deref() {
        None => None,
        Some(c) => Some(parse_convention(c).ok_or_else(|| {
            Failure::Input(format!(
                "error: unknown convention `{c}`; use c or rep_movs"
            ))
        })?),
    };
    let functions = args
        .functions
        .iter()
        .map(|s| {
            FunctionSpec::parse(s).map_err(|e| Failure::Input(format!("error: --function {e}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
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
        allow_unanalysed: args.allow_unanalysed,
        dispatchers: Vec::new(),
        functions,
        roles: Vec::new(),
    })
}

fn cmd_jit(files: Vec<PathBuf>, arch: Option<String>) -> Result<ExitCode, Failure> {
    let arch = parse_arch(arch)?;
    // Every input is validated before anything runs.
    let strategies = load_all(&files, arch)?;
    let mut all_ok = true;
    for s in &strategies {
        let (report, ok) = copygen::jit::contract::run_strategy(s).map_err(|e| match e {
            copygen::jit::JitError::NotExecutable(_) => Failure::Input(format!("error: {e}")),
            e => Failure::Other(e.into()),
        })?;
        print!("{report}");
        all_ok &= ok;
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A strategy argument: a file (`.toml`, or any path that exists) or the
/// name of a catalog strategy, as `bench` takes them.
fn strategy_arg(arg: &std::path::Path, arch: Option<Arch>) -> Result<Strategy, Failure> {
    if arg.extension().is_some_and(|e| e == "toml") || arg.exists() {
        return Ok(parse::load(arg, arch)?);
    }
    let name = arg.to_string_lossy();
    let catalog = catalog()?;
    match catalog.into_iter().find(|s| s.name == name) {
        Some(s) if arch.is_none_or(|a| a == s.arch) => Ok(s),
        Some(s) => Err(Failure::Input(format!(
            "error: catalog strategy `{name}` is {}; copy its file to build it for another architecture",
            s.arch
        ))),
        None => Err(Failure::Input(format!(
            "error: `{name}` is neither a file nor a catalog strategy (`copygen list` names them)"
        ))),
    }
}
