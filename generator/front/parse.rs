//! Strategy files in: read a file, refuse characters that hide what it
//! says, read the schema ([`super::schema`]) and validate it
//! ([`super::validate`]) into a [`Strategy`]. Every error is located: file,
//! line, column and field; every error in a file is reported at once.

use std::cell::RefCell;
use std::path::Path;

use crate::front::diagnostics::{Locator, StrategyError, Warning};
use crate::front::schema::{deserialize, field_at, key_on_line};
use crate::front::strategy::*;
use crate::front::validate::Validator;
use crate::input::BadInput;

/// Parse and validate a strategy file's text. `file` names it in errors and
/// (relative to its checkout, see [`recorded_path`]) in the generated
/// header; `arch` overrides the file's `arch`. The error carries every
/// problem found (see [`StrategyError::also`]).
pub fn parse(file: &Path, text: &str, arch: Option<Arch>) -> Result<Strategy, StrategyError> {
    parse_with_warnings(file, text, arch).map(|(s, _)| s)
}

/// [`parse`], also returning what is allowed but almost certainly unmeant.
pub fn parse_with_warnings(
    file: &Path,
    text: &str,
    arch: Option<Arch>,
) -> Result<(Strategy, Vec<Warning>), StrategyError> {
    let loc = Locator::new(file, text);
    check_characters(&loc)?;
    let (raw, mut errors) = deserialize(&loc);
    let validator = Validator {
        loc: &loc,
        errors: RefCell::new(Vec::new()),
        warnings: RefCell::new(Vec::new()),
    };
    let strategy = raw.and_then(|raw| validator.strategy(raw, file, text, arch));
    errors.extend(validator.errors.take());
    errors.sort_by_key(|e| (e.line, e.column));
    if let Some(mut e) = StrategyError::collect(errors) {
        if let Some(note) = override_note(file, text, arch) {
            e.message.push_str(&note);
            for more in &mut e.also {
                more.message.push_str(&note);
            }
        }
        return Err(e);
    }
    let strategy = strategy.expect("no errors: the strategy was built");
    Ok((strategy, validator.warnings.take()))
}

/// When an architecture override makes a file fail that is valid for its
/// own architecture, every error says so: the file is not wrong, the
/// override is.
fn override_note(file: &Path, text: &str, arch: Option<Arch>) -> Option<String> {
    let arch = arch?;
    let own = parse(file, text, None).ok()?;
    (own.arch != arch).then(|| {
        format!(
            " (this comes from overriding the architecture with `--arch {arch}`: the file is for {} and valid there)",
            own.arch
        )
    })
}

/// Read and validate a strategy file from disk. A file that cannot be read
/// or is not UTF-8 text is a [`StrategyError`] like any other bad input,
/// returned as [`BadInput`]; warnings are printed to stderr.
pub fn load(file: &Path, arch: Option<Arch>) -> Result<Strategy, BadInput> {
    let text = read_text(file)?;
    let (s, warnings) = parse_with_warnings(file, &text, arch)?;
    // A standard error that cannot be written drops the warning; it never
    // panics (`eprintln!` would).
    let mut err = std::io::stderr().lock();
    for w in warnings {
        let _ = std::io::Write::write_fmt(&mut err, format_args!("{w}\n"));
    }
    Ok(s)
}

/// A strategy file's text (`-`: standard input), read by
/// [`crate::input::read_string`]: a missing file, a folder, a FIFO or
/// device, more than [`crate::input::MAX_STRATEGY`] bytes, or bytes that are
/// not UTF-8 are located errors.
pub fn read_text(file: &Path) -> Result<String, StrategyError> {
    use crate::input::ReadError;
    if file.as_os_str().is_empty() {
        return Err(StrategyError::whole_file(file, "an empty file name"));
    }
    match crate::input::read_string_limited(file, crate::input::MAX_STRATEGY) {
        Ok(text) => Ok(text),
        Err(ReadError::NotRegular("a folder")) => Err(StrategyError::whole_file(
            file,
            "is a folder, not a strategy file",
        )),
        Err(ReadError::NotUtf8 { at, bytes }) => {
            let lossy = String::from_utf8_lossy(&bytes).into_owned();
            // The offset in the lossy text: each bad byte before `at` is
            // none (`at` is the first), so the prefix is unchanged.
            let loc = Locator::new(file, &lossy);
            let field = key_on_line(&lossy, at);
            Err(loc.at_span(
                at..at,
                &field,
                format!(
                    "not UTF-8 text: byte 0x{:02x} here does not begin a UTF-8 character",
                    bytes[at]
                ),
            ))
        }
        Err(e @ (ReadError::NotRegular(_) | ReadError::TooLarge(_))) => Err(
            StrategyError::whole_file(file, format!("cannot read strategy file: it {e}")),
        ),
        Err(e) => Err(StrategyError::whole_file(
            file,
            format!("cannot read strategy file: {e}"),
        )),
    }
}

/// Where a strategy file is recorded in generated headers, so that no
/// machine's absolute paths reach a generated file: a clean relative path
/// (`generator/strategies/x.toml`, `mine.toml`) as given; any other path
/// relative to the checkout holding the file (the nearest folder above
/// with `.git`, or a copygen checkout), else only its file name.
pub fn recorded_path(file: &Path) -> String {
    use std::path::Component;
    let shown = |p: &Path| p.to_string_lossy().replace('\\', "/");
    if !file.as_os_str().is_empty() && file.components().all(|c| matches!(c, Component::Normal(_)))
    {
        return shown(file);
    }
    if let Ok(canonical) = std::fs::canonicalize(file) {
        let is_checkout = |d: &Path| {
            d.join(".git").exists()
                || (d.join("Cargo.toml").is_file()
                    && d.join(crate::front::catalog::STRATEGIES).is_dir())
        };
        if let Some(top) = canonical.ancestors().skip(1).find(|d| is_checkout(d)) {
            return shown(canonical.strip_prefix(top).expect("an ancestor"));
        }
    }
    file.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Characters that make a file read differently from what it is
/// (bidirectional overrides, "Trojan Source") or that a terminal or an
/// assembler would act on (control characters) are refused anywhere in the
/// file, comments included: the file is restated in every generated file.
fn check_characters(loc: &Locator) -> Result<(), StrategyError> {
    let bad = loc.text.char_indices().find(|&(i, c)| {
        (c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
            || (c == '\r' && !loc.text[i + 1..].starts_with('\n'))
            || is_deceptive(c)
    });
    match bad {
        None => Ok(()),
        Some((i, c)) => {
            let field = match loc.doc.as_ref() {
                Some(d) => field_at(d.get_ref(), i).to_string(),
                None => key_on_line(loc.text, i),
            };
            Err(loc.at_span(
                i..i,
                &field,
                format!(
                    "character U+{:04X} is not allowed in a strategy file (control and bidirectional-override characters can hide what the file says)",
                    c as u32
                ),
            ))
        }
    }
}

/// Invisible characters that change how text around them is displayed.
pub(super) fn is_deceptive(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{2028}' | '\u{2029}')
}

/// A C identifier, as a symbol name must be to reach a generated file.
pub fn is_c_identifier(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 128
}

/// Parse `a..=b`, `a..b` or `a..` into an inclusive range.
pub fn parse_range(s: &str) -> Option<(u64, Option<u64>)> {
    let (lo, rest) = s.trim().split_once("..")?;
    let lo: u64 = lo.trim().parse().ok()?;
    let rest = rest.trim();
    if rest.is_empty() {
        return Some((lo, None));
    }
    if let Some(hi) = rest.strip_prefix('=') {
        let hi: u64 = hi.trim().parse().ok()?;
        return (hi >= lo).then_some((lo, Some(hi)));
    }
    let hi: u64 = rest.parse().ok()?;
    (hi > lo).then_some((lo, Some(hi - 1)))
}

pub(super) fn fmt_range(lo: u64, hi: Option<u64>) -> String {
    match hi {
        Some(h) => format!("{lo}..={h}"),
        None => format!("{lo}.."),
    }
}
