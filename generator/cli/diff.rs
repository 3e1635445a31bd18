//! `copygen diff`: two versions of the code compared for review.

use std::path::PathBuf;
use std::process::ExitCode;

use super::{parse_arch, parse_flavor, Failure};

#[derive(clap::Args)]
pub struct DiffArgs {
    /// Old side.
    old: String,
    /// New side.
    new: String,
    #[arg(long, value_name = "ARCH", help = format!("Architecture of foreign .S files ({}); for strategy files, overrides theirs", super::arch_list()))]
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
    /// No ANSI colours even on a terminal (as `--color never`).
    #[arg(long)]
    no_color: bool,
    /// Keep the assembled objects in DIR/old and DIR/new.
    #[arg(long, value_name = "DIR")]
    save_objects: Option<PathBuf>,
}

pub fn cmd_diff(a: DiffArgs) -> Result<ExitCode, Failure> {
    use copygen::tools::diff;
    let flavor = match a.flavor {
        None => None,
        f => Some(parse_flavor(f)?[0]),
    };
    let opts = diff::DiffOptions {
        arch: parse_arch(a.arch)?,
        flavor,
        save_objects: a.save_objects,
        cwd: None,
    };
    // Bad input (a revision, file or strategy) exits 2; differences do not.
    let old = diff::load_side(&a.old, &opts)?;
    let new = diff::load_side(&a.new, &opts)?;
    let report = diff::diff(&old, &new, &opts)?;
    let bench = if a.bench {
        Some(diff::bench_changed(&report, &old, &new)?)
    } else {
        None
    };
    if a.json {
        out!("{}", diff::render_json(&report));
    } else {
        let color = !a.no_color && super::color_stdout();
        out!("{}", diff::render_text(&report, color));
    }
    if let Some(b) = bench {
        out!("{b}");
    }
    Ok(ExitCode::SUCCESS)
}
