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
    /// `CONST` (or `LEN`, where known): the value lies in `lo..=hi`.
    pub(super) range: Option<(i64, i64)>,
    /// Known low bits: `value mod 2^bits == residue` (`bits` 0: nothing known).
    pub(super) low: Low,
    /// An integer of unknown value, named by where it was computed: two
    /// values with one name are equal (see [`State::track`]).
    pub(super) sym: Option<u64>,
    /// A pointer or length moved by a named unknown amount: `off` is lost
    /// until every value tied to `LEN` has moved by it alike.
    pub(super) moved: Option<Moved>,
    /// A pointer rounded down to a multiple of `2^bits` from the one at
    /// offset `off` (as `tags` reads it): `(off, bits)`.
    pub(super) floor: Option<(i64, u8)>,
    /// A piece of a length `LEN + off` cut apart by a shift or a mask.
    pub(super) part: Option<LenPart>,
}

/// A piece of the length `LEN + off`: a `rep movsq` counts in words,
/// `(LEN + off) >> 3` in its count register and the remainder `(LEN + off)
/// mod 8` in another, and its fixup puts `remainder + 8 * words` back
/// together. Both pieces keep their relation when the ghost moves by whole
/// words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LenPart {
    pub(super) off: i64,
    pub(super) bits: u8,
    pub(super) cut: Cut,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cut {
    /// `value == (LEN + off) mod 2^bits`.
    Low,
    /// `value == (LEN + off) >> bits`.
    High,
    /// `value == ((LEN + off) >> bits) << bits`: the bytes of the count's
    /// elements (6.1's fixup `shll $6, %ecx`).
    Floor,
}

impl LenPart {
    /// The piece `cut` of `LEN + off` at `bits`. A remainder depends on
    /// `off` only modulo `2^bits`: it is kept in `0..2^bits`, so one
    /// relation has one form (a loop that moves the ghost by whole words
    /// leaves it as it was).
    pub(super) fn new(off: i64, bits: u8, cut: Cut) -> LenPart {
        let off = match cut {
            Cut::Low if bits < 63 => off.rem_euclid(1 << bits),
            _ => off,
        };
        LenPart { off, bits, cut }
    }

    /// The remainder that goes with this count of `2^bits`-byte elements.
    pub(super) fn remainder(self) -> LenPart {
        LenPart::new(self.off, self.bits, Cut::Low)
    }

    /// Still true once the ghost has moved by a multiple of `2^bits` and
    /// the value by its own share: a remainder of at most `bits` bits, or
    /// (`moved`, as the count moves) the count of `2^bits`-byte elements.
    pub(super) fn survives_steps(self, bits: u8, moved: bool) -> bool {
        match self.cut {
            Cut::Low => self.bits <= bits,
            Cut::High => moved && self.bits == bits,
            Cut::Floor => false,
        }
    }
}

/// A value that had offset `off` against `LEN` (as `tags` reads it) before
/// the integer named `sym` was added to or taken from it: now its relation
/// reads `LEN + off + coef * S`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Moved {
    pub(super) off: i64,
    pub(super) sym: u64,
    pub(super) coef: i64,
    /// `lo..=hi` of `S`, when known.
    pub(super) range: Option<(i64, i64)>,
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
        sym: None,
        moved: None,
        floor: None,
        part: None,
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
            ..Val::OTHER
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
    /// Of the length (or a remainder of it) and a mask of low bits, the
    /// remainder it leaves is known as a [`LenPart`].
    pub(super) fn masked(self, mask: u64) -> Val {
        let v = if mask >> self.low.bits == 0 {
            Val::konst((self.low.residue & mask) as i64)
        } else {
            // (`and $7` of a value known mod 4: still known mod 4.)
            Val::bounded(0, mask as i64).with_low(Low {
                bits: self.low.bits,
                residue: self.low.residue & mask,
            })
        };
        let bits = (64 - mask.leading_zeros()) as u8;
        let low_of = match self.part {
            _ if mask.wrapping_add(1) & mask != 0 => None,
            _ if self.tags == LEN => self.off,
            Some(p) if p.cut == Cut::Low && p.bits >= bits => Some(p.off),
            _ => None,
        };
        Val {
            part: low_of.map(|off| LenPart::new(off, bits, Cut::Low)),
            ..v
        }
    }

    /// `value >> bits` (a full-width logical shift): of the length, the
    /// count of its `2^bits`-byte elements.
    pub(super) fn shifted_right(self, bits: u8) -> Val {
        Val {
            part: self
                .off
                .filter(|_| self.tags == LEN && (1..64).contains(&bits))
                .map(|off| LenPart::new(off, bits, Cut::High)),
            ..Val::OTHER
        }
    }

    /// What a 32-bit register write of this 64-bit value leaves (zero
    /// extended): the same value when it is known to fit, else of the
    /// length its low 32 bits, else an integer it derives from.
    pub(super) fn low32(self) -> Val {
        let fits = |(lo, hi): (i64, i64)| lo >= 0 && hi <= u32::MAX as i64;
        if [CONST, LEN].contains(&self.tags) && self.range.is_some_and(fits) {
            return self;
        }
        let part = match self.part {
            _ if self.tags == LEN => self.off.map(|off| LenPart::new(off, 32, Cut::Low)),
            Some(p) if p.cut == Cut::Low && p.bits <= 32 => Some(p),
            _ => None,
        };
        Val {
            part,
            ..Val::derived([self])
        }
    }

    /// A 32-bit step by `k` of the length `LEN + off` in `lo..=hi` (what
    /// [`State::len_range`] gives), known to fit in 32 bits before and after
    /// (`sub $8, %ecx` in 6.12's word loop): the same step as a full-width
    /// one.
    pub(super) fn step32(self, k: i64, (lo, hi): (i64, i64)) -> Option<Val> {
        let (lo, hi) = (lo.checked_add(k)?, hi.checked_add(k)?);
        (self.tags == LEN && self.off.is_some() && lo >= 0 && hi <= u32::MAX as i64).then(|| Val {
            range: Some((lo, hi)),
            ..add_val(self, Val::konst(k), 1)
        })
    }

    /// `k` added to a count of `2^bits`-byte elements, `(LEN + off) >>
    /// bits` (`decl %ecx` in 6.1's word loop): the count of `LEN + off + k *
    /// 2^bits`, when the length holds the elements taken (`lb`: `LEN >= lb`).
    pub(super) fn count_step(self, k: i64, lb: i64) -> Option<Val> {
        let p = self.part.filter(|p| p.cut == Cut::High && p.bits < 32)?;
        let bytes = k.checked_mul(1 << p.bits)?;
        let off = p.off.checked_add(bytes)?;
        (lb.checked_add(off)? >= 0).then(|| Val {
            part: Some(LenPart::new(off, p.bits, Cut::High)),
            ..Val::OTHER
        })
    }

    /// `value << bits`: of a count of `2^bits`-byte elements, their bytes.
    pub(super) fn shifted_left(self, bits: u8) -> Val {
        let part = self
            .part
            .filter(|p| p.cut == Cut::High && p.bits == bits)
            .map(|p| LenPart::new(p.off, bits, Cut::Floor));
        let low = if bits < LOW_BITS {
            self.low.times(1 << bits)
        } else {
            Low::zeros(LOW_BITS)
        };
        Val {
            part,
            ..Val::derived([self]).with_low(low)
        }
    }

    /// The sum `rem + (count << bits)` of a length's two pieces: the length.
    pub(super) fn joined_parts(rem: Val, count: Val, bits: u8) -> Option<i64> {
        match (rem.part?, count.part?) {
            (r, c) if c.cut == Cut::High && c.bits == bits && r == c.remainder() => Some(c.off),
            _ => None,
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
            (Some((a, b)), Some((c, d))) if tags == CONST || tags == LEN => {
                Some((a.min(c), b.max(d)))
            }
            _ => None,
        };
        Val {
            tags,
            off,
            range,
            low: self.low.join(o.low),
            sym: self.sym.filter(|_| self.sym == o.sym),
            moved: match (self.moved, o.moved) {
                // (Moved alike by a value of two ranges: by one of their hull.)
                (Some(a), Some(b)) if (a.off, a.sym, a.coef) == (b.off, b.sym, b.coef) => {
                    Some(Moved {
                        range: a
                            .range
                            .zip(b.range)
                            .map(|((p, q), (r, t))| (p.min(r), q.max(t))),
                        ..a
                    })
                }
                _ => None,
            },
            floor: self
                .floor
                .filter(|_| self.floor == o.floor && self.tags == o.tags),
            part: self.part.filter(|_| self.part == o.part),
        }
    }

    /// `value & k` for a mask that clears low bits (`and $-8`): a pointer
    /// stays one, now aligned; rounded from a known offset, it remembers it.
    pub(super) fn rounded_down(self, k: i64) -> Val {
        let bits = (!k).trailing_ones() as u8;
        let aligned = k < 0 && (k as u64).trailing_zeros() == bits as u32 && bits <= LOW_BITS;
        let from = self
            .off
            .filter(|_| aligned && [SRC, DST].contains(&self.tags));
        Val {
            floor: from.map(|o| (o, bits)),
            ..Val::derived([self]).with_low(self.low.and_zero(!(k as u64)))
        }
    }

    /// Tied to `LEN` by its offset: the source or destination pointer, or
    /// the length, with a known offset.
    pub(super) fn tied(self) -> bool {
        self.off.is_some() && [SRC, DST, LEN].contains(&self.tags)
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
        // `p + k` rounded down to `2^bits`, less `p`: `k - (2^bits - 1)
        // ..= k` (the offsets read `end - value`).
        let k = a.floor.zip(b.off).and_then(|((f, bits), e)| {
            let k = e.checked_sub(f)?;
            Some((k.checked_sub((1 << bits) - 1)?, k))
        });
        return k.map_or(Val::OTHER, |(lo, hi)| Val::bounded(lo, hi));
    }
    // `k + v` is `v + k` (RISC-V's `mv a0, a2` is `add a0, x0, a2`).
    if sign > 0 && a.konst_value().is_some() && [SRC, DST, LEN, STACK].contains(&b.tags) {
        return add_val(b, a, 1);
    }
    // A remainder and the bytes of the elements, `(LEN + o) mod 2^bits` and
    // `((LEN + o) >> bits) << bits` (6.1's `addl %ecx, %edx` after `shll $6,
    // %ecx`): the length.
    if let (Some(p), Some(q), 1) = (a.part, b.part, sign) {
        let (rem, floor) = if p.cut == Cut::Low { (p, q) } else { (q, p) };
        if floor.cut == Cut::Floor && rem == LenPart::new(floor.off, floor.bits, Cut::Low) {
            return Val::tagged(LEN, Some(floor.off));
        }
    }
    // A value moved by a named integer, moved by it again (6.1's alignment
    // fixup: `addl %ecx, %edx` after `subl %ecx, %edx`): back where it was
    // when the two cancel. (The named integer first, `%ecx + %edx`: the
    // same sum.)
    if sign > 0
        && a.moved.is_none()
        && a.sym.is_some()
        && b.moved.map(|m| m.sym) == a.sym
        && a.tags & !INTS == 0
    {
        return add_val(b, a, 1);
    }
    if let (Some(m), Some(sym)) = (a.moved, b.sym.filter(|_| b.tags & !INTS == 0)) {
        let step = if a.tags == LEN { sign } else { -sign };
        if m.sym == sym && [SRC, DST, LEN].contains(&a.tags) {
            let low = a.low.add_low(b.low, sign);
            return match m.coef + step {
                0 => Val::tagged(a.tags, Some(m.off)).with_low(low),
                coef => Val {
                    moved: Some(Moved { coef, ..m }),
                    ..Val::tagged(a.tags, None).with_low(low)
                },
            };
        }
    }
    // A tied value moved by a named integer (x86's word alignment: `add
    // %rax, %rsi; add %rax, %rdi; sub %rax, %rdx` with rax the distance to
    // the boundary): its offset waits until the others have moved alike.
    if let (true, Some(sym)) = (a.tied(), b.sym.filter(|_| b.tags & !INTS == 0)) {
        let coef = if a.tags == LEN { sign } else { -sign };
        return Val {
            moved: a.off.map(|off| Moved {
                off,
                sym,
                coef,
                range: b.range(),
            }),
            ..Val::tagged(a.tags, None).with_low(a.low.add_low(b.low, sign))
        };
    }
    if sign > 0 && b.tied() && a.sym.is_some() && a.tags & !INTS == 0 {
        return add_val(b, a, 1);
    }
    Val::derived([a, b])
}

/// The name of the unknown integer instruction `addr` writes into register
/// `r`.
pub(super) fn site_sym(addr: u64, r: usize) -> u64 {
    (addr << 8) | r as u64
}

/// The name [`State::join_at`] gives an integer register `r` holds where
/// paths join at `addr` (bit 7 set: no instruction's name).
fn join_sym(addr: u64, r: usize) -> u64 {
    site_sym(addr, r) | 0x80
}

/// What survives an alignment loop: for every `b` in `bits..=LOW_BITS`,
/// `LEN - t_b >= value - (2^b - 1)`, where `t_b` is how far the pointer
/// `ptr` (`SRC` or `DST`) at offset `at` (`end - p == LEN + at`) lies below
/// the next multiple of `2^b`. A byte step of a pointer known not to be
/// aligned takes one off `t_b` and one off the length; where the loop
/// leaves, aligned, `t_b` is 0 and `LEN >= value - (2^b - 1)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Credit {
    pub(super) ptr: u32,
    pub(super) at: i64,
    pub(super) bits: u8,
    pub(super) value: i64,
    pub(super) origin: Option<u64>,
}

impl Credit {
    /// What a plain bound says of any pointer: `t_b <= 2^b - 1`.
    fn of(lb: Bound, ptr: u32, at: i64) -> Credit {
        Credit {
            ptr,
            at,
            bits: 0,
            value: lb.value,
            origin: lb.origin,
        }
    }
    fn join(self, o: Credit) -> Option<Credit> {
        ((self.ptr, self.at) == (o.ptr, o.at)).then(|| Credit {
            bits: self.bits.max(o.bits),
            ..if self.value <= o.value { self } else { o }
        })
    }
    /// The bound it gives where the pointer is a multiple of `2^bits`.
    pub(super) fn at_aligned(self, bits: u8) -> Option<Bound> {
        (self.bits..=LOW_BITS).contains(&bits).then(|| Bound {
            value: self.value - ((1 << bits) - 1),
            origin: self.origin,
        })
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
    /// Non-zero: `test $mask, r` (`tst r, #mask`): Z says whether
    /// `r & mask` is zero.
    pub(super) mask: u64,
    /// Analysis address of the compare.
    pub(super) addr: u64,
    /// RISC-V, which has no flags: the register that holds `reg & mask`
    /// (`andi t5, a0, 31; beqz t5`), which a branch on it against zero
    /// tests.
    pub(super) via: Option<usize>,
    /// The compare read the whole register (x86's `cmp $k, %rcx`, not
    /// `%ecx`): the edge where it is below `imm` bounds the register.
    pub(super) full: bool,
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
    /// The bound an alignment loop keeps (None: only what `lb` says).
    pub(super) credit: Option<Credit>,
    /// The pointer (`SRC` or `DST`) at this offset is not a multiple of
    /// `2^bits` (the edge of a failed alignment test): `(ptr, offset,
    /// bits)`.
    pub(super) unaligned: Option<(u32, i64, u8)>,
    /// The convention's length register, which the ghost is re-based on
    /// first: a copy of the length left in another register (the C
    /// convention's `mov %rdx, %rcx` before a `rep movs`) does not move
    /// with a loop that counts in this one.
    pub(super) count_reg: Option<usize>,
    /// The ghost's value, where known: a fixed-size entry's constant size,
    /// moved as the ghost is re-based. While it is known, a constant in the
    /// length register is the length, less what is copied.
    pub(super) len_value: Option<i64>,
    /// The most the ghost can be (None: anything): a 32-bit length is below
    /// 2^32 at the entry and only shrinks as bytes are copied, so a value
    /// `LEN + o` it bounds is what a 32-bit register holds of it.
    pub(super) len_max: Option<i64>,
    /// Registers (`1 << r`) whose upper 32 bits the caller left undefined
    /// (x86_64's 32-bit length argument), until a full write: the analysis
    /// takes them as zero, and the routine may read only the low half.
    pub(super) upper_undefined: u32,
}

impl State {
    /// `f` on every register and stack slot.
    pub(super) fn each_val(&mut self, f: impl FnMut(&mut Val)) {
        self.regs
            .iter_mut()
            .chain(self.stack.values_mut())
            .for_each(f);
    }

    /// Re-base the ghost `LEN` on the convention's length register, else
    /// the lowest-numbered length register, so loop heads see the same
    /// offsets on every iteration.
    ///
    /// Every value with an offset against `LEN` moves with the ghost, the
    /// stored prefix too.
    pub(super) fn normalize(&mut self) {
        self.settle_moves();
        // `movl $6, %edx` in a fixed-size entry of 6 bytes: `LEN + 0`.
        if let (Some(l), Some(r)) = (self.len_value, self.count_reg) {
            if let Some(k) = self.regs[r].konst_value() {
                self.regs[r] = Val::tagged(LEN, Some(k - l)).with_low(self.regs[r].low);
            }
        }
        // (The length register that agrees with the destination pointer
        // first: a copy of the length left behind while a loop counts in
        // another register, 6.1's byte loop, does not move with it. Without
        // a length register, on the destination pointer: a loop that counts
        // in words still moves it by the same step each round.)
        let len_off = |v: &Val| (v.tags == LEN).then_some(v.off).flatten();
        let dst_off = self.regs.iter().find(|v| v.tags == DST).and_then(|v| v.off);
        let count = self.count_reg.and_then(|r| len_off(&self.regs[r]));
        let by_len = count
            .filter(|&o| dst_off.is_none_or(|d| d == o))
            .or_else(|| {
                self.regs
                    .iter()
                    .filter_map(len_off)
                    .find(|&o| Some(o) == dst_off)
            })
            .or(count)
            .or_else(|| self.regs.iter().find(|v| v.tags == LEN).and_then(|v| v.off));
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
            if let Some(p) = v.part.as_mut() {
                *p = LenPart::new(p.off - o, p.bits, p.cut);
            }
            if v.tags == LEN || v.tags == SRC || v.tags == DST {
                if let Some(x) = v.off.as_mut() {
                    *x -= o;
                }
                if let Some(m) = v.moved.as_mut() {
                    m.off -= o;
                }
                if let Some((f, _)) = v.floor.as_mut() {
                    *f -= o;
                }
            }
        };
        self.each_val(shift);
        if let Some(x) = self.stored.as_mut() {
            *x -= o;
        }
        // A pending compare names a register, whose offset moved with it.
        self.lb.value += o;
        if let Some(l) = self.len_value.as_mut() {
            *l += o;
        }
        self.len_max = self.len_max.and_then(|m| m.checked_add(o));
        if let Some(c) = self.credit.as_mut() {
            c.at -= o;
            c.value += o;
        }
        if let Some((_, d, _)) = self.unaligned.as_mut() {
            *d -= o;
        }
        // LEN is now a register's unsigned value: never below 0.
        if by_len.is_some() && self.lb.value < 0 {
            self.lb = Bound {
                value: 0,
                origin: None,
            };
        }
        // A credit that says no more than the bound is dropped (so one that
        // falls round after round ends).
        if self.credit.is_some_and(|c| c.value <= self.lb.value) {
            self.credit = None;
        }
    }

    /// Once the length and each pointer have moved by the same named
    /// amount `S` (whatever moved, moved alike; the length among them),
    /// take `coef * S` into the ghost: each keeps its offset. The bound
    /// moves by `S` at its worst (an amount of unknown range leaves 0: the
    /// length register is unsigned). What else was measured against the
    /// old ghost is lost: a copy left behind (i386's arguments, on the
    /// stack or in the registers they came in), the alignment credit, and
    /// the stored prefix but as far as the destination pointer's new place.
    fn settle_moves(&mut self) {
        let vals = || self.regs.iter().chain(self.stack.values());
        let Some(first) = vals().find_map(|v| v.moved) else {
            return;
        };
        let alike = |v: &Val| {
            v.moved
                .is_none_or(|m| (m.sym, m.coef) == (first.sym, first.coef))
        };
        // Every kind still tied has a moved copy (else its move may follow).
        let kind_moved = |t: u32| {
            !vals().any(|v| v.tags == t && v.tied())
                || vals().any(|v| v.tags == t && v.moved.is_some())
        };
        if !vals().all(alike)
            || ![SRC, DST, LEN].into_iter().all(kind_moved)
            || !vals().any(|v| v.tags == LEN && v.moved.is_some())
            // (A pointer moved too: a length left moved where no pointer is
            // any more, i386's `edx` once the saved ones are restored, is a
            // stale copy, not a step of the copy.)
            || !vals().any(|v| [SRC, DST].contains(&v.tags) && v.moved.is_some())
        {
            return;
        }
        // (Every holder saw the same S; the widest range of any is sound.)
        let range = vals()
            .filter_map(|v| v.moved)
            .try_fold((i64::MAX, i64::MIN), |acc, m| {
                m.range.map(|(lo, hi)| (acc.0.min(lo), acc.1.max(hi)))
            });
        // The stored prefix keeps what it knew up to the destination
        // pointer: when it reached at least `S` bytes past the pointer's
        // old place (a word stored, then the pointers moved by 1..=8 to
        // align), it ends at the pointer's new place at the least. The
        // bytes it knew past that are dropped, as an overlapping tail's
        // are: a fixup may not count them.
        let kept = self.stored.and_then(|s| {
            let d = vals().filter(|v| v.tags == DST).find_map(|v| v.moved)?;
            let (_, hi) = range?;
            (first.coef == -1 && hi <= d.off - s).then_some(d.off)
        });
        let settle = |v: &mut Val| {
            v.part = None;
            match v.moved.take() {
                Some(m) => v.off = Some(m.off),
                None if v.tied() => v.off = None,
                None => {}
            }
        };
        self.each_val(settle);
        // `LEN + coef * S` at its least: by the bound on S, else unknown.
        self.lb = match range {
            Some((lo, hi)) => Bound {
                value: if first.coef < 0 {
                    self.lb.value.saturating_sub(hi)
                } else {
                    self.lb.value.saturating_add(lo)
                },
                origin: self.lb.origin,
            },
            None => Bound {
                value: 0,
                origin: None,
            },
        };
        self.stored = kept;
        self.credit = None;
        self.unaligned = None;
        self.len_value = None;
        // (Taking an amount never negative off the ghost keeps its ceiling.)
        let shrinks = first.coef < 0 && range.is_some_and(|(lo, _)| lo >= 0);
        if !shrinks {
            self.len_max = None;
        }
    }

    /// A `rep movs` of `2^bits`-byte elements ran to its end from `before`,
    /// its count (in `count`) `(LEN + o) >> bits`: the pointers `ptrs` moved
    /// by `LEN + o` less the remainder `(LEN + o) mod 2^bits`. Where a
    /// register holds that remainder, the ghost is re-based on it: it reads
    /// `LEN + 0`, below `2^bits`; each pointer keeps its offset less `o`,
    /// and so does the stored prefix when it ended at the destination
    /// pointer. Everything else measured against the old ghost is lost.
    /// A `rep movsb` counted by the length itself (`LEN + o`) leaves nothing:
    /// the ghost is re-based on 0, and its value is known.
    /// Without such a count and remainder, only the prefix is lost.
    pub(super) fn elements_copied(
        &mut self,
        before: &State,
        count: usize,
        ptrs: [usize; 2],
        bits: u8,
    ) {
        let c = before.regs[count]
            .part
            .filter(|p| p.cut == Cut::High && p.bits == bits);
        let rem = c.and_then(|c| {
            let low = c.remainder();
            (0..NREGS)
                .find(|&r| r != count && !ptrs.contains(&r) && before.regs[r].part == Some(low))
        });
        // Bytes counted by the length itself (`LEN + o`): all of it is
        // copied, no remainder is left.
        let whole = before.regs[count]
            .off
            .filter(|_| bits == 0 && before.regs[count].tags == LEN);
        let pointers = ptrs.map(|r| before.regs[r]);
        let tied = pointers
            .iter()
            .all(|v| v.off.is_some() && [SRC, DST].contains(&v.tags));
        let o = match (c, rem) {
            (Some(c), Some(_)) => Some(c.off),
            _ => whole,
        };
        let Some(o) = o.filter(|_| tied) else {
            self.stored = None;
            return;
        };
        let forget = |v: &mut Val| {
            if v.tied() {
                v.off = None;
            }
            v.moved = None;
            v.floor = None;
            v.part = None;
        };
        self.each_val(forget);
        for (r, v) in ptrs.into_iter().zip(pointers) {
            self.regs[r] = Val {
                off: v.off.map(|d| d - o),
                ..Val::tagged(v.tags, None).with_low(self.regs[r].low)
            };
        }
        let dst_at = pointers.iter().find(|v| v.tags == DST).and_then(|v| v.off);
        self.stored = before.stored.filter(|&f| Some(f) == dst_at).map(|f| f - o);
        self.ghost_moved();
        match rem {
            Some(rem) => {
                self.regs[rem] = Val {
                    tags: LEN,
                    off: Some(0),
                    range: Some((0, (1 << bits) - 1)),
                    low: before.regs[rem].low,
                    ..Val::OTHER
                };
                self.len_max = Some((1 << bits) - 1);
            }
            // Nothing left: the ghost is 0, and the count register (0) is
            // the length.
            None => {
                self.regs[count] = Val {
                    tags: LEN,
                    off: Some(0),
                    range: Some((0, 0)),
                    low: Low::of(0),
                    ..Val::OTHER
                };
                self.len_value = Some(0);
                self.len_max = Some(0);
            }
        }
    }

    /// A `rep movsb` counted by the named integer `sym` in `lo..=hi` ran to
    /// its end from `before` (i386's alignment: `(-to) & 7` bytes): the ghost
    /// is re-based on the length less it. The pointers keep their offsets,
    /// and so does the stored prefix when it ended at the destination
    /// pointer; a length moved by `-sym` is where it was; everything else
    /// measured against the old ghost is lost. False (nothing done) unless
    /// both pointers are tied.
    pub(super) fn named_bytes_copied(
        &mut self,
        before: &State,
        ptrs: [usize; 2],
        sym: u64,
        (lo, hi): (i64, i64),
    ) -> bool {
        let pointers = ptrs.map(|r| before.regs[r]);
        if !pointers
            .iter()
            .all(|v| v.off.is_some() && [SRC, DST].contains(&v.tags))
        {
            return false;
        }
        let settle = |v: &mut Val| match v.moved.take() {
            Some(m) if m.sym == sym && m.coef == -1 => v.off = Some(m.off),
            Some(_) => {}
            None if v.tied() => v.off = None,
            None => {}
        };
        self.each_val(settle);
        for (r, v) in ptrs.into_iter().zip(pointers) {
            self.regs[r] = Val {
                off: v.off,
                ..Val::tagged(v.tags, None).with_low(self.regs[r].low)
            };
        }
        let dst_at = pointers.iter().find(|v| v.tags == DST).and_then(|v| v.off);
        self.stored = before.stored.filter(|&f| Some(f) == dst_at);
        self.ghost_moved();
        self.lb.value = before.lb.value.saturating_sub(hi);
        self.len_max = before.len_max.map(|m| m - lo);
        true
    }

    /// The integer named `old` (a `rep movsb` count) and the ghost went down
    /// together by an amount not known, the count now named `new`: a value
    /// moved by `-old` keeps its relation, by `-new`; what moved by it
    /// otherwise loses it.
    pub(super) fn named_count_down(&mut self, old: u64, new: u64) {
        if old != new {
            self.forget_sym(new);
        }
        let restate = |v: &mut Val| {
            if let Some(m) = v.moved.filter(|m| m.sym == old) {
                v.moved = (m.coef == -1).then_some(Moved {
                    sym: new,
                    range: None,
                    ..m
                });
            }
        };
        self.each_val(restate);
    }

    /// The ghost has moved by an amount not known: what bounded it, was
    /// measured against it or gave its value is lost (the bound is 0: the
    /// length register is unsigned).
    pub(super) fn ghost_moved(&mut self) {
        self.lb = Bound {
            value: 0,
            origin: None,
        };
        self.credit = None;
        self.unaligned = None;
        self.len_value = None;
    }

    /// After instruction `addr` ran from `before` (its effect already in
    /// `self`): name the unknown integers it wrote into `written` (a name
    /// is the place it was computed, so a name computed again stands for a
    /// new value: the old one's holders lose it, and what moved by it waits
    /// no more), and take a byte step of a pointer known not to be aligned
    /// into the alignment credit.
    /// (A register already holding the name this instruction gives was
    /// named by it, [`State::sym_stepped`], or holds the same value.)
    pub(super) fn track(&mut self, before: &State, addr: u64, written: &[usize]) {
        for &r in written {
            let sym = site_sym(addr, r);
            if self.regs[r].sym == Some(sym) {
                continue;
            }
            self.forget_sym(sym);
            let v = &mut self.regs[r];
            if v.sym.is_none() && v.tags & !INTS == 0 && v.konst_value().is_none() {
                v.sym = Some(sym);
            }
        }
        let Some((ptr, d, bits)) = before.unaligned else {
            return;
        };
        let stepped = before.regs.iter().zip(&self.regs).any(|(b, a)| {
            b.tags == ptr && a.tags == ptr && b.off == Some(d) && a.off == Some(d - 1)
        });
        if stepped {
            let c = before
                .credit
                .filter(|c| (c.ptr, c.at) == (ptr, d))
                .unwrap_or(Credit::of(before.lb, ptr, d));
            self.credit = Some(Credit {
                at: d - 1,
                bits: c.bits.max(bits),
                value: c.value + 1,
                ..c
            });
            self.unaligned = None;
        }
    }

    /// No holder keeps the name `sym`: it now stands for another value.
    pub(super) fn forget_sym(&mut self, sym: u64) {
        let forget = |v: &mut Val| {
            if v.sym == Some(sym) {
                v.sym = None;
            }
            if v.moved.is_some_and(|m| m.sym == sym) {
                v.moved = None;
            }
        };
        self.each_val(forget);
    }

    /// Every holder of the name `from` calls it `to` (a name fresh here).
    fn rename_sym(&mut self, from: u64, to: u64) {
        let rename = |v: &mut Val| {
            if v.sym == Some(from) {
                v.sym = Some(to);
            }
            if let Some(m) = v.moved.as_mut().filter(|m| m.sym == from) {
                m.sym = to;
            }
        };
        self.each_val(rename);
    }

    /// Register `d`'s integer, named `old`, has been stepped by `k` without
    /// wrapping (`decl %ecx`) and is named `new`: what moved by the old value
    /// moved by the new one less `k` (`LEN + off + c * old` is `LEN + (off -
    /// c * k) + c * new`), and a copy of the old value keeps its name only
    /// if it is not `new`.
    pub(super) fn sym_stepped(&mut self, d: usize, old: u64, new: u64, k: i64) {
        if old != new {
            self.forget_sym(new);
        }
        let restate = |v: &mut Val| {
            if v.sym == Some(new) {
                v.sym = None;
            }
            if let Some(m) = v.moved.as_mut().filter(|m| m.sym == old) {
                m.sym = new;
                m.off -= m.coef * k;
                m.range = m.range.map(|(lo, hi)| (lo + k, hi + k));
            }
        };
        self.each_val(restate);
        self.regs[d].sym = Some(new);
    }

    /// Register `r`'s integer, named `sym`, is not 0: a range of it from 0
    /// (its own, and the one what moved by it keeps) starts at 1.
    pub(super) fn sym_not_zero(&mut self, r: usize, sym: Option<u64>) {
        if let Some((0, hi)) = self.regs[r].range().filter(|&(_, hi)| hi > 0) {
            self.regs[r].range = Some((1, hi));
        }
        let Some(sym) = sym else { return };
        let narrow = |v: &mut Val| {
            if let Some(m) = v.moved.as_mut().filter(|m| m.sym == sym) {
                if let Some((0, hi)) = m.range.filter(|&(_, hi)| hi > 0) {
                    m.range = Some((1, hi));
                }
            }
        };
        self.each_val(narrow);
    }

    /// Register `r`'s integer, named `sym`, is 0 (the edge where a test of
    /// it finds it so): what moved by it is where it was.
    pub(super) fn sym_is_zero(&mut self, r: usize, sym: u64) {
        let settle = |v: &mut Val| {
            if let Some(m) = v.moved.filter(|m| m.sym == sym) {
                v.moved = None;
                v.off = Some(m.off);
            } else if v.sym == Some(sym) {
                *v = Val::konst(0);
            }
        };
        self.each_val(settle);
        self.regs[r] = Val::konst(0);
    }

    /// [`State::join`] at the instruction at `addr`: an integer a register
    /// holds under one name on one side and another on the other (a loop
    /// counter, before the loop and after a round) is the same value there,
    /// named for the place and the register, so what moved by it keeps its
    /// relation.
    pub(super) fn join_at(&self, o: &State, addr: u64) -> State {
        let (mut a, mut b) = (self.clone(), o.clone());
        let plain = |v: &Val| v.tags & !(OTHER | CONST) == 0;
        for r in 0..NREGS {
            let (Some(x), Some(y)) = (a.regs[r].sym, b.regs[r].sym) else {
                continue;
            };
            if x == y || !plain(&a.regs[r]) || !plain(&b.regs[r]) {
                continue;
            }
            let p = join_sym(addr, r);
            for (s, n) in [(&mut a, x), (&mut b, y)] {
                if n != p {
                    s.forget_sym(p);
                    s.rename_sym(n, p);
                }
            }
        }
        a.join(&b)
    }

    /// At a loop head still changing: a length's range that is still
    /// growing (a 32-bit step in the loop) is lost, so the analysis ends.
    pub(super) fn widen_ranges(&mut self, old: &State) {
        let widen = |v: &mut Val, o: Option<&Val>| {
            if v.tags == LEN && o.is_none_or(|o| o.range != v.range) {
                v.range = None;
            }
        };
        for (v, o) in self.regs.iter_mut().zip(&old.regs) {
            widen(v, Some(o));
        }
        for (slot, v) in self.stack.iter_mut() {
            widen(v, old.stack.get(slot));
        }
        if self.len_max != old.len_max {
            self.len_max = None;
        }
    }

    /// `v` is `LEN + o` of a ghost known to lie where `LEN + o` fits in 32
    /// bits: a 32-bit register holding it holds all of it.
    pub(super) fn fits32(&self, v: &Val) -> bool {
        self.len_range(v)
            .is_some_and(|(lo, hi)| lo >= 0 && hi <= u32::MAX as i64)
    }

    /// `lo..=hi` of the length `LEN + o` in `v`: its own range, narrowed by
    /// the ghost's floor and ceiling (the ceiling alone gives one too).
    pub(super) fn len_range(&self, v: &Val) -> Option<(i64, i64)> {
        let o = v.off.filter(|_| v.tags == LEN)?;
        let floor = self.lb.value.checked_add(o);
        let ceiling = self.len_max.and_then(|m| m.checked_add(o));
        let (lo, hi) = match (v.range, ceiling) {
            (Some((a, b)), Some(d)) => (a, b.min(d)),
            (Some(r), None) => r,
            (None, Some(d)) => (floor?, d),
            (None, None) => return None,
        };
        Some((floor.map_or(lo, |f| lo.max(f)), hi))
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
            credit: match (self.credit, o.credit) {
                (None, None) => None,
                (Some(a), None) => a.join(Credit::of(o.lb, a.ptr, a.at)),
                (None, Some(b)) => Credit::of(self.lb, b.ptr, b.at).join(b),
                (Some(a), Some(b)) => a.join(b),
            },
            unaligned: self.unaligned.filter(|_| self.unaligned == o.unaligned),
            count_reg: self.count_reg,
            len_value: self.len_value.filter(|_| self.len_value == o.len_value),
            len_max: self.len_max.zip(o.len_max).map(|(a, b)| a.max(b)),
            upper_undefined: self.upper_undefined | o.upper_undefined,
        }
    }
}
