//! The stock kernel's copy routine from the tree itself: Debian's 6.1 and
//! 6.12 `arch/x86/lib/copy_user_64.o`, built by kbuild, with its
//! alternatives applied per feature set as `apply_alternatives()` applies
//! them. Each feature set that selects a different path gets the path's
//! own bytes; the placed routines copy, and report exactly the bytes left
//! after a fault; 6.1's site runs end to end through the CLI; a bad
//! `--tree` or `--stock-features` is a located error. Needs the trees (or
//! Debian's linux-source tarballs, which verify/install-deps installs):
//! without them each test says SKIPPED and passes.

use std::process::Command;

use copygen::arch::cpu::CpuFeatures;
use copygen::checks::objfile::decode_x86;
use copygen::front::strategy::{Arch, Convention, KernelVersion};
use copygen::jit::site::{JitSite, SiteArgs};
use copygen::kernel::site::SiteTarget;
use copygen::tools::bench::site::{site_subject, stock_subject, KernelModel};
use copygen::tools::bench::stock::{StockFeatures, StockObject};

use crate::common;
use common::site::{copies, pattern, stock_object};

const PAGE: usize = 4096;

fn load(k: KernelVersion) -> Option<StockObject> {
    stock_object(k)
}

fn feat(erms: bool, fsrm: bool, rep_good: bool) -> StockFeatures {
    StockFeatures {
        erms,
        fsrm,
        rep_good,
    }
}

/// The bytes of `name` as a CPU with `f` runs them.
fn function_bytes(o: &StockObject, f: StockFeatures, name: &str) -> Vec<u8> {
    let p = o.patched(f).unwrap();
    let s = p.function(name).unwrap();
    p.code[".text"][s.start as usize..s.end as usize].to_vec()
}

fn text(bytes: &[u8]) -> Vec<String> {
    decode_x86(Arch::X86_64, bytes, 0)
        .iter()
        .map(copygen::checks::objfile::format_x86)
        .collect()
}

#[test]
fn linux_6_12_erms_runs_rep_movsb_and_no_erms_the_movsq_path() {
    let Some(o) = load(KernelVersion::V6_12) else {
        return;
    };
    let erms = feat(true, false, true);
    let none = feat(false, false, true);
    assert_eq!(o.called(erms), Some("rep_movs_alternative"));
    assert_eq!(o.called(none), Some("rep_movs_alternative"));
    // FSRM: the site is the inline rep movsb, nothing is called.
    assert_eq!(o.called(feat(true, true, true)), None);
    assert!(o
        .path(feat(true, true, true))
        .unwrap()
        .contains("inline rep movsb"));
    let with = function_bytes(&o, erms, "rep_movs_alternative");
    let without = function_bytes(&o, none, "rep_movs_alternative");
    assert_eq!(with.len(), without.len());
    let diff: Vec<usize> = (0..with.len()).filter(|&i| with[i] != without[i]).collect();
    // The one ALTERNATIVE: `jmp .Llarge_movsq` (2 bytes) or `rep movsb`.
    assert!(!diff.is_empty() && diff.len() <= 2, "{diff:?}");
    let at = diff[0];
    assert_eq!(&with[at..at + 2], &[0xf3, 0xa4]);
    assert_eq!(without[at], 0xeb, "a short jmp to .Llarge_movsq");
    // Without ERMS the routine reaches rep movsq, with ERMS it never does
    // (the bytes stay, behind the rep movsb and its ret).
    assert!(text(&without).iter().any(|t| t.contains("rep movsq")));
    let pe = o.path(erms).unwrap();
    assert!(
        pe.starts_with("6.12: rep_movs_alternative")
            && pe.contains(": rep movsb")
            && pe.contains("(X86_FEATURE_ERMS applied)"),
        "{pe}"
    );
    let pn = o.path(none).unwrap();
    assert!(
        pn.contains("jmp") && pn.contains("original: no X86_FEATURE_ERMS"),
        "{pn}"
    );
}

#[test]
fn linux_6_1_calls_unrolled_string_or_enhanced_by_rep_good_and_erms() {
    let Some(o) = load(KernelVersion::V6_1) else {
        return;
    };
    assert_eq!(
        o.called(feat(false, false, false)),
        Some("copy_user_generic_unrolled")
    );
    assert_eq!(
        o.called(feat(false, false, true)),
        Some("copy_user_generic_string")
    );
    assert_eq!(
        o.called(feat(true, false, true)),
        Some("copy_user_enhanced_fast_string")
    );
    assert_eq!(
        o.called(feat(true, true, true)),
        Some("copy_user_enhanced_fast_string")
    );
    // Inside copy_user_enhanced_fast_string, FSRM turns the short-copy
    // test into NOPs: rep movsb from the first byte.
    let fsrm = function_bytes(&o, feat(true, true, true), "copy_user_enhanced_fast_string");
    let erms = function_bytes(
        &o,
        feat(true, false, true),
        "copy_user_enhanced_fast_string",
    );
    let tf = text(&fsrm);
    let te = text(&erms);
    assert!(
        te.iter()
            .any(|t| t.starts_with("cmp") && t.contains("0x40")),
        "{te:?}"
    );
    assert!(!tf.iter().any(|t| t.starts_with("cmp")), "{tf:?}");
    // optimize_nops(): the 3-byte STAC NOP, then the 5 bytes of `cmpl
    // $64,%edx; jb` as one 5-byte NOP, then rep movsb.
    assert_eq!(&fsrm[..3], &[0x0f, 0x1f, 0x00]);
    assert_eq!(&fsrm[3..8], &[0x0f, 0x1f, 0x44, 0, 0]);
    let p = o.path(feat(true, true, true)).unwrap();
    assert!(
        p.starts_with("6.1: copy_user_enhanced_fast_string")
            && p.contains("X86_FEATURE_FSRM applied"),
        "{p}"
    );
    let p = o.path(feat(true, false, true)).unwrap();
    assert!(p.contains("original: no X86_FEATURE_FSRM"), "{p}");
    // STAC/CLAC (SMAP, absent) stay NOPs and become the kernel's 3-byte NOP.
    let s = function_bytes(&o, feat(false, false, true), "copy_user_generic_string");
    assert_eq!(&s[..3], &[0x0f, 0x1f, 0x00]);
}

#[test]
fn every_return_is_a_plain_ret_and_every_branch_stays_in_the_object() {
    for k in [KernelVersion::V6_1, KernelVersion::V6_12] {
        let Some(o) = load(k) else {
            return;
        };
        for f in [
            feat(false, false, false),
            feat(false, false, true),
            feat(true, false, true),
            feat(true, true, true),
        ] {
            let placed = o.placed(f).unwrap();
            let len = placed.bytes.len() as u64;
            let text_len = o.patched(f).unwrap().code[".text"].len();
            {
                let name = "the routines' .text";
                let insns = decode_x86(Arch::X86_64, &placed.bytes[..text_len], 0);
                assert!(
                    insns
                        .iter()
                        .any(|i| i.mnemonic() == iced_x86::Mnemonic::Ret),
                    "{name}: no ret"
                );
                // CONFIG_RETHUNK's `jmp __x86_return_thunk` is gone.
                assert!(!placed.bytes.windows(5).any(|w| w == [0xe9, 0, 0, 0, 0]));
                for i in &insns {
                    assert!(
                        !matches!(
                            i.mnemonic(),
                            iced_x86::Mnemonic::Stac | iced_x86::Mnemonic::Clac
                        ),
                        "{name}"
                    );
                    if i.is_jmp_short_or_near() || i.is_jcc_short_or_near() || i.is_call_near() {
                        assert!(
                            i.near_branch_target() < len,
                            "{} {name}: {:#x} leaves",
                            k.name(),
                            i.ip()
                        );
                    }
                }
            }
        }
    }
}

/// A source whose byte `k` is the first of an inaccessible page: exactly
/// `n - k` bytes are left, the first `k` copied.
fn faults(site: &JitSite, k: usize, n: usize) {
    // SAFETY: a fresh anonymous mapping, unmapped below.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            3 * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        ) as *mut u8;
        assert_ne!(p as *mut libc::c_void, libc::MAP_FAILED);
        assert_eq!(
            libc::mprotect(p.add(2 * PAGE).cast(), PAGE, libc::PROT_NONE),
            0
        );
        let from = p.add(2 * PAGE - k);
        std::ptr::copy_nonoverlapping(pattern(k, 3).as_ptr(), from, k);
        let mut dst = vec![0u8; n];
        let args = [SiteArgs {
            to: dst.as_mut_ptr(),
            from,
            n,
        }];
        let left = site.run(0, args.as_ptr(), 1, 0) as usize;
        libc::munmap(p.cast(), 3 * PAGE);
        assert_eq!(left, n - k, "k {k} n {n}");
        assert_eq!(&dst[..k], &pattern(k, 3)[..], "k {k} n {n}");
    }
}

fn model(o: &StockObject, f: StockFeatures) -> KernelModel {
    KernelModel::from_object(o.clone(), f, CpuFeatures::from_list(&[]), true).unwrap()
}

#[test]
fn the_trees_routines_copy_and_leave_exactly_the_bytes_not_copied() {
    for (k, sets) in [
        (
            KernelVersion::V6_12,
            vec![
                feat(true, false, true),
                feat(false, false, true),
                feat(true, true, true),
            ],
        ),
        (
            KernelVersion::V6_1,
            vec![
                feat(false, false, false),
                feat(false, false, true),
                feat(true, false, true),
                feat(true, true, true),
            ],
        ),
    ] {
        let Some(o) = load(k) else {
            return;
        };
        for f in sets {
            let m = model(&o, f);
            let code = m.stock_site();
            match (k, o.called(f)) {
                (KernelVersion::V6_1, Some(r)) => {
                    assert_eq!(code.convention, Convention::C);
                    assert_eq!(code.calls[0].target, SiteTarget::Routine(r.into()));
                }
                (_, Some(_)) => assert_eq!(code.calls[0].target, SiteTarget::RepMovsAlternative),
                (_, None) => assert!(code.calls.is_empty()),
            }
            let site = stock_subject(&m).unwrap().site;
            for n in (0..=80).chain([127, 128, 200, 1000, 4096, 5000]) {
                copies(&site, n, n, n % 7, n % 5);
            }
            for (kk, n) in [(0, 9), (5, 64), (17, 100), (1000, 2048), (3000, 5000)] {
                faults(&site, kk, n);
            }
        }
    }
}

#[test]
fn a_patched_6_1_site_calls_the_strategy_in_its_own_convention() {
    let Some(o) = load(KernelVersion::V6_1) else {
        return;
    };
    let cat = copygen::front::catalog::catalog().unwrap();
    for name in ["guarded-movsb", "movs-alternative"] {
        let s = cat.iter().find(|s| s.name == name).unwrap();
        let m = model(&o, feat(true, true, true));
        let site = site_subject(s, &m).unwrap().site;
        assert_eq!(site.site().convention, s.linux.convention, "{name}");
        for n in [0, 1, 15, 64, 65, 300, 4096] {
            copies(&site, n, n, 3, 1);
        }
    }
}

fn copygen(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn bench_site_kernel_6_1_runs_the_stock_and_the_patched_site() {
    if load(KernelVersion::V6_1).is_none() {
        return;
    }
    for force in [None, Some("-erms,-fsrm")] {
        let mut args = vec![
            "bench",
            "--site",
            "kernel",
            "--site-kernel",
            "6.1",
            "guarded-movsb",
            "--sizes",
            "8,64,144",
            "--repeats",
            "1",
        ];
        if let Some(f) = force {
            args.extend(["--stock-features", f]);
        }
        let out = copygen(&args);
        let so = String::from_utf8_lossy(&out.stdout);
        let se = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{so}\n{se}");
        assert!(so.contains("stock path: 6.1: copy_user_"), "{so}");
        assert!(so.contains("site stock 6.1: e8 00 00 00 00"), "{so}");
        assert!(so.contains("guarded-movsb"), "{so}");
        for row in ["8", "64", "144"] {
            assert!(
                so.lines().any(|l| l.starts_with(row) && l.contains('x')),
                "{row}: {so}"
            );
        }
        if force.is_some() {
            // Without ERMS (REP_GOOD kept): copy_user_generic_string, and
            // the output says whose timing it is.
            assert!(
                so.contains("stock path: 6.1: copy_user_generic_string"),
                "{so}"
            );
            assert!(so.contains("timed on this CPU"), "{so}");
        }
    }
}

#[test]
fn bad_trees_and_feature_lists_are_located_errors() {
    let out = copygen(&[
        "bench",
        "--site",
        "kernel",
        "movs-alternative",
        "--tree",
        "/nonexistent/linux",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--tree /nonexistent/linux") && e.contains("no kernel tree there"),
        "{e}"
    );
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    let out = copygen(&[
        "bench",
        "--site",
        "kernel",
        "movs-alternative",
        "--stock-features",
        "-erms,-avx",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--stock-features") && e.contains("`-avx`"),
        "{e}"
    );
    // A 6.12 tree named for 6.1.
    let Some(o) = load(KernelVersion::V6_12) else {
        return;
    };
    let t = o.tree.display().to_string();
    let out = copygen(&[
        "bench",
        "--site",
        "kernel",
        "--site-kernel",
        "6.1",
        "movs-alternative",
        "--tree",
        &t,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains(&format!("--tree {t}")) && e.contains("Linux 6.12, not 6.1"),
        "{e}"
    );
}

/// `--stock-features` changes the bits every site and variant is resolved
/// for, not the stock code's alone (without REP_GOOD a patched 6.1 site
/// takes its unrolled entry, as the stock one calls `_unrolled`); other
/// bits stay as they are. A feature named twice is refused.
#[test]
fn forced_features_reach_every_site_and_are_named_once() {
    use copygen::front::variant::CpuFeature::{Erms, Fsrm, RepGood, Zen, Zen3};
    let all = StockFeatures {
        erms: true,
        fsrm: true,
        rep_good: true,
    };
    let base = CpuFeatures::from_list(&[Zen, Zen3, Erms, Fsrm, RepGood]);
    let none = all.with("-erms,-fsrm,-rep_good").unwrap();
    assert_eq!(
        none.cpu_features(base),
        CpuFeatures::from_list(&[Zen, Zen3])
    );
    let no_rep_good = all.with("-rep_good").unwrap();
    assert_eq!(
        no_rep_good.cpu_features(base),
        CpuFeatures::from_list(&[Zen, Zen3, Erms, Fsrm])
    );
    assert_eq!(
        none.with("+rep_good")
            .unwrap()
            .cpu_features(CpuFeatures::default()),
        CpuFeatures::from_list(&[RepGood])
    );
    for spec in ["erms,-erms", "-fsrm,+fsrm", "rep_good, rep_good"] {
        let e = all.with(spec).unwrap_err();
        assert!(e.contains("is named twice"), "{spec}: {e}");
    }
}
