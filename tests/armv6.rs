//! The ARMv6 backend against the real tools: every armv6 catalog file
//! assembles in both flavours with one exception-table entry per user
//! site of the lowering, each on a load (from_user) or store (to_user);
//! and a smoke run of the standalone files under `qemu-arm -cpu arm1176`
//! with and without a PROT_NONE page. (The full fault-injection harness is
//! `verify/harness.c`; this only proves the code runs.)

use std::path::{Path, PathBuf};
use std::process::Command;

use copygen::backend::functions;
use copygen::front::catalog::catalog;
use copygen::front::strategy::{Arch, Direction, Flavor, Strategy};
use copygen::output::render::{emitted_path, render};
use object::{Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};

use copygen::toolchain::{toolchain, Tool};

fn cc() -> Tool {
    toolchain(Arch::Armv6).cc
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Fail (never skip) when a tool is missing, after trying the installer.
fn need(tool: Tool) {
    let (tool, package) = (tool.program, tool.package_list());
    let found = || {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if found() {
        return;
    }
    let installer = root().join("verify/install-deps");
    if installer.is_file() {
        let _ = Command::new(&installer).status();
    }
    assert!(
        found(),
        "`{tool}` is missing: install the Debian package(s) {package} (verify/install-deps does it when run as root)"
    );
}

fn armv6_catalog() -> Vec<Strategy> {
    let all: Vec<Strategy> = catalog()
        .expect("catalog validates")
        .into_iter()
        .filter(|s| s.arch == Arch::Armv6)
        .collect();
    assert!(all.len() >= 2, "the catalog has the armv6 presets");
    all
}

fn sinks() -> Vec<Strategy> {
    ["armv6-sink-exact", "armv6-sink-block"]
        .iter()
        .map(|name| {
            let path = root().join(format!("tests/fixtures/strategies/{name}.toml"));
            copygen::front::parse::load(&path, None).unwrap_or_else(|e| panic!("{e:#}"))
        })
        .collect()
}

/// Every armv6 strategy under test in `flavor` and its `.S` file: the
/// checked-in file for the catalog, a rendered one in `dir` for the sinks.
fn sources(dir: &Path, flavor: Flavor) -> Vec<(Strategy, PathBuf)> {
    let mut v: Vec<_> = armv6_catalog()
        .into_iter()
        .map(|s| {
            let p = emitted_file(&s, flavor);
            (s, p)
        })
        .collect();
    for s in sinks() {
        let p = dir.join(format!("{}-{flavor}.S", s.name));
        std::fs::write(&p, render(&s, flavor)).unwrap();
        v.push((s, p));
    }
    v
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Assemble `src` (a `.S` file) for ARMv6, keeping `.L` labels in the
/// symbol table so table entries can be named.
fn assemble(src: &Path, obj: &Path, flavor: Flavor) {
    let mut cmd = cc().command();
    cmd.args(toolchain(Arch::Armv6).arch_flags)
        .args(["-c", "-Wa,-L", "-Wa,--fatal-warnings"]);
    if flavor == Flavor::Linux {
        cmd.args(["-nostdinc", "-D__ASSEMBLY__", "-I"])
            .arg(root().join("verify/shim-arm"));
    }
    run(cmd.arg(src).arg("-o").arg(obj));
}

/// The checked-in file, which must equal what the generator renders now.
fn emitted_file(s: &Strategy, flavor: Flavor) -> PathBuf {
    let path = root().join("emitted").join(emitted_path(s, flavor));
    let on_disk =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        on_disk == render(s, flavor),
        "{} is stale: run `copygen emit`",
        path.display()
    );
    path
}

/// (section name, offset) each word of `__ex_table` points at, in order.
fn extable_targets(file: &object::File, flavor: Flavor) -> Vec<(String, u64)> {
    let table = file
        .section_by_name("__ex_table")
        .expect("__ex_table section");
    let data = table.data().expect("table bytes");
    let want = match flavor {
        Flavor::Standalone => object::elf::R_ARM_REL32,
        Flavor::Linux => object::elf::R_ARM_ABS32,
    };
    let mut relocs: Vec<_> = table.relocations().collect();
    relocs.sort_by_key(|(off, _)| *off);
    assert_eq!(
        relocs.len() * 4,
        data.len(),
        "one relocation per table word"
    );
    relocs
        .iter()
        .enumerate()
        .map(|(i, (off, r))| {
            assert_eq!(
                *off,
                4 * i as u64,
                "relocations cover the table word by word"
            );
            assert_eq!(
                r.flags(),
                RelocationFlags::Elf { r_type: want },
                "{flavor} entries at {off}"
            );
            // REL: the addend sits in the word; against a section symbol it
            // is the offset in that section.
            let addend =
                u32::from_le_bytes(data[*off as usize..*off as usize + 4].try_into().unwrap());
            let section = match r.target() {
                RelocationTarget::Symbol(i) => {
                    let sym = file.symbol_by_index(i).expect("symbol");
                    file.section_by_index(sym.section_index().expect("section symbol"))
                        .unwrap()
                }
                RelocationTarget::Section(i) => file.section_by_index(i).unwrap(),
                RelocationTarget::Absolute => panic!("absolute table entry"),
                _ => panic!("unexpected relocation target"),
            };
            (section.name().unwrap().to_string(), addend as u64)
        })
        .collect()
}

/// Does a `.L` label named `name` sit at `section`+`offset`?
fn label_at(file: &object::File, name: &str, section: &str, offset: u64) -> bool {
    file.symbols().any(|s| {
        s.name() == Ok(name)
            && s.address() == offset
            && s.section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .and_then(|sec| sec.name().ok().map(str::to_string))
                == Some(section.to_string())
    })
}

/// The A32 word at `section`+`offset`: is it a load (`Some(true)`), a
/// store (`Some(false)`), or no single/multiple data transfer (`None`)?
fn transfer_kind(file: &object::File, section: &str, offset: u64) -> Option<bool> {
    let data = file.section_by_name(section).unwrap().data().unwrap();
    let w = u32::from_le_bytes(
        data[offset as usize..offset as usize + 4]
            .try_into()
            .unwrap(),
    );
    let single = (w >> 26) & 3 == 0b01 && w >> 28 != 0xf; // ldr/str/ldrb/strb (not pld)
    let multiple = (w >> 25) & 7 == 0b100; // ldm/stm
    (single || multiple).then_some(w & (1 << 20) != 0)
}

#[test]
fn every_armv6_file_assembles_with_one_entry_per_user_site() {
    need(cc());
    let dir = tempfile::tempdir().unwrap();
    for flavor in Flavor::ALL {
        for (s, src) in sources(dir.path(), flavor) {
            let obj = dir.path().join(format!("{}-{flavor}.o", s.name));
            assemble(&src, &obj, flavor);
            let bytes = std::fs::read(&obj).unwrap();
            let file = object::File::parse(&*bytes).unwrap();
            let targets = extable_targets(&file, flavor);

            let funcs = functions(&s, flavor);
            let sites: usize = funcs.iter().map(|(r, _)| r.user_sites().len()).sum();
            assert_eq!(
                targets.len(),
                2 * sites,
                "{} {flavor}: table entries vs user sites",
                s.name
            );

            let fixup_section = match flavor {
                Flavor::Standalone => ".text",
                Flavor::Linux => ".text.fixup",
            };
            let mut pairs = targets.chunks(2);
            for (r, f) in &funcs {
                assert_eq!(f.extable.len(), r.user_sites().len(), "{}", r.symbol);
                for e in &f.extable {
                    let pair = pairs.next().expect("an entry per site");
                    let ((isec, ioff), (fsec, foff)) = (&pair[0], &pair[1]);
                    assert!(
                        label_at(&file, &e.insn, isec, *ioff),
                        "{}: {} is not at {isec}+{ioff:#x}",
                        r.symbol,
                        e.insn
                    );
                    assert_eq!(fsec, fixup_section, "{}: fixup {}", r.symbol, e.fixup);
                    assert!(
                        label_at(&file, &e.fixup, fsec, *foff),
                        "{}: {} is not at {fsec}+{foff:#x}",
                        r.symbol,
                        e.fixup
                    );
                    let load = r.direction == Direction::FromUser;
                    assert_eq!(
                        transfer_kind(&file, isec, *ioff),
                        Some(load),
                        "{}: entry {} must be a user-side {}",
                        r.symbol,
                        e.insn,
                        if load { "load" } else { "store" }
                    );
                }
            }
        }
    }
}

/// The sink strategies reach paths the presets do not (head/tail, the
/// alias guard, ldm at non-zero offsets, touch/pld far ahead, the overlap
/// tail, constant-size entries, zero_tail): the shared fault-injection
/// harness runs them on an ARM1176 under qemu.
#[test]
fn sink_strategies_keep_the_contract_under_qemu_arm1176() {
    need(cc());
    need(toolchain(Arch::Armv6).runner.expect("qemu-arm").0);
    for s in sinks() {
        let r = copygen::checks::faultinject::run_strategy(&s).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(
            r.routines.len(),
            copygen::checks::faultinject::entries(&s).len()
        );
        for x in &r.routines {
            println!(
                "{}: {} cases, {} violations, shortfall {}",
                x.symbol, x.cases, x.violations, x.max_shortfall
            );
            assert!(
                x.cases > 0 && x.violations == 0,
                "{}: {:?}",
                x.symbol,
                r.details
            );
            if s.precision == copygen::front::strategy::Precision::Exact {
                assert_eq!(x.max_shortfall, 0, "{}", x.symbol);
            }
        }
    }
}

#[test]
fn ldm_stm_needs_proven_word_alignment() {
    let text = std::fs::read_to_string(root().join("generator/strategies/ldm-stm.toml")).unwrap();
    let parse = |t: &str| copygen::front::parse::parse(Path::new("ldm-stm.toml"), t, None);
    parse(&text).expect("the preset validates");
    let cases = [
        // No congruence guard: the ldm method as a plain class method.
        (
            text.replace("use = \"words\"\n[[dispatch.guard]]", "use = \"ldm\"\n[[dispatch.guard]]"),
            "`dispatch[1].use`",
            "need word-aligned pointers",
        ),
        // A guard that says nothing about src.
        (
            text.replace("pointer = \"congruent\", to = 4 }", "pointer = \"dst\", to = 4 }"),
            "`dispatch[1].guard[0].use`",
            "need word-aligned pointers",
        ),
        // Congruent, but no prologue aligns them.
        (
            text.replacen(
                "grouping = \"multiple\"\nprefetch = { kind = \"pld\", distance = 64 }\nalign = { pointer = \"dst\", to = 4, min_size = 4 }",
                "grouping = \"multiple\"\nprefetch = { kind = \"pld\", distance = 64 }",
                1,
            ),
            "`dispatch[1].guard[0].use`",
            "no `align` prologue",
        ),
        // The prologue is skipped for lengths that still reach the loop.
        (
            text.replace(
                "distance = 64 }\nalign = { pointer = \"dst\", to = 4, min_size = 4 }",
                "distance = 64 }\nalign = { pointer = \"dst\", to = 4, min_size = 40 }",
            ),
            "`dispatch[1].guard[0].use`",
            "lengths 32..40",
        ),
        // `congruent` is no prologue.
        (
            text.replace(
                "distance = 64 }\nalign = { pointer = \"dst\"",
                "distance = 64 }\nalign = { pointer = \"congruent\"",
            ),
            "`methods.ldm.align.pointer`",
            "guard condition",
        ),
    ];
    for (t, field, words) in cases {
        assert_ne!(t, text, "the substitution for {field} applied");
        let e = parse(&t).expect_err(field).to_string();
        assert!(
            e.contains(field) && e.contains(words),
            "expected {field} / {words}, got:\n{e}"
        );
    }
}
