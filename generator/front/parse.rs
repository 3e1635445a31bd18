//! Strategy files: the TOML schema (`Raw*`, unknown keys rejected) and the
//! validation that turns it into [`ir::Strategy`]. Every error is located:
//! file, line, column and field.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::arch::{capabilities, scratch_registers};
use crate::front::diagnostics::{FieldPath, Locator, StrategyError, Warning};
use crate::front::strategy::*;
use crate::variants::{CpuCondition, CpuFeature, Variant};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStrategy {
    name: String,
    description: String,
    arch: String,
    directions: Option<Vec<Direction>>,
    routine: Option<RoutineShape>,
    #[serde(default)]
    fault: RawFault,
    #[serde(default)]
    linux: RawLinux,
    #[serde(default)]
    fixed_sizes: Vec<u32>,
    #[serde(default)]
    methods: BTreeMap<String, RawMethod>,
    #[serde(default)]
    dispatch: Vec<RawClass>,
    #[serde(default)]
    variants: Vec<RawVariant>,
}

/// A per-CPU variant (`[[variants]]`): a condition, method overrides, and
/// its own dispatch or the strategy's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    when: Option<Vec<String>>,
    #[serde(default)]
    default: bool,
    #[serde(default)]
    methods: BTreeMap<String, RawMethod>,
    #[serde(default)]
    dispatch: Vec<RawClass>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawFault {
    precision: Option<Precision>,
    #[serde(default)]
    zero_tail: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawLinux {
    convention: Option<Convention>,
    uaccess: Option<Uaccess>,
    extable: Option<ExtableFormat>,
    kernel: Option<KernelVersion>,
    symbol: Option<String>,
    from_user: Option<String>,
    to_user: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
enum RawKind {
    Bytes,
    HeadTail,
    Unrolled,
    RepMovs,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMethod {
    kind: RawKind,
    width: Option<u32>,
    block: Option<u32>,
    registers: Option<u32>,
    grouping: Option<Grouping>,
    prefetch: Option<RawPrefetch>,
    align: Option<RawAlign>,
    tail: Option<Tail>,
    unit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(u32),
    Many(Vec<u32>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrefetch {
    kind: PrefetchKind,
    distance: OneOrMany,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlign {
    pointer: AlignPointer,
    to: u32,
    min_size: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClass {
    sizes: String,
    #[serde(rename = "use")]
    method: String,
    #[serde(default)]
    guard: Vec<RawGuard>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGuard {
    alias: Option<Vec<u32>>,
    aligned: Option<RawAlignedCond>,
    #[serde(rename = "use")]
    method: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlignedCond {
    pointer: AlignPointer,
    to: u32,
}

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
/// or is not UTF-8 text is a [`StrategyError`] like any other bad input;
/// warnings are printed to stderr.
pub fn load(file: &Path, arch: Option<Arch>) -> anyhow::Result<Strategy> {
    let text = read_text(file)?;
    let (s, warnings) = parse_with_warnings(file, &text, arch)?;
    for w in warnings {
        eprintln!("{w}");
    }
    Ok(s)
}

/// A strategy file's text; a missing file, a folder or bytes that are not
/// UTF-8 are located errors.
pub fn read_text(file: &Path) -> Result<String, StrategyError> {
    if file.as_os_str().is_empty() {
        return Err(StrategyError::whole_file(file, "an empty file name"));
    }
    if file.is_dir() {
        return Err(StrategyError::whole_file(
            file,
            "is a folder, not a strategy file",
        ));
    }
    let bytes = std::fs::read(file)
        .map_err(|e| StrategyError::whole_file(file, format!("cannot read strategy file: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
        let loc = Locator::new(file, &lossy);
        let field = key_on_line(&lossy, at);
        loc.at_span(
            at..at,
            &field,
            format!(
                "not UTF-8 text: byte 0x{:02x} here does not begin a UTF-8 character",
                e.as_bytes()[at]
            ),
        )
    })
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
fn is_deceptive(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{2028}' | '\u{2029}')
}

/// Deserialise the schema, collecting every schema error (syntax, unknown
/// key, wrong type) rather than only the first: after each error the line it
/// points at is blanked (offsets kept) and the file read again. Only when
/// every error was an unknown key (blanking which changes nothing the
/// validator sees) is the schema returned for validation as well.
fn deserialize(loc: &Locator) -> (Option<RawStrategy>, Vec<StrategyError>) {
    let mut text = loc.text.to_string();
    let mut errors: Vec<StrategyError> = Vec::new();
    let mut blanked: Vec<String> = Vec::new();
    let mut only_unknown_keys = true;
    loop {
        let e = match toml::from_str::<RawStrategy>(&text) {
            Ok(raw) => return (only_unknown_keys.then_some(raw), errors),
            Err(e) => e,
        };
        let span = e.span().unwrap_or(0..0);
        let doc = toml::de::DeTable::parse(&text).ok();
        let mut field = match doc.as_ref() {
            Some(d) => field_at(d.get_ref(), span.start).to_string(),
            None => key_on_line(&text, span.start),
        };
        let raw_message = e.message().trim().to_string();
        if let Some(missing) = between(&raw_message, "missing field `", "`") {
            field = if field == FieldPath::root().to_string() {
                missing.to_string()
            } else {
                format!("{field}.{missing}")
            };
            // A key blanked for an earlier error is reported already.
            if blanked.contains(&field) {
                return (None, errors);
            }
        }
        only_unknown_keys &= raw_message.starts_with("unknown field");
        errors.push(loc.at_span(span.clone(), &field, humanize(&raw_message)));
        let Some(next) = blank_line(&text, span.start) else {
            return (None, errors);
        };
        if doc.is_none() || toml::de::DeTable::parse(&next).is_err() || errors.len() >= 50 {
            return (None, errors);
        }
        blanked.push(field);
        text = next;
    }
}

/// `text` with the line holding `offset` replaced by spaces (same length,
/// so every span stays valid); `None` if that line is blank already.
fn blank_line(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[start..end];
    if line.trim().is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    out.extend(std::iter::repeat_n(' ', line.len()));
    out.push_str(&text[end..]);
    Some(out)
}

/// The text between `open` and the next `close`.
fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let rest = &s[s.find(open)? + open.len()..];
    Some(&rest[..rest.find(close)?])
}

/// A serde message in the file's own terms: no Rust type names, and a
/// suggestion for a misspelt key or value.
fn humanize(message: &str) -> String {
    let listed = |s: &str| -> Vec<String> {
        s.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    for (kind, word) in [("unknown field `", "field"), ("unknown variant `", "value")] {
        if let Some(rest) = message.strip_prefix(kind) {
            let (given, rest) = rest.split_once('`').unwrap_or((rest, ""));
            let known = listed(rest);
            let mut out = format!("unknown {word} `{given}`");
            if let Some(close) = closest(given, &known) {
                out.push_str(&format!("; did you mean `{close}`?"));
            }
            if known.is_empty() {
                out.push_str(" (nothing is expected here)");
            } else {
                out.push_str(&format!(" (expected one of: {})", known.join(", ")));
            }
            return out;
        }
    }
    let mut out = message.to_string();
    for (rust, ours) in [
        ("expected u8", "expected a whole number in 0..=255"),
        ("expected u32", "expected a whole number in 0..=4294967295"),
        ("expected u64", "expected a whole number of at least 0"),
        ("expected a sequence", "expected an array"),
        ("expected a boolean", "expected true or false"),
        ("expected a map", "expected a table"),
        ("wanted string or table", "expected a string"),
        ("expected a borrowed string", "expected a string"),
        ("invalid type: sequence", "invalid type: array"),
        ("invalid type: map", "invalid type: table"),
        (
            "data did not match any variant of untagged enum OneOrMany",
            "expected a number or an array of numbers",
        ),
    ] {
        out = out.replace(rust, ours);
    }
    // `expected struct RawAlign`, `expected enum Direction`: Rust names.
    for (marker, ours) in [
        ("expected struct ", "expected a table"),
        ("expected enum ", "expected a string"),
    ] {
        if let Some(i) = out.find(marker) {
            let tail = &out[i + marker.len()..];
            let end = tail
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(tail.len());
            out = format!("{}{ours}{}", &out[..i], &tail[end..]);
        }
    }
    out
}

/// The candidate nearest to `given` by edit distance, if near enough to be
/// a misspelling.
fn closest<'a>(given: &str, candidates: &'a [String]) -> Option<&'a str> {
    let distance = |a: &str, b: &str| -> usize {
        let b: Vec<char> = b.chars().collect();
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for (i, ca) in a.chars().enumerate() {
            let mut prev = row[0];
            row[0] = i + 1;
            for (j, &cb) in b.iter().enumerate() {
                let cur = row[j + 1];
                row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
                prev = cur;
            }
        }
        row[b.len()]
    };
    candidates
        .iter()
        .map(|c| (distance(given, c), c))
        .filter(|(d, c)| *d <= (c.chars().count() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.as_str())
}

/// For a syntax error (no parsed document): the key assigned on the line of
/// `offset`, or the table header there.
fn key_on_line(text: &str, offset: usize) -> String {
    let start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("").trim();
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => key.trim().to_string(),
        _ => line.trim_matches(|c| c == '[' || c == ']').to_string(),
    }
}

/// The deepest field whose key or value span contains `offset`.
fn field_at(table: &toml::de::DeTable, offset: usize) -> FieldPath {
    fn walk(v: &toml::de::DeValue, offset: usize, path: FieldPath) -> FieldPath {
        match v {
            toml::de::DeValue::Table(t) => {
                for (k, val) in t.iter() {
                    let here = path.key(k.get_ref());
                    if k.span().contains(&offset) {
                        return here;
                    }
                    if val.span().contains(&offset)
                        || matches!(
                            val.get_ref(),
                            toml::de::DeValue::Table(_) | toml::de::DeValue::Array(_)
                        )
                    {
                        let deeper = walk(val.get_ref(), offset, here.clone());
                        if deeper != here || val.span().contains(&offset) {
                            return deeper;
                        }
                    }
                }
                path
            }
            toml::de::DeValue::Array(a) => {
                for (i, val) in a.iter().enumerate() {
                    let here = path.index(i);
                    let deeper = walk(val.get_ref(), offset, here.clone());
                    if deeper != here || val.span().contains(&offset) {
                        return deeper;
                    }
                }
                path
            }
            _ => path,
        }
    }
    walk(
        &toml::de::DeValue::Table(table.clone()),
        offset,
        FieldPath::root(),
    )
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

fn fmt_range(lo: u64, hi: Option<u64>) -> String {
    match hi {
        Some(h) => format!("{lo}..={h}"),
        None => format!("{lo}.."),
    }
}

struct Validator<'a> {
    loc: &'a Locator<'a>,
    /// Every error found so far: independent parts of the file (each
    /// method, each size class) are all checked.
    errors: RefCell<Vec<StrategyError>>,
    warnings: RefCell<Vec<Warning>>,
}

type R<T> = Result<T, StrategyError>;

/// The most scratch registers every emitted flavour allows, and why.
#[derive(Clone)]
struct Budget {
    registers: u32,
    /// What sets the limit, for the error: "the standalone flavour on
    /// i386", or the `rep_movs` convention and where it is chosen.
    reason: String,
    /// The `rep_movs` convention under 6.1's `_ASM_EXTABLE_CPY`: `rep
    /// movs{l,q}` would keep the bytes past its last whole unit in rax, the
    /// only scratch register, where the handler puts the trap number.
    no_rest_in_rax: bool,
}

/// Why `rep movs{l,q}` cannot serve the `rep_movs` convention under 6.1's
/// `_ASM_EXTABLE_CPY` (see `Budget::no_rest_in_rax`).
const REST_IN_RAX: &str = "`rep movs` of 4 or 8 bytes keeps the rest in rax under the `rep_movs` convention, and 6.1's _ASM_EXTABLE_CPY puts the trap number there: use unit 1, or `kernel = \"6.12\"` (or `linux.extable = \"relative\"`)";

/// Longest name of a strategy or a method: names become symbols, labels and
/// file names.
const MAX_NAME: usize = 64;

/// Longest description, in characters.
const MAX_DESCRIPTION: usize = 4096;

/// The largest size a class bound or `align.min_size` may name: the length
/// is compared with an immediate. x86_64 immediates are 32 bits sign-extended
/// (larger bounds would need a register the `rep_movs` convention does not
/// have); i386 and ARM lengths are 32-bit, so every length is a valid bound;
/// AArch64 builds any bound in x17, and no user copy reaches 2^63.
fn largest_bound(arch: Arch) -> u64 {
    match arch {
        Arch::X86_64 => i32::MAX as u64,
        Arch::I386 | Arch::Armv6 => u32::MAX as u64,
        Arch::Aarch64 => i64::MAX as u64,
    }
}

/// Why [`largest_bound`] is what it is, for the error.
fn bound_reason(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64 compares the length with a 32-bit sign-extended immediate",
        Arch::I386 | Arch::Armv6 => "lengths are 32-bit",
        Arch::Aarch64 => "AArch64 builds a bound in a register (movz/movk) only up to 2^63 - 1",
    }
}

/// Why `name` cannot be an identifier (a method name or part of one), if
/// it cannot: ASCII letters, digits and `_` (and `-` where `dash`), not
/// starting with a digit, at most [`MAX_NAME`] characters.
fn identifier_problem(name: &str, dash: bool) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || (dash && c == '-');
    let chars = if dash {
        "letters, digits, `-` and `_`"
    } else {
        "letters, digits and `_`"
    };
    if name.is_empty() {
        Some("a name may not be empty".into())
    } else if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        Some(format!(
            "{:?} contains {c:?}: a name uses only {chars} (it becomes symbols and labels)",
            name
        ))
    } else if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        Some(format!(
            "`{name}` does not start with a letter or `_` (it becomes symbols and labels)"
        ))
    } else if name.len() > MAX_NAME {
        Some(format!(
            "a name is at most {MAX_NAME} characters; this one has {}",
            name.len()
        ))
    } else {
        None
    }
}

impl Validator<'_> {
    fn err(&self, path: &FieldPath, msg: impl Into<String>) -> StrategyError {
        self.loc.at_field(path, msg)
    }

    /// Record `r`'s error (if any) and go on checking.
    fn keep<T>(&self, r: R<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.borrow_mut().push(e);
                None
            }
        }
    }

    fn warn(&self, path: &FieldPath, msg: impl Into<String>) {
        self.warnings
            .borrow_mut()
            .push(Warning(self.err(path, msg)));
    }

    /// Builds the strategy when every part validated; otherwise `None`,
    /// with every error found in `self.errors`.
    fn strategy(
        &self,
        mut raw: RawStrategy,
        file: &Path,
        text: &str,
        arch: Option<Arch>,
    ) -> Option<Strategy> {
        let root = FieldPath::root();
        let name_ok = self
            .keep(match identifier_problem(&raw.name, true) {
                None => Ok(()),
                Some(why) => Err(self.err(&root.key("name"), why)),
            })
            .is_some();
        let description = self.keep(self.description(&raw.description));
        let arch = self.keep(arch.or_else(|| Arch::parse(&raw.arch)).ok_or_else(|| {
            self.err(
                &root.key("arch"),
                format!(
                    "unknown architecture `{}`; copygen targets i386, x86_64, armv6 and aarch64",
                    raw.arch
                ),
            )
        }))?;
        let caps = capabilities(arch);

        let directions_given = raw.directions.is_some();
        let directions = self.keep(match raw.directions.take() {
            None => Ok(vec![Direction::FromUser, Direction::ToUser]),
            Some(d) => {
                let path = root.key("directions");
                let set: BTreeSet<_> = d.iter().collect();
                if d.is_empty() {
                    Err(self.err(&path, "at least one direction is needed"))
                } else if set.len() != d.len() {
                    Err(self.err(&path, "a direction is listed twice"))
                } else {
                    let mut d = d;
                    d.sort();
                    Ok(d)
                }
            }
        });

        let fault = root.key("fault");
        let precision = raw.fault.precision.unwrap_or(Precision::Exact);
        if raw.fault.zero_tail
            && directions
                .as_ref()
                .is_some_and(|d| !d.contains(&Direction::FromUser))
        {
            self.keep::<()>(Err(self.err(
                &fault.key("zero_tail"),
                "zero_tail zeroes the kernel buffer of from_user, which this strategy does not emit",
            )));
        }

        let routine = raw.routine.unwrap_or(RoutineShape::PerDirection);
        if routine == RoutineShape::Both {
            if directions_given {
                self.keep::<()>(Err(self.err(
                    &root.key("directions"),
                    "a routine serving both directions (`routine = \"both\"`) has no directions to pick",
                )));
            }
            if raw.fault.zero_tail {
                self.keep::<()>(Err(self.err(
                    &fault.key("zero_tail"),
                    "zero_tail is a from_user behaviour; a routine serving both directions cannot zero the kernel side",
                )));
            }
            if !raw.fixed_sizes.is_empty() {
                self.keep::<()>(Err(self.err(
                    &root.key("fixed_sizes"),
                    "constant-size entry points are per direction; `routine = \"both\"` has none",
                )));
            }
        }

        // With the directions in error, judge the names against both
        // (that error is reported already).
        let both = [Direction::FromUser, Direction::ToUser];
        let linux = self.keep(self.linux(
            arch,
            routine,
            directions.as_deref().unwrap_or(&both),
            std::mem::take(&mut raw.linux),
        ));

        let mut fixed = raw.fixed_sizes.clone();
        for (i, &n) in raw.fixed_sizes.iter().enumerate() {
            if n == 0 || n > 64 {
                self.keep::<()>(Err(self.err(
                    &root.key("fixed_sizes").index(i),
                    format!("fixed size {n} is outside 1..=64"),
                )));
            }
        }
        fixed.sort_unstable();
        fixed.dedup();
        if fixed.len() != raw.fixed_sizes.len() {
            self.keep::<()>(Err(
                self.err(&root.key("fixed_sizes"), "a fixed size is listed twice")
            ));
        }

        let budget = self.budget(arch, linux.as_ref());
        let mut methods = BTreeMap::new();
        // Methods that failed: classes using them are not blamed again.
        let mut broken = BTreeSet::new();
        for (name, m) in &raw.methods {
            let path = root.key("methods").key(name);
            if let Some(why) = identifier_problem(name, false) {
                self.keep::<()>(Err(self.err(&path, format!("method name: {why}"))));
                broken.insert(name.clone());
                continue;
            }
            match self.keep(self.method(arch, caps, &budget, &path, m)) {
                Some(kind) => {
                    methods.insert(
                        name.clone(),
                        Method {
                            name: name.clone(),
                            kind,
                        },
                    );
                }
                None => {
                    broken.insert(name.clone());
                }
            }
        }

        let root_dispatch = root.key("dispatch");
        let (classes, variants) = if raw.variants.is_empty() {
            let classes = self.dispatch(arch, &root_dispatch, &raw.dispatch, &methods, &broken);
            (classes, Some(Vec::new()))
        } else {
            match self.keep(self.variants(arch, caps, &budget, &raw, &methods, &broken)) {
                Some(Some(variants)) => {
                    let default = variants.last().expect("validated non-empty");
                    (Some(default.classes.clone()), Some(variants))
                }
                _ => (None, None),
            }
        };
        if !self.errors.borrow().is_empty() || !name_ok {
            return None;
        }
        Some(Strategy {
            symbol: symbol_of(&raw.name),
            name: raw.name,
            description: description?,
            arch,
            directions: directions?,
            routine,
            precision,
            zero_tail: raw.fault.zero_tail,
            linux: linux?,
            classes: classes?,
            variants: variants?,
            fixed_sizes: fixed,
            source: recorded_path(file),
            text: text.to_string(),
        })
    }

    /// The description is restated in a comment of every generated file:
    /// printable text only (the renderer escapes what could end the comment).
    fn description(&self, text: &str) -> R<String> {
        let path = FieldPath::root().key("description");
        if let Some(c) = text
            .chars()
            .find(|&c| (c.is_control() && c != '\n' && c != '\t') || is_deceptive(c))
        {
            return Err(self.err(
                &path,
                format!(
                    "the description contains character U+{:04X}; it is restated in the generated file, which takes printable text, tabs and newlines only",
                    c as u32
                ),
            ));
        }
        if text.chars().count() > MAX_DESCRIPTION {
            return Err(self.err(
                &path,
                format!("a description is at most {MAX_DESCRIPTION} characters"),
            ));
        }
        Ok(text.trim().replace('\t', "    "))
    }

    /// Scratch registers: the fewest any emitted flavour allows.
    fn budget(&self, arch: Arch, linux: Option<&LinuxOptions>) -> Budget {
        let convention = linux.map_or(Convention::C, |l| l.convention);
        let (registers, flavor) = Flavor::ALL
            .iter()
            .map(|&f| (scratch_registers(arch, f, convention), f))
            .min()
            .expect("flavours");
        let reason = if flavor == Flavor::Linux && convention == Convention::RepMovs {
            let at = self.err(&FieldPath::root().key("linux").key("convention"), "");
            format!(
                "the `rep_movs` convention (`linux.convention`, line {}) lets a routine clobber only {registers} scratch register(s) (rax)",
                at.line
            )
        } else {
            format!("the {flavor} flavour on {arch} lets a routine clobber only {registers} scratch register(s)")
        };
        let no_rest_in_rax = linux.is_some_and(|l| {
            l.convention == Convention::RepMovs && l.extable == ExtableFormat::Copy
        });
        Budget {
            registers,
            reason,
            no_rest_in_rax,
        }
    }

    fn linux(
        &self,
        arch: Arch,
        routine: RoutineShape,
        directions: &[Direction],
        raw: RawLinux,
    ) -> R<LinuxOptions> {
        let path = FieldPath::root().key("linux");
        if raw.convention.is_some() && arch != Arch::X86_64 {
            return Err(self.err(
                &path.key("convention"),
                format!("only x86_64 offers a choice of convention; {arch} has one"),
            ));
        }
        if raw.uaccess.is_some() && matches!(arch, Arch::Armv6 | Arch::Aarch64) {
            return Err(self.err(
                &path.key("uaccess"),
                format!("STAC/CLAC bracketing is an x86 option; {arch} has no SMAP"),
            ));
        }
        if raw.extable == Some(ExtableFormat::Absolute) && arch != Arch::I386 {
            return Err(self.err(
                &path.key("extable"),
                "the absolute 2002 table format exists for i386 only",
            ));
        }
        if raw.extable == Some(ExtableFormat::Copy) {
            if arch != Arch::X86_64 {
                return Err(self.err(
                    &path.key("extable"),
                    "_ASM_EXTABLE_CPY exists on x86_64 only",
                ));
            }
            if raw.kernel == Some(KernelVersion::V6_12) {
                return Err(self.err(
                    &path.key("extable"),
                    "_ASM_EXTABLE_CPY is 6.1's (6.4 removed it): 6.12's copy routines use _ASM_EXTABLE_UA (`extable = \"relative\"`)",
                ));
            }
        }
        // Names: C identifiers, one per routine the strategy has.
        let mut names: Vec<(&str, &Option<String>)> = vec![("symbol", &raw.symbol)];
        names.push(("from_user", &raw.from_user));
        names.push(("to_user", &raw.to_user));
        for (key, name) in &names {
            let Some(name) = name else { continue };
            if !is_c_identifier(name) {
                return Err(self.err(
                    &path.key(key),
                    format!("`{name}` is not a symbol name (letters, digits and `_`, not starting with a digit)"),
                ));
            }
            let wanted = match *key {
                "symbol" => routine == RoutineShape::Both,
                "from_user" => {
                    routine == RoutineShape::PerDirection
                        && directions.contains(&Direction::FromUser)
                }
                _ => {
                    routine == RoutineShape::PerDirection && directions.contains(&Direction::ToUser)
                }
            };
            if !wanted {
                let why = if *key == "symbol" {
                    "`symbol` names a routine serving both directions (`routine = \"both\"`); per direction, use from_user / to_user"
                        .to_string()
                } else if routine == RoutineShape::Both {
                    format!(
                        "a routine serving both directions has one name: use `symbol`, not `{key}`"
                    )
                } else {
                    format!("the strategy emits no {key} routine")
                };
                return Err(self.err(&path.key(key), why));
            }
        }
        if raw.from_user.is_some() && raw.from_user == raw.to_user {
            return Err(self.err(
                &path.key("to_user"),
                "from_user and to_user need different names (one routine for both is `routine = \"both\"` with `symbol`)",
            ));
        }
        Ok(LinuxOptions {
            convention: raw.convention.unwrap_or(Convention::C),
            uaccess: raw.uaccess.unwrap_or(Uaccess::Caller),
            // x86_64 copy routines use the macro their tree does: 6.1's
            // _ASM_EXTABLE_CPY (a file for both kernels picks it by version),
            // 6.12's _ASM_EXTABLE_UA.
            extable: raw.extable.unwrap_or(
                if arch == Arch::X86_64 && raw.kernel != Some(KernelVersion::V6_12) {
                    ExtableFormat::Copy
                } else {
                    ExtableFormat::Relative
                },
            ),
            kernel: raw.kernel,
            from_user: raw.from_user,
            to_user: raw.to_user,
            both: raw.symbol,
        })
    }

    fn check_width(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        path: &FieldPath,
        w: u32,
    ) -> R<()> {
        if caps.widths.contains(&w) {
            Ok(())
        } else {
            Err(self.err(
                path,
                format!(
                    "width {w} is not a register width of {arch} (it has {:?})",
                    caps.widths
                ),
            ))
        }
    }

    /// 1-byte accesses need registers with a byte form.
    fn check_byte_registers(
        &self,
        caps: &crate::arch::Capabilities,
        path: &FieldPath,
        width: u32,
        n: u32,
        arch: Arch,
    ) -> R<()> {
        if width == 1 && n > caps.byte_registers {
            return Err(self.err(
                path,
                format!("{n} registers for 1-byte accesses, but only {} of {arch}'s scratch registers have a byte form", caps.byte_registers),
            ));
        }
        Ok(())
    }

    /// `n` registers of `width` bytes fit the scratch budget (a
    /// register-pair width takes two each).
    fn check_registers(
        &self,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        width: u32,
        n: u32,
    ) -> R<()> {
        if n == 0 {
            return Err(self.err(path, "at least one register is needed"));
        }
        let needed = caps.registers_needed(width, n);
        if needed > budget.registers {
            let pairs = if needed > n {
                format!(" ({width}-byte registers are pairs: {needed} scratch registers)")
            } else {
                String::new()
            };
            return Err(self.err(path, format!("{n} registers{pairs}, but {}", budget.reason)));
        }
        Ok(())
    }

    fn method(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        m: &RawMethod,
    ) -> R<MethodKind> {
        let used: &[&str] = match m.kind {
            RawKind::Bytes => &[],
            RawKind::HeadTail => &["width", "registers"],
            RawKind::Unrolled => &[
                "width",
                "block",
                "registers",
                "grouping",
                "prefetch",
                "align",
                "tail",
            ],
            RawKind::RepMovs => &["unit", "align"],
        };
        let present = [
            ("width", m.width.is_some()),
            ("block", m.block.is_some()),
            ("registers", m.registers.is_some()),
            ("grouping", m.grouping.is_some()),
            ("prefetch", m.prefetch.is_some()),
            ("align", m.align.is_some()),
            ("tail", m.tail.is_some()),
            ("unit", m.unit.is_some()),
        ];
        for (field, is_set) in present {
            if is_set && !used.contains(&field) {
                return Err(self.err(
                    &path.key(field),
                    format!(
                        "`{field}` means nothing to a method of kind `{}`",
                        toml_name(&m.kind)
                    ),
                ));
            }
        }
        let max_width = *caps.widths.iter().max().expect("widths");
        match m.kind {
            RawKind::Bytes => Ok(MethodKind::Bytes),
            RawKind::HeadTail => {
                let width = m.width.unwrap_or(max_width);
                self.check_width(arch, caps, &path.key("width"), width)?;
                let registers = m.registers.unwrap_or(2.min(budget.registers));
                self.check_registers(caps, budget, &path.key("registers"), width, registers)?;
                self.check_byte_registers(caps, &path.key("registers"), width, registers, arch)?;
                Ok(MethodKind::HeadTail { width, registers })
            }
            RawKind::RepMovs => {
                if !caps.rep_strings {
                    return Err(self.err(&path.key("kind"), format!("{arch} has no `rep movs`")));
                }
                let unit = m.unit.unwrap_or(1);
                if !matches!(unit, 1 | 4 | 8) || !caps.widths.contains(&unit) {
                    return Err(self.err(
                        &path.key("unit"),
                        format!(
                            "`rep movs` on {arch} moves units of 1, 4{} bytes, not {unit}",
                            if arch == Arch::X86_64 { " or 8" } else { "" }
                        ),
                    ));
                }
                if unit > 1 && budget.no_rest_in_rax {
                    return Err(self.err(&path.key("unit"), REST_IN_RAX));
                }
                let align = self.align(arch, &path.key("align"), m.align.as_ref())?;
                Ok(MethodKind::RepMovs { unit, align })
            }
            RawKind::Unrolled => self
                .unrolled(arch, caps, budget, path, m)
                .map(MethodKind::Unrolled),
        }
    }

    fn unrolled(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        m: &RawMethod,
    ) -> R<Unrolled> {
        let width = m.width.ok_or_else(|| {
            self.err(
                path,
                "an unrolled method needs `width` (register width in bytes)",
            )
        })?;
        self.check_width(arch, caps, &path.key("width"), width)?;
        let block = m.block.ok_or_else(|| {
            self.err(
                path,
                "an unrolled method needs `block` (bytes per iteration)",
            )
        })?;
        if block == 0 || block % width != 0 {
            return Err(self.err(
                &path.key("block"),
                format!("block {block} is not a positive multiple of the width {width}"),
            ));
        }
        if block > 1024 {
            return Err(self.err(
                &path.key("block"),
                format!("block {block} exceeds 1024 bytes of unrolling"),
            ));
        }
        let grouping = m.grouping.unwrap_or(Grouping::LoadsFirst);
        if !caps.groupings.contains(&grouping) {
            return Err(self.err(
                &path.key("grouping"),
                format!("grouping `{grouping}` does not exist on {arch}"),
            ));
        }
        let registers = m.registers.unwrap_or(1);
        self.check_registers(caps, budget, &path.key("registers"), width, registers)?;
        self.check_byte_registers(caps, &path.key("registers"), width, registers, arch)?;
        let words = block / width;
        if words % registers != 0 {
            return Err(self.err(
                &path.key("registers"),
                format!(
                    "{registers} registers do not divide the {words} words of a {block}-byte block"
                ),
            ));
        }
        if grouping == Grouping::Multiple {
            if width != 4 {
                return Err(self.err(
                    &path.key("width"),
                    "ldm/stm move 4-byte words: width must be 4",
                ));
            }
            if registers > caps.max_multiple || registers < 2 {
                return Err(self.err(
                    &path.key("registers"),
                    format!("an ldm/stm group takes 2..={} registers", caps.max_multiple),
                ));
            }
        }
        let prefetch = match &m.prefetch {
            None => None,
            Some(p) => {
                let pp = path.key("prefetch");
                if !caps.prefetch.contains(&p.kind) {
                    return Err(self.err(
                        &pp.key("kind"),
                        format!("prefetch `{}` does not exist on {arch}", p.kind),
                    ));
                }
                let distances = match &p.distance {
                    OneOrMany::One(d) => vec![*d],
                    OneOrMany::Many(d) => d.clone(),
                };
                if distances.is_empty() || distances.iter().any(|&d| d == 0 || d > 4096) {
                    return Err(self.err(
                        &pp.key("distance"),
                        "prefetch distances lie in 1..=4096 bytes",
                    ));
                }
                if p.kind == PrefetchKind::Touch && distances.iter().any(|d| d % width != 0) {
                    return Err(self.err(
                        &pp.key("distance"),
                        format!("a touch load reads {width} bytes: its distance must be a multiple of the width"),
                    ));
                }
                Some(Prefetch {
                    kind: p.kind,
                    distances,
                })
            }
        };
        let align = self.align(arch, &path.key("align"), m.align.as_ref())?;
        let tail = m.tail.unwrap_or(Tail::Bytes);
        if tail == Tail::RepMovs && budget.no_rest_in_rax {
            return Err(self.err(&path.key("tail"), REST_IN_RAX));
        }
        if tail == Tail::RepMovs && !matches!(width, 4 | 8) {
            return Err(self.err(
                &path.key("tail"),
                format!("a `rep_movs` tail moves units of the loop width, which must be 4 or 8, not {width}"),
            ));
        }
        if !caps.tails.contains(&tail) {
            return Err(self.err(
                &path.key("tail"),
                format!("tail `{tail}` does not exist on {arch}"),
            ));
        }
        Ok(Unrolled {
            block,
            width,
            registers,
            grouping,
            prefetch,
            align,
            tail,
        })
    }

    fn align(&self, arch: Arch, ap: &FieldPath, a: Option<&RawAlign>) -> R<Option<Align>> {
        let Some(a) = a else { return Ok(None) };
        if a.pointer == AlignPointer::Congruent {
            return Err(self.err(
                &ap.key("pointer"),
                "an alignment prologue aligns `dst`, `src` or `both`; `congruent` is a guard condition",
            ));
        }
        if !a.to.is_power_of_two() || a.to < 2 || a.to > 64 {
            return Err(self.err(
                &ap.key("to"),
                format!("alignment {} is not a power of two in 2..=64", a.to),
            ));
        }
        if a.min_size < a.to as u64 {
            return Err(self.err(
                &ap.key("min_size"),
                format!(
                    "min_size {} is below the alignment {}: the prologue could run past the end",
                    a.min_size, a.to
                ),
            ));
        }
        if a.min_size > largest_bound(arch) {
            return Err(self.err(
                &ap.key("min_size"),
                format!(
                    "min_size {} is too large: {}, so it is at most {}",
                    a.min_size,
                    bound_reason(arch),
                    largest_bound(arch)
                ),
            ));
        }
        Ok(Some(Align {
            pointer: a.pointer,
            to: a.to,
            min_size: a.min_size,
        }))
    }

    /// The size classes; `None` (with the errors recorded) if any is wrong.
    /// Every class is checked: after a class whose sizes are wrong, the
    /// next one is not blamed for a gap or an overlap with it.
    fn dispatch(
        &self,
        arch: Arch,
        dpath: &FieldPath,
        raw: &[RawClass],
        methods: &BTreeMap<String, Method>,
        broken: &BTreeSet<String>,
    ) -> Option<Vec<SizeClass>> {
        if raw.is_empty() {
            self.keep::<()>(Err(
                self.err(dpath, "dispatch needs at least one size class")
            ));
            return None;
        }
        let errors_before = self.errors.borrow().len();
        // `Ok(None)`: a method whose own error is reported already.
        let lookup = |path: &FieldPath, name: &str| -> R<Option<Method>> {
            if broken.contains(name) {
                return Ok(None);
            }
            methods.get(name).cloned().map(Some).ok_or_else(|| {
                let known: Vec<_> = methods.keys().map(String::as_str).collect();
                self.err(
                    path,
                    format!(
                        "no method named `{name}` (defined: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })
        };
        let mut classes: Vec<SizeClass> = Vec::new();
        // The size the next class must start at, when known.
        let mut expected: Option<u64> = Some(0);
        // An earlier class open at the top (index, lower bound).
        let mut open: Option<(usize, u64)> = None;
        // The last class's upper bound, if its sizes parsed.
        let mut last_hi: Option<Option<u64>> = None;
        for (i, c) in raw.iter().enumerate() {
            let cpath = dpath.index(i);
            let spath = cpath.key("sizes");
            last_hi = None;
            let Some((lo, hi)) = self.keep(self.class_sizes(arch, &spath, &c.sizes)) else {
                expected = None;
                continue;
            };
            last_hi = Some(hi);
            if let Some((j, from)) = open {
                self.keep::<()>(Err(self.err(
                    &spath,
                    format!("class {j} already covers every size from {from}: this one can never be reached"),
                )));
                continue;
            }
            match expected {
                Some(e) if lo > e => {
                    self.keep::<()>(Err(self.err(
                        &spath,
                        format!(
                            "gap: sizes {} are covered by no class",
                            fmt_range(e, Some(lo - 1))
                        ),
                    )));
                }
                Some(e) if lo < e => {
                    self.keep::<()>(Err(self.err(
                        &spath,
                        format!(
                            "overlap: sizes {} are already covered by class {}",
                            fmt_range(lo, Some((e - 1).min(hi.unwrap_or(u64::MAX)))),
                            i - 1
                        ),
                    )));
                }
                _ => {}
            }
            // Bounds are at most `largest_bound`, so `h + 1` cannot wrap.
            expected = hi.map(|h| h + 1);
            if hi.is_none() {
                open = Some((i, lo));
            }
            let method = self.keep(lookup(&cpath.key("use"), &c.method)).flatten();
            if let Some(m) = &method {
                self.keep(self.method_fits(m, lo, hi, None, &cpath.key("use")));
            }
            let mut guards = Vec::new();
            for (g, rg) in c.guard.iter().enumerate() {
                let gpath = cpath.key("guard").index(g);
                let condition = self.keep(self.condition(&gpath, rg));
                let gm = self.keep(lookup(&gpath.key("use"), &rg.method)).flatten();
                if let (Some(condition), Some(gm)) = (condition, gm) {
                    if self
                        .keep(self.method_fits(&gm, lo, hi, Some(&condition), &gpath.key("use")))
                        .is_some()
                    {
                        guards.push(Guard {
                            condition,
                            method: gm,
                        });
                    }
                }
            }
            if let Some(method) = method {
                classes.push(SizeClass {
                    lo,
                    hi,
                    guards,
                    method,
                });
            }
        }
        if let Some(Some(h)) = last_hi {
            let lo = classes.last().map_or(0, |c| c.lo);
            self.keep::<()>(Err(self.err(
                &dpath.index(raw.len() - 1).key("sizes"),
                format!("sizes from {} up are covered by no class: the last class must be open (`{lo}..`)", h + 1),
            )));
        }
        if self.errors.borrow().len() != errors_before {
            return None;
        }
        self.prefetch_warnings(&classes, methods);
        Some(classes)
    }

    /// A class's `sizes`, within what `arch` can compare.
    fn class_sizes(&self, arch: Arch, path: &FieldPath, sizes: &str) -> R<(u64, Option<u64>)> {
        let (lo, hi) = parse_range(sizes).ok_or_else(|| {
            self.err(
                path,
                format!("`{sizes}` is not a size range (`0..=64`, `65..4096`, `4096..`)"),
            )
        })?;
        let limit = largest_bound(arch);
        if let Some(h) = hi.filter(|&h| h > limit) {
            return Err(self.err(
                path,
                format!(
                    "size bound {h} is too large: {}, so a bound is at most {limit}",
                    bound_reason(arch)
                ),
            ));
        }
        // On a 32-bit arch no length exceeds the largest bound.
        if arch != Arch::X86_64 && lo > limit {
            return Err(self.err(
                path,
                format!("no {arch} length reaches {lo}: lengths are 32-bit"),
            ));
        }
        Ok((lo, hi))
    }

    fn condition(&self, gpath: &FieldPath, rg: &RawGuard) -> R<Condition> {
        match (&rg.alias, &rg.aligned) {
            (Some(band), None) => match band[..] {
                [a, b] if a <= b && b < 4096 => Ok(Condition::Alias { lo: a, hi: b }),
                _ => Err(self.err(
                    &gpath.key("alias"),
                    "an alias band is two numbers [lo, hi] with lo <= hi < 4096",
                )),
            },
            (None, Some(al)) => {
                if !al.to.is_power_of_two() || al.to < 2 || al.to > 4096 {
                    return Err(self.err(
                        &gpath.key("aligned").key("to"),
                        "alignment is a power of two in 2..=4096",
                    ));
                }
                Ok(Condition::Aligned {
                    pointer: al.pointer,
                    to: al.to,
                })
            }
            (Some(_), Some(_)) => Err(self.err(
                gpath,
                "a guard tests one condition: `alias` or `aligned`, not both",
            )),
            (None, None) => Err(self.err(
                gpath,
                "a guard needs a condition: `alias = [lo, hi]` or `aligned = {...}`",
            )),
        }
    }

    /// A prefetch runs inside the loop only while its target lies inside
    /// the source; one whose distance reaches past every size its method
    /// serves is dropped by the lowering, which is worth a word.
    fn prefetch_warnings(&self, classes: &[SizeClass], methods: &BTreeMap<String, Method>) {
        // Largest size each method serves (`None`: unbounded).
        let mut serves: BTreeMap<&str, Option<u64>> = BTreeMap::new();
        for c in classes {
            let uses = std::iter::once(&c.method).chain(c.guards.iter().map(|g| &g.method));
            for m in uses {
                let most = serves.entry(&m.name).or_insert(Some(0));
                *most = most.zip(c.hi).map(|(a, b)| a.max(b));
            }
        }
        for (name, most) in serves {
            let Some(most) = most else { continue };
            let Some(MethodKind::Unrolled(u)) = methods.get(name).map(|m| &m.kind) else {
                continue;
            };
            let Some(p) = &u.prefetch else { continue };
            let size = if p.kind == PrefetchKind::Touch {
                u.width
            } else {
                1
            };
            for &d in &p.distances {
                let needs = (d + size).max(u.block) as u64;
                if most < needs {
                    self.warn(
                        &FieldPath::root()
                            .key("methods")
                            .key(name)
                            .key("prefetch")
                            .key("distance"),
                        format!(
                            "the prefetch at +{d} can never run: it needs at least {needs} bytes left in the loop, but method `{name}` serves at most {most} bytes"
                        ),
                    );
                }
            }
        }
    }

    /// Checks that depend on the sizes a method serves and the guard (if
    /// any) under which it runs.
    fn method_fits(
        &self,
        m: &Method,
        lo: u64,
        hi: Option<u64>,
        guard: Option<&Condition>,
        path: &FieldPath,
    ) -> R<()> {
        if let MethodKind::Unrolled(u) = &m.kind {
            if u.grouping == Grouping::Multiple {
                self.multiple_fits(m, u, lo, guard, path)?;
            }
        }
        match &m.kind {
            MethodKind::HeadTail { .. } => match hi {
                Some(h) if h <= 256 => Ok(()),
                _ => Err(self.err(
                    path,
                    format!("head_tail method `{}` serves small sizes only (at most 256), not {}", m.name, fmt_range(lo, hi)),
                )),
            },
            MethodKind::Unrolled(u) if u.tail == Tail::Overlap && lo < u.width as u64 => Err(self.err(
                path,
                format!(
                    "method `{}` ends with an overlapping {}-byte copy, which needs at least {} bytes, but this class starts at {lo}",
                    m.name, u.width, u.width
                ),
            )),
            _ => Ok(()),
        }
    }

    /// `ldm`/`stm` fault on addresses that are not word-aligned (SIGBUS in
    /// user space, the slow alignment trap in the kernel), so a method that
    /// uses them must have both pointers 4-byte aligned when its loop runs:
    /// either the guard says both are aligned, or the guard says they are
    /// congruent and the method's prologue aligns one of them (for every
    /// length that reaches the loop).
    fn multiple_fits(
        &self,
        m: &Method,
        u: &Unrolled,
        lo: u64,
        guard: Option<&Condition>,
        path: &FieldPath,
    ) -> R<()> {
        let name = &m.name;
        let congruent = match guard {
            Some(Condition::Aligned { pointer: AlignPointer::Both, to }) if *to >= 4 => return Ok(()),
            Some(Condition::Aligned { pointer: AlignPointer::Congruent, to }) if *to >= 4 => *to,
            _ => {
                return Err(self.err(
                    path,
                    format!(
                        "method `{name}` uses ldm/stm, which need word-aligned pointers: use it only under a guard \
                         `aligned = {{ pointer = \"congruent\", to = 4 }}` (with an align prologue) or `{{ pointer = \"both\", to = 4 }}`"
                    ),
                ))
            }
        };
        let Some(a) = u.align else {
            return Err(self.err(
                path,
                format!("method `{name}` uses ldm/stm under a congruence guard but has no `align` prologue to make the pointers word-aligned"),
            ));
        };
        if a.to < 4 || (a.pointer == AlignPointer::Both && a.to > congruent) {
            return Err(self.err(
                path,
                format!(
                    "method `{name}` aligns {} to {} bytes, which does not make both pointers word-aligned under a guard of congruence modulo {congruent}",
                    a.pointer, a.to
                ),
            ));
        }
        if a.min_size > u.block as u64 && lo < a.min_size {
            return Err(self.err(
                path,
                format!(
                    "method `{name}` skips its align prologue below {} bytes but runs its ldm/stm loop from {}: lengths {}..{} would reach ldm/stm unaligned (lower min_size to at most the block)",
                    a.min_size, u.block, (u.block as u64).max(lo), a.min_size
                ),
            ));
        }
        Ok(())
    }
}

/// Per-CPU variants (`crate::variants`): names, conditions, one default
/// (the last), each variant's methods (the strategy's, overridden by name)
/// and dispatch (its own, or the strategy's).
impl Validator<'_> {
    /// The variants; `Ok(None)` when a dispatch of one failed (its errors
    /// are recorded).
    fn variants(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        raw: &RawStrategy,
        shared: &BTreeMap<String, Method>,
        broken: &BTreeSet<String>,
    ) -> R<Option<Vec<Variant>>> {
        let vpath = FieldPath::root().key("variants");
        if matches!(arch, Arch::Armv6 | Arch::Aarch64) {
            return Err(self.err(
                &vpath,
                format!(
                    "per-CPU variants are chosen by x86 feature bits (ALTERNATIVE, CPUID); {arch} has none"
                ),
            ));
        }
        if !raw.fixed_sizes.is_empty() {
            return Err(self.err(
                &FieldPath::root().key("fixed_sizes"),
                "constant-size entry points and per-CPU variants do not combine: each variant would need its own",
            ));
        }
        if !raw.dispatch.is_empty() && raw.variants.iter().all(|v| !v.dispatch.is_empty()) {
            return Err(self.err(
                &FieldPath::root().key("dispatch"),
                "every variant has its own dispatch, so this one is never used",
            ));
        }
        let mut names = BTreeSet::new();
        let mut out = Vec::new();
        let last = raw.variants.len() - 1;
        for (i, v) in raw.variants.iter().enumerate() {
            let path = vpath.index(i);
            if v.name.is_empty()
                || !v
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(self.err(
                    &path.key("name"),
                    "a variant name is non-empty and uses only letters, digits and `_` (it is part of symbols)",
                ));
            }
            if !names.insert(v.name.as_str()) {
                return Err(self.err(
                    &path.key("name"),
                    format!("two variants are named `{}`", v.name),
                ));
            }
            let when = match (&v.when, v.default) {
                (Some(_), true) => {
                    return Err(self.err(
                        &path.key("default"),
                        "the default variant runs when no other matches: it has no `when`",
                    ))
                }
                (None, false) => {
                    return Err(self.err(
                        &path,
                        "a variant needs a condition (`when = [\"fsrm\"]`) or `default = true`",
                    ))
                }
                (None, true) if i != last => {
                    return Err(self.err(
                        &path.key("default"),
                        "the default variant must come last: the variants after it could never be chosen",
                    ))
                }
                (None, true) => None,
                (Some(words), false) => Some(self.cpu_condition(&path.key("when"), words)?),
            };
            if i == last && when.is_some() {
                return Err(self.err(
                    &path.key("when"),
                    "the last variant must be the default (`default = true`): some CPU must match",
                ));
            }
            let mut methods = shared.clone();
            for (name, m) in &v.methods {
                let mpath = path.key("methods").key(name);
                if let Some(why) = identifier_problem(name, false) {
                    return Err(self.err(&mpath, format!("method name: {why}")));
                }
                let kind = self.method(arch, caps, budget, &mpath, m)?;
                methods.insert(
                    name.clone(),
                    Method {
                        name: name.clone(),
                        kind,
                    },
                );
            }
            let classes = if v.dispatch.is_empty() {
                if raw.dispatch.is_empty() {
                    return Err(self.err(
                        &path,
                        "this variant has no `dispatch`, and the strategy has none to share",
                    ));
                }
                self.dispatch(
                    arch,
                    &FieldPath::root().key("dispatch"),
                    &raw.dispatch,
                    &methods,
                    broken,
                )
            } else {
                self.dispatch(arch, &path.key("dispatch"), &v.dispatch, &methods, broken)
            };
            let Some(classes) = classes else {
                return Ok(None);
            };
            out.push(Variant {
                name: v.name.clone(),
                when,
                classes,
            });
        }
        Ok(Some(out))
    }

    /// `["zen", "erms", "!fsrm"]`: every feature listed present, every `!`
    /// one absent.
    fn cpu_condition(&self, path: &FieldPath, words: &[String]) -> R<CpuCondition> {
        if words.is_empty() {
            return Err(self.err(
                path,
                "an empty condition always holds: write `default = true` instead",
            ));
        }
        let mut cond = CpuCondition {
            require: Vec::new(),
            exclude: Vec::new(),
        };
        for (i, w) in words.iter().enumerate() {
            let (negated, name) = match w.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, w.as_str()),
            };
            let f = CpuFeature::parse(name).ok_or_else(|| {
                self.err(
                    &path.index(i),
                    format!(
                        "unknown CPU feature `{name}` (known: {})",
                        CpuFeature::names().join(", ")
                    ),
                )
            })?;
            if cond.require.contains(&f) || cond.exclude.contains(&f) {
                return Err(self.err(
                    &path.index(i),
                    format!("`{name}` is named twice in this condition"),
                ));
            }
            if negated {
                cond.exclude.push(f)
            } else {
                cond.require.push(f)
            }
        }
        Ok(cond)
    }
}
