//! One function's control-flow graph: its instructions (with, on ARM, its
//! piece of `.text.fixup`), exception-table edges from each user access to
//! its fixup, and the successors of each instruction.

use std::collections::{BTreeMap, BTreeSet};

use super::abi::AbiSpec;
use super::domain::State;
use super::isa::{isa_for, Flow, Insn, FIXUP_BASE};
use super::report::{Finding, Severity};
use crate::checks::objfile::{ExtableEntry, FnSym, Loc, ObjectFile};
use crate::front::strategy::Arch;
use crate::kernel::extable::{x86_handler, X86Handler};

pub(super) struct Func<'a> {
    pub(super) obj: &'a ObjectFile,
    pub(super) abi: &'a AbiSpec,
    pub(super) insns: Vec<Insn>,
    pub(super) index: BTreeMap<u64, usize>,
    /// Entry (fixup index) of each instruction that has one.
    pub(super) fault: BTreeMap<usize, usize>,
    /// x86: what the entry's handler does to the registers on the way to
    /// the fixup, where it does anything (its type word's type).
    pub(super) handler: BTreeMap<usize, X86Handler>,
    pub(super) succ: Vec<Vec<usize>>,
    /// The instruction after each one (fallthrough), if in the function.
    pub(super) fall: Vec<Option<usize>>,
    pub(super) findings: Vec<Finding>,
    /// Instructions with an exception-table entry, usable or not.
    pub(super) listed: BTreeSet<usize>,
    /// Offsets of the function's `.text.fixup` words (ARM).
    pub(super) piece: Vec<u64>,
    /// Indirect jumps the analysis could not follow, and why.
    pub(super) unresolved: BTreeMap<usize, String>,
    /// Why an indirect jump through memory could not be resolved.
    pub(super) indirect_why: BTreeMap<usize, String>,
    /// The functions its resolved indirect jumps enter (tail calls).
    pub(super) dispatches: BTreeSet<String>,
    /// Its exception-table entries.
    pub(super) entries: Vec<ExtableEntry>,
    /// The instruction at the function's symbol.
    pub(super) entry: usize,
    /// Instructions `0..own` are the function's symbol and fixup piece;
    /// the rest is local code it reaches.
    pub(super) own: usize,
    /// Findings (also in `findings`) on exception-table entries that serve
    /// no access in this code (stray, or not on an instruction boundary),
    /// by the entry's instruction: with `ALTERNATIVE`s an entry may serve
    /// the code of another variant only.
    pub(super) idle: Vec<(Loc, Finding)>,
}

impl Func<'_> {
    pub(super) fn finding(&mut self, severity: Severity, k: usize, message: String) {
        let f = self.make_finding(severity, k, message);
        if !self.findings.contains(&f) {
            self.findings.push(f);
        }
    }

    fn make_finding(&self, severity: Severity, k: usize, message: String) -> Finding {
        // A function that decodes to nothing (a crafted object) still gets
        // its finding, at its entry.
        let Some(i) = self.insns.get(k) else {
            return Finding {
                severity,
                addr: 0,
                section: String::new(),
                insn: String::new(),
                line: None,
                message,
            };
        };
        Finding {
            severity,
            addr: i.loc.offset,
            section: i.loc.section.clone(),
            insn: i.text.clone(),
            line: self.obj.line_at(&i.loc),
            message,
        }
    }

    /// An error on the entry for `entry` (reported at instruction `k`):
    /// it serves no access here.
    pub(super) fn idle_entry(&mut self, entry: &Loc, k: usize, message: String) {
        let f = self.make_finding(Severity::Error, k, message);
        self.idle.push((entry.clone(), f.clone()));
        if !self.findings.contains(&f) {
            self.findings.push(f);
        }
    }

    pub(super) fn describe(&self, k: usize) -> String {
        let i = &self.insns[k];
        match self.obj.line_at(&i.loc) {
            Some(l) => format!("`{}` at {} (line {l})", i.text, i.loc),
            None => format!("`{}` at {}", i.text, i.loc),
        }
    }

    pub(super) fn transfer(&self, k: usize, st: &State) -> State {
        let insn = &self.insns[k];
        let mut after = insn.semantics.transfer(insn, st, self.abi);
        after.track(st, insn.addr, &insn.written);
        after
    }

    /// The state an instruction runs in (a conditional one: its condition holds).
    pub(super) fn exec_state(&self, k: usize, st: &State) -> State {
        let mut s = st.clone();
        if self.insns[k].cond_exec {
            super::analysis::refine(self.insns[k].cc, &mut s, true);
        }
        s
    }
}

/// The `.text.fixup` instructions (4-byte ARM words) of each function:
/// offset → owner. With line info a word belongs to the function whose
/// source it sits in (its `.pushsection` lies between the function's
/// first line and the next function's); without, the pieces follow the
/// order of the functions' first fixup targets there.
pub(super) fn fixup_owners(obj: &ObjectFile) -> BTreeMap<u64, String> {
    let mut owners = BTreeMap::new();
    let Some(code) = obj.code.get(".text.fixup") else {
        return owners;
    };
    let text_fns: Vec<&FnSym> = obj
        .functions
        .iter()
        .filter(|f| f.section == ".text")
        .collect();
    let words = (0..code.len() as u64 / 4).map(|w| w * 4);
    let mut by_line: Vec<(u32, &str)> = text_fns
        .iter()
        .filter_map(|f| obj.line_of(f.start).map(|l| (l, f.name.as_str())))
        .collect();
    by_line.sort();
    let have_lines = obj.section_lines.contains_key(".text.fixup") && !by_line.is_empty();
    if have_lines {
        for o in words {
            let loc = Loc {
                section: ".text.fixup".into(),
                offset: o,
            };
            let Some(line) = obj.line_at(&loc) else {
                continue;
            };
            if let Some((_, name)) = by_line.iter().rev().find(|(l, _)| *l <= line) {
                owners.insert(o, name.to_string());
            }
        }
        return owners;
    }
    let mut starts: Vec<(u64, &str)> = text_fns
        .iter()
        .filter_map(|f| {
            obj.entries_of(f)
                .filter(|e| e.fixup.section == ".text.fixup")
                .map(|e| e.fixup.offset)
                .min()
                .map(|o| (o, f.name.as_str()))
        })
        .collect();
    starts.sort();
    for o in words {
        if let Some((_, name)) = starts.iter().rev().find(|(s, _)| *s <= o) {
            owners.insert(o, name.to_string());
        }
    }
    owners
}

impl<'a> Func<'a> {
    /// Decode `f` (with its piece of `.text.fixup` and the local code it
    /// reaches), attach its exception-table entries and build the control
    /// flow; problems with the entries and the flow become findings.
    pub(super) fn build(
        obj: &'a ObjectFile,
        f: &FnSym,
        owners: &BTreeMap<u64, String>,
        abi: &'a AbiSpec,
    ) -> Func<'a> {
        // Its piece, and that of any symbol sharing its code (`ENTRY(a)`
        // then `WEAK(b)`: two names for one body, one set of fixups).
        let sharing: BTreeSet<&str> = obj
            .functions
            .iter()
            .filter(|g| g.section == f.section && g.start < f.end && f.start < g.end)
            .map(|g| g.name.as_str())
            .collect();
        let piece: Vec<u64> = owners
            .iter()
            .filter(|(_, n)| sharing.contains(n.as_str()))
            .map(|(&o, _)| o)
            .collect();
        let addr_of = |l: &Loc| -> Option<u64> {
            if l.section == f.section {
                Some(l.offset)
            } else if l.section == ".text.fixup" {
                Some(FIXUP_BASE + l.offset)
            } else {
                None
            }
        };
        let isa = isa_for(obj.arch);
        let mut insns = isa.decode(obj, &f.section, f.start..f.end, &addr_of, abi);
        // The `.text.fixup` piece, one run of consecutive words at a time.
        let mut k = 0;
        while k < piece.len() {
            let mut j = k + 1;
            while j < piece.len() && piece[j] == piece[j - 1] + 4 {
                j += 1;
            }
            let run = piece[k]..piece[j - 1] + 4;
            insns.extend(isa.decode(obj, ".text.fixup", run, &addr_of, abi));
            k = j;
        }
        let own = insns.len();
        // Local code it reaches (a `SYM_CODE_START_LOCAL` tail, whose
        // symbol the assembler drops): code in the function's section that
        // lies in no function symbol, from each branch or fixup target there
        // to the next symbol.
        let in_any_function = |a: u64| {
            obj.functions
                .iter()
                .any(|g| g.section == f.section && g.start <= a && a < g.end)
        };
        let section_end = obj.code.get(&f.section).map_or(0, |c| c.len() as u64);
        let mut done = BTreeSet::new();
        loop {
            let decoded: BTreeSet<u64> = insns.iter().map(|i| i.addr).collect();
            let entry_fixups = obj.extable.iter().filter_map(|e| {
                let a = addr_of(&e.insn)?;
                decoded.contains(&a).then(|| addr_of(&e.fixup)).flatten()
            });
            let targets: Vec<u64> = insns
                .iter()
                .filter_map(|i| match i.flow {
                    Flow::Jump(t) | Flow::CondJump(t) => Some(t),
                    _ => None,
                })
                .chain(entry_fixups)
                .filter(|&t| {
                    t < FIXUP_BASE
                        && t < section_end
                        && !decoded.contains(&t)
                        && !in_any_function(t)
                        && done.insert(t)
                })
                .collect();
            if targets.is_empty() {
                break;
            }
            for t in targets {
                let next = obj
                    .functions
                    .iter()
                    .filter(|g| g.section == f.section && g.start > t)
                    .map(|g| g.start)
                    .min()
                    .unwrap_or(section_end);
                let have: BTreeSet<u64> = insns.iter().map(|i| i.addr).collect();
                let more = isa.decode(obj, &f.section, t..next, &addr_of, abi);
                insns.extend(more.into_iter().take_while(|i| !have.contains(&i.addr)));
            }
        }
        let index: BTreeMap<u64, usize> =
            insns.iter().enumerate().map(|(k, i)| (i.addr, k)).collect();
        let mut func = Func {
            obj,
            abi,
            insns,
            index,
            fault: BTreeMap::new(),
            handler: BTreeMap::new(),
            succ: Vec::new(),
            fall: Vec::new(),
            findings: Vec::new(),
            listed: BTreeSet::new(),
            piece: Vec::new(),
            unresolved: BTreeMap::new(),
            indirect_why: BTreeMap::new(),
            dispatches: BTreeSet::new(),
            entries: Vec::new(),
            entry: 0,
            own,
            idle: Vec::new(),
        };
        func.entry = func.index.get(&f.start).copied().unwrap_or(0);
        let decoded: BTreeSet<u64> = func.index.keys().copied().collect();
        let in_function = |l: &Loc| {
            f.contains(l)
                || (l.section == ".text.fixup" && piece.contains(&l.offset))
                || (l.section == f.section
                    && !in_any_function(l.offset)
                    && decoded.contains(&l.offset))
        };
        // Its entries: on its own code, its fixup piece and the local code.
        let entries: Vec<ExtableEntry> = obj
            .extable
            .iter()
            .filter(|e| in_function(&e.insn))
            .cloned()
            .collect();

        // Exception-table entries: boundaries and fixups inside the function.
        for e in &entries {
            let Some(&k) = addr_of(&e.insn).and_then(|a| func.index.get(&a)) else {
                let near = addr_of(&e.insn)
                    .and_then(|a| func.index.range(..a).next_back().map(|(_, &k)| k))
                    .unwrap_or(0);
                func.idle_entry(
                    &e.insn,
                    near,
                    format!(
                        "exception-table entry at {} is not an instruction boundary",
                        e.insn
                    ),
                );
                continue;
            };
            func.listed.insert(k);
            if !in_function(&e.fixup) {
                let other = obj
                    .function_at(&e.fixup)
                    .map(|g| format!(" (in {})", g.name))
                    .or_else(|| {
                        (e.fixup.section == ".text.fixup")
                            .then(|| owners.get(&e.fixup.offset))
                            .flatten()
                            .map(|g| format!(" (in the .text.fixup piece of {g})"))
                    })
                    .unwrap_or_default();
                func.finding(
                    Severity::Error,
                    k,
                    format!("fixup {} lies outside the function{other}", e.fixup),
                );
                continue;
            }
            let Some(&fx) = addr_of(&e.fixup).and_then(|a| func.index.get(&a)) else {
                func.finding(
                    Severity::Error,
                    k,
                    format!("fixup {} is not an instruction boundary", e.fixup),
                );
                continue;
            };
            let handler = e
                .type_word
                .map(x86_handler)
                .filter(|_| matches!(func.abi.arch, Arch::X86_64 | Arch::I386));
            if let Some(h) = handler.filter(|&h| h != X86Handler::Resume) {
                func.handler.insert(k, h);
            }
            if func.fault.insert(k, fx).is_some() {
                func.finding(
                    Severity::Error,
                    k,
                    "two exception-table entries for one instruction".into(),
                );
            }
        }

        // A jump to another function's entry is a tail call (a per-CPU entry
        // point entering its variant): that function is checked on its own,
        // and here the jump ends the path as a return does.
        for k in 0..func.insns.len() {
            let Flow::Jump(t) = func.insns[k].flow else {
                continue;
            };
            let section = &func.insns[k].loc.section;
            let callee = obj
                .functions
                .iter()
                .find(|g| g.global && &g.section == section && g.start == t && g.name != f.name);
            if let (false, Some(g)) = (func.index.contains_key(&t), callee) {
                func.insns[k].flow = Flow::Return;
                let note = format!("tail call to {}", g.name);
                func.finding(Severity::Note, k, note);
            }
        }

        // A jump through a pointer the object owns goes where the pointer
        // may point (`dispatch`): code here, or other functions' entries
        // (tail calls, each checked on its own).
        let mut extra: Vec<(usize, usize)> = Vec::new();
        for k in 0..func.insns.len() {
            if func.insns[k].flow != Flow::Indirect
                || !matches!(obj.arch, Arch::X86_64 | Arch::I386)
            {
                continue;
            }
            let targets = match super::variant_pointer::resolve(obj, &func.insns[k].loc) {
                Ok(t) => t,
                Err(why) => {
                    func.indirect_why.insert(k, why);
                    continue;
                }
            };
            let mut here = Vec::new();
            let mut tails = Vec::new();
            let mut stray = None;
            for t in &targets {
                let callee = obj
                    .functions
                    .iter()
                    .find(|g| g.global && g.section == t.section && g.start == t.offset);
                match (addr_of(t).and_then(|a| func.index.get(&a)), callee) {
                    (Some(&s), _) => here.push(s),
                    (None, Some(g)) if g.name != f.name => tails.push(g.name.clone()),
                    _ => stray = Some(t.clone()),
                }
            }
            if let Some(t) = stray {
                func.indirect_why.insert(
                    k,
                    format!("it may go to {t}, neither code of this function nor another function's entry"),
                );
                continue;
            }
            extra.extend(here.iter().map(|&s| (k, s)));
            func.insns[k].flow = if tails.is_empty() {
                Flow::Stop
            } else {
                Flow::Return
            };
            if !tails.is_empty() {
                let note = format!("dispatches to {}", tails.join(", "));
                func.finding(Severity::Note, k, note);
            }
            func.dispatches.extend(tails);
        }

        // Control flow.
        let n = func.insns.len();
        let mut succ = vec![Vec::new(); n];
        let mut fall = vec![None; n];
        for (k, out) in succ.iter_mut().enumerate() {
            let i = func.insns[k].clone();
            fall[k] = func.index.get(&(i.addr + i.len)).copied();
            let mut needs_fall = i.cond_exec;
            match i.flow {
                Flow::Return | Flow::Stop => {}
                Flow::Jump(t) | Flow::CondJump(t) => {
                    if matches!(i.flow, Flow::CondJump(_)) {
                        needs_fall = true;
                    }
                    match func.index.get(&t) {
                        Some(&t) => out.push(t),
                        None => {
                            func.finding(Severity::Error, k, "jumps outside the function".into())
                        }
                    }
                }
                // Followed (or reported) by the analysis.
                Flow::Indirect => {}
                Flow::Next => needs_fall = true,
            }
            if needs_fall {
                match fall[k] {
                    // Conditional branches list the fallthrough first.
                    Some(s) => out.insert(0, s),
                    // Padding at the end of the code is never run.
                    None if i.pad => {}
                    None => func.finding(
                        Severity::Error,
                        k,
                        "runs off the end of the function".into(),
                    ),
                }
            }
        }
        for (k, s) in extra {
            if !succ[k].contains(&s) {
                succ[k].push(s);
            }
        }
        func.succ = succ;
        func.fall = fall;
        func.piece = piece;
        func.entries = entries;
        func
    }
}
