//! `copygen kernel-patch`: a strategy's linux-flavour routine as a patch to
//! a pristine kernel tree.

use std::path::PathBuf;
use std::process::ExitCode;

use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::Flavor;

use super::{parse_arch, Failure};

#[derive(clap::Args)]
pub struct KernelPatchArgs {
    /// A strategy file or a catalog strategy's name.
    strategy: String,
    /// The tree: 6.1 or 6.12.
    #[arg(long)]
    kernel: String,
    /// Architecture instead of the strategy's (i386, x86_64, armv6, aarch64).
    #[arg(long)]
    arch: Option<String>,
    /// Output file (default: stdout).
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Skip the static check and fault injection (the patch says so).
    #[arg(long)]
    no_verify: bool,
}

/// `copygen kernel-patch`.
pub fn cmd_kernel_patch(a: KernelPatchArgs) -> Result<ExitCode, Failure> {
    let KernelPatchArgs {
        strategy: name,
        kernel,
        arch,
        output,
        no_verify,
    } = a;
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
    let w = copygen::tools::kernel_patch::wire(&s, kernel)
        .map_err(|e| Failure::Input(format!("error: {e}")))?;
    let verified = if no_verify {
        None
    } else {
        let asm = copygen::output::render::render(&w.strategy, Flavor::Linux);
        Some(
            copygen::tools::kernel_patch::verify(&w.strategy, &asm)
                .map_err(|e| Failure::Other(e.context(format!("{}: not verified", s.name))))?,
        )
    };
    let text = copygen::tools::kernel_patch::patch(&s, kernel, verified.as_ref())?;
    match output {
        Some(p) if p.as_os_str() != "-" => copygen::output::write::write_file(&p, &text)?,
        _ => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
