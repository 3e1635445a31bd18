//! Which variant of the per-CPU catalog strategies each CPU runs: CPU
//! models given by their CPUID words (vendor, leaf-1 signature, leaf-7
//! ERMS/FSRM bits) go through the standalone resolver's own instructions
//! (interpreted here, `cpuid` answered from the table) and through the
//! linux flavour's ALTERNATIVE chain with the bits the kernel tree sets
//! (and, for 6.12's inline site, the site chain first).

use std::collections::HashMap;

use copygen::arch::cpu::{CpuFeatures, Cpuid, INTEL, ZEN_VENDORS};
use copygen::backend::x86::{entry, Alu, Cc, FeatureTest, Inst, Reg};
use copygen::front::strategy::{Arch, Direction, Flavor, KernelVersion, Strategy};
use copygen::front::variant::CpuFeature;
use copygen::kernel::site::{self, SiteInsn, SiteTarget};
use copygen::kernel::{variant_chain, wiring};
use copygen::lower::variants::variant_symbol;

const ERMS: u32 = 1 << 9; // leaf 7 ebx
const FSRM: u32 = 1 << 4; // leaf 7 edx

/// One CPU model: name, vendor words, leaf-1 eax, leaf-7 (ebx, edx), and
/// the variant each strategy should pick: guarded-movsb, guarded-movsb-612,
/// guarded-movsb-32.
struct Model {
    name: &'static str,
    vendor: [u32; 3],
    leaf1: u32,
    leaf7: (u32, u32),
    expect: [&'static str; 3],
}

const AMD: [u32; 3] = ZEN_VENDORS[0].1;

const MODELS: &[Model] = &[
    // AMD EPYC 7601: family 0x17 model 0x01, neither ERMS nor FSRM.
    Model {
        name: "Zen 1 (EPYC 7601)",
        vendor: AMD,
        leaf1: 0x0080_0f12,
        leaf7: (0, 0),
        expect: ["zen_movsq", "zen_noerms", "loop"],
    },
    // qemu's `-cpu EPYC`: family 0x17 model 1 stepping 2, no ERMS, no FSRM.
    Model {
        name: "qemu EPYC",
        vendor: AMD,
        leaf1: 0x0080_0f12,
        leaf7: (0, 0),
        expect: ["zen_movsq", "zen_noerms", "loop"],
    },
    // AMD EPYC 7742: family 0x17 model 0x31.
    Model {
        name: "Zen 2 (EPYC 7742)",
        vendor: AMD,
        leaf1: 0x0083_0f10,
        leaf7: (0, 0),
        expect: ["zen_movsq", "zen_noerms", "loop"],
    },
    // AMD EPYC 7763: family 0x19 model 0x01, ERMS and FSRM.
    Model {
        name: "Zen 3 (EPYC 7763)",
        vendor: AMD,
        leaf1: 0x00a0_0f11,
        leaf7: (ERMS, FSRM),
        expect: ["zen", "zen", "zen"],
    },
    // qemu's `-cpu EPYC-Milan`: family 0x19 model 1, ERMS and FSRM.
    Model {
        name: "qemu EPYC-Milan",
        vendor: AMD,
        leaf1: 0x00a0_0f11,
        leaf7: (ERMS, FSRM),
        expect: ["zen", "zen", "zen"],
    },
    // A Zen 3 whose hypervisor hides ERMS and FSRM.
    Model {
        name: "Zen 3, ERMS hidden",
        vendor: AMD,
        leaf1: 0x00a0_0f11,
        leaf7: (0, 0),
        expect: ["zen_movsq", "noerms", "loop"],
    },
    // AMD EPYC 9654: family 0x19 model 0x11.
    Model {
        name: "Zen 4 (EPYC 9654)",
        vendor: AMD,
        leaf1: 0x00a1_0f11,
        leaf7: (ERMS, FSRM),
        expect: ["zen", "zen", "zen"],
    },
    // AMD EPYC 9005: family 0x1a model 0x02.
    Model {
        name: "Zen 5 (EPYC 9005)",
        vendor: AMD,
        leaf1: 0x00b0_0f21,
        leaf7: (ERMS, FSRM),
        expect: ["fsrm", "fsrm", "fsrm"],
    },
    // Intel Sandy Bridge: family 6 model 0x2a, no ERMS.
    Model {
        name: "Intel without ERMS (Sandy Bridge)",
        vendor: INTEL,
        leaf1: 0x0002_06a7,
        leaf7: (0, 0),
        expect: ["movsq", "noerms", "loop"],
    },
    // qemu's `-cpu Skylake-Client-v4,erms=off`: family 6 model 94, ERMS
    // hidden (kernel-ci's Intel CPU without ERMS; qemu's SandyBridge has
    // no SMAP, which the boots require).
    Model {
        name: "qemu Skylake-Client-v4,erms=off",
        vendor: INTEL,
        leaf1: 0x0005_06e3,
        leaf7: (0, 0),
        expect: ["movsq", "noerms", "loop"],
    },
    // Intel Xeon family 6 model 0xa7 whose hypervisor hides ERMS and FSRM.
    Model {
        name: "Intel family 6 model 0xa7, ERMS hidden",
        vendor: INTEL,
        leaf1: 0x000a_0671,
        leaf7: (0, 0),
        expect: ["movsq", "noerms", "loop"],
    },
    // qemu's `-cpu Skylake-Client-v4`: family 6 model 94, ERMS, no FSRM.
    Model {
        name: "Intel with ERMS (qemu Skylake-Client-v4)",
        vendor: INTEL,
        leaf1: 0x0005_06e3,
        leaf7: (ERMS, 0),
        expect: ["erms", "erms", "erms"],
    },
    // Intel Ice Lake: family 6 model 0x7e, ERMS and FSRM.
    Model {
        name: "Intel with FSRM (Ice Lake)",
        vendor: INTEL,
        leaf1: 0x0007_06e5,
        leaf7: (ERMS, FSRM),
        expect: ["fsrm", "fsrm", "fsrm"],
    },
];

const STRATEGIES: [&str; 3] = ["guarded-movsb", "guarded-movsb-612", "guarded-movsb-32"];

/// Runs the resolver's detection instructions with `cpuid` answered from
/// `m`, and returns the feature mask it leaves.
fn interpret_detection(m: &Model) -> CpuFeatures {
    let l = |n: &str| format!(".Lt_{n}");
    let insts = entry::detection(copygen::front::strategy::Arch::X86_64, &l);
    let labels: HashMap<String, usize> = insts
        .iter()
        .enumerate()
        .filter_map(|(i, x)| match x {
            Inst::Label(n) => Some((n.clone(), i)),
            _ => None,
        })
        .collect();
    let mut regs = [0u32; 16];
    let (mut zf, mut cf) = (false, false);
    let mut pc = 0;
    let r = |reg: Reg| reg.num() as usize;
    let mut steps = 0;
    while pc < insts.len() {
        steps += 1;
        assert!(steps < 10_000, "the detection terminates");
        let mut next = pc + 1;
        match &insts[pc] {
            Inst::Comment(_) | Inst::Label(_) => {}
            Inst::Cpuid => {
                let (a, b, c, d) = match regs[r(Reg::Ax)] {
                    0 => (13, m.vendor[0], m.vendor[2], m.vendor[1]),
                    1 => (m.leaf1, 0x0800, 0x7ed8_320b, 0x178b_fbff),
                    7 => (0, m.leaf7.0, 0, m.leaf7.1),
                    leaf => panic!("unexpected leaf {leaf}"),
                };
                regs[r(Reg::Ax)] = a;
                regs[r(Reg::Bx)] = b;
                regs[r(Reg::Cx)] = c;
                regs[r(Reg::Dx)] = d;
            }
            Inst::Mov { dst, src, .. } => regs[r(*dst)] = regs[r(*src)],
            Inst::MovImm { dst, imm, .. } => regs[r(*dst)] = *imm,
            Inst::Shr { reg, imm, .. } => {
                regs[r(*reg)] >>= imm;
                zf = regs[r(*reg)] == 0;
            }
            Inst::AluImm { op, reg, imm, .. } => {
                let v = alu(*op, regs[r(*reg)], *imm as u32, &mut zf, &mut cf);
                if let Some(v) = v {
                    regs[r(*reg)] = v;
                }
            }
            Inst::AluReg { op, dst, src, .. } => {
                let v = alu(*op, regs[r(*dst)], regs[r(*src)], &mut zf, &mut cf);
                if let Some(v) = v {
                    regs[r(*dst)] = v;
                }
            }
            Inst::Jcc { cc, target } => {
                let take = match cc {
                    Cc::E | Cc::Z => zf,
                    Cc::Ne => !zf,
                    Cc::B => cf,
                    Cc::Be => cf || zf,
                    Cc::A => !cf && !zf,
                    Cc::Ae => !cf,
                };
                if take {
                    next = labels[target];
                }
            }
            Inst::Jmp { target } => next = labels[target],
            other => panic!("the detection holds no {other:?}"),
        }
        pc = next;
    }
    CpuFeatures::from_mask(regs[r(entry::mask_register(copygen::front::strategy::Arch::X86_64))])
}

/// One ALU operation: the flags it sets, and the value it writes (none for
/// `cmp` and `test`).
fn alu(op: Alu, a: u32, b: u32, zf: &mut bool, cf: &mut bool) -> Option<u32> {
    let (v, write) = match op {
        Alu::Add => (a.wrapping_add(b), true),
        Alu::Sub => (a.wrapping_sub(b), true),
        Alu::And => (a & b, true),
        Alu::Or => (a | b, true),
        Alu::Xor => (a ^ b, true),
        Alu::Cmp => (a.wrapping_sub(b), false),
        Alu::Test => (a & b, false),
    };
    *zf = v == 0;
    *cf = op == Alu::Cmp && a < b;
    write.then_some(v)
}

fn cpuid(m: &Model) -> Cpuid {
    Cpuid::from_words(13, m.vendor, m.leaf1, Some(m.leaf7))
}

/// The variant the standalone resolver picks: the first whose condition
/// holds on the mask.
fn standalone_pick(s: &Strategy, f: CpuFeatures) -> String {
    s.variants
        .iter()
        .find(|v| v.when.as_ref().is_none_or(|c| c.holds(f)))
        .unwrap()
        .name
        .clone()
}

/// The kernel's bits on `m` in `tree` (6.1 has no ZEN5).
fn kernel_bits(m: &Model, tree: KernelVersion) -> CpuFeatures {
    let list: Vec<CpuFeature> = cpuid(m)
        .features()
        .list()
        .into_iter()
        .filter(|f| f.in_tree(tree))
        .collect();
    CpuFeatures::from_list(&list)
}

/// Walks the linux entry as the kernel leaves it: an `AltJmp` is a `jmp`
/// where both its tests hold, NOPs elsewhere. The variant reached and the
/// jumps taken on the way.
fn linux_pick(s: &Strategy, f: CpuFeatures) -> (String, usize) {
    let e = entry::entries(s, Flavor::Linux).remove(0);
    let (variant, jumps) = walk(s, &e.insts, f);
    (variant.expect("the entry ends in a jump"), jumps)
}

/// [`linux_pick`] where 6.1's glue calls the wired `s`: from the routine
/// the site's `alternative_call_2` calls, a feature entry whose slots end
/// in a jump, or fall into the last variant its CPUs may take.
fn linux_pick_6_1(s: &Strategy, f: CpuFeatures) -> (String, usize) {
    let k = KernelVersion::V6_1;
    let mut notes = Vec::new();
    let mut t = wiring::common(s, k, &mut notes).unwrap();
    wiring::x86(s, &mut t, k, &mut notes).unwrap();
    let code = variant_chain::site(&t, k, f);
    let called = code.calls[0].target.symbol().to_string();
    let plan = entry::feature_plans(&t)
        .into_iter()
        .find(|p| p.symbol == called)
        .expect("the site calls a feature entry");
    let mut insts = plan.slots.clone();
    if !plan.absorbed {
        insts.push(Inst::Jmp {
            target: plan.enters.clone(),
        });
    }
    let (variant, jumps) = walk(&t, &insts, f);
    (
        variant.unwrap_or_else(|| variant_of(&t, &plan.enters)),
        jumps,
    )
}

fn variant_of(s: &Strategy, symbol: &str) -> String {
    let dir = s.directions[0];
    s.variants
        .iter()
        .find(|v| variant_symbol(s, v, Flavor::Linux, dir) == symbol)
        .map(|v| v.name.clone())
        .unwrap_or_else(|| panic!("{symbol} is no variant's routine"))
}

/// The variant `insts` jump to on a CPU with `f` (`None` where they fall
/// through at the end) and the jumps taken on the way.
fn walk(s: &Strategy, insts: &[Inst], f: CpuFeatures) -> (Option<String>, usize) {
    let labels: HashMap<&str, usize> = insts
        .iter()
        .enumerate()
        .filter_map(|(i, x)| match x {
            Inst::Label(n) => Some((n.as_str(), i)),
            _ => None,
        })
        .collect();
    let holds = |t: &FeatureTest| f.has(t.feature) == t.present;
    let mut pc = 0;
    let mut jumps = 0;
    while pc < insts.len() {
        let target = match &insts[pc] {
            Inst::AltJmp { target, first, and }
                if holds(first) && and.as_ref().is_none_or(holds) =>
            {
                target
            }
            Inst::Jmp { target } => target,
            _ => {
                pc += 1;
                continue;
            }
        };
        jumps += 1;
        match labels.get(target.as_str()) {
            Some(&i) => pc = i,
            None => return (Some(variant_of(s, target)), jumps),
        }
    }
    (None, jumps)
}

#[test]
fn the_resolver_decodes_the_table_s_cpus_as_the_rust_decoder_does() {
    for m in MODELS {
        assert_eq!(interpret_detection(m), cpuid(m).features(), "{}", m.name);
    }
    // And the generations: Zen 1 is zen1, the qemu EPYC too, Zen 5 zen5.
    let gen = |i: usize| cpuid(&MODELS[i]).features();
    assert!(gen(0).has(CpuFeature::Zen1) && gen(1).has(CpuFeature::Zen1));
    assert!(gen(2).has(CpuFeature::Zen2));
    assert!(gen(3).has(CpuFeature::Zen3) && gen(6).has(CpuFeature::Zen4));
    assert!(gen(7).has(CpuFeature::Zen5));
    assert!(MODELS
        .iter()
        .all(|m| cpuid(m).features().has(CpuFeature::RepGood)));
}

#[test]
fn every_cpu_of_the_table_gets_its_class_s_variant_standalone_and_in_the_kernel() {
    for (k, name) in STRATEGIES.iter().enumerate() {
        let s = crate::common::catalog_strategy(name);
        for m in MODELS {
            let want = m.expect[k];
            let found = interpret_detection(m);
            assert_eq!(
                standalone_pick(&s, found),
                want,
                "{name} standalone on {}",
                m.name
            );
            // The trees the file is for (guarded-movsb-612: 6.12 only).
            for tree in KernelVersion::ALL
                .into_iter()
                .filter(|&k| s.linux.kernel.is_none_or(|only| only == k))
            {
                let bits = kernel_bits(m, tree);
                // After boot the entry is NOPs and one jump, to the
                // variant (no condition of the catalog has three tests).
                let (variant, jumps) = linux_pick(&s, bits);
                assert_eq!(
                    (variant.as_str(), jumps),
                    (want, 1),
                    "{name} linux {} on {}",
                    tree.name(),
                    m.name
                );
            }
            // Where 6.1's site picks among three entry points, each is NOPs
            // and at most one jump; none where the entry falls into it.
            if s.arch == Arch::X86_64 && s.linux.kernel.is_none() {
                let bits = kernel_bits(m, KernelVersion::V6_1);
                let (variant, jumps) = linux_pick_6_1(&s, bits);
                assert_eq!(variant, want, "{name} linux 6.1's site on {}", m.name);
                assert!(jumps <= 1, "{name} on {}: {jumps} jumps", m.name);
            }
        }
    }
}

#[test]
fn on_6_1_each_site_routine_falls_into_the_variant_its_cpus_take_last() {
    // guarded-movsb under 6.1: the ERMS routine falls into `erms`, the
    // REP_GOOD one into `zen_movsq` (Zen 1 and 2: the family bit picks it;
    // the other CPUs without ERMS jump to `movsq`), the third into `loop`;
    // a CPU whose variant comes earlier in its routine's order jumps once.
    let s = crate::common::catalog_strategy("guarded-movsb");
    let jumps: Vec<(&str, String, usize)> = MODELS
        .iter()
        .map(|m| {
            let (v, j) = linux_pick_6_1(&s, kernel_bits(m, KernelVersion::V6_1));
            (m.name, v, j)
        })
        .collect();
    let of = |want: &str| {
        jumps
            .iter()
            .filter(|(_, v, _)| v == want)
            .map(|&(_, _, j)| j)
            .collect::<Vec<_>>()
    };
    for (v, want) in [
        ("erms", 0),
        ("zen_movsq", 0),
        ("movsq", 1),
        ("zen", 1),
        ("fsrm", 1),
    ] {
        assert!(
            !of(v).is_empty() && of(v).iter().all(|&j| j == want),
            "{v}: {jumps:?}"
        );
    }
    // Without REP_GOOD or ERMS (no CPU of the table): `loop`, no jump.
    assert_eq!(
        linux_pick_6_1(&s, CpuFeatures::default()),
        ("loop".into(), 0)
    );
}

#[test]
fn the_6_12_site_runs_the_variant_and_keeps_the_stock_bytes_on_fsrm() {
    let s = crate::common::catalog_strategy("guarded-movsb-612");
    let chain = variant_chain::chain(&s, KernelVersion::V6_12);
    assert!(chain.fallback.is_none(), "{:?}", chain.fallback);
    let dir = Direction::FromUser;
    for m in MODELS {
        let bits = kernel_bits(m, KernelVersion::V6_12);
        let want = m.expect[1];
        let got = match chain.chosen(bits) {
            // The inline `rep movsb`: the bare `rep movsb` variant the
            // CPU takes (`fsrm`, a Zen 5's too).
            SiteInsn::RepMovsb => {
                let v = variant_chain::variant_for(&s, bits).unwrap();
                assert!(variant_chain::is_bare_movsb(v), "{}", v.name);
                v.name.clone()
            }
            SiteInsn::Call(SiteTarget::Routine(sym)) => {
                match s
                    .variants
                    .iter()
                    .find(|v| variant_symbol(&s, v, Flavor::Linux, dir) == *sym)
                {
                    Some(v) => v.name.clone(),
                    // The entry: its own chain picks.
                    None => linux_pick(&s, bits).0,
                }
            }
            SiteInsn::Call(SiteTarget::RepMovsAlternative) => panic!("the stock routine"),
        };
        assert_eq!(got, want, "6.12 site on {}", m.name);
        if want == "fsrm" {
            assert_eq!(
                variant_chain::site(&s, KernelVersion::V6_12, bits),
                site::stock_site(KernelVersion::V6_12, bits),
                "{}",
                m.name
            );
        }
    }
}

/// A strategy whose variants are all one bare `rep movsb`: `(name, when)`
/// each, in order, the last the default (`None`).
fn movsb_variants(variants: &[(&str, Option<&str>)]) -> Strategy {
    let mut text = String::from(
        "name = \"movsb_variants\"\ndescription = \"Variants of one method.\"\narch = \"x86_64\"\n\n[methods.movsb]\nkind = \"rep_movs\"\nunit = 1\n",
    );
    for (name, when) in variants {
        let condition = when.map_or("default = true".to_string(), |w| format!("when = {w}"));
        text.push_str(&format!(
            "\n[[variants]]\nname = \"{name}\"\n{condition}\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"movsb\"\n"
        ));
    }
    copygen::front::parse::parse(std::path::Path::new("t.toml"), &text, None)
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn a_condition_of_three_tests_skips_its_slot_where_the_third_fails() {
    let s = movsb_variants(&[
        ("three", Some(r#"["zen", "erms", "!fsrm"]"#)),
        ("fast", Some(r#"["fsrm"]"#)),
        ("other", None),
    ]);
    let f = |l: &[CpuFeature]| CpuFeatures::from_list(l);
    use CpuFeature::{Erms, Fsrm, Zen};
    // All three hold: the slot's jump.
    assert_eq!(linux_pick(&s, f(&[Zen, Erms])), ("three".into(), 1));
    // The third fails: past the slot (a jump), then fsrm's slot.
    assert_eq!(linux_pick(&s, f(&[Zen, Erms, Fsrm])), ("fast".into(), 2));
    assert_eq!(linux_pick(&s, f(&[Erms, Fsrm])), ("fast".into(), 2));
    // The third holds, the slot's own tests fail: NOPs, then the next
    // variants'.
    assert_eq!(linux_pick(&s, f(&[Erms])), ("other".into(), 1));
    assert_eq!(linux_pick(&s, f(&[Zen])), ("other".into(), 1));
    for bits in 0..8u32 {
        let on: Vec<CpuFeature> = [Zen, Erms, Fsrm]
            .into_iter()
            .enumerate()
            .filter(|(i, _)| bits & (1 << i) != 0)
            .map(|(_, x)| x)
            .collect();
        assert_eq!(
            linux_pick(&s, f(&on)).0,
            standalone_pick(&s, f(&on)),
            "{on:?}"
        );
    }
}

/// A condition of several conjunctions, through 6.1's three entry points:
/// each entry slots only the conjunctions its CPUs can meet (a conjunction
/// on `erms` has no slot in the entries called without ERMS, where its
/// other tests alone would send a Zen 3 with ERMS hidden to the wrong
/// variant), and every CPU reaches the variant first-match selects.
#[test]
fn on_6_1_each_entry_slots_the_conjunctions_its_cpus_can_meet() {
    let s = movsb_variants(&[
        ("either", Some(r#"[["zen3", "erms"], ["zen1"]]"#)),
        ("zen3", Some(r#"["zen3"]"#)),
        ("other", None),
    ]);
    use CpuFeature::{Erms, Fsrm, RepGood, Zen, Zen1, Zen3, Zen4};
    let f = |l: &[CpuFeature]| CpuFeatures::from_list(l);
    for (cpu, want) in [
        (f(&[Zen, Zen3, Erms, Fsrm, RepGood]), "either"),
        (f(&[Zen, Zen3, RepGood]), "zen3"),
        (f(&[Zen, Zen1, RepGood]), "either"),
        (f(&[Zen, Zen4, Erms, Fsrm, RepGood]), "other"),
        (f(&[Erms, RepGood]), "other"),
    ] {
        assert_eq!(standalone_pick(&s, cpu), want, "{cpu:?}");
        assert_eq!(linux_pick_6_1(&s, cpu).0, want, "{cpu:?}");
        assert_eq!(linux_pick(&s, cpu).0, want, "{cpu:?}");
    }
}

/// A strategy naming `zen5` for `kernel` (none: both trees).
fn zen5_strategy(kernel: Option<&str>) -> String {
    let linux = kernel.map_or(String::new(), |k| format!("[linux]\nkernel = \"{k}\"\n"));
    format!(
        r#"name = "zen5_only"
description = "A variant for Zen 5."
arch = "x86_64"
{linux}
[methods.movsb]
kind = "rep_movs"
unit = 1

[[variants]]
name = "five"
when = ["erms", "zen5"]
[[variants.dispatch]]
sizes = "0.."
use = "movsb"

[[variants]]
name = "other"
default = true
[[variants.dispatch]]
sizes = "0.."
use = "movsb"
"#
    )
}

#[test]
fn zen5_is_refused_where_the_tree_lacks_it_with_its_line() {
    use copygen::front::parse::parse;
    use std::path::Path;
    for kernel in [Some("6.1"), None] {
        let text = zen5_strategy(kernel);
        let line = text.lines().position(|l| l.contains("zen5\"]")).unwrap() + 1;
        let err = parse(Path::new("z.toml"), &text, None)
            .expect_err("refused")
            .to_string();
        assert!(
            err.contains(&format!("z.toml:{line}:")) && err.contains("X86_FEATURE_ZEN5"),
            "{kernel:?}: {err}"
        );
    }
    let s = parse(Path::new("z.toml"), &zen5_strategy(Some("6.12")), None).unwrap();
    let when = s.variants[0].when.as_ref().unwrap();
    assert_eq!(when.kernel_text(), "X86_FEATURE_ERMS && X86_FEATURE_ZEN5");
}
