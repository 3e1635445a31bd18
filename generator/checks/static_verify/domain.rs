//! The abstract domain: what the analysis knows about each register and
//! stack slot, the length bound, and the last compare.

use std::collections::BTreeMap;

use super::abi::NREGS;

pub(super) const DST: u32 = 1 << 16;
pub(super) const SRC: u32 = 1 << 17;
pub(super) const LEN: u32 = 1 << 18;
pub(super) const RETADDR: u32 = 1 << 19;
/// An integer that derives from neither pointer (loaded data, flags, a
/// computed count): never an address by itself.
pub(super) const OTHER: u32 = 1 << 20;
/// A constant (`off` holds it when known; `range` bounds it): ARM builds
/// big offsets in ip, and computed jumps index by bounded values.
pub(super) const CONST: u32 = 1 << 21;
/// Anything at all, a user pointer included (an unknown stack slot, a
/// call's result): what the analysis cannot follow.
pub(super) const ANY: u32 = 1 << 22;
/// Derives from the stack pointer: the routine's own (kernel) stack.
pub(super) const STACK: u32 = 1 << 23;
pub(super) const PTRS: u32 = SRC | DST;
/// `1 << r`: holds register r's entry value, exactly.
const ENTRY_VALUES: u32 = 0xffff;
/// Tags of plain integers: they say nothing about where a value points.
pub(super) const INTS: u32 = LEN | OTHER | CONST;
/// Low bits known up to this many (a page: enough for any access width).
const LOW_BITS: u8 = 12;

/// One register or stack slot: the set of things it may derive from
/// (`tags`: the pointers, the length, entry values `1 << r`, ...), plus
/// what is known of its value. `off` is meaningful when `tags` is exactly
/// `SRC` (`src_end - value == LEN + off`), `DST` (`dst_end - value == LEN +
/// off`), `LEN` (`value == LEN + off`),
/// `CONST` (`value == off`) or `STACK` (`value == entry sp + off`: a frame
/// pointer, through which stack slots are addressed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Val {
    pub(super) tags: u32,
    pub(super) off: Option<i64>,
    /// `CONST`: the value lies in `lo..=hi`.
    pub(super) range: Option<(i64, i64)>,
    /// Known low bits: `value mod 2^bits == residue` (`bits` 0: nothing known).
    pub(super) low: Low,
}

/// `value mod 2^bits == residue`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Low {
    pub(super) bits: u8,
    pub(super) residue: u64,
}

impl Low {
    fn of(k: i64) -> Low {
        Low {
            bits: LOW_BITS,
            residue: k as u64 & ((1 << LOW_BITS) - 1),
        }
    }
    /// Known to be zero in the low `bits` bits.
    pub(super) fn zeros(bits: u8) -> Low {
        Low { bits, residue: 0 }
    }
    fn mask(self) -> u64 {
        (1u64 << self.bits) - 1
    }
    /// After adding `k`.
    pub(super) fn add(self, k: i64) -> Low {
        Low {
            bits: self.bits,
            residue: self.residue.wrapping_add(k as u64) & self.mask(),
        }
    }
    /// After adding a value whose low bits are `o` (or subtracting it,
    /// `sign` -1): known as far as both are.
    pub(super) fn add_low(self, o: Low, sign: i64) -> Low {
        let bits = self.bits.min(o.bits);
        let o = o.residue.wrapping_mul(sign as u64);
        Low {
            bits,
            residue: self.residue.wrapping_add(o) & ((1 << bits) - 1),
        }
    }
    /// Of `-value`.
    pub(super) fn neg(self) -> Low {
        Low::zeros(self.bits).add_low(self, -1)
    }
    /// Of `value * k` (`k` > 0): a power of two shifts what is known up.
    pub(super) fn times(self, k: i64) -> Low {
        let shift = if k > 0 && (k as u64).is_power_of_two() {
            k.trailing_zeros() as u8
        } else {
            0
        };
        let bits = (self.bits + shift).min(LOW_BITS);
        Low {
            bits,
            residue: self.residue.wrapping_mul(k as u64) & ((1 << bits) - 1),
        }
    }
    /// The low bits both know.
    fn join(self, o: Low) -> Low {
        let mut bits = self.bits.min(o.bits);
        while bits > 0 && (self.residue ^ o.residue) & ((1 << bits) - 1) != 0 {
            bits -= 1;
        }
        Low {
            bits,
            residue: self.residue & ((1 << bits) - 1),
        }
    }
    /// Also known: the bits under `mask` (contiguous from bit 0) are zero.
    pub(super) fn and_zero(self, mask: u64) -> Low {
        let bits = (64 - mask.leading_zeros()) as u8;
        if mask.wrapping_add(1) & mask != 0 || bits > LOW_BITS {
            return self;
        }
        if bits >= self.bits {
            Low::zeros(bits)
        } else {
            Low {
                bits: self.bits,
                residue: self.residue & !mask,
            }
        }
    }
    /// `value + k` is a multiple of `width` (a power of two).
    pub(super) fn aligned(self, k: i64, width: usize) -> bool {
        width.is_power_of_two()
            && (width as u64) <= 1 << self.bits
            && self.residue.wrapping_add(k as u64) & (width as u64 - 1) == 0
    }
}

impl Val {
    pub(super) const OTHER: Val = Val {
        tags: OTHER,
        off: None,
        range: None,
        low: Low {
            bits: 0,
            residue: 0,
        },
    };
    pub(super) const ANY: Val = Val {
        tags: ANY,
        ..Val::OTHER
    };
    pub(super) fn orig(r: usize) -> Val {
        Val::tagged(1 << r, None)
    }
    pub(super) fn tagged(tags: u32, off: Option<i64>) -> Val {
        Val {
            tags,
            off,
            ..Val::OTHER
        }
    }
    pub(super) fn konst(k: i64) -> Val {
        Val {
            tags: CONST,
            off: Some(k),
            range: Some((k, k)),
            low: Low::of(k),
        }
    }
    /// The address `off` bytes from the entry stack pointer (None: somewhere
    /// on the own stack).
    pub(super) fn stack(off: Option<i64>) -> Val {
        Val::tagged(STACK, off)
    }
    /// Its offset from the entry stack pointer, when it is a known one.
    pub(super) fn stack_offset(self) -> Option<i64> {
        self.off.filter(|_| self.tags == STACK)
    }
    /// A constant in `lo..=hi`.
    pub(super) fn bounded(lo: i64, hi: i64) -> Val {
        if lo == hi {
            return Val::konst(lo);
        }
        Val {
            tags: CONST,
            range: Some((lo, hi)),
            ..Val::OTHER
        }
    }
    /// What an operation computes from `inputs` when nothing more is known:
    /// it may derive from whatever they derive from (a pointer ± anything
    /// is still possibly that pointer), and is a plain integer otherwise.
    /// Something computed from an entry value no longer is that value: it
    /// is unknown.
    pub(super) fn derived(inputs: impl IntoIterator<Item = Val>) -> Val {
        let mut tags = inputs.into_iter().fold(0, |t, v| t | v.tags) & !INTS;
        if tags & ENTRY_VALUES != 0 {
            tags = (tags & !ENTRY_VALUES) | ANY;
        }
        if tags == 0 {
            Val::OTHER
        } else {
            Val::tagged(tags, None)
        }
    }
    /// `value & mask` for a small `mask` (below 2^16): a constant when the
    /// known low bits cover the mask (`ands ip, r0, #3` on a destination
    /// of known alignment), else an integer in `0..=mask`.
    pub(super) fn masked(self, mask: u64) -> Val {
        if mask >> self.low.bits == 0 {
            Val::konst((self.low.residue & mask) as i64)
        } else {
            // (`and $7` of a value known mod 4: still known mod 4.)
            Val::bounded(0, mask as i64).with_low(Low {
                bits: self.low.bits,
                residue: self.low.residue & mask,
            })
        }
    }
    pub(super) fn with_low(self, low: Low) -> Val {
        Val { low, ..self }
    }
    pub(super) fn konst_value(self) -> Option<i64> {
        self.off.filter(|_| self.tags == CONST)
    }
    /// `lo..=hi` of a bounded constant.
    pub(super) fn range(self) -> Option<(i64, i64)> {
        self.range.filter(|_| self.tags == CONST)
    }
    pub(super) fn join(self, o: Val) -> Val {
        let tags = self.tags | o.tags;
        let off = if self.tags == o.tags && self.off == o.off {
            self.off
        } else {
            None
        };
        let range = match (self.range, o.range) {
            (Some((a, b)), Some((c, d))) if tags == CONST => Some((a.min(c), b.max(d))),
            _ => None,
        };
        Val {
            tags,
            off,
            range,
            low: self.low.join(o.low),
        }
    }
}

/// `a + sign * b`: a pointer moved by anything is still that pointer (the
/// source pointer and the length keep their offsets, and a pointer its low
/// bits, when `b` is a known constant); the difference of two pointers
/// derives from both; anything else is just a value.
pub(super) fn add_val(a: Val, b: Val, sign: i64) -> Val {
    if let Some(k) = b.konst_value() {
        let k = sign * k;
        let low = a.low.add(k);
        return if a.tags == SRC || a.tags == DST {
            Val::tagged(a.tags, a.off.map(|c| c - k)).with_low(low)
        } else if a.tags == LEN || a.tags == STACK {
            Val::tagged(a.tags, a.off.map(|o| o + k)).with_low(low)
        } else if let Some(c) = a.konst_value() {
            Val::konst(c + k)
        } else {
            Val::derived([a]).with_low(low)
        };
    }
    // `p - q` of two pointers of one kind is an offset, no pointer: 6.12's
    // `lea 8(%rdi), %rax; and $-8, %rax; sub %rdi, %rax` is the distance to
    // dst's next boundary, which then moves both pointers and the length.
    if sign < 0 && a.tags == b.tags && [SRC, DST, STACK].contains(&a.tags) {
        return Val::OTHER;
    }
    // `k + v` is `v + k` (RISC-V's `mv a0, a2` is `add a0, x0, a2`).
    if sign > 0 && a.konst_value().is_some() && [SRC, DST, LEN, STACK].contains(&b.tags) {
        return add_val(b, a, 1);
    }
    Val::derived([a, b])
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
    /// Non-zero: `test $mask, r` (`tst r, #mask`): Z says whether
    /// `r & mask` is zero.
    pub(super) mask: u64,
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
    /// The stored prefix: the bytes `to[0..F)` are known stored, with
    /// `dst_end - (to + F) == LEN + stored` (None: not known). A fixup path
    /// must return `n - F`, which is `LEN + stored`.
    pub(super) stored: Option<i64>,
    /// The state lies on a path from a fixup (a fault was taken).
    pub(super) faulted: bool,
    /// On a path from a fixup, a store started this many bytes past the
    /// stored prefix (the most seen): the bytes between are never copied.
    pub(super) gap: Option<(i64, u64)>,
}

impl State {
    /// Re-base the ghost `LEN` on the lowest-numbered length register, so
    /// loop heads see the same offsets on every iteration.
    ///
    /// Every value with an offset against `LEN` moves with the ghost, the
    /// stored prefix too.
    pub(super) fn normalize(&mut self) {
        // (Without a length register, on the destination pointer: a loop
        // that counts in words still moves it by the same step each round.)
        let by_len = self.regs.iter().find(|v| v.tags == LEN).and_then(|v| v.off);
        let Some(o) = by_len.or_else(|| {
            self.regs
                .iter()
                .find(|v| v.tags == DST)
                .and_then(|v| v.off)
                .filter(|&o| o != 0)
        }) else {
            return;
        };
        let shift = |v: &mut Val| {
            if let Some(x) = v.off.as_mut() {
                if v.tags == LEN || v.tags == SRC || v.tags == DST {
                    *x -= o;
                }
            }
        };
        self.regs.iter_mut().for_each(shift);
        self.stack.values_mut().for_each(shift);
        if let Some(x) = self.stored.as_mut() {
            *x -= o;
        }
        // A pending compare names a register, whose offset moved with it.
        self.lb.value += o;
        // LEN is now a register's unsigned value: never below 0.
        if by_len.is_some() && self.lb.value < 0 {
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
            let a = self.stack.get(k).copied().unwrap_or(Val::ANY);
            let b = o.stack.get(k).copied().unwrap_or(Val::ANY);
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
            stored: if self.stored == o.stored {
                self.stored
            } else {
                None
            },
            faulted: self.faulted || o.faulted,
            gap: self.gap.max(o.gap),
        }
    }
}
