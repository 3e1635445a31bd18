//! Size classes (ordered, gap-free, each fitting its method) and their
//! guards.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

impl Validator<'_> {
    /// The size classes, from size 0; `None` (with the errors recorded) if
    /// any is wrong.
    pub(super) fn size_classes(
        &self,
        arch: Arch,
        dpath: &FieldPath,
        raw: &[RawClass],
        methods: &BTreeMap<String, Method>,
        broken: &BTreeSet<String>,
    ) -> Option<Vec<SizeClass>> {
        self.size_classes_from(0, arch, dpath, raw, methods, broken)
    }

    /// The size classes of every size from `start` up. Every class is
    /// checked: after a class whose sizes are wrong, the next one is not
    /// blamed for a gap or an overlap with it.
    fn size_classes_from(
        &self,
        start: u64,
        arch: Arch,
        dpath: &FieldPath,
        raw: &[RawClass],
        methods: &BTreeMap<String, Method>,
        broken: &BTreeSet<String>,
    ) -> Option<Vec<SizeClass>> {
        if raw.is_empty() {
            self.keep::<()>(Err(
                self.err(dpath, "dispatch needs at least one size class")
            ));
            return None;
        }
        let errors_before = self.errors.borrow().len();
        // `Ok(None)`: a method whose own error is reported already.
        let lookup = |path: &FieldPath, name: &str| -> R<Option<Method>> {
            if broken.contains(name) {
                return Ok(None);
            }
            methods.get(name).cloned().map(Some).ok_or_else(|| {
                let known: Vec<_> = methods.keys().map(String::as_str).collect();
                self.err(
                    path,
                    format!(
                        "no method named `{name}` (defined: {})",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })
        };
        let mut classes: Vec<SizeClass> = Vec::new();
        // The size the next class must start at, when known.
        let mut expected: Option<u64> = Some(start);
        // An earlier class open at the top (index, lower bound).
        let mut open: Option<(usize, u64)> = None;
        // The last class's upper bound, if its sizes parsed.
        let mut last_hi: Option<Option<u64>> = None;
        for (i, c) in raw.iter().enumerate() {
            let cpath = dpath.index(i);
            let spath = cpath.key("sizes");
            last_hi = None;
            let Some((lo, hi)) = self.keep(self.class_sizes(arch, &spath, &c.sizes)) else {
                expected = None;
                continue;
            };
            last_hi = Some(hi);
            if let Some((j, from)) = open {
                self.keep::<()>(Err(self.err(
                    &spath,
                    format!("class {j} already covers every size from {from}: this one can never be reached"),
                )));
                continue;
            }
            match expected {
                Some(e) if lo > e => {
                    self.keep::<()>(Err(self.err(
                        &spath,
                        format!(
                            "gap: sizes {} are covered by no class",
                            fmt_range(e, Some(lo - 1))
                        ),
                    )));
                }
                Some(e) if lo < e => {
                    self.keep::<()>(Err(self.err(
                        &spath,
                        format!(
                            "overlap: sizes {} are already covered by class {}",
                            fmt_range(lo, Some((e - 1).min(hi.unwrap_or(u64::MAX)))),
                            i - 1
                        ),
                    )));
                }
                _ => {}
            }
            // Bounds are at most `largest_bound`, so `h + 1` cannot wrap.
            expected = hi.map(|h| h + 1);
            if hi.is_none() {
                open = Some((i, lo));
            }
            let method = self.keep(lookup(&cpath.key("use"), &c.method)).flatten();
            if let Some(m) = &method {
                self.keep(self.method_fits(m, lo, hi, None, &cpath.key("use")));
            }
            let mut guards = Vec::new();
            // Conditions tested so far in this class, by guard index.
            let mut tested: Vec<(usize, Condition)> = Vec::new();
            for (g, rg) in c.guard.iter().enumerate() {
                let gpath = cpath.key("guard").index(g);
                let condition = self.keep(self.condition(&gpath, rg));
                let gm = self.keep(lookup(&gpath.key("use"), &rg.method)).flatten();
                if let (Some(condition), Some(gm)) = (condition, gm) {
                    if let Some(&(h, _)) = tested
                        .iter()
                        .find(|(_, e)| super::shadow::implies(&condition, e))
                    {
                        let at = self.err(&cpath.key("guard").index(h), "").line;
                        self.keep::<()>(Err(self.err(
                            &gpath,
                            format!("this guard can never be taken: whenever its condition holds, guard {h} (line {at}) holds too and is tested first"),
                        )));
                        continue;
                    }
                    tested.push((g, condition.clone()));
                    if self
                        .keep(self.method_fits(&gm, lo, hi, Some(&condition), &gpath.key("use")))
                        .is_some()
                    {
                        guards.push(Guard {
                            condition,
                            method: gm,
                        });
                    }
                }
            }
            if let Some(method) = method {
                classes.push(SizeClass {
                    lo,
                    hi,
                    guards,
                    method,
                });
            }
        }
        if let Some(Some(h)) = last_hi {
            let lo = classes.last().map_or(0, |c| c.lo);
            self.keep::<()>(Err(self.err(
                &dpath.index(raw.len() - 1).key("sizes"),
                format!("sizes from {} up are covered by no class: the last class must be open (`{lo}..`)", h + 1),
            )));
        }
        if self.errors.borrow().len() != errors_before {
            return None;
        }
        self.prefetch_warnings(&classes, methods);
        Some(classes)
    }

    /// A class's `sizes`, within what `arch` can compare.
    pub(super) fn class_sizes(
        &self,
        arch: Arch,
        path: &FieldPath,
        sizes: &str,
    ) -> R<(u64, Option<u64>)> {
        let (lo, hi) = parse_range(sizes).ok_or_else(|| {
            self.err(
                path,
                format!("`{sizes}` is not a size range (`0..=64`, `65..4096`, `4096..`)"),
            )
        })?;
        let limit = largest_bound(arch);
        if let Some(h) = hi.filter(|&h| h > limit) {
            return Err(self.err(
                path,
                format!(
                    "size bound {h} is too large: {}, so a bound is at most {limit}",
                    bound_reason(arch)
                ),
            ));
        }
        // On a 32-bit arch no length exceeds the largest bound.
        if arch != Arch::X86_64 && lo > limit {
            return Err(self.err(
                path,
                format!("no {arch} length reaches {lo}: lengths are 32-bit"),
            ));
        }
        Ok((lo, hi))
    }

    /// `alias = [lo, hi]` at `path`.
    fn alias_band(&self, path: &FieldPath, band: &[u32]) -> R<Condition> {
        match band[..] {
            [a, b] if a <= b && b < 4096 => Ok(Condition::Alias { lo: a, hi: b }),
            _ => Err(self.err(
                path,
                "an alias band is two numbers [lo, hi] with lo <= hi < 4096",
            )),
        }
    }

    /// `[alias_first]` at `path`, beside the dispatch `main` (its path, its
    /// raw classes and, when valid, its classes): its band, the size it is
    /// tested from (where a class of `main` starts) and its own size
    /// classes from there. A guard of `main` from that size on a band
    /// inside this one can never be taken (those copies went to the
    /// alias-first classes), nor a guard of the alias-first classes on a
    /// band outside it. `None` when absent or wrong (the errors recorded).
    pub(super) fn alias_first(
        &self,
        arch: Arch,
        path: &FieldPath,
        raw: Option<&RawAliasFirst>,
        main: (&FieldPath, &[RawClass], Option<&[SizeClass]>),
        methods: &BTreeMap<String, Method>,
        broken: &BTreeSet<String>,
    ) -> Option<AliasFirst> {
        let raw = raw?;
        let (main_path, main_raw, main_classes) = main;
        let band = self.keep(self.alias_band(&path.key("alias"), &raw.alias));
        let from = raw.from.unwrap_or(0);
        if let Some(classes) = main_classes {
            if !classes.iter().any(|c| c.lo == from) {
                let starts: Vec<String> = classes.iter().map(|c| c.lo.to_string()).collect();
                self.keep::<()>(Err(self.err(
                    &path.key("from"),
                    format!(
                        "the test goes where a size class of the dispatch starts ({}), not at {from}",
                        starts.join(", ")
                    ),
                )));
            }
        }
        let dpath = path.key("dispatch");
        let classes = self.size_classes_from(from, arch, &dpath, &raw.dispatch, methods, broken);
        let Some(Condition::Alias { lo, hi }) = band else {
            return None;
        };
        let line = self.err(&path.key("alias"), "").line;
        for (paths, raw_classes, inside) in [
            (main_path, main_raw, true),
            (&dpath, &raw.dispatch[..], false),
        ] {
            for (i, c) in raw_classes.iter().enumerate() {
                // (a main class below `from`: its copies never take the test)
                let below = parse_range(&c.sizes).is_none_or(|(l, _)| l < from);
                if inside && below {
                    continue;
                }
                for (g, rg) in c.guard.iter().enumerate() {
                    let Some([a, b]) = rg
                        .alias
                        .as_deref()
                        .and_then(|v| <[u32; 2]>::try_from(v).ok())
                    else {
                        continue;
                    };
                    let gpath = paths.index(i).key("guard").index(g).key("alias");
                    if inside && lo <= a && b <= hi {
                        self.keep::<()>(Err(self.err(
                            &gpath,
                            format!("this guard can never be taken: `alias_first` (line {line}) sends every copy of {from} bytes or more with (dst - src) mod 4096 in {lo}..={hi} to its own size classes first"),
                        )));
                    }
                    if !inside && (b < lo || hi < a) {
                        self.keep::<()>(Err(self.err(
                            &gpath,
                            format!("this guard can never be taken: only copies with (dst - src) mod 4096 in {lo}..={hi} (`alias_first`, line {line}) reach these size classes"),
                        )));
                    }
                }
            }
        }
        Some(AliasFirst {
            lo,
            hi,
            from,
            classes: classes?,
        })
    }

    pub(super) fn condition(&self, gpath: &FieldPath, rg: &RawGuard) -> R<Condition> {
        match (&rg.alias, &rg.aligned) {
            (Some(band), None) => self.alias_band(&gpath.key("alias"), band),
            (None, Some(al)) => {
                if !al.to.is_power_of_two() || al.to < 2 || al.to > 4096 {
                    return Err(self.err(
                        &gpath.key("aligned").key("to"),
                        "alignment is a power of two in 2..=4096",
                    ));
                }
                Ok(Condition::Aligned {
                    pointer: al.pointer,
                    to: al.to,
                })
            }
            (Some(_), Some(_)) => Err(self.err(
                gpath,
                "a guard tests one condition: `alias` or `aligned`, not both",
            )),
            (None, None) => Err(self.err(
                gpath,
                "a guard needs a condition: `alias = [lo, hi]` or `aligned = {...}`",
            )),
        }
    }

    /// A prefetch runs inside the loop only while its target lies inside
    /// the source; one whose distance reaches past every size its method
    /// serves is dropped by the lowering, which is worth a word.
    pub(super) fn prefetch_warnings(
        &self,
        classes: &[SizeClass],
        methods: &BTreeMap<String, Method>,
    ) {
        // Largest size each method serves (`None`: unbounded).
        let mut serves: BTreeMap<&str, Option<u64>> = BTreeMap::new();
        for c in classes {
            let uses = std::iter::once(&c.method).chain(c.guards.iter().map(|g| &g.method));
            for m in uses {
                let most = serves.entry(&m.name).or_insert(Some(0));
                *most = most.zip(c.hi).map(|(a, b)| a.max(b));
            }
        }
        for (name, most) in serves {
            let Some(most) = most else { continue };
            let Some(MethodKind::Unrolled(u)) = methods.get(name).map(|m| &m.kind) else {
                continue;
            };
            let Some(p) = &u.prefetch else { continue };
            let size = if p.kind == PrefetchKind::Touch {
                u.width
            } else {
                1
            };
            for &d in &p.distances {
                let needs = (d + size).max(u.block) as u64;
                if most < needs {
                    self.warn(
                        &FieldPath::root()
                            .key("methods")
                            .key(name)
                            .key("prefetch")
                            .key("distance"),
                        format!(
                            "the prefetch at +{d} can never run: it needs at least {needs} bytes left in the loop, but method `{name}` serves at most {most} bytes"
                        ),
                    );
                }
            }
        }
    }

    /// Checks that depend on the sizes a method serves and the guard (if
    /// any) under which it runs.
    pub(super) fn method_fits(
        &self,
        m: &Method,
        lo: u64,
        hi: Option<u64>,
        guard: Option<&Condition>,
        path: &FieldPath,
    ) -> R<()> {
        if let MethodKind::Unrolled(u) = &m.kind {
            if u.grouping == Grouping::Multiple {
                self.multiple_fits(m, u, lo, guard, path)?;
            }
        }
        match &m.kind {
            MethodKind::HeadTail { .. } => match hi {
                Some(h) if h <= 256 => Ok(()),
                _ => Err(self.err(
                    path,
                    format!("head_tail method `{}` serves small sizes only (at most 256), not {}", m.name, fmt_range(lo, hi)),
                )),
            },
            MethodKind::Unrolled(u) if u.tail == Tail::OverlapBlock && lo < u.block as u64 => Err(self.err(
                path,
                format!(
                    "method `{}` ends with an overlapping {}-byte block, which needs at least {} bytes, but this class starts at {lo}",
                    m.name, u.block, u.block
                ),
            )),
            MethodKind::Unrolled(u) if u.tail == Tail::Overlap && lo < u.width as u64 => Err(self.err(
                path,
                format!(
                    "method `{}` ends with an overlapping {}-byte copy, which needs at least {} bytes, but this class starts at {lo}",
                    m.name, u.width, u.width
                ),
            )),
            _ => Ok(()),
        }
    }

    /// `ldm`/`stm` fault on addresses that are not word-aligned (SIGBUS in
    /// user space, the slow alignment trap in the kernel), so a method that
    /// uses them must have both pointers 4-byte aligned when its loop runs:
    /// either the guard says both are aligned, or the guard says they are
    /// congruent and the method's prologue aligns one of them (for every
    /// length that reaches the loop).
    pub(super) fn multiple_fits(
        &self,
        m: &Method,
        u: &Unrolled,
        lo: u64,
        guard: Option<&Condition>,
        path: &FieldPath,
    ) -> R<()> {
        let name = &m.name;
        let congruent = match guard {
            Some(Condition::Aligned { pointer: AlignPointer::Both, to }) if *to >= 4 => return Ok(()),
            Some(Condition::Aligned { pointer: AlignPointer::Congruent, to }) if *to >= 4 => *to,
            _ => {
                return Err(self.err(
                    path,
                    format!(
                        "method `{name}` uses ldm/stm, which need word-aligned pointers: use it only under a guard \
                         `aligned = {{ pointer = \"congruent\", to = 4 }}` (with an align prologue) or `{{ pointer = \"both\", to = 4 }}`"
                    ),
                ))
            }
        };
        let Some(a) = u.align else {
            return Err(self.err(
                path,
                format!("method `{name}` uses ldm/stm under a congruence guard but has no `align` prologue to make the pointers word-aligned"),
            ));
        };
        if a.to < 4 || (a.pointer == AlignPointer::Both && a.to > congruent) {
            return Err(self.err(
                path,
                format!(
                    "method `{name}` aligns {} to {} bytes, which does not make both pointers word-aligned under a guard of congruence modulo {congruent}",
                    a.pointer, a.to
                ),
            ));
        }
        if a.min_size > u.block as u64 && lo < a.min_size {
            return Err(self.err(
                path,
                format!(
                    "method `{name}` skips its align prologue below {} bytes but runs its ldm/stm loop from {}: lengths {}..{} would reach ldm/stm unaligned (lower min_size to at most the block)",
                    a.min_size, u.block, (u.block as u64).max(lo), a.min_size
                ),
            ));
        }
        Ok(())
    }
}
