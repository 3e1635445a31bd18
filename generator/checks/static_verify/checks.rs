//! The checks, read off the analysis: every user access has an entry and
//! nothing else does, fixups return (after a byte retry), no vector state,
//! read-ahead stays inside the source, and returns keep the convention.

use std::collections::{BTreeMap, BTreeSet};

use super::abi::{AbiSpec, NREGS};
use super::alternatives;
use super::analysis::{
    analyse, analyse_from, decide, entry_state, fault_state, first_write, fixup_paths, liveness,
};
use super::arm;
use super::cfg::Func;
use super::domain::{Low, State, Val, ANY, CONST, DST, INTS, LEN, PTRS, RETADDR, SRC, STACK};
use super::isa::{isa_for, Escape, Flow, Insn, MemKind, MemOperand, Touch};
use super::report::{Finding, FunctionReport, Severity, UserSide};
use crate::checks::objfile::{FnSym, Loc, ObjectFile};

/// What the caller tells the checker about one function.
#[derive(Clone, Copy)]
pub(super) struct CheckTarget {
    pub(super) side: UserSide,
    /// Constant size of a fixed-size entry point.
    pub(super) fixed: Option<u64>,
    /// The linux flavour's "no vector state" rule is off.
    pub(super) vector_ok: bool,
    /// Code the analysis cannot reach or follow is a warning, not an error.
    pub(super) allow_unanalysed: bool,
    /// copygen's own per-CPU entry point: its call into the resolver is
    /// expected (a warning); a system call still is an error.
    pub(super) per_cpu_entry: bool,
}

/// Where a memory access may go.
enum Reach {
    User,
    Kernel,
    /// Neither proven: what the address derives from.
    Unproven(String),
}

/// What one analysis of a function (in one variant of its code) found.
struct Checked {
    /// Everything but the instructions never reached.
    findings: Vec<Finding>,
    /// The findings on entries that serve nothing here, by entry.
    idle: Vec<(Loc, Finding)>,
    /// The function's own instructions (symbol and fixup piece), in order:
    /// place, text, padding.
    own: Vec<(Loc, String, bool)>,
    /// Every instruction decoded, with its text.
    decoded: BTreeMap<Loc, String>,
    reached: BTreeSet<Loc>,
    user_accesses: BTreeSet<Loc>,
    /// User accesses whose count after a fault is proven, and those whose
    /// count is not (or is wrong).
    counts_proven: BTreeSet<Loc>,
    counts_unproven: BTreeSet<Loc>,
    /// Entries counted (on its own code, or local code it reaches), and
    /// those whose instruction the analysis reached.
    entries: BTreeSet<Loc>,
    entries_analysed: BTreeSet<Loc>,
    bytes: u64,
    /// The functions its resolved indirect jumps enter.
    dispatches: BTreeSet<String>,
}

/// Check one function against its exception-table entries, in every
/// variant of its code the kernel may patch in (`alternatives`): an entry
/// is stray only if it serves no access in any variant, code is
/// unreached only if no variant reaches it, and every other finding of a
/// variant stands, naming the variants when the original does not have it.
pub(super) fn check_function(
    obj: &ObjectFile,
    f: &FnSym,
    owners: &BTreeMap<u64, String>,
    abi: &AbiSpec,
    target: &CheckTarget,
) -> (FunctionReport, BTreeSet<Loc>) {
    let first = check_variant(obj, f, owners, abi, target);
    // An entry whose jump through its own pointer is resolved is a per-CPU
    // entry point: its call into the resolver is expected (a warning), and
    // the resolver it calls is not reached from the entry.
    let resolved = CheckTarget {
        per_cpu_entry: true,
        ..*target
    };
    let (original, target) = if first.dispatches.is_empty() || target.per_cpu_entry {
        (first, target)
    } else {
        (check_variant(obj, f, owners, abi, &resolved), &resolved)
    };
    let here = |s: &Loc| original.decoded.contains_key(s) || f.contains(s);
    let (variants, notes) = alternatives::variants(obj, here);
    let patched: Vec<(&str, Checked)> = variants
        .iter()
        .map(|v| {
            let c = check_variant(&v.obj, f, owners, abi, target);
            (v.label.as_str(), c)
        })
        .collect();
    let all = || std::iter::once(&original).chain(patched.iter().map(|(_, c)| c));
    let gap = if target.allow_unanalysed || !original.dispatches.is_empty() {
        Severity::Warning
    } else {
        Severity::Error
    };

    // The original's findings, less entries some variant uses.
    let idle_everywhere = |l: &Loc| {
        patched
            .iter()
            .all(|(_, c)| c.idle.iter().any(|(m, _)| m == l))
    };
    let mut findings: Vec<Finding> = original
        .findings
        .iter()
        .filter(|x| {
            original
                .idle
                .iter()
                .find(|(_, g)| g == *x)
                .is_none_or(|(l, _)| idle_everywhere(l))
        })
        .cloned()
        .collect();
    // What only patched variants find, with the variants.
    let mut extra: Vec<(Finding, Vec<&str>)> = Vec::new();
    for (label, c) in &patched {
        for x in &c.findings {
            if original.findings.contains(x) || c.idle.iter().any(|(_, g)| g == x) {
                continue;
            }
            match extra.iter_mut().find(|(g, _)| g == x) {
                Some((_, labels)) => labels.push(label),
                None => extra.push((x.clone(), vec![label])),
            }
        }
    }
    for (mut x, labels) in extra {
        x.message = format!("{} [{}]", x.message, labels.join("; "));
        findings.push(x);
    }
    for n in notes {
        findings.push(Finding {
            severity: if n.gap { gap } else { Severity::Note },
            addr: n.site.offset,
            section: n.site.section.clone(),
            insn: original.decoded.get(&n.site).cloned().unwrap_or_default(),
            line: obj.line_at(&n.site),
            message: n.message,
        });
    }

    // What no variant reaches (padding alone is no gap).
    let reached: BTreeSet<&Loc> = all().flat_map(|c| &c.reached).collect();
    let mut own: BTreeMap<&Loc, (&str, bool)> = BTreeMap::new();
    for c in all() {
        for (l, text, pad) in &c.own {
            own.entry(l).or_insert((text, *pad));
        }
    }
    let own: Vec<_> = own.into_iter().collect();
    let mut k = 0;
    while k < own.len() {
        let (l, (text, pad)) = own[k];
        if reached.contains(l) || pad {
            k += 1;
            continue;
        }
        let run = own[k..]
            .iter()
            .take_while(|(l, _)| !reached.contains(l))
            .count();
        findings.push(Finding {
            severity: gap,
            addr: l.offset,
            section: l.section.clone(),
            insn: text.to_string(),
            line: obj.line_at(l),
            message: format!(
                "never reached from the entry: {run} instruction(s) from here are not analysed"
            ),
        });
        k += run;
    }

    findings.sort_by_key(|f| (std::cmp::Reverse(f.severity), f.section != ".text", f.addr));
    let union = |set: fn(&Checked) -> &BTreeSet<Loc>| {
        all()
            .flat_map(|c| set(c).iter())
            .collect::<BTreeSet<_>>()
            .len()
    };
    let covered: BTreeSet<Loc> = all().flat_map(|c| c.decoded.keys().cloned()).collect();
    let report = FunctionReport {
        name: f.name.clone(),
        side: target.side,
        convention: None,
        fixed: target.fixed,
        bytes: original.bytes,
        instructions: covered.len(),
        analysed: reached.len(),
        user_accesses: union(|c| &c.user_accesses),
        counts_proven: {
            let unproven: BTreeSet<&Loc> = all().flat_map(|c| &c.counts_unproven).collect();
            all()
                .flat_map(|c| &c.counts_proven)
                .filter(|l| !unproven.contains(l))
                .collect::<BTreeSet<_>>()
                .len()
        },
        entries: union(|c| &c.entries),
        entries_analysed: union(|c| &c.entries_analysed),
        findings,
        dispatches: all().flat_map(|c| c.dispatches.iter().cloned()).collect(),
    };
    (report, covered)
}

/// Check one variant of a function's code.
fn check_variant(
    obj: &ObjectFile,
    f: &FnSym,
    owners: &BTreeMap<u64, String>,
    abi: &AbiSpec,
    target: &CheckTarget,
) -> Checked {
    let mut func = Func::build(obj, f, owners, abi);
    let n = func.insns.len();

    // The forward analysis.
    let entry = entry_state(abi, target.fixed);
    let states = analyse(&mut func, entry);

    // User accesses, entries and everything else that reads the states.
    let side = target.side;
    let user_tag = user_tag(side);
    let mut user_accesses = BTreeSet::new();
    let live = liveness(&func, abi);
    for k in 0..n {
        let Some(st) = states[k].as_ref().map(|s| func.exec_state(k, s)) else {
            continue;
        };
        let i = func.insns[k].clone();
        let reach: Vec<Reach> = i
            .mems
            .iter()
            .filter(|m| m.kind != MemKind::Prefetch)
            .map(|m| reach(m, &st, side, abi))
            .collect();
        let listed = func.listed.contains(&k);
        let user = reach.iter().any(|r| matches!(r, Reach::User));
        let unproven = reach.iter().find_map(|r| match r {
            Reach::Unproven(why) => Some(why.clone()),
            _ => None,
        });
        if user || (listed && unproven.is_some()) {
            user_accesses.insert(i.loc.clone());
            if !listed {
                func.finding(
                    Severity::Error,
                    k,
                    format!(
                        "accesses user memory (through `{}`) without an exception-table entry",
                        pointer_name(side)
                    ),
                );
            }
        } else if let Some(why) = unproven {
            func.finding(
                Severity::Error,
                k,
                format!("cannot prove this access is kernel-side (its address derives from {why}) and it has no exception-table entry"),
            );
        } else if listed {
            let why = if i.prefetch {
                "a preload cannot fault, so it needs none"
            } else {
                "this instruction does not access user memory"
            };
            let entry = i.loc.clone();
            func.idle_entry(&entry, k, format!("stray exception-table entry: {why}"));
        }
        if !target.vector_ok {
            if let Some(why) = &i.vector {
                func.finding(Severity::Error, k, why.clone());
            }
        }
        if let Some(t) = i.touch {
            check_touch(&mut func, k, &t, &st, &live[k], user_tag);
        }
        if let Some(&(r, _)) = i
            .uses
            .iter()
            .find(|&&(r, w)| w == 8 && st.upper_undefined & (1 << r) != 0)
        {
            let name = isa_for(abi.arch).reg_name(r);
            func.finding(
                Severity::Error,
                k,
                format!("reads all of {name}, whose upper half the caller leaves undefined (the length is a 32-bit `unsigned`): only its low half may be read before it is written"),
            );
        }
        // Preserved registers and the stack at every return.
        if i.flow == Flow::Return {
            check_return(&mut func, &states, k, &st);
        }
    }

    // Every fixup reaches a return; a wide access's fixup copies a byte
    // before it gives up (the progress rule), unless the access cannot
    // straddle a page (it is aligned to its width).
    let mut no_retry = Vec::new();
    for (&k, &fx) in func.fault.clone().iter() {
        let Some(st) = states[k].as_ref().map(|s| func.exec_state(k, s)) else {
            continue;
        };
        let (returns, byte) = fixup_paths(&func, &states, fx, user_tag);
        if !returns {
            func.finding(
                Severity::Error,
                k,
                format!("its fixup {} never reaches a return", func.describe(fx)),
            );
        }
        if func.insns[k].width > 1 && !byte && !aligned(&func.insns[k], &st, side, abi) {
            no_retry.push((k, fx));
        }
    }
    let proven = check_counts(&mut func, &states);

    // What one analysis cannot prove aligned may be, case by case: a byte
    // prologue (`ands ip, r0, #3`, then 4 - ip conditional byte stores)
    // aligns each residue of the pointer on its own path.
    let cases = if no_retry.is_empty() {
        Vec::new()
    } else {
        by_alignment(&mut func, abi, target, side)
    };
    for (k, fx) in no_retry {
        let aligned_in = |states: &Vec<Option<State>>| match &states[k] {
            None => true,
            Some(s) if func.insns[k].cond_exec && decide(func.insns[k].cc, s) == Some(false) => {
                true
            }
            Some(s) => aligned(&func.insns[k], &func.exec_state(k, s), side, abi),
        };
        if cases.is_empty() || !cases.iter().all(aligned_in) {
            func.finding(
                Severity::Error,
                k,
                format!(
                    "no byte retry after a fault here (fixup {}), and the access is not proven aligned to its {} bytes: if it straddles a page whose first part is readable, the routine copies nothing and reports no progress",
                    func.describe(fx),
                    func.insns[k].width
                ),
            );
        }
    }

    // Code that leaves the routine's contract: a system call or trap on
    // any path (or anywhere but padding), a call the analysis cannot follow.
    for (k, state) in states.iter().enumerate().take(n) {
        let i = &func.insns[k];
        let Some(escape) = i.escape.clone() else {
            continue;
        };
        if state.is_none() && (i.pad || k >= func.own) {
            continue;
        }
        match escape {
            Escape::Trap(why) => func.finding(Severity::Error, k, why),
            Escape::Call(why) if target.per_cpu_entry => func.finding(Severity::Warning, k, why),
            Escape::Call(why) => func.finding(Severity::Error, k, why),
        }
    }

    // What the verdict does not cover.
    let gap = if target.allow_unanalysed {
        Severity::Warning
    } else {
        Severity::Error
    };
    for (k, why) in func.unresolved.clone() {
        if states[k].is_some() {
            func.finding(
                gap,
                k,
                format!("{why}: the code it reaches is not analysed"),
            );
        }
    }
    let placed = |k: &usize| func.insns[*k].loc.clone();
    Checked {
        own: func.insns[..func.own]
            .iter()
            .map(|i| (i.loc.clone(), i.text.clone(), i.pad))
            .collect(),
        decoded: func
            .insns
            .iter()
            .map(|i| (i.loc.clone(), i.text.clone()))
            .collect(),
        reached: (0..n)
            .filter(|&k| states[k].is_some())
            .map(|k| placed(&k))
            .collect(),
        counts_unproven: func
            .fault
            .keys()
            .filter(|&k| states[*k].is_some() && !proven.contains(k))
            .map(placed)
            .collect(),
        counts_proven: proven.iter().map(placed).collect(),
        user_accesses,
        // Entries on local code count only where this function reaches.
        entries: func
            .listed
            .iter()
            .filter(|&&k| k < func.own || states[k].is_some())
            .map(placed)
            .collect(),
        entries_analysed: func
            .listed
            .iter()
            .filter(|&&k| states[k].is_some())
            .map(placed)
            .collect(),
        bytes: f.end - f.start + 4 * func.piece.len() as u64,
        dispatches: std::mem::take(&mut func.dispatches),
        findings: std::mem::take(&mut func.findings),
        idle: std::mem::take(&mut func.idle),
    }
}

/// The analysis once per alignment of the user pointer(s) at entry (each
/// residue modulo the pointer width; for a routine serving both sides,
/// each pair): together the runs cover every entry, and in each the
/// pointer's low bits are known, so a prologue that branches on them is
/// followed exactly.
fn by_alignment(
    func: &mut Func,
    abi: &AbiSpec,
    target: &CheckTarget,
    side: UserSide,
) -> Vec<Vec<Option<State>>> {
    let width = abi.ptr as u64;
    let bits = width.trailing_zeros() as u8;
    let pointers: Vec<u32> = [DST, SRC]
        .into_iter()
        .filter(|&t| user_tag(side) & t != 0)
        .collect();
    let mut runs = Vec::new();
    for case in 0..width.pow(pointers.len() as u32) {
        let mut entry = entry_state(abi, target.fixed);
        for (j, &tag) in pointers.iter().enumerate() {
            let low = Low {
                bits,
                residue: case / width.pow(j as u32) % width,
            };
            for v in entry.regs.iter_mut().chain(entry.stack.values_mut()) {
                if v.tags == tag {
                    v.low = low;
                }
            }
        }
        runs.push(analyse(func, entry));
    }
    runs
}

/// The tags of the user pointer(s).
fn user_tag(side: UserSide) -> u32 {
    match side {
        UserSide::FromUser => SRC,
        UserSide::ToUser => DST,
        UserSide::Both => SRC | DST,
    }
}

/// Where `m` may go: through a user pointer, provably to kernel memory (the
/// kernel-side buffer, the stack, code or a constant address, each plus
/// any integer), or somewhere the analysis cannot tell.
fn reach(m: &MemOperand, st: &State, side: UserSide, abi: &AbiSpec) -> Reach {
    if m.base.is_some() && m.base == abi.pc {
        return Reach::Kernel;
    }
    let tags = |r: Option<usize>| r.map(|g| st.regs[g].tags).unwrap_or(0);
    let t = tags(m.base) | tags(m.index);
    if t & user_tag(side) != 0 {
        return Reach::User;
    }
    let kernel = (PTRS & !user_tag(side)) | STACK | 1 << abi.sp;
    let points = t & !INTS;
    if points & !kernel == 0 && (points != 0 || t & !CONST == 0) {
        return Reach::Kernel;
    }
    let mut what = Vec::new();
    if t & ANY != 0 {
        what.push("an unknown value".to_string());
    }
    if t & RETADDR != 0 {
        what.push("the return address".into());
    }
    for r in (0..NREGS).filter(|&r| t & 1 << r != 0 && r != abi.sp) {
        what.push(format!(
            "the entry value of {}",
            isa_for(abi.arch).reg_name(r)
        ));
    }
    if what.is_empty() {
        what.push("an integer that is no pointer argument".into());
    }
    Reach::Unproven(what.join(", "))
}

/// Every user memory operand of `i` is aligned to its size (so it cannot
/// straddle a page); the kernel side (the other operand of a `movs`) never
/// faults.
fn aligned(i: &Insn, st: &State, side: UserSide, abi: &AbiSpec) -> bool {
    i.mems
        .iter()
        .filter(|m| m.kind != MemKind::Prefetch && m.size > 1)
        .filter(|m| !matches!(reach(m, st, side, abi), Reach::Kernel))
        .all(|m| {
            let index_ok = m.index.is_none_or(|x| st.regs[x].konst_value() == Some(0));
            index_ok
                && m.base
                    .is_some_and(|b| st.regs[b].low.aligned(m.disp, m.size))
        })
}

/// Touch loads (a load from the source whose value is dead) and preloads:
/// each must stay inside the source, by a dominating length check.
fn check_touch(
    func: &mut Func,
    k: usize,
    t: &Touch,
    st: &State,
    live: &BTreeMap<usize, usize>,
    user_tag: u32,
) {
    let base = t.base.map(|g| st.regs[g]).unwrap_or(Val::OTHER);
    let dead = t.dst.is_none_or(|g| !live.contains_key(&g));
    let no_entry = if t.prefetch && base.tags & user_tag != 0 {
        "; a preload cannot fault, so it needs no exception-table entry"
    } else {
        ""
    };
    if !dead || base.tags & SRC == 0 {
        if !no_entry.is_empty() {
            func.finding(
                Severity::Note,
                k,
                format!("preload of user memory{no_entry}"),
            );
        }
        return;
    }
    let what = if t.prefetch { "preload" } else { "touch load" };
    let Some(disp) = t.disp else {
        let sev = if t.prefetch {
            Severity::Warning
        } else {
            Severity::Error
        };
        func.finding(
            sev,
            k,
            format!("{what} at a register offset from the source: its reach cannot be checked"),
        );
        return;
    };
    // Byte offsets count from where the length is measured (the source
    // pointer as the length register sees it), not from the base register.
    let c = base.off.filter(|_| base.tags == SRC);
    let disp = disp - c.unwrap_or(0);
    let need = disp + t.size as i64;
    // Bytes before where the length is measured from may lie before the
    // source: nothing proves them inside it.
    let proven = c.filter(|_| disp >= 0).map(|_| st.lb.value);
    match (proven, st.lb.origin) {
        (Some(p), Some(o)) if p >= need => {
            let check = func.describe(func.index[&o]);
            func.finding(
                Severity::Note,
                k,
                format!("{what} of source bytes [{disp}, {need}) is inside the source: guarded by {check} (at least {p} bytes left){no_entry}"),
            );
        }
        (Some(p), _) if p >= need => {
            if !no_entry.is_empty() {
                func.finding(
                    Severity::Note,
                    k,
                    format!(
                        "{what} of source bytes [{disp}, {need}) is inside the source{no_entry}"
                    ),
                );
            }
        }
        (p, o) => {
            let have = match (p, o) {
                // (What widening leaves of a bound that fell at every round.)
                (Some(p), _) if p < 0 => {
                    "none proven: the bound falls at every round of a loop".into()
                }
                (Some(p), Some(o)) => {
                    format!("only {p} proven by {}", func.describe(func.index[&o]))
                }
                (Some(p), None) => format!("only {p} proven"),
                (None, _) if c.is_some() => {
                    "it starts before the point the length is measured from".into()
                }
                (None, _) => "the length check cannot be related to this pointer".into(),
            };
            // A preload cannot fault or change memory, so it breaks no
            // copy; it still touches (caches) memory outside the source,
            // which the contract forbids: a warning, not an error.
            let (sev, why) = if t.prefetch {
                (
                    Severity::Warning,
                    "; a preload cannot fault, but the contract forbids touching memory outside the source",
                )
            } else {
                (Severity::Error, "")
            };
            func.finding(
                sev,
                k,
                format!("{what} past the checked length: reads source bytes [{disp}, {need}), needs {need} bytes left, {have}{why}"),
            );
        }
    }
}

/// At a return: the stack is balanced, the registers the convention keeps
/// hold their entry values and (ARM) the return goes to the entry lr.
fn check_return(func: &mut Func, states: &[Option<State>], k: usize, st: &State) {
    let abi = func.abi;
    // x86 checks before `ret` pops; ARM after the pop that returns.
    let st = if abi.pc.is_some() {
        func.transfer(k, st)
    } else {
        st.clone()
    };
    if st.sp != Some(0) {
        let sp = st
            .sp
            .map(|s| s.to_string())
            .unwrap_or_else(|| "unknown".into());
        func.finding(
            Severity::Error,
            k,
            format!("stack not balanced at return (sp = entry {sp})"),
        );
    }
    for r in 0..abi.regs() {
        if r == abi.sp || Some(r) == abi.pc || abi.clobber.contains(&r) || st.regs[r].tags == 1 << r
        {
            continue;
        }
        let by = first_write(func, states, r)
            .map(|w| func.describe(w))
            .unwrap_or_else(|| "an unknown path".into());
        func.finding(
            Severity::Error,
            k,
            format!(
                "{} is not preserved: the convention does not let it be clobbered, written by {by}",
                isa_for(abi.arch).reg_name(r)
            ),
        );
    }
    if let Some(pc) = abi.pc {
        if st.regs[pc] != Val::orig(arm::LR) {
            func.finding(
                Severity::Error,
                k,
                "returns to an address other than the entry lr".into(),
            );
        }
    }
}

/// The count after each fault, proven path by path: the fixup's paths
/// from this one fault are analysed on their own (joined with other
/// faults' paths, the relations would be lost), and at every return they
/// reach the value returned must be the number of bytes not stored, `n -
/// F` for the stored prefix `to[0..F)`. Both are known against the ghost
/// `LEN` (`LEN + r` and `LEN + stored`), so they are equal exactly when the
/// offsets are: a difference is an error at the access, and so is a
/// pointer returned (the source or destination pointer, or a stack
/// address, plus a constant). A count the
/// analysis cannot tie to `LEN`, or a prefix it lost, is not proven: one
/// warning for the function, naming the first such access. Returns the
/// accesses whose count is proven.
fn check_counts(func: &mut Func, states: &[Option<State>]) -> BTreeSet<usize> {
    let abi = func.abi;
    let reg = isa_for(abi.arch).reg_name(abi.ret);
    let mut unproven: Vec<(usize, &'static str)> = Vec::new();
    let mut proven = BTreeSet::new();
    let mut sites = 0;
    for (&k, &fx) in func.fault.clone().iter() {
        let Some(st) = states[k].as_ref().map(|s| func.exec_state(k, s)) else {
            continue;
        };
        sites += 1;
        let from_fault = fault_state(func, k, &st);
        let paths = analyse_from(func, fx, from_fault);
        let mut wrong = None;
        let mut pointer = None;
        let mut why_not = None;
        let mut gap = None;
        let mut returns = 0;
        for (j, s) in paths.iter().enumerate() {
            let Some(s) = s else { continue };
            if let (None, Some((g, at))) = (gap, s.gap) {
                gap = func.index.get(&at).map(|&j| (j, g));
            }
            if func.insns[j].flow != Flow::Return {
                continue;
            }
            returns += 1;
            // ARM returns by the pop: the state after it.
            let s = if abi.pc.is_some() {
                func.transfer(j, s)
            } else {
                s.clone()
            };
            let mut r = s.regs[abi.ret];
            // A constant, where the ghost's value is known, is `LEN + (k - L)`.
            if let (Some(k), Some(l)) = (r.konst_value(), s.len_value) {
                r = Val::tagged(LEN, Some(k - l));
            }
            // A pointer (plus a constant) is never a count.
            if r.off.is_some() && [SRC, DST, STACK].contains(&r.tags) {
                pointer.get_or_insert(j);
                continue;
            }
            match (r.tags == LEN, r.off, s.stored) {
                (true, Some(r), Some(f)) if r == f => {}
                (true, Some(r), Some(f)) => {
                    wrong.get_or_insert((j, r - f));
                }
                (_, _, None) => {
                    why_not.get_or_insert("the bytes stored before the fault are not known");
                }
                _ => {
                    why_not.get_or_insert(
                        "the value returned is not known as the length less the bytes stored",
                    );
                }
            }
        }
        if let Some((j, g)) = gap {
            let at = func.describe(j);
            func.finding(
                Severity::Error,
                k,
                format!(
                    "after a fault here, the fixup path stores {g} bytes past the bytes stored so far (at {at}): the bytes between are never copied"
                ),
            );
        } else if let Some(j) = pointer {
            let ret = func.describe(j);
            func.finding(
                Severity::Error,
                k,
                format!(
                    "a fault here returns a pointer in {reg} (at {ret}), not the number of bytes not copied"
                ),
            );
        } else if let Some((j, d)) = wrong {
            let why = if d > 0 {
                format!("it reports {d} bytes fewer copied than were stored (the bytes past the count must be left as they were)")
            } else {
                format!("it reports {} bytes copied that were never stored", -d)
            };
            let ret = func.describe(j);
            func.finding(
                Severity::Error,
                k,
                format!("a fault here returns the wrong count in {reg} (at {ret}): {why}"),
            );
        } else if let Some(why) = why_not {
            unproven.push((k, why));
        } else if returns > 0 {
            proven.insert(k);
        }
    }
    if let Some(&(k, why)) = unproven.first() {
        func.finding(
            Severity::Note,
            k,
            format!(
                "the count after a fault is not proven at {} of {sites} user accesses ({why} on a path from this one's fixup)",
                unproven.len()
            ),
        );
    }
    proven
}

fn pointer_name(side: UserSide) -> &'static str {
    match side {
        UserSide::FromUser => "from",
        UserSide::ToUser => "to",
        UserSide::Both => "from` or `to",
    }
}
