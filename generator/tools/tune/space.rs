//! The search space: a [`Candidate`] (the shape every tuned strategy has),
//! its neighbours, and the strategy file it stands for ([`CandidateBase`] holds
//! what every candidate shares).

use serde::Serialize;

use crate::front::strategy::*;
use crate::front::to_toml;
use crate::front::variant::TunedOn;
use crate::tools::bench;

// ---- the search space ------------------------------------------------------------

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

impl LoopShape {
    /// `unrolled 64 B, 4 registers, loads first, align dst 8, overlapping-word tail`.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "unrolled {} B, {} registers, {}",
            self.block,
            self.registers,
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

    /// The method this loop is, for classes from `lo` bytes up.
    fn method(&self, name: &str, lo: u64) -> Method {
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
                }),
                tail: self.tail(lo),
            }),
        }
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

/// One point of the search space (see the module comment).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Candidate {
    /// Sizes `0..=short_max` use head/tail copies; 0: none.
    pub short_max: u32,
    /// Registers of the head/tail copies (8-byte).
    pub short_registers: u32,
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
    pub bands: Vec<BandGuard>,
}

/// Choices for each parameter the search mutates.
const SHORT_MAX: &[u32] = &[0, 8, 16, 32, 64, 128];
const SHORT_REGS: &[u32] = &[2, 4];
const GUARD_FROM: &[u32] = &[0, 16, 32, 64, 128, 256, 512, 1024];
const NARROW: &[u32] = &[0, 15, 16, 31, 63];
const WIDE: &[u32] = &[15, 16, 31, 63];
const WIDE_UNTIL: &[u32] = &[0, 256, 512, 1024, 2048, 4096];
const BLOCK: &[u32] = &[32, 64, 128];
const REGS: &[u32] = &[2, 4];
const ALIGN: &[Option<(&str, u32)>] =
    &[None, Some(("dst", 8)), Some(("dst", 16)), Some(("src", 8))];
const PREFETCH: &[Option<u32>] = &[None, Some(256), Some(512)];

impl Candidate {
    /// `rep movsb` everywhere, the band 1..=15 guarded at every size.
    pub fn bare_guarded() -> Candidate {
        Candidate {
            short_max: 0,
            short_registers: 4,
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
        }
    }

    /// Where the search starts: the bare guarded shape, guarded-movsb's
    /// shape, a wide band for short copies only, a short head/tail class.
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
        vec![short, wide_short, guarded_movsb, bare]
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

    /// Size classes above the short class: (lo, hi, band of the fixed
    /// shape, the measured-band guards active).
    fn classes(&self) -> Vec<(u64, Option<u64>, u32, Vec<usize>)> {
        let start = self.start();
        let mut cuts: Vec<u64> = [self.guard_from as u64, self.wide_until as u64]
            .into_iter()
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
        let mut out: Vec<(u64, Option<u64>, u32, Vec<usize>)> = Vec::new();
        let mut lo = start;
        for hi_excl in cuts.into_iter().map(Some).chain([None]) {
            let (band, act) = (self.band_at(lo), active(lo));
            match out.last_mut() {
                Some(last) if last.2 == band && last.3 == act => last.1 = hi_excl.map(|h| h - 1),
                _ => out.push((lo, hi_excl.map(|h| h - 1), band, act)),
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
        let movsb = method(
            "movsb",
            MethodKind::RepMovs {
                unit: 1,
                align: None,
            },
        );
        let bands = self.classes();
        let guarded_lo = bands.iter().filter(|c| c.2 > 0).map(|c| c.0).min();
        let band = self.band_loop.method("band", guarded_lo.unwrap_or(0));
        let start = self.start();
        let band_methods: Vec<Method> = self
            .bands
            .iter()
            .map(|g| {
                g.method
                    .method(&format!("band_{}_{}", g.lo, g.hi), start.max(g.from as u64))
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
        for (lo, hi, b, active) in bands {
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
                method: movsb.clone(),
            });
        }
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
            variants: Vec::new(),
            fixed_sizes: Vec::new(),
            tuned_on: header.tuned_on.clone(),
            source: String::new(),
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
        fn pick<T: Clone>(rng: &mut bench::Rng, v: &[T]) -> T {
            v[(rng.next_u64() % v.len() as u64) as usize].clone()
        }
        let mut c = self.clone();
        let changes = 1 + (rng.next_u64() % 2) as usize;
        for _ in 0..changes {
            match rng.next_u64() % 12 {
                0 => c.short_max = pick(rng, SHORT_MAX),
                1 => c.short_registers = pick(rng, SHORT_REGS),
                2 => c.guard_from = pick(rng, GUARD_FROM),
                3 => c.narrow = pick(rng, NARROW),
                4 => c.wide = pick(rng, WIDE),
                5 => c.wide_until = pick(rng, WIDE_UNTIL),
                6 => c.band_loop.block = pick(rng, BLOCK),
                7 => c.band_loop.registers = pick(rng, REGS),
                8 => c.band_loop.interleaved = !c.band_loop.interleaved,
                9 => c.band_loop.align = pick(rng, ALIGN),
                10 => c.band_loop.prefetch = pick(rng, PREFETCH),
                _ => c.band_loop.overlap_tail = !c.band_loop.overlap_tail,
            }
        }
        c
    }
}

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
                          `rep movsb` with alias guards (see the comments above)."
                .into(),
            directions: vec![Direction::FromUser, Direction::ToUser],
            linux: LinuxOptions {
                convention: Convention::C,
                uaccess: Uaccess::Routine,
                // What the parser gives x86_64 for every kernel tree.
                extable: ExtableFormat::Copy,
                kernel: None,
                site: None,
                from_user: None,
                to_user: None,
                both: None,
            },
            precision: Precision::Exact,
            tuned_on: None,
            comments: Vec::new(),
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
