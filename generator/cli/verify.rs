//! `copygen verify`: static checks, then fault injection on each CPU mode.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use copygen::front::catalog::catalog;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::input::BadInput;

use super::{load_all, parse_arch, parse_flavor, Failure};

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// Strategy files; without any, the whole built-in catalog.
    files: Vec<PathBuf>,
    #[arg(long, value_name = "ARCH", help = format!("Only this architecture (catalog), or build the files for it instead of theirs ({})", super::arch_list()))]
    arch: Option<String>,
    /// Strategies run at once.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Fault injection: seconds each routine may run in the sandbox
    /// before it is killed (1 to 86400).
    #[arg(long, value_name = "SECONDS", default_value_t = copygen::checks::sandbox::DEFAULT_TIMEOUT_SECS,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    timeout: u64,
    /// Fault injection: address space the sandboxed harness may use, in MiB
    /// (16 to 1048576; qemu-user gets its guest's reserved space on top).
    #[arg(long, value_name = "MIB", default_value_t = copygen::checks::sandbox::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(16..=1 << 20))]
    memory_limit: u64,
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
    /// With --static: the x86_64 length is a 32-bit `unsigned` whose
    /// register's upper half the caller leaves undefined (6.1's
    /// copy_user_generic(void *to, const void *from, unsigned len)).
    #[arg(long, requires = "static_only")]
    unsigned_length: bool,
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

pub fn cmd_verify(args: VerifyArgs) -> Result<ExitCode, Failure> {
    use copygen::checks::static_verify::{
        check_strategies, check_user_file, render_reports, Verdict,
    };
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
        .map(|f| check_user_file(f, &options).map_err(Failure::from))
        .collect::<Result<Vec<_>, Failure>>()?;
    for (f, r) in asm.iter().zip(&asm_reports) {
        missing_functions(f, r, &options)?;
    }
    // Static first (seconds), then fault injection (the long part).
    let mut reports = check_strategies(&strategies, &options)?;
    reports.extend(asm_reports.iter().cloned());
    let (text, verdict) = render_reports(&reports);
    let static_ok = verdict == Verdict::Ok;
    out!("{text}");
    if args.static_only {
        return Ok(match verdict {
            Verdict::Ok => ExitCode::SUCCESS,
            Verdict::Fail => ExitCode::from(1),
            // The checked functions pass; one that may be a copy routine was
            // not checked.
            Verdict::Incomplete => ExitCode::from(3),
        });
    }
    let limits = copygen::checks::sandbox::Limits {
        timeout: std::time::Duration::from_secs(args.timeout),
        memory: args.memory_limit << 20,
    };
    // Code the static check failed is never run: its standalone report
    // (what the harness would run) must pass.
    let standalone_ok: Vec<bool> = strategies
        .iter()
        .enumerate()
        .map(|(k, _)| {
            reports[k * Flavor::ALL.len()..(k + 1) * Flavor::ALL.len()]
                .iter()
                .filter(|r| r.flavor == Flavor::Standalone)
                .all(|r| r.passed())
        })
        .collect();
    let mut outcomes =
        copygen::checks::verify::fault_suite(&strategies, &standalone_ok, args.jobs, true, &limits);
    for (f, r) in asm.iter().zip(&asm_reports) {
        outcomes.push(copygen::checks::verify::fault_asm_file(f, r, &limits));
    }
    out!("{}", copygen::checks::verify::table(&outcomes));
    let faults_ok = !outcomes.iter().any(|o| o.failed());
    Ok(if static_ok && faults_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--function NAME` naming no function of `file`: a located input error.
fn missing_functions(
    file: &std::path::Path,
    report: &copygen::checks::static_verify::Report,
    options: &copygen::checks::static_verify::Options,
) -> Result<(), Failure> {
    for spec in &options.functions {
        if !report.functions.iter().any(|f| f.name == spec.name) {
            let known: Vec<&str> = report.all_functions.iter().map(String::as_str).collect();
            return Err(Failure::Input(BadInput(format!(
                "error: {}: --function {}: no such function (functions: {})",
                file.display(),
                spec.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ))));
        }
    }
    Ok(())
}

fn static_options(
    args: &VerifyArgs,
    arch: Option<Arch>,
) -> Result<copygen::checks::static_verify::Options, Failure> {
    use copygen::checks::static_verify::{parse_convention, FunctionSpec};
    let convention = match args.convention.as_deref() {
        None => None,
        Some(c) => Some(parse_convention(c).ok_or_else(|| {
            Failure::Input(BadInput(format!(
                "error: unknown convention `{c}`; use c or rep_movs"
            )))
        })?),
    };
    let functions = args
        .functions
        .iter()
        .map(|s| {
            FunctionSpec::parse(s)
                .map_err(|e| Failure::Input(BadInput(format!("error: --function {e}"))))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let flavor = match &args.flavor {
        None => None,
        f => Some(parse_flavor(f.clone())?[0]),
    };
    Ok(copygen::checks::static_verify::Options {
        arch,
        flavor,
        convention,
        regparm: (args.regparm || args.cdecl).then_some(args.regparm),
        unsigned_length: args.unsigned_length,
        allow_vector: args.allow_vector,
        allow_unanalysed: args.allow_unanalysed,
        per_cpu_entries: Vec::new(),
        functions,
        roles: Vec::new(),
    })
}
