//! `copygen bench --site kernel`: the kernel's call site JIT-compiled
//! inline in the timing loop. The inline `rep movsb` site copies and
//! leaves rcx = 0 (or the bytes left after a fault, resuming after the
//! site); a call site reaches its routine and returns rcx = bytes left;
//! the loop keeps the registers it must; the adapter resolves the sites
//! the brief's CPUs run, in the convention the kernel's glue calls; a site
//! no patch can make is refused; bad options are located errors.
//! Behaviour only, never speed.

use std::process::Command;

use copygen::arch::cpu::CpuFeatures;
use copygen::front::strategy::{Convention, Direction, Flavor, KernelVersion};
use copygen::front::variant::CpuFeature;
use copygen::jit::site::{compile_site, site_form, JitSite, SiteArgs, SiteError, CONTEXTS};
use copygen::kernel::site::{SiteCall, SiteCode, SiteTarget};
use copygen::kernel::symbols::REP_MOVS_ALTERNATIVE;
use copygen::kernel::symbols::{GLUE_SYMBOL, GLUE_SYMBOL_ERMS, GLUE_SYMBOL_REP_GOOD};
use copygen::lower::entry_symbol;
use copygen::lower::variants::{select, variant_strategy, variant_symbol};
use copygen::tools::bench::site::{resolve_site, site_subject, stock_subject, wired, KernelModel};
use copygen::tools::bench::stock::StockFeatures;

use crate::common;
use common::site::{copies, pattern, stock_object};

const PAGE: usize = 4096;
const INLINE: [u8; 5] = [0xf3, 0xa4, 0x0f, 0x1f, 0x00];

fn intel() -> CpuFeatures {
    CpuFeatures::from_list(&[CpuFeature::Erms, CpuFeature::Fsrm])
}
/// A Zen 4: the CPUs guarded-movsb's alias guard is for.
fn zen() -> CpuFeatures {
    CpuFeatures::from_list(&[
        CpuFeature::Erms,
        CpuFeature::Fsrm,
        CpuFeature::Zen,
        CpuFeature::Zen4,
    ])
}
fn old() -> CpuFeatures {
    CpuFeatures::from_list(&[CpuFeature::Erms])
}

/// The stock kernel `k` from its tree, for a CPU with `f` (REP_GOOD set);
/// `None`, SKIPPED said loudly, without a tree or Debian's tarball.
fn model(k: KernelVersion, f: CpuFeatures) -> Option<KernelModel> {
    let stock = stock_object(k)?;
    let sf = StockFeatures {
        erms: f.has(CpuFeature::Erms),
        fsrm: f.has(CpuFeature::Fsrm),
        rep_good: true,
    };
    Some(KernelModel::from_object(stock, sf, f, false).unwrap())
}

/// `pages` read-write pages then one PROT_NONE page.
struct Guarded {
    ptr: *mut u8,
    pages: usize,
}

impl Guarded {
    fn new(pages: usize) -> Guarded {
        // SAFETY: a fresh anonymous mapping, unmapped in Drop.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                (pages + 1) * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let ptr = p as *mut u8;
            assert_eq!(
                libc::mprotect(ptr.add(pages * PAGE).cast(), PAGE, libc::PROT_NONE),
                0
            );
            Guarded { ptr, pages }
        }
    }
    /// The address `k` bytes before the guard page.
    fn before_guard(&self, k: usize) -> *mut u8 {
        // SAFETY: k is at most the accessible size.
        unsafe { self.ptr.add(self.pages * PAGE - k) }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        // SAFETY: our mapping.
        unsafe { libc::munmap(self.ptr.cast(), (self.pages + 1) * PAGE) };
    }
}

/// Copy from a source whose first inaccessible byte is `k` bytes in:
/// `n - k` bytes are left (`exact`), or at least that many with the bytes
/// reported copied really copied (a bare `rep movsb`).
fn faults(site: &JitSite, k: usize, n: usize, exact: bool) {
    let g = Guarded::new(2);
    let from = g.before_guard(k);
    // SAFETY: k accessible bytes at `from`.
    unsafe { std::ptr::copy_nonoverlapping(pattern(k, 3).as_ptr(), from, k) };
    let mut dst = vec![0u8; n];
    let args = [SiteArgs {
        to: dst.as_mut_ptr(),
        from,
        n,
    }];
    // SAFETY: the bytes past `k` fault, which the site's or the routine's
    // exception table covers.
    let left = unsafe { site.run(0, args.as_ptr(), 1, 0) } as usize;
    if exact {
        assert_eq!(left, n - k, "k {k} n {n}");
    } else {
        assert!((n - k..=n).contains(&left), "k {k} n {n}: {left} left");
    }
    assert_eq!(&dst[..n - left], &pattern(k, 3)[..n - left], "k {k} n {n}");
}

/// The site's bytes sit verbatim in every loop, and each rel32 reaches
/// `target` (an offset in the site's code).
fn placed(site: &JitSite, code: &SiteCode, target: Option<usize>) {
    for c in 0..CONTEXTS {
        let at = site.site_offset(c);
        let loop_start = site.loop_entry(c) as usize - site.code().as_ptr() as usize;
        assert!(at > loop_start && at < loop_start + site.loop_code(c).len());
        let bytes = &site.code()[at..at + code.bytes.len()];
        match (target, &code.calls[..]) {
            (None, []) => assert_eq!(bytes, &code.bytes[..], "context {c}"),
            (Some(t), [call]) => {
                assert_eq!(bytes[call.at - 1], 0xe8);
                let rel = i32::from_le_bytes(bytes[call.at..call.at + 4].try_into().unwrap());
                assert_eq!(
                    (at + call.at + 4) as i64 + i64::from(rel),
                    t as i64,
                    "context {c}"
                );
            }
            other => panic!("unexpected site shape {other:?}"),
        }
    }
}

#[test]
fn the_stock_site_is_inline_rep_movsb_on_fsrm_and_a_call_of_rep_movs_alternative_else() {
    let k = KernelVersion::V6_12;
    let inline = resolve_site(None, k, intel()).unwrap();
    assert_eq!(inline.bytes, INLINE);
    assert!(inline.calls.is_empty());
    assert_eq!(resolve_site(None, k, zen()).unwrap(), inline);
    let call = resolve_site(None, k, old()).unwrap();
    assert_eq!(call.bytes.len(), 5);
    assert_eq!(call.bytes[0], 0xe8);
    assert_eq!(
        call.calls,
        vec![SiteCall {
            at: 1,
            target: SiteTarget::RepMovsAlternative
        }]
    );
    // 6.1: a call of the routine alternative_call_2 picks, C convention.
    let c = resolve_site(None, KernelVersion::V6_1, intel()).unwrap();
    assert_eq!(c.convention, Convention::C);
    assert_eq!(
        c.calls[0].target,
        SiteTarget::Routine("copy_user_enhanced_fast_string".into())
    );
}

#[test]
fn guarded_movsb_612_on_an_fsrm_cpu_without_the_cliff_is_the_stock_site() {
    let k = KernelVersion::V6_12;
    let gm = common::catalog_strategy("guarded-movsb-612");
    assert_eq!(
        resolve_site(Some(&gm), k, intel()).unwrap(),
        resolve_site(None, k, intel()).unwrap()
    );
    // On Zen the alias guard runs: a call of the zen variant's routine.
    let z = resolve_site(Some(&gm), k, zen()).unwrap();
    assert!(
        matches!(&z.calls[..], [SiteCall { at: 1, target: SiteTarget::Routine(s) }] if s.contains("zen")),
        "{z:?}"
    );
    // ERMS without FSRM: the erms variant (head/tail, then rep movsb).
    let l = resolve_site(Some(&gm), k, old()).unwrap();
    assert!(
        matches!(&l.calls[..], [SiteCall { target: SiteTarget::Routine(s), .. }] if s.contains("__erms_")),
        "{l:?}"
    );
    // A strategy in the C convention is no chain: the glue calls its
    // routine on every CPU, in the C convention (rdx = n -> rax), as
    // kernel-patch wires raw_copy_{from,to}_user.
    let c = common::catalog_strategy("unrolled64");
    for f in [intel(), zen(), old()] {
        let site = resolve_site(Some(&c), k, f).unwrap();
        assert_eq!(
            site.calls[0].target,
            SiteTarget::Routine(GLUE_SYMBOL.into())
        );
        assert_eq!(site.convention, Convention::C);
    }
}

#[test]
fn a_rep_movs_strategy_without_variants_replaces_rep_movs_alternative() {
    // kernel-patch builds it instead of copy_user_64.o: the stock site's
    // call reaches the strategy's routine, not the tree's.
    let ma = common::catalog_strategy("guarded-movsb-612");
    let mut plain = variant_strategy(&ma, select(&ma, old()).unwrap());
    plain.name = "erms-only".into();
    let k = KernelVersion::V6_12;
    let code = resolve_site(Some(&plain), k, old()).unwrap();
    assert_eq!(code, resolve_site(None, k, old()).unwrap());
    let Some(m) = model(k, old()) else {
        return;
    };
    let site = site_subject(&plain, &m).unwrap().site;
    let stock = stock_subject(&m).unwrap().site;
    let at = site.routine_offset(REP_MOVS_ALTERNATIVE).unwrap();
    // The strategy's routine comes first in the buffer; the tree's is
    // placed after every compiled routine.
    assert!(at < stock.routine_offset(REP_MOVS_ALTERNATIVE).unwrap());
    assert_eq!(
        site.code()[at..at + 4],
        [0x48, 0x83, 0xf9, 0x40],
        "cmp $64, %rcx"
    );
    placed(&site, &code, Some(at));
    copies_and_faults(&site);
}

#[test]
fn the_inline_site_copies_and_leaves_rcx_zero() {
    let code = resolve_site(None, KernelVersion::V6_12, intel()).unwrap();
    let site = compile_site(&code, &[], intel()).unwrap();
    placed(&site, &code, None);
    for c in 0..CONTEXTS {
        for n in [0, 1, 7, 8, 63, 64, 65, 1000, 4096] {
            copies(&site, c, n, c, 2 * c + 1);
        }
    }
}

#[test]
fn a_fault_in_the_inline_site_resumes_after_it_with_rcx_bytes_left() {
    let Some(m) = model(KernelVersion::V6_12, intel()) else {
        return;
    };
    let site = stock_subject(&m).unwrap().site;
    for (k, n) in [(0, 10), (5, 100), (100, 4096)] {
        faults(&site, k, n, false);
    }
}

#[test]
fn the_call_site_reaches_rep_movs_alternative_and_returns_bytes_left() {
    let code = resolve_site(None, KernelVersion::V6_12, old()).unwrap();
    let Some(m) = model(KernelVersion::V6_12, old()) else {
        return;
    };
    let site = stock_subject(&m).unwrap().site;
    let target = site.routine_offset(REP_MOVS_ALTERNATIVE).unwrap();
    placed(&site, &code, Some(target));
    for n in (0..=70).chain([100, 1000, 5000]) {
        copies(&site, n % CONTEXTS, n, n % 5, n % 3);
    }
    // The tree's rep_movs_alternative is exact: rcx is exactly the bytes
    // not copied.
    for (k, n) in [(0, 9), (3, 40), (20, 60), (100, 300), (3000, 5000)] {
        faults(&site, k, n, true);
    }
}

/// Copies in the band (dst - src mod 4096 in 1..15) and outside it, and
/// exact bytes left after faults.
fn copies_and_faults(site: &JitSite) {
    for n in [0, 5, 64, 65, 1024, 3000] {
        for (s, d) in [(0, 0), (0, 5), (3, 18), (64, 64 + 15), (7, 0)] {
            copies(site, n % CONTEXTS, n, s, d);
        }
    }
    for (k, n) in [(0, 9), (17, 64), (1000, 2048)] {
        faults(site, k, n, true);
    }
}

#[test]
fn a_rep_movs_per_cpu_site_calls_the_variant_routine_directly() {
    let gm = common::catalog_strategy("guarded-movsb-612");
    let code = resolve_site(Some(&gm), KernelVersion::V6_12, zen()).unwrap();
    let SiteTarget::Routine(sym) = code.calls[0].target.clone() else {
        panic!("a call of a routine");
    };
    let Some(m) = model(KernelVersion::V6_12, zen()) else {
        return;
    };
    let site = site_subject(&gm, &m).unwrap().site;
    placed(&site, &code, site.routine_offset(&sym));
    copies_and_faults(&site);
}

#[test]
fn a_6_1_site_reaches_the_variant_through_the_routine_alternative_call_2_picks() {
    // 6.1's glue calls one of guarded-movsb's three entry points in the C
    // convention, chosen as the tree's alternative_call_2 chooses. As
    // alternatives leave them: on a Zen 3 the ERMS routine's first slot
    // jumps to `zen`, on a Zen 4 its second; a Zen 5 (6.1 marks it with no
    // generation bit) and an Intel CPU with FSRM take the third slot's jump
    // to `fsrm`; on an Intel CPU with ERMS and no FSRM the three slots are
    // NOPs and it runs on into `erms`, placed right after them; on Zen 1
    // (no ERMS) the
    // REP_GOOD routine's slots are NOPs and it runs into `zen_movsq`, where
    // an Intel CPU without ERMS takes its second slot's jump to `movsq`.
    use CpuFeature::{Erms, Fsrm, RepGood, Zen, Zen1, Zen3, Zen4};
    let gm = common::catalog_strategy("guarded-movsb");
    let k = KernelVersion::V6_1;
    let wired = wired(&gm, k).unwrap();
    let cpu = CpuFeatures::from_list;
    let erms = GLUE_SYMBOL_ERMS;
    for (f, entry_symbol, variant, jumps) in [
        (cpu(&[Erms, Fsrm, Zen, Zen3, RepGood]), erms, "zen", 1),
        (cpu(&[Erms, Fsrm, Zen, Zen4, RepGood]), erms, "zen", 1),
        (cpu(&[Erms, Fsrm, Zen, RepGood]), erms, "fsrm", 1),
        (cpu(&[Erms, Fsrm, RepGood]), erms, "fsrm", 1),
        (cpu(&[Erms, RepGood]), erms, "erms", 0),
        (
            cpu(&[Zen, Zen1, RepGood]),
            GLUE_SYMBOL_REP_GOOD,
            "zen_movsq",
            0,
        ),
        (cpu(&[RepGood]), GLUE_SYMBOL_REP_GOOD, "movsq", 1),
    ] {
        let code = resolve_site(Some(&gm), k, f).unwrap();
        assert_eq!(code.convention, Convention::C);
        let SiteTarget::Routine(entry) = code.calls[0].target.clone() else {
            panic!("a call of a routine");
        };
        assert_eq!(entry, entry_symbol);
        let v = select(&gm, f).unwrap();
        assert_eq!(v.name, variant);
        let Some(m) = model(k, f) else {
            return;
        };
        let site = site_subject(&gm, &m).unwrap().site;
        let at = site.routine_offset(&entry).unwrap();
        placed(&site, &code, Some(at));
        let symbol = variant_symbol(&wired, v, Flavor::Linux, Direction::FromUser);
        let routine = site.routine_offset(&symbol).unwrap();
        assert_eq!(
            follow_slots(site.code(), at, routine),
            (routine, jumps),
            "{variant}"
        );
        copies_and_faults(&site);
    }
}

/// Runs the patched slots from `at` the way the CPU does, through the
/// kernel's 5-byte NOPs and `e9 rel32` jumps, until `stop` or any other
/// instruction: where that is, and how many jumps it took.
fn follow_slots(code: &[u8], mut at: usize, stop: usize) -> (usize, usize) {
    let nop5 = [0x0f, 0x1f, 0x44, 0x00, 0x00];
    let mut jumps = 0;
    while at != stop && jumps <= 8 {
        match code.get(at..at + 5) {
            Some(n) if n == nop5 => at += 5,
            Some([0xe9, rel @ ..]) => {
                let rel = i32::from_le_bytes(rel.try_into().unwrap());
                at = (at as i64 + 5 + i64::from(rel)) as usize;
                jumps += 1;
            }
            _ => break,
        }
    }
    (at, jumps)
}

#[test]
fn a_site_no_patch_can_make_is_refused() {
    // A per-CPU strategy in the C convention has no 6.12 site (kernel-patch
    // refuses it): the bench refuses it with the same reason, located at
    // the field, before it reads a tree.
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/generator/strategies/guarded-movsb.toml"
    );
    let o = copygen(&["bench", "--site", "kernel", file, "--sizes", "8"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(o.stdout.is_empty());
    let line = crate::common::source_lines::line_starting_with(
        "generator/strategies/guarded-movsb.toml",
        "[linux]",
    );
    assert!(
        err.starts_with(&format!(
            "{file}:{line}:2: error in `linux.convention`: 6.12 inlines copy_user_generic()"
        )),
        "{err}"
    );
    assert!(err.contains("convention = \"rep_movs\""), "{err}");
    let gm = common::catalog_strategy("guarded-movsb");
    let Some(m) = model(KernelVersion::V6_12, zen()) else {
        return;
    };
    let Err(e) = site_subject(&gm, &m) else {
        panic!("guarded-movsb has no 6.12 site");
    };
    let e = format!("{e:#}");
    assert!(
        e.contains("guarded-movsb: 6.12 inlines copy_user_generic()"),
        "{e}"
    );
    assert!(e.contains("guarded-movsb-612"), "{e}");
    // The harness links a routine only at a site of its own convention.
    let c = common::catalog_strategy("unrolled64");
    let sym = entry_symbol(&c, Flavor::Linux, Direction::FromUser, None);
    let at_rep_movs_site = SiteCode {
        bytes: vec![0xe8, 0, 0, 0, 0],
        calls: vec![SiteCall {
            at: 1,
            target: SiteTarget::Routine(sym),
        }],
        convention: Convention::RepMovs,
    };
    match compile_site(&at_rep_movs_site, &[site_form(&c)], intel()) {
        Err(e @ SiteError::Convention { .. }) => {
            let e = e.to_string();
            assert!(
                e.contains("unrolled64: a routine in the `c` convention at a site in the `rep_movs` convention"),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_rep_movs_strategy_is_called_directly() {
    let ma = common::catalog_strategy("movs-alternative");
    let sym = ma.linux.both.clone().unwrap();
    let code = SiteCode {
        bytes: vec![0xe8, 0, 0, 0, 0],
        calls: vec![SiteCall {
            at: 1,
            target: SiteTarget::Routine(sym.clone()),
        }],
        convention: Convention::RepMovs,
    };
    let site = compile_site(&code, &[site_form(&ma)], intel()).unwrap();
    placed(&site, &code, site.routine_offset(&sym));
    copies(&site, 0, 77, 1, 2);
}

#[test]
fn the_loop_reloads_what_the_site_clobbers_and_keeps_the_callers_registers() {
    // rep movsb, then rax, rdi, rsi and the flags clobbered.
    let code = SiteCode {
        bytes: vec![
            0xf3, 0xa4, // rep movsb
            0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff, // mov rax, -1
            0x48, 0x31, 0xff, // xor rdi, rdi
            0x48, 0x31, 0xf6, // xor rsi, rsi
            0x48, 0x85, 0xc0, // test rax, rax
        ],
        calls: Vec::new(),
        convention: Convention::RepMovs,
    };
    let site = compile_site(&code, &[], intel()).unwrap();
    let src = pattern(64 * 40, 9);
    let mut dst = vec![0u8; 64 * 40];
    let args: Vec<SiteArgs> = (0..37)
        .map(|i| SiteArgs {
            to: dst[i * 64..].as_mut_ptr(),
            from: src[i * 64 + 1..].as_ptr(),
            n: i + 1,
        })
        .collect();
    let (mut a, mut b, mut c, mut d): (u64, u64, u64, u64) =
        (0x1212u64, 0x1313u64, 0x1414u64, 0x1515u64);
    let (left, rbx): (u64, u64);
    // SAFETY: every entry's buffers hold its n bytes; the loop is a
    // sysv64 function of (args, count, stride).
    unsafe {
        core::arch::asm!(
            "push rbx",
            "mov rbx, 0x1b1b",
            "call {f}",
            "mov rdx, rbx",
            "pop rbx",
            f = in(reg) site.loop_entry(3),
            in("rdi") args.as_ptr(),
            in("rsi") args.len() as u64,
            inout("rdx") std::mem::size_of::<SiteArgs>() as u64 => rbx,
            inout("r12") a,
            inout("r13") b,
            inout("r14") c,
            inout("r15") d,
            lateout("rax") left,
            clobber_abi("sysv64"),
        );
    }
    assert_eq!(left, 0);
    assert_eq!((rbx, a, b, c, d), (0x1b1b, 0x1212, 0x1313, 0x1414, 0x1515));
    for i in 0..37 {
        assert_eq!(
            &dst[i * 64..i * 64 + i + 1],
            &src[i * 64 + 1..i * 64 + i + 2]
        );
        assert!(dst[i * 64 + i + 1..(i + 1) * 64].iter().all(|&x| x == 0));
    }
}

#[test]
fn sites_that_cannot_be_linked_are_errors() {
    let unlinked = SiteCode {
        bytes: vec![0xe8, 0, 0, 0, 0],
        calls: vec![SiteCall {
            at: 1,
            target: SiteTarget::Routine("no_such_routine".into()),
        }],
        convention: Convention::RepMovs,
    };
    match compile_site(&unlinked, &[], intel()) {
        Err(SiteError::Unlinked(s)) => assert_eq!(s, "no_such_routine"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        compile_site(
            &SiteCode {
                calls: unlinked.calls.clone(),
                bytes: vec![0xe8, 0, 0],
                convention: Convention::RepMovs,
            },
            &[],
            intel()
        ),
        Err(SiteError::BadCall { at: 1, len: 3 })
    ));
    assert!(matches!(
        compile_site(
            &SiteCode {
                calls: unlinked.calls.clone(),
                bytes: vec![0x90; 5],
                convention: Convention::RepMovs,
            },
            &[],
            intel()
        ),
        Err(SiteError::BadCall { .. })
    ));
    assert!(matches!(
        compile_site(
            &SiteCode {
                calls: vec![SiteCall {
                    at: 0,
                    target: SiteTarget::RepMovsAlternative
                }],
                bytes: vec![0xe8; 5],
                convention: Convention::RepMovs,
            },
            &[],
            intel()
        ),
        Err(SiteError::BadCall { at: 0, .. })
    ));
}

fn copygen(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap()
}

/// A usage error: exit 2, nothing on stdout, `needles` in the message.
fn refused(args: &[&str], needles: &[&str]) {
    let o = copygen(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert!(o.stdout.is_empty(), "{args:?}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: `{n}` not in {err}");
    }
}

#[test]
fn bad_site_options_are_located_errors() {
    let dir = tempfile_dir();
    let out = dir.join("figures.txt");
    let out_s = out.to_str().unwrap();
    refused(
        &["bench", "--site", "kernel", "rep_movsb"],
        &["`rep_movsb`", "--site kernel", "baseline"],
    );
    refused(
        &[
            "bench",
            "--site",
            "kernel",
            "guarded-movsb",
            "--site-kernel",
            "5.10",
        ],
        &["--site-kernel", "`5.10`", "6.1, 6.12"],
    );
    refused(
        &[
            "bench",
            "--site",
            "kernel",
            "guarded-movsb",
            "--site-kernel",
            "5.10",
        ],
        &["--site-kernel", "5.10"],
    );
    refused(&["bench", "--site", "user", "guarded-movsb"], &["--site"]);
    refused(
        &["bench", "--site-kernel", "6.12", "guarded-movsb"],
        &["--site"],
    );
    refused(
        &["bench", "--figures-out", out_s, "guarded-movsb"],
        &["--site"],
    );
    refused(&["bench", "--site", "kernel"], &["SUBJECTS"]);
    refused(
        &[
            "bench",
            "--site",
            "kernel",
            "guarded-movsb",
            "--baseline",
            "rep_movsb",
        ],
        &["--baseline"],
    );
    refused(
        &["bench", "--site", "kernel", "a64-overlap"],
        &["`a64-overlap`", "aarch64"],
    );
    refused(
        &["bench", "--site", "kernel", "no-such-strategy"],
        &["`no-such-strategy`"],
    );
    refused(
        &[
            "bench",
            "--site",
            "kernel",
            "guarded-movsb",
            "tuned-zen4",
            "--figures-out",
            out_s,
        ],
        &["--figures-out", "one strategy"],
    );
    refused(
        &[
            "bench",
            "--site",
            "kernel",
            "guarded-movsb",
            "--figures-out",
            out_s,
            "--sizes",
            "8",
        ],
        &["--figures-out", "--sizes"],
    );
    assert!(!out.exists(), "nothing written");
}

#[test]
fn a_tree_that_is_not_the_kernel_asked_for_is_a_located_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let site = |tree: &str, kernel: &str| {
        [
            "bench",
            "--site",
            "kernel",
            "--site-kernel",
            kernel,
            "--tree",
            tree,
            "guarded-movsb",
            "--sizes",
            "8",
        ]
        .map(str::to_string)
    };
    let run = |args: [String; 10], needles: &[&str]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, needles);
    };
    // No Makefile: not a tree.
    run(site(&d, "6.12"), &["--tree", &d, "no kernel tree there"]);
    // A tree of another version.
    std::fs::write(
        dir.path().join("Makefile"),
        "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n",
    )
    .unwrap();
    run(site(&d, "6.1"), &["--tree", "says Linux 6.12, not 6.1"]);
    // The right version without the routine's source.
    run(
        site(&d, "6.12"),
        &["--tree", "no arch/x86/lib/copy_user_64.S there"],
    );
}

/// `bench --site kernel --workload`: every subject is a site, the stock
/// one first and the baseline; the report names the stock path and gives
/// every subject a ratio to it, in text and JSON.
#[test]
fn a_workload_replays_through_the_sites_against_the_stock_site() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/generator/workloads/x86_64/cat.csv"
    );
    // guarded-movsb in each kernel's form: 6.12's per-CPU site needs the
    // `rep movs` convention.
    for (kernel, stock_path, gm) in [
        ("6.1", "stock path: 6.1: ", "guarded-movsb"),
        ("6.12", "stock path: 6.12", "guarded-movsb-612"),
    ] {
        if stock_object(KernelVersion::parse(kernel).unwrap()).is_none() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("replay.json");
        let o = copygen(&[
            "bench",
            "--site",
            "kernel",
            "--site-kernel",
            kernel,
            "--workload",
            trace,
            "unrolled64",
            gm,
            "--repeats",
            "2",
            "--json",
            json.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(text.starts_with(stock_path), "{text}");
        let stock = format!("stock {kernel}");
        let head = format!("vs {stock}");
        assert!(text.contains(&head), "{text}");
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| {
                [stock.as_str(), "unrolled64 ", &format!("{gm} ")]
                    .iter()
                    .any(|n| l.starts_with(n))
                    && l.ends_with('x')
            })
            .collect();
        assert_eq!(rows.len(), 3, "{text}");
        assert!(rows[0].ends_with("1.00x"), "{text}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["context"]["baseline"], stock.as_str(), "{v}");
        let names: Vec<&str> = v["subjects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, [stock.as_str(), "unrolled64", gm]);
        for s in v["subjects"].as_array().unwrap() {
            assert!(s["tsc_ticks"].as_f64().unwrap() > 0.0, "{s}");
        }
    }
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("copygen-bench-site-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `bench --site kernel SUBJECTS` at 8 and 100 bytes, which must succeed:
/// its report and its standard error.
fn site_report(subjects: &[&str]) -> (String, String) {
    let mut args = vec!["bench", "--site", "kernel"];
    args.extend(subjects);
    args.extend(["--sizes", "8,100", "--repeats", "2"]);
    let o = copygen(&args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), err)
}

#[test]
fn the_site_report_names_the_cpu_the_sites_and_each_cell_with_its_ticks() {
    let (text, err) = site_report(&["guarded-movsb", "movs-alternative"]);
    assert!(
        text.contains("CPU: ") && text.contains("family 0x"),
        "{text}"
    );
    assert!(text.contains("site stock 6.12: "), "{text}");
    // movs-alternative is 6.12's rep_movs_alternative: its site is the stock one.
    let bytes = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("site {name}: ")))
            .map(str::to_string)
    };
    assert!(bytes("stock 6.12").is_some(), "{text}");
    assert_eq!(bytes("movs-alternative"), bytes("stock 6.12"), "{text}");
    // A catalog name is timed in its 6.12 form, as kernel-patch patches it.
    assert!(
        err.contains("guarded-movsb: Linux 6.12's form, guarded-movsb-612"),
        "{err}"
    );
    assert!(bytes("guarded-movsb-612").is_some(), "{text}");
    // A call site names what it calls.
    let stock = bytes("stock 6.12").unwrap();
    if stock.starts_with("e8 ") {
        assert!(stock.ends_with(" (call rep_movs_alternative)"), "{text}");
    } else {
        assert!(!stock.contains("call"), "{text}");
    }
    // A per-CPU strategy's site names the variant this CPU reaches, the
    // one the resolver picks; a strategy without variants names none.
    let f = StockFeatures::host().cpu_features(copygen::arch::cpu::host_features());
    let gm = common::catalog_strategy("guarded-movsb-612");
    let want = select(&gm, f).expect("a variant for every CPU");
    let site = bytes("guarded-movsb-612").unwrap();
    assert!(
        site.ends_with(&format!(", variant `{}`", want.name)),
        "{site}"
    );
    assert!(
        !bytes("movs-alternative").unwrap().contains("variant"),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("8 ") || l.starts_with("100 "))
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for r in &rows {
        // Two cells: `1.00x [6.4 / 6.4]`.
        assert_eq!(r.matches("x [").count(), 2, "{r}");
        assert_eq!(r.matches(" / ").count(), 2, "{r}");
    }
    // Each part of a cell is aligned in its column: ratios, brackets and
    // slashes stand at the same place in every row.
    let marks = |r: &str| -> Vec<usize> {
        ["x [", " / ", "]"]
            .iter()
            .flat_map(|m| r.match_indices(m).map(|(i, _)| i).collect::<Vec<_>>())
            .collect()
    };
    assert_eq!(marks(rows[0]), marks(rows[1]), "{text}");
}

#[test]
fn stock_times_the_stock_site_again_as_a_control() {
    let (text, _) = site_report(&["stock", "guarded-movsb-612"]);
    let line = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("site {name}: ")))
            .unwrap_or_else(|| panic!("no site {name}:\n{text}"))
    };
    // The same bytes as the stock site, its own column before the strategy's.
    assert_eq!(line("stock 6.12 again"), line("stock 6.12"));
    let head = text.lines().find(|l| l.starts_with("bytes ")).unwrap();
    let (a, b) = (
        head.find("stock 6.12 again").unwrap(),
        head.find("guarded-movsb-612").unwrap(),
    );
    assert!(a < b, "{head}");
    // One control, and none in the figures a patch carries.
    refused(
        &["bench", "--site", "kernel", "stock", "stock"],
        &["`stock`", "twice"],
    );
    let out = tempfile_dir().join("control-figures.txt");
    refused(
        &[
            "bench",
            "--site",
            "kernel",
            "stock",
            "guarded-movsb-612",
            "--figures-out",
            out.to_str().unwrap(),
        ],
        &["`stock`", "--figures-out"],
    );
    assert!(!out.exists());
}

#[test]
fn figures_out_writes_what_kernel_patch_takes() {
    let dir = tempfile_dir();
    let out = dir.join("gm-figures.txt");
    let o = copygen(&[
        "bench",
        "--site",
        "kernel",
        "guarded-movsb-612",
        "--figures-out",
        out.to_str().unwrap(),
        "--repeats",
        "1",
        "--calls",
        "64",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&out).unwrap();
    copygen::tools::kernel_patch::mail::figures(&text).unwrap();
    assert!(text.lines().all(|l| l.chars().count() <= 75), "{text}");
    assert!(
        text.contains("CPU: ") && text.contains("family 0x"),
        "{text}"
    );
    for label in [
        "MemcpyGoogleA",
        "Uniform384To4096",
        "  0 B ",
        "  64 B ",
        "8 KiB, dst +0x00",
        "8 KiB, dst +0x20",
        "1024 B, 1 ",
        "1024 B, 15 ",
        "4096 B, 15 ",
    ] {
        assert!(text.contains(label), "`{label}` not in\n{text}");
    }
    // Each table row: stock, patched, ratio.
    let row = text.lines().find(|l| l.starts_with("  64 B ")).unwrap();
    assert_eq!(row.split_whitespace().count(), 5, "{row}");
    assert!(row.ends_with('x'), "{row}");
    let _ = std::fs::remove_dir_all(&dir);
}
