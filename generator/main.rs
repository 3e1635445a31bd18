//! The `copygen` command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Result;
use clap::{Parser, Subcommand};

use copygen::diagnostics::StrategyError;
use copygen::emit::{self, catalog, check_tree, render_tree, write_tree};
use copygen::ir::{Arch, Flavor, Strategy};
use copygen::render::{emitted_path, render};
use copygen::strategy;

#[derive(Parser)]
#[command(name = "copygen", version, about = "Generate, test, benchmark and review copy_{to,from}_user routines")]
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
        Command::Emit { files, check, arch, flavor, output, emitted } => {
            cmd_emit(files, check, arch, flavor, output, emitted)
        }
        Command::List => cmd_list(),
        Command::Jit { file, arch } => cmd_jit(file, arch),
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
        Some(f) => Flavor::parse(&f)
            .map(|f| vec![f])
            .ok_or_else(|| Failure::Input(format!("error: unknown flavour `{f}`; copygen emits linux and standalone"))),
    }
}

fn parse_arch(a: Option<String>) -> Result<Option<Arch>, Failure> {
    match a {
        None => Ok(None),
        Some(a) => Arch::parse(&a)
            .map(Some)
            .ok_or_else(|| Failure::Input(format!("error: unknown architecture `{a}`; copygen targets i386, x86_64 and armv6"))),
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
        return Err(Failure::Input("error: --check compares the catalog with emitted/; give no files".into()));
    }
    // Validate everything before writing anything.
    let strategies: Vec<Strategy> = files
        .iter()
        .map(|f| strategy::load(f, arch))
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
        Some(p) if outputs.len() == 1 && !p.is_dir() => emit::write_atomic(p, &outputs[0].1)?,
        Some(dir) => {
            for (rel, text) in &outputs {
                emit::write_atomic(&dir.join(rel), text)?;
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
    let dir = emitted.unwrap_or_else(|| emit::repo_root().join("emitted"));
    let strategies = catalog()?;
    let files = render_tree(&strategies);
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
    println!("{:<24} {:<7} {:>11} {:>8} {:>8}", "strategy", "arch", "flavour", "routines", "entries");
    for s in &strategies {
        for flavor in Flavor::ALL {
            let fns = copygen::backend::functions(s, flavor);
            let entries: usize = fns.iter().map(|(_, f)| f.extable.len()).sum();
            println!("{:<24} {:<7} {:>11} {:>8} {:>8}", s.name, s.arch, flavor, fns.len(), entries);
        }
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


fn cmd_jit(file: PathBuf, arch: Option<String>) -> Result<ExitCode, Failure> {
    let s = strategy::load(&file, parse_arch(arch)?)?;
    let (report, ok) = copygen::jit::contract::run_strategy(&s).map_err(|e| match e {
        copygen::jit::JitError::NotExecutable(_) => Failure::Input(format!("error: {e}")),
        e => Failure::Other(e.into()),
    })?;
    print!("{report}");
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
