//! The entry points of a strategy with per-CPU variants
//! (`front/variant.rs`), as x86 [`Inst`]s — the same instruction type the
//! routines are selected into, printed by the one printer and encoded by
//! the JIT:
//!
//! - linux flavour: a chain of `ALTERNATIVE`s on `X86_FEATURE_*` bits,
//!   patched once at boot into NOPs and direct jumps (no CPUID at run time);
//! - standalone flavour: a pointer per entry point, resolved by CPUID on the
//!   first call (an ifunc without the dynamic linker), then one indirect jump.
//!
//! What each condition means (kernel bit, CPUID test) is the feature table
//! in `arch/cpu.rs`.

use super::inst::{Alu, Cc, Directive, FeatureTest, Inst, Reg, SymBase, SymRef};
use crate::arch::cpu::{
    names_family, CpuFeatures, Detect, Leaf7Reg, AMD, AMD_REP_GOOD_FROM, AMD_REP_GOOD_K8C,
    FEATURES, INTEL, INTEL_REP_GOOD_FAMILY, ZEN_FAMILY, ZEN_VENDORS,
};
use crate::arch::symbols;
use crate::backend::Function;
use crate::front::strategy::{Arch, Direction, Flavor, RoutineShape, Strategy};
use crate::front::variant::{CpuCondition, CpuFeature, Variant};
use crate::lower::variants::variant_symbol;

/// One entry point that picks a variant: its symbol and its instructions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub symbol: String,
    pub insts: Vec<Inst>,
}

/// Whether `s` in `flavor` has one entry point for both directions (a
/// linux routine serving both; the standalone flavour exports two names).
fn one_entry(s: &Strategy, flavor: Flavor) -> bool {
    flavor == Flavor::Linux && s.routine == RoutineShape::Both
}

fn ptr_width(s: &Strategy) -> u32 {
    if s.arch == Arch::X86_64 {
        8
    } else {
        4
    }
}

/// The entry points that pick a variant, one per direction, or one for a
/// linux routine serving both (none without variants). In the standalone
/// flavour the resolver and the pointers follow the last entry point.
pub fn entries(s: &Strategy, flavor: Flavor) -> Vec<Entry> {
    if s.variants.is_empty() {
        return Vec::new();
    }
    if flavor == Flavor::Linux && !s.linux.feature_entries.is_empty() {
        return feature_plans(s)
            .into_iter()
            .filter(|p| !p.absorbed)
            .map(|p| {
                let mut insts = p.slots;
                insts.push(Inst::Jmp { target: p.enters });
                Entry {
                    symbol: p.symbol,
                    insts,
                }
            })
            .collect();
    }
    let directions = if one_entry(s, flavor) {
        &s.directions[..1]
    } else {
        &s.directions[..]
    };
    let mut out: Vec<Entry> = directions
        .iter()
        .map(|&dir| match flavor {
            Flavor::Linux => linux_entry(s, dir),
            Flavor::Standalone => standalone_entry(s, dir),
        })
        .collect();
    if flavor == Flavor::Standalone {
        out.last_mut()
            .expect("a direction")
            .insts
            .extend(resolver(s));
    }
    out
}

/// [`entries`], printed.
pub fn per_cpu_entries(s: &Strategy, flavor: Flavor) -> Vec<Function> {
    entries(s, flavor)
        .into_iter()
        .map(|e| {
            let mut f = print_insts(s, e.insts, flavor);
            f.symbol = e.symbol;
            f
        })
        .collect()
}

/// Instructions with no user access, printed.
fn print_insts(s: &Strategy, insts: Vec<Inst>, flavor: Flavor) -> Function {
    let lines: Vec<super::Line> = insts
        .into_iter()
        .map(|inst| super::Line {
            inst,
            user: None,
            fixup_start: false,
        })
        .collect();
    super::print(&lines, ptr_width(s), flavor)
}

/// The linux entry: per variant in order, one slot of `ALTERNATIVE`s
/// that the kernel patches at boot into `jmp` to the variant where its
/// condition holds (two feature tests in one `ALTERNATIVE_2`) and into
/// NOPs elsewhere; the default's plain `jmp` last. After boot a CPU runs
/// the NOPs of the variants before its own and one jump, so a variant
/// late in the order costs no more branches than the first. A condition
/// of more than two tests first jumps past the slot, to the next variant,
/// where one of the others fails.
fn linux_entry(s: &Strategy, dir: Direction) -> Entry {
    let mut b = Vec::new();
    let tag = if one_entry(s, Flavor::Linux) {
        "copy"
    } else {
        dir.tag()
    };
    for v in &s.variants {
        let target = variant_symbol(s, v, Flavor::Linux, dir);
        b.push(variant_comment(v));
        let Some(when) = &v.when else {
            // The default, last: every CPU no condition above took.
            b.push(Inst::Jmp { target });
            break;
        };
        let terms: Vec<Vec<FeatureTest>> = when.any.iter().map(feature_tests).collect();
        push_slots(&mut b, s, v, &terms, &target, tag);
    }
    Entry {
        symbol: symbols::entry(s, Flavor::Linux, dir, None),
        insts: b,
    }
}

fn variant_comment(v: &Variant) -> Inst {
    Inst::Comment(format!("variant `{}`: {}", v.name, v.condition_text()))
}

/// One variant's slots, one per conjunction of its condition (`terms`,
/// each its tests): a jump to `target` where every test of one holds,
/// NOPs elsewhere (see [`linux_entry`]); `tag` keeps the labels of
/// several entry points in one file apart.
fn push_slots(
    b: &mut Vec<Inst>,
    s: &Strategy,
    v: &Variant,
    terms: &[Vec<FeatureTest>],
    target: &str,
    tag: &str,
) {
    for (k, tests) in terms.iter().enumerate() {
        let Some((&first, rest)) = tests.split_first() else {
            continue;
        };
        let beyond_two = rest.get(1..).unwrap_or_default();
        let next = if terms.len() > 1 {
            format!("{tag}_not_{}_{k}", v.name)
        } else {
            format!("{tag}_not_{}", v.name)
        };
        let next = symbols::local(s, &next);
        for &t in beyond_two {
            b.push(Inst::AltJmp {
                target: next.clone(),
                first: t.negated(),
                and: None,
            });
        }
        b.push(Inst::AltJmp {
            target: target.to_string(),
            first,
            and: rest.first().copied(),
        });
        if !beyond_two.is_empty() {
            b.push(Inst::Label(next));
        }
    }
}

/// One entry point of [`LinuxOptions::feature_entries`] for a per-CPU
/// strategy: a slot for each variant its CPUs may take but one (tests its
/// `given` condition decides left out), then that one, which every CPU
/// the slots let through takes: the last, or the one before it where that
/// one is a CPU family's (one test left, of a family bit such as `zen`)
/// and no other entry point takes it; then the last variant's slot tests
/// the family bit's absence. The entry falls into the variant's code
/// (`absorbed`: the variant's routine is printed and placed right after
/// the slots, its symbol an inner label) unless another entry point jumps
/// to it or falls into it; else it jumps.
///
/// [`LinuxOptions::feature_entries`]: crate::front::strategy::LinuxOptions::feature_entries
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeaturePlan {
    pub symbol: String,
    pub slots: Vec<Inst>,
    /// The routine of the variant the slots let through.
    pub enters: String,
    pub absorbed: bool,
}

/// [`FeaturePlan`]s of `s`, in the order of its feature entries (none
/// without variants).
pub fn feature_plans(s: &Strategy) -> Vec<FeaturePlan> {
    if s.variants.is_empty() {
        return Vec::new();
    }
    let dir = s.directions[0];
    let entries = &s.linux.feature_entries;
    let reached: Vec<Vec<&Variant>> = entries
        .iter()
        .map(|e| reached_variants(s, &e.given))
        .collect();
    let elsewhere = |i: usize, v: &Variant| {
        reached
            .iter()
            .enumerate()
            .any(|(j, r)| j != i && r.iter().any(|&w| std::ptr::eq(w, v)))
    };
    let mut plans: Vec<FeaturePlan> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // Per conjunction a CPU of this entry may meet, its tests
            // `given` leaves open.
            let undecided = |v: &Variant| -> Vec<Vec<FeatureTest>> {
                v.when
                    .iter()
                    .flat_map(|w| &w.any)
                    .filter(|c| !contradicts(&e.given, c))
                    .map(|c| {
                        feature_tests(c)
                            .into_iter()
                            .filter(|t| !decided(&e.given, t.feature))
                            .collect()
                    })
                    .collect()
            };
            let (&last, before) = reached[i]
                .split_last()
                .expect("the default is always reached");
            // The variant entered, the ones slotted before it, and the
            // last one's slot after them when the entry falls into the
            // family's variant before it.
            let family_test = |v: &Variant| match &undecided(v)[..] {
                [term] => match term[..] {
                    [t] if t.present && names_family(t.feature) => Some(t),
                    _ => None,
                },
                _ => None,
            };
            let (enters, slotted, last_slot) = before
                .split_last()
                .filter(|&(&v, _)| !elsewhere(i, v))
                .and_then(|(&v, rest)| family_test(v).map(|t| (v, rest, Some(t.negated()))))
                .unwrap_or((last, before, None));
            let mut slots = Vec::new();
            let mut slot = |v: &Variant, terms: &[Vec<FeatureTest>]| {
                let target = variant_symbol(s, v, Flavor::Linux, dir);
                slots.push(variant_comment(v));
                push_slots(&mut slots, s, v, terms, &target, &e.symbol);
            };
            for &w in slotted {
                slot(w, &undecided(w));
            }
            if let Some(absent) = last_slot {
                slot(last, &[vec![absent]]);
            }
            slots.push(variant_comment(enters));
            FeaturePlan {
                symbol: e.symbol.clone(),
                slots,
                enters: variant_symbol(s, enters, Flavor::Linux, dir),
                absorbed: false,
            }
        })
        .collect();
    let jumped_to: Vec<String> = plans
        .iter()
        .flat_map(|p| &p.slots)
        .filter_map(|i| match i {
            Inst::AltJmp { target, .. } => Some(target.clone()),
            _ => None,
        })
        .collect();
    for i in 0..plans.len() {
        let enters = &plans[i].enters;
        let taken = jumped_to.contains(enters) || plans[..i].iter().any(|p| p.enters == *enters);
        plans[i].absorbed = !taken;
    }
    plans
}

/// Whether no CPU `given` describes meets `c`.
fn contradicts(given: &CpuCondition, c: &CpuCondition) -> bool {
    c.require.iter().any(|f| given.exclude.contains(f))
        || c.exclude.iter().any(|f| given.require.contains(f))
}

/// Whether `given` states `feature`.
fn decided(given: &CpuCondition, feature: CpuFeature) -> bool {
    given.require.contains(&feature) || given.exclude.contains(&feature)
}

/// The variants of `s` some CPU that `given` describes selects, in order:
/// every assignment of the features `given` leaves open that a kernel can
/// report ([`CpuFeatures::kernel_can_report`]), tried.
fn reached_variants<'s>(s: &'s Strategy, given: &CpuCondition) -> Vec<&'s Variant> {
    let open: Vec<CpuFeature> = CpuFeature::ALL
        .into_iter()
        .filter(|&f| !decided(given, f))
        .collect();
    let required = CpuFeatures::from_list(&given.require);
    let mut reached = vec![false; s.variants.len()];
    for open_bits in CpuFeatures::subsets(&open) {
        let features = required.union(open_bits);
        if !features.kernel_can_report() {
            continue;
        }
        if let Some(v) = crate::lower::variants::select(s, features) {
            let i = s
                .variants
                .iter()
                .position(|w| std::ptr::eq(w, v))
                .expect("one of them");
            reached[i] = true;
        }
    }
    s.variants
        .iter()
        .zip(reached)
        .filter_map(|(v, r)| r.then_some(v))
        .collect()
}

/// The functions `out` of `s`'s linux file given the names of its
/// feature entries (`LinuxOptions::feature_entries`): without variants the
/// routine's further names; with them, each absorbed [`FeaturePlan`]'s
/// slots put before its variant's code, the variant's symbol an inner
/// label of the entry point (the entries that jump are
/// [`per_cpu_entries`]').
pub fn name_feature_entries(s: &Strategy, out: &mut [Function]) {
    let entries = &s.linux.feature_entries;
    if entries.is_empty() {
        return;
    }
    if s.variants.is_empty() {
        let routine = s.linux.both.as_deref();
        if let Some(f) = out.iter_mut().find(|f| Some(f.symbol.as_str()) == routine) {
            f.aliases = entries
                .iter()
                .map(|e| e.symbol.clone())
                .filter(|e| Some(e.as_str()) != routine)
                .collect();
        }
        return;
    }
    for p in feature_plans(s).into_iter().filter(|p| p.absorbed) {
        let Some(f) = out.iter_mut().find(|f| f.symbol == p.enters) else {
            continue;
        };
        let slots = print_insts(s, p.slots, Flavor::Linux);
        let mut body = slots.body;
        body.push(format!("SYM_INNER_LABEL({}, SYM_L_GLOBAL)", p.enters));
        body.append(&mut f.body);
        f.body = body;
        f.symbol = p.symbol;
    }
}

/// A conjunction's tests ([`CpuCondition::tests`]).
fn feature_tests(c: &CpuCondition) -> Vec<FeatureTest> {
    c.tests()
        .map(|(feature, present)| FeatureTest { feature, present })
        .collect()
}

/// The linux entry point of `s` for `dir` as `apply_alternatives()`
/// leaves it on a CPU with `features`: each slot a `jmp` or NOPs.
pub fn linux_entry_after_boot(
    s: &Strategy,
    dir: Direction,
    features: CpuFeatures,
) -> Vec<AfterBoot> {
    after_boot(linux_entry(s, dir).insts, features)
}

/// Entry-point instructions as `apply_alternatives()` leaves them on a
/// CPU with `features`.
pub fn after_boot(insts: Vec<Inst>, features: CpuFeatures) -> Vec<AfterBoot> {
    insts
        .into_iter()
        .filter_map(|i| match i {
            Inst::AltJmp { target, first, and } => Some(
                if first.holds(features) && and.is_none_or(|t| t.holds(features)) {
                    AfterBoot::Jmp(target)
                } else {
                    AfterBoot::Nops
                },
            ),
            Inst::Jmp { target } => Some(AfterBoot::Jmp(target)),
            Inst::Label(l) => Some(AfterBoot::Label(l)),
            _ => None,
        })
        .collect()
}

/// One piece of a patched linux entry point ([`linux_entry_after_boot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterBoot {
    /// A 5-byte `jmp` to a routine or to a label of the entry.
    Jmp(String),
    /// A slot of 5 bytes of NOPs.
    Nops,
    Label(String),
}

/// Register choices of the standalone resolver.
struct Regs {
    /// Feature mask, highest CPUID leaf, vendor code ([`VENDORS`]): kept
    /// across `cpuid`.
    found: Reg,
    max_leaf: Reg,
    vendor: Reg,
    /// Saved and restored: callee-saved ones `cpuid` or the above clobber,
    /// and the argument registers `cpuid` clobbers.
    saved: &'static [Reg],
}

fn regs(arch: Arch) -> Regs {
    match arch {
        // SysV: rdx (n) is an argument cpuid clobbers, rbx is callee-saved.
        Arch::X86_64 => Regs {
            found: Reg::R8,
            max_leaf: Reg::R9,
            vendor: Reg::R10,
            saved: &[Reg::Bx, Reg::Dx],
        },
        // cdecl: arguments are on the stack; ebx, esi, edi, ebp are callee-saved.
        _ => Regs {
            found: Reg::Si,
            max_leaf: Reg::Di,
            vendor: Reg::Bp,
            saved: &[Reg::Bx, Reg::Si, Reg::Di, Reg::Bp],
        },
    }
}

fn resolve_label(s: &Strategy, dir: Direction) -> String {
    symbols::local(s, &format!("{}_resolve", dir.tag()))
}

/// The standalone entry: one indirect jump through a pointer that first
/// holds this entry's resolver stub.
fn standalone_entry(s: &Strategy, dir: Direction) -> Entry {
    let sym = symbols::entry(s, Flavor::Standalone, dir, None);
    let ptr = symbols::pointer(s, dir);
    let mut b = match s.arch {
        Arch::X86_64 => vec![Inst::JmpThrough(SymRef {
            sym: ptr,
            base: SymBase::Rip,
        })],
        _ => {
            let pc = symbols::local(s, &format!("{}_pc", dir.tag()));
            vec![
                Inst::Call { target: pc.clone() },
                Inst::Label(pc.clone()),
                Inst::Pop(Reg::Ax),
                Inst::JmpThrough(SymRef {
                    sym: ptr,
                    base: SymBase::Anchor {
                        reg: Reg::Ax,
                        anchor: pc,
                    },
                }),
            ]
        }
    };
    b.extend([
        Inst::Comment("first call: pick the variant for this CPU, then enter it".into()),
        Inst::Label(resolve_label(s, dir)),
        Inst::Call {
            target: symbols::local(s, "resolve"),
        },
        Inst::Jmp {
            target: sym.clone(),
        },
    ]);
    Entry {
        symbol: sym,
        insts: b,
    }
}

fn alu_imm(op: Alu, reg: Reg, imm: u32, hex: bool) -> Inst {
    Inst::AluImm {
        op,
        width: 4,
        reg,
        imm: imm as i32,
        hex,
    }
}

fn alu(op: Alu, dst: Reg, src: Reg) -> Inst {
    Inst::AluReg {
        op,
        width: 4,
        dst,
        src,
    }
}

fn mov(dst: Reg, src: Reg) -> Inst {
    Inst::Mov { width: 4, dst, src }
}

fn mov_imm(dst: Reg, imm: u32) -> Inst {
    Inst::MovImm { width: 4, dst, imm }
}

fn jcc(cc: Cc, target: String) -> Inst {
    Inst::Jcc { cc, target }
}

/// The vendors the resolver tells apart, by the code it keeps in
/// `regs(arch).vendor` (0: any other): the two Zen vendors first, so that
/// "Zen vendor" is a code in `1..=ZEN_VENDORS.len()`.
const VENDORS: [(&str, [u32; 3]); 3] = [ZEN_VENDORS[0], ZEN_VENDORS[1], ("GenuineIntel", INTEL)];

/// A vendor's code in [`VENDORS`].
fn vendor_code(words: [u32; 3]) -> u32 {
    1 + VENDORS
        .iter()
        .position(|(_, w)| *w == words)
        .expect("a listed vendor") as u32
}

/// The resolver's feature detection: CPUID into the feature mask in
/// `regs(arch).found`, labels named by `l`. Ends at the label `select`.
/// Leaf 0 gives the vendor code, leaf 1 the family (ecx), model (edx) and
/// signature (eax) for `rep_good`, `zen` and the Zen generations, leaf 7
/// the feature bits.
pub fn detection(arch: Arch, l: &dyn Fn(&str) -> String) -> Vec<Inst> {
    let r = regs(arch);
    let mut b = vec![
        alu(Alu::Xor, r.found, r.found),
        alu(Alu::Xor, r.vendor, r.vendor),
        alu(Alu::Xor, Reg::Ax, Reg::Ax),
        Inst::Cpuid,
        mov(r.max_leaf, Reg::Ax),
    ];
    for (i, (vendor, [ebx, edx, ecx])) in VENDORS.iter().enumerate() {
        let skip = l(&format!("vendor{i}"));
        b.push(Inst::Comment(vendor.to_string()));
        for (reg, v) in [(Reg::Bx, ebx), (Reg::Dx, edx), (Reg::Cx, ecx)] {
            b.push(alu_imm(Alu::Cmp, reg, *v, true));
            b.push(jcc(Cc::Ne, skip.clone()));
        }
        b.push(mov_imm(r.vendor, i as u32 + 1));
        b.push(Inst::Label(skip));
    }
    let shr = |reg, imm| Inst::Shr { width: 4, reg, imm };
    let set = |f: CpuFeature| alu_imm(Alu::Or, r.found, f.bit(), false);
    let amd = vendor_code(AMD);
    b.extend([
        Inst::Comment("family: base, plus extended when base is 0xf".into()),
        mov_imm(Reg::Ax, 1),
        Inst::Cpuid,
        mov(Reg::Cx, Reg::Ax),
        shr(Reg::Cx, 8),
        alu_imm(Alu::And, Reg::Cx, 0xf, true),
        alu_imm(Alu::Cmp, Reg::Cx, 0xf, true),
        jcc(Cc::Ne, l("family")),
        mov(Reg::Dx, Reg::Ax),
        shr(Reg::Dx, 20),
        alu_imm(Alu::And, Reg::Dx, 0xff, true),
        alu(Alu::Add, Reg::Cx, Reg::Dx),
        Inst::Label(l("family")),
        Inst::Comment(
            "rep_good: AMD by signature, Hygon always, Intel family 6 (x86_64's amd.c, hygon.c, intel.c)"
                .into(),
        ),
        alu_imm(Alu::Cmp, r.vendor, amd, false),
        jcc(Cc::Ne, l("rep_good_not_amd")),
        alu_imm(Alu::Cmp, Reg::Ax, AMD_REP_GOOD_FROM, true),
        jcc(Cc::Ae, l("rep_good")),
        alu_imm(Alu::Cmp, Reg::Ax, AMD_REP_GOOD_K8C.0, true),
        jcc(Cc::B, l("no_rep_good")),
        alu_imm(Alu::Cmp, Reg::Ax, AMD_REP_GOOD_K8C.1, true),
        jcc(Cc::B, l("rep_good")),
        Inst::Jmp {
            target: l("no_rep_good"),
        },
        Inst::Label(l("rep_good_not_amd")),
        alu_imm(Alu::Cmp, r.vendor, vendor_code(ZEN_VENDORS[1].1), false),
        jcc(Cc::E, l("rep_good")),
        alu_imm(Alu::Cmp, r.vendor, vendor_code(INTEL), false),
        jcc(Cc::Ne, l("no_rep_good")),
        alu_imm(Alu::Cmp, Reg::Cx, INTEL_REP_GOOD_FAMILY, true),
        jcc(Cc::Ne, l("no_rep_good")),
        Inst::Label(l("rep_good")),
        set(CpuFeature::RepGood),
        Inst::Label(l("no_rep_good")),
        Inst::Comment("zen: a Zen vendor, family 0x17 and up".into()),
        alu(Alu::Test, r.vendor, r.vendor),
        jcc(Cc::Z, l("not_zen")),
        alu_imm(Alu::Cmp, r.vendor, ZEN_VENDORS.len() as u32, false),
        jcc(Cc::A, l("not_zen")),
        alu_imm(Alu::Cmp, Reg::Cx, ZEN_FAMILY, true),
        jcc(Cc::B, l("not_zen")),
        set(CpuFeature::Zen),
        Inst::Label(l("not_zen")),
        Inst::Comment("Zen generation: AMD, by family and model (amd.c)".into()),
        alu_imm(Alu::Cmp, r.vendor, amd, false),
        jcc(Cc::Ne, l("zen_gen_done")),
        Inst::Comment("model: base | extended << 4 (base family 0xf on every Zen)".into()),
        mov(Reg::Dx, Reg::Ax),
        shr(Reg::Dx, 4),
        alu_imm(Alu::And, Reg::Dx, 0xf, true),
        shr(Reg::Ax, 12),
        alu_imm(Alu::And, Reg::Ax, 0xf0, true),
        alu(Alu::Or, Reg::Dx, Reg::Ax),
    ]);
    for info in FEATURES {
        let Detect::ZenGeneration { family, models } = info.detect else {
            continue;
        };
        let name = info.feature.name();
        let next = l(&format!("not_{name}"));
        b.push(alu_imm(Alu::Cmp, Reg::Cx, family, true));
        b.push(jcc(Cc::Ne, next.clone()));
        for (i, &(lo, hi)) in models.iter().enumerate() {
            let miss = l(&format!("not_{name}_{i}"));
            if lo > 0 {
                b.push(alu_imm(Alu::Cmp, Reg::Dx, lo, true));
                b.push(jcc(Cc::B, miss.clone()));
            }
            b.push(alu_imm(Alu::Cmp, Reg::Dx, hi, true));
            b.push(jcc(Cc::A, miss.clone()));
            b.push(set(info.feature));
            b.push(Inst::Jmp {
                target: l("zen_gen_done"),
            });
            b.push(Inst::Label(miss));
        }
        b.push(Inst::Label(next));
    }
    b.extend([
        Inst::Label(l("zen_gen_done")),
        Inst::Comment("leaf 7, when the CPU has it".into()),
        alu_imm(Alu::Cmp, r.max_leaf, 7, false),
        jcc(Cc::B, l("select")),
        mov_imm(Reg::Ax, 7),
        alu(Alu::Xor, Reg::Cx, Reg::Cx),
        Inst::Cpuid,
    ]);
    for info in FEATURES {
        if let Detect::Leaf7 { reg, bit } = info.detect {
            let skip = l(&format!("no_{}", info.feature.name()));
            let reg = match reg {
                Leaf7Reg::Ebx => Reg::Bx,
                Leaf7Reg::Edx => Reg::Dx,
            };
            b.push(alu_imm(Alu::Test, reg, 1 << bit, true));
            b.push(jcc(Cc::Z, skip.clone()));
            b.push(alu_imm(Alu::Or, r.found, info.feature.bit(), false));
            b.push(Inst::Label(skip));
        }
    }
    b.push(Inst::Label(l("select")));
    b
}

/// The register [`detection`] leaves the feature mask in.
pub fn mask_register(arch: Arch) -> Reg {
    regs(arch).found
}

/// The registers [`detection`] clobbers that a caller may need saved.
pub fn saved_registers(arch: Arch) -> &'static [Reg] {
    regs(arch).saved
}

/// The resolver: CPUID into a feature mask, the first variant whose
/// condition holds, every entry's pointer set to it. Races are harmless:
/// every caller computes the same pointers and stores them whole.
fn resolver(s: &Strategy) -> Vec<Inst> {
    let r = regs(s.arch);
    let x64 = s.arch == Arch::X86_64;
    let pw = ptr_width(s);
    let l = |name: &str| symbols::local(s, name);
    let mut b = vec![
        Inst::Blank,
        Inst::Comment(format!(
            "resolver: feature mask in {} (bit i = {})",
            r.found.name(4),
            CpuFeature::names().join(", ")
        )),
        Inst::Label(l("resolve")),
    ];
    b.extend(r.saved.iter().map(|&reg| Inst::PushBare(reg)));
    b.extend(detection(s.arch, &l));
    if !x64 {
        // i386 has no rip-relative addressing: a base for the stores below.
        b.push(Inst::Call { target: l("base") });
        b.push(Inst::Label(l("base")));
        b.push(Inst::Pop(Reg::Dx));
    }
    for (i, v) in s.variants.iter().enumerate() {
        if let Some(when) = &v.when {
            b.push(Inst::Comment(format!("variant `{}`: {when}", v.name)));
            for c in &when.any {
                b.push(mov(Reg::Ax, r.found));
                b.push(alu_imm(Alu::And, Reg::Ax, c.mask(), false));
                b.push(alu_imm(Alu::Cmp, Reg::Ax, c.want(), false));
                b.push(jcc(Cc::E, l(&format!("pick{i}"))));
            }
        }
    }
    let at = |sym: String| SymRef {
        sym,
        base: if x64 {
            SymBase::Rip
        } else {
            SymBase::Anchor {
                reg: Reg::Dx,
                anchor: l("base"),
            }
        },
    };
    // No test held: fall through into the default's pick, the last variant.
    let n = s.variants.len();
    for i in std::iter::once(n - 1).chain(0..n - 1) {
        let v = &s.variants[i];
        b.push(Inst::Label(l(&format!("pick{i}"))));
        for &dir in &s.directions {
            b.push(Inst::LeaSym {
                width: pw,
                dst: Reg::Ax,
                mem: at(variant_symbol(s, v, Flavor::Standalone, dir)),
            });
            b.push(Inst::StoreSym {
                width: pw,
                reg: Reg::Ax,
                mem: at(symbols::pointer(s, dir)),
            });
        }
        b.push(Inst::Jmp {
            target: l("resolved"),
        });
    }
    b.push(Inst::Label(l("resolved")));
    b.extend(r.saved.iter().rev().map(|&reg| Inst::PopBare(reg)));
    b.push(Inst::Ret);
    b.push(Inst::Blank);
    b.push(Inst::Directive(Directive::PushData));
    b.push(Inst::Directive(Directive::Balign(pw)));
    for &dir in &s.directions {
        let p = symbols::pointer(s, dir);
        b.extend([
            Inst::Directive(Directive::Globl(p.clone())),
            Inst::Directive(Directive::Hidden(p.clone())),
            Inst::Directive(Directive::TypeObject(p.clone())),
            Inst::Directive(Directive::Size(p.clone(), pw)),
            Inst::Label(p),
            Inst::Directive(Directive::Pointer {
                width: pw,
                label: resolve_label(s, dir),
            }),
        ]);
    }
    b.push(Inst::Directive(Directive::PopSection));
    b
}
