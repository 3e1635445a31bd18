//! `copygen tune --merge a.toml b.toml ...`: tune results from several CPUs
//! become one per-CPU strategy. Each input's recorded CPU (the
//! `[tuned_on]` table a tune writes) gives its variant: named after the CPU, with the
//! feature bits that CPU has as its condition (`zen`, `fsrm`, `erms`, and
//! the kernel's Zen generation bit, `zen1`..`zen5`, where another input has
//! the same other bits, so that the two stay apart). Variants are ordered by how
//! many bits they require, most first, so a CPU gets the result of the
//! input whose bits it has most of; the last becomes the default. Each
//! input's methods are renamed `<variant>_<method>`.

use std::path::{Path, PathBuf};

use crate::front::parse;
use crate::front::strategy::{AliasFirst, Method, SizeClass, Strategy};
use crate::front::to_toml;
use crate::front::variant::{CpuCondition, CpuFeature, Variant, VariantCondition};
use crate::tools::host_cpu::CpuInfo;

/// One tune result to merge: its file and text.
pub struct Input {
    pub path: PathBuf,
    pub text: String,
}

struct Tuned<'a> {
    input: &'a Input,
    strategy: Strategy,
    cpu: CpuInfo,
    /// 1-based line of the `[tuned_on]` table.
    cpu_line: usize,
}

/// `file:line: error: message`, the located form of a bad input.
fn located(path: &Path, line: usize, msg: impl std::fmt::Display) -> String {
    format!("{}:{line}: error: {msg}", path.display())
}

/// 1-based line of the first line starting with `key` (a TOML key), else 1.
fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with(key))
        .map_or(1, |i| i + 1)
}

fn read(input: &Input) -> Result<Tuned<'_>, String> {
    let strategy = parse::parse(&input.path, &input.text, None).map_err(|e| e.to_string())?;
    let Some(tuned_on) = &strategy.tuned_on else {
        return Err(located(
            &input.path,
            1,
            "no `[tuned_on]` table: not the output of `copygen tune` (which records the CPU it measured)",
        ));
    };
    let cpu = CpuInfo::from_tuned_on(tuned_on);
    let cpu_line = line_of(&input.text, "[tuned_on]");
    if !strategy.variants.is_empty() {
        return Err(located(
            &input.path,
            line_of(&input.text, "[[variants]]"),
            "this strategy already has per-CPU variants; merge the single-CPU tune results instead",
        ));
    }
    Ok(Tuned {
        input,
        strategy,
        cpu,
        cpu_line,
    })
}

/// What every variant shares and so every input must agree on: (TOML key
/// to point at, what the value is).
fn shared(s: &Strategy) -> Vec<(&'static str, String)> {
    vec![
        ("arch", s.arch.to_string()),
        ("directions", format!("{:?}", s.directions)),
        ("routine", format!("{:?}", s.routine)),
        ("precision", s.precision.to_string()),
        ("zero_tail", s.zero_tail.to_string()),
        ("[linux]", format!("{:?}", s.linux)),
        ("fixed_sizes", format!("{:?}", s.fixed_sizes)),
    ]
}

fn renamed(m: &Method, variant: &str) -> Method {
    Method {
        name: format!("{variant}_{}", m.name),
        kind: m.kind.clone(),
    }
}

fn renamed_classes(classes: &[SizeClass], variant: &str) -> Vec<SizeClass> {
    classes
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.method = renamed(&c.method, variant);
            for g in &mut c.guards {
                g.method = renamed(&g.method, variant);
            }
            c
        })
        .collect()
}

/// The bits `t`'s variant requires: its `zen`, `fsrm`, `erms`, then its
/// Zen generation bit when another input shares those (a Zen 3 and a Zen 4
/// both have all three).
fn condition(t: &Tuned, all: &[Tuned]) -> Vec<CpuFeature> {
    let mut bits = t.cpu.base_features();
    let shared = all.iter().any(|u| {
        !std::ptr::eq(u, t)
            && u.cpu.base_features() == bits
            && u.cpu.zen_generation() != t.cpu.zen_generation()
    });
    if let (true, Some(g)) = (shared, t.cpu.zen_generation()) {
        let at = bits
            .iter()
            .position(|&f| f == CpuFeature::Zen)
            .map_or(0, |i| i + 1);
        bits.insert(at, g);
    }
    bits
}

/// The merged strategy and its file text (header comments, then the
/// strategy); `name` replaces the first input's name. Errors are located
/// (`file:line: error: ...`).
pub fn merge(inputs: &[Input], name: Option<&str>) -> Result<(Strategy, String), String> {
    if inputs.len() < 2 {
        return Err("error: --merge needs at least two tune results".into());
    }
    let tuned = inputs.iter().map(read).collect::<Result<Vec<_>, _>>()?;
    let first = &tuned[0];
    for t in &tuned[1..] {
        for ((key, a), (_, b)) in shared(&first.strategy).into_iter().zip(shared(&t.strategy)) {
            if a != b {
                return Err(located(
                    &t.input.path,
                    line_of(&t.input.text, key),
                    format!(
                        "`{key}` differs from {}'s; every variant of one strategy shares it",
                        first.input.path.display()
                    ),
                ));
            }
        }
    }
    for (i, t) in tuned.iter().enumerate() {
        for u in &tuned[..i] {
            let same_cpu = (&t.cpu.vendor, t.cpu.family, t.cpu.model)
                == (&u.cpu.vendor, u.cpu.family, u.cpu.model);
            let why = if same_cpu {
                "was tuned on the same CPU"
            } else if condition(t, &tuned) == condition(u, &tuned) {
                "was tuned on a CPU with the same feature bits (erms, fsrm, zen and the Zen generation), so no variant condition tells the two apart"
            } else {
                continue;
            };
            return Err(located(
                &t.input.path,
                t.cpu_line,
                format!("{} {why}: {}", u.input.path.display(), t.cpu.describe()),
            ));
        }
    }
    // A variant is named after its CPU's vendor, family and model; vendors
    // copygen does not know share one word, so two of them can meet.
    for (i, t) in tuned.iter().enumerate() {
        if let Some(u) = tuned[..i]
            .iter()
            .find(|u| u.cpu.variant_name() == t.cpu.variant_name())
        {
            return Err(located(
                &t.input.path,
                t.cpu_line,
                format!(
                    "{} and this file would both be variant `{}`: vendors `{}` and `{}` are \
                     both unknown to copygen, which names a variant after the vendor (amd, \
                     intel, hygon, else cpu), family and model",
                    u.input.path.display(),
                    t.cpu.variant_name(),
                    u.cpu.vendor,
                    t.cpu.vendor
                ),
            ));
        }
    }
    // Most required bits first; the input order breaks ties (stable sort).
    let conditions: Vec<Vec<CpuFeature>> = tuned.iter().map(|t| condition(t, &tuned)).collect();
    let mut order: Vec<usize> = (0..tuned.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(conditions[i].len()));
    let mut slots: Vec<Option<Tuned>> = tuned.into_iter().map(Some).collect();
    let tuned: Vec<Tuned> = order
        .iter()
        .map(|&i| slots[i].take().expect("each input once"))
        .collect();
    let conditions: Vec<Vec<CpuFeature>> = order.iter().map(|&i| conditions[i].clone()).collect();
    let last = tuned.len() - 1;
    let variants: Vec<Variant> = tuned
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let vname = t.cpu.variant_name();
            Variant {
                classes: renamed_classes(&t.strategy.classes, &vname),
                alias_first: t.strategy.alias_first.as_ref().map(|a| AliasFirst {
                    classes: renamed_classes(&a.classes, &vname),
                    ..a.clone()
                }),
                when: (i != last).then(|| {
                    VariantCondition::one(CpuCondition {
                        require: conditions[i].clone(),
                        exclude: Vec::new(),
                    })
                }),
                name: vname,
            }
        })
        .collect();
    let base = &tuned[0].strategy;
    let name = name.unwrap_or(&base.name).to_string();
    let mut s = base.clone();
    s.symbol = crate::front::strategy::symbol_of(&name);
    s.name = name;
    s.description = format!(
        "Per-CPU merge of `copygen tune` results (`copygen tune --merge`): {}.",
        tuned
            .iter()
            .zip(&variants)
            .map(|(t, v)| format!(
                "`{}` from {} ({})",
                v.name,
                to_toml::printable(&t.input.path.display().to_string()),
                v.condition_text()
            ))
            .collect::<Vec<_>>()
            .join("; ")
    );
    s.classes = variants[last].classes.clone();
    s.alias_first = variants[last].alias_first.clone();
    s.variants = variants;
    // Several CPUs: each variant says which through its name and condition.
    s.tuned_on = None;
    let mut comments = vec!["Merged by `copygen tune --merge` from:".to_string()];
    for (t, v) in tuned.iter().zip(&s.variants) {
        comments.push(String::new());
        comments.push(format!(
            "{} -> variant `{}` ({}):",
            t.input.path.display(),
            v.name,
            v.condition_text()
        ));
        for l in t.input.text.lines().take_while(|l| l.starts_with('#')) {
            comments.push(format!("  {}", l.trim_start_matches('#').trim_start()));
        }
    }
    let body = to_toml::render(&s).map_err(|e| format!("error: {e}"))?;
    let mut text = to_toml::comments(&comments);
    text.push('\n');
    text.push_str(&body);
    Ok((s, text))
}
