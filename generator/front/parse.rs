//! Strategy files: the TOML schema (`Raw*`, unknown keys rejected) and the
//! validation that turns it into [`ir::Strategy`]. Every error is located:
//! file, line, column and field.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::arch::{capabilities, scratch_registers};
use crate::front::diagnostics::{FieldPath, Locator, StrategyError};
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

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
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
    alias: Option<[u32; 2]>,
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
/// in the generated header; `arch` overrides the file's `arch`.
pub fn parse(file: &Path, text: &str, arch: Option<Arch>) -> Result<Strategy, StrategyError> {
    let loc = Locator::new(file, text);
    let raw: RawStrategy = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let field = match loc.doc.as_ref() {
            Some(d) => field_at(d.get_ref(), span.start).to_string(),
            None => key_on_line(text, span.start),
        };
        loc.at_span(span, &field, e.message().trim().to_string())
    })?;
    Validator { loc: &loc }.strategy(raw, file, text, arch)
}

/// Read and validate a strategy file from disk.
pub fn load(file: &Path, arch: Option<Arch>) -> anyhow::Result<Strategy> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow::anyhow!("{}: cannot read strategy file: {e}", file.display()))?;
    Ok(parse(file, &text, arch)?)
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
}

type R<T> = Result<T, StrategyError>;

impl Validator<'_> {
    fn err(&self, path: &FieldPath, msg: impl Into<String>) -> StrategyError {
        self.loc.at_field(path, msg)
    }

    fn strategy(
        &self,
        mut raw: RawStrategy,
        file: &Path,
        text: &str,
        arch: Option<Arch>,
    ) -> R<Strategy> {
        let root = FieldPath::root();
        if raw.name.is_empty()
            || !raw
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(self.err(
                &root.key("name"),
                "a name is non-empty and uses only letters, digits, `-` and `_` (it names files and symbols)",
            ));
        }
        let arch = arch.or_else(|| Arch::parse(&raw.arch)).ok_or_else(|| {
            self.err(
                &root.key("arch"),
                format!(
                    "unknown architecture `{}`; copygen targets i386, x86_64 and armv6",
                    raw.arch
                ),
            )
        })?;
        let caps = capabilities(arch);

        let directions_given = raw.directions.is_some();
        let directions = match raw.directions.take() {
            None => vec![Direction::FromUser, Direction::ToUser],
            Some(d) => {
                let path = root.key("directions");
                if d.is_empty() {
                    return Err(self.err(&path, "at least one direction is needed"));
                }
                let set: BTreeSet<_> = d.iter().collect();
                if set.len() != d.len() {
                    return Err(self.err(&path, "a direction is listed twice"));
                }
                let mut d = d;
                d.sort();
                d
            }
        };

        let fault = root.key("fault");
        let precision = raw.fault.precision.unwrap_or(Precision::Exact);
        if raw.fault.zero_tail && !directions.contains(&Direction::FromUser) {
            return Err(self.err(
                &fault.key("zero_tail"),
                "zero_tail zeroes the kernel buffer of from_user, which this strategy does not emit",
            ));
        }

        let routine = raw.routine.unwrap_or(RoutineShape::PerDirection);
        if routine == RoutineShape::Both {
            if directions_given {
                return Err(self.err(
                    &root.key("directions"),
                    "a routine serving both directions (`routine = \"both\"`) has no directions to pick",
                ));
            }
            if raw.fault.zero_tail {
                return Err(self.err(
                    &fault.key("zero_tail"),
                    "zero_tail is a from_user behaviour; a routine serving both directions cannot zero the kernel side",
                ));
            }
            if !raw.fixed_sizes.is_empty() {
                return Err(self.err(
                    &root.key("fixed_sizes"),
                    "constant-size entry points are per direction; `routine = \"both\"` has none",
                ));
            }
        }

        let linux = self.linux(arch, routine, &directions, std::mem::take(&mut raw.linux))?;

        let mut fixed = raw.fixed_sizes.clone();
        for (i, &n) in raw.fixed_sizes.iter().enumerate() {
            if n == 0 || n > 64 {
                return Err(self.err(
                    &root.key("fixed_sizes").index(i),
                    format!("fixed size {n} is outside 1..=64"),
                ));
            }
        }
        fixed.sort_unstable();
        fixed.dedup();
        if fixed.len() != raw.fixed_sizes.len() {
            return Err(self.err(&root.key("fixed_sizes"), "a fixed size is listed twice"));
        }

        // Scratch registers: the fewest any emitted flavour allows.
        let budget = Flavor::ALL
            .iter()
            .map(|&f| (scratch_registers(arch, f, linux.convention), f))
            .min()
            .expect("flavours");

        let mut methods = BTreeMap::new();
        for (name, m) in &raw.methods {
            let path = root.key("methods").key(name);
            let kind = self.method(arch, caps, budget, &path, m)?;
            methods.insert(
                name.clone(),
                Method {
                    name: name.clone(),
                    kind,
                },
            );
        }

        let (classes, variants) = if raw.variants.is_empty() {
            let classes = self.dispatch(&root.key("dispatch"), &raw.dispatch, &methods)?;
            (classes, Vec::new())
        } else {
            let variants = self.variants(arch, caps, budget, &raw, &methods)?;
            let default = variants.last().expect("validated non-empty");
            (default.classes.clone(), variants)
        };

        Ok(Strategy {
            symbol: symbol_of(&raw.name),
            name: raw.name,
            description: raw.description.trim().to_string(),
            arch,
            directions,
            routine,
            precision,
            zero_tail: raw.fault.zero_tail,
            linux,
            classes,
            variants,
            fixed_sizes: fixed,
            source: file.display().to_string(),
            text: text.to_string(),
        })
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
        if raw.uaccess.is_some() && arch == Arch::Armv6 {
            return Err(self.err(
                &path.key("uaccess"),
                "STAC/CLAC bracketing is an x86 option; armv6 has no SMAP",
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
            if raw.kernel != Some(KernelVersion::V6_1) {
                return Err(self.err(
                    &path.key("extable"),
                    "_ASM_EXTABLE_CPY is 6.1's (6.4 removed it): set `kernel = \"6.1\"`",
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
            extable: raw.extable.unwrap_or(ExtableFormat::Relative),
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

    fn check_registers(
        &self,
        budget: (u32, Flavor),
        path: &FieldPath,
        n: u32,
        arch: Arch,
    ) -> R<()> {
        if n == 0 {
            return Err(self.err(path, "at least one register is needed"));
        }
        if n > budget.0 {
            return Err(self.err(
                path,
                format!(
                    "{n} registers, but the {} flavour on {arch} lets a routine clobber only {} scratch register(s)",
                    budget.1, budget.0
                ),
            ));
        }
        Ok(())
    }

    fn method(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: (u32, Flavor),
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
                    format!("`{field}` means nothing to a method of kind `{:?}`", m.kind)
                        .replace("HeadTail", "head_tail")
                        .replace("RepMovs", "rep_movs")
                        .replace("Bytes", "bytes")
                        .replace("Unrolled", "unrolled"),
                ));
            }
        }
        let max_width = *caps.widths.iter().max().expect("widths");
        match m.kind {
            RawKind::Bytes => Ok(MethodKind::Bytes),
            RawKind::HeadTail => {
                let width = m.width.unwrap_or(max_width);
                self.check_width(arch, caps, &path.key("width"), width)?;
                let registers = m.registers.unwrap_or(2.min(budget.0));
                self.check_registers(budget, &path.key("registers"), registers, arch)?;
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
                let align = self.align(&path.key("align"), m.align.as_ref())?;
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
        budget: (u32, Flavor),
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
                format!("grouping `{grouping:?}` does not exist on {arch}").to_lowercase(),
            ));
        }
        let registers = m.registers.unwrap_or(1);
        self.check_registers(budget, &path.key("registers"), registers, arch)?;
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
                        format!("prefetch `{:?}` does not exist on {arch}", p.kind).to_lowercase(),
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
        let align = self.align(&path.key("align"), m.align.as_ref())?;
        let tail = m.tail.unwrap_or(Tail::Bytes);
        if tail == Tail::RepMovs && !matches!(width, 4 | 8) {
            return Err(self.err(
                &path.key("tail"),
                format!("a `rep_movs` tail moves units of the loop width, which must be 4 or 8, not {width}"),
            ));
        }
        if !caps.tails.contains(&tail) {
            return Err(self.err(
                &path.key("tail"),
                format!("tail `{tail:?}` does not exist on {arch}").to_lowercase(),
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

    fn align(&self, ap: &FieldPath, a: Option<&RawAlign>) -> R<Option<Align>> {
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
        Ok(Some(Align {
            pointer: a.pointer,
            to: a.to,
            min_size: a.min_size,
        }))
    }

    fn dispatch(
        &self,
        dpath: &FieldPath,
        raw: &[RawClass],
        methods: &BTreeMap<String, Method>,
    ) -> R<Vec<SizeClass>> {
        if raw.is_empty() {
            return Err(self.err(dpath, "dispatch needs at least one size class"));
        }
        let lookup = |path: &FieldPath, name: &str| -> R<Method> {
            methods.get(name).cloned().ok_or_else(|| {
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
        for (i, c) in raw.iter().enumerate() {
            let cpath = dpath.index(i);
            let spath = cpath.key("sizes");
            let (lo, hi) = parse_range(&c.sizes).ok_or_else(|| {
                self.err(
                    &spath,
                    format!(
                        "`{}` is not a size range (`0..=64`, `65..4096`, `4096..`)",
                        c.sizes
                    ),
                )
            })?;
            let expected = match classes.last() {
                None => 0,
                Some(prev) => match prev.hi {
                    None => {
                        return Err(self.err(
                            &spath,
                            format!("class {} already covers every size from {}: this one can never be reached", i - 1, prev.lo),
                        ))
                    }
                    Some(h) => h + 1,
                },
            };
            if lo > expected {
                return Err(self.err(
                    &spath,
                    format!(
                        "gap: sizes {} are covered by no class",
                        fmt_range(expected, Some(lo - 1))
                    ),
                ));
            }
            if lo < expected {
                return Err(self.err(
                    &spath,
                    format!(
                        "overlap: sizes {} are already covered by class {}",
                        fmt_range(lo, Some((expected - 1).min(hi.unwrap_or(u64::MAX)))),
                        i - 1
                    ),
                ));
            }
            let method = lookup(&cpath.key("use"), &c.method)?;
            self.method_fits(&method, lo, hi, None, &cpath.key("use"))?;
            let mut guards = Vec::new();
            for (g, rg) in c.guard.iter().enumerate() {
                let gpath = cpath.key("guard").index(g);
                let condition =
                    match (&rg.alias, &rg.aligned) {
                        (Some([a, b]), None) => {
                            if a > b || *b >= 4096 {
                                return Err(self.err(
                                    &gpath.key("alias"),
                                    "an alias band is [lo, hi] with lo <= hi < 4096",
                                ));
                            }
                            Condition::Alias { lo: *a, hi: *b }
                        }
                        (None, Some(al)) => {
                            if !al.to.is_power_of_two() || al.to < 2 || al.to > 4096 {
                                return Err(self.err(
                                    &gpath.key("aligned").key("to"),
                                    "alignment is a power of two in 2..=4096",
                                ));
                            }
                            Condition::Aligned {
                                pointer: al.pointer,
                                to: al.to,
                            }
                        }
                        (Some(_), Some(_)) => {
                            return Err(self.err(
                                &gpath,
                                "a guard tests one condition: `alias` or `aligned`, not both",
                            ))
                        }
                        (None, None) => return Err(self.err(
                            &gpath,
                            "a guard needs a condition: `alias = [lo, hi]` or `aligned = {...}`",
                        )),
                    };
                let gm = lookup(&gpath.key("use"), &rg.method)?;
                self.method_fits(&gm, lo, hi, Some(&condition), &gpath.key("use"))?;
                guards.push(Guard {
                    condition,
                    method: gm,
                });
            }
            classes.push(SizeClass {
                lo,
                hi,
                guards,
                method,
            });
        }
        let last = classes.last().expect("non-empty");
        if let Some(h) = last.hi {
            return Err(self.err(
                &dpath.index(classes.len() - 1).key("sizes"),
                format!("sizes from {} up are covered by no class: the last class must be open (`{}..`)", h + 1, last.lo),
            ));
        }
        Ok(classes)
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
                    "method `{name}` aligns {:?} to {} bytes, which does not make both pointers word-aligned under a guard of congruence modulo {congruent}",
                    a.pointer, a.to
                )
                .to_lowercase(),
            ));
        }
        if a.min_size > u.block as u64 && lo < a.min_size {
            return Err(self.err(
                path,
                format!(
                    "method `{name}` skips its align prologue below {} bytes but runs its ldm/stm loop from {}: lengths {}..{} would reach ldm/stm unaligned (lower min_size to at most the block)",
                    a.min_size, u.block, u.block.max(lo as u32), a.min_size
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
    fn variants(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: (u32, Flavor),
        raw: &RawStrategy,
        shared: &BTreeMap<String, Method>,
    ) -> R<Vec<Variant>> {
        let vpath = FieldPath::root().key("variants");
        if arch == Arch::Armv6 {
            return Err(self.err(
                &vpath,
                "per-CPU variants are chosen by x86 feature bits (ALTERNATIVE, CPUID); armv6 has none",
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
                self.dispatch(&FieldPath::root().key("dispatch"), &raw.dispatch, &methods)?
            } else {
                self.dispatch(&path.key("dispatch"), &v.dispatch, &methods)?
            };
            out.push(Variant {
                name: v.name.clone(),
                when,
                classes,
            });
        }
        Ok(out)
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
