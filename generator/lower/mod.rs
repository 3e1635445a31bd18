//! Lowering: a validated [`Strategy`] becomes one [`Routine`] per entry
//! point. Strategies are compositions of a few copy operations (byte loop,
//! head/tail, unrolled loop, `rep movs`), in the manner of llvm-libc's
//! `memory_utils`. The lowering is the only place that knows how many bytes
//! are done at each user access; it records that in the access's fixup, so
//! exception tables and fixups are right by construction.

mod copy_ops;
mod fixup_code;
pub mod routine;
mod shift_combine;
pub mod variants;

use std::collections::{BTreeSet, HashMap};

use crate::arch::symbols;
use crate::front::strategy::*;
use crate::lower::routine::*;

/// What the lowering needs to know about where the code goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    pub arch: Arch,
    pub flavor: Flavor,
}

/// Lower every entry point of `s` for `target`.
/// With per-CPU variants: every variant's routines ([`variants`]).
pub fn lower(s: &Strategy, target: Target) -> Vec<Routine> {
    if !s.variants.is_empty() {
        return variants::lower_variants(s, target);
    }
    let mut out = Vec::new();
    if s.routine == RoutineShape::Both {
        // One body; the harness and checkers reach it in its from_user role
        // by its name and in its to_user role by the alias.
        out.push(Lowering::new(s, target, Direction::FromUser, None).general());
        return out;
    }
    for &dir in &s.directions {
        out.push(Lowering::new(s, target, dir, None).general());
    }
    for &n in &s.fixed_sizes {
        for &dir in &s.directions {
            out.push(Lowering::new(s, target, dir, Some(n)).fixed(n));
        }
    }
    out
}

/// Symbol of an entry point (see [`symbols::entry`]).
pub fn entry_symbol(s: &Strategy, flavor: Flavor, dir: Direction, fixed: Option<u32>) -> String {
    symbols::entry(s, flavor, dir, fixed)
}

struct Lowering<'a> {
    s: &'a Strategy,
    flavor: Flavor,
    dir: Direction,
    /// Which accesses may fault: loads (from_user), stores (to_user), or
    /// both (a routine serving both directions).
    user_loads: bool,
    user_stores: bool,
    caps: &'static crate::arch::Capabilities,
    uaccess_in_routine: bool,
    /// Scratch registers this target's convention lets a routine clobber.
    scratch: u32,
    fixed: Option<u32>,
    ops: Vec<Op>,
    fixups: Vec<Fixup>,
    labels: BTreeSet<String>,
    /// Per label base, the suffix [`Self::label`] tries first: every
    /// `base_k` below it is taken, so naming stays linear in the number of
    /// labels (strategies with thousands of size classes reuse bases).
    next_suffix: HashMap<String, u32>,
}

/// Progress through a straight-line copy: how much is known stored.
#[derive(Clone, Copy)]
struct Progress {
    /// Bytes from the pointers known copied, with nothing stored beyond...
    done: u32,
    /// ...unless `dirty`: some store went past `done` (overlapping copies,
    /// `stm` that stored part of its words), so only a byte retry from
    /// `done` can find the exact count.
    dirty: bool,
}

impl<'a> Lowering<'a> {
    fn new(s: &'a Strategy, target: Target, dir: Direction, fixed: Option<u32>) -> Self {
        // RISC-V routines open user access themselves (SR_SUM), as
        // arch/riscv/lib/uaccess.S does.
        let uaccess_in_routine = target.flavor == Flavor::Linux
            && (target.arch == Arch::Riscv64
                || matches!(target.arch, Arch::X86_64 | Arch::I386)
                    && s.linux.uaccess == Uaccess::Routine);
        let both = s.routine == RoutineShape::Both;
        Lowering {
            s,
            flavor: target.flavor,
            dir,
            user_loads: both || dir == Direction::FromUser,
            user_stores: both || dir == Direction::ToUser,
            caps: crate::arch::capabilities(target.arch),
            uaccess_in_routine,
            scratch: crate::arch::scratch_registers(target.arch, target.flavor, s.linux.convention),
            fixed,
            ops: Vec::new(),
            fixups: Vec::new(),
            labels: BTreeSet::new(),
            next_suffix: HashMap::new(),
        }
    }

    fn finish(mut self) -> Routine {
        self.fixup_code();
        drop_jumps_to_next(&mut self.ops);

        let both = self.s.routine == RoutineShape::Both;
        let tag = symbols::routine_tag(self.s, self.dir, self.fixed);
        // The standalone flavour exports a routine serving both directions
        // under both names (CONTRACT §3).
        let aliases = if both && self.flavor == Flavor::Standalone {
            vec![(
                entry_symbol(self.s, self.flavor, Direction::ToUser, None),
                Direction::ToUser,
            )]
        } else {
            Vec::new()
        };
        Routine {
            symbol: entry_symbol(self.s, self.flavor, self.dir, self.fixed),
            aliases,
            tag,
            direction: self.dir,
            fixed: self.fixed,
            ops: self.ops,
            fixups: self.fixups,
        }
    }

    // ---- small emitters -------------------------------------------------

    fn op(&mut self, op: Op) {
        self.ops.push(op);
    }

    fn comment(&mut self, text: impl Into<String>) {
        self.op(Op::Comment(text.into()));
    }

    /// A fresh label named `base` (or `base_2`, `base_3`... if taken).
    fn label(&mut self, base: &str) -> Label {
        if self.labels.insert(base.to_string()) {
            return base.to_string();
        }
        let n = self.next_suffix.entry(base.to_string()).or_insert(2);
        loop {
            let name = format!("{base}_{n}");
            *n += 1;
            if self.labels.insert(name.clone()) {
                return name;
            }
        }
    }

    /// Give back a label that was not placed, so its name can be reused.
    fn unlabel(&mut self, name: &str) {
        self.labels.remove(name);
        // `base_k` is free again: `label(base)` must try it first.
        if let Some((base, k)) = name.rsplit_once('_') {
            if let (Ok(k), Some(n)) = (k.parse::<u32>(), self.next_suffix.get_mut(base)) {
                *n = (*n).min(k);
            }
        }
    }

    fn place(&mut self, l: &Label) {
        self.op(Op::Label(l.clone()));
    }

    fn jump_len(&mut self, cond: Cond, imm: u64, target: &Label) {
        self.op(Op::JumpIfLen {
            cond,
            imm,
            target: target.clone(),
        });
    }

    fn ret(&mut self, zero: bool) {
        if self.uaccess_in_routine {
            self.op(Op::UaccessEnd);
        }
        self.op(Op::Return { zero });
    }

    /// The fixup for a fault with `p` known; `then` follows the precision
    /// unless the frontier is unknown, which always needs the byte retry.
    fn fixup_for(&mut self, recover: Recover, dirty: bool) -> FixupId {
        let then = match (dirty, self.s.precision) {
            (true, _) | (false, Precision::Exact) => Then::Retry,
            (false, Precision::Block) => Then::Step,
        };
        self.fixup(recover, then)
    }

    fn fixup(&mut self, recover: Recover, then: Then) -> FixupId {
        // A handful of fixups per routine: a scan beats hashing.
        if let Some(id) = self
            .fixups
            .iter()
            .position(|f| f.recover == recover && f.then == then)
        {
            return id;
        }
        let then_name = match then {
            Then::Retry => "retry",
            Then::Step => "step",
            Then::Done => "done",
        };
        // With nothing to repair, the entry lands on the loop (or return) itself.
        let label = match recover {
            Recover::None => format!("fixup_{then_name}"),
            Recover::Advance(k) => format!("fixup_{k}_then_{then_name}"),
            Recover::Rep { unit } => format!("fixup_rep{unit}_then_{then_name}"),
        };
        let label = self.label(&label);
        let id = self.fixups.len();
        self.fixups.push(Fixup {
            recover,
            then,
            label,
        });
        id
    }

    /// A user site for an access of the user side, `None` for the kernel side.
    fn site(&mut self, is_user: bool, name: &str, p: Progress) -> Option<UserSite> {
        if !is_user {
            return None;
        }
        let recover = if p.done == 0 {
            Recover::None
        } else {
            Recover::Advance(p.done)
        };
        let fixup = self.fixup_for(recover, p.dirty);
        Some(UserSite {
            name: self.label(name),
            fixup,
        })
    }

    /// Copy `width` bytes at `at` through scratch `reg`, as one load and
    /// one store; `p` is the progress before it. Returns the progress after.
    fn copy_one(&mut self, name: &str, width: u32, reg: u8, at: At, p: Progress) -> Progress {
        self.piece_load(name, "_load", width, reg, at, p);
        self.piece_store(name, "_store", width, reg, at, p)
    }

    /// Scratch registers one piece of `width` bytes occupies.
    fn regs_per_piece(&self, width: u32) -> u8 {
        self.caps.registers_needed(width, 1) as u8
    }

    /// The single accesses of a piece on one side: the piece itself, or,
    /// for a register pair on the user side (no `ldtr`/`sttr` pair form),
    /// its two halves, low register first, each a user site of its own.
    fn halves(&self, width: u32, reg: u8, at: At, user: bool) -> Vec<(u32, u8, At, &'static str)> {
        let half = self.caps.register_bytes;
        if !user || width <= half {
            return vec![(width, reg, at, "")];
        }
        let high = match at {
            At::Start(k) => At::Start(k + half),
            At::End(k) => At::End(k - half),
        };
        vec![(half, reg, at, ""), (half, reg + 1, high, "_hi")]
    }

    /// Load one piece from `src + at` into scratch `reg` (and `reg + 1`
    /// for a pair); nothing is stored yet, so every half faults with `p`.
    fn piece_load(&mut self, name: &str, suffix: &str, width: u32, reg: u8, at: At, p: Progress) {
        let user = self.user_loads;
        for (w, r, a, half) in self.halves(width, reg, at, user) {
            // Names only for user sites: the JIT lowers on every compile.
            let site = if user {
                self.site(true, &format!("{name}{suffix}{half}"), p)
            } else {
                None
            };
            self.op(Op::Load(Access {
                width: w,
                reg: r,
                mem: Mem {
                    base: Ptr::Src,
                    at: a,
                },
                user: site,
            }));
        }
    }

    /// Store one piece to `dst + at` from scratch `reg` (and `reg + 1`);
    /// a fault in a pair's high half has the low half stored. Returns the
    /// progress after the piece.
    fn piece_store(
        &mut self,
        name: &str,
        suffix: &str,
        width: u32,
        reg: u8,
        at: At,
        mut p: Progress,
    ) -> Progress {
        let user = self.user_stores;
        for (w, r, a, half) in self.halves(width, reg, at, user) {
            let site = if user {
                self.site(true, &format!("{name}{suffix}{half}"), p)
            } else {
                None
            };
            self.op(Op::Store(Access {
                width: w,
                reg: r,
                mem: Mem {
                    base: Ptr::Dst,
                    at: a,
                },
                user: site,
            }));
            p = after_store(p, w, a);
        }
        p
    }

    /// One load from `src + at` and one store to `dst + at` through `reg`.
    fn load_store(
        &mut self,
        width: u32,
        reg: u8,
        at: At,
        load: Option<UserSite>,
        store: Option<UserSite>,
    ) {
        self.op(Op::Load(Access {
            width,
            reg,
            mem: Mem { base: Ptr::Src, at },
            user: load,
        }));
        self.op(Op::Store(Access {
            width,
            reg,
            mem: Mem { base: Ptr::Dst, at },
            user: store,
        }));
    }

    /// Copy one byte; a fault lands on the final return (`fixup`).
    fn byte_landing_on(&mut self, name: &str, fixup: FixupId) {
        let load = self.user_loads.then(|| UserSite {
            name: self.label(&format!("{name}_load")),
            fixup,
        });
        let store = self.user_stores.then(|| UserSite {
            name: self.label(&format!("{name}_store")),
            fixup,
        });
        self.load_store(1, 0, At::Start(0), load, store);
        self.op(Op::Advance(1));
    }

    /// A straight-line sequence of accesses `(width, at)` in ascending
    /// order, loaded in groups of `regs` registers before being stored.
    fn copy_group(
        &mut self,
        name: &str,
        pieces: &[(u32, At)],
        regs: u32,
        mut p: Progress,
    ) -> Progress {
        for (g, chunk) in pieces.chunks(regs as usize).enumerate() {
            let before = p;
            let mut reg = 0;
            for (i, &(width, at)) in chunk.iter().enumerate() {
                let idx = g * regs as usize + i;
                self.piece_load(name, &format!("_load{idx}"), width, reg, at, before);
                reg += self.regs_per_piece(width);
            }
            let mut reg = 0;
            for (i, &(width, at)) in chunk.iter().enumerate() {
                let idx = g * regs as usize + i;
                p = self.piece_store(name, &format!("_store{idx}"), width, reg, at, p);
                reg += self.regs_per_piece(width);
            }
        }
        p
    }

    // ---- entry points ----------------------------------------------------

    fn general(mut self) -> Routine {
        if self.uaccess_in_routine {
            self.op(Op::UaccessBegin);
        }
        let alias_first = self.s.alias_first.clone();
        let band = alias_first.as_ref().map(|_| self.label("alias_first"));
        let first = alias_first.as_ref().zip(band.as_ref());
        let classes = self.s.classes.clone();
        self.dispatch("class", &classes, None, first);
        if let Some((a, l)) = first {
            self.place(l);
            self.dispatch("alias_class", &a.classes, Some(&a.condition()), None);
        }
        self.finish()
    }

    /// Size classes `classes` (labels `<base>N`), each with its guards;
    /// `known`: a condition that holds on every path into them; `first`:
    /// the alias-first test, made at the start of the class where it
    /// starts, and the label of its classes.
    fn dispatch(
        &mut self,
        base: &str,
        classes: &[SizeClass],
        known: Option<&Condition>,
        first: Option<(&AliasFirst, &Label)>,
    ) {
        let labels: Vec<Label> = (0..classes.len())
            .map(|i| self.label(&format!("{base}{i}")))
            .collect();
        let also = known.map_or(String::new(), |c| format!(", and {}", condition_text(c)));
        for (i, class) in classes.iter().enumerate() {
            if i > 0 {
                self.place(&labels[i]);
            }
            if let Some((a, l)) = first.filter(|(a, _)| a.from == class.lo) {
                self.comment(format!(
                    "alias first: from {} bytes, {} goes to its own size classes",
                    a.from,
                    condition_text(&a.condition())
                ));
                self.op(Op::JumpIfAlias {
                    lo: a.lo,
                    hi: a.hi,
                    target: l.clone(),
                });
            }
            self.comment(format!(
                "{} {i}: {} bytes → method `{}`",
                base.replace('_', " "),
                range_text(class.lo, class.hi),
                class.method.name
            ));
            if let Some(hi) = class.hi {
                self.jump_len(Cond::Above, hi, &labels[i + 1]);
            }
            self.comment(format!("here: {}{also}", range_fact(class.lo, class.hi)));
            let guard_labels: Vec<Label> = class
                .guards
                .iter()
                .map(|g| self.label(&format!("{}_guarded", g.method.name)))
                .collect();
            for (g, l) in class.guards.iter().zip(&guard_labels) {
                match g.condition {
                    Condition::Alias { lo, hi } => self.op(Op::JumpIfAlias {
                        lo,
                        hi,
                        target: l.clone(),
                    }),
                    Condition::Aligned { pointer, to } => self.op(Op::JumpIfPtr {
                        test: pointer.into(),
                        mask: to - 1,
                        aligned: true,
                        target: l.clone(),
                    }),
                }
            }
            self.method(&class.method, class.lo, class.hi, known.as_slice());
            for (g, l) in class.guards.iter().zip(&guard_labels) {
                self.place(l);
                self.comment(format!(
                    "here: {}{also}, and {}",
                    range_fact(class.lo, class.hi),
                    condition_text(&g.condition)
                ));
                let holds: Vec<&Condition> = known.into_iter().chain([&g.condition]).collect();
                self.method(&g.method, class.lo, class.hi, &holds);
            }
        }
    }

    /// A constant-size entry point: ascending pieces of the widest widths,
    /// each stored right after it is loaded (the shape of Chris
    /// Wilson, "x86: Static optimisations for copy_user" (2017)).
    fn fixed(mut self, n: u32) -> Routine {
        if self.uaccess_in_routine {
            self.op(Op::UaccessBegin);
        }
        self.comment(format!("constant size: {n} bytes; len is not an argument"));
        self.op(Op::SetLen(n));
        let widths = crate::arch::capabilities(self.s.arch).widths;
        let mut pieces = Vec::new();
        let mut off = 0;
        while off < n {
            let w = *widths
                .iter()
                .filter(|&&w| w <= n - off)
                .max()
                .expect("byte width");
            pieces.push((w, At::Start(off)));
            off += w;
        }
        // Alternate two registers (or pairs) where the convention allows two.
        let mut p = Progress {
            done: 0,
            dirty: false,
        };
        for (i, &(w, at)) in pieces.iter().enumerate() {
            let per = self.regs_per_piece(w);
            let regs = (self.scratch / per as u32).min(2) as usize;
            let reg = (i % regs) as u8 * per;
            p = self.copy_one(&format!("piece{i}"), w, reg, at, p);
        }
        self.ret(true);
        self.finish()
    }

    /// Method `m` for lengths `lo..=hi` where the conditions `holds` are
    /// true. An alignment prologue that could not run is left out (the
    /// static check would find its code unreachable): where a guard has
    /// proved the pointer aligned, or where no length reaches `min_size`.
    fn method(&mut self, m: &Method, lo: u64, hi: Option<u64>, holds: &[&Condition]) {
        let needed = |a: &Align| {
            hi.is_none_or(|h| h >= a.min_size) && !holds.iter().any(|c| proves_aligned(c, a))
        };
        match &m.kind {
            MethodKind::Bytes => self.bytes(&m.name),
            MethodKind::HeadTail { width, registers } => self.head_tail(
                &m.name,
                *width,
                *registers,
                lo,
                hi.expect("validated: bounded"),
            ),
            MethodKind::Unrolled(u) => {
                let u = Unrolled {
                    align: u.align.filter(needed),
                    ..u.clone()
                };
                self.unrolled(&m.name, &u, lo)
            }
            MethodKind::RepMovs { unit, align, tail } => {
                if let Some(a) = align.filter(needed) {
                    self.align_prologue(&m.name, &a, lo);
                }
                self.rep_movs(&m.name, *unit, *tail);
            }
            MethodKind::ShiftCombine { width, align } => {
                self.shift_combine(&m.name, *width, Some(*align).filter(needed), lo)
            }
        }
    }
}

/// Whether `c` holding makes the prologue `a` a no-op: its pointer
/// aligned to at least `a.to`. A prologue for both pointers aligns dst only
/// where they are congruent, so one aligned pointer is enough: congruent,
/// the other is aligned too; not, the prologue does nothing.
fn proves_aligned(c: &Condition, a: &Align) -> bool {
    match *c {
        Condition::Aligned { pointer, to } if to >= a.to => match (pointer, a.pointer) {
            (AlignPointer::Congruent, _) => false,
            (AlignPointer::Both, _) | (_, AlignPointer::Both) => true,
            (p, q) => p == q,
        },
        _ => false,
    }
}

/// Remove `jmp L` where `L` is the next label anyway.
fn drop_jumps_to_next(ops: &mut Vec<Op>) {
    let mut i = 0;
    while i < ops.len() {
        if let Op::Jump(target) = &ops[i] {
            let next = ops[i + 1..].iter().find(|o| !matches!(o, Op::Comment(_)));
            if matches!(next, Some(Op::Label(l)) if l == target) {
                ops.remove(i);
                continue;
            }
        }
        i += 1;
    }
}

/// Progress after storing `width` bytes at `at`.
fn after_store(p: Progress, width: u32, at: At) -> Progress {
    match at {
        At::Start(off) if off <= p.done => Progress {
            done: p.done.max(off + width),
            dirty: p.dirty,
        },
        // A store past the known prefix, or relative to the end: the
        // frontier is no longer known statically.
        _ => Progress {
            done: p.done,
            dirty: true,
        },
    }
}

fn unit_suffix(unit: u32) -> &'static str {
    match unit {
        1 => "b",
        2 => "w",
        4 => "l",
        _ => "q",
    }
}

fn range_text(lo: u64, hi: Option<u64>) -> String {
    match hi {
        Some(h) => format!("{lo}..={h}"),
        None => format!("{lo}.."),
    }
}

fn range_fact(lo: u64, hi: Option<u64>) -> String {
    match hi {
        Some(h) if h == lo => format!("len == {lo}"),
        Some(h) => format!("{lo} <= len <= {h}"),
        None => format!("len >= {lo}"),
    }
}

fn condition_text(c: &Condition) -> String {
    match c {
        Condition::Alias { lo, hi } => format!("(dst - src) mod 4096 in {lo}..={hi}"),
        Condition::Aligned {
            pointer: AlignPointer::Congruent,
            to,
        } => {
            format!("dst and src congruent modulo {to}")
        }
        Condition::Aligned { pointer, to } => {
            let which = match pointer {
                AlignPointer::Dst => "dst",
                AlignPointer::Src => "src",
                _ => "dst and src",
            };
            format!("{which} {to}-byte aligned")
        }
    }
}
