//! Random *valid* strategies for the property and cross-check tests:
//! raw random choices ([`Spec`]) that [`toml_of`] bends into a strategy
//! file the validator accepts, for x86_64 or i386, so shrinking works on
//! the choices and every knob is reachable.
#![allow(dead_code)]

pub mod fixup_mutants;
pub mod kernel_source;
pub mod mutant;
pub mod site;
pub mod source_lines;
pub mod static_check;

use std::fmt::Write as _;

/// The catalog strategy `name` (a test names one that exists).
pub fn catalog_strategy(name: &str) -> copygen::front::strategy::Strategy {
    copygen::front::catalog::catalog()
        .expect("the catalog loads")
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no catalog strategy {name}"))
}

use copygen::front::strategy::Arch;
use proptest::prelude::*;

#[derive(Debug, Clone)]
pub struct MethodSpec {
    pub kind: u8,
    width: u8,
    regs: u32,
    repeat: u32,
    interleaved: bool,
    prefetch: Option<(u8, Vec<u32>)>,
    align: Option<(u8, u32, u32)>,
    tail: u8,
    unit: u8,
}

#[derive(Debug, Clone)]
pub enum Cond {
    Alias(u32, u32),
    Aligned(u8, u32),
}

#[derive(Debug, Clone)]
pub struct ClassSpec {
    cut: u32,
    method: MethodSpec,
    guards: Vec<(Cond, MethodSpec)>,
}

#[derive(Debug, Clone)]
pub struct Spec {
    dirs: u8,
    exact: bool,
    zero_tail: bool,
    rep_movs_convention: bool,
    uaccess_routine: bool,
    /// i386 only: the 2002 absolute `__ex_table` format.
    absolute_extable: bool,
    fixed: Vec<u32>,
    classes: Vec<ClassSpec>,
    /// `[alias_first]`: its band, which main class it is tested from, and
    /// its size classes.
    alias_first: Option<((u32, u32), u8, Vec<ClassSpec>)>,
}

fn method_spec() -> impl Strategy<Value = MethodSpec> {
    (
        (0u8..4, 0u8..4, 0u32..6, 1u32..9, any::<bool>()),
        proptest::option::weighted(0.3, (0u8..3, proptest::collection::vec(0u32..4096, 1..4))),
        proptest::option::weighted(0.4, (0u8..3, 1u32..7, 0u32..100)),
        (0u8..4, 0u8..3),
    )
        .prop_map(
            |((kind, width, regs, repeat, interleaved), prefetch, align, (tail, unit))| {
                MethodSpec {
                    kind,
                    width,
                    regs,
                    repeat,
                    interleaved,
                    prefetch,
                    align,
                    tail,
                    unit,
                }
            },
        )
}

fn cond() -> impl Strategy<Value = Cond> {
    prop_oneof![
        (0u32..4096, 0u32..4096).prop_map(|(a, b)| Cond::Alias(a.min(b), a.max(b))),
        (0u8..3, 1u32..13).prop_map(|(p, e)| Cond::Aligned(p, e)),
    ]
}

fn class_spec() -> impl Strategy<Value = ClassSpec> {
    (
        1u32..400,
        method_spec(),
        proptest::collection::vec((cond(), method_spec()), 0..3),
    )
        .prop_map(|(cut, method, guards)| ClassSpec {
            cut,
            method,
            guards,
        })
}

pub fn spec() -> impl Strategy<Value = Spec> {
    (
        (
            0u8..3,
            any::<bool>(),
            any::<bool>(),
            proptest::bool::weighted(0.2),
            any::<bool>(),
            any::<bool>(),
        ),
        proptest::collection::vec(1u32..=64, 0..4),
        proptest::collection::vec(class_spec(), 1..5),
        proptest::option::weighted(
            0.25,
            (
                (0u32..4096, 0u32..4096).prop_map(|(a, b)| (a.min(b), a.max(b))),
                any::<u8>(),
                proptest::collection::vec(class_spec(), 1..3),
            ),
        ),
    )
        .prop_map(
            |(
                (dirs, exact, zero_tail, rep_movs_convention, uaccess_routine, absolute_extable),
                fixed,
                classes,
                alias_first,
            )| Spec {
                dirs,
                exact,
                zero_tail,
                rep_movs_convention,
                uaccess_routine,
                absolute_extable,
                fixed,
                classes,
                alias_first,
            },
        )
}

const POINTERS: [&str; 3] = ["dst", "src", "both"];

/// Whether guard condition `a` implies `b` (alias bands inside one another;
/// an alignment of at least `b`'s, of the same pointer or of both).
fn implies(a: &Cond, b: &Cond) -> bool {
    match (a, b) {
        (Cond::Alias(lo, hi), Cond::Alias(l2, h2)) => l2 <= lo && hi <= h2,
        (Cond::Aligned(p, e), Cond::Aligned(q, f)) => e >= f && (p == q || *p == 2),
        _ => false,
    }
}

/// The TOML text of `m` as a method named `name` serving sizes `lo..=hi`,
/// with invalid combinations bent into valid ones.
fn method_toml(
    out: &mut String,
    name: &str,
    m: &MethodSpec,
    arch: Arch,
    budget: u32,
    exact: bool,
    (lo, hi): (u64, Option<u64>),
) {
    let i386 = arch == Arch::I386;
    let arm = arch == Arch::Armv6;
    let a64 = arch == Arch::Aarch64;
    let rv = arch == Arch::Riscv64;
    // i386: no 8-byte registers, and only eax, edx, ebx have a byte form;
    // armv6: bytes and words only; aarch64: up to 16-byte register pairs
    // (`unit` only matters to rep_movs, which aarch64 has not).
    let width = match arch {
        Arch::I386 => 1u32 << (m.width % 3),
        Arch::Armv6 => [1, 4][m.width as usize % 2],
        Arch::X86_64 => 1u32 << m.width,
        Arch::Aarch64 => [1, 2, 4, 8, 16][(m.width + m.unit) as usize % 5],
        Arch::Riscv64 => 1u32 << m.width,
    };
    let budget = if i386 && width == 1 {
        budget.min(3)
    } else if width == 16 {
        budget / 2
    } else {
        budget
    };
    let _ = writeln!(out, "[methods.{name}]");
    let head_tail_fits = hi.is_some_and(|h| h <= 256);
    match m.kind {
        1 if head_tail_fits => {
            let _ = writeln!(
                out,
                "kind = \"head_tail\"\nwidth = {width}\nregisters = {}",
                1 + m.regs % budget
            );
        }
        2 => {
            let registers = 1 + m.regs % budget;
            let repeat = m.repeat.min(1024 / (width * registers)).max(1);
            let block = width * registers * repeat;
            let _ = writeln!(
                out,
                "kind = \"unrolled\"\nwidth = {width}\nblock = {block}\nregisters = {registers}"
            );
            let grouping = if m.interleaved {
                "interleaved"
            } else {
                "loads_first"
            };
            let _ = writeln!(out, "grouping = \"{grouping}\"");
            let tail = match m.tail {
                0 => "bytes",
                1 => "words",
                2 if lo >= width as u64 => "overlap",
                2 => "words",
                _ if arm || a64 || rv => "words",
                _ => "rep_movsb",
            };
            let _ = writeln!(out, "tail = \"{tail}\"");
            if let Some((kind, dists)) = &m.prefetch {
                let kind = if arm {
                    ["pld", "touch"][*kind as usize % 2]
                } else if a64 {
                    ["pldl1keep", "pldl1strm"][*kind as usize % 2]
                } else if rv {
                    "touch"
                } else {
                    ["nta", "t0", "touch"][*kind as usize]
                };
                let dists: Vec<String> = dists
                    .iter()
                    .map(|d| {
                        if kind == "touch" {
                            width * (1 + d % (4096 / width))
                        } else {
                            1 + d % 4096
                        }
                    })
                    .map(|d| d.to_string())
                    .collect();
                let _ = writeln!(
                    out,
                    "prefetch = {{ kind = \"{kind}\", distance = [{}] }}",
                    dists.join(", ")
                );
            }
            align_line(out, m, arch, exact);
        }
        // riscv64's own: shift-and-combine (its alignment is dst's word).
        3 if rv => {
            let _ = writeln!(
                out,
                "kind = \"shift_combine\"\nalign = {{ pointer = \"dst\", to = 8, min_size = {} }}",
                8 + m.regs % 64
            );
        }
        3 if !arm && !a64 => {
            let units: &[u32] = if i386 { &[1, 4] } else { &[1, 4, 8] };
            let unit = units[m.unit as usize % units.len()];
            let _ = writeln!(out, "kind = \"rep_movs\"\nunit = {unit}");
            align_line(out, m, arch, exact);
            // The rest of a wider unit by a byte loop half the time.
            if unit > 1 && m.regs % 2 == 1 {
                let _ = writeln!(out, "tail = \"bytes\"");
            }
        }
        _ => {
            let _ = writeln!(out, "kind = \"bytes\"");
        }
    }
    out.push('\n');
}

/// The method's alignment prologue, if it has one: on x86 under exact
/// precision (which alone allows it), one that aligns `dst` or `src` to at
/// most a register's width goes by one word (`by = "word"`) half the time.
fn align_line(out: &mut String, m: &MethodSpec, arch: Arch, exact: bool) {
    let Some((p, e, extra)) = m.align else { return };
    let to = 1u32 << e;
    let pointer = POINTERS[p as usize];
    let word = match arch {
        Arch::X86_64 => 8,
        Arch::I386 => 4,
        _ => 0,
    };
    let by = if exact && to <= word && pointer != "both" && extra % 2 == 1 {
        ", by = \"word\""
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "align = {{ pointer = \"{pointer}\", to = {to}, min_size = {}{by} }}",
        to + extra
    );
}

pub fn toml_of(s: &Spec, arch: Arch) -> String {
    let mut out = format!("name = \"prop\"\ndescription = \"random\"\narch = \"{arch}\"\n");
    let dirs = [
        "[\"from_user\", \"to_user\"]",
        "[\"from_user\"]",
        "[\"to_user\"]",
    ][s.dirs as usize];
    let _ = writeln!(out, "directions = {dirs}");
    let mut fixed = s.fixed.clone();
    fixed.sort_unstable();
    fixed.dedup();
    if !fixed.is_empty() {
        let f: Vec<String> = fixed.iter().map(u32::to_string).collect();
        let _ = writeln!(out, "fixed_sizes = [{}]", f.join(", "));
    }
    let zero_tail = s.zero_tail && s.dirs != 2;
    let precision = if s.exact { "exact" } else { "block" };
    let _ = writeln!(
        out,
        "\n[fault]\nprecision = \"{precision}\"\nzero_tail = {zero_tail}\n"
    );
    let uaccess = if s.uaccess_routine {
        "routine"
    } else {
        "caller"
    };
    if matches!(arch, Arch::X86_64 | Arch::I386) {
        let _ = writeln!(out, "[linux]\nuaccess = \"{uaccess}\"");
    }
    // The fewest scratch registers any flavour allows (arch/mod.rs).
    let budget = match arch {
        Arch::I386 => 4,
        Arch::Armv6 => 8,
        Arch::Aarch64 => 12,
        Arch::Riscv64 => 10,
        _ if s.rep_movs_convention => 1,
        _ => 6,
    };
    if arch == Arch::I386 && s.absolute_extable {
        let _ = writeln!(out, "extable = \"absolute\"");
    }
    if arch == Arch::X86_64 {
        let convention = if s.rep_movs_convention {
            "rep_movs"
        } else {
            "c"
        };
        let _ = writeln!(out, "convention = \"{convention}\"");
        if s.rep_movs_convention {
            // `rep movs{l,q}` keeps its rest in rax, where 6.1's
            // _ASM_EXTABLE_CPY puts the trap number (front/validate refuses it).
            let _ = writeln!(out, "extable = \"relative\"");
        }
    }
    out.push('\n');

    let mut dispatch = String::new();
    let starts = class_bounds(&s.classes, 0);
    // Where the alias-first test goes: where one of the main classes starts.
    let first = s.alias_first.as_ref().map(|((lo, hi), at, classes)| {
        ((*lo, *hi), starts[*at as usize % starts.len()].0, classes)
    });
    dispatch_toml(
        &mut out,
        &mut dispatch,
        "dispatch",
        "m",
        &s.classes,
        0,
        arch,
        budget,
        s.exact,
        |class_lo, c| {
            // A guard on a band inside the alias-first one is never taken.
            match (c, first) {
                (Cond::Alias(a, b), Some(((lo, hi), from, _))) => {
                    class_lo < from || !(lo <= *a && *b <= hi)
                }
                _ => true,
            }
        },
    );
    if let Some(((lo, hi), from, classes)) = first {
        let _ = writeln!(
            dispatch,
            "[alias_first]\nalias = [{lo}, {hi}]\nfrom = {from}\n"
        );
        dispatch_toml(
            &mut out,
            &mut dispatch,
            "alias_first.dispatch",
            "a",
            classes,
            from,
            arch,
            budget,
            s.exact,
            |_, c| {
                // Only copies in the band reach these classes.
                match c {
                    Cond::Alias(a, b) => !(*b < lo || hi < *a),
                    _ => true,
                }
            },
        );
    }
    out.push_str(&dispatch);
    out
}

/// The sizes of `classes` from `start`: each class's cut above `start`,
/// sorted, as `(lo, hi)` ranges, the last one open (fewer ranges than
/// classes where cuts coincide).
fn class_bounds(classes: &[ClassSpec], start: u64) -> Vec<(u64, Option<u64>)> {
    let mut cuts: Vec<u64> = classes[1..]
        .iter()
        .map(|c| c.cut as u64)
        .filter(|&c| c > start)
        .collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut bounds = Vec::new();
    let mut lo = start;
    for &c in &cuts {
        bounds.push((lo, Some(c - 1)));
        lo = c;
    }
    bounds.push((lo, None));
    bounds
}

/// The `[[<table>]]` entries of `classes` from size `start` (methods
/// `<prefix>N`, written to `out`), leaving out the guards `keep` refuses
/// (given the class's first size) and those the front end would refuse as
/// never taken.
#[allow(clippy::too_many_arguments)]
fn dispatch_toml(
    out: &mut String,
    dispatch: &mut String,
    table: &str,
    prefix: &str,
    classes: &[ClassSpec],
    start: u64,
    arch: Arch,
    budget: u32,
    exact: bool,
    keep: impl Fn(u64, &Cond) -> bool,
) {
    let bounds = class_bounds(classes, start);

    for (i, (&(lo, hi), c)) in bounds.iter().zip(classes).enumerate() {
        let name = format!("{prefix}{i}");
        method_toml(out, &name, &c.method, arch, budget, exact, (lo, hi));
        let sizes = match hi {
            Some(h) => format!("{lo}..={h}"),
            None => format!("{lo}.."),
        };
        let _ = writeln!(
            dispatch,
            "[[{table}]]\nsizes = \"{sizes}\"\nuse = \"{name}\""
        );
        let mut written: Vec<&Cond> = Vec::new();
        for (g, (cond, m)) in c.guards.iter().enumerate() {
            // A guard whose condition implies an earlier one's is never
            // taken, which the front end refuses: leave it out.
            if !keep(lo, cond) || written.iter().any(|w| implies(cond, w)) {
                continue;
            }
            written.push(cond);
            let gname = format!("{prefix}{i}_g{g}");
            method_toml(out, &gname, m, arch, budget, exact, (lo, hi));
            let _ = writeln!(dispatch, "[[{table}.guard]]");
            match cond {
                Cond::Alias(a, b) => {
                    let _ = writeln!(dispatch, "alias = [{a}, {b}]");
                }
                Cond::Aligned(p, e) => {
                    let _ = writeln!(
                        dispatch,
                        "aligned = {{ pointer = \"{}\", to = {} }}",
                        POINTERS[*p as usize],
                        1u32 << e
                    );
                }
            }
            let _ = writeln!(dispatch, "use = \"{gname}\"");
        }
        dispatch.push('\n');
    }
}
