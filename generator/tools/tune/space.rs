//! The search space, all of it: a [`Candidate`] (the shape every tuned
//! strategy has: a short head/tail class, a mid-size unrolled loop, the
//! large class's `rep movs`, alias guards in front of the mid and large
//! classes), the choices each parameter draws from, its neighbours
//! (over a fixed band shape, [`Candidate::mutate`], or over the bands this
//! CPU showed, [`Candidate::mutate_bands`] within a [`BandSpace`]), and the
//! strategy file it stands for ([`CandidateBase`] holds what every
//! candidate shares). `bands.rs` measures the bands; this file turns them
//! into guards.

use serde::Serialize;

use super::bands::SizeBands;
use crate::front::strategy::*;
use crate::front::to_toml;
use crate::front::variant::TunedOn;
use crate::tools::bench;

// ---- the search space -----------------------------------------------------------

/// The band loop's parameters (an `unrolled` method of 8-byte registers).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct LoopShape {
    pub block: u32,
    pub registers: u32,
    pub interleaved: bool,
    /// Alignment prologue: (pointer, bytes).
    pub align: Option<(&'static str, u32)>,
    /// `prefetchnta` this many bytes ahead.
    pub prefetch: Option<u32>,
    /// Overlapping last word (when every guarded class starts at >= 8).
    pub overlap_tail: bool,
    /// The tail one overlapping block ending at the end, no word loop
    /// (`tail = "overlap_block"`, when every class it serves starts at >=
    /// the block); before `overlap_tail`.
    pub block_tail: bool,
}

/// `1 register`, `4 registers`.
fn registers_text(n: u32) -> String {
    if n == 1 {
        "1 register".into()
    } else {
        format!("{n} registers")
    }
}

impl LoopShape {
    /// `unrolled 64 B, 4 registers, loads first, align dst 8, overlapping-word tail`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "unrolled {} B, {}, {}",
            self.block,
            registers_text(self.registers),
            if self.interleaved {
                "interleaved"
            } else {
                "loads first"
            }
        );
        if let Some((p, to)) = self.align {
            s.push_str(&format!(", align {p} {to}"));
        }
        if let Some(d) = self.prefetch {
            s.push_str(&format!(", prefetchnta +{d}"));
        }
        s.push_str(if self.block_tail {
            ", overlapping-block tail"
        } else if self.overlap_tail {
            ", overlapping-word tail"
        } else {
            ", word tail"
        });
        s
    }

    /// The tail this loop has in classes from `lo` bytes up.
    fn tail(&self, lo: u64) -> Tail {
        if self.block_tail && lo >= self.block as u64 {
            Tail::OverlapBlock
        } else if self.overlap_tail && lo >= 8 {
            Tail::Overlap
        } else {
            Tail::Words
        }
    }

    /// The method this loop is, for classes from `lo` bytes up, in a
    /// strategy of `precision` ([`align_by`]).
    fn method(&self, name: &str, lo: u64, precision: Precision) -> Method {
        Method {
            name: name.into(),
            kind: MethodKind::Unrolled(Unrolled {
                block: self.block,
                width: 8,
                registers: self.registers,
                grouping: if self.interleaved {
                    Grouping::Interleaved
                } else {
                    Grouping::LoadsFirst
                },
                prefetch: self.prefetch.map(|d| Prefetch {
                    kind: PrefetchKind::Nta,
                    distances: vec![d],
                }),
                align: self.align.map(|(p, to)| Align {
                    pointer: if p == "src" {
                        AlignPointer::Src
                    } else {
                        AlignPointer::Dst
                    },
                    to,
                    min_size: self.block.max(to) as u64,
                    by: align_by(precision, to),
                }),
                tail: self.tail(lo),
            }),
        }
    }
}

/// How a tuned method aligns a pointer to `to` bytes in a strategy of
/// `precision`: by one unaligned word where the validator allows it
/// (exact precision, `to` at most a register), else by the byte loop.
fn align_by(precision: Precision, to: u32) -> AlignBy {
    if precision == Precision::Exact && to <= 8 {
        AlignBy::Word
    } else {
        AlignBy::Bytes
    }
}

/// A guard from the measured bands ([`super::bands`]): `(dst - src) mod
/// 4096` in `lo..=hi`, for sizes `from..until` (no `until`: every size from
/// `from` up), sent to a loop of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct BandGuard {
    pub lo: u32,
    pub hi: u32,
    pub from: u32,
    /// The first size the guard no longer covers (a CPU whose band shows
    /// only at short sizes); above `from`.
    pub until: Option<u32>,
    pub method: LoopShape,
}

impl BandGuard {
    /// Whether the guard covers size `n`.
    pub fn covers(&self, n: u64) -> bool {
        self.from as u64 <= n && self.until.is_none_or(|u| n < u as u64)
    }

    /// `from 65 B` or `sizes 65..1024 B`.
    pub fn sizes(&self) -> String {
        match self.until {
            Some(u) => format!("sizes {}..{u} B", self.from),
            None => format!("from {} B", self.from),
        }
    }
}

/// A run of sizes above the short class with one method and one set of
/// guards: `lo..=hi` (no `hi`: every size up), the fixed shape's band (0:
/// none), the measured-band guards active, whether in the mid class.
struct Segment {
    lo: u64,
    hi: Option<u64>,
    band: u32,
    active: Vec<usize>,
    mid: bool,
}

/// The large class's method: `rep movsb`, or `rep movsq` (then a byte
/// loop for the last `len mod 8` bytes), each optionally after a prologue
/// that aligns the destination to 8 (from 64 bytes, as 6.12's
/// `.Llarge_movsq`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct LargeMethod {
    /// Bytes per `rep movs` step: 1 (`rep movsb`) or 8 (`rep movsq`).
    pub unit: u32,
    /// Align the destination to 8 first.
    pub align_dst: bool,
}

impl LargeMethod {
    /// A bare `rep movsb`.
    pub const MOVSB: LargeMethod = LargeMethod {
        unit: 1,
        align_dst: false,
    };
    /// The destination aligned to 8, then `rep movsq` (the stock 6.12 path
    /// from 64 bytes on a CPU without ERMS).
    pub const MOVSQ_ALIGNED: LargeMethod = LargeMethod {
        unit: 8,
        align_dst: true,
    };

    /// The method's name in the strategy file.
    pub fn name(&self) -> &'static str {
        match (self.unit, self.align_dst) {
            (1, false) => "movsb",
            (1, true) => "movsb_aligned",
            (_, false) => "movsq",
            (_, true) => "movsq_aligned",
        }
    }

    /// `rep movsq, dst aligned to 8 from 64 B`.
    pub fn describe(&self) -> String {
        let insn = if self.unit == 1 {
            "rep movsb"
        } else {
            "rep movsq (then a byte loop for the rest)"
        };
        if self.align_dst {
            format!("{insn}, dst aligned to 8 from {LARGE_ALIGN_FROM} B")
        } else {
            insn.to_string()
        }
    }

    /// The method, for a strategy of `precision` ([`align_by`]).
    fn method(&self, precision: Precision) -> Method {
        Method {
            name: self.name().into(),
            kind: MethodKind::RepMovs {
                unit: self.unit,
                align: self.align_dst.then_some(Align {
                    pointer: AlignPointer::Dst,
                    to: 8,
                    min_size: LARGE_ALIGN_FROM,
                    // One word where it lies, then on to the boundary, as
                    // 6.12's `.Llarge_movsq`: no byte loop, no branch.
                    by: align_by(precision, 8),
                }),
                // The rest of a `rep movsq` by a byte loop, as 6.12's
                // `.Llarge_movsq`: no second `rep` start-up.
                tail: if self.unit > 1 {
                    RepTail::Bytes
                } else {
                    RepTail::default()
                },
            },
        }
    }
}

/// The size from which the large class's alignment prologue runs (6.12's
/// `.Llarge_movsq` threshold).
pub const LARGE_ALIGN_FROM: u64 = 64;

/// What one size class of a candidate runs (outside its alias guards).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassKind {
    Short,
    Mid,
    Large,
}

/// One size class of a candidate, for the report: its sizes, which class
/// it is and its method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassChoice {
    pub lo: u64,
    pub hi: Option<u64>,
    pub kind: ClassKind,
    pub method: String,
}

impl ClassChoice {
    /// `0..=64 B` or `513.. B`.
    pub fn sizes(&self) -> String {
        match self.hi {
            Some(h) => format!("{}..={h} B", self.lo),
            None => format!("{}.. B", self.lo),
        }
    }
}

/// One point of the search space (see the module comment).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Candidate {
    /// Sizes `0..=short_max` use head/tail copies; 0: none.
    pub short_max: u32,
    /// Registers of the head/tail copies (8-byte).
    pub short_registers: u32,
    /// Sizes from the short class's end up to `mid_max` use `mid_loop`; 0
    /// (or not above `short_max`): no mid class.
    pub mid_max: u32,
    /// The mid class's loop.
    pub mid_loop: LoopShape,
    /// What every size above the short and mid classes runs.
    pub large: LargeMethod,
    /// The fixed band shape (`narrow`, `wide`, `wide_until`, `guard_from`,
    /// `band_loop`): what [`Candidate::mutate`] searches, for hand-built
    /// candidates; `tune` searches [`Candidate::bands`] instead.
    /// Alias guards only from this size up.
    pub guard_from: u32,
    /// The band `1..=narrow` guarded from `wide_until` up; 0: no guard.
    pub narrow: u32,
    /// The band `1..=wide` guarded below `wide_until`.
    pub wide: u32,
    pub wide_until: u32,
    pub band_loop: LoopShape,
    /// Guards of measured bands, disjoint, by `lo`; when there are any,
    /// the fixed shape above (`narrow`, `wide`) guards nothing.
    ///
    /// Every guard (fixed or measured) is tested before its class's
    /// method, in the mid class as in the large one: a copy whose size is
    /// in a guard's range and whose `(dst - src) mod 4096` is in its band
    /// runs the guard's loop, whatever class its size is in.
    pub bands: Vec<BandGuard>,
    /// Test the guards' bands (their hull) once, before the size classes
    /// (`[alias_first]`): the size classes of the copies outside it carry
    /// no guard, those inside it run the classes above with their guards.
    /// The same copies take the same methods; only the branches differ.
    pub alias_first: bool,
}

// ---- the choices ----------------------------------------------------------------

/// Sizes the short head/tail class may end at (0: none).
pub const SHORT_MAX: &[u32] = &[0, 8, 16, 32, 64, 128];
/// Registers of the head/tail copies.
pub const SHORT_REGS: &[u32] = &[2, 4];
/// Sizes the mid class may end at (0: none).
pub const MID_MAX: &[u32] = &[0, 128, 256, 512, 1024, 2048, 4096];
/// The large class's methods.
pub const LARGE: &[LargeMethod] = &[
    LargeMethod::MOVSB,
    LargeMethod {
        unit: 1,
        align_dst: true,
    },
    LargeMethod {
        unit: 8,
        align_dst: false,
    },
    LargeMethod::MOVSQ_ALIGNED,
];
/// Sizes the fixed shape's alias guards may start at ([`Candidate::mutate`]).
const FIXED_GUARD_FROM: &[u32] = &[0, 16, 32, 64, 128, 256, 512, 1024];
/// The fixed shape's narrow band `1..=narrow` (0: no guard).
const NARROW: &[u32] = &[0, 15, 16, 31, 63];
/// The fixed shape's wide band `1..=wide`.
const WIDE: &[u32] = &[15, 16, 31, 63];
/// Sizes the fixed shape's wide band stops at.
const WIDE_UNTIL: &[u32] = &[0, 256, 512, 1024, 2048, 4096];
/// Sizes a measured band's guard may start at ([`Candidate::mutate_bands`]).
const BAND_GUARD_FROM: &[u32] = &[0, 17, 65, 128, 257, 512, 1025, 2048];
/// Sizes a measured band's guard may stop at (none: it covers every size
/// from its start up).
const BAND_GUARD_UNTIL: &[Option<u32>] = &[
    None,
    Some(256),
    Some(512),
    Some(768),
    Some(1024),
    Some(2048),
    Some(4096),
];
/// A loop's (a guard's or the mid class's) block, registers, alignment
/// and prefetch distance.
pub const BLOCK: &[u32] = &[32, 64, 128];
pub const REGS: &[u32] = &[2, 4];
pub const ALIGN: &[Option<(&str, u32)>] =
    &[None, Some(("dst", 8)), Some(("dst", 16)), Some(("src", 8))];
pub const PREFETCH: &[Option<u32>] = &[None, Some(256), Some(512)];

/// One of `v`, drawn by `rng`.
fn pick<T: Clone>(rng: &mut bench::Rng, v: &[T]) -> T {
    v[(rng.next_u64() % v.len() as u64) as usize].clone()
}

impl Candidate {
    /// The candidate with no method using more than `registers` scratch
    /// registers ([`CandidateBase::registers`]).
    pub fn within(mut self, registers: u32) -> Candidate {
        self.short_registers = self.short_registers.min(registers);
        self.mid_loop.registers = self.mid_loop.registers.min(registers);
        self.band_loop.registers = self.band_loop.registers.min(registers);
        for g in &mut self.bands {
            g.method.registers = g.method.registers.min(registers);
        }
        self
    }

    /// `rep movsb` everywhere, the band 1..=15 guarded at every size.
    pub fn bare_guarded() -> Candidate {
        Candidate {
            short_max: 0,
            short_registers: 4,
            mid_max: 0,
            mid_loop: seed_loop(false),
            large: LargeMethod::MOVSB,
            guard_from: 0,
            narrow: 15,
            wide: 15,
            wide_until: 0,
            band_loop: LoopShape {
                block: 64,
                registers: 4,
                interleaved: false,
                align: Some(("dst", 8)),
                prefetch: None,
                overlap_tail: true,
                block_tail: false,
            },
            bands: Vec::new(),
            alias_first: false,
        }
    }

    /// Where the search starts: the bare guarded shape, guarded-movsb's
    /// shape, a wide band for short copies only, a short head/tail class,
    /// and the shape for a CPU without ERMS ([`Candidate::no_erms`]).
    pub fn seeds() -> Vec<Candidate> {
        let bare = Candidate::bare_guarded();
        let guarded_movsb = Candidate {
            short_max: 64,
            narrow: 63,
            wide: 63,
            guard_from: 65,
            ..bare.clone()
        };
        let wide_short = Candidate {
            guard_from: 0,
            wide: 31,
            wide_until: 1024,
            ..bare.clone()
        };
        let short = Candidate {
            short_max: 16,
            ..bare.clone()
        };
        vec![short, wide_short, guarded_movsb, bare, Candidate::no_erms()]
    }

    /// The shape that beats the stock routine on a CPU without ERMS (AMD
    /// Zen 1 and 2; `guarded-movsb`'s `zen_movsq` variant): head/tail
    /// copies up to 64 bytes, a 64-byte unrolled loop (destination aligned
    /// to 8, overlapping tail) up to 512, then the destination-aligned
    /// `rep movsq`; no alias guard.
    pub fn no_erms() -> Candidate {
        Candidate {
            short_max: 64,
            mid_max: 512,
            large: LargeMethod::MOVSQ_ALIGNED,
            ..Candidate::unguarded(0)
        }
    }

    /// The alias band guarded at size `n` (0: none).
    fn band_at(&self, n: u64) -> u32 {
        if self.narrow == 0 || !self.bands.is_empty() || n < self.guard_from as u64 {
            0
        } else if n < self.wide_until as u64 {
            self.wide.max(self.narrow)
        } else {
            self.narrow
        }
    }

    /// The mid class's last size, when it has one.
    pub fn mid_end(&self) -> Option<u64> {
        let m = self.mid_max as u64;
        (m > 0 && m >= self.start()).then_some(m)
    }

    /// Size classes above the short class, each one [`Segment`].
    fn classes(&self) -> Vec<Segment> {
        let start = self.start();
        let mid_end = self.mid_end();
        let mut cuts: Vec<u64> = [self.guard_from as u64, self.wide_until as u64]
            .into_iter()
            .chain(mid_end.map(|m| m + 1))
            .chain(self.bands.iter().map(|b| b.from as u64))
            .chain(self.bands.iter().filter_map(|b| b.until.map(u64::from)))
            .filter(|&c| c > start)
            .collect();
        cuts.sort();
        cuts.dedup();
        let active = |n: u64| -> Vec<usize> {
            (0..self.bands.len())
                .filter(|&i| self.bands[i].covers(n))
                .collect()
        };
        let in_mid = |n: u64| mid_end.is_some_and(|m| n <= m);
        let mut out: Vec<Segment> = Vec::new();
        let mut lo = start;
        for hi_excl in cuts.into_iter().map(Some).chain([None]) {
            let next = Segment {
                lo,
                hi: hi_excl.map(|h| h - 1),
                band: self.band_at(lo),
                active: active(lo),
                mid: in_mid(lo),
            };
            match out.last_mut() {
                Some(last)
                    if (last.band, &last.active, last.mid)
                        == (next.band, &next.active, next.mid) =>
                {
                    last.hi = next.hi
                }
                _ => out.push(next),
            }
            if let Some(h) = hi_excl {
                lo = h;
            }
        }
        out
    }

    /// The first size above the short class.
    fn start(&self) -> u64 {
        if self.short_max > 0 {
            self.short_max as u64 + 1
        } else {
            0
        }
    }

    /// The strategy this candidate stands for, with `header`'s name,
    /// description, options and CPU record. Not yet validated: `source`
    /// and `text` are empty until [`Candidate::toml`]'s text is parsed.
    pub fn strategy(&self, header: &CandidateBase) -> Strategy {
        let method = |name: &str, kind: MethodKind| Method {
            name: name.into(),
            kind,
        };
        let small = method(
            "small",
            MethodKind::HeadTail {
                width: 8,
                registers: self.short_registers,
            },
        );
        let large = self.large.method(header.precision);
        let start = self.start();
        let mid = self.mid_loop.method("mid", start, header.precision);
        let bands = self.classes();
        let guarded_lo = bands.iter().filter(|c| c.band > 0).map(|c| c.lo).min();
        let band = self
            .band_loop
            .method("band", guarded_lo.unwrap_or(0), header.precision);
        let band_methods: Vec<Method> = self
            .bands
            .iter()
            .map(|g| {
                g.method.method(
                    &format!("band_{}_{}", g.lo, g.hi),
                    start.max(g.from as u64),
                    header.precision,
                )
            })
            .collect();
        let mut classes = Vec::new();
        if self.short_max > 0 {
            classes.push(SizeClass {
                lo: 0,
                hi: Some(self.short_max as u64),
                guards: Vec::new(),
                method: small,
            });
        }
        for Segment {
            lo,
            hi,
            band: b,
            active,
            mid: in_mid,
        } in bands
        {
            let mut guards = Vec::new();
            if b > 0 {
                guards.push(Guard {
                    condition: Condition::Alias { lo: 1, hi: b },
                    method: band.clone(),
                });
            }
            for i in active {
                guards.push(Guard {
                    condition: Condition::Alias {
                        lo: self.bands[i].lo,
                        hi: self.bands[i].hi,
                    },
                    method: band_methods[i].clone(),
                });
            }
            classes.push(SizeClass {
                lo,
                hi,
                guards,
                method: if in_mid { mid.clone() } else { large.clone() },
            });
        }
        let (classes, alias_first) = if self.alias_first {
            split_alias_first(classes)
        } else {
            (classes, None)
        };
        Strategy {
            name: header.name.clone(),
            symbol: symbol_of(&header.name),
            description: header.description.clone(),
            arch: Arch::X86_64,
            directions: header.directions.clone(),
            routine: RoutineShape::PerDirection,
            precision: header.precision,
            zero_tail: false,
            linux: header.linux.clone(),
            classes,
            alias_first,
            variants: Vec::new(),
            fixed_sizes: Vec::new(),
            tuned_on: header.tuned_on.clone(),
            source: String::new(),
            file: std::path::PathBuf::new(),
            text: String::new(),
        }
    }

    /// The strategy file: `header`'s comments, then [`Candidate::strategy`]
    /// as the one strategy writer (`front/to_toml.rs`) writes it.
    pub fn toml(&self, header: &CandidateBase) -> String {
        file_text(&header.comments, &self.strategy(header))
    }

    /// A neighbour: one or two parameters changed.
    pub fn mutate(&self, rng: &mut bench::Rng) -> Candidate {
        let mut c = self.clone();
        let changes = 1 + (rng.next_u64() % 2) as usize;
        for _ in 0..changes {
            match rng.next_u64() % 11 {
                10 => c.alias_first = !c.alias_first,
                0 => c.short_max = pick(rng, SHORT_MAX),
                1 => c.short_registers = pick(rng, SHORT_REGS),
                2 => c.guard_from = pick(rng, FIXED_GUARD_FROM),
                3 => c.narrow = pick(rng, NARROW),
                4 => c.wide = pick(rng, WIDE),
                5 => c.wide_until = pick(rng, WIDE_UNTIL),
                6 => mutate_loop(&mut c.band_loop, rng),
                7 => c.mid_max = pick(rng, MID_MAX),
                8 => mutate_loop(&mut c.mid_loop, rng),
                _ => c.large = pick(rng, LARGE),
            }
        }
        c
    }

    /// The candidate's size classes outside its guards: the short class,
    /// the mid class and the large class, those it has.
    pub fn class_choices(&self) -> Vec<ClassChoice> {
        let mut out = Vec::new();
        if self.short_max > 0 {
            out.push(ClassChoice {
                lo: 0,
                hi: Some(self.short_max as u64),
                kind: ClassKind::Short,
                method: format!("head/tail copies, {}", registers_text(self.short_registers)),
            });
        }
        let mid_end = self.mid_end();
        if let Some(m) = mid_end {
            out.push(ClassChoice {
                lo: self.start(),
                hi: Some(m),
                kind: ClassKind::Mid,
                method: self.mid_loop.describe(),
            });
        }
        out.push(ClassChoice {
            lo: mid_end.map_or(self.start(), |m| m + 1),
            hi: None,
            kind: ClassKind::Large,
            method: self.large.describe(),
        });
        out
    }
}

/// One of a loop's parameters changed.
fn mutate_loop(l: &mut LoopShape, rng: &mut bench::Rng) {
    match rng.next_u64() % 7 {
        0 => l.block = pick(rng, BLOCK),
        1 => l.registers = pick(rng, REGS),
        2 => l.interleaved = !l.interleaved,
        3 => l.align = pick(rng, ALIGN),
        4 => l.prefetch = pick(rng, PREFETCH),
        5 => l.overlap_tail = !l.overlap_tail,
        _ => l.block_tail = !l.block_tail,
    }
}

// ---- candidates over the measured bands -----------------------------------------

/// The loop a band seed starts with: the branch-light one (overlapping
/// block tail) or the word-tail one.
fn seed_loop(block_tail: bool) -> LoopShape {
    LoopShape {
        block: 64,
        registers: 4,
        interleaved: false,
        align: Some(("dst", 8)),
        prefetch: None,
        overlap_tail: true,
        block_tail,
    }
}

impl Candidate {
    /// `rep movsb` with no alias guard, and optionally a short class.
    pub fn unguarded(short_max: u32) -> Candidate {
        Candidate {
            short_max,
            narrow: 0,
            ..Candidate::bare_guarded()
        }
    }

    /// Where a search over measured bands starts: no guard (with and
    /// without a short class), then, for each set of bands one size
    /// showed, every band guarded from where it was seen, with the
    /// branch-light loop and with the word-tail loop, then the shape for a
    /// CPU without ERMS ([`Candidate::no_erms`], screened first). With no
    /// band: the unguarded ones and that one.
    pub fn band_seeds(space: &BandSpace, sets: &[Vec<usize>]) -> Vec<Candidate> {
        let mut out = vec![Candidate::unguarded(16), Candidate::unguarded(0)];
        for set in sets {
            for block_tail in [false, true] {
                let mut bands: Vec<BandGuard> = set
                    .iter()
                    .map(|&i| {
                        let (lo, hi, from, until) = space.options[i];
                        BandGuard {
                            lo,
                            hi,
                            from,
                            until,
                            method: seed_loop(block_tail),
                        }
                    })
                    .collect();
                bands.sort_by_key(|g| g.lo);
                let guarded = Candidate {
                    bands,
                    ..Candidate::unguarded(0)
                };
                // The branch-light one also with its bands tested first.
                if block_tail {
                    out.push(Candidate {
                        alias_first: true,
                        ..guarded.clone()
                    });
                }
                out.push(guarded);
            }
        }
        out.push(Candidate::no_erms());
        out
    }

    /// A neighbour within the measured bands: one or two changes among
    /// the short class, the mid class's end and loop, the large class's
    /// method, adding, removing or moving a guard, and a guard's loop.
    /// Guards stay disjoint and come only from `space`.
    pub fn mutate_bands(&self, rng: &mut bench::Rng, space: &BandSpace) -> Candidate {
        let mut c = self.clone();
        c.narrow = 0;
        let changes = 1 + (rng.next_u64() % 2) as usize;
        for _ in 0..changes {
            let op = if space.options.is_empty() {
                rng.next_u64() % 5
            } else {
                rng.next_u64() % 10
            };
            match op {
                9 => c.alias_first = !c.alias_first,
                0 => c.short_max = pick(rng, SHORT_MAX),
                1 => c.short_registers = pick(rng, SHORT_REGS),
                2 => c.mid_max = pick(rng, MID_MAX),
                3 => mutate_loop(&mut c.mid_loop, rng),
                4 => c.large = pick(rng, LARGE),
                5 => {
                    // Add a band not overlapping a guarded one.
                    let (lo, hi, from, until) = pick(rng, &space.options);
                    if !c.bands.iter().any(|g| g.lo <= hi && lo <= g.hi) {
                        let method = c
                            .bands
                            .first()
                            .map(|g| g.method.clone())
                            .unwrap_or_else(|| seed_loop(true));
                        c.bands.push(BandGuard {
                            lo,
                            hi,
                            from,
                            until,
                            method,
                        });
                        c.bands.sort_by_key(|g| g.lo);
                    }
                }
                6 if !c.bands.is_empty() => {
                    let i = (rng.next_u64() % c.bands.len() as u64) as usize;
                    c.bands.remove(i);
                }
                7 if !c.bands.is_empty() => {
                    // Move one end of a guard's size range, keeping
                    // from < until.
                    let i = (rng.next_u64() % c.bands.len() as u64) as usize;
                    let g = &mut c.bands[i];
                    if rng.next_u64() % 2 == 0 {
                        g.from = pick(rng, BAND_GUARD_FROM);
                    } else {
                        g.until = pick(rng, BAND_GUARD_UNTIL);
                    }
                    if g.until.is_some_and(|u| u <= g.from) {
                        g.until = None;
                    }
                }
                _ if !c.bands.is_empty() => {
                    let i = (rng.next_u64() % c.bands.len() as u64) as usize;
                    mutate_loop(&mut c.bands[i].method, rng);
                }
                _ => c.short_max = pick(rng, SHORT_MAX),
            }
        }
        c
    }
}

// ---- the measured bands' guards -------------------------------------------------

/// The guards a candidate may use: each band measured, with the smallest
/// size it was seen at and the largest measured size below that.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BandSpace {
    /// `(lo, hi, seed_from, seed_until)`: a band, the size its seed guards
    /// from and, where a larger measured size no longer shows it, the size
    /// the seed stops at.
    pub options: Vec<(u32, u32, u32, Option<u32>)>,
}

impl BandSpace {
    pub fn from_detected(per_size: &[SizeBands]) -> BandSpace {
        let mut options: Vec<(u32, u32, u32, Option<u32>)> = Vec::new();
        let shows =
            |sb: &SizeBands, lo: u32, hi: u32| sb.bands.iter().any(|b| (b.lo, b.hi) == (lo, hi));
        for (i, sb) in per_size.iter().enumerate() {
            // Guard from just above the largest size measured below.
            let from = if i == 0 {
                0
            } else {
                per_size[i - 1].size as u32 + 1
            };
            for b in &sb.bands {
                if options.iter().any(|o| (o.0, o.1) == (b.lo, b.hi)) {
                    continue;
                }
                // Until the measured size after the largest that shows it
                // (none when the largest measured size shows it).
                let last = per_size
                    .iter()
                    .rposition(|s| shows(s, b.lo, b.hi))
                    .unwrap_or(i);
                let until = per_size.get(last + 1).map(|s| s.size as u32);
                options.push((b.lo, b.hi, from, until));
            }
        }
        BandSpace { options }
    }

    /// The band sets each size showed, as option indices (distinct).
    pub fn size_sets(&self, per_size: &[SizeBands]) -> Vec<Vec<usize>> {
        let mut sets: Vec<Vec<usize>> = Vec::new();
        for sb in per_size {
            let set: Vec<usize> = sb
                .bands
                .iter()
                .filter_map(|b| self.options.iter().position(|o| (o.0, o.1) == (b.lo, b.hi)))
                .collect();
            if !set.is_empty() && !sets.contains(&set) {
                sets.push(set);
            }
        }
        sets
    }
}

// ---- alias first ----------------------------------------------------------------

/// `classes` (whose guards are all alias guards) as an alias-first
/// dispatch over their bands' hull, tested from the first guarded class
/// (smaller copies never take it): outside the hull, the classes without
/// their guards (neighbours from there that then run one method merged);
/// inside it, the classes from there with their guards, a guard whose band
/// is the whole hull replacing its class's method. Unchanged when no class
/// has a guard.
fn split_alias_first(classes: Vec<SizeClass>) -> (Vec<SizeClass>, Option<AliasFirst>) {
    let bands = classes
        .iter()
        .flat_map(|c| &c.guards)
        .filter_map(|g| match g.condition {
            Condition::Alias { lo, hi } => Some((lo, hi)),
            Condition::Aligned { .. } => None,
        });
    let Some((lo, hi)) = bands.reduce(|(a, b), (c, d)| (a.min(c), b.max(d))) else {
        return (classes, None);
    };
    let from = classes
        .iter()
        .find(|c| !c.guards.is_empty())
        .map_or(0, |c| c.lo);
    let (below, above): (Vec<SizeClass>, Vec<SizeClass>) =
        classes.into_iter().partition(|c| c.lo < from);
    let outside = above.iter().map(|c| SizeClass {
        guards: Vec::new(),
        ..c.clone()
    });
    let inside = above.iter().cloned().map(|mut c| {
        if let Some(i) = c
            .guards
            .iter()
            .position(|g| g.condition == Condition::Alias { lo, hi })
        {
            c.method = c.guards[i].method.clone();
            c.guards.truncate(i);
        }
        c
    });
    let mut main = merge_neighbours(below);
    main.extend(merge_neighbours(outside));
    (
        main,
        Some(AliasFirst {
            lo,
            hi,
            from,
            classes: merge_neighbours(inside),
        }),
    )
}

/// Neighbouring classes with the same method and guards as one class.
fn merge_neighbours(classes: impl IntoIterator<Item = SizeClass>) -> Vec<SizeClass> {
    let mut out: Vec<SizeClass> = Vec::new();
    for c in classes {
        match out.last_mut() {
            Some(last) if (&last.method, &last.guards) == (&c.method, &c.guards) => last.hi = c.hi,
            _ => out.push(c),
        }
    }
    out
}

// ---- the strategy file ----------------------------------------------------------

/// A strategy file: `comments` (each line escaped by the writer), a blank
/// line, then `s`.
pub fn file_text(comments: &[String], s: &Strategy) -> String {
    let mut t = to_toml::comments(comments);
    if !comments.is_empty() {
        t.push('\n');
    }
    // The candidate's methods have distinct names, so this cannot fail.
    t.push_str(&to_toml::render(s).unwrap_or_default());
    t
}

/// What every candidate shares: from the base strategy, or defaults.
#[derive(Debug, Clone)]
pub struct CandidateBase {
    pub name: String,
    pub description: String,
    pub directions: Vec<Direction>,
    pub linux: LinuxOptions,
    pub precision: Precision,
    /// The CPU measured (`[tuned_on]`), once known.
    pub tuned_on: Option<TunedOn>,
    /// Comment lines at the top of the file.
    pub comments: Vec<String>,
}

impl CandidateBase {
    pub fn new(name: &str) -> CandidateBase {
        CandidateBase {
            name: name.to_string(),
            description: "Tuned by `copygen tune` for one CPU and a set of size distributions: \
                          head/tail copies, an unrolled loop and `rep movs` by size class, with \
                          alias guards (see the comments above)."
                .into(),
            directions: vec![Direction::FromUser, Direction::ToUser],
            linux: LinuxOptions {
                convention: Convention::C,
                uaccess: Uaccess::Routine,
                // What the parser gives x86_64 for every kernel tree.
                extable: ExtableFormat::Copy,
                kernel: None,
                site: None,
                feature_entries: Vec::new(),
                from_user: None,
                to_user: None,
                both: None,
            },
            precision: Precision::Exact,
            tuned_on: None,
            comments: Vec::new(),
        }
    }

    /// The base of a strategy 6.12's inline site calls in place of
    /// `rep_movs_alternative` (`tune --site kernel --site-kernel 6.12`):
    /// its convention (`rdi, rsi, rcx -> rcx`, rax the only scratch
    /// register), STAC/CLAC left to the site, 6.12's exception table.
    /// `kernel-patch` builds it as `rep_movs_alternative`, so FSRM CPUs
    /// keep the inline `rep movsb` and the others call it.
    pub fn for_612_site(name: &str) -> CandidateBase {
        let mut h = CandidateBase::new(name);
        h.linux.convention = Convention::RepMovs;
        h.linux.uaccess = Uaccess::Caller;
        h.linux.extable = ExtableFormat::Relative;
        h.linux.kernel = Some(KernelVersion::V6_12);
        h
    }

    /// The most scratch registers a method may use: one (rax) in
    /// `rep_movs_alternative`'s convention, as many as a method asks for
    /// in the C convention's.
    pub fn registers(&self) -> u32 {
        match self.linux.convention {
            Convention::RepMovs => 1,
            Convention::C => u32::MAX,
        }
    }

    /// The base strategy's name, description, directions, convention,
    /// uaccess and precision.
    pub fn from_base(s: &Strategy) -> CandidateBase {
        let mut h = CandidateBase::new(&s.name);
        h.description = s.description.clone();
        h.directions = s.directions.clone();
        h.linux.convention = s.linux.convention;
        h.linux.uaccess = s.linux.uaccess;
        h.precision = s.precision;
        h
    }
}
