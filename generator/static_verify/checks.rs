//! The checks, read off the analysis: every user access has an entry and
//! nothing else does, fixups return (after a byte retry), no vector state,
//! read-ahead stays inside the source, and returns keep the convention.

use std::collections::BTreeMap;

use super::abi::AbiSpec;
use super::analysis::{analyse, entry_state, first_write, fixup_paths, liveness};
use super::arm;
use super::cfg::Func;
use super::domain::{State, Val, DST, SRC};
use super::isa::{isa_for, Flow, MemKind, Touch};
use super::report::{FunctionReport, Severity};
use crate::ir::Direction;
use crate::objfile::{ExEntry, FnSym, ObjectFile};

/// Check one function against its exception-table `entries`.
#[allow(clippy::too_many_arguments)]
pub(super) fn check_function(
    obj: &ObjectFile,
    f: &FnSym,
    owners: &BTreeMap<u64, String>,
    entries: Vec<ExEntry>,
    direction: Direction,
    fixed: Option<u64>,
    abi: &AbiSpec,
    vector_ok: bool,
) -> FunctionReport {
    let mut func = Func::build(obj, f, owners, &entries, abi);
    let n = func.insns.len();

    // The forward analysis.
    let entry = entry_state(abi, fixed);
    let states = analyse(&mut func, entry);

    // User accesses, entries and everything else that reads the states.
    let user_tag = match direction {
        Direction::FromUser => SRC,
        Direction::ToUser => DST,
    };
    let mut user_accesses = 0;
    let live = liveness(&func, abi);
    for k in 0..n {
        let Some(st) = states[k].as_ref().map(|s| func.exec_state(k, s)) else {
            continue;
        };
        let i = func.insns[k].clone();
        let val = |r: Option<usize>| r.map(|g| st.regs[g]).unwrap_or(Val::OTHER);
        let user = i.mems.iter().any(|m| {
            m.kind != MemKind::Prefetch && (val(m.base).tags | val(m.index).tags) & user_tag != 0
        });
        if user {
            user_accesses += 1;
            if !func.listed.contains(&k) {
                func.finding(
                    Severity::Error,
                    k,
                    format!(
                        "accesses user memory (through `{}`) without an exception-table entry",
                        pointer_name(direction)
                    ),
                );
            }
        } else if func.listed.contains(&k) {
            let why = if i.prefetch {
                "a preload cannot fault, so it needs none"
            } else {
                "this instruction does not access user memory"
            };
            func.finding(
                Severity::Error,
                k,
                format!("stray exception-table entry: {why}"),
            );
        }
        if !vector_ok {
            if let Some(why) = &i.vector {
                func.finding(Severity::Error, k, why.clone());
            }
        }
        if let Some(t) = i.touch {
            check_touch(&mut func, k, &t, &st, &live[k], user_tag);
        }
        // Preserved registers and the stack at every return.
        if i.flow == Flow::Return {
            check_return(&mut func, &states, k, &st);
        }
    }

    // Every fixup reaches a return; a wide access's fixup copies a byte
    // before it gives up (the progress rule), or we cannot prove it.
    for (&k, &fx) in func.fault.clone().iter() {
        if states[fx].is_none() {
            continue;
        }
        let (returns, byte) = fixup_paths(&func, &states, fx, user_tag);
        if !returns {
            func.finding(
                Severity::Error,
                k,
                format!("its fixup {} never reaches a return", func.describe(fx)),
            );
        }
        let wide = func.insns[k].width > 1;
        if wide && !byte && states[k].is_some() {
            func.finding(
                Severity::Warning,
                k,
                format!(
                    "no byte retry after a fault here (fixup {}): progress rule not provable",
                    func.describe(fx)
                ),
            );
        }
    }

    let mut findings = std::mem::take(&mut func.findings);
    findings.sort_by_key(|f| (std::cmp::Reverse(f.severity), f.section != ".text", f.addr));
    FunctionReport {
        name: f.name.clone(),
        direction,
        fixed,
        bytes: f.end - f.start + 4 * func.piece.len() as u64,
        instructions: func.insns.len(),
        user_accesses,
        entries: entries.len(),
        findings,
    }
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
    let proven = c.map(|_| st.lb.value);
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
                (Some(p), Some(o)) => {
                    format!("only {p} proven by {}", func.describe(func.index[&o]))
                }
                (Some(p), None) => format!("only {p} proven"),
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

fn pointer_name(d: Direction) -> &'static str {
    match d {
        Direction::FromUser => "from",
        Direction::ToUser => "to",
    }
}
