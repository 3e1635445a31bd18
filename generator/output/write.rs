//! Writing what copygen produces to the user's files (`-o`, `emitted/`,
//! `--json`).
//!
//! What a path names decides how it is written:
//! - a regular file (or a new one) is replaced atomically: the text goes to
//!   a temporary file beside it, which is renamed over it. A new file gets
//!   the usual `0666` less the umask; an existing one keeps its mode.
//! - a symbolic link is followed: the file it points at is written (and the
//!   link stays a link), by the rule for what it points at.
//! - `-`, a character or block device, a FIFO or a socket is a stream: the
//!   text is written into it, never replacing the node.
//! - a folder is an error.
//!
//! A set of files ([`write_all`]) is all-or-nothing as far as a file
//! system allows. Everything is resolved first; then every regular file is
//! written in full to its temporary (creating missing folders); then the
//! streams are written; only if all of that worked are the temporaries
//! renamed over their targets, each target first hard-linked to a backup.
//! A failure before the renames changes no regular file (temporaries and
//! folders made for them are removed); a rename that fails puts back the
//! files already renamed from their backups. What cannot be undone: bytes
//! already written into a stream, and a crash in the middle of the renames
//! (each file is then either wholly old or wholly new, never partial).

use std::fs;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

/// Writing standard output failed (a closed pipe, a full disk): the
/// command line turns this into its exit status instead of an error about
/// a file.
#[derive(Debug)]
pub struct StdoutFailed(pub std::io::Error);

impl std::fmt::Display for StdoutFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "write error: {}", self.0)
    }
}

impl std::error::Error for StdoutFailed {}

static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Standard output was closed when the program started (as by the shell's
/// `>&-`); Rust's runtime has put `/dev/null` on the descriptor, so that no
/// file opened later takes it. Writing standard output is then an error
/// (Rust's standard output would drop the text silently).
pub fn mark_stdout_closed() {
    STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The error writing to a standard output that was closed at start.
fn stdout_closed() -> std::io::Result<()> {
    if STDOUT_CLOSED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(std::io::Error::from_raw_os_error(libc::EBADF));
    }
    Ok(())
}

/// Text for standard output, all of it, flushed; a failure is a
/// [`StdoutFailed`] (Rust's `print!` would panic instead).
pub fn to_stdout(args: std::fmt::Arguments) -> std::result::Result<(), StdoutFailed> {
    stdout_closed().map_err(StdoutFailed)?;
    let mut out = std::io::stdout().lock();
    out.write_fmt(args)
        .and_then(|()| out.flush())
        .map_err(StdoutFailed)
}

/// A message to standard error. When standard error itself cannot be
/// written there is nowhere left to say so: the message is dropped rather
/// than the program panicking (`eprint!` would).
pub fn to_stderr(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// Where one output goes, once symbolic links are followed.
enum Target {
    /// Standard output (`-`).
    Stdout,
    /// A device, FIFO or socket: written in place.
    Stream(PathBuf),
    /// A regular file, existing (with its mode) or new.
    File { path: PathBuf, mode: Option<u32> },
}

/// Follow symbolic links from `path` to what it finally names (which need
/// not exist: a dangling link is written through, creating its target).
fn resolve(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link =
                    fs::read_link(&p).with_context(|| format!("reading link {}", p.display()))?;
                p = match p.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            _ => return Ok(p),
        }
    }
    bail!("{}: too many levels of symbolic links", path.display())
}

fn target(path: &Path) -> Result<Target> {
    if path.as_os_str() == "-" {
        return Ok(Target::Stdout);
    }
    if path.as_os_str().is_empty() {
        bail!("an empty output path");
    }
    let real = resolve(path)?;
    match fs::metadata(&real) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Target::File {
            path: real,
            mode: None,
        }),
        Err(e) => Err(anyhow!("{}: {e}", path.display())),
        Ok(m) if m.is_dir() => bail!("{} is a folder, not a file", path.display()),
        Ok(m) if m.is_file() => Ok(Target::File {
            path: real,
            mode: Some(m.permissions().mode()),
        }),
        Ok(m) => {
            let t = m.file_type();
            debug_assert!(
                t.is_char_device() || t.is_block_device() || t.is_fifo() || t.is_socket()
            );
            Ok(Target::Stream(real))
        }
    }
}

/// Write one file; see the module documentation for what each kind of
/// path gets.
pub fn write_file(path: &Path, contents: &str) -> Result<()> {
    write_all(&[(path.to_path_buf(), contents.to_string())])
}

/// A regular file written to its temporary, not yet renamed. Only the
/// temporary's path is kept (removed when dropped), not an open file: a
/// run may write any number of files without running out of descriptors.
struct Staged {
    tmp: tempfile::TempPath,
    path: PathBuf,
    /// Removes the temporary if a signal stops the run first.
    _on_signal: super::cleanup::Registered,
}

/// A folder made for the outputs: removed again if the set fails or a
/// signal stops the run, kept once every file is in place.
struct MadeDir {
    path: PathBuf,
    on_signal: super::cleanup::Registered,
}

/// Where each path goes, refusing what cannot be written (a folder, an
/// empty path) and a file named twice.
fn targets<'a>(paths: impl Iterator<Item = &'a Path>) -> Result<Vec<Target>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for given in paths {
        let t = target(given)?;
        if let Target::File { path, .. } | Target::Stream(path) = &t {
            if !seen.insert(path.clone()) {
                bail!("{} is written twice in one run", given.display());
            }
        }
        out.push(t);
    }
    Ok(out)
}

/// The checks [`write_all`] makes before it writes anything, for a command
/// to make before the work that produces the contents (a timing run, a
/// search), so that a mistyped output path fails at once.
pub fn check_targets(paths: &[&Path]) -> Result<()> {
    targets(paths.iter().copied()).map(drop)
}

/// Write every `(path, contents)`, all or nothing (module documentation).
pub fn write_all(outputs: &[(PathBuf, String)]) -> Result<()> {
    let targets = targets(outputs.iter().map(|(p, _)| p.as_path()))?;

    // Stage the regular files; on failure, undo the folders made for them.
    let mut made_dirs: Vec<MadeDir> = Vec::new();
    let staged = stage(outputs, &targets, &mut made_dirs);
    let staged = match staged {
        Ok(s) => s,
        Err(e) => {
            remove_made_dirs(&made_dirs);
            return Err(e);
        }
    };

    // Streams next: a stream cannot be taken back, but if one fails no
    // regular file has changed yet.
    for ((given, text), t) in outputs.iter().zip(&targets) {
        let written = match t {
            Target::Stdout => stdout_closed().and_then(|()| {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes()).and_then(|()| out.flush())
            }),
            Target::Stream(p) => fs::OpenOptions::new()
                .write(true)
                .open(p)
                .and_then(|mut f| f.write_all(text.as_bytes())),
            Target::File { .. } => continue,
        };
        if let Err(e) = written {
            drop(staged);
            remove_made_dirs(&made_dirs);
            if matches!(t, Target::Stdout) {
                return Err(StdoutFailed(e).into());
            }
            bail!("writing {}: {e}", given.display());
        }
    }
    commit(staged)?;
    for d in made_dirs {
        d.on_signal.keep();
    }
    Ok(())
}

fn stage(
    outputs: &[(PathBuf, String)],
    targets: &[Target],
    made_dirs: &mut Vec<MadeDir>,
) -> Result<Vec<Staged>> {
    let mut staged = Vec::new();
    for ((given, text), t) in outputs.iter().zip(targets) {
        let Target::File { path, mode } = t else {
            continue;
        };
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        create_dirs(&dir, made_dirs).with_context(|| format!("creating {}", dir.display()))?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        // A new file is created 0666 less the umask, like any program's.
        let (mut tmp, on_signal) = super::cleanup::atomically(|| {
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".tmp")
                .permissions(fs::Permissions::from_mode(0o666))
                .tempfile_in(&dir)?;
            let on_signal = super::cleanup::file(tmp.path());
            Ok::<_, std::io::Error>((tmp, on_signal))
        })
        .map_err(|e| with_hint(e, &format!("a temporary file in {}", dir.display())))?;
        if let Some(mode) = mode {
            fs::set_permissions(tmp.path(), fs::Permissions::from_mode(*mode))
                .with_context(|| format!("keeping the mode of {}", given.display()))?;
        }
        tmp.write_all(text.as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .map_err(|e| with_hint(e, &format!("writing {}", given.display())))?;
        staged.push(Staged {
            // Closes the file; the path is still removed on failure.
            tmp: tmp.into_temp_path(),
            path: path.clone(),
            _on_signal: on_signal,
        });
    }
    Ok(staged)
}

/// An I/O error in `what`, with what the environment lacks when that is
/// the cause (a file size limit, descriptors, space).
fn with_hint(e: std::io::Error, what: &str) -> anyhow::Error {
    match crate::input::environment_lack(&e) {
        Some(lack) => anyhow!("{what}: {e} ({lack})"),
        None => anyhow!("{what}: {e}"),
    }
}

/// `create_dir_all`, remembering each folder it made (outermost first).
/// Another process making the same folder at the same time is no error
/// (`create_dir_all` semantics): the folder is then not this run's to
/// remove.
fn create_dirs(dir: &Path, made: &mut Vec<MadeDir>) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        create_dirs(parent, made)?;
    }
    let made_here =
        super::cleanup::atomically(|| fs::create_dir(dir).map(|()| super::cleanup::folder(dir)));
    match made_here {
        Ok(on_signal) => made.push(MadeDir {
            path: dir.to_path_buf(),
            on_signal,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(e) => return Err(e),
    }
    Ok(())
}

fn remove_made_dirs(made: &[MadeDir]) {
    for d in made.iter().rev() {
        let _ = fs::remove_dir(&d.path);
    }
}

/// Rename every staged file over its target; on a failure, put back the
/// ones already renamed.
fn commit(staged: Vec<Staged>) -> Result<()> {
    // (target, backup of its old contents if it had any)
    let mut done: Vec<(PathBuf, Option<Backup>)> = Vec::new();
    let mut failure = None;
    // Each temporary stays registered for a signal until it is renamed.
    for Staged {
        tmp,
        path,
        _on_signal: _registered,
    } in staged
    {
        let backup = match backup_of(&path) {
            Ok(b) => b,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        match tmp.persist(&path) {
            Ok(()) => done.push((path, backup)),
            Err(e) => {
                failure = Some(anyhow!("replacing {}: {}", path.display(), e.error));
                break;
            }
        }
    }
    let Some(e) = failure else {
        return Ok(()); // the backups delete themselves
    };
    for (path, backup) in done.into_iter().rev() {
        let _ = match backup {
            Some(b) => b.link.persist(&path).map_err(|e| e.error),
            None => fs::remove_file(&path),
        };
    }
    Err(e.context("nothing was changed"))
}

/// A hard link to a target's old contents (removed when dropped, or by a
/// signal that stops the run).
struct Backup {
    link: tempfile::TempPath,
    _on_signal: super::cleanup::Registered,
}

/// A hard link to `path`'s current contents beside it (removed when
/// dropped), so a failed set can restore it; `None` if there is no file.
fn backup_of(path: &Path) -> Result<Option<Backup>> {
    if !path.exists() {
        return Ok(None);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // A fresh name: make a temporary file, then link the old file over it.
    let (tmp, on_signal) = super::cleanup::atomically(|| {
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".old")
            .tempfile_in(dir)?
            .into_temp_path();
        let on_signal = super::cleanup::file(&tmp);
        fs::remove_file(&tmp)?;
        Ok::<_, std::io::Error>((tmp, on_signal))
    })
    .with_context(|| format!("a backup of {}", path.display()))?;
    fs::hard_link(path, &tmp).with_context(|| format!("a backup of {}", path.display()))?;
    Ok(Some(Backup {
        link: tmp,
        _on_signal: on_signal,
    }))
}
