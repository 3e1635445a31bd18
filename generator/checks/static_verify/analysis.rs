//! The analyses over one function: the forward data-flow fixed point (with
//! length refinement at branches), liveness for touch loads, and the paths
//! out of each fixup.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::abi::{AbiSpec, NREGS};
use super::cfg::Func;
use super::domain::{add_val, site_sym};
use super::domain::{
    Bound, Cmp, Cut, LenPart, State, Val, CONST, DST, INTS, LEN, OTHER, RETADDR, SRC,
};
use super::isa::{CondCode, Flow, MemKind};
use crate::kernel::extable::X86Handler;

pub(super) fn entry_state(abi: &AbiSpec, fixed: Option<u64>) -> State {
    let mut regs = [Val::OTHER; NREGS];
    for (r, v) in regs.iter_mut().enumerate() {
        *v = Val::orig(r);
    }
    let len = || {
        if fixed.is_some() {
            Val::OTHER
        } else if abi.len32 {
            // (Taken as zero-extended: `upper_undefined` holds the routine to
            // reading the low half alone.)
            Val {
                range: Some((0, u32::MAX as i64)),
                ..Val::tagged(LEN, Some(0))
            }
        } else {
            Val::tagged(LEN, Some(0))
        }
    };
    let mut stack = BTreeMap::new();
    // x86 calls push the return address; ARM passes it in lr.
    if abi.pc.is_none() {
        stack.insert(0, Val::tagged(RETADDR, None));
    }
    match abi.arg_regs {
        Some([to, from, n]) => {
            regs[to] = Val::tagged(DST, Some(0));
            regs[from] = Val::tagged(SRC, Some(0));
            if fixed.is_none() {
                regs[n] = len();
            }
        }
        None => {
            stack.insert(abi.ptr, Val::tagged(DST, Some(0)));
            stack.insert(2 * abi.ptr, Val::tagged(SRC, Some(0)));
            if fixed.is_none() {
                stack.insert(3 * abi.ptr, len());
            }
        }
    }
    let lb = Bound {
        value: fixed.map(|n| n as i64).unwrap_or(0),
        origin: None,
    };
    State {
        regs,
        stack,
        sp: Some(0),
        lb,
        flags: None,
        // Nothing stored yet: `dst_end - to == n == LEN`.
        stored: Some(0),
        faulted: false,
        gap: None,
        credit: None,
        unaligned: None,
        count_reg: abi.arg_regs.map(|[_, _, n]| n),
        // A fixed-size entry has no length argument: the ghost is the size.
        len_value: fixed.map(|n| n as i64),
        len_max: fixed
            .map(|n| n as i64)
            .or(abi.len32.then_some(u32::MAX as i64)),
        upper_undefined: match abi.arg_regs {
            Some([_, _, n]) if abi.len32 && fixed.is_none() => 1 << n,
            _ => 0,
        },
    }
}

/// The fixed point of the forward analysis: the state before each
/// instruction (None: unreachable).
pub(super) fn analyse(func: &mut Func, entry: State) -> Vec<Option<State>> {
    let start = func.entry;
    analyse_from(func, start, entry)
}

/// The state on the edge from the access at `k` (run in `exec`) to its
/// fixup: the access had no effect (but what a string instruction had
/// done), and the entry's handler has run.
pub(super) fn fault_state(func: &Func, k: usize, exec: &State) -> State {
    let mut s = exec.clone();
    s.flags = None;
    s.faulted = true;
    fault_moves(&mut s, &func.insns[k]);
    match func.handler.get(&k) {
        Some(X86Handler::TrapInAx) => s.regs[0] = Val::OTHER,
        // `cx = imm * cx + reg`: i386's `rep movsl` fixup puts the words
        // left and the remainder back together, as `lea` would.
        Some(&X86Handler::UcopyLen { imm, reg }) => {
            let (cx, r) = (s.regs[1], s.regs[reg]);
            s.regs[1] = match imm {
                1 => add_val(cx, r, 1),
                _ => (imm > 0 && (imm as u64).is_power_of_two())
                    .then(|| Val::joined_parts(r, cx, imm.trailing_zeros() as u8))
                    .flatten()
                    .map_or(Val::OTHER, |o| Val::tagged(LEN, Some(o))),
            };
        }
        Some(X86Handler::Resume) | None => {}
    }
    s.normalize();
    s
}

/// The fixed point from instruction `start` in state `entry` (the whole
/// function from its entry, or one fixup's paths from one fault).
pub(super) fn analyse_from(func: &mut Func, start: usize, entry: State) -> Vec<Option<State>> {
    let n = func.insns.len();
    let mut states: Vec<Option<State>> = vec![None; n];
    let mut visits = vec![0u32; n];
    // The floors length checks set: where a widened bound may land.
    let mut thresholds: BTreeSet<i64> = BTreeSet::new();
    if n == 0 {
        return states;
    }
    states[start] = Some(entry);
    let mut work: VecDeque<usize> = VecDeque::from([start]);
    while let Some(k) = work.pop_front() {
        let st = states[k].clone().unwrap();
        let insn = &func.insns[k];
        let exec = func.exec_state(k, &st);
        let mut outs: Vec<(usize, State)> = Vec::new();
        if let Some(&fx) = func.fault.get(&k) {
            // A fault leaves before the instruction has any effect.
            outs.push((fx, fault_state(func, k, &exec)));
        }
        let mut after = func.transfer(k, &exec);
        // (A string instruction's transfer places the prefix itself.)
        if insn.fault_moves.is_empty() {
            after.stored = stored_after(insn, &exec);
        }
        if exec.faulted {
            if let Some(g) = stored_gap(insn, &exec) {
                after.gap = after.gap.max(Some((g, insn.addr)));
            }
        }
        if insn.flow == Flow::Indirect {
            // A computed jump: its targets in this state join the graph.
            match insn.semantics.targets(insn, &exec) {
                Some(ts) => {
                    for t in ts {
                        match func.index.get(&t) {
                            Some(&s) if !func.succ[k].contains(&s) => func.succ[k].push(s),
                            Some(_) => {}
                            None => {
                                func.unresolved
                                    .insert(k, format!("may jump to {t:#x}, outside the function"));
                            }
                        }
                    }
                }
                None => {
                    let why = match func.indirect_why.get(&k) {
                        Some(w) => format!(" ({w})"),
                        None => String::new(),
                    };
                    func.unresolved.insert(
                        k,
                        format!("indirect jump: the analysis cannot tell where it goes{why}"),
                    );
                }
            }
        }
        let insn = &func.insns[k];
        // A condition the state decides (a compare of a known constant)
        // prunes the edges that cannot be taken.
        let decided = match insn.flow {
            Flow::CondJump(_) => decide(insn.cc, &after),
            _ if insn.cond_exec => decide(insn.cc, &st),
            _ => None,
        };
        for &s in &func.succ[k] {
            let on_fall = Some(s) == func.fall[k];
            let o = match insn.flow {
                Flow::CondJump(t) => {
                    let taken = !on_fall;
                    // (A jump to the next instruction goes there either way.)
                    let to_next = func.index.get(&t).copied() == func.fall[k];
                    if decided.is_some_and(|d| d != taken) && !to_next {
                        continue;
                    }
                    let mut o = after.clone();
                    refine(insn.cc, &mut o, taken);
                    let floor = after.flags.filter(|c| c.mask == 0);
                    if let Some(m) = floor.and_then(|c| length_floor(insn.cc, c, taken)) {
                        thresholds.insert(m);
                    }
                    o
                }
                _ if insn.cond_exec && on_fall => {
                    // Skipped, or (when it falls through) run.
                    let mut skip = st.clone();
                    refine(insn.cc, &mut skip, false);
                    match (decided, insn.flow) {
                        (Some(false), _) => skip,
                        (Some(true), Flow::Next) => after.clone(),
                        (Some(true), _) => continue,
                        (None, Flow::Next) => skip.join(&after),
                        (None, _) => skip,
                    }
                }
                // Where a conditional instruction goes when it runs.
                _ if insn.cond_exec && decided == Some(false) => continue,
                _ => after.clone(),
            };
            outs.push((s, o));
        }
        for (s, mut o) in outs {
            o.normalize();
            let new = match &states[s] {
                None => o,
                Some(old) => {
                    let mut j = old.join_at(&o, func.insns[s].addr);
                    if &j == old {
                        continue;
                    }
                    visits[s] += 1;
                    // Widen at loop heads (every cycle has an edge back in
                    // layout order): a bound still falling after many rounds
                    // drops to the next bound a length check sets (a loop
                    // that steps down from a high class bound settles on its
                    // own `cmp $block`), and below the last, is lost; an
                    // alignment credit or a length's range still changing
                    // is lost.
                    if s <= k && visits[s] > 64 {
                        if j.lb.value < old.lb.value {
                            let value = thresholds.range(..=j.lb.value).next_back();
                            j.lb = Bound {
                                value: value.copied().unwrap_or(i64::MIN / 4),
                                origin: None,
                            };
                        }
                        if j.credit != old.credit {
                            j.credit = None;
                        }
                        j.widen_ranges(old);
                    }
                    j
                }
            };
            states[s] = Some(new);
            if !work.contains(&s) {
                work.push_back(s);
            }
        }
    }
    states
}

/// A fault part-way through a string instruction (`rep movs`) of
/// `width`-byte elements: the count and the pointers it moves have moved by
/// the same unknown number `t` of elements. Taking `width * t` off the ghost
/// `LEN` keeps their values (a count `LEN + c`, or of words `(LEN + c) >>
/// 3`, a pointer `dst_end - LEN - d`), a remainder of the length in as
/// few bits as the element has, and the stored prefix when it ended at the
/// destination pointer; every other value tied to `LEN` loses its offset,
/// and the bound and alignment credit are lost. Anything else it moves is
/// unknown. (A `rep stos` copies nothing: the bytes it stored are no part
/// of the prefix.)
fn fault_moves(s: &mut State, insn: &super::isa::Insn) {
    let moved = &insn.fault_moves[..];
    if moved.is_empty() {
        return;
    }
    let bits = insn.width.trailing_zeros() as u8;
    let tied = |v: &Val| v.off.is_some() && (v.tags == LEN || v.tags == SRC || v.tags == DST);
    let counts = |v: &Val| {
        v.tags & !INTS == 0
            && v.part
                .is_some_and(|p| p.cut == Cut::High && p.survives_steps(bits, true))
    };
    // A count of bytes that is a named integer (i386's alignment `rep movsb`
    // of `(-to) & 7`): it and the ghost go down together.
    let named = |v: &Val| {
        bits == 0
            && v.tags & !(OTHER | CONST) == 0
            && v.sym.is_some()
            && v.range().is_some_and(|(lo, _)| lo >= 0)
    };
    if moved
        .iter()
        .all(|&r| tied(&s.regs[r]) || counts(&s.regs[r]) || named(&s.regs[r]))
    {
        let renamed: Vec<(usize, u64, i64)> = moved
            .iter()
            .filter(|&&r| named(&s.regs[r]))
            .filter_map(|&r| Some((r, s.regs[r].sym?, s.regs[r].range()?.1)))
            .collect();
        let dst_at = moved
            .iter()
            .map(|&r| s.regs[r])
            .find(|v| v.tags == DST)
            .and_then(|v| v.off);
        let copies = insn.mems.iter().any(|m| m.kind == MemKind::Load);
        if s.stored != dst_at || !copies {
            s.stored = None;
        }
        for (r, v) in s.regs.iter_mut().enumerate() {
            let is_moved = moved.contains(&r);
            if !is_moved && tied(v) {
                v.off = None;
            }
            if is_moved {
                // (A new value: what was known of the old one is not of it.)
                v.range = None;
                v.sym = None;
            }
            v.part = v.part.filter(|p| p.survives_steps(bits, is_moved));
        }
        for v in s.stack.values_mut() {
            if tied(v) {
                v.off = None;
            }
            v.part = v.part.filter(|p| p.survives_steps(bits, false));
        }
        for (r, old, hi) in renamed {
            let new = site_sym(insn.addr, r);
            s.named_count_down(old, new);
            s.regs[r] = Val {
                sym: Some(new),
                ..Val::bounded(0, hi)
            };
        }
        s.ghost_moved();
    } else {
        for &r in moved {
            s.regs[r] = Val::derived([s.regs[r]]);
        }
        s.stored = None;
    }
}

/// How far past the stored prefix a store of `insn` (run in `st`) starts,
/// when it is placed past it.
fn stored_gap(insn: &super::isa::Insn, st: &State) -> Option<i64> {
    let stored = st.stored?;
    insn.mems
        .iter()
        .filter(|m| m.kind == MemKind::Store && m.index.is_none())
        .find_map(|m| {
            let b = st.regs[m.base?];
            let d = b.off.filter(|_| b.tags == DST)?;
            let gap = m.disp - d + stored;
            (gap > 0).then_some(gap)
        })
}

/// The stored prefix after `insn` runs in `st`: a store through the
/// destination pointer that starts inside or right at the prefix extends
/// it. A store past the prefix leaves a
/// gap, and one the analysis cannot place (an address computed from the
/// pointer and the length: an overlapping tail store) is not counted:
/// the prefix stays, so a fixup must not count those bytes as copied.
fn stored_after(insn: &super::isa::Insn, st: &State) -> Option<i64> {
    let mut stored = st.stored?;
    for m in insn.mems.iter().filter(|m| m.kind == MemKind::Store) {
        let base = m.base.map(|r| st.regs[r]);
        let Some(d) = base
            .filter(|b| b.tags == DST && m.index.is_none())
            .and_then(|b| b.off)
        else {
            continue;
        };
        // The store covers `to + F'` for F' in `-d + disp ..` with the
        // prefix ending at `-stored` (both less `n - LEN`).
        let start = m.disp - d;
        if start <= -stored {
            stored = stored.min(d - m.disp - m.size as i64);
        }
    }
    Some(stored)
}

/// Whether condition `cc` holds, when the last compare is of a known
/// constant (or of low bits the state knows). Unsigned conditions are
/// left undecided against 0: after `subs rd, rn, #k` the compare recorded
/// is rd's with 0, while the carry is rn's with k.
pub(super) fn decide(cc: CondCode, st: &State) -> Option<bool> {
    let c = st.flags?;
    let v = st.regs[c.reg];
    if c.mask != 0 {
        if c.mask >> v.low.bits != 0 {
            return None;
        }
        let zero = v.low.residue & c.mask == 0;
        return match cc {
            CondCode::Eq => Some(zero),
            CondCode::Ne => Some(!zero),
            _ => None,
        };
    }
    // Values both widths read alike (so a 32-bit compare means the same).
    let small = |x: i64| i32::try_from(x).is_ok();
    let k = v.konst_value().filter(|&k| small(k))?;
    let imm = if c.test { 0 } else { c.imm };
    if !small(imm) {
        return None;
    }
    let unsigned = !c.test && k >= 0 && imm > 0;
    match cc {
        CondCode::Eq => Some(k == imm),
        CondCode::Ne => Some(k != imm),
        CondCode::Hs if unsigned => Some(k >= imm),
        CondCode::Lo if unsigned => Some(k < imm),
        CondCode::Hi if unsigned => Some(k > imm),
        CondCode::Ls if unsigned => Some(k <= imm),
        CondCode::Ge if !c.test => Some(k >= imm),
        CondCode::Lt if !c.test => Some(k < imm),
        CondCode::Gt if !c.test => Some(k > imm),
        CondCode::Le if !c.test => Some(k <= imm),
        _ => None,
    }
}

/// On the edge where `cc` is `taken` after a test (or a result's zero
/// flag): whether the value is zero there (None: the condition says not).
fn zero_edge(cc: CondCode, taken: bool) -> Option<bool> {
    match (cc, taken) {
        (CondCode::Eq, true) | (CondCode::Ne, false) => Some(true),
        (CondCode::Eq, false) | (CondCode::Ne, true) => Some(false),
        _ => None,
    }
}

/// Narrow the length bound on the edge where condition `cc` is `taken`.
pub(super) fn refine(cc: CondCode, st: &mut State, taken: bool) {
    let Some(c) = st.flags else { return };
    if c.mask != 0 {
        let Some(zero) = zero_edge(cc, taken) else {
            return;
        };
        // `test $mask, r`: on the edge where `r & mask` is zero, so are
        // those bits of r.
        let v = st.regs[c.reg];
        if zero {
            st.regs[c.reg].low = v.low.and_zero(c.mask);
        }
        // A test of a pointer's low bits: where they are zero an alignment
        // loop has ended (its credit is a bound); where not, the next byte
        // step brings the pointer closer.
        let at = v.off.filter(|_| v.tags == DST || v.tags == SRC);
        if let (Some(d), true) = (at, c.mask.wrapping_add(1).is_power_of_two()) {
            let bits = c.mask.count_ones() as u8;
            if !zero {
                st.unaligned = Some((v.tags, d, bits));
            } else if let Some(b) = st
                .credit
                .filter(|cr| (cr.ptr, cr.at) == (v.tags, d))
                .and_then(|cr| cr.at_aligned(bits))
            {
                if b.value > st.lb.value {
                    st.lb = b;
                }
            }
        }
        return;
    }
    let v = st.regs[c.reg];
    if let Some(p) = v.part.filter(|p| p.cut == Cut::High && c.test) {
        refine_count(cc, st, c, p, taken);
        return;
    }
    if c.test && v.tags & !(OTHER | CONST) == 0 && v.konst_value().is_none() {
        refine_counter(cc, st, c, taken);
        return;
    }
    let (true, Some(o)) = (v.tags == LEN, v.off) else {
        return;
    };
    if let Some(m) = length_ceiling(cc, c, taken) {
        let (lo, hi) = v.range.unwrap_or((0, m));
        st.regs[c.reg].range = Some((lo, hi.min(m)));
        // (`LEN + o <= m`: the ghost is at most `m - o`.)
        let cap = m - o;
        st.len_max = Some(st.len_max.map_or(cap, |x| x.min(cap)));
    }
    if let Some(m) = length_floor(cc, c, taken) {
        let b = m - o;
        // (A bound widening left without its check: this one proves it.)
        if b > st.lb.value || (b == st.lb.value && st.lb.origin.is_none()) {
            st.lb = Bound {
                value: b,
                origin: Some(c.addr),
            };
        }
    }
}

/// A test of a count of `2^bits`-byte elements `(LEN + off) >> bits`
/// (`shrl $3, %ecx; jz`, `decl %ecx; jnz`): where it is not zero the length
/// holds an element; where it is, the remainder `(LEN + off) mod 2^bits`
/// is all of it, `LEN + off`.
fn refine_count(cc: CondCode, st: &mut State, c: Cmp, p: LenPart, taken: bool) {
    let Some(zero) = zero_edge(cc, taken) else {
        return;
    };
    if zero && !c.full {
        return;
    }
    if !zero {
        let b = (1i64 << p.bits) - p.off;
        if b > st.lb.value {
            st.lb = Bound {
                value: b,
                origin: Some(c.addr),
            };
        }
        return;
    }
    st.regs[c.reg] = Val::konst(0);
    let rem = p.remainder();
    let whole = |v: &mut Val| {
        if v.part == Some(rem) {
            *v = Val {
                tags: LEN,
                off: Some(p.off),
                range: Some((0, (1 << p.bits) - 1)),
                low: v.low,
                ..Val::OTHER
            };
        }
    };
    st.each_val(whole);
}

/// A test of a plain integer (a loop counter, `decl %ecx; jnz`): where it
/// is not zero a range from 0 starts at 1; where it is zero (a test of all
/// of it), it is 0, and what moved by it is where it was.
fn refine_counter(cc: CondCode, st: &mut State, c: Cmp, taken: bool) {
    let Some(zero) = zero_edge(cc, taken) else {
        return;
    };
    let v = st.regs[c.reg];
    match (zero, v.sym) {
        (false, sym) => st.sym_not_zero(c.reg, sym),
        (true, Some(sym)) if c.full => st.sym_is_zero(c.reg, sym),
        (true, None) if c.full => st.regs[c.reg] = Val::konst(0),
        _ => {}
    }
}

/// The least value the compared register holds on the edge where `cc` is
/// `taken`, if the compare says. Signed conditions bound it too when the
/// constant is not negative: a value at or above 2^31 (2^63) is negative
/// and fails them.
fn length_floor(cc: CondCode, c: Cmp, taken: bool) -> Option<i64> {
    match (c.test, cc, taken) {
        (false, CondCode::Hs, true)
        | (false, CondCode::Lo, false)
        | (false, CondCode::Eq, true) => Some(c.imm),
        (false, CondCode::Hi, true) | (false, CondCode::Ls, false) => Some(c.imm + 1),
        (false, CondCode::Ge, true) | (false, CondCode::Lt, false) if c.imm >= 0 => Some(c.imm),
        (false, CondCode::Gt, true) | (false, CondCode::Le, false) if c.imm >= 0 => Some(c.imm + 1),
        (false, CondCode::Ne, true) | (false, CondCode::Eq, false) if c.imm == 0 => Some(1),
        (true, CondCode::Ne, true) | (true, CondCode::Eq, false) => Some(1),
        _ => None,
    }
}

/// The most the compared register holds on the edge where `cc` is
/// `taken`, if an unsigned compare of the whole register says.
fn length_ceiling(cc: CondCode, c: Cmp, taken: bool) -> Option<i64> {
    if !c.full || c.test || c.imm < 0 {
        return None;
    }
    match (cc, taken) {
        (CondCode::Hs, false) | (CondCode::Lo, true) => Some(c.imm - 1),
        (CondCode::Hi, false) | (CondCode::Ls, true) | (CondCode::Eq, true) => Some(c.imm),
        _ => None,
    }
}

/// The first reachable instruction (in address order) after which `r`
/// no longer holds its entry value.
pub(super) fn first_write(func: &Func, states: &[Option<State>], r: usize) -> Option<usize> {
    (0..func.insns.len()).find(|&k| {
        states[k]
            .as_ref()
            .is_some_and(|s| s.regs[r].tags & (1 << r) != 0)
            && func.insns[k].written.contains(&r)
    })
}

/// Live general-purpose registers after each instruction (normal path),
/// each with the bytes of it still to be read (so `movb (%esi), %al` kills
/// a live `%al` but not a live `%eax`): what a touch load's destination is
/// checked against.
pub(super) fn liveness(func: &Func, abi: &AbiSpec) -> Vec<BTreeMap<usize, usize>> {
    type Live = BTreeMap<usize, usize>;
    let n = func.insns.len();
    let mut uses: Vec<Live> = vec![Live::new(); n];
    for (i, u) in func.insns.iter().zip(uses.iter_mut()) {
        for &(g, w) in &i.uses {
            let e = u.entry(g).or_insert(0);
            *e = (*e).max(w);
        }
        if i.flow == Flow::Return {
            // The result and everything the caller keeps.
            u.insert(abi.ret, 8);
            for r in (0..abi.regs()).filter(|r| !abi.clobber.contains(r)) {
                u.insert(r, 8);
            }
        }
    }
    let merge = |into: &mut Live, from: &Live| {
        for (&r, &w) in from {
            let e = into.entry(r).or_insert(0);
            *e = (*e).max(w);
        }
    };
    let mut live_in: Vec<Live> = vec![Live::new(); n];
    let mut live_out: Vec<Live> = vec![Live::new(); n];
    let mut changed = true;
    while changed {
        changed = false;
        for k in (0..n).rev() {
            let mut out = Live::new();
            for &s in &func.succ[k] {
                merge(&mut out, &live_in[s]);
            }
            let mut inn = out.clone();
            for &(g, w) in &func.insns[k].defs {
                if inn.get(&g).is_some_and(|&need| need <= w) {
                    inn.remove(&g);
                }
            }
            merge(&mut inn, &uses[k]);
            // A fault leaves before the instruction writes anything.
            if let Some(&fx) = func.fault.get(&k) {
                let f = live_in[fx].clone();
                merge(&mut inn, &f);
            }
            if inn != live_in[k] || out != live_out[k] {
                live_in[k] = inn;
                live_out[k] = out;
                changed = true;
            }
        }
    }
    live_out
}

/// From a fixup: does some path reach a return, and is there a one-byte
/// user access (a byte retry or step) on the way?
pub(super) fn fixup_paths(
    func: &Func,
    states: &[Option<State>],
    fx: usize,
    user_tag: u32,
) -> (bool, bool) {
    let mut seen = BTreeSet::new();
    let mut work = vec![fx];
    let (mut returns, mut byte) = (false, false);
    while let Some(k) = work.pop() {
        if !seen.insert(k) {
            continue;
        }
        let i = &func.insns[k];
        if i.flow == Flow::Return {
            returns = true;
        }
        if let Some(st) = &states[k] {
            byte |= i.mems.iter().any(|m| {
                m.kind != MemKind::Prefetch
                    && m.size == 1
                    && m.base.is_some_and(|g| st.regs[g].tags & user_tag != 0)
            });
        }
        work.extend(func.succ[k].iter().copied());
    }
    (returns, byte)
}
