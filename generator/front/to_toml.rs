//! A validated [`Strategy`] written back as a strategy file: what `copygen
//! tune --merge` outputs. Parsing the text gives the same strategy (only
//! `source` and `text`, which name the file, differ); the tests check that
//! on the catalog and on random merged strategies.
//!
//! A value is written only where it differs from what the parser assumes
//! when the key is absent, so the file reads like a hand-written one and
//! never states an option its arch refuses (`convention` off x86_64).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::strategy::*;
use crate::front::variant::{CpuCondition, CpuFeature, TunedOn, Variant};

/// A TOML basic string: quoted and escaped.
pub fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `lines` as TOML comments, one `# ` line each. A control character
/// (a newline above all) is written escaped (`\n`), so no text given
/// here can end its comment and start TOML of its own.
pub fn comments(lines: &[String]) -> String {
    let mut t = String::new();
    for l in lines {
        t.push('#');
        if !l.is_empty() {
            t.push(' ');
        }
        t.push_str(&printable(l));
        t.push('\n');
    }
    t
}

/// `s` with each control character (newline, carriage return, ...)
/// written escaped (`\n`): text that stays on one line and passes the
/// validator's printable-text checks.
pub fn printable(s: &str) -> String {
    let mut t = String::new();
    for c in s.chars() {
        if c.is_control() {
            t.extend(c.escape_default());
        } else {
            t.push(c);
        }
    }
    t
}

/// The strategy file of `s`; an error when two different methods share a
/// name (the file keys methods by name).
pub fn render(s: &Strategy) -> Result<String, String> {
    let mut t = String::new();
    let _ = writeln!(t, "name = {}", quoted(&s.name));
    let _ = writeln!(t, "description = {}", quoted(&s.description));
    let _ = writeln!(t, "arch = {}", quoted(s.arch.name()));
    let both = [Direction::FromUser, Direction::ToUser];
    if s.directions != both {
        let d: Vec<String> = s.directions.iter().map(|d| quoted(d.name())).collect();
        let _ = writeln!(t, "directions = [{}]", d.join(", "));
    }
    if s.routine == RoutineShape::Both {
        let _ = writeln!(t, "routine = \"both\"");
    }
    if !s.fixed_sizes.is_empty() {
        let n: Vec<String> = s.fixed_sizes.iter().map(u32::to_string).collect();
        let _ = writeln!(t, "fixed_sizes = [{}]", n.join(", "));
    }
    linux(&mut t, &s.linux);
    let _ = writeln!(t, "\n[fault]\nprecision = \"{}\"", s.precision);
    if s.zero_tail {
        let _ = writeln!(t, "zero_tail = true");
    }
    if let Some(c) = &s.tuned_on {
        tuned_on(&mut t, c);
    }
    for m in methods(s)?.values() {
        method(&mut t, m);
    }
    if s.variants.is_empty() {
        size_classes(&mut t, "dispatch", &s.classes);
        alias_first(&mut t, "alias_first", s.alias_first.as_ref());
    }
    for v in &s.variants {
        variant(&mut t, v);
    }
    Ok(t)
}

fn tuned_on(t: &mut String, c: &TunedOn) {
    let f: Vec<String> = c.features.iter().map(|f| quoted(&f.name())).collect();
    let _ = writeln!(
        t,
        "\n[tuned_on]\nvendor = {}\nfamily = {:#x}\nmodel = {:#x}\nfeatures = [{}]",
        quoted(&c.vendor),
        c.family,
        c.model,
        f.join(", ")
    );
}

fn linux(t: &mut String, l: &LinuxOptions) {
    let mut lines = Vec::new();
    if l.convention != Convention::C {
        lines.push(format!("convention = \"{}\"", l.convention));
    }
    if l.uaccess != Uaccess::Caller {
        lines.push(format!("uaccess = \"{}\"", l.uaccess));
    }
    if l.extable != ExtableFormat::Relative {
        lines.push(format!("extable = \"{}\"", toml_name(&l.extable)));
    }
    if let Some(k) = l.kernel {
        lines.push(format!("kernel = \"{}\"", k.name()));
    }
    if let Some(site) = l.site {
        lines.push(format!("site = \"{}\"", toml_name(&site)));
    }
    for (key, name) in [
        ("symbol", &l.both),
        ("from_user", &l.from_user),
        ("to_user", &l.to_user),
    ] {
        if let Some(n) = name {
            lines.push(format!("{key} = {}", quoted(n)));
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(t, "\n[linux]\n{}", lines.join("\n"));
    }
}

/// Every method any class or guard uses, by name.
fn methods(s: &Strategy) -> Result<BTreeMap<&str, &Method>, String> {
    let mut out: BTreeMap<&str, &Method> = BTreeMap::new();
    let dispatches = std::iter::once((&s.classes, &s.alias_first))
        .chain(s.variants.iter().map(|v| (&v.classes, &v.alias_first)));
    let classes = dispatches.flat_map(|(c, a)| c.iter().chain(a.iter().flat_map(|a| &a.classes)));
    for c in classes {
        for m in std::iter::once(&c.method).chain(c.guards.iter().map(|g| &g.method)) {
            match out.get(m.name.as_str()) {
                Some(seen) if *seen != m => {
                    return Err(format!(
                        "two different methods are named `{}`; a strategy file names each once",
                        m.name
                    ))
                }
                _ => {
                    out.insert(&m.name, m);
                }
            }
        }
    }
    Ok(out)
}

fn align_text(a: &Align) -> String {
    format!(
        "{{ pointer = \"{}\", to = {}, min_size = {}{} }}",
        a.pointer,
        a.to,
        a.min_size,
        if a.by == AlignBy::Word {
            ", by = \"word\""
        } else {
            ""
        }
    )
}

fn method(t: &mut String, m: &Method) {
    let key = if m
        .name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        m.name.clone()
    } else {
        quoted(&m.name)
    };
    let _ = writeln!(t, "\n[methods.{key}]");
    match &m.kind {
        MethodKind::Bytes => {
            let _ = writeln!(t, "kind = \"bytes\"");
        }
        MethodKind::HeadTail { width, registers } => {
            let _ = writeln!(
                t,
                "kind = \"head_tail\"\nwidth = {width}\nregisters = {registers}"
            );
        }
        MethodKind::RepMovs { unit, align, tail } => {
            let _ = writeln!(t, "kind = \"rep_movs\"\nunit = {unit}");
            if let Some(a) = align {
                let _ = writeln!(t, "align = {}", align_text(a));
            }
            if *tail == RepTail::Bytes {
                let _ = writeln!(t, "tail = \"bytes\"");
            }
        }
        MethodKind::ShiftCombine { width, align } => {
            let _ = writeln!(
                t,
                "kind = \"shift_combine\"\nwidth = {width}\nalign = {}",
                align_text(align)
            );
        }
        MethodKind::Unrolled(u) => {
            let _ = writeln!(
                t,
                "kind = \"unrolled\"\nblock = {}\nwidth = {}\nregisters = {}\ngrouping = \"{}\"",
                u.block, u.width, u.registers, u.grouping
            );
            if let Some(p) = &u.prefetch {
                let d: Vec<String> = p.distances.iter().map(u32::to_string).collect();
                let _ = writeln!(
                    t,
                    "prefetch = {{ kind = \"{}\", distance = [{}] }}",
                    p.kind,
                    d.join(", ")
                );
            }
            if let Some(a) = &u.align {
                let _ = writeln!(t, "align = {}", align_text(a));
            }
            let _ = writeln!(t, "tail = \"{}\"", u.tail);
        }
    }
}

/// `[[<table>]]` entries, one per size class, with their guards.
fn size_classes(t: &mut String, table: &str, classes: &[SizeClass]) {
    for c in classes {
        let sizes = match c.hi {
            Some(hi) => format!("{}..={hi}", c.lo),
            None => format!("{}..", c.lo),
        };
        let _ = writeln!(
            t,
            "\n[[{table}]]\nsizes = \"{sizes}\"\nuse = {}",
            quoted(&c.method.name)
        );
        for g in &c.guards {
            let _ = writeln!(t, "[[{table}.guard]]");
            match &g.condition {
                Condition::Alias { lo, hi } => {
                    let _ = writeln!(t, "alias = [{lo}, {hi}]");
                }
                Condition::Aligned { pointer, to } => {
                    let _ = writeln!(t, "aligned = {{ pointer = \"{pointer}\", to = {to} }}");
                }
            }
            let _ = writeln!(t, "use = {}", quoted(&g.method.name));
        }
    }
}

/// `[<table>]`: the alias-first band, then its size classes.
fn alias_first(t: &mut String, table: &str, a: Option<&AliasFirst>) {
    let Some(a) = a else { return };
    let _ = writeln!(t, "\n[{table}]\nalias = [{}, {}]", a.lo, a.hi);
    if a.from > 0 {
        let _ = writeln!(t, "from = {}", a.from);
    }
    size_classes(t, &format!("{table}.dispatch"), &a.classes);
}

fn variant(t: &mut String, v: &Variant) {
    let _ = writeln!(t, "\n[[variants]]\nname = {}", quoted(&v.name));
    match &v.when {
        Some(when) => {
            let conjunction = |c: &CpuCondition| {
                let words: Vec<String> = c
                    .words(CpuFeature::name)
                    .iter()
                    .map(|w| quoted(w))
                    .collect();
                format!("[{}]", words.join(", "))
            };
            let text = match &when.any[..] {
                [c] => conjunction(c),
                any => {
                    let terms: Vec<String> = any.iter().map(conjunction).collect();
                    format!("[{}]", terms.join(", "))
                }
            };
            let _ = writeln!(t, "when = {text}");
        }
        None => {
            let _ = writeln!(t, "default = true");
        }
    }
    size_classes(t, "variants.dispatch", &v.classes);
    alias_first(t, "variants.alias_first", v.alias_first.as_ref());
}
