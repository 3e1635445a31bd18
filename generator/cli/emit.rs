//! `copygen emit`: the catalog or given strategy files to GNU as.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use copygen::input::BadInput;
use copygen::output::render::{emitted_path, render};
use copygen::output::tree::{check_tree, render_tree_with_stats, write_tree};

use super::{load_all, parse_arch, parse_flavor, write_stdout, Failure};

#[derive(clap::Args)]
pub struct EmitArgs {
    /// Strategy files; without any, the whole built-in catalog.
    files: Vec<PathBuf>,
    /// Exit 1 and print a diff when emitted/ is stale (catalog only).
    #[arg(long)]
    check: bool,
    #[arg(long, value_name = "ARCH", help = format!("Emit for this architecture instead of the file's ({})", super::arch_list()))]
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
}

pub fn cmd_emit(a: EmitArgs) -> Result<ExitCode, Failure> {
    let EmitArgs {
        files,
        check,
        arch,
        flavor,
        output,
        emitted,
    } = a;
    let arch = parse_arch(arch)?;
    let flavors = parse_flavor(flavor)?;
    if files.is_empty() {
        if arch.is_some() || output.is_some() || flavors.len() != 2 {
            return Err(Failure::Input(BadInput("error: --arch, --flavor and -o apply to strategy files; the catalog always emits everything".into())));
        }
        return emit_catalog(check, emitted);
    }
    if check {
        return Err(Failure::Input(BadInput(
            "error: --check compares the catalog with emitted/; give no files".into(),
        )));
    }
    // Validate everything before writing anything.
    let strategies = load_all(&files, arch)?;
    // Files of one run that would overwrite each other or export one symbol.
    let run: Vec<_> = files
        .iter()
        .map(PathBuf::as_path)
        .zip(&strategies)
        .collect();
    let clashes = copygen::front::symbol_clashes::check_run(&run);
    if !clashes.is_empty() {
        let text: Vec<String> = clashes.iter().map(ToString::to_string).collect();
        return Err(Failure::Input(BadInput(text.join("\n\n"))));
    }
    let mut outputs = Vec::new();
    for s in &strategies {
        for &fl in &flavors {
            outputs.push((emitted_path(s, fl), render(s, fl)));
        }
    }
    // One look at `-o`: a concurrent run may create the folder between two
    // (then `is_dir` says no and `exists` yes: a folder taken for a file).
    let existing = output
        .as_deref()
        .map(|p| std::fs::metadata(p).map(|m| m.is_dir()));
    let is_dir = matches!(existing, Some(Ok(true)));
    let is_other = matches!(existing, Some(Ok(false)));
    match output.as_deref() {
        None => print_all(&outputs)?,
        Some(p) if p.as_os_str() == "-" => print_all(&outputs)?,
        Some(p) if outputs.len() == 1 && !is_dir => {
            copygen::output::write::write_file(p, &outputs[0].1)?
        }
        Some(p) if !is_dir && (p.extension().is_some_and(|e| e == "S") || is_other) => {
            let why = if flavors.len() > 1 {
                "both flavors: choose one with `--flavor linux` or `--flavor standalone`, or give a folder"
            } else {
                "give a folder instead"
            };
            return Err(Failure::Input(BadInput(format!(
                "error: -o {} names one file, but this run emits {} files ({why})",
                p.display(),
                outputs.len()
            ))));
        }
        Some(dir) => {
            let files: Vec<_> = outputs
                .iter()
                .map(|(rel, text)| (dir.join(rel), text.clone()))
                .collect();
            copygen::output::write::write_all(&files)?;
            for (path, _) in &files {
                errln!("wrote {}", path.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
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
            return Err(Failure::Input(BadInput(
                "error: not in a copygen checkout (no generator/strategies above the working directory): give --emitted DIR".into(),
            )))
        }
    };
    let strategies = copygen::front::catalog::catalog_in(checkout.as_deref())?;
    let (files, stats) = render_tree_with_stats(&strategies);
    if check {
        let diff = check_tree(&dir, &files)?;
        if diff.is_empty() {
            outln!("emitted/ is up to date ({} files)", files.len());
            return Ok(ExitCode::SUCCESS);
        }
        out!("{diff}");
        errln!("emitted/ is stale: run `copygen emit`");
        return Ok(ExitCode::from(1));
    }
    let report = write_tree(&dir, &files)?;
    let elapsed = start.elapsed();
    outln!(
        "{:<24} {:<7} {:<11} {:>8} {:>8}",
        "strategy",
        "arch",
        "flavor",
        "routines",
        "entries"
    );
    for st in &stats {
        outln!(
            "{:<24} {:<7} {:<11} {:>8} {:>8}",
            st.strategy,
            st.arch,
            st.flavor,
            st.routines,
            st.entries
        );
    }
    outln!(
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
