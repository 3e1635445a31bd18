//! Assembling each side's files and listing their functions: decoded
//! instructions with branch targets and fixups renamed `L1`, `L2`, ...

use super::*;

/// One assembled file.
pub(super) struct Built {
    pub(super) obj: ObjectFile,
    pub(super) path: PathBuf,
}

pub(super) fn object_rel(rel: &str) -> PathBuf {
    Path::new(rel).with_extension("o")
}

/// Assemble `src` into `dir/<rel>.o`; a file GNU as rejects is bad input.
pub(super) fn build(src: &Source, dir: &Path, shown_side: &str) -> Result<Built> {
    let obj_path = dir.join(object_rel(&src.rel));
    let s_path = obj_path.with_extension("S");
    std::fs::create_dir_all(obj_path.parent().expect("has parent"))?;
    std::fs::write(&s_path, &src.text)?;
    objfile::assemble(&s_path, &obj_path, &Assemble::new(src.arch, src.flavor)).map_err(|e| {
        let msg = format!("{e:#}");
        if msg.contains("not found: install") {
            e
        } else {
            input(format!(
                "error: {shown_side}: {} does not assemble: {}",
                src.rel,
                msg.replace(&s_path.display().to_string(), &src.rel)
            ))
        }
    })?;
    let obj = objfile::read_path(&obj_path).map_err(|e| {
        input(format!(
            "error: {shown_side}: {}: cannot read the object: {e:#}",
            src.rel
        ))
    })?;
    Ok(Built {
        obj,
        path: obj_path,
    })
}

/// Decoded instructions of one function: `(address, text)` in order.
pub(super) type Insns = Vec<(u64, String, Option<u64>)>;

/// x86 instructions of `f`: (address, text with `{target}` for a near
/// branch, branch target).
pub(super) fn insns_x86(obj: &ObjectFile, f: &FnSym) -> Insns {
    use iced_x86::OpKind;
    objfile::decode_x86(obj.arch, obj.bytes_of(f), f.start)
        .iter()
        .map(|i| {
            let target = (0..i.op_count())
                .any(|k| {
                    matches!(
                        i.op_kind(k),
                        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                    )
                })
                .then(|| i.near_branch_target());
            (i.ip(), format_branch_x86(i, target), target)
        })
        .collect()
}

/// GNU as text of `i`, with its branch target printed as `{target}`.
pub(super) fn format_branch_x86(i: &iced_x86::Instruction, target: Option<u64>) -> String {
    use iced_x86::{Formatter, SymbolResolver, SymbolResult};
    struct Placeholder(Option<u64>);
    impl SymbolResolver for Placeholder {
        fn symbol(
            &mut self,
            instruction: &iced_x86::Instruction,
            _operand: u32,
            instruction_operand: Option<u32>,
            address: u64,
            _size: u32,
        ) -> Option<SymbolResult<'_>> {
            use iced_x86::OpKind;
            let k = instruction.op_kind(instruction_operand?);
            (Some(address) == self.0
                && matches!(
                    k,
                    OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
                ))
            .then(|| SymbolResult::with_str(address, "{target}"))
        }
    }
    let mut f = iced_x86::GasFormatter::with_options(Some(Box::new(Placeholder(target))), None);
    f.options_mut().set_uppercase_hex(false);
    f.options_mut().set_space_after_operand_separator(true);
    // `movq`, as the emitted files spell it.
    f.options_mut().set_gas_show_mnemonic_size_suffix(true);
    let mut s = String::new();
    f.format(i, &mut s);
    s
}

/// objdump's disassembly of every code section: section → [(address, text
/// with `{target}`, branch target)].
pub(super) fn objdump_all(path: &Path, arch: Arch) -> Result<BTreeMap<String, Insns>> {
    let objdump = crate::toolchain::toolchain(arch).objdump;
    let tool = objdump.program;
    let out = objdump.output(
        objdump
            .command()
            .args(["-d", "--no-show-raw-insn", "-z"])
            .arg(path),
    )?;
    if !out.status.success() {
        return Err(anyhow!(
            "{tool} {}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut sections: BTreeMap<String, Insns> = BTreeMap::new();
    let mut current = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if let Some(s) = line.strip_prefix("Disassembly of section ") {
            current = s.trim_end_matches(':').to_string();
            continue;
        }
        let Some((addr, rest)) = line.split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        // Drop objdump's comments (`@ 0x14 <x+0x14>`, `; ...`).
        let rest = rest.split(['@', ';']).next().unwrap_or("").trim_end();
        let mut text = rest.replace('\t', " ");
        let mut target = None;
        // A branch operand reads `1c <sym+0x1c>`.
        if let Some(lt) = text.find(" <") {
            let head = &text[..lt];
            let start = head.rfind([' ', ',']).map_or(0, |i| i + 1);
            if let Ok(t) = u64::from_str_radix(&head[start..], 16) {
                target = Some(t);
                text = format!("{}{{target}}", &head[..start]);
            }
        }
        sections
            .entry(current.clone())
            .or_default()
            .push((addr, text, target));
    }
    Ok(sections)
}

/// A function's listing and its exception-table entries named as the
/// listing names them.
pub(super) struct Listing {
    /// Labels numbered by first appearance, user accesses marked with
    /// their fixup, no addresses or encodings.
    pub(super) lines: Vec<String>,
    /// `(instruction, fixup)` of each entry of [`ObjectFile::entries_of`],
    /// in its order: the instruction's text as its line prints it (without
    /// the user mark; `+0x1a`, its offset in the function, when no
    /// instruction starts there) and the fixup's label.
    pub(super) entries: Vec<(String, String)>,
}

/// The listing of `f` (empty `insns`: no lines, entries named by offset).
pub(super) fn listing(
    obj: &ObjectFile,
    f: &FnSym,
    insns: &[(u64, String, Option<u64>)],
) -> Listing {
    let fixups: BTreeMap<u64, Loc> = obj
        .entries_of(f)
        .map(|e| (e.insn.offset, e.fixup.clone()))
        .collect();
    let inside = |l: &Loc| f.contains(l);
    // Addresses that get a label line: branch targets and fixups inside f.
    let mut targets: std::collections::BTreeSet<u64> = insns
        .iter()
        .filter_map(|i| i.2)
        .filter(|&t| (f.start..f.end).contains(&t))
        .collect();
    targets.extend(fixups.values().filter(|l| inside(l)).map(|l| l.offset));
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut outside: HashMap<Loc, String> = HashMap::new();
    let name_of = |at: u64, names: &mut HashMap<u64, String>| -> String {
        let n = names.len() + 1;
        names.entry(at).or_insert_with(|| format!("L{n}")).clone()
    };
    let far = |l: &Loc, outside: &mut HashMap<Loc, String>| -> String {
        let n = outside.len() + 1;
        outside
            .entry(l.clone())
            .or_insert_with(|| format!("F{n}"))
            .clone()
    };
    let mut out = Vec::new();
    // The text of each instruction with an entry, labels named.
    let mut texts: HashMap<u64, String> = HashMap::new();
    for (addr, text, target) in insns {
        if targets.contains(addr) {
            let l = name_of(*addr, &mut names);
            out.push(format!("{l}:"));
        }
        let mut line = text.clone();
        if let Some(t) = target {
            let tl = Loc {
                section: f.section.clone(),
                offset: *t,
            };
            let label = if inside(&tl) {
                name_of(*t, &mut names)
            } else if let Some(g) = obj.function_at(&tl) {
                format!("{}+{:#x}", g.name, t - g.start)
            } else {
                far(&tl, &mut outside)
            };
            line = line.replace("{target}", &label);
        }
        if let Some(fx) = fixups.get(addr) {
            let label = if inside(fx) {
                name_of(fx.offset, &mut names)
            } else {
                far(fx, &mut outside)
            };
            texts.insert(*addr, line.clone());
            line.push_str(&format!(" ; user \u{2192} fixup {label}"));
        }
        out.push(format!("\t{line}"));
    }
    // An instruction with two entries shows one in its line; the other's
    // fixup is named after the lines' labels.
    let entries = obj
        .entries_of(f)
        .map(|e| {
            let insn = texts
                .get(&e.insn.offset)
                .cloned()
                .unwrap_or_else(|| format!("+{:#x}", e.insn.offset - f.start));
            let fixup = if inside(&e.fixup) {
                name_of(e.fixup.offset, &mut names)
            } else {
                far(&e.fixup, &mut outside)
            };
            (insn, fixup)
        })
        .collect();
    Listing {
        lines: out,
        entries,
    }
}

/// A listing line with its label names (`L3`, `F1`) replaced by `L?`, and
/// the names in order.
pub(super) fn abstract_labels(line: &str) -> (String, Vec<&str>) {
    let mut out = String::with_capacity(line.len());
    let mut labels = Vec::new();
    let mut rest = line;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (word, tail) = if end == 0 {
            let n = rest.chars().next().map_or(1, char::len_utf8);
            rest.split_at(n)
        } else {
            rest.split_at(end)
        };
        let is_label = word.len() > 1
            && (word.starts_with('L') || word.starts_with('F'))
            && word[1..].bytes().all(|b| b.is_ascii_digit());
        if is_label {
            out.push_str("L?");
            labels.push(word);
        } else {
            out.push_str(word);
        }
        rest = tail;
    }
    (out, labels)
}

/// Rename the labels of `new` after the `old` labels they stand for, so an
/// inserted or dropped label does not renumber every later one: lines that
/// are equal with the names abstracted pair their labels up; labels only
/// `new` has get numbers after the highest of `old`, in order of appearance.
/// `extra` (texts naming `new`'s labels that are not lines of its listing)
/// is renamed the same way.
pub(super) fn align_labels(
    old: &[String],
    new: &[String],
    extra: &[String],
) -> (Vec<String>, Vec<String>) {
    let a: Vec<(String, Vec<&str>)> = old.iter().map(|l| abstract_labels(l)).collect();
    let b: Vec<(String, Vec<&str>)> = new.iter().map(|l| abstract_labels(l)).collect();
    let x: Vec<(String, Vec<&str>)> = extra.iter().map(|l| abstract_labels(l)).collect();
    let ka: Vec<&str> = a.iter().map(|x| x.0.as_str()).collect();
    let kb: Vec<&str> = b.iter().map(|x| x.0.as_str()).collect();
    let mut map: HashMap<&str, String> = HashMap::new();
    let mut taken: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let ops = super::edit_script(&ka, &kb);
    // A label is where it is defined: pair definitions first, so a branch
    // that now goes elsewhere shows as changed; then references to labels
    // defined elsewhere (fixups in another section).
    for definitions in [true, false] {
        for op in &ops {
            let similar::DiffOp::Equal {
                old_index,
                new_index,
                len,
            } = *op
            else {
                continue;
            };
            for k in 0..len {
                if (ka[old_index + k] == "L?:") != definitions {
                    continue;
                }
                let (la, lb) = (&a[old_index + k].1, &b[new_index + k].1);
                for (x, y) in la.iter().zip(lb) {
                    if x[..1] == y[..1] && !map.contains_key(y) && !taken.contains(x) {
                        map.insert(y, x.to_string());
                        taken.insert(x);
                    }
                }
            }
        }
    }
    let mut next: HashMap<char, usize> = HashMap::new();
    for (_, labels) in &a {
        for l in labels {
            let n: usize = l[1..].parse().unwrap_or(0);
            let e = next.entry(l.chars().next().unwrap()).or_insert(0);
            *e = (*e).max(n);
        }
    }
    let mut lines: Vec<String> = b
        .iter()
        .chain(&x)
        .map(|(text, labels)| {
            let mut out = String::new();
            let mut parts = text.split("L?");
            out.push_str(parts.next().unwrap_or(""));
            for (label, part) in labels.iter().zip(parts) {
                let name = map.entry(label).or_insert_with(|| {
                    let kind = label.chars().next().unwrap();
                    let e = next.entry(kind).or_insert(0);
                    *e += 1;
                    format!("{kind}{e}")
                });
                out.push_str(name);
                out.push_str(part);
            }
            out
        })
        .collect();
    let extra = lines.split_off(b.len());
    (lines, extra)
}
