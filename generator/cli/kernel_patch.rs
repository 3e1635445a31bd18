//! `copygen kernel-patch`: a strategy's linux-flavour routine as a patch to
//! a pristine kernel tree.

use std::path::PathBuf;
use std::process::ExitCode;

use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::{Arch, Flavor, KernelVersion};
use copygen::input::BadInput;

use copygen::tools::kernel_patch::mail::{Identity, Mail};
use copygen::tools::kernel_patch::{Boot, Origin, Regenerate, Request, Series};

use super::{parse_arch, Failure};

#[derive(clap::Args)]
pub struct KernelPatchArgs {
    /// A strategy file or a catalog strategy's name.
    strategy: String,
    /// The tree: 6.1 or 6.12.
    #[arg(long)]
    kernel: String,
    #[arg(long, value_name = "ARCH", value_delimiter = ',', help = format!("Architecture instead of the strategy's ({}); repeat it, or give a comma-separated list, for a series of one patch per architecture (with --output-directory)", super::arch_list()))]
    arch: Vec<String>,
    /// Output file (default: stdout).
    #[arg(short, long, conflicts_with = "output_directory")]
    output: Option<PathBuf>,
    /// Write the patch, or the series and its cover letter, into this
    /// folder as `git format-patch -o` names them.
    #[arg(short = 'O', long, value_name = "DIR")]
    output_directory: Option<PathBuf>,
    /// Skip the static check and fault injection (the patch says so).
    #[arg(long)]
    no_verify: bool,
    /// Boot the patched kernel under qemu with verify/kernel-boot (in a
    /// copygen checkout) before writing the patch, and state its result in
    /// the commit message; refused where the script is absent.
    #[arg(long)]
    boot: bool,
    /// Print only the file the patch adds (the command the file's header
    /// names to write it again byte for byte).
    #[arg(long, conflicts_with_all = ["output_directory", "boot"])]
    generated_file: bool,
    /// A pristine kernel tree: the files the patch edits are read from it
    /// for `index` lines (so `git am -3` can fall back to a three-way merge).
    #[arg(long, value_name = "DIR")]
    tree: Option<PathBuf>,
    /// The commit the patch applies to: a `base-commit:` line, as
    /// `git format-patch --base` writes it (a full hex object id).
    #[arg(long, value_name = "COMMIT")]
    base: Option<String>,
    /// Mark the patch as the Nth version of the series (`[PATCH vN]`).
    #[arg(short = 'v', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    reroll_count: Option<u32>,
    /// Leave out the `Date:` header (default: now, or SOURCE_DATE_EPOCH).
    #[arg(long)]
    no_date: bool,
    /// The patch's author, `Name <addr@host>` (default: git config
    /// user.name and user.email of the current directory).
    #[arg(long, value_name = "NAME <EMAIL>")]
    author: Option<String>,
    /// A `Signed-off-by:` trailer, `Name <addr@host>`; repeatable, in order
    /// (default: the author). The author must be among them.
    #[arg(long, value_name = "NAME <EMAIL>")]
    signed_off_by: Vec<String>,
    /// `copygen bench` output (tables) measured on this CPU, put in the
    /// commit message under a line naming the CPU (tables wider than the
    /// message are split into narrower ones).
    #[arg(long, value_name = "FILE")]
    figures: Option<PathBuf>,
    /// Add a KUnit suite of the routines (lib/copygen_usercopy_kunit.c, its
    /// Kconfig entry and Makefile line): exact counts and bytes at every
    /// size up to 256 and every fault offset, and ns per call (6.12).
    #[arg(long)]
    kunit: bool,
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
    let bad = |what: &str, e: String| Failure::Input(BadInput(format!("error: {what}: {e}")));
    let author = match author {
        Some(a) => Identity::parse(&a).map_err(|e| bad("--author", e))?,
        None => match (git_config("user.name"), git_config("user.email")) {
            (Some(n), Some(e)) => {
                Identity::new(&n, &e).map_err(|e| bad("git config user.name / user.email", e))?
            }
            _ => return Err(Failure::Input(BadInput(
                "error: --author: no author for the patch: give --author \"Name <addr@host>\", \
                     or set `git config user.name` and `git config user.email`"
                    .into(),
            ))),
        },
    };
    let mut sob = Vec::new();
    for s in &signed_off_by {
        sob.push(Identity::parse(s).map_err(|e| bad("--signed-off-by", e))?);
    }
    if sob.is_empty() {
        sob.push(author.clone());
    } else if !sob.iter().any(|s| s.email == author.email) {
        return Err(Failure::Input(BadInput(format!(
            "error: --signed-off-by: the author ({}) must sign off too (checkpatch: \
             Missing Signed-off-by: line by nominal patch author)",
            author.trailer()
        ))));
    }
    let figures = match figures {
        None => None,
        Some(p) => {
            let text = copygen::input::read_string_limited(&p, 1 << 20)
                .map_err(|e| bad(&format!("--figures {}", p.display()), e.to_string()))?;
            let f = copygen::tools::kernel_patch::mail::figures(&text).map_err(|(line, e)| {
                Failure::Input(BadInput(format!(
                    "error: --figures: {}:{line}: {e}",
                    p.display()
                )))
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

/// The `Date:` header: SOURCE_DATE_EPOCH when set (reproducible builds'
/// convention), else now; `None` with --no-date.
fn date(no_date: bool) -> Result<Option<String>, Failure> {
    if no_date {
        return Ok(None);
    }
    let secs = match std::env::var_os("SOURCE_DATE_EPOCH") {
        Some(v) => v
            .to_str()
            .and_then(|v| v.parse::<i64>().ok())
            .filter(|&s| (0..=253_402_300_799).contains(&s))
            .ok_or_else(|| {
                Failure::Input(BadInput(
                    "error: SOURCE_DATE_EPOCH: not a number of seconds since 1970 (up to 9999)"
                        .into(),
                ))
            })?,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
    };
    Ok(Some(copygen::tools::kernel_patch::mail::rfc2822(secs)))
}

/// The strategy for `arch` (`None`: its own) and where it came from.
fn resolve(
    name: &str,
    kernel: KernelVersion,
    arch: Option<Arch>,
) -> Result<(copygen::front::strategy::Strategy, Origin), Failure> {
    let path = std::path::Path::new(name);
    if path.extension().is_some_and(|e| e == "toml") || path.is_file() {
        return Ok((parse::load(path, arch)?, Origin::File(name.to_string())));
    }
    // A catalog strategy's form for this tree, when the catalog has one.
    let all = catalog()?;
    let own = copygen::front::catalog::kernel_form(&all, name, kernel).cloned();
    let Some(s) = own.or_else(|| all.into_iter().find(|s| s.name == name)) else {
        return Err(Failure::Input(BadInput(format!(
            "error: `{name}` is neither a strategy file nor a catalog strategy (copygen list)"
        ))));
    };
    let origin = if copygen::front::catalog::checkout().is_some() {
        Origin::Checkout(s.source.clone())
    } else {
        Origin::BuiltIn(s.name.clone())
    };
    let s = match arch {
        Some(a) if a != s.arch => {
            parse::parse(std::path::Path::new(&s.source), &s.text.clone(), Some(a))?
        }
        _ => s,
    };
    Ok((s, origin))
}

/// `verify/kernel-boot` of the checkout on the strategy, as the patch
/// wires it: the qemu machine and the guest's result line.
fn boot(name: &str, kernel: KernelVersion, arch: Arch) -> Result<Boot, Failure> {
    let script = copygen::front::catalog::checkout()
        .map(|root| root.join("verify/kernel-boot"))
        .filter(|p| p.is_file())
        .ok_or_else(|| {
            Failure::Input(BadInput(
                "error: --boot: verify/kernel-boot is not here (it is in a copygen checkout); \
                 the patch would claim a boot that did not run"
                    .into(),
            ))
        })?;
    errln!("kernel-patch: booting with {}", script.display());
    let out = std::process::Command::new(&script)
        .args(["--kernel", kernel.name(), "--arch", arch.name(), name])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            Failure::Other(anyhow::anyhow!("--boot: running {}: {e}", script.display()))
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let result = text.lines().rfind(|l| l.starts_with("copygen-boot: PASS "));
    let machine = text
        .lines()
        .find_map(|l| l.strip_prefix("kernel-boot: machine: "));
    match (out.status.success(), result, machine) {
        (true, Some(r), Some(m)) => Ok(Boot {
            machine: m.trim().to_string(),
            result: r.trim().to_string(),
        }),
        _ => Err(Failure::Other(anyhow::anyhow!(
            "--boot: verify/kernel-boot did not pass ({}); no patch written",
            out.status
        ))),
    }
}

/// `git format-patch`'s file name: `[vN-]NNNN-<subject as a slug>.patch`.
fn file_name(series: &Series, number: usize, subject: &str) -> String {
    let mut slug = String::new();
    for c in subject.chars() {
        if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
            slug.push(c);
        } else if !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug: String = slug.trim_matches(['-', '.']).chars().take(52).collect();
    let v = series.reroll.map(|v| format!("v{v}-")).unwrap_or_default();
    format!("{v}{number:04}-{}.patch", slug.trim_end_matches(['-', '.']))
}

/// `copygen kernel-patch`.
pub fn cmd_kernel_patch(a: KernelPatchArgs) -> Result<ExitCode, Failure> {
    let KernelPatchArgs {
        strategy: name,
        kernel,
        arch,
        output,
        output_directory,
        no_verify,
        boot: want_boot,
        generated_file,
        tree,
        base,
        reroll_count,
        no_date,
        author,
        signed_off_by,
        figures,
        kunit,
    } = a;
    let kernel = KernelVersion::parse(&kernel).ok_or_else(|| {
        Failure::Input(BadInput(format!(
            "error: --kernel: `{kernel}` is not a supported tree (6.1, 6.12)"
        )))
    })?;
    let mut arches = Vec::new();
    for a in arch {
        let a = parse_arch(Some(a))?.expect("given");
        if !arches.contains(&a) {
            arches.push(a);
        }
    }
    if arches.len() > 1 && output_directory.is_none() {
        return Err(Failure::Input(BadInput(
            "error: --arch: several architectures make a series: give --output-directory DIR"
                .into(),
        )));
    }
    if let Some(why) = kunit
        .then(|| copygen::tools::kernel_patch::kunit::unsupported(kernel))
        .flatten()
    {
        return Err(Failure::Input(BadInput(format!("error: {why}"))));
    }
    if let Some(b) = &base {
        let hex = b
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase());
        if !(hex && (b.len() == 40 || b.len() == 64)) {
            return Err(Failure::Input(BadInput(format!(
                "error: --base: `{}` is not a full commit id (40 or 64 lower-case hex digits)",
                copygen::front::diagnostics::escape(b, false)
            ))));
        }
    }
    if let Some(t) = &tree {
        if !t.join("Makefile").is_file() {
            return Err(Failure::Input(BadInput(format!(
                "error: --tree: {} is not a kernel tree (no Makefile)",
                t.display()
            ))));
        }
    }
    let targets: Vec<Option<Arch>> = if arches.is_empty() {
        vec![None]
    } else {
        arches.iter().copied().map(Some).collect()
    };
    if generated_file {
        let [arch] = targets[..] else {
            return Err(Failure::Input(BadInput(
                "error: --generated-file: give one --arch at most".into(),
            )));
        };
        let (s, origin) = resolve(&name, kernel, arch)?;
        let mut s = s;
        s.source = origin.label();
        let w = copygen::tools::kernel_patch::wire(&s, kernel).map_err(|e| super::unfit(&s, e))?;
        let r = Regenerate {
            argument: name.clone(),
            arch,
            context: origin.context(),
        };
        let text = copygen::tools::kernel_patch::generated_file(&w.strategy, kernel, &r);
        match output {
            Some(p) if p.as_os_str() != "-" => copygen::output::write::write_file(&p, &text)?,
            _ => out!("{text}"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    let m = mail(author, signed_off_by, figures)?;
    let date = date(no_date)?;
    let n = targets.len();
    let mut patches: Vec<(String, String)> = Vec::new();
    let mut strategy_names = Vec::new();
    for (i, arch) in targets.iter().enumerate() {
        let (mut s, origin) = resolve(&name, kernel, *arch)?;
        s.source = origin.label();
        let w = copygen::tools::kernel_patch::wire(&s, kernel).map_err(|e| super::unfit(&s, e))?;
        let verified = if no_verify {
            None
        } else {
            let asm = copygen::output::render::render(&w.strategy, Flavor::Linux);
            Some(
                copygen::tools::kernel_patch::verify(&w.strategy, &asm)
                    .map_err(|e| Failure::Other(e.context(format!("{}: not verified", s.name))))?,
            )
        };
        let booted = if want_boot {
            Some(boot(&name, kernel, s.arch)?)
        } else {
            None
        };
        let series = Series {
            reroll: reroll_count,
            number: (n > 1).then_some((i + 1, n)),
            // With a cover letter, it carries the base (as git writes it).
            base: if n > 1 { None } else { base.clone() },
            date: date.clone(),
        };
        let r = Request {
            kernel,
            verified: verified.as_ref(),
            mail: &m,
            regenerate: &Regenerate {
                argument: name.clone(),
                arch: *arch,
                context: origin.context(),
            },
            tree: tree.as_deref(),
            boot: booted.as_ref(),
            series: &series,
            kunit,
        };
        let text = copygen::tools::kernel_patch::patch(&s, &r)?;
        let subject = copygen::tools::kernel_patch::subject(&w.strategy);
        strategy_names.push(format!("{} ({})", s.name, s.arch));
        patches.push((file_name(&series, i + 1, &subject), text));
    }
    let Some(dir) = output_directory else {
        let text = &patches[0].1;
        match output {
            Some(p) if p.as_os_str() != "-" => copygen::output::write::write_file(&p, text)?,
            _ => out!("{text}"),
        }
        return Ok(ExitCode::SUCCESS);
    };
    if n > 1 {
        let series = Series {
            reroll: reroll_count,
            number: Some((0, n)),
            base: base.clone(),
            date: date.clone(),
        };
        let cover = copygen::tools::kernel_patch::mail::cover_letter(
            &m,
            &series,
            kernel,
            &strategy_names,
            &patches,
        );
        patches.insert(0, (file_name(&series, 0, "cover-letter"), cover));
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        Failure::Other(anyhow::anyhow!("--output-directory {}: {e}", dir.display()))
    })?;
    for (file, text) in &patches {
        let p = dir.join(file);
        copygen::output::write::write_file(&p, text)?;
        outln!("{}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}
