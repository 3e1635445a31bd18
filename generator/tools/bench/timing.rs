//! The timing loop: every subject on every row of a sweep, over rounds in
//! a freshly shuffled order, each figure the median over the rounds.

use super::buffers::{flush, Buffers};
use super::callers::Callers;
use super::clock::{tsc_end, tsc_hz, tsc_start};
use super::distribution;
use super::results::{default_baseline, measurements, Results};
use super::rng::Rng;
use super::subject::{CopyFn, Subject};
use super::sweep::Sweep;
use crate::tools::host_cpu::model_name;
use crate::tools::trace::Call;

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
        cpu: model_name(),
        command: String::new(),
        cells,
    }
}
