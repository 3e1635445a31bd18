//! Reading what copygen is given: strategy files, distribution CSVs, `.S`
//! files. Every reader goes through [`read_bytes`] (or [`read_string`]),
//! which takes only a regular file (or standard input, named `-`) and at
//! most [`MAX_INPUT`] bytes ([`MAX_STRATEGY`] for a strategy file), so that no input can hang a run (a FIFO, a
//! terminal) or exhaust memory (`/dev/zero`, a file of 32 MB of blank
//! lines).
//!
//! The file is opened without blocking (`O_NONBLOCK`, so opening a FIFO
//! with no writer returns at once) and without becoming a controlling
//! terminal (`O_NOCTTY`); what was opened is then checked with `fstat`, not
//! the path beforehand, so a file swapped for a FIFO between a check and
//! the open is still refused.

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest input copygen reads, in bytes (16 MiB): about a thousand
/// times the largest strategy file or emitted `.S` file, and far above a
/// measured size distribution (4,096 lines).
pub const MAX_INPUT: u64 = 16 << 20;

/// The largest strategy file copygen reads (1 MiB, some 500 times the
/// largest shipped one): parsing TOML takes some fifty times the file's
/// size in memory, so a strategy file is held to less than other inputs.
pub const MAX_STRATEGY: u64 = 1 << 20;

/// Input the user gave is bad: a strategy file, an argument, a trace, a
/// revision, a file to check. The one error `copygen` exits 2 for (the
/// command line maps it, in one place); any other failure exits with 1.
/// The text is the whole message, printed as it is (`error: …`, or a
/// located `file:line:column: error …`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Why an input could not be read. Its text names no file: the caller's
/// message does (and says whether that makes it [`BadInput`]).
#[derive(Debug)]
pub enum ReadError {
    /// A folder, FIFO, socket or device: what it is.
    NotRegular(&'static str),
    /// More than the limit (bytes).
    TooLarge(u64),
    /// Not UTF-8 text: the offset of the first byte that is not.
    NotUtf8 {
        at: usize,
        bytes: Vec<u8>,
    },
    Io(std::io::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotRegular("a folder") => f.write_str("is a folder, not a regular file"),
            ReadError::NotRegular(what) => write!(f, "is {what}, not a regular file"),
            ReadError::TooLarge(limit) => write!(
                f,
                "is larger than {} MiB, the most copygen reads from this kind of input",
                limit >> 20
            ),
            ReadError::NotUtf8 { at, bytes } => {
                // Everything before `at` is UTF-8: the column counts its
                // characters on the line.
                let before = &bytes[..*at];
                let line_start = before
                    .iter()
                    .rposition(|&b| b == b'\n')
                    .map_or(0, |i| i + 1);
                let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
                let column = 1 + before[line_start..]
                    .iter()
                    .filter(|&&b| b & 0xc0 != 0x80)
                    .count();
                write!(
                    f,
                    "not UTF-8 text: byte 0x{:02x} at line {line}, column {column} (offset {at}) does not begin a UTF-8 character",
                    bytes[*at]
                )
            }
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// What a file that is not regular is, in words.
fn kind(t: std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// At most `limit` bytes from `r`; more is [`ReadError::TooLarge`].
fn read_bounded(r: impl Read, size_hint: u64, limit: u64) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::with_capacity(size_hint.min(limit) as usize);
    r.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(ReadError::TooLarge(limit));
    }
    Ok(buf)
}

/// The bytes of the regular file at `path`, or of standard input for `-`,
/// at most [`MAX_INPUT`] of them.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_bytes_limited(path, MAX_INPUT)
}

/// What the environment lacks when `e` is the cause, not the input: too
/// few file descriptors, memory, a file size limit, disk space.
pub fn environment_lack(e: &std::io::Error) -> Option<&'static str> {
    use std::io::ErrorKind;
    // By kind first: a wrapped error (tempfile's, naming its path) keeps
    // its kind but not its number.
    match e.kind() {
        ErrorKind::FileTooLarge => {
            return Some("the file size limit (`ulimit -f`) is below the file's size")
        }
        ErrorKind::StorageFull => return Some("no space left on the device"),
        ErrorKind::QuotaExceeded => return Some("the disk quota is used up"),
        ErrorKind::OutOfMemory => return Some("out of memory"),
        _ => {}
    }
    match e.raw_os_error()? {
        libc::EMFILE => Some("too few file descriptors for this process: raise `ulimit -n`"),
        libc::ENFILE => Some("the system's open-file table is full"),
        libc::ENOMEM => Some("out of memory"),
        libc::EFBIG => Some("the file size limit (`ulimit -f`) is below the file's size"),
        libc::ENOSPC => Some("no space left on the device"),
        libc::EDQUOT => Some("the disk quota is used up"),
        _ => None,
    }
}

static ENVIRONMENT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// The first reason an input could not be read that lies in the
/// environment ([`environment_lack`]), not in the input. A command that
/// would report the input as bad exits 1 with this instead.
pub fn environment_failure() -> Option<&'static str> {
    ENVIRONMENT.get().copied()
}

/// [`read_bytes`] with another limit.
pub fn read_bytes_limited(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    let read = read_bytes_unnoted(path, limit);
    if let Err(ReadError::Io(e)) = &read {
        note_environment(e);
    }
    read
}

/// Remember `e` for [`environment_failure`] if the environment caused it.
pub fn note_environment(e: &std::io::Error) {
    if let Some(lack) = environment_lack(e) {
        let _ = ENVIRONMENT.set(lack);
    }
}

fn read_bytes_unnoted(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    if path.as_os_str() == "-" {
        return read_bounded(std::io::stdin().lock(), 0, limit);
    }
    let file: File = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular(kind(meta.file_type())));
    }
    if meta.len() > limit {
        return Err(ReadError::TooLarge(limit));
    }
    read_bounded(file, meta.len(), limit)
}

/// [`read_bytes`] as UTF-8 text.
pub fn read_string(path: &Path) -> Result<String, ReadError> {
    read_string_limited(path, MAX_INPUT)
}

/// [`read_string`] with another limit.
pub fn read_string_limited(path: &Path, limit: u64) -> Result<String, ReadError> {
    String::from_utf8(read_bytes_limited(path, limit)?).map_err(|e| ReadError::NotUtf8 {
        at: e.utf8_error().valid_up_to(),
        bytes: e.into_bytes(),
    })
}
