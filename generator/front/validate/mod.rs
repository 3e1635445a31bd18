//! Validation: the schema ([`super::schema`]) checked against what each
//! architecture can build and against itself, into a [`Strategy`]. Every
//! independent part (each method, each size class, each variant) is
//! checked, so one run reports every error. Size classes and guards are in
//! `size_classes.rs`, per-CPU variants in `variants.rs`.

mod shadow;
mod shift_combine;
mod size_classes;
mod tuned_on;
mod variants;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::arch::{capabilities, scratch_registers};
use crate::front::diagnostics::{FieldPath, Locator, StrategyError, Warning};
use crate::front::parse::{fmt_range, is_c_identifier, is_deceptive, parse_range, recorded_path};
use crate::front::schema::*;
use crate::front::strategy::*;
use crate::front::variant::{CpuCondition, CpuFeature, Variant, VariantCondition};

pub(super) struct Validator<'a> {
    pub(super) loc: &'a Locator<'a>,
    /// Every error found so far: independent parts of the file (each
    /// method, each size class) are all checked.
    pub(super) errors: RefCell<Vec<StrategyError>>,
    pub(super) warnings: RefCell<Vec<Warning>>,
}

type R<T> = Result<T, StrategyError>;

/// Why `rep movs{l,q}` cannot serve the `rep_movs` convention under 6.1's
/// `_ASM_EXTABLE_CPY` (see `Budget::no_rest_in_rax`).
const REST_IN_RAX: &str = "`rep movs` of 4 or 8 bytes keeps the rest in rax under the `rep_movs` convention, and 6.1's _ASM_EXTABLE_CPY puts the trap number there: use unit 1, or `kernel = \"6.12\"` (or `linux.extable = \"relative\"`)";

/// Whether a method aligns by one word (`align.by = "word"`).
fn word_head(kind: &MethodKind) -> bool {
    let align = match kind {
        MethodKind::RepMovs { align, .. } => align.as_ref(),
        MethodKind::Unrolled(u) => u.align.as_ref(),
        _ => None,
    };
    align.is_some_and(|a| a.by == AlignBy::Word)
}

/// The most scratch registers every emitted flavour allows, and why.
#[derive(Clone)]
struct Budget {
    registers: u32,
    /// What sets the limit, for the error: "the standalone flavour on
    /// i386", or the `rep_movs` convention and where it is chosen.
    reason: String,
    /// The `rep_movs` convention under 6.1's `_ASM_EXTABLE_CPY`: `rep
    /// movs{l,q}` would keep the bytes past its last whole unit in rax, the
    /// only scratch register, where the handler puts the trap number.
    no_rest_in_rax: bool,
}

/// Longest name of a strategy or a method: names become symbols, labels and
/// file names.
const MAX_NAME: usize = 64;

/// Longest description, in characters.
const MAX_DESCRIPTION: usize = 4096;

/// The largest size a class bound or `align.min_size` may name: the length
/// is compared with an immediate. x86_64 immediates are 32 bits sign-extended
/// (larger bounds would need a register the `rep_movs` convention does not
/// have); i386 and ARM lengths are 32-bit, so every length is a valid bound;
/// AArch64 builds any bound in x17, and no user copy reaches 2^63.
fn largest_bound(arch: Arch) -> u64 {
    match arch {
        Arch::X86_64 => i32::MAX as u64,
        Arch::I386 | Arch::Armv6 => u32::MAX as u64,
        Arch::Aarch64 | Arch::Riscv64 => i64::MAX as u64,
    }
}

/// Why [`largest_bound`] is what it is, for the error.
fn bound_reason(arch: Arch) -> &'static str {
    match arch {
        Arch::X86_64 => "x86_64 compares the length with a 32-bit sign-extended immediate",
        Arch::I386 | Arch::Armv6 => "lengths are 32-bit",
        Arch::Aarch64 => "AArch64 builds a bound in a register (movz/movk) only up to 2^63 - 1",
        Arch::Riscv64 => {
            "no user copy on RV64 is longer than 2^63 - 1 bytes (access_ok refuses it)"
        }
    }
}

/// Why `name` cannot be an identifier (a method name or part of one), if
/// it cannot: ASCII letters, digits and `_` (and `-` where `dash`), not
/// starting with a digit, at most [`MAX_NAME`] characters.
fn identifier_problem(name: &str, dash: bool) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || (dash && c == '-');
    let chars = if dash {
        "letters, digits, `-` and `_`"
    } else {
        "letters, digits and `_`"
    };
    if name.is_empty() {
        Some("a name may not be empty".into())
    } else if let Some(c) = name.chars().find(|&c| !allowed(c)) {
        Some(format!(
            "{:?} contains {c:?}: a name uses only {chars} (it becomes symbols and labels)",
            name
        ))
    } else if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        Some(format!(
            "`{name}` does not start with a letter or `_` (it becomes symbols and labels)"
        ))
    } else if name.len() > MAX_NAME {
        Some(format!(
            "a name is at most {MAX_NAME} characters; this one has {}",
            name.len()
        ))
    } else {
        None
    }
}

impl Validator<'_> {
    fn err(&self, path: &FieldPath, msg: impl Into<String>) -> StrategyError {
        self.loc.at_field(path, msg)
    }

    /// Record `r`'s error (if any) and go on checking.
    fn keep<T>(&self, r: R<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.errors.borrow_mut().push(e);
                None
            }
        }
    }

    fn warn(&self, path: &FieldPath, msg: impl Into<String>) {
        self.warnings
            .borrow_mut()
            .push(Warning(self.err(path, msg)));
    }

    /// Builds the strategy when every part validated; otherwise `None`,
    /// with every error found in `self.errors`.
    pub(super) fn strategy(
        &self,
        mut raw: RawStrategy,
        file: &Path,
        text: &str,
        arch: Option<Arch>,
    ) -> Option<Strategy> {
        let root = FieldPath::root();
        let name_ok = self
            .keep(match identifier_problem(&raw.name, true) {
                None => Ok(()),
                Some(why) => Err(self.err(&root.key("name"), why)),
            })
            .is_some();
        let description = self.keep(self.description(&raw.description));
        let arch = self.keep(arch.or_else(|| Arch::parse(&raw.arch)).ok_or_else(|| {
            self.err(
                &root.key("arch"),
                format!(
                    "unknown architecture `{}`; copygen targets i386, x86_64, armv6, aarch64 and riscv64",
                    raw.arch
                ),
            )
        }))?;
        let caps = capabilities(arch);

        let directions_given = raw.directions.is_some();
        let directions = self.keep(match raw.directions.take() {
            None => Ok(vec![Direction::FromUser, Direction::ToUser]),
            Some(d) => {
                let path = root.key("directions");
                let set: BTreeSet<_> = d.iter().collect();
                if d.is_empty() {
                    Err(self.err(&path, "at least one direction is needed"))
                } else if set.len() != d.len() {
                    Err(self.err(&path, "a direction is listed twice"))
                } else {
                    let mut d = d;
                    d.sort();
                    Ok(d)
                }
            }
        });

        let fault = root.key("fault");
        let precision = raw.fault.precision.unwrap_or(Precision::Exact);
        if raw.fault.zero_tail
            && directions
                .as_ref()
                .is_some_and(|d| !d.contains(&Direction::FromUser))
        {
            self.keep::<()>(Err(self.err(
                &fault.key("zero_tail"),
                "zero_tail zeroes the kernel buffer of from_user, which this strategy does not emit",
            )));
        }

        let routine = raw.routine.unwrap_or(RoutineShape::PerDirection);
        if routine == RoutineShape::Both && arch == Arch::Aarch64 {
            self.keep::<()>(Err(self.err(
                &root.key("routine"),
                "aarch64 reaches user memory with the unprivileged ldtr/sttr, which fault on \
                 kernel memory: one routine for both directions would use them on the kernel \
                 buffer too (arm64 calls __arch_copy_from_user and __arch_copy_to_user); \
                 leave out `routine` for one routine per direction",
            )));
        }
        if routine == RoutineShape::Both {
            if directions_given {
                self.keep::<()>(Err(self.err(
                    &root.key("directions"),
                    "a routine serving both directions (`routine = \"both\"`) has no directions to pick",
                )));
            }
            if raw.fault.zero_tail {
                self.keep::<()>(Err(self.err(
                    &fault.key("zero_tail"),
                    "zero_tail is a from_user behaviour; a routine serving both directions cannot zero the kernel side",
                )));
            }
            if !raw.fixed_sizes.is_empty() {
                self.keep::<()>(Err(self.err(
                    &root.key("fixed_sizes"),
                    "constant-size entry points are per direction; `routine = \"both\"` has none",
                )));
            }
        }

        // With the directions in error, judge the names against both
        // (that error is reported already).
        let both = [Direction::FromUser, Direction::ToUser];
        let kernel = raw.linux.kernel;
        let linux = self.keep(self.linux(
            arch,
            routine,
            directions.as_deref().unwrap_or(&both),
            std::mem::take(&mut raw.linux),
        ));

        let mut fixed = raw.fixed_sizes.clone();
        for (i, &n) in raw.fixed_sizes.iter().enumerate() {
            if n == 0 || n > 64 {
                self.keep::<()>(Err(self.err(
                    &root.key("fixed_sizes").index(i),
                    format!("fixed size {n} is outside 1..=64"),
                )));
            }
        }
        fixed.sort_unstable();
        fixed.dedup();
        if fixed.len() != raw.fixed_sizes.len() {
            self.keep::<()>(Err(
                self.err(&root.key("fixed_sizes"), "a fixed size is listed twice")
            ));
        }

        let tuned_on = self.keep(self.tuned_on(arch, raw.tuned_on.take()));

        let budget = self.budget(arch, linux.as_ref());
        let mut methods = BTreeMap::new();
        // Methods that failed: classes using them are not blamed again.
        let mut broken = BTreeSet::new();
        for (name, m) in &raw.methods {
            let path = root.key("methods").key(name);
            if let Some(why) = identifier_problem(name, false) {
                self.keep::<()>(Err(self.err(&path, format!("method name: {why}"))));
                broken.insert(name.clone());
                continue;
            }
            match self.keep(self.method(arch, caps, &budget, &path, m)) {
                Some(kind) if word_head(&kind) && precision != Precision::Exact => {
                    // The word's bytes past the boundary are copied before
                    // the frontier reaches them: after a later fault only a
                    // fixup that copies up to the faulting byte reports them.
                    self.keep::<()>(Err(self.err(
                        &path.key("align").key("by"),
                        "`by = \"word\"` copies bytes past the alignment boundary before the \
                         copy reaches them, which only `precision = \"exact\"` reports after a \
                         later fault (`block` never stores past its count)",
                    )));
                    broken.insert(name.clone());
                }
                Some(kind) => {
                    methods.insert(
                        name.clone(),
                        Method {
                            name: name.clone(),
                            kind,
                        },
                    );
                }
                None => {
                    broken.insert(name.clone());
                }
            }
        }

        let root_dispatch = root.key("dispatch");
        let (classes, alias_first, variants) = if raw.variants.is_empty() {
            let classes = self.size_classes(arch, &root_dispatch, &raw.dispatch, &methods, &broken);
            let alias_first = self.alias_first(
                arch,
                &root.key("alias_first"),
                raw.alias_first.as_ref(),
                (&root_dispatch, &raw.dispatch, classes.as_deref()),
                &methods,
                &broken,
            );
            (classes, alias_first, Some(Vec::new()))
        } else {
            match self.keep(self.variants(
                arch,
                caps,
                &budget,
                &raw,
                kernel,
                variants::SharedMethods {
                    defined: &methods,
                    broken: &broken,
                },
            )) {
                Some(Some(variants)) => {
                    let default = variants.last().expect("validated non-empty");
                    (
                        Some(default.classes.clone()),
                        default.alias_first.clone(),
                        Some(variants),
                    )
                }
                _ => (None, None, None),
            }
        };
        if let (Some(l), Some(v)) = (&linux, &variants) {
            if l.site.is_some() && v.is_empty() {
                self.keep::<()>(Err(self.err(
                    &root.key("linux").key("site"),
                    "a strategy without per-CPU variants is 6.12's rep_movs_alternative itself (the stock site calls it): `site` chooses among variants",
                )));
            }
        }
        if !self.errors.borrow().is_empty() || !name_ok {
            return None;
        }
        let strategy = Strategy {
            symbol: symbol_of(&raw.name),
            name: raw.name,
            description: description?,
            arch,
            directions: directions?,
            routine,
            precision,
            zero_tail: raw.fault.zero_tail,
            linux: linux?,
            classes: classes?,
            alias_first,
            variants: variants?,
            fixed_sizes: fixed,
            tuned_on: tuned_on?,
            source: recorded_path(file),
            file: file.to_path_buf(),
            text: text.to_string(),
        };
        // What the names become in the generated files.
        let named = crate::front::symbol_clashes::check_strategy(&strategy, self.loc.file);
        if !named.is_empty() {
            self.errors.borrow_mut().extend(named);
            return None;
        }
        Some(strategy)
    }

    /// The description is restated in a comment of every generated file:
    /// printable text only (the renderer escapes what could end the comment).
    fn description(&self, text: &str) -> R<String> {
        let path = FieldPath::root().key("description");
        if let Some(c) = text
            .chars()
            .find(|&c| (c.is_control() && c != '\n' && c != '\t') || is_deceptive(c))
        {
            return Err(self.err(
                &path,
                format!(
                    "the description contains character U+{:04X}; it is restated in the generated file, which takes printable text, tabs and newlines only",
                    c as u32
                ),
            ));
        }
        if text.chars().count() > MAX_DESCRIPTION {
            return Err(self.err(
                &path,
                format!("a description is at most {MAX_DESCRIPTION} characters"),
            ));
        }
        Ok(text.trim().replace('\t', "    "))
    }

    /// Scratch registers: the fewest any emitted flavour allows.
    fn budget(&self, arch: Arch, linux: Option<&LinuxOptions>) -> Budget {
        let convention = linux.map_or(Convention::C, |l| l.convention);
        let (registers, flavor) = Flavor::ALL
            .iter()
            .map(|&f| (scratch_registers(arch, f, convention), f))
            .min()
            .expect("flavours");
        let reason = if flavor == Flavor::Linux && convention == Convention::RepMovs {
            let at = self.err(&FieldPath::root().key("linux").key("convention"), "");
            format!(
                "the `rep_movs` convention (`linux.convention`, line {}) lets a routine clobber only {registers} scratch register(s) (rax)",
                at.line
            )
        } else {
            format!("the {flavor} flavor on {arch} lets a routine clobber only {registers} scratch register(s)")
        };
        let no_rest_in_rax = linux.is_some_and(|l| {
            l.convention == Convention::RepMovs && l.extable == ExtableFormat::Copy
        });
        Budget {
            registers,
            reason,
            no_rest_in_rax,
        }
    }

    fn linux(
        &self,
        arch: Arch,
        routine: RoutineShape,
        directions: &[Direction],
        raw: RawLinux,
    ) -> R<LinuxOptions> {
        let path = FieldPath::root().key("linux");
        if raw.convention.is_some() && arch != Arch::X86_64 {
            return Err(self.err(
                &path.key("convention"),
                format!("only x86_64 offers a choice of convention; {arch} has one"),
            ));
        }
        if raw.uaccess.is_some() && arch == Arch::Riscv64 {
            return Err(self.err(
                &path.key("uaccess"),
                "STAC/CLAC bracketing is an x86 option; a riscv64 routine sets and clears SR_SUM itself, as arch/riscv/lib/uaccess.S does",
            ));
        }
        if raw.uaccess.is_some() && matches!(arch, Arch::Armv6 | Arch::Aarch64) {
            return Err(self.err(
                &path.key("uaccess"),
                format!("STAC/CLAC bracketing is an x86 option; {arch} has no SMAP"),
            ));
        }
        if raw.extable == Some(ExtableFormat::Absolute) && arch != Arch::I386 {
            return Err(self.err(
                &path.key("extable"),
                "the absolute 2002 table format exists for i386 only",
            ));
        }
        if raw.extable == Some(ExtableFormat::Copy) {
            if arch != Arch::X86_64 {
                return Err(self.err(
                    &path.key("extable"),
                    "_ASM_EXTABLE_CPY exists on x86_64 only",
                ));
            }
            if !crate::kernel::version::may_use_extable_copy(raw.kernel) {
                return Err(self.err(
                    &path.key("extable"),
                    "_ASM_EXTABLE_CPY is 6.1's (6.4 removed it): 6.12's copy routines use _ASM_EXTABLE_UA (`extable = \"relative\"`)",
                ));
            }
        }
        if raw.site.is_some() {
            let why = if arch != Arch::X86_64 {
                Some(format!("`site` is the form of x86_64's inline copy site (Linux 6.12's copy_user_generic()); {arch} calls its routine"))
            } else if raw.kernel == Some(KernelVersion::V6_1) {
                Some("6.1's copy_user_generic() calls its routine out of line; only 6.12's site is inline (drop `site` or set `kernel = \"6.12\"`)".to_string())
            } else if raw.convention != Some(Convention::RepMovs) {
                Some("the inline site calls routines in rep_movs_alternative's convention (rdi, rsi, rcx -> rcx, rax clobbered): set `convention = \"rep_movs\"`".to_string())
            } else if raw.uaccess == Some(Uaccess::Routine) {
                Some("the inline site runs between stac() and clac(): a routine it calls leaves STAC/CLAC to its caller (`uaccess = \"caller\"`)".to_string())
            } else {
                None
            };
            if let Some(why) = why {
                return Err(self.err(&path.key("site"), why));
            }
        }
        // Names: C identifiers, one per routine the strategy has.
        let mut names: Vec<(&str, &Option<String>)> = vec![("symbol", &raw.symbol)];
        names.push(("from_user", &raw.from_user));
        names.push(("to_user", &raw.to_user));
        for (key, name) in &names {
            let Some(name) = name else { continue };
            if !is_c_identifier(name) {
                return Err(self.err(
                    &path.key(key),
                    format!("`{name}` is not a symbol name (letters, digits and `_`, not starting with a digit)"),
                ));
            }
            let wanted = match *key {
                "symbol" => routine == RoutineShape::Both,
                "from_user" => {
                    routine == RoutineShape::PerDirection
                        && directions.contains(&Direction::FromUser)
                }
                _ => {
                    routine == RoutineShape::PerDirection && directions.contains(&Direction::ToUser)
                }
            };
            if !wanted {
                let why = if *key == "symbol" {
                    "`symbol` names a routine serving both directions (`routine = \"both\"`); per direction, use from_user / to_user"
                        .to_string()
                } else if routine == RoutineShape::Both {
                    format!(
                        "a routine serving both directions has one name: use `symbol`, not `{key}`"
                    )
                } else {
                    format!("the strategy emits no {key} routine")
                };
                return Err(self.err(&path.key(key), why));
            }
        }
        if raw.from_user.is_some() && raw.from_user == raw.to_user {
            return Err(self.err(
                &path.key("to_user"),
                "from_user and to_user need different names (one routine for both is `routine = \"both\"` with `symbol`)",
            ));
        }
        Ok(LinuxOptions {
            convention: raw.convention.unwrap_or(Convention::C),
            uaccess: raw.uaccess.unwrap_or(Uaccess::Caller),
            // x86_64 copy routines use the macro their tree does: 6.1's
            // _ASM_EXTABLE_CPY (a file for both kernels picks it by version),
            // 6.12's _ASM_EXTABLE_UA.
            extable: raw.extable.unwrap_or(
                if arch == Arch::X86_64 && crate::kernel::version::may_use_extable_copy(raw.kernel)
                {
                    ExtableFormat::Copy
                } else {
                    ExtableFormat::Relative
                },
            ),
            kernel: raw.kernel,
            site: raw.site,
            feature_entries: Vec::new(),
            from_user: raw.from_user,
            to_user: raw.to_user,
            both: raw.symbol,
        })
    }

    fn check_width(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        path: &FieldPath,
        w: u32,
    ) -> R<()> {
        if caps.widths.contains(&w) {
            Ok(())
        } else {
            Err(self.err(
                path,
                format!(
                    "width {w} is not a register width of {arch} (it has {:?})",
                    caps.widths
                ),
            ))
        }
    }

    /// 1-byte accesses need registers with a byte form.
    fn check_byte_registers(
        &self,
        caps: &crate::arch::Capabilities,
        path: &FieldPath,
        width: u32,
        n: u32,
        arch: Arch,
    ) -> R<()> {
        if width == 1 && n > caps.byte_registers {
            return Err(self.err(
                path,
                format!("{n} registers for 1-byte accesses, but only {} of {arch}'s scratch registers have a byte form", caps.byte_registers),
            ));
        }
        Ok(())
    }

    /// `n` registers of `width` bytes fit the scratch budget (a
    /// register-pair width takes two each).
    fn check_registers(
        &self,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        width: u32,
        n: u32,
    ) -> R<()> {
        if n == 0 {
            return Err(self.err(path, "at least one register is needed"));
        }
        let needed = caps.registers_needed(width, n);
        if needed > budget.registers {
            let pairs = if needed > n {
                format!(" ({width}-byte registers are pairs: {needed} scratch registers)")
            } else {
                String::new()
            };
            return Err(self.err(path, format!("{n} registers{pairs}, but {}", budget.reason)));
        }
        Ok(())
    }

    fn method(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        m: &RawMethod,
    ) -> R<MethodKind> {
        let used: &[&str] = match m.kind {
            RawKind::Bytes => &[],
            RawKind::HeadTail => &["width", "registers"],
            RawKind::Unrolled => &[
                "width",
                "block",
                "registers",
                "grouping",
                "prefetch",
                "align",
                "tail",
            ],
            RawKind::RepMovs => &["unit", "align", "tail"],
            RawKind::ShiftCombine => &["width", "align"],
        };
        let present = [
            ("width", m.width.is_some()),
            ("block", m.block.is_some()),
            ("registers", m.registers.is_some()),
            ("grouping", m.grouping.is_some()),
            ("prefetch", m.prefetch.is_some()),
            ("align", m.align.is_some()),
            ("tail", m.tail.is_some()),
            ("unit", m.unit.is_some()),
        ];
        for (field, is_set) in present {
            if is_set && !used.contains(&field) {
                return Err(self.err(
                    &path.key(field),
                    format!(
                        "`{field}` means nothing to a method of kind `{}`",
                        toml_name(&m.kind)
                    ),
                ));
            }
        }
        let max_width = *caps.widths.iter().max().expect("widths");
        match m.kind {
            RawKind::Bytes => Ok(MethodKind::Bytes),
            RawKind::HeadTail => {
                let width = m.width.unwrap_or(max_width);
                self.check_width(arch, caps, &path.key("width"), width)?;
                let registers = m.registers.unwrap_or(2.min(budget.registers));
                self.check_registers(caps, budget, &path.key("registers"), width, registers)?;
                self.check_byte_registers(caps, &path.key("registers"), width, registers, arch)?;
                Ok(MethodKind::HeadTail { width, registers })
            }
            RawKind::RepMovs => {
                if !caps.rep_strings {
                    return Err(self.err(&path.key("kind"), format!("{arch} has no `rep movs`")));
                }
                let unit = m.unit.unwrap_or(1);
                if !matches!(unit, 1 | 4 | 8) || !caps.widths.contains(&unit) {
                    return Err(self.err(
                        &path.key("unit"),
                        format!(
                            "`rep movs` on {arch} moves units of 1, 4{} bytes, not {unit}",
                            if arch == Arch::X86_64 { " or 8" } else { "" }
                        ),
                    ));
                }
                if unit > 1 && budget.no_rest_in_rax {
                    return Err(self.err(&path.key("unit"), REST_IN_RAX));
                }
                let align = self.align(arch, &path.key("align"), m.align.as_ref())?;
                let tail = match m.tail {
                    None | Some(Tail::RepMovsb) => RepTail::RepMovsb,
                    Some(Tail::Bytes) => RepTail::Bytes,
                    Some(other) => {
                        return Err(self.err(
                            &path.key("tail"),
                            format!(
                                "a `rep_movs` method's tail is \"rep_movsb\" or \"bytes\", not \"{other}\""
                            ),
                        ))
                    }
                };
                if unit == 1 && m.tail.is_some() {
                    return Err(self.err(
                        &path.key("tail"),
                        "`rep movsb` leaves no tail: `tail` needs a `unit` of 4 or 8",
                    ));
                }
                Ok(MethodKind::RepMovs { unit, align, tail })
            }
            RawKind::Unrolled => self
                .unrolled(arch, caps, budget, path, m)
                .map(MethodKind::Unrolled),
            RawKind::ShiftCombine => self.shift_combine(arch, caps, budget, path, m),
        }
    }

    fn unrolled(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        m: &RawMethod,
    ) -> R<Unrolled> {
        let width = m.width.ok_or_else(|| {
            self.err(
                path,
                "an unrolled method needs `width` (register width in bytes)",
            )
        })?;
        self.check_width(arch, caps, &path.key("width"), width)?;
        let block = m.block.ok_or_else(|| {
            self.err(
                path,
                "an unrolled method needs `block` (bytes per iteration)",
            )
        })?;
        if block == 0 || block % width != 0 {
            return Err(self.err(
                &path.key("block"),
                format!("block {block} is not a positive multiple of the width {width}"),
            ));
        }
        if block > 1024 {
            return Err(self.err(
                &path.key("block"),
                format!("block {block} exceeds 1024 bytes of unrolling"),
            ));
        }
        let grouping = m.grouping.unwrap_or(Grouping::LoadsFirst);
        if !caps.groupings.contains(&grouping) {
            return Err(self.err(
                &path.key("grouping"),
                format!("grouping `{grouping}` does not exist on {arch}"),
            ));
        }
        let registers = m.registers.unwrap_or(1);
        self.check_registers(caps, budget, &path.key("registers"), width, registers)?;
        self.check_byte_registers(caps, &path.key("registers"), width, registers, arch)?;
        let words = block / width;
        if words % registers != 0 {
            return Err(self.err(
                &path.key("registers"),
                format!(
                    "{registers} registers do not divide the {words} words of a {block}-byte block"
                ),
            ));
        }
        if grouping == Grouping::Multiple {
            if width != 4 {
                return Err(self.err(
                    &path.key("width"),
                    "ldm/stm move 4-byte words: width must be 4",
                ));
            }
            if registers > caps.max_multiple || registers < 2 {
                return Err(self.err(
                    &path.key("registers"),
                    format!("an ldm/stm group takes 2..={} registers", caps.max_multiple),
                ));
            }
        }
        let prefetch = match &m.prefetch {
            None => None,
            Some(p) => {
                let pp = path.key("prefetch");
                if !caps.prefetch.contains(&p.kind) {
                    return Err(self.err(
                        &pp.key("kind"),
                        format!("prefetch `{}` does not exist on {arch}", p.kind),
                    ));
                }
                let distances = match &p.distance {
                    OneOrMany::One(d) => vec![*d],
                    OneOrMany::Many(d) => d.clone(),
                };
                if distances.is_empty() || distances.iter().any(|&d| d == 0 || d > 4096) {
                    return Err(self.err(
                        &pp.key("distance"),
                        "prefetch distances lie in 1..=4096 bytes",
                    ));
                }
                if p.kind == PrefetchKind::Touch && distances.iter().any(|d| d % width != 0) {
                    return Err(self.err(
                        &pp.key("distance"),
                        format!("a touch load reads {width} bytes: its distance must be a multiple of the width"),
                    ));
                }
                Some(Prefetch {
                    kind: p.kind,
                    distances,
                })
            }
        };
        let align = self.align(arch, &path.key("align"), m.align.as_ref())?;
        let tail = m.tail.unwrap_or(Tail::Bytes);
        if tail == Tail::RepMovs && budget.no_rest_in_rax {
            return Err(self.err(&path.key("tail"), REST_IN_RAX));
        }
        if tail == Tail::RepMovs && !matches!(width, 4 | 8) {
            return Err(self.err(
                &path.key("tail"),
                format!("a `rep_movs` tail moves units of the loop width, which must be 4 or 8, not {width}"),
            ));
        }
        if !caps.tails.contains(&tail) {
            return Err(self.err(
                &path.key("tail"),
                format!("tail `{tail}` does not exist on {arch}"),
            ));
        }
        Ok(Unrolled {
            block,
            width,
            registers,
            grouping,
            prefetch,
            align,
            tail,
        })
    }

    fn align(&self, arch: Arch, ap: &FieldPath, a: Option<&RawAlign>) -> R<Option<Align>> {
        let Some(a) = a else { return Ok(None) };
        if a.pointer == AlignPointer::Congruent {
            return Err(self.err(
                &ap.key("pointer"),
                "an alignment prologue aligns `dst`, `src` or `both`; `congruent` is a guard condition",
            ));
        }
        if !a.to.is_power_of_two() || a.to < 2 || a.to > 64 {
            return Err(self.err(
                &ap.key("to"),
                format!("alignment {} is not a power of two in 2..=64", a.to),
            ));
        }
        if a.min_size < a.to as u64 {
            return Err(self.err(
                &ap.key("min_size"),
                format!(
                    "min_size {} is below the alignment {}: the prologue could run past the end",
                    a.min_size, a.to
                ),
            ));
        }
        if a.min_size > largest_bound(arch) {
            return Err(self.err(
                &ap.key("min_size"),
                format!(
                    "min_size {} is too large: {}, so it is at most {}",
                    a.min_size,
                    bound_reason(arch),
                    largest_bound(arch)
                ),
            ));
        }
        let by = a.by.unwrap_or_default();
        if by == AlignBy::Word {
            let word = match arch {
                Arch::X86_64 => 8,
                Arch::I386 => 4,
                _ => {
                    return Err(self.err(
                        &ap.key("by"),
                        format!("`by = \"word\"` is x86 only, not {arch}: use the byte loop"),
                    ))
                }
            };
            if !matches!(a.pointer, AlignPointer::Dst | AlignPointer::Src) {
                return Err(self.err(
                    &ap.key("by"),
                    "`by = \"word\"` aligns one pointer, `dst` or `src`, not both",
                ));
            }
            if a.to > word {
                return Err(self.err(
                    &ap.key("by"),
                    format!(
                        "`by = \"word\"` copies one word of `to` bytes: at most {word} on {arch}, not {}",
                        a.to
                    ),
                ));
            }
        }
        Ok(Some(Align {
            pointer: a.pointer,
            to: a.to,
            min_size: a.min_size,
            by,
        }))
    }
}
