//! Per-CPU variants of a strategy.

use super::*;

/// The strategy's own methods, as the variants start from them: those
/// defined, and the names of those whose definition failed (their errors
/// are recorded).
pub(super) struct SharedMethods<'a> {
    pub defined: &'a BTreeMap<String, Method>,
    pub broken: &'a BTreeSet<String>,
}

/// Per-CPU variants (`front/variant.rs`): names, conditions, one default
/// (the last), each variant's methods (the strategy's, overridden by name)
/// and dispatch (its own, or the strategy's).
impl Validator<'_> {
    /// The variants; `Ok(None)` when a dispatch of one failed (its errors
    /// are recorded).
    pub(super) fn variants(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        raw: &RawStrategy,
        kernel: Option<KernelVersion>,
        shared: SharedMethods,
    ) -> R<Option<Vec<Variant>>> {
        let broken = shared.broken;
        let vpath = FieldPath::root().key("variants");
        if !arch.is_x86() {
            return Err(self.err(
                &vpath,
                format!(
                    "per-CPU variants are chosen by x86 feature bits (ALTERNATIVE, CPUID); {arch} has none"
                ),
            ));
        }
        if !raw.fixed_sizes.is_empty() {
            return Err(self.err(
                &FieldPath::root().key("fixed_sizes"),
                "constant-size entry points and per-CPU variants do not combine: each variant would need its own",
            ));
        }
        if raw.variants.iter().all(|v| !v.dispatch.is_empty()) {
            for (key, used) in [
                ("dispatch", !raw.dispatch.is_empty()),
                ("alias_first", raw.alias_first.is_some()),
            ] {
                if used {
                    return Err(self.err(
                        &FieldPath::root().key(key),
                        format!(
                            "every variant has its own dispatch, so this `{key}` is never used"
                        ),
                    ));
                }
            }
        }
        let mut names = BTreeSet::new();
        let mut out = Vec::new();
        let last = raw.variants.len() - 1;
        for (i, v) in raw.variants.iter().enumerate() {
            let path = vpath.index(i);
            if v.name.is_empty()
                || !v
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(self.err(
                    &path.key("name"),
                    "a variant name is non-empty and uses only letters, digits and `_` (it is part of symbols)",
                ));
            }
            if !names.insert(v.name.as_str()) {
                return Err(self.err(
                    &path.key("name"),
                    format!("two variants are named `{}`", v.name),
                ));
            }
            let when = match (&v.when, v.default) {
                (Some(_), true) => {
                    return Err(self.err(
                        &path.key("default"),
                        "the default variant runs when no other matches: it has no `when`",
                    ))
                }
                (None, false) => {
                    return Err(self.err(
                        &path,
                        "a variant needs a condition (`when = [\"fsrm\"]`) or `default = true`",
                    ))
                }
                (None, true) if i != last => {
                    return Err(self.err(
                        &path.key("default"),
                        "the default variant must come last: the variants after it could never be chosen",
                    ))
                }
                (None, true) => None,
                (Some(terms), false) => {
                    Some(self.variant_condition(&path.key("when"), terms, kernel)?)
                }
            };
            if i == last && when.is_some() {
                return Err(self.err(
                    &path.key("when"),
                    "the last variant must be the default (`default = true`): some CPU must match",
                ));
            }
            let mut methods = shared.defined.clone();
            for (name, m) in &v.methods {
                let mpath = path.key("methods").key(name);
                if let Some(why) = identifier_problem(name, false) {
                    return Err(self.err(&mpath, format!("method name: {why}")));
                }
                let kind = self.method(arch, caps, budget, &mpath, m)?;
                methods.insert(
                    name.clone(),
                    Method {
                        name: name.clone(),
                        kind,
                    },
                );
            }
            // The dispatch and its `alias_first`: the variant's own, or the
            // strategy's (checked with this variant's methods).
            let (dispatch_path, dispatch, alias_path, alias_first) = if v.dispatch.is_empty() {
                if raw.dispatch.is_empty() {
                    return Err(self.err(
                        &path,
                        "this variant has no `dispatch`, and the strategy has none to share",
                    ));
                }
                if v.alias_first.is_some() {
                    return Err(self.err(
                        &path.key("alias_first"),
                        "`alias_first` goes with the dispatch it sits beside: this variant shares the strategy's `dispatch` (and its `alias_first`); give it its own `dispatch`",
                    ));
                }
                let root = FieldPath::root();
                (
                    root.key("dispatch"),
                    &raw.dispatch,
                    root.key("alias_first"),
                    &raw.alias_first,
                )
            } else {
                (
                    path.key("dispatch"),
                    &v.dispatch,
                    path.key("alias_first"),
                    &v.alias_first,
                )
            };
            let classes = self.size_classes(arch, &dispatch_path, dispatch, &methods, broken);
            let errors_before = self.errors.borrow().len();
            let alias_first = self.alias_first(
                arch,
                &alias_path,
                alias_first.as_ref(),
                (&dispatch_path, dispatch, classes.as_deref()),
                &methods,
                broken,
            );
            let (Some(classes), true) = (classes, self.errors.borrow().len() == errors_before)
            else {
                return Ok(None);
            };
            out.push(Variant {
                name: v.name.clone(),
                when,
                classes,
                alias_first,
            });
        }
        self.unreachable_variants(&vpath, &out);
        Ok(Some(out))
    }

    /// `when`: one conjunction (`["zen", "erms"]`) or several, any of
    /// which selects the variant (`[["zen3", "erms"], ["zen4", "erms"]]`).
    fn variant_condition(
        &self,
        path: &FieldPath,
        terms: &[RawTerm],
        kernel: Option<KernelVersion>,
    ) -> R<VariantCondition> {
        let words: Option<Vec<String>> = terms
            .iter()
            .map(|t| match t {
                RawTerm::Feature(w) => Some(w.clone()),
                RawTerm::Conjunction(_) => None,
            })
            .collect();
        if let Some(words) = words {
            let c = self.cpu_condition(path, &words)?;
            self.features_in_tree(path, &c, &words, kernel)?;
            return Ok(VariantCondition::one(c));
        }
        if terms.len() > MAX_CONJUNCTIONS {
            return Err(self.err(
                &path.index(MAX_CONJUNCTIONS),
                format!(
                    "at most {MAX_CONJUNCTIONS} conditions in one `when`: each is an ALTERNATIVE slot every copy on the CPUs after it passes through; {} here",
                    terms.len()
                ),
            ));
        }
        let mut any: Vec<CpuCondition> = Vec::new();
        for (k, t) in terms.iter().enumerate() {
            let RawTerm::Conjunction(words) = t else {
                return Err(self.err(
                    &path.index(k),
                    "`when` is a list of features (all of them hold) or a list of such lists (any of them holds), not both: write this feature inside a list",
                ));
            };
            let term_path = path.index(k);
            let c = self.cpu_condition(&term_path, words)?;
            self.features_in_tree(&term_path, &c, words, kernel)?;
            // The same features present and absent: the same resolver test.
            if let Some(j) = any
                .iter()
                .position(|d| (d.mask(), d.want()) == (c.mask(), c.want()))
            {
                return Err(self.err(
                    &term_path,
                    format!("the same condition as `when[{j}]`: write it once"),
                ));
            }
            any.push(c);
        }
        Ok(VariantCondition { any })
    }

    /// A condition's features must exist in every tree the linux flavour
    /// is written for (`kernel`; none: 6.1 and 6.12), since the flavour
    /// names each bit's `X86_FEATURE_*` macro.
    fn features_in_tree(
        &self,
        path: &FieldPath,
        c: &CpuCondition,
        words: &[String],
        kernel: Option<KernelVersion>,
    ) -> R<()> {
        let trees: Vec<KernelVersion> = match kernel {
            Some(k) => vec![k],
            None => KernelVersion::ALL.to_vec(),
        };
        for f in c.require.iter().chain(&c.exclude) {
            let Some(&k) = trees.iter().find(|&&k| !f.in_tree(k)) else {
                continue;
            };
            let i = words
                .iter()
                .position(|w| w.trim_start_matches('!') == f.name())
                .unwrap_or(0);
            let targets = match kernel {
                Some(_) => format!("this file is for Linux {}", k.name()),
                None => format!(
                    "without `linux.kernel` the file builds in Linux {} too",
                    k.name()
                ),
            };
            return Err(self.err(
                &path.index(i),
                format!(
                    "`{f}` is the kernel's {}, which Linux {} does not define, and {targets}: set `kernel = \"6.12\"` in [linux]",
                    f.kernel_macro(),
                    k.name()
                ),
            ));
        }
        Ok(())
    }

    /// `["zen", "erms", "!fsrm"]`: every feature listed present, every `!`
    /// one absent.
    pub(super) fn cpu_condition(&self, path: &FieldPath, words: &[String]) -> R<CpuCondition> {
        if words.is_empty() {
            return Err(self.err(
                path,
                "an empty condition always holds: write `default = true` instead",
            ));
        }
        let mut cond = CpuCondition {
            require: Vec::new(),
            exclude: Vec::new(),
        };
        for (i, w) in words.iter().enumerate() {
            let (negated, name) = match w.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, w.as_str()),
            };
            let f = CpuFeature::parse(name).ok_or_else(|| {
                self.err(
                    &path.index(i),
                    format!(
                        "unknown CPU feature `{name}` (known: {})",
                        CpuFeature::names().join(", ")
                    ),
                )
            })?;
            if cond.require.contains(&f) || cond.exclude.contains(&f) {
                return Err(self.err(
                    &path.index(i),
                    format!("`{name}` is named twice in this condition"),
                ));
            }
            if negated {
                cond.exclude.push(f)
            } else {
                cond.require.push(f)
            }
        }
        Ok(cond)
    }
}

/// The most conjunctions one `when` may list.
const MAX_CONJUNCTIONS: usize = 16;
