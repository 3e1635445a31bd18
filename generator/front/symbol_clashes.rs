//! What a strategy's names become in the generated files, checked against
//! what the preprocessor and the assembler will make of them: the global
//! symbols of each flavour (and the field each comes from), the names the
//! kernel tree and the compiler define as macros (`reserved/<arch>.txt`),
//! the `.L` labels of a file with per-CPU variants, and the symbols the
//! strategies of one run export together.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::OnceLock;

use crate::arch::symbols::{entry as entry_symbol, pointer as pointer_symbol, routine_tag};
use crate::arch::symbols::{variant_entry as variant_symbol, variant_tag};
use crate::front::diagnostics::{FieldPath, Locator, StrategyError};
use crate::front::strategy::{Arch, Direction, Flavor, RoutineShape, Strategy};

/// A global symbol of a generated file and the field it is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub name: String,
    pub flavor: Flavor,
    pub field: FieldPath,
}

fn field(key: &str) -> FieldPath {
    FieldPath::root().key(key)
}

fn variant_field(i: usize) -> FieldPath {
    FieldPath::root().key("variants").index(i).key("name")
}

/// The field an entry point's name comes from: the `[linux]` name given
/// for it, else the strategy's `name`.
fn entry_field(s: &Strategy, flavor: Flavor, dir: Direction) -> FieldPath {
    if flavor == Flavor::Standalone {
        return field("name");
    }
    let linux = FieldPath::root().key("linux");
    match (s.routine, dir) {
        (RoutineShape::Both, _) if s.linux.both.is_some() => linux.key("symbol"),
        (RoutineShape::PerDirection, Direction::FromUser) if s.linux.from_user.is_some() => {
            linux.key("from_user")
        }
        (RoutineShape::PerDirection, Direction::ToUser) if s.linux.to_user.is_some() => {
            linux.key("to_user")
        }
        _ => field("name"),
    }
}

/// Every global symbol of `s`'s file in `flavor`: entry points (and the
/// standalone alias of a routine serving both directions), constant-size
/// entries, each variant's routines and the standalone resolver's pointers.
pub fn generated_symbols(s: &Strategy, flavor: Flavor) -> Vec<Symbol> {
    let dirs: &[Direction] = if flavor == Flavor::Linux && s.routine == RoutineShape::Both {
        &s.directions[..1]
    } else {
        &s.directions
    };
    let mut out = Vec::new();
    let mut push = |name: String, field: FieldPath| {
        out.push(Symbol {
            name,
            flavor,
            field,
        })
    };
    for &dir in dirs {
        push(
            entry_symbol(s, flavor, dir, None),
            entry_field(s, flavor, dir),
        );
    }
    for &n in &s.fixed_sizes {
        for &dir in &s.directions {
            push(entry_symbol(s, flavor, dir, Some(n)), field("name"));
        }
    }
    for (i, v) in s.variants.iter().enumerate() {
        for &dir in dirs {
            push(variant_symbol(s, v, flavor, dir), variant_field(i));
        }
    }
    if flavor == Flavor::Standalone && !s.variants.is_empty() {
        for &dir in &s.directions {
            push(pointer_symbol(s, dir), field("name"));
        }
    }
    out
}

/// The list of names reserved on `arch` (see `reserved/generate.sh`).
fn reserved_list(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => include_str!("reserved/x86_64.txt"),
        Arch::I386 => include_str!("reserved/i386.txt"),
        Arch::Armv6 => include_str!("reserved/armv6.txt"),
        Arch::Aarch64 => include_str!("reserved/aarch64.txt"),
        Arch::Riscv64 => include_str!("reserved/riscv64.txt"),
    }
}

fn reserved_set(arch: Arch) -> &'static HashSet<&'static str> {
    static SETS: OnceLock<[HashSet<&'static str>; 5]> = OnceLock::new();
    let sets = SETS.get_or_init(|| {
        Arch::ALL.map(|a| {
            reserved_list(a)
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .collect()
        })
    });
    let i = Arch::ALL.iter().position(|&a| a == arch).expect("an arch");
    &sets[i]
}

/// Why `name` cannot be a symbol of a file for `arch`, if it cannot: the C
/// preprocessor that reads the `.S` holds a macro of that name (from the
/// kernel headers the linux template includes, gcc's predefined macros, or
/// the template itself), or it is a kernel configuration option's.
pub fn reserved_reason(arch: Arch, name: &str) -> Option<String> {
    if name.starts_with("CONFIG_") {
        return Some(format!(
            "`{name}` is in the kernel configuration's namespace (`CONFIG_*` options are preprocessor macros): the symbol would come out as the option's value"
        ));
    }
    reserved_set(arch).contains(name).then(|| {
        format!(
            "`{name}` is a preprocessor macro where the generated {arch} file is assembled (a kernel header its linux template includes, gcc's predefined macros or the template's own; listed in generator/front/reserved/{arch}.txt): the symbol would come out as its expansion"
        )
    })
}

/// A located error at `field` of `s`'s file.
fn at(s: &Strategy, file: &Path, field: &FieldPath, msg: String) -> StrategyError {
    Locator::new(file, &s.text).at_field(field, msg)
}

/// `file:line` of a field, for messages that name another place.
fn place(s: &Strategy, file: &Path, field: &FieldPath) -> String {
    let e = at(s, file, field, String::new());
    format!("{}:{} (`{}`)", file.display(), e.line, e.field)
}

/// Problems with the names of one validated strategy: a symbol that is a
/// macro where its file is assembled, two fields giving the same symbol,
/// and (with variants) two `.L` labels of one file spelt alike.
pub fn check_strategy(s: &Strategy, file: &Path) -> Vec<StrategyError> {
    let mut errors = Vec::new();
    let mut blamed = HashSet::new();
    for flavor in Flavor::ALL {
        let mut seen: HashMap<String, FieldPath> = HashMap::new();
        for sym in generated_symbols(s, flavor) {
            if let Some(why) = reserved_reason(s.arch, &sym.name) {
                if blamed.insert((sym.name.clone(), sym.field.to_string())) {
                    errors.push(at(s, file, &sym.field, why));
                }
                continue;
            }
            if let Some(first) = seen.get(&sym.name) {
                let key = (sym.name.clone(), sym.field.to_string());
                // Blame the name given in `[linux]` over the generated one.
                let given = |f: &FieldPath| f.to_string().starts_with("linux.");
                let (here, there) = if given(first) && !given(&sym.field) {
                    (first, &sym.field)
                } else {
                    (&sym.field, first)
                };
                if blamed.insert(key) {
                    errors.push(at(
                        s,
                        file,
                        here,
                        format!(
                            "the {flavor} file would define `{}` twice: {} gives it too",
                            sym.name,
                            place(s, file, there)
                        ),
                    ));
                }
                continue;
            }
            seen.insert(sym.name, sym.field);
        }
    }
    if errors.is_empty() && !s.variants.is_empty() {
        errors.extend(label_collisions(s, file));
    }
    errors
}

/// Two functions of one file (variant routines, the entry points) whose
/// `.L` labels could meet. Every label of a routine begins with its prefix
/// (`.L<variant>_<tag>_`, `.L<tag>_`, the entry code's `.L<symbol>_`), so
/// two labels can be spelt alike only if one prefix begins another: that
/// is refused, from the names alone, before anything is lowered.
fn label_collisions(s: &Strategy, file: &Path) -> Vec<StrategyError> {
    let mut fixed: Vec<Option<u32>> = vec![None];
    fixed.extend(s.fixed_sizes.iter().map(|&n| Some(n)));
    let mut prefixes: Vec<(String, FieldPath)> = vec![(format!(".L{}_", s.symbol), field("name"))];
    for &dir in &s.directions {
        for &n in &fixed {
            let tag = routine_tag(s, dir, n);
            prefixes.push((format!(".L{tag}_"), field("name")));
            for (i, v) in s.variants.iter().enumerate() {
                prefixes.push((format!(".L{}_", variant_tag(v, &tag)), variant_field(i)));
            }
        }
    }
    prefixes.sort_by(|a, b| a.0.cmp(&b.0));
    prefixes.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    let mut errors = Vec::new();
    for (i, (short, first)) in prefixes.iter().enumerate() {
        // Sorted: any prefix that `short` begins follows it directly.
        for (long, from) in &prefixes[i + 1..] {
            if !long.starts_with(short.as_str()) {
                break;
            }
            if first == from {
                continue;
            }
            let (here, there) = if from.to_string().starts_with("variants") {
                (from, first)
            } else {
                (first, from)
            };
            let msg = format!(
                "labels of this file could meet: every `{long}...` label also begins `{short}`, the prefix of the routines of {} (variant labels are `.L<variant>_<direction>_...`; rename a variant)",
                place(s, file, there)
            );
            errors.push(at(s, file, here, msg));
            return errors;
        }
    }
    errors
}

/// Strategies of one run whose files would collide: the same output file
/// (two strategies of one `name` and architecture) or the same exported
/// symbol in one architecture and flavour. Each error is in the later
/// file and names the earlier one's line.
pub fn check_run(run: &[(&Path, &Strategy)]) -> Vec<StrategyError> {
    let mut errors = Vec::new();
    let mut names: HashMap<(Arch, &str), usize> = HashMap::new();
    let mut symbols: HashMap<(Arch, Flavor, String), (usize, FieldPath)> = HashMap::new();
    for (k, &(file, s)) in run.iter().enumerate() {
        if let Some(&j) = names.get(&(s.arch, s.name.as_str())) {
            let (jfile, js) = run[j];
            errors.push(at(
                s,
                file,
                &field("name"),
                format!(
                    "another strategy of this run is named `{}` for {} too, at {}: both would be written to {}/<flavor>/{}.S",
                    s.name,
                    s.arch,
                    place(js, jfile, &field("name")),
                    s.arch,
                    s.name
                ),
            ));
            continue;
        }
        names.insert((s.arch, s.name.as_str()), k);
        'flavors: for flavor in Flavor::ALL {
            for sym in generated_symbols(s, flavor) {
                let key = (s.arch, flavor, sym.name.clone());
                if let Some((j, jfield)) = symbols.get(&key) {
                    let (jfile, js) = run[*j];
                    errors.push(at(
                        s,
                        file,
                        &sym.field,
                        format!(
                            "`{}` is exported by another {} {flavor} file of this run too, from {}: linked together, the two would clash",
                            sym.name,
                            s.arch,
                            place(js, jfile, jfield)
                        ),
                    ));
                    break 'flavors;
                }
                symbols.insert(key, (k, sym.field));
            }
        }
    }
    errors
}
