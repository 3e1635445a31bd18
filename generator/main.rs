//! The `copygen` command line. Each group of subcommands lives in `cli/`,
//! its arguments beside the code that runs it; this file names the commands
//! and turns their outcome into an exit code.

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use copygen::front::diagnostics::escape;
use copygen::input::BadInput;

#[macro_use]
mod cli;

use cli::{
    bench, diff, emit, jit, kernel_patch, list, record, tune, verify, write_stdout, Failure,
};

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
    /// When to colour standard output: auto (on a terminal, unless NO_COLOR
    /// is set), always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "WHEN",
        default_value = "auto"
    )]
    color: cli::ColorWhen,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate emitted/ from the catalog, or emit the given strategy files.
    Emit(emit::EmitArgs),
    /// List the built-in strategies, one line each (--markdown: the table
    /// of docs/catalog.md).
    List(list::ListArgs),
    /// Time strategies (JIT) and baselines (rep_movsb, rep_movsq, memcpy) in one run.
    Bench(bench::BenchArgs),
    /// Check strategies on real CPU modes (fault injection); exit 1 on any violation.
    Verify(verify::VerifyArgs),
    /// Compare two versions: .text per function and exception-table entries
    /// (bloat-o-meter format), then the instruction diff of changed functions.
    /// Each side: a strategy .toml, an emitted .S, an emitted folder,
    /// WORKTREE, or a git revision (its emitted/ tree).
    Diff(diff::DiffArgs),
    /// A patch (git format-patch form) that puts a strategy's linux-flavour
    /// routine into a pristine Debian kernel tree, with the glue that makes
    /// the kernel call it; verified (static check and fault injection) first.
    KernelPatch(kernel_patch::KernelPatchArgs),
    /// Search x86_64 strategies for this CPU and the given size
    /// distributions (JIT-timed against rep movsb, bounded on a fixed-size x
    /// alias grid); write the winner, which passed the JIT fault suite.
    Tune(tune::TuneArgs),
    /// JIT-compile a strategy and run the in-process fault-injection suite;
    /// exit 1 on any contract violation.
    Jit(jit::JitArgs),
    /// Record a running kernel's copy_{from,to}_user calls through tracefs
    /// kprobe events as a workload trace (--script: the same probes as a sh
    /// script; --from-trace: convert its output; --summary: histograms).
    Record(record::RecordArgs),
    /// Print a shell's completion script: `copygen completions bash >
    /// /usr/share/bash-completion/completions/copygen`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff): `copygen man > copygen.1; man ./copygen.1`
    /// for the command, `copygen man emit` for copygen-emit(1).
    Man {
        /// A subcommand (emit, list, bench, ...): its page.
        subcommand: Option<String>,
    },
}

/// The command as the completion scripts see it: the arguments that take a
/// strategy (a file or a catalog name) offer the catalog's names, the
/// subcommands of `man` offer the subcommands.
fn completion_command() -> clap::Command {
    // clap keeps possible values as `&'static str`; this process ends
    // after printing the script.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let names: Vec<&'static str> = copygen::front::catalog::catalog()
        .map(|c| c.into_iter().map(|s| leak(s.name)).collect())
        .unwrap_or_default();
    let subs: Vec<&'static str> = Cli::command()
        .get_subcommands()
        .map(|c| leak(c.get_name().to_string()))
        .collect();
    let strategy =
        |a: clap::Arg| a.value_parser(clap::builder::PossibleValuesParser::new(names.clone()));
    let mut cmd = Cli::command();
    for (sub, arg) in [
        ("kernel-patch", "strategy"),
        ("bench", "subjects"),
        ("emit", "files"),
        ("verify", "files"),
        ("jit", "files"),
        ("tune", "base"),
    ] {
        cmd = cmd.mut_subcommand(sub, |c| c.mut_arg(arg, strategy));
    }
    cmd.mut_subcommand("man", |c| {
        c.mut_arg("subcommand", |a| {
            a.value_parser(clap::builder::PossibleValuesParser::new(subs))
        })
    })
}

/// `copygen man [SUBCOMMAND]`: the page of the command or of one
/// subcommand (`copygen-emit(1)`, which the command's page refers to).
fn man(subcommand: Option<&str>) -> Result<ExitCode, Failure> {
    let mut top = Cli::command();
    top.build();
    let page = match subcommand {
        None => top,
        Some(name) => {
            let names: Vec<String> = top
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            let Some(sub) = top.find_subcommand(name).cloned() else {
                return Err(Failure::Input(BadInput(format!(
                    "error: `{}` is not a copygen subcommand ({})",
                    escape(name, false),
                    names.join(", ")
                ))));
            };
            // The page's name; this process ends after printing it.
            let full: &'static str =
                Box::leak(format!("copygen-{}", sub.get_name()).into_boxed_str());
            sub.name(full).bin_name(full.replacen('-', " ", 1))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| Failure::Other(e.into()))?;
    write_stdout(&out)
}

/// Standard output closed when copygen was started, seen before Rust's
/// runtime opens `/dev/null` on every closed standard descriptor (which
/// would drop the output without an error): every write to it is then an
/// error. Run from `.init_array`, before `main`.
extern "C" fn note_closed_stdout() {
    // SAFETY: fcntl on a plain descriptor.
    if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        copygen::output::write::mark_stdout_closed();
    }
}

#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STDOUT: extern "C" fn() = note_closed_stdout;

fn main() -> ExitCode {
    // A file size limit (`ulimit -f`) is then a write error (EFBIG) that
    // copygen reports and cleans up after, not a SIGXFSZ that kills it
    // with its temporaries left behind.
    // SAFETY: ignoring a signal.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    // Arguments are read as OS strings: one that is not UTF-8 is a usage
    // error naming it (or a path, where a path is taken), never a panic.
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(e),
    };
    cli::set_color(cli.color);
    let result = match cli.command {
        Command::Emit(args) => emit::cmd_emit(args),
        Command::List(args) => list::cmd_list(args),
        Command::Verify(args) => verify::cmd_verify(args),
        Command::Bench(args) => bench::cmd_bench(args),
        Command::Tune(args) => tune::cmd_tune(args),
        Command::Diff(args) => diff::cmd_diff(args),
        Command::Jit(args) => jit::cmd_jit(args),
        Command::Record(args) => record::cmd_record(args),
        Command::KernelPatch(args) => kernel_patch::cmd_kernel_patch(args),
        Command::Completions { shell } => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut completion_command(), "copygen", &mut out);
            write_stdout(&out)
        }
        Command::Man { subcommand } => man(subcommand.as_deref()),
    };
    // What is still buffered must reach standard output too, or its
    // failure would go unreported.
    let result = result.and_then(|code| {
        use std::io::Write;
        std::io::stdout()
            .flush()
            .map_err(|e| Failure::Write(copygen::output::write::StdoutFailed(e)))?;
        Ok(code)
    });
    report(result)
}

/// `--help`, `--version` (standard output: a failed write is an error) or
/// a usage error (standard error, exit 2).
fn usage(e: clap::Error) -> ExitCode {
    if e.use_stderr() {
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    let text = e.render().to_string();
    report(write_stdout(text.as_bytes()).and_then(|code| {
        use std::io::Write;
        std::io::stdout()
            .flush()
            .map_err(|e| Failure::Write(copygen::output::write::StdoutFailed(e)))?;
        Ok(code)
    }))
}

/// A command's outcome as its exit status, with its message.
fn report(result: Result<ExitCode, Failure>) -> ExitCode {
    // Every message is escaped here, whatever produced it: text from an
    // input (a file name, a key, a CSV field) cannot drive the terminal.
    match result {
        Ok(code) => code,
        // The input could not be read because of the environment (too
        // few descriptors, a file size limit): not the input's fault.
        Err(Failure::Input(BadInput(msg))) if copygen::input::environment_failure().is_some() => {
            let lack = copygen::input::environment_failure().unwrap_or_default();
            errln!("{}", escape(&msg, true));
            errln!("error: {lack}");
            ExitCode::from(1)
        }
        Err(Failure::Input(BadInput(msg))) => {
            errln!("{}", escape(&msg, true));
            ExitCode::from(2)
        }
        Err(Failure::Other(e)) => {
            errln!("error: {}", escape(&format!("{e:#}"), true));
            ExitCode::from(1)
        }
        // A reader that went away (`| head`) wants no more output and no
        // message: the exit status is the one a shell reports for a
        // program killed by SIGPIPE.
        Err(Failure::Write(w)) if w.0.kind() == std::io::ErrorKind::BrokenPipe => {
            ExitCode::from(141)
        }
        Err(Failure::Write(w)) => {
            errln!("copygen: {w}");
            ExitCode::from(1)
        }
    }
}
