//! Indirect jumps through a pointer the object owns (copygen's standalone
//! per-CPU entry: `jmp *P(%rip)`, or on i386 `call 1f; 1: pop %eax;
//! jmp *(P - 1b)(%eax)`, where `P` first holds a resolver stub and the
//! resolver stores one variant's address into it).
//!
//! Such a jump is resolved from the object, never from names or the
//! header: every value `P` can hold is collected — its initializer (the
//! relocation in its data) and every store to it in any code of the
//! object, whose source register must hold a known address there (a
//! `lea sym(%rip)`, `mov $sym`, or i386 `lea (sym - 1b)(%reg)` with `reg`
//! proven to hold `1b`). Anything else that could write `P` leaves the
//! jump unresolved: a store whose value or address is not known, any
//! other reference to `P`'s section (its address taken, a relocation in
//! data), a symbol there that other objects may write (exported with
//! default visibility), or `P` in a code section (where the assembler
//! resolves references without relocations).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use iced_x86::{
    FlowControl, Instruction, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register,
};
use object::{elf, Object, ObjectSection, ObjectSymbol, SymbolFlags};

use crate::checks::objfile::{self, Loc, ObjectFile, Reloc, RelocTarget};
use crate::front::strategy::Arch;

/// What the checker needs of an object's data: every relocation of every
/// loaded section (code too), and the symbols outside code.
#[derive(Debug, Clone, Default)]
pub struct DataFacts {
    pub relocs: BTreeMap<Loc, Reloc>,
    pub symbols: Vec<DataSym>,
}

/// A symbol outside the code sections.
#[derive(Debug, Clone)]
pub struct DataSym {
    pub name: String,
    pub loc: Loc,
    pub size: u64,
    /// Global with default or protected visibility: other objects may
    /// write it.
    pub exported: bool,
}

/// Read the [`DataFacts`] of `file` (debug sections are not loaded and
/// left out).
pub fn read_data(file: &object::File) -> Result<DataFacts> {
    let mut facts = DataFacts::default();
    for sec in file.sections() {
        let name = sec.name()?.to_string();
        if name.starts_with(".debug") || name.is_empty() {
            continue;
        }
        for (offset, r) in objfile::read_relocs(file, &sec)? {
            let place = Loc {
                section: name.clone(),
                offset,
            };
            facts.relocs.insert(place, r);
        }
    }
    for sym in file.symbols() {
        let (Some(idx), Ok(name)) = (sym.section_index(), sym.name()) else {
            continue;
        };
        let sec = file.section_by_index(idx)?;
        if sec.kind() == object::SectionKind::Text || sym.kind() == object::SymbolKind::Section {
            continue;
        }
        let visibility = match sym.flags() {
            SymbolFlags::Elf { st_other, .. } => st_other.visibility(),
            _ => elf::STV_DEFAULT,
        };
        facts.symbols.push(DataSym {
            name: name.to_string(),
            loc: Loc {
                section: sec.name()?.to_string(),
                offset: sym.address(),
            },
            size: sym.size(),
            exported: sym.is_global()
                && matches!(visibility, elf::STV_DEFAULT | elf::STV_PROTECTED),
        });
    }
    Ok(facts)
}

/// One decoded instruction of a code section, in a linear sweep.
struct Decoded {
    i: Instruction,
    /// The relocation inside its bytes: place and relocation.
    reloc: Option<(Loc, Reloc)>,
}

/// A register's known value: the address of a place in the object.
type Known = BTreeMap<u32, Loc>;

fn key(r: Register) -> u32 {
    r.full_register() as u32
}

fn is_pc32(arch: Arch, r_type: elf::RelocationType) -> bool {
    match arch {
        Arch::X86_64 => r_type == elf::R_X86_64_PC32,
        _ => r_type == elf::R_386_PC32,
    }
}

fn is_abs(arch: Arch, r_type: elf::RelocationType) -> bool {
    match arch {
        Arch::X86_64 => [elf::R_X86_64_32S, elf::R_X86_64_32, elf::R_X86_64_64].contains(&r_type),
        _ => r_type == elf::R_386_32,
    }
}

fn offset_by(l: &Loc, delta: i64) -> Option<Loc> {
    Some(Loc {
        section: l.section.clone(),
        offset: l.offset.checked_add_signed(delta)?,
    })
}

/// The place the relocated field of `d` names, when its value is known:
/// a memory operand's address (`mem`) or an immediate's value.
fn relocated_place(arch: Arch, d: &Decoded, known: &Known, mem: bool) -> Option<Loc> {
    let Some((field, r)) = d.reloc.as_ref() else {
        // `(X - 1b)(%reg)` within one section needs no relocation.
        let i = &d.i;
        let base = i.memory_base();
        if !mem
            || matches!(base, Register::None | Register::RIP)
            || i.memory_index() != Register::None
        {
            return None;
        }
        return offset_by(
            known.get(&key(base))?,
            i.memory_displacement32() as i32 as i64,
        );
    };
    let RelocTarget::Symbol(t) = &r.target else {
        return None;
    };
    let i = &d.i;
    if !mem {
        return (is_abs(arch, r.r_type) && (1..4).any(|n| is_imm(i.op_kind(n))))
            .then(|| offset_by(t, r.addend))
            .flatten();
    }
    if i.memory_index() != Register::None || i.memory_displ_size() < 4 {
        return None;
    }
    match i.memory_base() {
        Register::RIP if is_pc32(arch, r.r_type) => {
            offset_by(t, r.addend + (i.next_ip() as i64 - field.offset as i64))
        }
        Register::None if is_abs(arch, r.r_type) => offset_by(t, r.addend),
        base if is_pc32(arch, r.r_type) => {
            let at = known.get(&key(base))?;
            (at.section == field.section)
                .then(|| offset_by(t, r.addend + at.offset as i64 - field.offset as i64))
                .flatten()
        }
        _ => None,
    }
}

fn is_imm(k: OpKind) -> bool {
    matches!(
        k,
        OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64
    )
}

/// One code section, swept and with the registers known to hold an
/// address before each instruction (a must-analysis: known on every path;
/// nothing is known where code may be entered from elsewhere).
struct Section {
    insns: Vec<Decoded>,
    before: Vec<Known>,
    preds: Vec<Vec<usize>>,
    /// Where code may be entered from elsewhere (nothing known there).
    entries: BTreeSet<u64>,
}

fn sweep(obj: &ObjectFile, name: &str, bytes: &[u8]) -> Option<Section> {
    let relocs: Vec<(&Loc, &Reloc)> = obj
        .data
        .relocs
        .range(
            Loc {
                section: name.to_string(),
                offset: 0,
            }..,
        )
        .take_while(|(l, _)| l.section == name)
        .collect();
    let mut insns = Vec::new();
    for i in objfile::decode_x86(obj.arch, bytes, 0) {
        let inside: Vec<_> = relocs
            .iter()
            .filter(|(l, _)| l.offset >= i.ip() && l.offset < i.next_ip())
            .collect();
        let reloc = match inside.as_slice() {
            [] => None,
            [(l, r)] => Some(((*l).clone(), (*r).clone())),
            // Two relocated fields: not a form this reads.
            _ => return None,
        };
        insns.push(Decoded { i, reloc });
    }
    let index: BTreeMap<u64, usize> = insns
        .iter()
        .enumerate()
        .map(|(k, d)| (d.i.ip(), k))
        .collect();
    // Where code may be entered other than by falling in or a direct
    // branch: symbols, exception fixups, what relocations point at (any of
    // the places a relocated field may name), after a call.
    let mut entries: BTreeSet<u64> = BTreeSet::from([0]);
    entries.extend(
        obj.labels
            .values()
            .filter(|l| l.section == name)
            .map(|l| l.offset),
    );
    entries.extend(
        obj.functions
            .iter()
            .filter(|f| f.section == name)
            .map(|f| f.start),
    );
    entries.extend(
        obj.extable
            .iter()
            .filter(|e| e.fixup.section == name)
            .map(|e| e.fixup.offset),
    );
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); insns.len()];
    for (k, d) in insns.iter().enumerate() {
        let i = &d.i;
        let call_next =
            i.flow_control() == FlowControl::Call && i.near_branch_target() == i.next_ip();
        match i.flow_control() {
            FlowControl::Next | FlowControl::ConditionalBranch if k + 1 < insns.len() => {
                preds[k + 1].push(k);
            }
            FlowControl::Call if call_next && d.reloc.is_none() && k + 1 < insns.len() => {
                preds[k + 1].push(k)
            }
            FlowControl::Call => {
                entries.insert(i.next_ip());
            }
            _ => {}
        }
        if matches!(
            i.flow_control(),
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch
        ) && d.reloc.is_none()
        {
            // A branch into the middle of an instruction: the sweep is not
            // the code that runs.
            let &t = index.get(&i.near_branch_target())?;
            preds[t].push(k);
        }
    }
    let before = vec![Known::new(); insns.len()];
    Some(Section {
        insns,
        before,
        preds,
        entries,
    })
}

impl Section {
    /// The must-analysis of known addresses, to its fixed point.
    fn analyse(&mut self, arch: Arch, name: &str) {
        let (insns, preds, entries) = (&self.insns, &self.preds, &self.entries);
        let n = insns.len();
        let mut out: Vec<Option<Known>> = vec![None; n];
        let mut before: Vec<Known> = vec![Known::new(); n];
        let mut changed = true;
        while changed {
            changed = false;
            for k in 0..n {
                let inn = if entries.contains(&insns[k].i.ip()) {
                    Known::new()
                } else {
                    let mut it = preds[k].iter().filter_map(|&p| out[p].as_ref());
                    match it.next() {
                        None if preds[k].is_empty() => Known::new(),
                        None => continue,
                        Some(first) => {
                            let mut m = first.clone();
                            for o in it {
                                m.retain(|r, v| o.get(r) == Some(v));
                            }
                            m
                        }
                    }
                };
                let o = step(arch, name, insns, k, &inn);
                before[k] = inn;
                if out[k].as_ref() != Some(&o) {
                    out[k] = Some(o);
                    changed = true;
                }
            }
        }
        self.before = before;
    }
}

/// The registers known after instruction `k`.
fn step(arch: Arch, section: &str, insns: &[Decoded], k: usize, inn: &Known) -> Known {
    let d = &insns[k];
    let i = &d.i;
    let mut o = inn.clone();
    let mut factory = InstructionInfoFactory::new();
    for u in factory.info(i).used_registers() {
        if matches!(
            u.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        ) {
            o.remove(&key(u.register()));
        }
    }
    if i.flow_control() == FlowControl::Call {
        o.clear();
    }
    let dst = (i.op_count() > 0 && i.op0_kind() == OpKind::Register).then(|| i.op0_register());
    let wide = dst.is_some_and(|r| r.size() == if arch == Arch::X86_64 { 8 } else { 4 });
    let value = match i.mnemonic() {
        Mnemonic::Lea if wide => relocated_place(arch, d, inn, true),
        Mnemonic::Mov if wide && i.op_count() == 2 => relocated_place(arch, d, inn, false),
        // `call 1f; 1: pop %reg`: the register holds `1b`.
        Mnemonic::Pop if wide && k > 0 => {
            let p = &insns[k - 1].i;
            (p.flow_control() == FlowControl::Call
                && p.near_branch_target() == i.ip()
                && p.next_ip() == i.ip()
                && insns[k - 1].reloc.is_none())
            .then(|| Loc {
                section: section.to_string(),
                offset: i.ip(),
            })
        }
        _ => None,
    };
    if let (Some(r), Some(v)) = (dst, value) {
        o.insert(key(r), v);
    }
    o
}

/// The values a pointer may hold, or why they cannot be known.
fn pointer_values(
    obj: &ObjectFile,
    p: &Loc,
    sweeps: &BTreeMap<String, Section>,
) -> Result<BTreeSet<Loc>, String> {
    let width: u64 = if obj.arch == Arch::X86_64 { 8 } else { 4 };
    if obj.code.contains_key(&p.section) {
        return Err(format!("its pointer {p} lies in code"));
    }
    let overlaps = |l: &Loc, n: u64| {
        l.section == p.section && l.offset < p.offset + width && p.offset < l.offset + n
    };
    if let Some(s) = obj
        .data
        .symbols
        .iter()
        .find(|s| s.exported && overlaps(&s.loc, s.size.max(1)))
    {
        return Err(format!(
            "its pointer {p} is exported writable data (`{}`): other objects may store to it",
            s.name
        ));
    }
    let mut values = BTreeSet::new();
    // The initializer: one address-sized relocation at the pointer.
    let init = obj.data.relocs.get(p);
    match init {
        Some(Reloc {
            r_type,
            target: RelocTarget::Symbol(t),
            addend,
        }) if (obj.arch == Arch::X86_64 && *r_type == elf::R_X86_64_64)
            || (obj.arch == Arch::I386 && *r_type == elf::R_386_32) =>
        {
            values
                .insert(offset_by(t, *addend).ok_or("its pointer's initializer is out of range")?);
        }
        _ => {
            return Err(format!(
                "its pointer {p} starts out as no address in the object"
            ))
        }
    }
    for place in obj.data.relocs.keys() {
        if place.section == p.section && place != p && overlaps(place, width) {
            return Err(format!(
                "its pointer {p} holds another relocation at {place}"
            ));
        }
    }
    // Every reference to the pointer's section.
    for (place, r) in &obj.data.relocs {
        let RelocTarget::Symbol(t) = &r.target else {
            continue;
        };
        if t.section != p.section {
            continue;
        }
        let Some(sec) = sweeps.get(&place.section) else {
            return Err(format!(
                "{place}: a reference to {} outside code (an address taken)",
                p.section
            ));
        };
        let Some(k) = sec
            .insns
            .iter()
            .position(|d| d.reloc.as_ref().is_some_and(|(l, _)| l == place))
        else {
            return Err(format!(
                "{place}: a reference to {} in no instruction",
                p.section
            ));
        };
        let d = &sec.insns[k];
        let i = &d.i;
        let mut factory = InstructionInfoFactory::new();
        let info = factory.info(i);
        let mem: Vec<_> = info.used_memory().to_vec();
        let writes = mem.iter().any(|m| {
            !matches!(
                m.access(),
                OpAccess::Read | OpAccess::CondRead | OpAccess::NoMemAccess
            )
        });
        let text = objfile::format_x86(i);
        if i.mnemonic() == Mnemonic::Lea || mem.is_empty() {
            return Err(format!(
                "{place}: `{text}` takes the address of {}",
                p.section
            ));
        }
        if !writes {
            continue;
        }
        let at = relocated_place(obj.arch, d, &sec.before[k], true)
            .ok_or_else(|| format!("{place}: `{text}` stores where the analysis cannot tell"))?;
        if !overlaps(&at, width) {
            continue;
        }
        let src = (i.mnemonic() == Mnemonic::Mov
            && i.op_count() == 2
            && i.op1_kind() == OpKind::Register)
            .then(|| i.op1_register())
            .filter(|r| r.size() as u64 == width);
        let value = (at == *p)
            .then_some(src)
            .flatten()
            .and_then(|r| sec.before[k].get(&key(r)).cloned())
            .ok_or_else(|| {
                format!(
                    "{place}: `{text}` stores into the pointer a value that is not a known address"
                )
            })?;
        values.insert(value);
    }
    Ok(values)
}

/// Every place the indirect jump at `site` may go, resolved as the module
/// describes; Err: why it cannot be.
pub(super) fn resolve(obj: &ObjectFile, site: &Loc) -> Result<BTreeSet<Loc>, String> {
    if !matches!(obj.arch, Arch::X86_64 | Arch::I386) {
        return Err("not x86".into());
    }
    let mut sweeps = BTreeMap::new();
    for (name, bytes) in &obj.code {
        let sec = sweep(obj, name, bytes)
            .ok_or_else(|| format!("{name}: its code does not decode as one stream"))?;
        sweeps.insert(name.clone(), sec);
    }
    // Code addresses the object forms are entries too; one computed from
    // a base register is known only once the base is.
    for r in obj
        .data
        .relocs
        .iter()
        .filter(|(l, _)| !obj.code.contains_key(&l.section))
        .map(|(_, r)| r)
    {
        if let RelocTarget::Symbol(t) = &r.target {
            if let (Some(sec), Some(l)) = (sweeps.get_mut(&t.section), offset_by(t, r.addend)) {
                sec.entries.insert(l.offset);
            }
        }
    }
    loop {
        for (name, sec) in sweeps.iter_mut() {
            sec.analyse(obj.arch, name);
        }
        let mut more: Vec<Loc> = Vec::new();
        for sec in sweeps.values() {
            for (k, d) in sec.insns.iter().enumerate() {
                let Some((field, r)) = &d.reloc else {
                    if d.i.mnemonic() == Mnemonic::Lea {
                        if let Some(l) = relocated_place(obj.arch, d, &sec.before[k], true) {
                            if sweeps
                                .get(&l.section)
                                .is_some_and(|s| !s.entries.contains(&l.offset))
                            {
                                more.push(l);
                            }
                        }
                    }
                    continue;
                };
                let RelocTarget::Symbol(t) = &r.target else {
                    continue;
                };
                if !obj.code.contains_key(&t.section) {
                    continue;
                }
                let i = &d.i;
                let based = i.op_kind(0) == OpKind::Memory
                    || (1..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory);
                let place = if is_pc32(obj.arch, r.r_type)
                    && based
                    && !matches!(i.memory_base(), Register::RIP | Register::None)
                {
                    relocated_place(obj.arch, d, &sec.before[k], true).ok_or_else(|| {
                        format!("{field}: `{}` forms a code address from a base the analysis cannot tell", objfile::format_x86(i))
                    })?
                } else if is_pc32(obj.arch, r.r_type) {
                    offset_by(t, r.addend + (i.next_ip() as i64 - field.offset as i64))
                        .ok_or("a relocation out of range")?
                } else {
                    offset_by(t, r.addend).ok_or("a relocation out of range")?
                };
                if sweeps
                    .get(&place.section)
                    .is_some_and(|s| !s.entries.contains(&place.offset))
                {
                    more.push(place);
                }
            }
        }
        if more.is_empty() {
            break;
        }
        for l in more {
            if let Some(sec) = sweeps.get_mut(&l.section) {
                sec.entries.insert(l.offset);
            }
        }
    }
    let sec = &sweeps[&site.section];
    let k = sec
        .insns
        .iter()
        .position(|d| d.i.ip() == site.offset)
        .ok_or("the jump is not on the code's instruction boundaries")?;
    let d = &sec.insns[k];
    if d.i.flow_control() != FlowControl::IndirectBranch || d.i.op0_kind() != OpKind::Memory {
        return Err("a jump through a register".into());
    }
    let p = relocated_place(obj.arch, d, &sec.before[k], true)
        .ok_or("the pointer it reads is not a place in the object")?;
    let values = pointer_values(obj, &p, &sweeps)?;
    for v in &values {
        if !obj.code.contains_key(&v.section)
            || !sweeps[&v.section]
                .insns
                .iter()
                .any(|d| d.i.ip() == v.offset)
        {
            return Err(format!(
                "its pointer {p} may hold {v}, which is no code of the object"
            ));
        }
    }
    Ok(values)
}
