//! What every subcommand shares: how a failure becomes an exit code, the
//! `--arch`/`--flavor` values, and strategy arguments (a file or a catalog
//! name).

/// `print!` that returns a write error (a closed pipe, a full disk) as a
/// [`Failure::Write`] from the enclosing command instead of panicking.
macro_rules! out {
    ($($t:tt)*) => {
        copygen::output::write::to_stdout(format_args!($($t)*)).map_err($crate::cli::Failure::Write)?
    };
}

/// [`out!`] with a newline.
macro_rules! outln {
    ($($t:tt)*) => { out!("{}\n", format_args!($($t)*)) };
}

/// `eprint!` that never panics.
macro_rules! err {
    ($($t:tt)*) => { copygen::output::write::to_stderr(format_args!($($t)*)) };
}

/// [`err!`] with a newline.
macro_rules! errln {
    ($($t:tt)*) => { err!("{}\n", format_args!($($t)*)) };
}

pub mod bench;
pub mod diff;
pub mod emit;
pub mod jit;
pub mod kernel_patch;
pub mod list;
pub mod record;
pub mod tune;
pub mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use copygen::front::catalog::catalog;
use copygen::front::diagnostics::StrategyError;
use copygen::front::parse;
use copygen::front::strategy::{Arch, Flavor, Strategy};
use copygen::input::BadInput;
use copygen::output::write::StdoutFailed;

/// A command's failure: [`BadInput`] (the one error that exits 2, mapped
/// in `main.rs`), anything else that failed (exit 1), or standard output
/// that cannot be written.
pub enum Failure {
    Input(BadInput),
    Other(anyhow::Error),
    Write(StdoutFailed),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        // Found under any context the error gained on its way up; its own
        // text is the message.
        if let Some(b) = e.downcast_ref::<BadInput>() {
            return Failure::Input(b.clone());
        }
        match e.downcast::<StdoutFailed>() {
            Ok(w) => Failure::Write(w),
            Err(e) => Failure::Other(e),
        }
    }
}

impl From<BadInput> for Failure {
    fn from(e: BadInput) -> Self {
        Failure::Input(e)
    }
}

impl From<StrategyError> for Failure {
    fn from(e: StrategyError) -> Self {
        Failure::Input(e.into())
    }
}

pub fn parse_flavor(f: Option<String>) -> Result<Vec<Flavor>, Failure> {
    match f {
        None => Ok(Flavor::ALL.to_vec()),
        Some(f) => Flavor::parse(&f).map(|f| vec![f]).ok_or_else(|| {
            Failure::Input(BadInput(format!(
                "error: unknown flavor `{f}`; copygen emits linux and standalone"
            )))
        }),
    }
}

/// `--stock-features` of `bench` and `tune`, with `--site kernel`.
#[derive(clap::Args)]
pub struct StockFeaturesArg {
    /// With --site kernel: change the features the kernel's alternatives
    /// are resolved for (the stock site, the tree's routine, the patched
    /// or candidate sites), e.g. `-erms,-fsrm` for the code a CPU without
    /// ERMS runs; names erms, fsrm, rep_good. The timing is still this CPU's.
    #[arg(
        long,
        value_name = "LIST",
        requires = "site",
        allow_hyphen_values = true
    )]
    pub stock_features: Option<String>,
}

/// `--site-kernel` and `--stock-features` of `bench` and `tune --site
/// kernel`: the kernel whose call site is the target, both checked.
pub fn site_target(
    kernel: &str,
    stock_features: Option<&str>,
) -> Result<copygen::front::strategy::KernelVersion, Failure> {
    if let Some(spec) = stock_features {
        copygen::tools::bench::stock::StockFeatures::host()
            .with(spec)
            .map_err(|e| Failure::Input(BadInput(format!("error: --stock-features: {e}"))))?;
    }
    copygen::front::strategy::KernelVersion::parse(kernel).ok_or_else(|| {
        Failure::Input(BadInput(format!(
            "error: --site-kernel: `{kernel}` is not a kernel whose call site is known (6.1, 6.12)"
        )))
    })
}

/// The output options' paths (`("--json", path)`), checked before the
/// work whose results they receive: a folder, or a file named twice, is
/// bad input (exit 2) at once rather than an error after a timing run or a
/// search. The writer checks them again when it writes.
pub fn check_outputs(options: &[(&str, &Option<PathBuf>)]) -> Result<(), Failure> {
    let bad = |e: anyhow::Error| Failure::Input(BadInput(format!("error: {e:#}")));
    let given: Vec<(&str, &std::path::Path)> = options
        .iter()
        .filter_map(|(name, p)| Some((*name, p.as_deref()?)))
        .collect();
    for (name, p) in &given {
        copygen::output::write::check_targets(&[p])
            .map_err(|e| bad(e.context(name.to_string())))?;
    }
    let paths: Vec<&std::path::Path> = given.iter().map(|(_, p)| *p).collect();
    copygen::output::write::check_targets(&paths).map_err(bad)
}

/// A strategy no tree can call ([`copygen::kernel::wiring::Unfit`]): bad
/// input, located at its field.
pub fn unfit(s: &Strategy, e: copygen::kernel::wiring::Unfit) -> Failure {
    Failure::Input(copygen::front::diagnostics::unfit(s, &e).into())
}

pub fn parse_arch(a: Option<String>) -> Result<Option<Arch>, Failure> {
    match a {
        None => Ok(None),
        Some(a) => Arch::parse(&a).map(Some).ok_or_else(|| {
            Failure::Input(BadInput(format!(
                "error: unknown architecture `{a}`; copygen targets {}",
                arch_list()
            )))
        }),
    }
}

/// `--color`: when standard output gets ANSI colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless NO_COLOR is set (to anything but empty).
    Auto,
    Always,
    Never,
}

static COLOR: std::sync::OnceLock<ColorWhen> = std::sync::OnceLock::new();

/// Set once from the command line.
pub fn set_color(c: ColorWhen) {
    let _ = COLOR.set(c);
}

/// Whether standard output gets colours: `--color`, else NO_COLOR and
/// whether it is a terminal.
pub fn color_stdout() -> bool {
    use std::io::IsTerminal as _;
    match COLOR.get().copied().unwrap_or(ColorWhen::Auto) {
        ColorWhen::Always => true,
        ColorWhen::Never => false,
        ColorWhen::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
        }
    }
}

/// The architectures `--arch` takes, from the table the code uses:
/// `i386, x86_64, armv6, aarch64, riscv64`.
pub fn arch_list() -> String {
    Arch::ALL.map(Arch::name).join(", ")
}

/// Generated text to stdout (a closed pipe is an error, not a panic).
pub fn write_stdout(bytes: &[u8]) -> Result<ExitCode, Failure> {
    copygen::output::write::write_file(std::path::Path::new("-"), &String::from_utf8_lossy(bytes))?;
    Ok(ExitCode::SUCCESS)
}

/// Every strategy file, validated; the errors of every file at once.
pub fn load_all(files: &[PathBuf], arch: Option<Arch>) -> Result<Vec<Strategy>, Failure> {
    let mut strategies = Vec::new();
    let mut errors = Vec::new();
    for f in files {
        match strategy_arg(f, arch) {
            Ok(s) => strategies.push(s),
            Err(Failure::Input(BadInput(msg))) => errors.push(msg),
            Err(other) => return Err(other),
        }
    }
    if errors.is_empty() {
        Ok(strategies)
    } else {
        Err(Failure::Input(BadInput(errors.join("\n\n"))))
    }
}

/// What was run, for plot titles and JSON: `copygen` and its arguments.
pub fn command_line() -> String {
    std::iter::once("copygen".to_string())
        // `args` would panic on an argument that is not UTF-8.
        .chain(
            std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// A strategy argument: a file (`.toml`, or any path that exists) or the
/// name of a catalog strategy, as `bench` takes them.
pub fn strategy_arg(arg: &std::path::Path, arch: Option<Arch>) -> Result<Strategy, Failure> {
    if arg.extension().is_some_and(|e| e == "toml") || arg.exists() || arg.as_os_str() == "-" {
        return Ok(parse::load(arg, arch)?);
    }
    let name = arg.to_string_lossy();
    let catalog = catalog()?;
    match catalog.into_iter().find(|s| s.name == name) {
        Some(s) if arch.is_none_or(|a| a == s.arch) => Ok(s),
        Some(s) => Err(Failure::Input(BadInput(format!(
            "error: catalog strategy `{name}` is {}; copy its file to build it for another architecture",
            s.arch
        )))),
        None => Err(Failure::Input(BadInput(format!(
            "error: `{name}` is neither a file nor a catalog strategy (`copygen list` names them)"
        )))),
    }
}
