//! `copygen bench --workload`: a trace ([`crate::tools::trace`]) replayed as recorded.
//!
//! Each round replays a segment of consecutive calls (the recorded order)
//! from a fresh random start, so the predictor meets a different stretch of
//! the trace each round; every subject replays the same segment in that
//! round, in a freshly shuffled subject order, after warming on another
//! segment. The calls rotate over a stated working set of source and
//! destination pages ([`placement::place`]), each at its recorded page
//! offsets. Each figure is the median over rounds, as in [`run_with`].
//!
//! The size x distance table comes from a second pass over the same
//! segment that timestamps each call; the timer's own cost (an empty
//! routine, or site, timestamped over the same calls in the same round, in
//! its shuffled place among the subjects) is subtracted cell by cell.
//!
//! With `--site kernel` ([`run_replay_sites`]) the subjects are call sites
//! (`bench::site`): each call's arguments are loaded by the site's own
//! loop and the site runs inline, the stock kernel's site first (the
//! baseline); the timer's cost is then that of an empty site in the same
//! loop.

use std::fmt::Write as _;

use serde::Serialize;

use super::clock::{tsc_end, tsc_start};
use super::placement::{self, Placed};
use super::site::SiteSubject;
use super::{quantile, BenchOptions, CopyFn, Rng, Subject};
use crate::jit::site::{JitSite, SiteArgs};
use crate::tools::trace::{cell, cell_counts, Trace, BANDS, SIZE_CLASSES};

/// The default working set: L2-resident on current x86 cores.
pub const DEFAULT_WORKING_SET: usize = 256 << 10;
/// The fewest calls of a cell a round's segment must hold for that round to
/// count towards the cell's cost; a cell gets a cost when at least half the
/// rounds count (a trace's phases put some cells in few segments).
pub const MIN_CELL_CALLS: u32 = 32;

/// What a replay measures.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub trace: Trace,
    /// Calls per segment. A shorter trace wraps: a round replays it more
    /// than once, so that a round is long enough for one interrupt not to
    /// decide its median (a 300-call round lasts about 2 µs).
    pub calls: usize,
    /// Bytes of source plus destination pages the calls rotate over.
    pub working_set: usize,
}

impl Replay {
    pub fn new(trace: Trace, calls: usize, working_set: usize) -> Replay {
        let calls = calls.max(1);
        let pages = placement::region_pages(&trace.calls, working_set);
        Replay {
            trace,
            calls,
            working_set: 2 * pages * 4096,
        }
    }
    fn region_pages(&self) -> usize {
        self.working_set / 2 / 4096
    }
}

/// Page-aligned source and destination regions.
struct Regions {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    half: usize,
}

impl Regions {
    fn new(pages: usize) -> Regions {
        let half = pages * 4096;
        let layout = std::alloc::Layout::from_size_align(2 * half, 4096).expect("layout");
        // SAFETY: non-zero size; initialised right below.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null(), "out of memory");
        // SAFETY: ptr is valid for 2 * half bytes.
        unsafe { std::ptr::write_bytes(ptr, 0x5a, 2 * half) };
        Regions { ptr, layout, half }
    }
    /// (dst, src) of a placed call.
    fn at(&self, p: &Placed) -> (*mut u8, *const u8) {
        // SAFETY: place() keeps positions + n within each half.
        unsafe { (self.ptr.add(self.half + p.dst), self.ptr.add(p.src)) }
    }
}

impl Drop for Regions {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// What a replay times: a routine called from the replay loop, or a call
/// site run inline in its own loop (the round picks the loop's shape, as
/// `run_sites` does).
#[derive(Clone, Copy)]
enum Player<'a> {
    Routine(CopyFn),
    Site(&'a JitSite),
}

impl Player<'_> {
    /// Ticks per call over `calls`, replayed back to back.
    fn all(self, regions: &Regions, calls: &[Placed], round: usize) -> f64 {
        let t = match self {
            Player::Routine(f) => {
                let t0 = tsc_start();
                for p in calls {
                    let (d, s) = regions.at(p);
                    // SAFETY: within the regions (place()).
                    let r = unsafe { f(std::hint::black_box(d), std::hint::black_box(s), p.n) };
                    std::hint::black_box(r);
                }
                tsc_end() - t0
            }
            Player::Site(site) => {
                let args = site_args(regions, calls);
                let t0 = tsc_start();
                // SAFETY: every entry lies within the regions (place()).
                let left = unsafe {
                    site.run(
                        round,
                        args.as_ptr(),
                        args.len() as u64,
                        std::mem::size_of::<SiteArgs>() as u64,
                    )
                };
                let t = tsc_end() - t0;
                std::hint::black_box(left);
                t
            }
        };
        t as f64 / calls.len().max(1) as f64
    }

    /// Each call of `calls` timed alone, into `ticks`.
    fn each(self, regions: &Regions, calls: &[Placed], round: usize, ticks: &mut Vec<u64>) {
        ticks.clear();
        match self {
            Player::Routine(f) => {
                for p in calls {
                    let (d, s) = regions.at(p);
                    let t0 = tsc_start();
                    // SAFETY: within the regions (place()).
                    let r = unsafe { f(std::hint::black_box(d), std::hint::black_box(s), p.n) };
                    ticks.push(tsc_end() - t0);
                    std::hint::black_box(r);
                }
            }
            Player::Site(site) => {
                for a in site_args(regions, calls) {
                    let t0 = tsc_start();
                    // SAFETY: within the regions (place()).
                    let left = unsafe { site.run(round, &a, 1, 0) };
                    ticks.push(tsc_end() - t0);
                    std::hint::black_box(left);
                }
            }
        }
    }
}

/// The placed calls as a site's arguments.
fn site_args(regions: &Regions, calls: &[Placed]) -> Vec<SiteArgs> {
    calls
        .iter()
        .map(|p| {
            let (to, from) = regions.at(p);
            SiteArgs { to, from, n: p.n }
        })
        .collect()
}

unsafe extern "sysv64" fn empty(_: *mut u8, _: *const u8, _: usize) -> usize {
    0
}

/// Median of (median, q1, q3) of unsorted rounds.
fn spread(rounds: &[f64]) -> (f64, f64, f64) {
    let mut v = rounds.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    (quantile(&v, 0.5), quantile(&v, 0.25), quantile(&v, 0.75))
}

/// One subject's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayFigure {
    pub subject: String,
    /// Median TSC ticks per call over the rounds, and the quartiles.
    pub ticks: f64,
    pub q1: f64,
    pub q3: f64,
    /// `cells[class][band]`: median ticks per call over the rounds that held
    /// enough calls of the cell, or None when under half the rounds did.
    pub cells: Vec<Vec<Option<f64>>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReplayResults {
    pub replay: Replay,
    pub figures: Vec<ReplayFigure>,
    pub baseline: usize,
    pub repeats: usize,
    /// Calls per cell over the whole trace.
    pub counts: [[u32; 5]; 6],
    /// The timer's own cost per call (the median over rounds), subtracted
    /// from the cell figures round by round.
    pub timer_ticks: f64,
    pub tsc_hz: f64,
    pub cpu: String,
    pub command: String,
}

/// Replay `r` on every subject (see the module text).
pub fn run_replay(
    r: &Replay,
    subjects: &[Subject],
    opts: &BenchOptions,
    progress: &dyn Fn(u64, u64),
) -> ReplayResults {
    let players: Vec<(String, Player)> = subjects
        .iter()
        .map(|s| (s.name.clone(), Player::Routine(s.f)))
        .collect();
    let mut res = replay_players(r, &players, Player::Routine(empty), opts, progress);
    let names: Vec<String> = subjects.iter().map(|s| s.name.clone()).collect();
    res.baseline = super::default_baseline(&names);
    res
}

/// Replay `r` on every call site (see the module text): `sites[0]` is the
/// stock kernel's, the baseline; `empty` is a site with no code, compiled
/// alike, whose cost is the timer's.
pub fn run_replay_sites(
    r: &Replay,
    sites: &[SiteSubject],
    empty: &JitSite,
    opts: &BenchOptions,
    progress: &dyn Fn(u64, u64),
) -> ReplayResults {
    let players: Vec<(String, Player)> = sites
        .iter()
        .map(|s| (s.name.clone(), Player::Site(&s.site)))
        .collect();
    let mut res = replay_players(r, &players, Player::Site(empty), opts, progress);
    res.baseline = 0;
    res
}

fn replay_players(
    r: &Replay,
    subjects: &[(String, Player)],
    timer_probe: Player,
    opts: &BenchOptions,
    progress: &dyn Fn(u64, u64),
) -> ReplayResults {
    let repeats = opts.repeats.max(1);
    let regions = Regions::new(r.region_pages());
    let trace = &r.trace.calls;
    let mut rng = Rng::new(opts.seed);
    let mut totals = vec![Vec::with_capacity(repeats); subjects.len()];
    let mut cell_rounds = vec![vec![vec![Vec::new(); 5]; 6]; subjects.len()];
    let mut ticks = Vec::with_capacity(r.calls);
    // The timer is `timer_probe` timestamped over the same calls in the
    // same round, in its shuffled place (`probe` in the order): a per-call
    // timestamp costs tens of ticks and moves with the core's clock, so it
    // is subtracted round by round and cell by cell, a mean from a mean.
    let probe = subjects.len();
    let mut timer_rounds = Vec::with_capacity(repeats);
    let mut order: Vec<usize> = (0..=probe).collect();
    let total = (repeats * subjects.len()) as u64;
    let mut done = 0;
    for round in 0..repeats {
        let seg = placement::segment(
            trace,
            placement::segment_start(trace.len(), &mut rng),
            r.calls,
        );
        let warm_seg = placement::segment(
            trace,
            placement::segment_start(trace.len(), &mut rng),
            r.calls / 4 + 1,
        );
        let cells: Vec<(usize, usize)> = seg.iter().map(cell).collect();
        let counts = cell_counts(&seg);
        let timed = placement::place(&seg, r.region_pages());
        let warm = placement::place(&warm_seg, r.region_pages());
        let mut sums = vec![[[0u64; 5]; 6]; probe + 1];
        rng.shuffle(&mut order);
        for &s in &order {
            if s == probe {
                timer_probe.each(&regions, &timed, round, &mut ticks);
                timer_rounds.push(ticks.iter().sum::<u64>() as f64 / ticks.len().max(1) as f64);
            } else {
                let p = subjects[s].1;
                p.all(&regions, &warm, round);
                totals[s].push(p.all(&regions, &timed, round));
                p.each(&regions, &timed, round, &mut ticks);
                done += 1;
                progress(done, total);
            }
            for (&(c, b), &k) in cells.iter().zip(&ticks) {
                sums[s][c][b] += k;
            }
        }
        for (s, subject_sums) in sums.iter().enumerate().take(probe) {
            for (c, row) in counts.iter().enumerate() {
                for (b, &k) in row.iter().enumerate() {
                    if k >= MIN_CELL_CALLS {
                        let per = (subject_sums[c][b] as f64 - sums[probe][c][b] as f64) / k as f64;
                        cell_rounds[s][c][b].push(per.max(0.0));
                    }
                }
            }
        }
    }
    timer_rounds.sort_by(|a, b| a.total_cmp(b));
    let timer = quantile(&timer_rounds, 0.5);
    let names: Vec<String> = subjects.iter().map(|s| s.0.clone()).collect();
    let figures = (0..subjects.len())
        .map(|s| {
            let (ticks, q1, q3) = spread(&totals[s]);
            let cells = (0..6)
                .map(|c| {
                    (0..5)
                        .map(|b| {
                            (2 * cell_rounds[s][c][b].len() >= repeats)
                                .then(|| spread(&cell_rounds[s][c][b]).0)
                        })
                        .collect()
                })
                .collect();
            ReplayFigure {
                subject: names[s].clone(),
                ticks,
                q1,
                q3,
                cells,
            }
        })
        .collect();
    ReplayResults {
        replay: r.clone(),
        figures,
        baseline: 0,
        repeats,
        counts: cell_counts(trace.iter().map(|c| &c.call)),
        timer_ticks: timer,
        tsc_hz: super::tsc_hz(),
        cpu: crate::tools::host_cpu::model_name(),
        command: String::new(),
    }
}

fn kib(b: usize) -> String {
    if b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b.div_ceil(1024))
    }
}

impl ReplayResults {
    /// Subject over baseline, total ticks per call.
    pub fn ratio(&self, s: usize) -> f64 {
        self.figures[s].ticks / self.figures[self.baseline].ticks
    }

    pub fn text(&self) -> String {
        let r = &self.replay;
        let mut out = String::new();
        let base = &self.figures[self.baseline].subject;
        let _ = writeln!(
            out,
            "workload {} ({} calls): each round {} consecutive calls in the recorded order from a random start, the same for every subject; working set {} ({} source + {} destination pages the calls rotate over, each call at its recorded page offsets)",
            r.trace.origin,
            r.trace.calls.len(),
            r.calls,
            kib(r.working_set),
            kib(r.working_set / 2),
            kib(r.working_set / 2),
        );
        let _ = writeln!(
            out,
            "TSC ticks per call (TSC: constant {:.2} GHz reference clock, not core cycles): median of {} rounds, IQR = interquartile range of the rounds; CPU: {}",
            self.tsc_hz / 1e9,
            self.repeats,
            self.cpu
        );
        let w = self
            .figures
            .iter()
            .map(|f| f.subject.len())
            .max()
            .unwrap_or(7)
            .max(7);
        let head = format!("vs {base}");
        let _ = writeln!(
            out,
            "{:w$}  {:>10}  {:>13}  {:>h$}",
            "subject",
            "ticks/call",
            "IQR",
            head,
            h = head.len()
        );
        for (s, f) in self.figures.iter().enumerate() {
            let ratio = format!("{:.2}x", self.ratio(s));
            let iqr = format!("{:.1}-{:.1}", f.q1, f.q3);
            let _ = writeln!(
                out,
                "{:w$}  {:>10.1}  {:>13}  {:>h$}",
                f.subject,
                f.ticks,
                iqr,
                ratio,
                h = head.len()
            );
        }
        let _ = writeln!(
            out,
            "\nby size class and (dst - src) mod 4096: calls in the trace; ticks per call (median of rounds, each call timed alone, {:.1} ticks of timer subtracted; over the rounds whose segment holds {MIN_CELL_CALLS} calls of the cell or more; `-` where under half the rounds do)",
            self.timer_ticks
        );
        let mut cols = vec!["size".to_string(), "distance".into(), "calls".into()];
        for (s, f) in self.figures.iter().enumerate() {
            cols.push(f.subject.clone());
            if s != self.baseline {
                cols.push(head.clone());
            }
        }
        let mut rows = vec![cols];
        for (c, class) in SIZE_CLASSES.iter().enumerate() {
            for (b, band) in BANDS.iter().enumerate() {
                let k = self.counts[c][b];
                if k == 0 {
                    continue;
                }
                let mut row = vec![class.0.to_string(), band.0.to_string(), k.to_string()];
                let basev = self.figures[self.baseline].cells[c][b];
                for (s, f) in self.figures.iter().enumerate() {
                    row.push(f.cells[c][b].map_or("-".into(), |v| format!("{v:.1}")));
                    if s != self.baseline {
                        row.push(match (f.cells[c][b], basev) {
                            (Some(v), Some(bv)) if bv > 0.0 => format!("{:.2}x", v / bv),
                            _ => "-".into(),
                        });
                    }
                }
                rows.push(row);
            }
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        for row in rows {
            let line: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    if i < 2 {
                        format!("{v:<w$}", w = widths[i])
                    } else {
                        format!("{v:>w$}", w = widths[i])
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", line.join("  ").trim_end());
        }
        out
    }

    pub fn json(&self) -> serde_json::Value {
        let cells: Vec<serde_json::Value> = SIZE_CLASSES
            .iter()
            .enumerate()
            .flat_map(|(c, class)| {
                BANDS
                    .iter()
                    .enumerate()
                    .map(move |(b, band)| (c, class.0, b, band.0))
            })
            .filter(|&(c, _, b, _)| self.counts[c][b] > 0)
            .map(|(c, class, b, band)| {
                serde_json::json!({
                    "size_class": class,
                    "distance_band": band,
                    "calls": self.counts[c][b],
                    "tsc_ticks": self.figures.iter()
                        .map(|f| (f.subject.clone(), serde_json::json!(f.cells[c][b])))
                        .collect::<serde_json::Map<String, serde_json::Value>>(),
                })
            })
            .collect();
        serde_json::json!({
            "context": {
                "executable": "copygen bench",
                "workload": self.replay.trace.origin,
                "trace_calls": self.replay.trace.calls.len(),
                "segment_calls": self.replay.calls,
                "working_set_bytes": self.replay.working_set,
                "repeats": self.repeats,
                "cpu": self.cpu,
                "mhz_per_cpu": (self.tsc_hz / 1e6).round() as u64,
                "clock": "tsc (reference clock, not core cycles)",
                "timer_ticks": self.timer_ticks,
                "command": self.command,
                "baseline": self.figures[self.baseline].subject,
            },
            "subjects": self.figures.iter().enumerate().map(|(s, f)| serde_json::json!({
                "name": f.subject,
                "tsc_ticks": f.ticks,
                "tsc_ticks_q1": f.q1,
                "tsc_ticks_q3": f.q3,
                "ratio": self.ratio(s),
            })).collect::<Vec<_>>(),
            "cells": cells,
        })
    }
}

/// Per subject, the ticks per call of each round of a replay (the totals
/// of [`run_replay`] without its per-call pass): what `copygen tune`
/// scores a trace by. Every round replays a fresh segment, the same for
/// every subject, in a freshly shuffled subject order after a warm-up.
pub fn replay_rounds(r: &Replay, subjects: &[Subject], opts: &BenchOptions) -> Vec<Vec<f64>> {
    let players: Vec<Player> = subjects.iter().map(|s| Player::Routine(s.f)).collect();
    rounds_of(r, &players, opts)
}

/// [`replay_rounds`] of call sites (`tune --site kernel`): `sites[0]` is
/// the stock site.
pub fn replay_rounds_sites(
    r: &Replay,
    sites: &[SiteSubject],
    opts: &BenchOptions,
) -> Vec<Vec<f64>> {
    let players: Vec<Player> = sites.iter().map(|s| Player::Site(&s.site)).collect();
    rounds_of(r, &players, opts)
}

fn rounds_of(r: &Replay, subjects: &[Player], opts: &BenchOptions) -> Vec<Vec<f64>> {
    let repeats = opts.repeats.max(1);
    let regions = Regions::new(r.region_pages());
    let trace = &r.trace.calls;
    let mut rng = Rng::new(opts.seed);
    let mut totals = vec![Vec::with_capacity(repeats); subjects.len()];
    let mut order: Vec<usize> = (0..subjects.len()).collect();
    for round in 0..repeats {
        let start = placement::segment_start(trace.len(), &mut rng);
        let timed = placement::place(&placement::segment(trace, start, r.calls), r.region_pages());
        let start = placement::segment_start(trace.len(), &mut rng);
        let warm = placement::place(
            &placement::segment(trace, start, r.calls / 4 + 1),
            r.region_pages(),
        );
        rng.shuffle(&mut order);
        for &s in &order {
            subjects[s].all(&regions, &warm, round);
            totals[s].push(subjects[s].all(&regions, &timed, round));
        }
    }
    totals
}

/// The median over rounds of `subject / baseline` in the same round.
pub fn round_ratio(rounds: &[Vec<f64>], subject: usize, baseline: usize) -> f64 {
    let mut v: Vec<f64> = rounds[subject]
        .iter()
        .zip(&rounds[baseline])
        .map(|(a, b)| a / b.max(1e-9))
        .collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    quantile(&v, 0.5)
}
