//! The two sides of a review: strategy files, emitted `.S` files, folders,
//! `WORKTREE` and git revisions, each as the `.S` texts it holds.

use super::*;

/// One `.S` text of a side.
#[derive(Debug, Clone)]
pub struct Source {
    /// Path relative to `emitted/` (`x86_64/linux/unrolled64.S`), or the
    /// file name of a foreign file.
    pub rel: String,
    pub text: String,
    pub arch: Arch,
    pub flavor: Flavor,
    /// The strategy's name, from the copygen header (or the strategy file).
    pub strategy: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideKind {
    /// A whole emitted tree (revision, folder, `WORKTREE`).
    Tree,
    /// A strategy file rendered in its flavours.
    Strategy,
    /// One `.S` file.
    File,
}

#[derive(Debug, Clone)]
pub struct Side {
    /// The argument as given.
    pub label: String,
    pub kind: SideKind,
    pub files: Vec<Source>,
    /// The validated strategy of a strategy-file side.
    pub strategy: Option<Strategy>,
}

/// Arch and flavour from an `.../<arch>/<flavor>/<file>` path.
pub(super) fn path_facts(rel: &str) -> (Option<Arch>, Option<Flavor>) {
    let parts: Vec<&str> = rel.split(['/', '\\']).collect();
    for w in parts.windows(3) {
        if let (Some(a), Some(f)) = (Arch::parse(w[0]), Flavor::parse(w[1])) {
            return (Some(a), Some(f));
        }
    }
    (None, None)
}

/// A `.S` text read from `rel` (shown in errors as `shown`), classified.
pub(super) fn source(rel: String, text: String, shown: &str, opts: &DiffOptions) -> Result<Source> {
    let header = crate::output::header::read(&text).map(|h| (h.name, h.arch, h.flavor));
    let (p_arch, p_flavor) = path_facts(&rel);
    let arch = opts
        .arch
        .or(header.as_ref().map(|h| h.1))
        .or(p_arch)
        .ok_or_else(|| {
            input(format!(
                "error: {shown}: no copygen header and no emitted/<arch>/<flavor>/ path: give --arch"
            ))
        })?;
    // A file's own flavour (its header, its emitted/ path) wins: --flavor
    // then filters trees and strategy sides instead of re-labelling their
    // files, and names the flavour only of a file that does not say.
    let kernel = text.contains("#include <linux/") || text.contains("#include <asm/");
    let flavor = header
        .as_ref()
        .map(|h| h.2)
        .or(p_flavor)
        .or(opts.flavor)
        .unwrap_or(if kernel {
            Flavor::Linux
        } else {
            Flavor::Standalone
        });
    Ok(Source {
        rel,
        text,
        arch,
        flavor,
        strategy: header.map(|h| h.0),
    })
}

pub(super) fn run_git(dir: &Path, args: &[&str]) -> Result<std::process::Output> {
    crate::toolchain::GIT
        .command()
        .current_dir(dir)
        // Its messages in English: "not a git repository" is matched.
        .env("LC_ALL", "C")
        .args(args)
        .output()
        .map_err(|e| {
            crate::input::note_environment(&e);
            if e.kind() == std::io::ErrorKind::NotFound {
                anyhow!("git is not installed or not in PATH (Debian package `git`): {e}")
            } else if let Some(lack) = crate::input::environment_lack(&e) {
                anyhow!("running git: {e} ({lack})")
            } else {
                anyhow!("running git (Debian package `git`): {e}")
            }
        })
}

/// The top of the git checkout holding `cwd`; `None` when it is in none.
/// Git that cannot be run, or fails otherwise, is an error (exit 1), not
/// "not in a git repository".
pub(super) fn git_toplevel(cwd: &Path) -> Result<Option<PathBuf>> {
    let out = run_git(cwd, &["rev-parse", "--show-toplevel"])?;
    if out.status.success() {
        return Ok(Some(PathBuf::from(
            String::from_utf8_lossy(&out.stdout).trim(),
        )));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("not a git repository") {
        return Ok(None);
    }
    Err(anyhow!(
        "git rev-parse --show-toplevel in {}: {}",
        cwd.display(),
        err.trim()
    ))
}

/// `emitted/**.S` at a git revision.
pub(super) fn revision_side(rev: &str, opts: &DiffOptions, cwd: &Path) -> Result<Side> {
    let top = git_toplevel(cwd)?.ok_or_else(|| {
        input(format!(
            "error: `{rev}` is not a file, a folder or `{WORKTREE}`, and {} is not in a git repository",
            cwd.display()
        ))
    })?;
    let spec = format!("{rev}^{{commit}}");
    let ok = run_git(&top, &["rev-parse", "--verify", "--quiet", &spec])?;
    if !ok.status.success() {
        return Err(input(format!(
            "error: `{rev}` is not a file, a folder, `{WORKTREE}` or a revision of {}",
            top.display()
        )));
    }
    let commit = String::from_utf8_lossy(&ok.stdout).trim().to_string();
    let ls = run_git(
        &top,
        &[
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            &commit,
            "--",
            "emitted",
        ],
    )?;
    if !ls.status.success() {
        return Err(anyhow!(
            "git ls-tree {rev}: {}",
            String::from_utf8_lossy(&ls.stderr)
        ));
    }
    if ls.stdout.is_empty() {
        // Not "everything removed": a revision before emitted/ existed, or
        // of another repository's history.
        return Err(input(format!(
            "error: `{rev}` has no emitted/ folder: a revision side is the emitted/ tree committed there"
        )));
    }
    let mut files = Vec::new();
    // -z: names as they are, not quoted.
    for path in String::from_utf8_lossy(&ls.stdout).split('\0') {
        let Some(rel) = path.strip_prefix("emitted/") else {
            continue;
        };
        if !rel.ends_with(".S") {
            continue;
        }
        let show = run_git(&top, &["show", &format!("{commit}:{path}")])?;
        if !show.status.success() {
            return Err(anyhow!(
                "git show {rev}:{path}: {}",
                String::from_utf8_lossy(&show.stderr)
            ));
        }
        let text = String::from_utf8(show.stdout)
            .map_err(|_| input(format!("error: {rev}:{path} is not UTF-8 text")))?;
        files.push(source(
            rel.to_string(),
            text,
            &format!("{rev}:{path}"),
            opts,
        )?);
    }
    if files.is_empty() {
        return Err(input(format!(
            "error: `{rev}`: no .S files under its emitted/ folder; a revision side is an emitted tree"
        )));
    }
    Ok(Side {
        label: rev.to_string(),
        kind: SideKind::Tree,
        files: filter_flavor(files, opts),
        strategy: None,
    })
}

pub(super) fn filter_flavor(mut files: Vec<Source>, opts: &DiffOptions) -> Vec<Source> {
    if let Some(f) = opts.flavor {
        files.retain(|s| s.flavor == f);
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

/// Every `.S` under `dir` (an emitted tree), relative to it. Folders are
/// walked without following symbolic links to folders (a link to a parent
/// would never end); every `.S` is read by [`crate::input::read_string`],
/// so a FIFO, socket or device named `*.S` is a located error, not a hang.
pub(super) fn folder_side(label: &str, dir: &Path, opts: &DiffOptions) -> Result<Side> {
    let root = if dir.join("emitted").is_dir() {
        dir.join("emitted")
    } else {
        dir.to_path_buf()
    };
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| {
            crate::input::note_environment(&e);
            input(format!("error: {}: {e}", d.display()))
        })?;
        for e in entries {
            let e = e.map_err(|e| input(format!("error: {}: {e}", d.display())))?;
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "S") {
                let rel = p
                    .strip_prefix(&root)
                    .expect("under root")
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = crate::input::read_string(&p)
                    .map_err(|e| input(format!("error: {}: {e}", p.display())))?;
                files.push(source(rel, text, &p.display().to_string(), opts)?);
            }
        }
    }
    if files.is_empty() {
        // Not "everything removed": most likely the wrong folder.
        return Err(input(format!(
            "error: {label}: no .S files under {}; a folder side is an emitted tree",
            root.display()
        )));
    }
    Ok(Side {
        label: label.to_string(),
        kind: SideKind::Tree,
        files: filter_flavor(files, opts),
        strategy: None,
    })
}

/// A strategy file: its flavours rendered for its arch.
pub(super) fn strategy_side(path: &Path, opts: &DiffOptions) -> Result<Side> {
    let s = crate::front::parse::load(path, opts.arch)?;
    let flavors = match opts.flavor {
        Some(f) => vec![f],
        None => Flavor::ALL.to_vec(),
    };
    let files = flavors
        .into_iter()
        .map(|fl| Source {
            rel: crate::output::render::emitted_path(&s, fl),
            text: crate::output::render::render(&s, fl),
            arch: s.arch,
            flavor: fl,
            strategy: Some(s.name.clone()),
        })
        .collect();
    Ok(Side {
        label: path.display().to_string(),
        kind: SideKind::Strategy,
        files,
        strategy: Some(s),
    })
}

/// Read one side from its command-line argument.
pub fn load_side(arg: &str, opts: &DiffOptions) -> Result<Side> {
    let cwd = match &opts.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()?,
    };
    if arg.trim().is_empty() {
        return Err(input(
            "error: an empty argument names no side: give a strategy file, an emitted .S, a folder, WORKTREE or a git revision",
        ));
    }
    if arg == WORKTREE {
        let top = git_toplevel(&cwd)
            .ok()
            .flatten()
            .unwrap_or_else(crate::front::catalog::repo_root);
        return folder_side(arg, &top.join("emitted"), opts);
    }
    let path = cwd.join(arg);
    if path.is_dir() {
        return folder_side(arg, &path, opts);
    }
    // Anything else that exists is read as a file (a FIFO or device is
    // then refused by the reader), not taken for a git revision.
    if path.symlink_metadata().is_ok() {
        if path.extension().is_some_and(|x| x == "toml") {
            return strategy_side(&path, opts).map(|mut s| {
                s.label = arg.to_string();
                s
            });
        }
        let text = crate::input::read_string(&path)
            .map_err(|e| input(format!("error: {arg}: cannot read: {e}")))?;
        // An emitted file keeps its place under emitted/ so it pairs by path.
        let shown = path.to_string_lossy().replace('\\', "/");
        let rel = match shown.rfind("emitted/") {
            Some(i) => shown[i + "emitted/".len()..].to_string(),
            None => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| arg.to_string()),
        };
        let src = source(rel, text, arg, opts)?;
        return Ok(Side {
            label: arg.to_string(),
            kind: SideKind::File,
            files: vec![src],
            strategy: None,
        });
    }
    revision_side(arg, opts, &cwd)
}
