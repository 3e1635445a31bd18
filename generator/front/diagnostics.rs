//! Errors about a strategy file: every one names the file, the line and
//! column, and the field (as a TOML path such as `dispatch[1].sizes`).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::input::BadInput;
use toml::de::{DeTable, DeValue};

/// One segment of a field path inside a strategy file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A field path such as `methods.loop.registers` or `dispatch[2].use`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }
    pub fn key(&self, k: &str) -> Self {
        let mut v = self.0.clone();
        v.push(Seg::Key(k.to_string()));
        FieldPath(v)
    }
    pub fn index(&self, i: usize) -> Self {
        let mut v = self.0.clone();
        v.push(Seg::Index(i));
        FieldPath(v)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Key(k) if i == 0 => write!(f, "{k}")?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

/// Whether a terminal (or a reader) would act on `c` rather than show it:
/// C0 and C1 control characters (ESC, BEL, CR, ...), DEL, and the
/// invisible characters that reorder or hide text around them
/// (bidirectional embeddings, overrides and isolates, direction marks,
/// line and paragraph separators, zero-width characters, BOM).
pub fn is_unsafe_to_show(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200B}'..='\u{200F}'
            | '\u{061C}' | '\u{2028}' | '\u{2029}' | '\u{FEFF}')
}

/// `s` made safe to print: every character [`is_unsafe_to_show`] written
/// as a Rust-style escape (`\u{1b}`), except newlines and tabs when
/// `keep_lines` (a message of several lines). Everything copygen prints
/// that comes from an input (file names, keys, values, CSV fields, source
/// lines, listings) goes through this, so an input cannot move the cursor,
/// retitle the terminal or reorder what a message says.
pub fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let unsafe_here = |c: char| is_unsafe_to_show(c) && !(keep_lines && matches!(c, '\n' | '\t'));
    if !s.chars().any(unsafe_here) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if unsafe_here(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A problem in a strategy file, located in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyError {
    pub file: PathBuf,
    /// 1-based; 0 for a problem with the file as a whole (unreadable).
    pub line: usize,
    pub column: usize,
    pub field: String,
    pub message: String,
    /// The source line the error points at, for display: on a long line,
    /// only the part around the column (elided ends marked `…`, see
    /// [`StrategyError::caret`]).
    pub source_line: Box<str>,
    /// Further errors found in the same file, in the order found: a file
    /// reports every problem at once, not one per run.
    pub also: Box<[StrategyError]>,
}

impl StrategyError {
    /// A problem with the file as a whole: missing, a folder, not text.
    pub fn whole_file(file: &Path, message: impl Into<String>) -> Self {
        StrategyError {
            file: file.to_path_buf(),
            line: 0,
            column: 0,
            field: String::new(),
            message: message.into(),
            source_line: Box::default(),
            also: Box::default(),
        }
    }

    /// The first of `errors` carrying the rest; `None` if there are none.
    pub fn collect(mut errors: Vec<StrategyError>) -> Option<StrategyError> {
        if errors.is_empty() {
            return None;
        }
        let mut first = errors.remove(0);
        first.also = errors.into_boxed_slice();
        Some(first)
    }

    /// Where the caret goes in `source_line` (1-based characters): the
    /// column, less what [`Locator::at_span`] elided before it (all but
    /// [`SNIPPET`] + 1 characters, replaced by `…`).
    pub fn caret(&self) -> usize {
        if self.column > SNIPPET + 2 {
            SNIPPET + 3
        } else {
            self.column
        }
    }

    /// This error and every one it carries, flattened.
    pub fn all(&self) -> Vec<&StrategyError> {
        let mut out = vec![self];
        for e in &self.also {
            out.extend(e.all());
        }
        out
    }

    fn show(&self, f: &mut fmt::Formatter<'_>, severity: &str) -> fmt::Result {
        let file = self.file.to_string_lossy();
        let file = escape(&file, false);
        let message = escape(&self.message, true);
        if self.line == 0 {
            return write!(f, "{file}: {severity}: {message}");
        }
        writeln!(
            f,
            "{file}:{}:{}: {severity} in `{}`: {message}",
            self.line,
            self.column,
            escape(&self.field, false),
        )?;
        let gutter = self.line.to_string().len();
        // The caret under the same character of the escaped line.
        let before: String = self
            .source_line
            .chars()
            .take(self.caret().saturating_sub(1))
            .collect();
        let col = escape(&before, false).chars().count() + 1;
        writeln!(f, "{:gutter$} |", "")?;
        writeln!(f, "{} | {}", self.line, escape(&self.source_line, false))?;
        write!(f, "{:gutter$} | {:>col$}", "", "^")
    }
}

impl fmt::Display for StrategyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let all = self.all();
        for (i, e) in all.iter().enumerate() {
            if i > 0 {
                f.write_str("\n\n")?;
            }
            e.show(f, "error")?;
        }
        if all.len() > 1 {
            let file = self.file.to_string_lossy();
            write!(f, "\n\n{} errors in {}", all.len(), escape(&file, false))?;
        }
        Ok(())
    }
}

/// A strategy file's errors are bad input: leaving the front end, they
/// become [`BadInput`] with the same text. (No `std::error::Error` here, so
/// that no `?` can carry them anywhere else.)
impl From<StrategyError> for BadInput {
    fn from(e: StrategyError) -> Self {
        BadInput(e.to_string())
    }
}

/// Something in a strategy file that is allowed but almost certainly not
/// meant (a prefetch that can never run); printed, never fatal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning(pub StrategyError);

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.show(f, "warning")
    }
}

/// Characters of a long source line shown on each side of the column.
const SNIPPET: usize = 80;

/// How many UTF-8 characters begin in `bytes` (its bytes that are not
/// continuation bytes).
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

/// An error at `field` of the file `s` was read from: a check after
/// validation, by a command a valid strategy does not suit (the JIT for
/// another arch, a tree that cannot call it).
pub fn at_field_of(
    s: &crate::front::strategy::Strategy,
    field: &FieldPath,
    message: impl Into<String>,
) -> StrategyError {
    Locator::new(&s.file, &s.text).at_field(field, message)
}

/// Why `s` cannot go into a tree, located at the field that makes it so.
pub fn unfit(
    s: &crate::front::strategy::Strategy,
    e: &crate::kernel::wiring::Unfit,
) -> StrategyError {
    let field = e
        .field
        .iter()
        .fold(FieldPath::root(), |path, key| path.key(key));
    at_field_of(s, &field, e.message.clone())
}

/// Turns a byte span or a field path into a located [`StrategyError`].
/// Locating takes time logarithmic in the file and copies a bounded
/// snippet, so a file with thousands of errors on one long line costs no
/// more than its errors.
pub struct Locator<'a> {
    pub file: &'a Path,
    pub text: &'a str,
    pub doc: Option<toml::Spanned<DeTable<'a>>>,
    /// Byte offset of each line's start.
    line_starts: Vec<usize>,
    /// Characters beginning before each 4 KiB boundary of the text.
    chars_before_block: Vec<usize>,
}

impl<'a> Locator<'a> {
    pub fn new(file: &'a Path, text: &'a str) -> Self {
        let doc = DeTable::parse(text).ok();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut chars_before_block = vec![0];
        for block in text.as_bytes().chunks(4096) {
            let last = *chars_before_block.last().expect("not empty");
            chars_before_block.push(last + char_starts(block));
        }
        Locator {
            file,
            text,
            doc,
            line_starts,
            chars_before_block,
        }
    }

    /// Characters that begin before byte `at`.
    fn chars_before(&self, at: usize) -> usize {
        let block = at / 4096;
        self.chars_before_block[block] + char_starts(&self.text.as_bytes()[block * 4096..at])
    }

    /// An error at a byte span of the file.
    pub fn at_span(&self, span: Range<usize>, field: &str, message: String) -> StrategyError {
        let mut start = span.start.min(self.text.len());
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        let line = self.line_starts.partition_point(|&s| s <= start);
        let line_start = self.line_starts[line - 1];
        let line_end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&next| next - 1);
        let column = self.chars_before(start) - self.chars_before(line_start) + 1;
        // The snippet: up to SNIPPET characters either side of the column.
        let before = &self.text[line_start..start];
        let cut = before
            .char_indices()
            .rev()
            .nth(SNIPPET)
            .filter(|&(i, _)| i > 0)
            .map(|(i, _)| line_start + i);
        let after = self.text[start..line_end].trim_end_matches('\r');
        let end = after.char_indices().nth(SNIPPET).map(|(i, _)| start + i);
        let mut source_line = String::new();
        if cut.is_some() {
            source_line.push('…');
        }
        source_line
            .push_str(&self.text[cut.unwrap_or(line_start)..end.unwrap_or(start + after.len())]);
        if end.is_some() {
            source_line.push('…');
        }
        StrategyError {
            file: self.file.to_path_buf(),
            line,
            column,
            field: field.to_string(),
            message,
            source_line: source_line.into(),
            also: Box::default(),
        }
    }

    /// An error at a field; falls back to the nearest enclosing field that
    /// exists in the file (e.g. a missing key points at its table).
    pub fn at_field(&self, path: &FieldPath, message: impl Into<String>) -> StrategyError {
        let span = self.span_of(path).unwrap_or(0..0);
        self.at_span(span, &path.to_string(), message.into())
    }

    fn span_of(&self, path: &FieldPath) -> Option<Range<usize>> {
        let doc = self.doc.as_ref()?;
        let mut best = doc.span();
        let mut table: Option<&DeTable> = Some(doc.get_ref());
        let mut array: Option<&toml::de::DeArray> = None;
        for seg in &path.0 {
            let found = match seg {
                Seg::Key(k) => table
                    .and_then(|t| t.iter().find(|(key, _)| key.get_ref().as_ref() == k))
                    .map(|(key, value)| match value.get_ref() {
                        // A table or array: point at its key (its header line).
                        DeValue::Table(_) | DeValue::Array(_) => (key.span(), value),
                        _ => (value.span(), value),
                    }),
                Seg::Index(i) => array.and_then(|a| a.get(*i)).map(|v| (v.span(), v)),
            };
            // A missing field points at the nearest enclosing one that exists.
            let Some((span, value)) = found else { break };
            best = span;
            (table, array) = match value.get_ref() {
                DeValue::Table(t) => (Some(t), None),
                DeValue::Array(a) => (None, Some(a)),
                _ => (None, None),
            };
        }
        Some(best)
    }
}
