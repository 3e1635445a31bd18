//! The copy contract (CONTRACT.md §1) checked on JIT-compiled routines with
//! real faults: the user side of every case lives in a mapping whose next
//! page is `PROT_NONE`, placed so the first inaccessible byte is at offset
//! `f` of the copy. One module for the case list and the checks, used by
//! the tests and by `copygen jit`.
//!
//! Checked per case: the return `N` is in `0..=n`; no fault → 0; with a
//! fault at `f`, copied = `n - N` is at most `f` and at least 1 when `f > 0`
//! (progress), and 0 shortfall (`f - copied`) under `exact` precision; the
//! copied bytes equal the source; the bytes after them are untouched (or,
//! for a zeroing `from_user`, exactly `[copied, n)` is zero); nothing
//! around the destination changed; and no fault came from an instruction
//! without an exception-table entry.

use std::fmt::Write as _;
use std::io;

use super::{compile, fault, CopyFn, JitError, JitModule, JitRoutine};
use crate::front::strategy::{Direction, Precision, Strategy};

const PAGE: usize = 4096;
/// Largest size in the suite.
pub const MAX_SIZE: usize = 12 * 1024;
/// Bytes checked on each side of the destination.
const CANARY: usize = 64;
const USER_PAGES: usize = (MAX_SIZE + CANARY).div_ceil(PAGE) + 1;
const KERNEL_PAGES: usize = 1 + 1 + (MAX_SIZE + CANARY).div_ceil(PAGE) + 1;

/// Where the kernel-side pointer goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// At this offset in its page.
    Skew(usize),
    /// So that `(dst - src) mod 4096` is this (the aliasing guard's test).
    Alias(usize),
}

/// One call: `n` bytes, the user side inaccessible from offset `fault`
/// (`None`: accessible up to `n`, and the guard page right after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    pub n: usize,
    pub fault: Option<usize>,
    pub kernel: Kernel,
}

/// What a routine promises beyond the common rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Promise {
    pub direction: Direction,
    /// `from_user` of a `zero_tail` strategy.
    pub zero_tail: bool,
    /// `exact` precision: no shortfall.
    pub exact: bool,
}

impl Promise {
    pub fn of(s: &Strategy, direction: Direction) -> Self {
        Promise {
            direction,
            zero_tail: s.zero_tail && direction == Direction::FromUser,
            exact: s.precision == Precision::Exact,
        }
    }
}

/// What one call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    pub copied: usize,
    /// `f - copied` for a faulting case, else 0.
    pub shortfall: usize,
    pub violations: Vec<String>,
}

/// Source byte `i` (relative to `from`): never 0, never a destination byte.
fn src_byte(i: isize) -> u8 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as u8 % 127 + 1
}

/// Destination byte `i` (relative to `to`) before the call.
fn dst_byte(i: isize) -> u8 {
    src_byte(i) + 128
}

struct Mapping {
    ptr: *mut u8,
    len: usize,
}

impl Mapping {
    /// `pages` read-write pages, then `guard` PROT_NONE ones.
    fn new(pages: usize, guard: usize) -> io::Result<Mapping> {
        let len = (pages + guard) * PAGE;
        // SAFETY: a fresh anonymous mapping, owned by the result.
        unsafe {
            let ptr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if ptr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let m = Mapping {
                ptr: ptr as *mut u8,
                len,
            };
            if guard > 0
                && libc::mprotect(
                    m.ptr.add(pages * PAGE) as *mut _,
                    guard * PAGE,
                    libc::PROT_NONE,
                ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(m)
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping.
        unsafe { libc::munmap(self.ptr as *mut _, self.len) };
    }
}

/// The buffers of one thread's calls.
pub struct Harness {
    /// USER_PAGES accessible pages, then the guard page.
    user: Mapping,
    kernel: Mapping,
}

impl Harness {
    pub fn new() -> io::Result<Harness> {
        Ok(Harness {
            user: Mapping::new(USER_PAGES, 1)?,
            kernel: Mapping::new(KERNEL_PAGES, 0)?,
        })
    }

    /// First byte of the guard page.
    fn boundary(&self) -> usize {
        self.user.ptr as usize + USER_PAGES * PAGE
    }

    /// Run `case` on `r` and check the contract.
    ///
    /// # Safety
    /// `r` must be a routine of a live module compiled for the standalone
    /// ABI; the harness gives it only the buffers the contract allows.
    pub unsafe fn run(&mut self, r: &JitRoutine, promise: Promise, case: Case) -> CallOutcome {
        unsafe { self.call(r.entry(), r.code().as_ptr() as usize, promise, case) }
    }

    unsafe fn call(&mut self, f: CopyFn, code: usize, p: Promise, case: Case) -> CallOutcome {
        let Case { n, fault, kernel } = case;
        assert!(
            n <= MAX_SIZE && fault.is_none_or(|f| f < n),
            "bad case {case:?}"
        );
        // User bytes accessible from the user pointer.
        let reach = fault.unwrap_or(n);
        let user = self.boundary() - reach;
        let user_off = user % PAGE;
        let to_user = p.direction == Direction::ToUser;
        let k = match kernel {
            Kernel::Skew(s) => s % PAGE,
            Kernel::Alias(d) if to_user => (user_off + PAGE - d % PAGE) % PAGE,
            Kernel::Alias(d) => (user_off + d) % PAGE,
        };
        let kern = self.kernel.ptr as usize + 2 * PAGE + k;
        let (to, from) = if to_user { (user, kern) } else { (kern, user) };

        // SAFETY (fills and reads): every range below lies in a mapping's
        // accessible part: the user side is touched only in
        // [user - CANARY, boundary), the kernel side in its pages.
        unsafe {
            let src_len = if to_user { n } else { reach };
            for i in 0..src_len {
                *((from + i) as *mut u8) = src_byte(i as isize);
            }
            let dst_hi = if to_user { reach } else { n + CANARY };
            for i in -(CANARY as isize)..dst_hi as isize {
                *((to as isize + i) as *mut u8) = dst_byte(i);
            }
        }

        let ret = unsafe { f(to as *mut u8, from as *const u8, n) };

        let mut v = Vec::new();
        let what = format!(
            "n={n} fault={} to%64={} from%64={}",
            fault.map_or("none".into(), |f| f.to_string()),
            to % 64,
            from % 64
        );
        if ret == fault::STRAY {
            let (pc, addr) = fault::last_stray();
            v.push(format!(
                "{what}: fault at routine+{:#x} (address {addr:#x}), an instruction with no exception-table entry",
                pc.wrapping_sub(code)
            ));
            return CallOutcome {
                copied: 0,
                shortfall: 0,
                violations: v,
            };
        }
        if ret > n {
            v.push(format!("{what}: returned {ret}, more than n"));
            return CallOutcome {
                copied: 0,
                shortfall: 0,
                violations: v,
            };
        }
        let copied = n - ret;
        let mut shortfall = 0;
        match fault {
            None if ret != 0 => v.push(format!("{what}: no fault, but returned {ret}")),
            None => {}
            Some(f) => {
                if copied > f {
                    v.push(format!(
                        "{what}: reports {copied} bytes copied, past the fault at {f}"
                    ));
                } else {
                    shortfall = f - copied;
                    if f > 0 && copied == 0 {
                        v.push(format!(
                            "{what}: copied nothing although {f} bytes were accessible (progress)"
                        ));
                    }
                    if p.exact && shortfall > 0 {
                        v.push(format!(
                            "{what}: exact precision, but copied {copied} of {f} accessible bytes"
                        ));
                    }
                }
            }
        }
        let dst = |i: isize| unsafe { *((to as isize + i) as *const u8) };
        let first_bad = |range: std::ops::Range<isize>, want: &dyn Fn(isize) -> u8| {
            range.into_iter().find(|&i| dst(i) != want(i))
        };
        let copied = copied.min(reach);
        if let Some(i) = first_bad(0..copied as isize, &|i| src_byte(i)) {
            v.push(format!(
                "{what}: byte {i} of the {copied} reported copied differs from the source"
            ));
        }
        let rest_end = if to_user { reach } else { n };
        if p.zero_tail {
            if let Some(i) = first_bad(copied as isize..rest_end as isize, &|_| 0) {
                v.push(format!(
                    "{what}: zero_tail, but byte {i} (after {copied} copied) is not zero"
                ));
            }
        } else if let Some(i) = first_bad(copied as isize..rest_end as isize, &dst_byte) {
            let how = if dst(i) == src_byte(i) {
                "was copied but not reported"
            } else {
                "changed"
            };
            v.push(format!(
                "{what}: byte {i} past the {copied} reported copied {how}"
            ));
        }
        if let Some(i) = first_bad(-(CANARY as isize)..0, &dst_byte) {
            v.push(format!("{what}: wrote before the destination (byte {i})"));
        }
        if !to_user {
            if let Some(i) = first_bad(n as isize..(n + CANARY) as isize, &dst_byte) {
                v.push(format!(
                    "{what}: wrote past the destination's end (byte {i})"
                ));
            }
        }
        CallOutcome {
            copied,
            shortfall,
            violations: v,
        }
    }
}

fn dedup(mut v: Vec<usize>, below: usize) -> Vec<usize> {
    v.retain(|&x| x < below);
    v.sort_unstable();
    v.dedup();
    v
}

/// Sizes above the dense range, up to [`MAX_SIZE`].
fn spread_sizes() -> Vec<usize> {
    let mut v: Vec<usize> = (301..MAX_SIZE).step_by(97).collect();
    for p in [384, 512, 1024, 2048, 4096, 8192, MAX_SIZE] {
        v.extend([p - 1, p, p + 1]);
    }
    dedup(v, MAX_SIZE + 1)
}

/// Fault offsets worth trying in a large copy of `n` bytes.
fn spread_faults(n: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        2,
        7,
        8,
        9,
        63,
        64,
        65,
        n / 3,
        n / 2,
        PAGE - 1,
        PAGE,
        PAGE + 1,
    ];
    v.extend(
        [65, 64, 63, 9, 8, 7, 1]
            .iter()
            .filter_map(|d| n.checked_sub(*d)),
    );
    dedup(v, n)
}

/// The full suite for one routine: every size 0..=300 with every fault
/// offset (and none) at three kernel alignments; a spread of sizes up to
/// 12 KiB; above 64 bytes, every `(dst - src) mod 4096` in 1..=63 plus the
/// band's neighbours; and short sizes at a few distances of each band
/// (an alias-first test sends them to classes of their own). A
/// constant-size routine gets its size only.
pub fn suite(fixed: Option<u32>) -> Vec<Case> {
    let mut cases = Vec::new();
    let with_faults = |cases: &mut Vec<Case>, n: usize, faults: &[usize], kernel: Kernel| {
        cases.push(Case {
            n,
            fault: None,
            kernel,
        });
        cases.extend(faults.iter().map(|&f| Case {
            n,
            fault: Some(f),
            kernel,
        }));
    };
    if let Some(n) = fixed {
        let n = n as usize;
        for skew in [0, 1, 3, 7] {
            with_faults(
                &mut cases,
                n,
                &(0..n).collect::<Vec<_>>(),
                Kernel::Skew(skew),
            );
        }
        return cases;
    }
    for n in 0..=300 {
        let all: Vec<usize> = (0..n).collect();
        for skew in [0, 1, 7] {
            with_faults(&mut cases, n, &all, Kernel::Skew(skew));
        }
    }
    for n in spread_sizes() {
        for skew in [0, 3, 63] {
            with_faults(&mut cases, n, &spread_faults(n), Kernel::Skew(skew));
        }
    }
    for n in [65, 96, 127, 128, 129, 200, 300, 1000, 4096, 4097, MAX_SIZE] {
        let faults = dedup(vec![0, 1, 8, 63, 64, n / 2, n - 8, n - 1], n);
        for d in (0..=64).chain([4032, 4095]) {
            with_faults(&mut cases, n, &faults, Kernel::Alias(d));
        }
    }
    for n in [1, 8, 15, 16, 17, 32, 64] {
        let all: Vec<usize> = (0..n).collect();
        for d in [1, 8, 15, 16, 63] {
            with_faults(&mut cases, n, &all, Kernel::Alias(d));
        }
    }
    cases
}

/// One routine's results.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub symbol: String,
    pub cases: usize,
    pub violations: usize,
    pub max_shortfall: usize,
    /// The first few violations, for the report.
    pub examples: Vec<String>,
}

/// Run `cases` on one routine.
pub fn check_routine(h: &mut Harness, s: &Strategy, r: &JitRoutine, cases: &[Case]) -> Summary {
    let promise = Promise::of(s, r.direction());
    let mut sum = Summary {
        symbol: r.symbol().to_string(),
        ..Summary::default()
    };
    for &case in cases {
        // SAFETY: r belongs to a module compiled from s, alive for this call.
        let out = unsafe { h.run(r, promise, case) };
        sum.cases += 1;
        sum.max_shortfall = sum.max_shortfall.max(out.shortfall);
        if !out.violations.is_empty() {
            sum.violations += 1;
            if sum.examples.len() < 5 {
                sum.examples.extend(out.violations);
            }
        }
    }
    sum
}

/// The full suite on every routine of `m` (compiled from `s`), the
/// routines shared out over the machine's cores.
pub fn run_suite(m: &JitModule, s: &Strategy) -> io::Result<Vec<Summary>> {
    let routines = m.routines();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(routines.len())
        .max(1);
    let mut out: Vec<Option<Summary>> = vec![None; routines.len()];
    std::thread::scope(|scope| -> io::Result<()> {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                scope.spawn(move || -> io::Result<Vec<(usize, Summary)>> {
                    let mut h = Harness::new()?;
                    let mut done = Vec::new();
                    for (i, r) in routines.iter().enumerate().skip(w).step_by(workers) {
                        done.push((i, check_routine(&mut h, s, r, &suite(r.fixed()))));
                    }
                    Ok(done)
                })
            })
            .collect();
        for h in handles {
            for (i, sum) in h.join().expect("contract worker panicked")? {
                out[i] = Some(sum);
            }
        }
        Ok(())
    })?;
    Ok(out
        .into_iter()
        .map(|s| s.expect("every routine ran"))
        .collect())
}

/// The per-routine table `copygen jit` prints.
pub fn report(s: &Strategy, sums: &[Summary]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}, {:?} precision{}): in-process fault injection",
        s.name,
        s.arch,
        s.precision,
        if s.zero_tail { ", zero_tail" } else { "" }
    );
    let _ = writeln!(
        out,
        "{:<36} {:>8} {:>10} {:>16}",
        "routine", "cases", "violations", "max shortfall"
    );
    for sum in sums {
        let _ = writeln!(
            out,
            "{:<36} {:>8} {:>10} {:>16}",
            sum.symbol, sum.cases, sum.violations, sum.max_shortfall
        );
    }
    for sum in sums {
        for e in &sum.examples {
            let _ = writeln!(out, "  {}: {e}", sum.symbol);
        }
    }
    out
}

/// Compile `s`, run the full suite on every routine: (the report, whether
/// every case kept the contract).
pub fn run_strategy(s: &Strategy) -> Result<(String, bool), JitError> {
    let start = std::time::Instant::now();
    let m = compile(s)?;
    let sums = run_suite(&m, s)?;
    let mut text = report(s, &sums);
    let total: usize = sums.iter().map(|x| x.cases).sum();
    let _ = writeln!(
        text,
        "{total} cases in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    Ok((text, sums.iter().all(|x| x.violations == 0)))
}
