//! The strategy file's TOML schema (`Raw*`: unknown keys rejected, every
//! field typed) and reading a file into it with every schema error
//! located and in the file's own terms.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::front::diagnostics::{FieldPath, Locator, StrategyError};
use crate::front::strategy::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStrategy {
    pub(super) name: String,
    pub(super) description: String,
    pub(super) arch: String,
    pub(super) directions: Option<Vec<Direction>>,
    pub(super) routine: Option<RoutineShape>,
    #[serde(default)]
    pub(super) fault: RawFault,
    #[serde(default)]
    pub(super) linux: RawLinux,
    #[serde(default)]
    pub(super) fixed_sizes: Vec<u32>,
    #[serde(default)]
    pub(super) methods: BTreeMap<String, RawMethod>,
    #[serde(default)]
    pub(super) dispatch: Vec<RawClass>,
    pub(super) alias_first: Option<RawAliasFirst>,
    #[serde(default)]
    pub(super) variants: Vec<RawVariant>,
    pub(super) tuned_on: Option<RawTunedOn>,
}

/// `[tuned_on]`: the CPU `copygen tune` measured (see
/// [`crate::front::variant::TunedOn`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTunedOn {
    pub(super) vendor: String,
    pub(super) family: u32,
    pub(super) model: u32,
    #[serde(default)]
    pub(super) features: Vec<String>,
}

/// A per-CPU variant (`[[variants]]`): a condition, method overrides, and
/// its own dispatch or the strategy's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVariant {
    pub(super) name: String,
    pub(super) when: Option<Vec<RawTerm>>,
    #[serde(default)]
    pub(super) default: bool,
    #[serde(default)]
    pub(super) methods: BTreeMap<String, RawMethod>,
    #[serde(default)]
    pub(super) dispatch: Vec<RawClass>,
    pub(super) alias_first: Option<RawAliasFirst>,
}

/// One entry of a variant's `when`: a feature (`"erms"`, `"!fsrm"`), when
/// the `when` is one conjunction, or a conjunction (`["zen3", "erms"]`),
/// when it is several, any of which holds. That a `when` keeps to one
/// form the validator checks.
pub(super) enum RawTerm {
    Feature(String),
    Conjunction(Vec<String>),
}

impl<'de> Deserialize<'de> for RawTerm {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawTerm;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a CPU feature (\"erms\", \"!fsrm\") or a list of them")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawTerm, E> {
                Ok(RawTerm::Feature(v.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<RawTerm, A::Error> {
                let mut words = Vec::new();
                while let Some(w) = seq.next_element::<String>()? {
                    words.push(w);
                }
                Ok(RawTerm::Conjunction(words))
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// `[alias_first]`: the alias band tested before the size classes (from
/// size `from`), and the size classes of the copies in it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAliasFirst {
    pub(super) alias: Vec<u32>,
    pub(super) from: Option<u64>,
    #[serde(default)]
    pub(super) dispatch: Vec<RawClass>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) precision: Option<Precision>,
    #[serde(default)]
    pub(super) zero_tail: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLinux {
    pub(super) convention: Option<Convention>,
    pub(super) uaccess: Option<Uaccess>,
    pub(super) extable: Option<ExtableFormat>,
    pub(super) kernel: Option<KernelVersion>,
    pub(super) site: Option<SiteKind>,
    pub(super) symbol: Option<String>,
    pub(super) from_user: Option<String>,
    pub(super) to_user: Option<String>,
}

#[derive(Deserialize, Serialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "snake_case")]
pub(super) enum RawKind {
    Bytes,
    HeadTail,
    Unrolled,
    RepMovs,
    ShiftCombine,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMethod {
    pub(super) kind: RawKind,
    pub(super) width: Option<u32>,
    pub(super) block: Option<u32>,
    pub(super) registers: Option<u32>,
    pub(super) grouping: Option<Grouping>,
    pub(super) prefetch: Option<RawPrefetch>,
    pub(super) align: Option<RawAlign>,
    pub(super) tail: Option<Tail>,
    pub(super) unit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(u32),
    Many(Vec<u32>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPrefetch {
    pub(super) kind: PrefetchKind,
    pub(super) distance: OneOrMany,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlign {
    pub(super) pointer: AlignPointer,
    pub(super) to: u32,
    pub(super) min_size: u64,
    pub(super) by: Option<AlignBy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClass {
    pub(super) sizes: String,
    #[serde(rename = "use")]
    pub(super) method: String,
    #[serde(default)]
    pub(super) guard: Vec<RawGuard>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuard {
    pub(super) alias: Option<Vec<u32>>,
    pub(super) aligned: Option<RawAlignedCond>,
    #[serde(rename = "use")]
    pub(super) method: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAlignedCond {
    pub(super) pointer: AlignPointer,
    pub(super) to: u32,
}

/// Deserialise the schema, collecting every schema error (syntax, unknown
/// key, wrong type, missing key) rather than only the first, and reading on
/// past each: an unknown key's line is blanked; a wrong value is replaced by
/// a placeholder of a type the field takes, and a missing key in a `[table]`
/// is added with one, so that later tables are still read and no key is
/// reported missing because of an earlier error. Only when every error was
/// an unknown key (blanking which changes nothing the validator sees) is the
/// schema returned for validation as well; placeholders never reach it.
/// Reading on reparses the file, so it stops after 50 errors or once 8 MiB
/// have been parsed in all (a large file with many errors reports fewer).
pub(super) fn deserialize(loc: &Locator) -> (Option<RawStrategy>, Vec<StrategyError>) {
    let mut text = Edited::new(loc.text);
    let mut errors: Vec<StrategyError> = Vec::new();
    let mut only_unknown_keys = true;
    let mut first = toml::from_str::<RawStrategy>(&text.text);
    let mut parsed = 0;
    loop {
        let e = match first {
            Ok(raw) => return (only_unknown_keys.then_some(raw), errors),
            Err(e) => e,
        };
        let raw_message = e.message().trim().to_string();
        let span = e
            .span()
            .or_else(|| unplaced_limit(&text.text, &raw_message))
            .unwrap_or(0..0);
        let doc = toml::de::DeTable::parse(&text.text).ok();
        let missing = between(&raw_message, "missing field `", "`");
        let field = match (doc.as_ref(), missing) {
            (Some(d), Some(m)) => table_spanning(d.get_ref(), &span).key(m).to_string(),
            (Some(d), None) => field_at(d.get_ref(), span.start).to_string(),
            (None, _) => key_on_line(&text.text, span.start),
        };
        // Reading on never reports a field twice (a placeholder that did
        // not take, say).
        if errors.iter().any(|e| e.field == field) {
            return (None, errors);
        }
        only_unknown_keys &= raw_message.starts_with("unknown field");
        let mut message = humanize(&raw_message);
        if raw_message.starts_with("invalid type") && at_header(&text.text, span.start) {
            message.push_str(&header_hint(&text.text, span.start));
        }
        errors.push(loc.at_span(text.original_span(&span), &field, message));
        parsed += 2 * text.text.len();
        if doc.is_none() || errors.len() >= 50 || parsed >= 8 << 20 {
            return (None, errors);
        }
        let next = if raw_message.starts_with("unknown field") {
            blank_line(&text.text, span.start).map(|t| (t, None))
        } else if let Some(m) = missing {
            with_placeholder(&text.text, missing_key_edit(&text.text, &span, m))
        } else if at_header(&text.text, span.start) {
            // A table of the wrong kind (`[[tuned_on]]` for `[tuned_on]`,
            // `[dispatch]` for `[[dispatch]]`): its keys go with it, or
            // they would be read, and reported, as the previous table's.
            blank_table(&text.text, span.start).map(|t| (t, None))
        } else {
            with_placeholder(&text.text, Some((span.clone(), String::new())))
                .or_else(|| blank_line(&text.text, span.start).map(|t| (t, None)))
        };
        let Some((next, edit)) = next else {
            return (None, errors);
        };
        first = toml::from_str::<RawStrategy>(&next);
        text.replace_with(next, edit);
    }
}

/// Where the parser's nesting limit was reached when it does not say: it
/// says for nested arrays and tables, not for a key of too many dotted
/// parts (`a.a.a...`, a key or a table header), which lies on one line, so
/// the first line that alone reaches the limit.
fn unplaced_limit(text: &str, message: &str) -> Option<Range<usize>> {
    if message != "recursion limit" {
        return None;
    }
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let here = at;
        at += line.len();
        if let Err(e) = toml::de::DeTable::parse(line) {
            if e.span().is_none() && e.message().trim() == message {
                return Some(here..here);
            }
        }
    }
    None
}

/// The file's text as edited to read on past errors, and how to map an
/// offset in it back to the file.
struct Edited {
    text: String,
    edits: Vec<Edit>,
}

/// An edit: the range it replaced (in the text before it) and the length
/// written there.
type Edit = (Range<usize>, usize);

impl Edited {
    fn new(text: &str) -> Self {
        Edited {
            text: text.to_string(),
            edits: Vec::new(),
        }
    }

    fn replace_with(&mut self, text: String, edit: Option<Edit>) {
        self.text = text;
        self.edits.extend(edit);
    }

    /// Where `span` of the edited text lies in the file: undone edit by
    /// edit, latest first (a point inside an edit maps to its start).
    fn original_span(&self, span: &Range<usize>) -> Range<usize> {
        let back = |mut at: usize| {
            for (old, new_len) in self.edits.iter().rev() {
                if at >= old.start + new_len {
                    at = at - new_len + old.len();
                } else if at > old.start {
                    at = old.start;
                }
            }
            at
        };
        back(span.start)..back(span.end)
    }
}

/// Where a missing key can be added: after the `[table]` header line that
/// `span` points at (an inline table or the top level are left alone: their
/// missing keys are checked after everything else in them was read).
fn missing_key_edit(text: &str, span: &Range<usize>, key: &str) -> Option<(Range<usize>, String)> {
    if !text.get(span.clone())?.starts_with('[') {
        return None;
    }
    let end = text[span.end..]
        .find('\n')
        .map_or(text.len(), |i| span.end + i);
    Some((end..end, format!("\n{key} = ")))
}

/// `text` with `range` replaced by `prefix` and the first placeholder value
/// the schema accepts there (the next error, if any, lies elsewhere), and
/// the edit made; `None` if no placeholder is accepted.
fn with_placeholder(
    text: &str,
    edit: Option<(Range<usize>, String)>,
) -> Option<(String, Option<Edit>)> {
    let (range, prefix) = edit?;
    let mut candidates: Vec<String> = ["0", "\"\"", "[]", "{}", "false"]
        .map(str::to_string)
        .to_vec();
    let mut tried = 0;
    while tried < candidates.len() {
        let written = format!("{prefix}{}", candidates[tried]);
        tried += 1;
        let next = format!("{}{written}{}", &text[..range.start], &text[range.end..]);
        let here = range.start..range.start + written.len().max(1);
        match toml::from_str::<RawStrategy>(&next) {
            Ok(_) => return Some((next, Some((range, written.len())))),
            Err(e) => {
                let at = e.span().unwrap_or(0..0);
                let elsewhere = !here.contains(&at.start) && !at.contains(&range.start);
                if elsewhere && toml::de::DeTable::parse(&next).is_ok() {
                    return Some((next, Some((range, written.len()))));
                }
                // An enumeration: one of the values it lists.
                if let Some(rest) = e.message().strip_prefix("unknown variant ``") {
                    if let Some(value) = rest.split('`').nth(1) {
                        candidates.push(format!("\"{value}\""));
                    }
                }
            }
        }
    }
    None
}

/// The deepest table (an array of tables' entry, not the array) whose span
/// is `span`: where serde reports a key missing; the top level when none is
/// (an empty span).
fn table_spanning(table: &toml::de::DeTable, span: &Range<usize>) -> FieldPath {
    fn walk(v: &toml::de::DeValue, span: &Range<usize>, path: FieldPath) -> Option<FieldPath> {
        match v {
            toml::de::DeValue::Table(t) => t.iter().find_map(|(k, val)| {
                let here = path.key(k.get_ref());
                let this = (val.span() == *span).then(|| here.clone());
                walk(val.get_ref(), span, here).or(this)
            }),
            toml::de::DeValue::Array(a) => a.iter().enumerate().find_map(|(i, val)| {
                let here = path.index(i);
                let this = (val.span() == *span).then(|| here.clone());
                walk(val.get_ref(), span, here).or(this)
            }),
            _ => None,
        }
    }
    walk(
        &toml::de::DeValue::Table(table.clone()),
        span,
        FieldPath::root(),
    )
    .unwrap_or_else(FieldPath::root)
}

/// `text` with the line holding `offset` replaced by spaces (same length,
/// so every span stays valid); `None` if that line is blank already.
/// What a header of the wrong kind should have been.
fn header_hint(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("").trim();
    let name = line.trim_matches(|c| c == '[' || c == ']').trim();
    if line.starts_with("[[") {
        format!(" (`[[{name}]]` makes an array of tables; this key takes one table: `[{name}]`)")
    } else {
        format!(" (`[{name}]` makes one table; this key takes an array of tables: `[[{name}]]` for each)")
    }
}

/// Whether the line at `offset` is a table header (`[x]`, `[[x]]`).
fn at_header(text: &str, offset: usize) -> bool {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    text[start..].trim_start().starts_with('[')
}

/// `text` with the table whose header is on the line at `offset` blanked:
/// the header and every line up to the next header.
fn blank_table(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let first_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let mut end = first_end;
    while end < text.len() {
        let next = end + 1;
        let line_end = text[next..].find('\n').map_or(text.len(), |i| next + i);
        if text[next..line_end].trim_start().starts_with('[') {
            break;
        }
        end = line_end;
    }
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..start]);
    // A character becomes as many spaces as it has bytes: offsets after
    // the table still point where they did.
    for c in text[start..end].chars() {
        if c == '\n' {
            out.push('\n');
        } else {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    }
    out.push_str(&text[end..]);
    Some(out)
}

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
    if message == "recursion limit" {
        // The reader's own limit, reached by a key (`a.b.c...`).
        return "a key of 80 or more dotted parts: more than the TOML reader takes".into();
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
pub(super) fn key_on_line(text: &str, offset: usize) -> String {
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
pub(super) fn field_at(table: &toml::de::DeTable, offset: usize) -> FieldPath {
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
