//! `copygen kernel-patch`: a strategy's linux-flavour routine as a patch to
//! a pristine kernel tree.

use std::path::PathBuf;
use std::process::ExitCode;

use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::Flavor;

use copygen::tools::kernel_patch::mail::{Identity, Mail};

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
    /// The patch's author, `Name <addr@host>` (default: git config
    /// user.name and user.email of the current directory).
    #[arg(long, value_name = "NAME <EMAIL>")]
    author: Option<String>,
    /// A `Signed-off-by:` trailer, `Name <addr@host>`; repeatable, in order
    /// (default: the author). The author must be among them.
    #[arg(long, value_name = "NAME <EMAIL>")]
    signed_off_by: Vec<String>,
    /// `copygen bench` output (tables) measured on this CPU, put in the
    /// commit message under a line naming the CPU.
    #[arg(long, value_name = "FILE")]
    figures: Option<PathBuf>,
}

/// `git config KEY` in the current directory, if set.
fn git_config(key: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["config", "--get", key])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let v = String::from_utf8(out.stdout).ok()?;
    let v = v.strip_suffix('\n').unwrap_or(&v);
    (!v.is_empty()).then(|| v.to_string())
}

/// Author, sign-offs and figures, checked (exit 2 on anything wrong).
fn mail(
    author: Option<String>,
    signed_off_by: Vec<String>,
    figures: Option<PathBuf>,
) -> Result<Mail, Failure> {
    let bad = |what: &str, e: String| Failure::Input(format!("error: {what}: {e}"));
    let author = match author {
        Some(a) => Identity::parse(&a).map_err(|e| bad("--author", e))?,
        None => match (git_config("user.name"), git_config("user.email")) {
            (Some(n), Some(e)) => {
                Identity::new(&n, &e).map_err(|e| bad("git config user.name / user.email", e))?
            }
            _ => return Err(Failure::Input(
                "error: --author: no author for the patch: give --author \"Name <addr@host>\", \
                     or set `git config user.name` and `git config user.email`"
                    .into(),
            )),
        },
    };
    let mut sob = Vec::new();
    for s in &signed_off_by {
        sob.push(Identity::parse(s).map_err(|e| bad("--signed-off-by", e))?);
    }
    if sob.is_empty() {
        sob.push(author.clone());
    } else if !sob.iter().any(|s| s.email == author.email) {
        return Err(Failure::Input(format!(
            "error: --signed-off-by: the author ({}) must sign off too (checkpatch: \
             Missing Signed-off-by: line by nominal patch author)",
            author.trailer()
        )));
    }
    let figures = match figures {
        None => None,
        Some(p) => {
            let text = copygen::input::read_string_limited(&p, 1 << 20)
                .map_err(|e| bad(&format!("--figures {}", p.display()), e.to_string()))?;
            let f = copygen::tools::kernel_patch::mail::figures(&text).map_err(|(line, e)| {
                Failure::Input(format!("error: --figures: {}:{line}: {e}", p.display()))
            })?;
            Some((f, copygen::tools::kernel_patch::mail::cpu_line()))
        }
    };
    Ok(Mail {
        author,
        signed_off_by: sob,
        figures,
    })
}

/// `copygen kernel-patch`.
pub fn cmd_kernel_patch(a: KernelPatchArgs) -> Result<ExitCode, Failure> {
    let KernelPatchArgs {
        strategy: name,
        kernel,
        arch,
        output,
        no_verify,
        author,
        signed_off_by,
        figures,
    } = a;
    let m = mail(author, signed_off_by, figures)?;
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
    } else if let Some(s) = {
        // A catalog strategy's form for this tree, when the catalog has one:
        // `NAME-612`, for 6.12 only ([linux] kernel = "6.12").
        let all = catalog()?;
        let form = format!("{name}-{}", kernel.name().replace('.', ""));
        let own = all
            .iter()
            .find(|s| s.name == form && s.linux.kernel == Some(kernel))
            .cloned();
        own.or_else(|| all.into_iter().find(|s| s.name == name))
    } {
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
    let text = copygen::tools::kernel_patch::patch(&s, kernel, verified.as_ref(), &m)?;
    match output {
        Some(p) if p.as_os_str() != "-" => copygen::output::write::write_file(&p, &text)?,
        _ => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
