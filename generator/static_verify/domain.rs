//! The abstract domain: what the analysis knows about each register and
//! stack slot, the length bound, and the last compare.

use std::collections::BTreeMap;

use super::abi::NREGS;

pub(super) const DST: u32 = 1 << 16;
pub(super) const SRC: u32 = 1 << 17;
pub(super) const LEN: u32 = 1 << 18;
pub(super) const RETADDR: u32 = 1 << 19;
pub(super) const OTHER: u32 = 1 << 20;
/// A known constant (`off` holds it): ARM builds big offsets in ip.
pub(super) const CONST: u32 = 1 << 21;
pub(super) const PTRS: u32 = SRC | DST;

/// One register or stack slot. `off` is meaningful when `tags` is exactly
/// `SRC` (`src_end - value == LEN + off`), `LEN` (`value == LEN + off`) or
/// `CONST` (`value == off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Val {
    pub(super) tags: u32,
    pub(super) off: Option<i64>,
}

impl Val {
    pub(super) const OTHER: Val = Val {
        tags: OTHER,
        off: None,
    };
    pub(super) fn orig(r: usize) -> Val {
        Val {
            tags: 1 << r,
            off: None,
        }
    }
    pub(super) fn tagged(tags: u32, off: Option<i64>) -> Val {
        Val { tags, off }
    }
    pub(super) fn konst(k: i64) -> Val {
        Val {
            tags: CONST,
            off: Some(k),
        }
    }
    pub(super) fn konst_value(self) -> Option<i64> {
        self.off.filter(|_| self.tags == CONST)
    }
    pub(super) fn is_ptr(self) -> bool {
        self.tags & PTRS != 0
    }
    pub(super) fn join(self, o: Val) -> Val {
        let tags = self.tags | o.tags;
        let off = if self.tags == o.tags && self.off == o.off {
            self.off
        } else {
            None
        };
        Val { tags, off }
    }
}

/// `a + sign * b`: a pointer moved by anything is still that pointer (the
/// source pointer and the length keep their offsets when `b` is a known
/// constant); anything else is just a value.
pub(super) fn add_val(a: Val, b: Val, sign: i64) -> Val {
    if let Some(k) = b.konst_value() {
        let k = sign * k;
        return if a.tags == SRC {
            Val::tagged(SRC, a.off.map(|c| c - k))
        } else if a.tags == LEN {
            Val::tagged(LEN, a.off.map(|o| o + k))
        } else if let Some(c) = a.konst_value() {
            Val::konst(c + k)
        } else if a.is_ptr() {
            Val::tagged(a.tags & PTRS, None)
        } else {
            Val::OTHER
        };
    }
    if sign > 0 && a.konst_value().is_some() && b.tags == SRC {
        return add_val(b, a, 1);
    }
    match (a.is_ptr(), b.is_ptr()) {
        (true, false) => Val::tagged(a.tags & PTRS, None),
        (false, true) if sign > 0 => Val::tagged(b.tags & PTRS, None),
        _ => Val::OTHER,
    }
}

/// `LEN >= value`, established by the compare at `origin`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Bound {
    pub(super) value: i64,
    pub(super) origin: Option<u64>,
}

/// The last flag-setting compare of a register with a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cmp {
    pub(super) reg: usize,
    pub(super) imm: i64,
    /// `test r, r` rather than `cmp $imm, r`.
    pub(super) test: bool,
    /// Analysis address of the compare.
    pub(super) addr: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    /// General registers (ARM: r15 holds the value a return jumps to).
    pub(super) regs: [Val; NREGS],
    /// Stack slots by offset from the entry stack pointer.
    pub(super) stack: BTreeMap<i64, Val>,
    /// Stack pointer relative to entry; None once unknown.
    pub(super) sp: Option<i64>,
    pub(super) lb: Bound,
    pub(super) flags: Option<Cmp>,
}

impl State {
    /// Re-base the ghost `LEN` on the lowest-numbered length register, so
    /// loop heads see the same offsets on every iteration.
    pub(super) fn normalize(&mut self) {
        let Some(o) = self.regs.iter().find(|v| v.tags == LEN).and_then(|v| v.off) else {
            return;
        };
        let shift = |v: &mut Val| {
            if let Some(x) = v.off.as_mut() {
                if v.tags == LEN || v.tags == SRC {
                    *x -= o;
                }
            }
        };
        self.regs.iter_mut().for_each(shift);
        self.stack.values_mut().for_each(shift);
        // A pending compare names a register, whose offset moved with it.
        self.lb.value += o;
        // LEN is now a register's unsigned value: never below 0.
        if self.lb.value < 0 {
            self.lb = Bound {
                value: 0,
                origin: None,
            };
        }
    }

    pub(super) fn join(&self, o: &State) -> State {
        let mut regs = self.regs;
        for (r, v) in regs.iter_mut().zip(o.regs.iter()) {
            *r = r.join(*v);
        }
        let mut stack = BTreeMap::new();
        for k in self.stack.keys().chain(o.stack.keys()) {
            let a = self.stack.get(k).copied().unwrap_or(Val::OTHER);
            let b = o.stack.get(k).copied().unwrap_or(Val::OTHER);
            stack.insert(*k, a.join(b));
        }
        let sp = if self.sp == o.sp { self.sp } else { None };
        let lb = if self.lb.value <= o.lb.value {
            self.lb
        } else {
            o.lb
        };
        let flags = if self.flags == o.flags {
            self.flags
        } else {
            None
        };
        State {
            regs,
            stack,
            sp,
            lb,
            flags,
        }
    }
}
