//! `copygen bench --site kernel`: what the kernel executes, timed site
//! against site. Linux 6.12's `copy_user_generic()` is
//! `ALTERNATIVE("rep movsb", "call rep_movs_alternative", ALT_NOT(X86_FEATURE_FSRM))`:
//! on an FSRM CPU the copy is an inline `rep movsb`, with no call in front
//! of it. A routine is therefore compared with the stock kernel's site, not
//! with a called `rep movsb`: the site's bytes after alternatives run inline
//! in the timing loop, the routine they call JIT-compiled in the `rep movs`
//! convention beside it (`jit::site`). Linux 6.1's `copy_user_generic()` is
//! `alternative_call_2(copy_user_generic_unrolled, copy_user_generic_string,
//! X86_FEATURE_REP_GOOD, copy_user_enhanced_fast_string, X86_FEATURE_ERMS)`:
//! a call on every CPU, in the C convention.
//!
//! The stock routine behind either site is the tree's own code
//! (`stock.rs`: `copy_user_64.o` built by kbuild, alternatives applied for
//! the CPU), placed verbatim beside the site ([`KernelModel`]).
//!
//! The rules are the other benchmarks': every (row, subject) pair measured
//! in a freshly shuffled order each round, the stock site in the same run,
//! a fresh random sequence for every distribution row every round, figures
//! the median over rounds; fixed-size rows cycle through the loop shapes
//! round by round (see `callers.rs`).

use std::fmt::Write as _;

use anyhow::{bail, Context, Result};

use super::buffers::{flush, Buffers};
use super::clock::{tsc_end, tsc_hz, tsc_start};
use super::results::{measurements, quantile, Results};
use super::{round_sequences, BenchOptions, Rng, Sweep};
use std::path::Path;

use super::stock::{StockFeatures, StockObject};
use crate::arch::cpu::CpuFeatures;
use crate::front::strategy::Strategy;
use crate::jit::site::{compile_site_with, site_form, JitSite, PlacedCode, SiteArgs};
use crate::kernel::site::{stock_site_with, SiteCode};
use crate::kernel::variant_chain;
use crate::kernel::version::KernelVersion;
use crate::kernel::wiring;
use crate::tools::host_cpu::HostCpu;

/// A site to time: a name, its compiled loops and, for a per-CPU
/// strategy, the variant the CPU it is resolved for reaches.
pub struct SiteSubject {
    pub name: String,
    pub site: JitSite,
    pub variant: Option<String>,
}

impl SiteSubject {
    /// The site's bytes, the routines it calls and the variant it reaches:
    /// ``e8 00 00 00 00 (call copygen_copy_user_rep_good), variant `movsq` ``.
    pub fn describe(&self) -> String {
        let bytes = site_bytes(self.site.site());
        match &self.variant {
            Some(v) => format!("{bytes}, variant `{v}`"),
            None => bytes,
        }
    }
}

/// The stock kernel a site benchmark runs against: the tree's object
/// (`stock`), the features its alternatives (and every site's) are
/// resolved for, and the tree's routines as a CPU with them runs them.
pub struct KernelModel {
    pub stock: StockObject,
    pub stock_features: StockFeatures,
    /// This CPU's features with ERMS and FSRM as `stock_features` has them:
    /// what the sites' chains and the strategies' variants are resolved for.
    pub features: CpuFeatures,
    /// Whether `stock_features` differ from what the kernel would set here.
    pub forced: bool,
    placed: PlacedCode,
}

impl KernelModel {
    /// The model of `kernel` from `tree` (or the default tree, see
    /// [`StockObject::load`]) for this CPU, its features changed by
    /// `force` (`-erms,-fsrm`: see [`StockFeatures::with`]).
    pub fn new(
        kernel: KernelVersion,
        tree: Option<&Path>,
        force: Option<&str>,
    ) -> Result<KernelModel> {
        if kernel.x86_64_calls_rep_movs_alternative() || kernel == KernelVersion::V6_1 {
            let host = StockFeatures::host();
            let f = match force {
                Some(spec) => host
                    .with(spec)
                    .map_err(|e| anyhow::anyhow!("--stock-features: {e}"))?,
                None => host,
            };
            let stock = StockObject::load(kernel, tree)?;
            KernelModel::from_object(stock, f, crate::arch::cpu::host_features(), f != host)
        } else {
            bail!(
                "the site benchmark knows Linux 6.1's and 6.12's x86_64 call sites, not {}'s",
                kernel.name()
            )
        }
    }

    /// The model of an object already read, for a CPU with `f` (and, for
    /// the features the kernel's stock code does not test, `base`).
    pub fn from_object(
        stock: StockObject,
        f: StockFeatures,
        base: CpuFeatures,
        forced: bool,
    ) -> Result<KernelModel> {
        let placed = stock.placed(f)?;
        Ok(KernelModel {
            features: f.cpu_features(base),
            stock,
            stock_features: f,
            forced,
            placed,
        })
    }

    pub fn kernel(&self) -> KernelVersion {
        self.stock.kernel
    }

    /// The stock site on this model's CPU.
    pub fn stock_site(&self) -> SiteCode {
        self.stock.site(self.stock_features, self.features)
    }

    /// The stock path this model's CPU runs, for the report.
    pub fn path_text(&self) -> Result<String> {
        let mut s = format!("stock path: {}", self.stock.path(self.stock_features)?);
        if self.forced {
            s.push_str(&format!(
                "\nfeatures forced to {} (--stock-features): the code such a CPU runs, timed on this CPU, not on a CPU without them",
                self.stock_features
            ));
        }
        Ok(s)
    }
}

/// The model of `kernel` for this CPU from the default tree, its features
/// changed by `force` as [`KernelModel::new`] changes them, loaded once per
/// process and `force` (`tune --site kernel` measures many candidates).
pub fn host_model(kernel: KernelVersion, force: Option<&str>) -> Result<&'static KernelModel> {
    type Models = Vec<(KernelVersion, Option<String>, &'static KernelModel)>;
    static MODELS: std::sync::Mutex<Models> = std::sync::Mutex::new(Vec::new());
    let mut models = MODELS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, m)) = models
        .iter()
        .find(|(k, f, _)| *k == kernel && f.as_deref() == force)
    {
        return Ok(m);
    }
    let m: &'static KernelModel = Box::leak(Box::new(KernelModel::new(kernel, None, force)?));
    models.push((kernel, force.map(str::to_string), m));
    Ok(m)
}

/// The site a kernel runs on a CPU with `features`: the stock one
/// (`strategy` `None`; 6.1's taken with REP_GOOD set, see
/// [`KernelModel::stock_site`] for the one a model's CPU runs) or the one
/// a patch for `strategy` makes, from `kernel::site` (the kernel patch
/// writes the same chain).
pub fn resolve_site(
    strategy: Option<&Strategy>,
    kernel: KernelVersion,
    features: CpuFeatures,
) -> Result<SiteCode> {
    Ok(match strategy {
        None => stock_site_with(kernel, features, true),
        Some(s) => variant_chain::site(&wired(s, kernel)?, kernel, features),
    })
}

/// `s` as `kernel-patch` wires it into `kernel`: the routines named as the
/// tree calls them (`rep_movs_alternative` for a drop-in, which replaces
/// the tree's; `copygen_copy_user` behind the glue or the chain), one
/// routine for both directions. A strategy no patch can put there is
/// refused with the patch's reason.
pub fn wired(s: &Strategy, kernel: KernelVersion) -> Result<Strategy, wiring::Unfit> {
    let mut notes = Vec::new();
    let mut t = wiring::common(s, kernel, &mut notes)?;
    wiring::x86(s, &mut t, kernel, &mut notes)?;
    Ok(t)
}

/// The stock kernel's site for the model's CPU, compiled with the tree's
/// routines.
pub fn stock_subject(model: &KernelModel) -> Result<SiteSubject> {
    let code = model.stock_site();
    let site = compile_site_with(
        &code,
        &[],
        std::slice::from_ref(&model.placed),
        model.features,
    )
    .context("the stock site")?;
    Ok(SiteSubject {
        name: format!("stock {}", model.kernel().name()),
        site,
        variant: None,
    })
}

/// The stock site once more, as a subject of its own (`stock 6.12 again`):
/// an A/A control, whose ratios to the stock site are the run's noise.
pub fn stock_again_subject(model: &KernelModel) -> Result<SiteSubject> {
    let mut again = stock_subject(model)?;
    again.name = format!("{} again", again.name);
    Ok(again)
}

/// The site a patch for `s` makes, for the model's CPU, compiled with the
/// strategy's routines (and the tree's, which a patched kernel still has).
/// The strategy is [`wired`] first: a strategy no patch can put at the
/// site is refused with the reason `kernel-patch` gives.
pub fn site_subject(s: &Strategy, model: &KernelModel) -> Result<SiteSubject> {
    let t = wired(s, model.kernel())?;
    let code = variant_chain::site(&t, model.kernel(), model.features);
    let site = compile_site_with(
        &code,
        &[site_form(&t)],
        std::slice::from_ref(&model.placed),
        model.features,
    )
    .with_context(|| format!("{}: its call site", s.name))?;
    Ok(SiteSubject {
        name: s.name.clone(),
        site,
        variant: crate::lower::variants::select(&t, model.features).map(|v| v.name.clone()),
    })
}

/// A site with no code in the stock site's convention, compiled as the
/// others are: what the loop and the timestamps around one call cost (the
/// timer a per-call replay subtracts).
pub fn empty_site(model: &KernelModel) -> Result<JitSite> {
    let code = SiteCode {
        bytes: Vec::new(),
        calls: Vec::new(),
        convention: model.stock_site().convention,
    };
    compile_site_with(&code, &[], &[], model.features).context("the empty site")
}

/// TSC ticks per execution of `args` (`stride` 0: one set of arguments
/// `count` times; else `count` consecutive entries).
fn time_site(site: &JitSite, context: usize, args: &[SiteArgs], count: u64, stride: u64) -> f64 {
    let t0 = tsc_start();
    // SAFETY: the arguments lie in the bench's buffers (Buffers::new made
    // room for every row); `args` holds `count` entries when `stride` > 0.
    let left = unsafe { site.run(context, args.as_ptr(), count, stride) };
    let t = tsc_end() - t0;
    std::hint::black_box(left);
    t as f64 / count.max(1) as f64
}

/// A distribution row's calls as site arguments in `bufs`.
fn sequence_args(bufs: &Buffers, seq: &[crate::tools::trace::Call]) -> Vec<SiteArgs> {
    seq.iter()
        .map(|c| SiteArgs {
            to: bufs.dst(c.dst_off as usize),
            from: bufs.src(c.src_off as usize),
            n: c.n as usize,
        })
        .collect()
}

/// Measure every site on every row: [`super::run_with`]'s rules, the sites
/// inline in the timing loops. The first subject is the baseline (the
/// stock site).
pub fn run_sites(
    sweep: &Sweep,
    subjects: &[SiteSubject],
    opts: &BenchOptions,
    progress: &dyn Fn(u64, u64),
) -> Results {
    let repeats = opts.repeats.max(1);
    let bufs = Buffers::new(sweep);
    let stride = std::mem::size_of::<SiteArgs>() as u64;
    let fixed = |r: &super::SweepRow| {
        [SiteArgs {
            to: bufs.dst(r.dst_off),
            from: bufs.src(r.src_off),
            n: r.n,
        }]
    };
    let pairs: Vec<(usize, usize)> = (0..sweep.rows.len())
        .flat_map(|r| (0..subjects.len()).map(move |s| (r, s)))
        .collect();
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
                    let a = fixed(r);
                    time_site(&s.site, 0, &a, 20, 0);
                    let per = time_site(&s.site, 0, &a, 20, 0).max(1.0);
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
        let seqs: Vec<Option<(Vec<SiteArgs>, Vec<SiteArgs>)>> = round_sequences(sweep, &mut rng)
            .into_iter()
            .map(|q| q.map(|(t, w)| (sequence_args(&bufs, &t), sequence_args(&bufs, &w))))
            .collect();
        let mut order = pairs.clone();
        rng.shuffle(&mut order);
        for (r, s) in order {
            let row = &sweep.rows[r];
            let site = &subjects[s].site;
            let t = if let Some((timed, warm)) = &seqs[r] {
                time_site(site, round, warm, warm.len() as u64, stride);
                time_site(site, round, timed, timed.len() as u64, stride)
            } else {
                let a = fixed(row);
                if sweep.cold {
                    flush(a[0].from, row.n);
                    flush(a[0].to, row.n);
                    time_site(site, round, &a, 1, 0)
                } else {
                    time_site(site, round, &a, 1, 0);
                    time_site(site, round, &a, u64::from(iters[r][s]), 0)
                }
            };
            samples[r][s].push(t);
            done += 1;
            progress(done, total);
        }
    }
    let cells = measurements(samples, &iters);
    Results {
        sweep: sweep.clone(),
        subjects: subjects.iter().map(|s| s.name.clone()).collect(),
        baseline: 0,
        repeats,
        tsc_hz: tsc_hz(),
        cpu: HostCpu::read().site_label(crate::arch::cpu::host_features()),
        command: String::new(),
        cells,
    }
}

/// Per row: the median over rounds of `subject / baseline` in the same round.
pub fn round_ratios(res: &Results, subject: usize) -> Vec<f64> {
    (0..res.sweep.rows.len())
        .map(|r| {
            let (a, b) = (
                &res.cells[r][subject].rounds,
                &res.cells[r][res.baseline].rounds,
            );
            let mut v: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y.max(1e-9)).collect();
            v.sort_by(|x, y| x.total_cmp(y));
            quantile(&v, 0.5)
        })
        .collect()
}

/// The bytes of a site, as `f3 a4 0f 1f 00` (rel32s as placed: zero),
/// followed by what its calls reach: `e8 00 00 00 00 (call
/// rep_movs_alternative)`.
fn site_bytes(code: &SiteCode) -> String {
    let bytes = code
        .bytes
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    let calls: Vec<String> = code
        .calls
        .iter()
        .map(|c| format!("call {}", c.target.symbol()))
        .collect();
    if calls.is_empty() {
        bytes
    } else {
        format!("{bytes} ({})", calls.join(", "))
    }
}

/// The report: per row, each patched site over the stock site (median of
/// the per-round ratios) with both sites' ticks per call in brackets.
pub fn site_text(res: &Results, sites: &[SiteSubject]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", res.sweep.title);
    let _ = writeln!(
        out,
        "Kernel call sites, inline in the timing loop: each site over `{}` (median of {} per-round ratios) [TSC ticks per call: site / stock, medians; constant {:.2} GHz reference clock]{}",
        res.subjects[res.baseline],
        res.repeats,
        res.tsc_hz / 1e9,
        if res.sweep.cold { ", cold caches" } else { "" }
    );
    let _ = writeln!(out, "CPU: {}", res.cpu);
    for s in sites {
        let _ = writeln!(out, "site {}: {}", s.name, s.describe());
    }
    let label_w = res
        .sweep
        .rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(4)
        .max(res.sweep.x_label.chars().count());
    let others: Vec<usize> = (0..res.subjects.len())
        .filter(|&s| s != res.baseline)
        .collect();
    let ratios: Vec<Vec<f64>> = others.iter().map(|&s| round_ratios(res, s)).collect();
    // A cell is `ratio [site / stock]`, each part right-aligned in its
    // column so that ratios line up under each other.
    let parts = |r: usize, k: usize| {
        [
            format!("{:.2}x", ratios[k][r]),
            format!("{:.1}", res.cells[r][others[k]].cycles),
            format!("{:.1}", res.cells[r][res.baseline].cycles),
        ]
    };
    let part_widths: Vec<[usize; 3]> = (0..others.len())
        .map(|k| {
            (0..res.sweep.rows.len()).fold([0; 3], |w, r| {
                let p = parts(r, k);
                std::array::from_fn(|i| w[i].max(p[i].len()))
            })
        })
        .collect();
    let cell = |r: usize, k: usize| {
        let ([ratio, site, stock], [a, b, c]) = (parts(r, k), part_widths[k]);
        format!("{ratio:>a$} [{site:>b$} / {stock:>c$}]")
    };
    let widths: Vec<usize> = (0..others.len())
        .map(|k| {
            (0..res.sweep.rows.len())
                .map(|r| cell(r, k).len())
                .max()
                .unwrap_or(0)
                .max(res.subjects[others[k]].len())
        })
        .collect();
    let _ = write!(out, "{:<label_w$}", res.sweep.x_label);
    for (k, &s) in others.iter().enumerate() {
        let _ = write!(out, "  {:>w$}", res.subjects[s], w = widths[k]);
    }
    out.push('\n');
    for (r, row) in res.sweep.rows.iter().enumerate() {
        let _ = write!(out, "{:<label_w$}", row.label);
        for (k, w) in widths.iter().enumerate() {
            let _ = write!(out, "  {:>w$}", cell(r, k));
        }
        out.push('\n');
    }
    out
}

// ---- figures for a kernel patch ------------------------------------------------

/// The distance rows of the figures' alias table: sizes from 1 KiB with
/// `(dst - src) mod 4096` 0 (for reference) and 1..=15, where Zen's
/// `rep movsb` collapses.
pub const FIGURES_ALIAS_SIZES: &[usize] = &[1024, 4096];

/// The rows `bench --site kernel --figures-out` measures, in one sweep (so
/// every row is interleaved with every other, round by round): the
/// built-in distributions (series `distributions`), sizes 0..=64 (`sizes`),
/// 8 KiB at destination offsets 0..=0x20 from a page-aligned source
/// (`offsets`), the alias band (`alias`).
pub fn figures_sweep(calls: usize) -> Sweep {
    let dists: Vec<_> = super::distribution::BUILTIN
        .iter()
        .map(|(n, _)| super::distribution::Distribution::load(n).expect("built in"))
        .collect();
    let mut rows = super::distribution_rows(&dists);
    for (r, d) in rows.iter_mut().zip(&dists) {
        r.series = "distributions".into();
        r.label = d.name.clone();
    }
    for n in 0..=64 {
        let mut r = super::custom(&[n], &[0], &[0]).rows.remove(0);
        r.series = "sizes".into();
        r.label = format!("{n} B");
        rows.push(r);
    }
    for k in 0..=0x20 {
        let mut r = super::custom(&[8192], &[0], &[k]).rows.remove(0);
        r.series = "offsets".into();
        r.label = format!("8 KiB, dst +0x{k:02x}");
        rows.push(r);
    }
    let band: Vec<usize> = (0..=15).collect();
    for mut r in super::alias_rows(FIGURES_ALIAS_SIZES, &band) {
        r.series = "alias".into();
        rows.push(r);
    }
    Sweep {
        name: "figures".into(),
        title: "kernel call sites: distributions, sizes 0..64, 8 KiB at offsets, the alias band"
            .into(),
        x_label: "row".into(),
        rows,
        distributions: dists,
        calls,
        ..Sweep::default()
    }
}

/// `line` with its first letter upper-case.
fn capitalize(line: &str) -> String {
    let mut c = line.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The figures of a [`figures_sweep`] run with the stock site and one
/// patched site, as `kernel-patch --figures` takes them: lines of at most
/// 75 columns, no tabs, the CPU named.
pub fn figures_text(res: &Results, sites: &[SiteSubject], stock_path: &str) -> String {
    use crate::tools::mail_text::wrap_line;
    let mut out = String::new();
    let patched = 1.min(res.subjects.len() - 1);
    let ratios = round_ratios(res, patched);
    out.push_str(&wrap_line(&format!(
        "Call sites as a {} kernel runs them on this CPU, after alternatives, \
         each timed inline in one loop with the routine it calls (copygen \
         bench --site kernel): the site of {} against the stock site. TSC \
         ticks per call, median of {} rounds; ratio = patched / stock, median \
         of the per-round ratios.",
        res.subjects[res.baseline]
            .strip_prefix("stock ")
            .unwrap_or("6.12"),
        res.subjects[patched],
        res.repeats
    )));
    out.push_str(&wrap_line(&format!("CPU: {}", res.cpu)));
    for line in stock_path.lines() {
        out.push_str(&wrap_line(&capitalize(line)));
    }
    for s in sites {
        out.push_str(&wrap_line(&format!("Site of {}: {}", s.name, s.describe())));
    }
    let sections = [
        (
            "distributions",
            "Sizes from measured distributions, random page offsets, a fresh sequence every round:",
            "distribution",
        ),
        ("sizes", "Sizes 0..64 B, page-aligned, hot:", "size"),
        (
            "offsets",
            "8 KiB copies to a destination at offset 0x00..0x20 from a page-aligned source:",
            "copy",
        ),
        (
            "alias",
            "(dst - src) mod 4096 from 0 to 15, sizes from 1 KiB:",
            "size, distance",
        ),
    ];
    for (series, title, head) in sections {
        let rows: Vec<usize> = (0..res.sweep.rows.len())
            .filter(|&r| res.sweep.rows[r].series == series)
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push('\n');
        out.push_str(&wrap_line(title));
        let _ = writeln!(
            out,
            "  {head:<22} {:>9} {:>9} {:>7}",
            "stock", "patched", "ratio"
        );
        for r in rows {
            let _ = writeln!(
                out,
                "  {:<22} {:>9.1} {:>9.1} {:>6.2}x",
                res.sweep.rows[r].label,
                res.cells[r][res.baseline].cycles,
                res.cells[r][patched].cycles,
                ratios[r]
            );
        }
    }
    out
}
