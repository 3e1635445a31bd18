//! Benchmarks: time copy routines (JIT-compiled strategies and built-in
//! baselines) in the same run, over the sweeps the kernel threads' tables used.
//!
//! The clock is the TSC (`rdtsc`): a constant-rate reference clock, not
//! core cycles (these VMs have no performance counters). Each figure is the
//! median over `repeats` rounds; in every round all (row, subject) pairs
//! are measured in a freshly shuffled order, so drift (frequency, noisy
//! neighbours) spreads over all subjects instead of favouring one. A
//! fixed-size figure is timed from a JIT-compiled calling loop, a different
//! one each round ([`callers`]: the code around a short `rep movsb` moves
//! its cost by several percent either way), so its median is one over
//! calling contexts too.
//!
//! This file: the subjects and the measuring loop; `sweep.rs` what is
//! measured, `distribution.rs` the size distributions, `report.rs` and
//! `plot.rs` the results.

mod callers;
pub mod distribution;
pub mod plot;
mod replay;
mod report;
pub mod site;
pub mod stock;
mod sweep;
mod variant;
pub mod workload;

pub use variant::{bench_variant, variant_subject};

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Serialize;

use callers::Callers;
use distribution::Call;
pub use plot::plot_svg;
pub use replay::*;
pub use report::{google_benchmark_json, text_table};
pub use sweep::*;

/// A copy routine: `f(to, from, n)` → bytes not copied (SysV), the JIT's type.
pub use crate::jit::CopyFn;

/// Something to time: a name and a routine. `_owner` keeps JIT code alive.
pub struct Subject {
    pub name: String,
    pub f: CopyFn,
    pub _owner: Option<Box<dyn std::any::Any>>,
}

// ---- baselines -------------------------------------------------------------

/// `rep movsb` alone, as the kernel's FSRM path does it.
///
/// # Safety
/// `to` and `from` must be valid for `n` bytes and not overlap.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn rep_movsb(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
    core::arch::naked_asm!("mov rcx, rdx", "rep movsb", "xor eax, eax", "ret")
}

/// `rep movsq` for the quadwords, then `rep movsb` for the rest.
///
/// # Safety
/// `to` and `from` must be valid for `n` bytes and not overlap.
#[unsafe(naked)]
pub unsafe extern "sysv64" fn rep_movsq(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
    core::arch::naked_asm!(
        "mov rcx, rdx",
        "shr rcx, 3",
        "and edx, 7",
        "rep movsq",
        "mov ecx, edx",
        "rep movsb",
        "xor eax, eax",
        "ret"
    )
}

/// libc's `memcpy` (glibc picks its own variant for this CPU).
unsafe extern "sysv64" fn libc_memcpy(to: *mut u8, from: *const u8, n: usize) -> usize {
    // SAFETY: the caller passes valid, non-overlapping buffers of n bytes.
    unsafe { libc::memcpy(to.cast(), from.cast(), n) };
    0
}

pub const BASELINES: &[(&str, CopyFn, &str)] = &[
    ("rep_movsb", rep_movsb, "rep movsb"),
    (
        "rep_movsq",
        rep_movsq,
        "rep movsq, then rep movsb for the rest",
    ),
    ("memcpy", libc_memcpy, "libc memcpy (through a call)"),
];

/// One routine of `s`, JIT-compiled; the module lives as long as the subject.
pub fn jit_subject(
    s: &crate::front::strategy::Strategy,
    symbol: &str,
    name: String,
) -> Result<Subject> {
    let module = crate::jit::compile(s).map_err(|e| anyhow::anyhow!("{}: {e}", s.name))?;
    let f = module
        .routine(symbol)
        .ok_or_else(|| anyhow::anyhow!("{}: no routine {symbol}", s.name))?
        .entry();
    Ok(Subject {
        name,
        f,
        _owner: Some(Box::new(module)),
    })
}

/// The routine a strategy is benchmarked by: its general from_user entry
/// (to_user when it has none); without faults both copy the same way.
pub fn strategy_subject(s: &crate::front::strategy::Strategy) -> Result<Subject> {
    use crate::front::strategy::Direction;
    let dir = if s.directions.contains(&Direction::FromUser) {
        Direction::FromUser
    } else {
        Direction::ToUser
    };
    jit_subject(
        s,
        &crate::lower::entry_symbol(s, crate::front::strategy::Flavor::Standalone, dir, None),
        s.name.clone(),
    )
}

pub fn baseline(name: &str) -> Option<Subject> {
    BASELINES.iter().find(|b| b.0 == name).map(|b| Subject {
        name: b.0.to_string(),
        f: b.1,
        _owner: None,
    })
}

/// The running kernel's copy_to_user, as Andrew Morton, "faster
/// copy_*_user for bad alignments on intel ia32" (2002) measured it: `pread()`
/// of a fully cached in-memory file (memfd) into the buffer at `to`. The
/// source is the page cache's page-aligned page, so `from` is unused.
static KERNEL_FD: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

unsafe extern "sysv64" fn kernel_read(to: *mut u8, _from: *const u8, n: usize) -> usize {
    let fd = KERNEL_FD.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: `to` is valid for n bytes; fd is a memfd at least n long.
    let got = unsafe { libc::pread(fd, to.cast(), n, 0) };
    n - got.max(0) as usize
}

/// The `kernel_read` subject, with a memfd of `size` bytes filled and cached.
pub fn kernel_subject(size: usize) -> Result<Subject> {
    // SAFETY: plain system calls on a fresh descriptor.
    unsafe {
        let mut fd = KERNEL_FD.load(std::sync::atomic::Ordering::Relaxed);
        if fd < 0 {
            fd = libc::memfd_create(c"copygen-bench".as_ptr(), 0);
            if fd < 0 {
                bail!("memfd_create: {}", std::io::Error::last_os_error());
            }
            KERNEL_FD.store(fd, std::sync::atomic::Ordering::Relaxed);
        }
        let data: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
        if libc::pwrite(fd, data.as_ptr().cast(), size, 0) != size as isize {
            bail!("filling the memfd: {}", std::io::Error::last_os_error());
        }
    }
    Ok(Subject {
        name: "kernel_read".into(),
        f: kernel_read,
        _owner: None,
    })
}

// ---- the clock -----------------------------------------------------------------

#[inline(always)]
fn tsc_start() -> u64 {
    // SAFETY: lfence and rdtsc exist on every x86_64 CPU.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    }
}

#[inline(always)]
fn tsc_end() -> u64 {
    let mut aux = 0;
    // SAFETY: rdtscp exists on every x86_64 CPU this runs on.
    unsafe {
        let t = core::arch::x86_64::__rdtscp(&mut aux);
        core::arch::x86_64::_mm_lfence();
        t
    }
}

/// TSC ticks per second, measured against the monotonic clock.
pub fn tsc_hz() -> f64 {
    let t0 = Instant::now();
    let c0 = tsc_start();
    while t0.elapsed() < Duration::from_millis(50) {}
    let c1 = tsc_end();
    (c1 - c0) as f64 / t0.elapsed().as_secs_f64()
}

pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

// ---- measuring ---------------------------------------------------------------

/// Page-aligned buffers big enough for every row: sources in the first
/// half, destinations in the second.
struct Buffers {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    half: usize,
}

impl Buffers {
    fn new(sweep: &Sweep) -> Buffers {
        let need = sweep
            .rows
            .iter()
            .map(|r| match r.dist {
                // Offsets anywhere in the first page.
                Some(_) => r.n + 4095,
                None => r.n + r.src_off.max(r.dst_off),
            })
            .max()
            .unwrap_or(0);
        let half = need.div_ceil(4096) * 4096 + 4096;
        let layout = std::alloc::Layout::from_size_align(2 * half, 4096).expect("layout");
        // SAFETY: non-zero size; the memory is initialised right below.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null(), "out of memory");
        // SAFETY: ptr is valid for 2 * half bytes.
        unsafe { std::ptr::write_bytes(ptr, 0x5a, 2 * half) };
        Buffers { ptr, layout, half }
    }
    fn src(&self, off: usize) -> *const u8 {
        // SAFETY: offsets are within the first half by construction.
        unsafe { self.ptr.add(off) }
    }
    fn dst(&self, off: usize) -> *mut u8 {
        // SAFETY: offsets are within the second half by construction.
        unsafe { self.ptr.add(self.half + off) }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

fn flush(p: *const u8, n: usize) {
    let mut a = (p as usize) & !63;
    while a < p as usize + n.max(1) {
        // SAFETY: a lies within a live buffer.
        unsafe { core::arch::x86_64::_mm_clflush(a as *const u8) };
        a += 64;
    }
    // SAFETY: mfence exists on every x86_64 CPU.
    unsafe { core::arch::x86_64::_mm_mfence() };
}

/// TSC ticks for `iters` calls from caller loop `context` (see
/// [`callers`]), divided by `iters`.
fn time_calls(
    callers: &Callers,
    context: usize,
    (f, dst, src): (CopyFn, *mut u8, *const u8),
    n: usize,
    iters: u32,
) -> f64 {
    let t0 = tsc_start();
    // SAFETY: the buffers hold n bytes at these offsets (Buffers::new).
    unsafe { callers.call(context, f, dst, src, n, iters) };
    (tsc_end() - t0) as f64 / iters.max(1) as f64
}

/// TSC ticks per call over a sequence of calls (the loop's own cost, the
/// same for every subject, included).
fn time_sequence(f: CopyFn, bufs: &Buffers, seq: &[Call]) -> f64 {
    let (dst, src) = (bufs.dst(0), bufs.src(0));
    let t0 = tsc_start();
    for c in seq {
        // SAFETY: offsets < 4096 and n <= the row's largest size, which
        // Buffers::new made room for.
        let r = unsafe {
            f(
                std::hint::black_box(dst.add(c.dst_off as usize)),
                std::hint::black_box(src.add(c.src_off as usize)),
                c.n as usize,
            )
        };
        std::hint::black_box(r);
    }
    (tsc_end() - t0) as f64 / seq.len().max(1) as f64
}

/// One (row, subject) figure over the rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    pub row: usize,
    pub subject: usize,
    /// Median TSC ticks per call.
    pub cycles: f64,
    /// First and third quartile of the rounds.
    pub q1: f64,
    pub q3: f64,
    pub min: f64,
    pub max: f64,
    /// Calls per round.
    pub iterations: u32,
    /// Ticks per call in each round, in round order.
    #[serde(skip)]
    pub rounds: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub sweep: Sweep,
    pub subjects: Vec<String>,
    /// The subject the ratio columns divide by.
    pub baseline: usize,
    pub repeats: usize,
    pub tsc_hz: f64,
    pub cpu: String,
    /// What was run (the command line), for titles.
    pub command: String,
    /// `cells[row][subject]`
    pub cells: Vec<Vec<Measurement>>,
}

impl Results {
    /// `cells[row][subject]` over the baseline's figure of the same row.
    pub fn ratio(&self, row: usize, subject: usize) -> f64 {
        self.cells[row][subject].cycles / self.cells[row][self.baseline].cycles
    }
}

/// The default ratio baseline: `rep_movsb` when it is a subject (what the
/// kernel runs on FSRM CPUs), else the first subject that is not the
/// system-call figure, else the first.
pub fn default_baseline(subjects: &[String]) -> usize {
    subjects
        .iter()
        .position(|s| s == "rep_movsb")
        .or_else(|| subjects.iter().position(|s| s != "kernel_read"))
        .unwrap_or(0)
}

/// A small deterministic PRNG (xorshift64*): measuring order, sequences.
#[derive(Debug, Clone)]
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        // xorshift must not start at 0.
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15 | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
    }
}

/// How [`run_with`] measures.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Rounds; each figure is the median over them.
    pub repeats: usize,
    /// TSC ticks each hot fixed-size measurement aims for.
    pub target_ticks: f64,
    /// Seeds the measuring order and the sequences.
    pub seed: u64,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            repeats: 15,
            target_ticks: 20_000.0,
            seed: 0,
        }
    }
}

/// The sequences of one round: per distribution row, the timed one and a
/// different one that warms caches (and no predictor with the timed calls).
pub fn round_sequences(sweep: &Sweep, rng: &mut Rng) -> Vec<Option<(Vec<Call>, Vec<Call>)>> {
    sweep
        .rows
        .iter()
        .map(|r| {
            r.dist.map(|d| {
                let d = &sweep.distributions[d];
                let (share, ptrs) = (sweep.alias_share, sweep.pointers);
                let timed = distribution::sequence_with(d, sweep.calls, share, ptrs, rng);
                let warm = distribution::sequence_with(d, sweep.calls / 4 + 1, share, ptrs, rng);
                (timed, warm)
            })
        })
        .collect()
}

/// Measure every subject on every row; `progress` is told each step.
pub fn run(
    sweep: &Sweep,
    subjects: &[Subject],
    repeats: usize,
    progress: &dyn Fn(u64, u64),
) -> Results {
    let opts = BenchOptions {
        repeats,
        ..BenchOptions::default()
    };
    run_with(sweep, subjects, &opts, progress)
}

/// [`run`] with every knob. Each round draws fresh sequences for the
/// distribution rows (the same for every subject in it) and measures all
/// (row, subject) pairs in a freshly shuffled order.
pub fn run_with(
    sweep: &Sweep,
    subjects: &[Subject],
    opts: &BenchOptions,
    progress: &dyn Fn(u64, u64),
) -> Results {
    let repeats = opts.repeats.max(1);
    let bufs = Buffers::new(sweep);
    let callers = Callers::new().expect("executable memory for the caller loops");
    let pairs: Vec<(usize, usize)> = (0..sweep.rows.len())
        .flat_map(|r| (0..subjects.len()).map(move |s| (r, s)))
        .collect();
    // Iterations per fixed-size measurement: about `target_ticks` each when hot.
    let iters: Vec<Vec<u32>> = sweep
        .rows
        .iter()
        .map(|r| {
            subjects
                .iter()
                .map(|s| {
                    if r.dist.is_some() {
                        return sweep.calls as u32;
                    }
                    if sweep.cold {
                        return 1;
                    }
                    let (d, src) = (bufs.dst(r.dst_off), bufs.src(r.src_off));
                    time_calls(&callers, 0, (s.f, d, src), r.n, 20);
                    let per = time_calls(&callers, 0, (s.f, d, src), r.n, 20).max(1.0);
                    ((opts.target_ticks / per) as u32).clamp(3, 5_000)
                })
                .collect()
        })
        .collect();
    let mut samples = vec![vec![Vec::with_capacity(repeats); subjects.len()]; sweep.rows.len()];
    let mut rng = Rng::new(opts.seed);
    let total = (repeats * pairs.len()) as u64;
    let mut done = 0;
    for round in 0..repeats {
        let seqs = round_sequences(sweep, &mut rng);
        let mut order = pairs.clone();
        rng.shuffle(&mut order);
        for (r, s) in order {
            let row = &sweep.rows[r];
            let f = subjects[s].f;
            let t = if let Some((timed, warm)) = &seqs[r] {
                time_sequence(f, &bufs, warm);
                time_sequence(f, &bufs, timed)
            } else {
                let (d, src) = (bufs.dst(row.dst_off), bufs.src(row.src_off));
                if sweep.cold {
                    flush(src, row.n);
                    flush(d, row.n);
                    time_calls(&callers, round, (f, d, src), row.n, 1)
                } else {
                    // Warm the line buffers, then time.
                    time_calls(&callers, round, (f, d, src), row.n, 1);
                    time_calls(&callers, round, (f, d, src), row.n, iters[r][s])
                }
            };
            samples[r][s].push(t);
            done += 1;
            progress(done, total);
        }
    }
    let cells = measurements(samples, &iters);
    let names: Vec<String> = subjects.iter().map(|s| s.name.clone()).collect();
    Results {
        sweep: sweep.clone(),
        baseline: default_baseline(&names),
        subjects: names,
        repeats,
        tsc_hz: tsc_hz(),
        cpu: cpu_name(),
        command: String::new(),
        cells,
    }
}

/// Linear-interpolated quantile of sorted, non-empty `v`.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    if i + 1 < v.len() {
        v[i] * (1.0 - frac) + v[i + 1] * frac
    } else {
        v[i]
    }
}

/// Each cell's rounds (`samples[row][subject]`) summarised: median,
/// quartiles and extremes, with the calls each round timed.
pub(crate) fn measurements(
    samples: Vec<Vec<Vec<f64>>>,
    iters: &[Vec<u32>],
) -> Vec<Vec<Measurement>> {
    samples
        .into_iter()
        .enumerate()
        .map(|(r, per_subject)| {
            per_subject
                .into_iter()
                .enumerate()
                .map(|(s, rounds)| {
                    let mut v = rounds.clone();
                    v.sort_by(|a, b| a.total_cmp(b));
                    Measurement {
                        row: r,
                        subject: s,
                        cycles: quantile(&v, 0.5),
                        q1: quantile(&v, 0.25),
                        q3: quantile(&v, 0.75),
                        min: v[0],
                        max: v[v.len() - 1],
                        iterations: iters[r][s],
                        rounds,
                    }
                })
                .collect()
        })
        .collect()
}
