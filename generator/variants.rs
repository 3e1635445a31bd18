//! Per-CPU variants: one strategy, the right code on each CPU.
//!
//! A strategy may hold variants, each a complete dispatch (its own size
//! classes, methods overridden by name) under a CPU condition; the first
//! variant whose condition holds wins and exactly one, the last, is the
//! default. Every variant is emitted as a complete routine of its own,
//! `<symbol>__<variant>_{from,to}_user`, so it is tested on any host; the
//! strategy's entry points `<symbol>_{from,to}_user` only pick one:
//!
//! - linux flavour: a chain of `ALTERNATIVE`s on `X86_FEATURE_*` bits,
//!   patched once at boot into NOPs and direct jumps (no CPUID at run time);
//! - standalone flavour: a pointer per entry point, resolved by CPUID on the
//!   first call (an ifunc without the dynamic linker), then one indirect jump.
//!
//! The feature table below is the one home of what each condition means: the
//! kernel's bit, the CPUID test the standalone resolver emits, and the same
//! test in Rust for `copygen bench`.

use std::fmt;

use crate::backend::Function;
use crate::front::strategy::{Arch, Direction, Flavor, RoutineShape, SizeClass, Strategy};
use crate::lower::routine::Routine;
use crate::lower::{entry_symbol, lower, Target};

/// A CPU property a variant's condition may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CpuFeature {
    /// Enhanced `rep movsb` (CPUID.7.0:EBX[9]).
    Erms,
    /// Fast short `rep movsb` (CPUID.7.0:EDX[4]).
    Fsrm,
    /// AMD Zen or later: vendor AuthenticAMD or HygonGenuine, family
    /// >= 0x17 (the kernel's synthetic `X86_FEATURE_ZEN`, set for exactly these).
    Zen,
}

/// How user space finds a feature.
enum Detect {
    /// `cpuid` leaf 7, subleaf 0: bit `bit` of register `reg` ("ebx"/"edx").
    Leaf7 { reg: &'static str, bit: u32 },
    /// AMD or Hygon, family >= 0x17.
    ZenFamily,
}

struct FeatureInfo {
    feature: CpuFeature,
    name: &'static str,
    kernel: &'static str,
    /// The kernel's number for it (`word * 32 + bit`, as in Linux 6.1 and
    /// 6.12's `cpufeatures.h`), which `.altinstructions` entries carry.
    kernel_bit: u16,
    detect: Detect,
}

/// Every feature, in the order of its bit in the resolver's feature mask.
const FEATURES: &[FeatureInfo] = &[
    FeatureInfo {
        feature: CpuFeature::Erms,
        name: "erms",
        kernel: "X86_FEATURE_ERMS",
        kernel_bit: 9 * 32 + 9,
        detect: Detect::Leaf7 { reg: "ebx", bit: 9 },
    },
    FeatureInfo {
        feature: CpuFeature::Fsrm,
        name: "fsrm",
        kernel: "X86_FEATURE_FSRM",
        kernel_bit: 18 * 32 + 4,
        detect: Detect::Leaf7 { reg: "edx", bit: 4 },
    },
    FeatureInfo {
        feature: CpuFeature::Zen,
        name: "zen",
        kernel: "X86_FEATURE_ZEN",
        kernel_bit: 7 * 32 + 28,
        detect: Detect::ZenFamily,
    },
];

/// Lowest family the kernel marks `X86_FEATURE_ZEN` (amd.c, hygon.c).
const ZEN_FAMILY: u32 = 0x17;
/// CPUID leaf 0 vendor strings (ebx, edx, ecx) that the kernel treats as Zen.
const ZEN_VENDORS: &[(&str, [u32; 3])] = &[
    ("AuthenticAMD", [0x6874_7541, 0x6974_6e65, 0x444d_4163]),
    ("HygonGenuine", [0x6f67_7948, 0x6e65_476e, 0x656e_6975]),
];

/// Whether the kernel sets `X86_FEATURE_ZEN` on a CPU with this CPUID
/// vendor string and family (what `copygen tune --merge` reads from a
/// tune's recorded CPU).
pub fn is_zen(vendor: &str, family: u32) -> bool {
    family >= ZEN_FAMILY && ZEN_VENDORS.iter().any(|(v, _)| *v == vendor)
}

impl CpuFeature {
    fn info(self) -> &'static FeatureInfo {
        FEATURES
            .iter()
            .find(|f| f.feature == self)
            .expect("every feature has a row")
    }
    fn bit(self) -> u32 {
        1 << FEATURES
            .iter()
            .position(|f| f.feature == self)
            .expect("every feature has a row")
    }
    pub fn name(self) -> &'static str {
        self.info().name
    }
    /// The kernel's `X86_FEATURE_*` macro.
    pub fn kernel_macro(self) -> &'static str {
        self.info().kernel
    }
    pub fn parse(s: &str) -> Option<CpuFeature> {
        FEATURES.iter().find(|f| f.name == s).map(|f| f.feature)
    }
    /// The feature the kernel numbers `bit`, if copygen knows it.
    pub fn from_kernel_bit(bit: u16) -> Option<CpuFeature> {
        FEATURES
            .iter()
            .find(|f| f.kernel_bit == bit)
            .map(|f| f.feature)
    }
    pub fn names() -> Vec<&'static str> {
        FEATURES.iter().map(|f| f.name).collect()
    }
}

/// Features present (`require`) and absent (`exclude`), all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuCondition {
    pub require: Vec<CpuFeature>,
    pub exclude: Vec<CpuFeature>,
}

impl CpuCondition {
    fn mask(&self) -> u32 {
        self.require
            .iter()
            .chain(&self.exclude)
            .map(|f| f.bit())
            .sum()
    }
    fn want(&self) -> u32 {
        self.require.iter().map(|f| f.bit()).sum()
    }
    pub fn holds(&self, found: CpuFeatures) -> bool {
        found.0 & self.mask() == self.want()
    }
}

impl CpuCondition {
    /// The condition with each feature spelt by `name`: `a && b && !c`.
    fn spelt(&self, name: fn(CpuFeature) -> &'static str) -> String {
        let words: Vec<String> = self
            .require
            .iter()
            .map(|&x| name(x).to_string())
            .chain(self.exclude.iter().map(|&x| format!("!{}", name(x))))
            .collect();
        words.join(" && ")
    }
    /// The condition in the kernel's bits: `X86_FEATURE_ZEN && X86_FEATURE_ERMS`.
    pub fn kernel_text(&self) -> String {
        self.spelt(CpuFeature::kernel_macro)
    }
}

impl fmt::Display for CpuCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.spelt(CpuFeature::name))
    }
}

/// One variant: its condition (`None`: the default) and its dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// Letters, digits and `_`: it becomes part of symbols and labels.
    pub name: String,
    pub when: Option<CpuCondition>,
    pub classes: Vec<SizeClass>,
}

impl Variant {
    pub fn condition_text(&self) -> String {
        match &self.when {
            Some(c) => c.to_string(),
            None => "default".into(),
        }
    }
}

/// The features of a CPU, as the standalone resolver's mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuFeatures(u32);

impl CpuFeatures {
    pub fn from_list(features: &[CpuFeature]) -> Self {
        CpuFeatures(features.iter().map(|f| f.bit()).sum())
    }
    pub fn has(self, f: CpuFeature) -> bool {
        self.0 & f.bit() != 0
    }
}

impl fmt::Display for CpuFeatures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = FEATURES
            .iter()
            .filter(|i| self.has(i.feature))
            .map(|i| i.name)
            .collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(" "))
        }
    }
}

/// The running CPU's features, found the way the standalone resolver finds them.
#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
pub fn host_features() -> CpuFeatures {
    #[cfg(target_arch = "x86")]
    use std::arch::x86::__cpuid_count;
    #[cfg(target_arch = "x86_64")]
    use std::arch::x86_64::__cpuid_count;
    let leaf0 = __cpuid_count(0, 0);
    let leaf1 = __cpuid_count(1, 0);
    let leaf7 = (leaf0.eax >= 7).then(|| __cpuid_count(7, 0));
    let vendor = [leaf0.ebx, leaf0.edx, leaf0.ecx];
    let mut found = 0;
    for info in FEATURES {
        let has = match info.detect {
            Detect::Leaf7 { reg, bit } => leaf7.is_some_and(|l| {
                let r = if reg == "ebx" { l.ebx } else { l.edx };
                r >> bit & 1 == 1
            }),
            Detect::ZenFamily => {
                ZEN_VENDORS.iter().any(|(_, v)| *v == vendor) && family(leaf1.eax) >= ZEN_FAMILY
            }
        };
        if has {
            found |= info.feature.bit();
        }
    }
    CpuFeatures(found)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
pub fn host_features() -> CpuFeatures {
    CpuFeatures(0)
}

/// CPUID leaf 1 EAX → family (base + extended when base is 0xf).
fn family(eax: u32) -> u32 {
    let base = eax >> 8 & 0xf;
    if base == 0xf {
        base + (eax >> 20 & 0xff)
    } else {
        base
    }
}

/// The variant `found` selects: the first whose condition holds.
pub fn select(s: &Strategy, found: CpuFeatures) -> Option<&Variant> {
    s.variants
        .iter()
        .find(|v| v.when.as_ref().is_none_or(|c| c.holds(found)))
}

/// A variant as a strategy of its own: same options, its classes, the
/// symbol `<symbol>__<variant>`. The names the strategy gives its linux
/// routines (`[linux] symbol`, `from_user`, `to_user`) belong to the entry
/// points; a variant's routines are named after the variant.
pub fn variant_strategy(s: &Strategy, v: &Variant) -> Strategy {
    let mut linux = s.linux.clone();
    linux.both = None;
    linux.from_user = None;
    linux.to_user = None;
    Strategy {
        symbol: format!("{}__{}", s.symbol, v.name),
        classes: v.classes.clone(),
        variants: Vec::new(),
        linux,
        ..s.clone()
    }
}

/// Whether `s` in `flavor` has one entry point for both directions (a
/// linux routine serving both; the standalone flavour exports two names).
fn one_entry(s: &Strategy, flavor: Flavor) -> bool {
    flavor == Flavor::Linux && s.routine == RoutineShape::Both
}

/// Every variant's routines, their labels prefixed with the variant name so
/// they can share a file.
pub fn lower_variants(s: &Strategy, target: Target) -> Vec<Routine> {
    s.variants
        .iter()
        .flat_map(|v| {
            lower(&variant_strategy(s, v), target)
                .into_iter()
                .map(move |mut r| {
                    r.tag = format!("{}_{}", v.name, r.tag);
                    r
                })
        })
        .collect()
}

/// The entry points that pick a variant, one per direction, or one for a
/// linux routine serving both (none without variants).
pub fn dispatchers(s: &Strategy, flavor: Flavor) -> Vec<Function> {
    if s.variants.is_empty() {
        return Vec::new();
    }
    let directions = if one_entry(s, flavor) {
        &s.directions[..1]
    } else {
        &s.directions[..]
    };
    let mut out: Vec<Function> = directions
        .iter()
        .map(|&dir| match flavor {
            Flavor::Linux => linux_entry(s, dir),
            Flavor::Standalone => standalone_entry(s, dir),
        })
        .collect();
    if flavor == Flavor::Standalone {
        // The resolver and the pointers live after the last entry point.
        out.last_mut()
            .expect("a direction")
            .body
            .extend(resolver(s));
    }
    out
}

fn function(symbol: String, body: Vec<String>) -> Function {
    Function {
        symbol,
        aliases: Vec::new(),
        body,
        fixups: Vec::new(),
        extable: Vec::new(),
    }
}

/// The routine of variant `v` that the entry point of `dir` enters.
pub fn variant_symbol(s: &Strategy, v: &Variant, flavor: Flavor, dir: Direction) -> String {
    entry_symbol(&variant_strategy(s, v), flavor, dir, None)
}

/// The linux entry: per variant, one `ALTERNATIVE` per feature test that
/// jumps to the next variant's tests while the test fails (patched to NOPs
/// when it holds), then a tail jump to the variant. After boot the path is
/// straight NOPs and direct jumps.
fn linux_entry(s: &Strategy, dir: Direction) -> Function {
    let mut body = Vec::new();
    let n = s.variants.len();
    let tag = if one_entry(s, Flavor::Linux) {
        "copy"
    } else {
        dir.tag()
    };
    for (i, v) in s.variants.iter().enumerate() {
        body.push(format!(
            "\t/* variant `{}`: {} */",
            v.name,
            v.condition_text()
        ));
        let next = format!(".L{}_{tag}_not_{}", s.symbol, v.name);
        if let Some(c) = &v.when {
            for f in &c.require {
                body.push(format!(
                    "\tALTERNATIVE \"jmp {next}\", \"\", {}",
                    f.kernel_macro()
                ));
            }
            for f in &c.exclude {
                body.push(format!(
                    "\tALTERNATIVE \"\", \"jmp {next}\", {}",
                    f.kernel_macro()
                ));
            }
        }
        body.push(format!(
            "\tjmp\t{}",
            variant_symbol(s, v, Flavor::Linux, dir)
        ));
        if v.when.is_some() && i + 1 < n {
            body.push(format!("{next}:"));
        }
    }
    function(entry_symbol(s, Flavor::Linux, dir, None), body)
}

/// Register and addressing choices of the standalone resolver.
struct Regs {
    /// Feature mask, highest CPUID leaf, "Zen vendor" flag: kept across `cpuid`.
    found: &'static str,
    max_leaf: &'static str,
    zen_vendor: &'static str,
    /// Saved and restored: callee-saved ones `cpuid` or the above clobber,
    /// and the argument registers `cpuid` clobbers.
    saved: &'static [&'static str],
}

fn regs(arch: Arch) -> Regs {
    match arch {
        // SysV: rdx (n) is an argument cpuid clobbers, rbx is callee-saved.
        Arch::X86_64 => Regs {
            found: "%r8d",
            max_leaf: "%r9d",
            zen_vendor: "%r10d",
            saved: &["%rbx", "%rdx"],
        },
        // cdecl: arguments are on the stack; ebx, esi, edi, ebp are callee-saved.
        _ => Regs {
            found: "%esi",
            max_leaf: "%edi",
            zen_vendor: "%ebp",
            saved: &["%ebx", "%esi", "%edi", "%ebp"],
        },
    }
}

/// The pointer an entry point jumps through: a hidden global, so a test
/// linked with the object can see which variant the resolver chose.
pub fn pointer_symbol(s: &Strategy, dir: Direction) -> String {
    format!("{}__{}_ptr", s.symbol, dir.tag())
}

fn resolve_label(s: &Strategy, dir: Direction) -> String {
    format!(".L{}_{}_resolve", s.symbol, dir.tag())
}

/// The standalone entry: one indirect jump through a pointer that first
/// holds this entry's resolver stub.
fn standalone_entry(s: &Strategy, dir: Direction) -> Function {
    let sym = entry_symbol(s, Flavor::Standalone, dir, None);
    let ptr = pointer_symbol(s, dir);
    let mut body = match s.arch {
        Arch::X86_64 => vec![format!("\tjmp\t*{ptr}(%rip)")],
        _ => {
            let pc = format!(".L{}_{}_pc", s.symbol, dir.tag());
            vec![
                format!("\tcall\t{pc}"),
                format!("{pc}:"),
                "\tpopl\t%eax".into(),
                format!("\tjmp\t*({ptr} - {pc})(%eax)"),
            ]
        }
    };
    body.extend([
        "\t/* first call: pick the variant for this CPU, then enter it */".into(),
        format!("{}:", resolve_label(s, dir)),
        format!("\tcall\t.L{}_resolve", s.symbol),
        format!("\tjmp\t{sym}"),
    ]);
    function(sym, body)
}

/// The resolver: CPUID into a feature mask, the first variant whose
/// condition holds, every entry's pointer set to it. Races are harmless:
/// every caller computes the same pointers and stores them whole.
fn resolver(s: &Strategy) -> Vec<String> {
    let r = regs(s.arch);
    let x64 = s.arch == Arch::X86_64;
    let l = |name: &str| format!(".L{}_{name}", s.symbol);
    let mut b = vec![
        String::new(),
        format!(
            "\t/* resolver: feature mask in {} (bit i = {}) */",
            r.found,
            CpuFeature::names().join(", ")
        ),
        format!("{}:", l("resolve")),
    ];
    let ins = |b: &mut Vec<String>, i: &str| b.push(format!("\t{i}"));
    for reg in r.saved {
        ins(&mut b, &format!("push\t{reg}"));
    }
    ins(&mut b, &format!("xorl\t{0}, {0}", r.found));
    ins(&mut b, &format!("xorl\t{0}, {0}", r.zen_vendor));
    ins(&mut b, "xorl\t%eax, %eax");
    ins(&mut b, "cpuid");
    ins(&mut b, &format!("movl\t%eax, {}", r.max_leaf));
    for (i, (vendor, [ebx, edx, ecx])) in ZEN_VENDORS.iter().enumerate() {
        let skip = l(&format!("vendor{i}"));
        b.push(format!("\t/* {vendor} */"));
        for (reg, v) in [("%ebx", ebx), ("%edx", edx), ("%ecx", ecx)] {
            ins(&mut b, &format!("cmpl\t${v:#x}, {reg}"));
            ins(&mut b, &format!("jne\t{skip}"));
        }
        ins(&mut b, &format!("movl\t$1, {}", r.zen_vendor));
        b.push(format!("{skip}:"));
    }
    b.push("\t/* family: base, plus extended when base is 0xf */".into());
    ins(&mut b, "movl\t$1, %eax");
    ins(&mut b, "cpuid");
    ins(&mut b, "movl\t%eax, %ecx");
    ins(&mut b, "shrl\t$8, %ecx");
    ins(&mut b, "andl\t$0xf, %ecx");
    ins(&mut b, "cmpl\t$0xf, %ecx");
    ins(&mut b, &format!("jne\t{}", l("family")));
    ins(&mut b, "shrl\t$20, %eax");
    ins(&mut b, "andl\t$0xff, %eax");
    ins(&mut b, "addl\t%eax, %ecx");
    b.push(format!("{}:", l("family")));
    let zen = CpuFeature::Zen.bit();
    ins(&mut b, &format!("testl\t{0}, {0}", r.zen_vendor));
    ins(&mut b, &format!("jz\t{}", l("not_zen")));
    ins(&mut b, &format!("cmpl\t${ZEN_FAMILY:#x}, %ecx"));
    ins(&mut b, &format!("jb\t{}", l("not_zen")));
    ins(&mut b, &format!("orl\t${zen}, {}", r.found));
    b.push(format!("{}:", l("not_zen")));
    b.push("\t/* leaf 7, when the CPU has it */".into());
    ins(&mut b, &format!("cmpl\t$7, {}", r.max_leaf));
    ins(&mut b, &format!("jb\t{}", l("select")));
    ins(&mut b, "movl\t$7, %eax");
    ins(&mut b, "xorl\t%ecx, %ecx");
    ins(&mut b, "cpuid");
    for info in FEATURES {
        if let Detect::Leaf7 { reg, bit } = info.detect {
            let skip = l(&format!("no_{}", info.name));
            ins(&mut b, &format!("testl\t${:#x}, %{reg}", 1u32 << bit));
            ins(&mut b, &format!("jz\t{skip}"));
            ins(
                &mut b,
                &format!("orl\t${}, {}", info.feature.bit(), r.found),
            );
            b.push(format!("{skip}:"));
        }
    }
    b.push(format!("{}:", l("select")));
    if !x64 {
        // i386 has no rip-relative addressing: a base for the stores below.
        ins(&mut b, &format!("call\t{}", l("base")));
        b.push(format!("{}:", l("base")));
        ins(&mut b, "popl\t%edx");
    }
    for (i, v) in s.variants.iter().enumerate() {
        if let Some(c) = &v.when {
            b.push(format!("\t/* variant `{}`: {c} */", v.name));
            ins(&mut b, &format!("movl\t{}, %eax", r.found));
            ins(&mut b, &format!("andl\t${}, %eax", c.mask()));
            ins(&mut b, &format!("cmpl\t${}, %eax", c.want()));
            ins(&mut b, &format!("je\t{}", l(&format!("pick{i}"))));
        }
    }
    // No test held: fall through into the default's pick, the last variant.
    let n = s.variants.len();
    for i in std::iter::once(n - 1).chain(0..n - 1) {
        let v = &s.variants[i];
        b.push(format!("{}:", l(&format!("pick{i}"))));
        for &dir in &s.directions {
            let target = variant_symbol(s, v, Flavor::Standalone, dir);
            let ptr = pointer_symbol(s, dir);
            if x64 {
                ins(&mut b, &format!("leaq\t{target}(%rip), %rax"));
                ins(&mut b, &format!("movq\t%rax, {ptr}(%rip)"));
            } else {
                let base = l("base");
                ins(&mut b, &format!("leal\t({target} - {base})(%edx), %eax"));
                ins(&mut b, &format!("movl\t%eax, ({ptr} - {base})(%edx)"));
            }
        }
        ins(&mut b, &format!("jmp\t{}", l("resolved")));
    }
    b.push(format!("{}:", l("resolved")));
    for reg in r.saved.iter().rev() {
        ins(&mut b, &format!("pop\t{reg}"));
    }
    ins(&mut b, "ret");
    b.push(String::new());
    b.push("\t.pushsection .data".into());
    b.push(format!("\t.balign\t{}", if x64 { 8 } else { 4 }));
    for &dir in &s.directions {
        let p = pointer_symbol(s, dir);
        b.push(format!("\t.globl\t{p}"));
        b.push(format!("\t.hidden\t{p}"));
        b.push(format!("\t.type\t{p}, @object"));
        b.push(format!("\t.size\t{p}, {}", if x64 { 8 } else { 4 }));
        b.push(format!("{p}:"));
        b.push(format!(
            "\t{}\t{}",
            if x64 { ".quad" } else { ".long" },
            resolve_label(s, dir)
        ));
    }
    b.push("\t.popsection".into());
    b
}

/// The variant a benchmark of `s` runs: `forced` by name, else the one
/// `found` selects. `None` for a strategy without variants (whatever is forced).
pub fn bench_variant<'a>(
    s: &'a Strategy,
    forced: Option<&str>,
    found: CpuFeatures,
) -> anyhow::Result<Option<&'a Variant>> {
    match (forced, s.variants.is_empty()) {
        (_, true) => Ok(None),
        (None, false) => Ok(select(s, found)),
        (Some(name), false) => match s.variants.iter().find(|v| v.name == name) {
            Some(v) => Ok(Some(v)),
            None => anyhow::bail!(
                "`{}` has no variant `{name}` (it has {})",
                s.name,
                s.variants
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

/// The bench subject of `s`: with variants, the chosen one alone, JIT-compiled
/// and named `strategy[variant]`.
pub fn bench_subject(
    s: &Strategy,
    forced: Option<&str>,
    found: CpuFeatures,
) -> anyhow::Result<crate::tools::bench::Subject> {
    let Some(v) = bench_variant(s, forced, found)? else {
        return crate::tools::bench::strategy_subject(s);
    };
    let vs = variant_strategy(s, v);
    let dir = if s.directions.contains(&Direction::FromUser) {
        Direction::FromUser
    } else {
        Direction::ToUser
    };
    crate::tools::bench::jit_subject(
        &vs,
        &entry_symbol(&vs, Flavor::Standalone, dir, None),
        format!("{}[{}]", s.name, v.name),
    )
}
