//! The 6.12 x86_64 call site as an ALTERNATIVE chain over a per-CPU
//! strategy's variants (`kernel/variant_chain.rs`): what each CPU runs after
//! alternatives, the bytes against GNU as and the kernel's own macros, and
//! the patch that writes the chain.

use std::path::Path;
use std::process::Command;

use copygen::arch::cpu::CpuFeatures;
use copygen::front::strategy::{KernelVersion, Strategy};
use copygen::front::variant::CpuFeature::{self, Erms, Fsrm, Zen, Zen3, Zen4, Zen5};
use copygen::kernel::nops::optimized_nops;
use copygen::kernel::site::{
    stock_chain, stock_site, Chain, SiteInsn, SiteTarget, MAX_ALTERNATIVES,
};
use copygen::kernel::variant_chain::{self, chain, site};

const V6_12: KernelVersion = KernelVersion::V6_12;

fn features(f: &[CpuFeature]) -> CpuFeatures {
    CpuFeatures::from_list(f)
}

/// The strategy as kernel-patch wires it for 6.12.
fn wired(s: &Strategy) -> Strategy {
    copygen::tools::kernel_patch::wire(s, V6_12)
        .unwrap_or_else(|e| panic!("{e}"))
        .strategy
}

fn parse(text: &str) -> Strategy {
    copygen::front::parse::parse(Path::new("t.toml"), text, None).unwrap_or_else(|e| panic!("{e}"))
}

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

/// Every subset of erms, fsrm, zen.
fn all_feature_sets() -> Vec<CpuFeatures> {
    (0..64u32)
        .map(|m| {
            let f: Vec<CpuFeature> = [Erms, Fsrm, Zen, Zen3, Zen4, Zen5]
                .into_iter()
                .enumerate()
                .filter(|(i, _)| m & (1 << i) != 0)
                .map(|(_, f)| f)
                .collect();
            features(&f)
        })
        .collect()
}

#[test]
fn the_stock_6_12_site_is_rep_movsb_padded_or_the_call_of_rep_movs_alternative() {
    // FSRM: rep movsb, its 3 bytes of padding optimised into one nopl.
    let fsrm = stock_site(V6_12, features(&[Erms, Fsrm]));
    assert_eq!(fsrm.bytes, [0xf3, 0xa4, 0x0f, 0x1f, 0x00]);
    assert!(fsrm.calls.is_empty());
    let other = stock_site(V6_12, features(&[Erms]));
    assert_eq!(other.bytes, [0xe8, 0, 0, 0, 0]);
    assert_eq!(other.calls.len(), 1);
    assert_eq!(other.calls[0].at, 1);
    assert_eq!(other.calls[0].target, SiteTarget::RepMovsAlternative);
}

/// An FSRM CPU whose variant is the bare rep movsb (Intel, and Zen 5: no
/// Zen 3 or 4 bit) runs the stock site byte for byte; so does every FSRM
/// CPU for a strategy whose FSRM variant is the first.
#[test]
fn an_fsrm_cpu_without_a_variant_of_its_own_keeps_the_stock_bytes() {
    let t = wired(&crate::common::catalog_strategy("guarded-movsb-612"));
    for f in [
        features(&[Erms, Fsrm]),
        features(&[Erms, Fsrm, Zen, Zen5]),
        features(&[Erms, Fsrm, Zen]),
    ] {
        assert_eq!(site(&t, V6_12, f), stock_site(V6_12, f), "{f:?}");
    }
    // Zen 3 has FSRM too, but its own variant: a call of that routine.
    let zen3 = features(&[Erms, Fsrm, Zen, Zen3]);
    let zen = site(&t, V6_12, zen3);
    assert_ne!(zen, stock_site(V6_12, zen3));
    assert_eq!(site(&t, V6_12, features(&[Erms, Fsrm, Zen, Zen4])), zen);
    assert_eq!(zen.bytes.len(), 5);
    assert_eq!(
        zen.calls[0].target,
        SiteTarget::Routine("guarded_movsb_612__zen_copy_user".into())
    );
    // Skylake (ERMS, no FSRM): the erms variant's routine, directly.
    let skl = site(&t, V6_12, features(&[Erms]));
    assert_eq!(
        skl.calls[0].target,
        SiteTarget::Routine("guarded_movsb_612__erms_copy_user".into())
    );
}

/// A variant's condition that holds selects its site, or the entry point
/// (which picks by first match itself): never another variant's site.
fn check_first_match(t: &Strategy) {
    let c = chain(t, V6_12);
    let entry = SiteInsn::Call(SiteTarget::Routine("copygen_copy_user".into()));
    for f in all_feature_sets() {
        let v = variant_chain::variant_for(t, f).expect("a default");
        let own = if variant_chain::is_bare_movsb(v) {
            SiteInsn::RepMovsb
        } else {
            SiteInsn::Call(SiteTarget::Routine(format!(
                "{}__{}_copy_user",
                t.symbol, v.name
            )))
        };
        let got = c.chosen(f);
        assert!(
            *got == own || *got == entry,
            "{}: {f:?} picks {} but the site runs {}",
            t.name,
            v.name,
            got.gas()
        );
    }
}

const HEAD: &str = "description = \"d\"\narch = \"x86_64\"\n[linux]\nconvention = \"rep_movs\"\nuaccess = \"caller\"\nsite = \"call\"\n\
     [methods.m]\nkind = \"rep_movs\"\n[methods.b]\nkind = \"bytes\"\n";

fn variant(name: &str, when: &str, method: &str) -> String {
    format!("[[variants]]\nname = \"{name}\"\nwhen = {when}\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"{method}\"\n")
}

fn default_variant(method: &str) -> String {
    format!("[[variants]]\nname = \"last\"\ndefault = true\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"{method}\"\n")
}

#[test]
fn every_cpu_runs_its_variants_site_or_the_entry() {
    check_first_match(&wired(&crate::common::catalog_strategy(
        "guarded-movsb-612",
    )));
    // Exclusions, conjunctions of three, a bare rep movsb as the default.
    for (name, body) in [
        (
            "excl",
            variant("a", "[\"zen\", \"!fsrm\"]", "b")
                + &variant("c", "[\"fsrm\"]", "b")
                + &default_variant("m"),
        ),
        (
            "three",
            variant("a", "[\"erms\", \"fsrm\", \"zen\"]", "m") + &default_variant("b"),
        ),
        (
            "any",
            variant("a", "[[\"zen3\", \"erms\"], [\"zen4\"]]", "b")
                + &variant(
                    "c",
                    "[[\"fsrm\", \"!zen\"], [\"rep_good\", \"!erms\"]]",
                    "m",
                )
                + &default_variant("b"),
        ),
        (
            "notfirst",
            variant("a", "[\"!erms\"]", "m")
                + &variant("c", "[\"zen\"]", "b")
                + &default_variant("b"),
        ),
    ] {
        let t = wired(&parse(&format!("name = \"{name}\"\n{HEAD}{body}")));
        check_first_match(&t);
    }
}

/// Four alternatives: `ALTERNATIVE_3` inside one more `ALTERNATIVE`, as the
/// kernel nests its own; every CPU still runs its variant's site or the entry.
#[test]
fn a_chain_longer_than_alternative_3_nests_one_more_alternative_around_it() {
    let body = variant("a", "[\"erms\", \"fsrm\", \"zen\"]", "b")
        + &variant("c", "[\"zen\"]", "b")
        + &default_variant("b");
    let t = wired(&parse(&format!("name = \"long\"\n{HEAD}{body}")));
    let c = chain(&t, V6_12);
    assert_eq!(c.fallback, None);
    assert_eq!(c.alts.len(), 4, "{c:?}");
    let text = c.c_text(2);
    assert!(
        text.starts_with("ALTERNATIVE(ALTERNATIVE_3(\"call long__last_copy_user\",\n"),
        "{text}"
    );
    assert!(
        text.ends_with(",\n\t\t\t    \"call copygen_copy_user\", ALT_NOT(X86_FEATURE_ZEN))"),
        "{text}"
    );
    check_first_match(&t);
    let zen3 = site(&t, V6_12, features(&[Erms, Fsrm, Zen]));
    assert_eq!(
        zen3.calls[0].target,
        SiteTarget::Routine("long__a_copy_user".into())
    );
    if tool("gcc") {
        check_against_gcc(&c);
    }
}

/// Past `MAX_ALTERNATIVES` the site would cost every inline copy more
/// `.altinstructions` than the entry's one-time dispatch: the entry.
#[test]
fn a_chain_longer_than_max_alternatives_calls_the_entry_everywhere() {
    let body = variant(
        "a",
        "[\"erms\", \"fsrm\", \"zen\", \"rep_good\", \"zen3\"]",
        "b",
    ) + &variant("c", "[\"zen\", \"!erms\", \"zen1\", \"rep_good\"]", "b")
        + &default_variant("b");
    let t = wired(&parse(&format!("name = \"long\"\n{HEAD}{body}")));
    let c = chain(&t, V6_12);
    assert!(c.alts.is_empty(), "{c:?}");
    let why = c.fallback.as_deref().unwrap();
    assert!(why.contains("would nest 9 ALTERNATIVEs"), "{why}");
    assert!(why.contains(&format!("past {MAX_ALTERNATIVES}")), "{why}");
    for f in all_feature_sets() {
        assert_eq!(
            c.chosen(f),
            &SiteInsn::Call(SiteTarget::Routine("copygen_copy_user".into()))
        );
    }
}

#[test]
fn padding_is_what_optimize_nops_leaves() {
    // arch/x86/include/asm/nops.h, 64-bit.
    assert_eq!(optimized_nops(0), Vec::<u8>::new());
    assert_eq!(optimized_nops(1), [0x90]);
    assert_eq!(optimized_nops(3), [0x0f, 0x1f, 0x00]);
    assert_eq!(optimized_nops(5), [0x0f, 0x1f, 0x44, 0x00, 0x00]);
    assert_eq!(optimized_nops(11).len(), 11);
    assert_eq!(optimized_nops(11)[..3], [0x66, 0x66, 0x2e]);
    // Beyond ASM_NOP_MAX: add_nop()'s jmp over int3.
    let mut twelve = vec![0xeb, 10];
    twelve.extend([0xcc; 10]);
    assert_eq!(optimized_nops(12), twelve);
}

/// Whether `prog` is installed (a note when it is not).
fn tool(prog: &str) -> bool {
    let ok = Command::new(prog).arg("--version").output().is_ok();
    if !ok {
        eprintln!("SKIPPED: {prog} is not installed");
    }
    ok
}

#[test]
fn the_instructions_are_gnu_as_bytes() {
    if !tool("as") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("s.S");
    std::fs::write(&src, ".text\nrep movsb\ncall somewhere\n").unwrap();
    let obj = dir.path().join("s.o");
    let st = Command::new("as")
        .arg("--64")
        .arg("-o")
        .arg(&obj)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let text = section(&obj, ".text");
    let mut ours = SiteInsn::RepMovsb.bytes();
    ours.extend(SiteInsn::Call(SiteTarget::RepMovsAlternative).bytes());
    assert_eq!(text, ours);
}

fn section(obj: &Path, name: &str) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(obj).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.section_by_name(name)
        .map(|s| s.data().unwrap().to_vec())
        .unwrap_or_default()
}

/// The chain's C text compiled by gcc with the kernel's macros: the site's
/// length and original bytes, each alternative's entry (flags, lengths) and
/// replacement, and then apply_alternatives() over those very entries for
/// every feature set gives what [`Chain::resolve`] says.
fn check_against_gcc(c: &Chain) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("site.c");
    std::fs::write(
        &src,
        format!(
            "{}\nvoid site(void)\n{{\n\tasm volatile(\"1:\\n\\t\"\n\t\t{}\n\t\t\"2:\\n\" ::: \"memory\");\n}}\n",
            copygen::kernel::alternative::c_header(),
            c.c_text(2)
        ),
    )
    .unwrap();
    let obj = dir.path().join("site.o");
    let out = Command::new("gcc")
        .args([
            "-c",
            "-O2",
            "-fcf-protection=none",
            "-fno-asynchronous-unwind-tables",
            "-o",
        ])
        .arg(&obj)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = section(&obj, ".text");
    let len = c.len();
    // The site, then the function's ret.
    assert_eq!(text.len(), len + 1, "{text:x?}");
    let mut old = c.old.bytes();
    old.resize(len, 0x90);
    assert_eq!(text[..len], old[..]);
    let entries = section(&obj, ".altinstructions");
    let repl = section(&obj, ".altinstr_replacement");
    assert_eq!(entries.len(), 14 * c.alts.len());
    let mut at = 0;
    let mut table = Vec::new();
    for (i, a) in c.alts.iter().enumerate() {
        let e = &entries[14 * i..14 * i + 14];
        let flags = u32::from_le_bytes(e[8..12].try_into().unwrap());
        assert_eq!(flags & 0xffff, a.feature.info().kernel_bit as u32);
        assert_eq!(flags >> 16 == 1, a.negate);
        let rlen = e[13] as usize;
        assert_eq!(repl[at..at + rlen], a.insn.bytes()[..]);
        table.push((flags, &repl[at..at + rlen], e[12] as usize));
        at += rlen;
    }
    assert_eq!(at, repl.len());
    // Nested entries are equalised to the longest (apply_alternatives()).
    assert!(table.iter().all(|t| t.2 <= len) && table.last().is_none_or(|t| t.2 == len));
    for f in all_feature_sets() {
        let mut bytes = old.clone();
        for (flags, r, _) in &table {
            let bit = (flags & 0xffff) as u16;
            let has = CpuFeature::from_kernel_bit(bit).is_some_and(|x| f.has(x));
            if has != (flags >> 16 == 1) {
                bytes = r.to_vec();
                bytes.resize(len, 0x90);
            }
        }
        let first = if bytes[0] == 0xe8 { 5 } else { 2 };
        let mut expect = bytes[..first].to_vec();
        expect.extend(optimized_nops(len - first));
        assert_eq!(c.resolve(f).bytes, expect, "{f:?}");
    }
}

#[test]
fn the_chain_is_what_gcc_makes_of_the_kernels_macros() {
    if !tool("gcc") {
        return;
    }
    check_against_gcc(&stock_chain(V6_12));
    check_against_gcc(&chain(
        &wired(&crate::common::catalog_strategy("guarded-movsb-612")),
        V6_12,
    ));
    let body = variant("a", "[\"zen\", \"!fsrm\"]", "b") + &default_variant("m");
    check_against_gcc(&chain(
        &wired(&parse(&format!("name = \"excl\"\n{HEAD}{body}"))),
        V6_12,
    ));
}

fn emit_error(linux: &str, extra: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        format!("name = \"s\"\ndescription = \"d\"\narch = \"x86_64\"\n[linux]\n{linux}\n[methods.m]\nkind = \"rep_movs\"\n{extra}"),
    )
    .unwrap();
    let out = copygen()
        .args(["emit", "--flavor", "linux"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{linux}");
    assert!(out.stdout.is_empty());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_site_option_is_refused_where_it_means_nothing() {
    let per_cpu = variant("f", "[\"fsrm\"]", "m") + &default_variant("m");
    for (linux, extra, want) in [
        (
            "site = \"call\"",
            per_cpu.as_str(),
            "rep_movs_alternative's convention",
        ),
        (
            "convention = \"rep_movs\"\nkernel = \"6.1\"\nsite = \"call\"",
            per_cpu.as_str(),
            "only 6.12's site is inline",
        ),
        (
            "convention = \"rep_movs\"\nuaccess = \"routine\"\nsite = \"call\"",
            per_cpu.as_str(),
            "(`uaccess = \"caller\"`)",
        ),
        (
            "convention = \"rep_movs\"\nsite = \"call\"",
            "[[dispatch]]\nsizes = \"0..\"\nuse = \"m\"\n",
            "without per-CPU variants",
        ),
        (
            "convention = \"rep_movs\"\nsite = \"jump\"",
            per_cpu.as_str(),
            "site",
        ),
    ] {
        let err = emit_error(linux, extra);
        assert!(err.contains("s.toml:"), "{err}");
        assert!(err.contains("`linux.site`"), "{linux}: {err}");
        assert!(err.contains(want), "{linux}: {err}");
    }
    // The one meaningful form parses and comes back out of to_toml.
    let t = parse(&format!("name = \"ok\"\n{HEAD}{per_cpu}"));
    assert!(copygen::front::to_toml::render(&t)
        .unwrap()
        .contains("site = \"call\""));
}

#[test]
fn a_per_cpu_c_convention_strategy_is_unfit_for_6_12s_inline_site() {
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("p.patch");
    let file = dir.path().join("c.toml");
    let body = variant("f", "[\"fsrm\"]", "m") + &default_variant("m");
    std::fs::write(
        &file,
        format!("name = \"c\"\ndescription = \"d\"\narch = \"x86_64\"\n[linux]\nuaccess = \"caller\"\n[methods.m]\nkind = \"rep_movs\"\n{body}"),
    )
    .unwrap();
    let out = copygen()
        .args([
            "kernel-patch",
            "--kernel",
            "6.12",
            "--no-verify",
            "--author",
            "A B <a@b.c>",
            "-o",
        ])
        .arg(&out_file)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("convention = \"rep_movs\""), "{err}");
    assert!(!out_file.exists());
}

/// `kernel-patch guarded-movsb --kernel 6.12` patches the 6.12 form: the
/// chain at copy_user_generic(), the per-CPU table and cost in the message,
/// objtool told of every routine the site calls, no C-convention glue.
#[test]
fn the_6_12_patch_writes_the_chain_and_says_what_each_cpu_runs() {
    let out = copygen()
        .args([
            "kernel-patch",
            "guarded-movsb",
            "--kernel",
            "6.12",
            "--no-verify",
            "--author",
            "A B <a@b.c>",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = String::from_utf8(out.stdout).unwrap();
    assert!(p.contains("Subject: [PATCH] x86/uaccess: Copy user memory with 5 per-CPU variants\n"));
    // Six ALTERNATIVEs: ALTERNATIVE_3 around ALTERNATIVE_3.
    let chain = [
        "+\t\tALTERNATIVE_3(ALTERNATIVE_3(\"call guarded_movsb_612__erms_copy_user\",",
        "+\t\t\t\t\t    \"rep movsb\", X86_FEATURE_FSRM,",
        // checkpatch's 100 columns: a feature on its own line past them.
        "+\t\t\t\t\t    \"call guarded_movsb_612__zen_copy_user\",",
        "+\t\t\t\t\t    X86_FEATURE_ZEN3,",
        "+\t\t\t\t\t    \"call guarded_movsb_612__zen_copy_user\",",
        "+\t\t\t\t\t    X86_FEATURE_ZEN4),",
        "+\t\t\t      \"call guarded_movsb_612__noerms_copy_user\",",
        "+\t\t\t      ALT_NOT(X86_FEATURE_ERMS),",
        "+\t\t\t      \"call guarded_movsb_612__zen_noerms_copy_user\", X86_FEATURE_ZEN1,",
        "+\t\t\t      \"call guarded_movsb_612__zen_noerms_copy_user\", X86_FEATURE_ZEN2)",
        " \t\t\"2:\\n\"",
        " \t\t_ASM_EXTABLE_UA(1b, 2b)",
    ];
    let lines: Vec<&str> = p
        .lines()
        .skip_while(|l| *l != chain[0])
        .take(chain.len())
        .collect();
    assert_eq!(lines, chain);
    assert!(p.contains("-\t\tALTERNATIVE(\"rep movsb\","));
    assert!(!p.contains("copygen_call"), "no C-convention glue");
    for row in [
        "erms+fsrm fsrm rep movsb (stock bytes)",
        "erms erms call guarded_movsb_612__erms_copy_user",
        "erms+fsrm+zen3 zen call guarded_movsb_612__zen_copy_user",
        "erms+fsrm+zen4 zen call guarded_movsb_612__zen_copy_user",
        "zen3 noerms call guarded_movsb_612__noerms_copy_user",
        "zen1 zen_noerms call guarded_movsb_612__zen_noerms_copy_user",
        "erms+zen2 zen_noerms call guarded_movsb_612__zen_noerms_copy_user",
    ] {
        assert!(
            p.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == row),
            "{row}: {p}"
        );
    }
    // Only feature sets a kernel can report: no CPU of two Zen generations.
    let first = |l: &str| l.split_whitespace().next().unwrap_or("").to_string();
    assert!(!p.lines().any(|l| first(l).ends_with("zen3+zen4")), "{p}");
    assert!(p.lines().any(|l| first(l) == "erms+zen4"), "{p}");
    assert!(p.contains("0 bytes of .text"), "{p}");
    for name in [
        "copygen_copy_user",
        "guarded_movsb_612__zen_copy_user",
        "guarded_movsb_612__fsrm_copy_user",
        "guarded_movsb_612__erms_copy_user",
        "guarded_movsb_612__noerms_copy_user",
        "guarded_movsb_612__zen_noerms_copy_user",
    ] {
        assert!(
            p.contains(&format!(
                "+\t\"{name}\", /* copygen: called with STAC done */"
            )),
            "{name}"
        );
    }
}

fn routines_of(t: &Strategy) -> Vec<String> {
    let mut names = vec!["copygen_copy_user".to_string()];
    for v in &t.variants {
        names.push(format!("{}__{}_copy_user", t.symbol, v.name));
    }
    names
}

#[test]
fn the_static_site_check_passes_the_chain_and_refuses_a_wrong_one() {
    use copygen::checks::static_verify::site::check_sites;
    let t = wired(&crate::common::catalog_strategy("guarded-movsb-612"));
    let good = chain(&t, V6_12);
    let names = routines_of(&t);
    let rows = check_sites(&t, V6_12, &good, &names).unwrap();
    // Every combination of the bits the variants name (erms, fsrm, zen1,
    // zen2, zen3, zen4), whether or not a kernel can report it.
    assert_eq!(rows.len(), 64);
    let intel = rows
        .iter()
        .find(|r| r.features == features(&[Erms, Fsrm]))
        .unwrap();
    assert!(intel.stock && intel.variant == "fsrm", "{intel:?}");
    assert!(intel.insns[0].starts_with("rep movsb"), "{:?}", intel.insns);
    let zen4 = rows
        .iter()
        .find(|r| r.features == features(&[Erms, Fsrm, Zen4]))
        .unwrap();
    assert!(!zen4.stock && zen4.variant == "zen", "{zen4:?}");
    // Zen 3's alternative calling the erms routine: the wrong variant there.
    let mut wrong = good.clone();
    let zen = wrong.alts.iter_mut().find(|a| a.feature == Zen3).unwrap();
    zen.insn = SiteInsn::Call(SiteTarget::Routine(
        "guarded_movsb_612__erms_copy_user".into(),
    ));
    let err = check_sites(&t, V6_12, &wrong, &names).unwrap_err();
    assert!(
        err.iter()
            .any(|e| e.starts_with("erms+zen3: calls guarded_movsb_612__erms_copy_user, neither")),
        "{err:?}"
    );
    // rep movsb where the variant is not one.
    let mut movsb = good.clone();
    movsb
        .alts
        .iter_mut()
        .find(|a| a.feature == Zen4)
        .unwrap()
        .insn = SiteInsn::RepMovsb;
    let err = check_sites(&t, V6_12, &movsb, &names).unwrap_err();
    assert!(
        err.iter().any(|e| e.contains("variant `zen` is not one")),
        "{err:?}"
    );
    // A routine the static check did not pass.
    let err = check_sites(&t, V6_12, &good, &names[..1]).unwrap_err();
    assert!(
        err.iter()
            .any(|e| e.contains("which the static check did not pass")),
        "{err:?}"
    );
}
