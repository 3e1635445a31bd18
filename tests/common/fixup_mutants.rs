//! Fixup mutants of an emitted standalone `.S`: textual edits of one
//! function's fixup code and exception table, found by their labels
//! (`.L…_fixup_…`) in the emitted text. Each mutant has a name and still
//! assembles; `tests/mutation_agreement.rs` runs the static verifier and
//! fault injection on each.
//!
//! The kinds:
//! - swap: two entries of the function's table trade fixup targets (two
//!   adjusting fixups; the plain retry and an adjusting fixup);
//! - offset: the length adjustment of the `_fixup_N_then_…` block with
//!   the largest `N` moves by ±1 and ±the word width;
//! - dropped retry: the fixup jumps to the return path (`_fixup_done`)
//!   instead of the byte retry (`_fixup_retry`, or `_fixup_step` under
//!   block precision);
//! - wrong return: the return path returns the source pointer, or 0,
//!   instead of the length left.

use copygen::front::strategy::Arch;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Swap,
    Offset,
    DroppedRetry,
    WrongReturn,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Swap => "swap",
            Kind::Offset => "offset",
            Kind::DroppedRetry => "dropped retry",
            Kind::WrongReturn => "wrong return",
        }
    }
}

pub struct FixupMutant {
    pub kind: Kind,
    /// What the edit does, in the emitted file's labels.
    pub name: String,
    pub text: String,
}

/// What the edits write, in one arch's assembler syntax.
struct Syntax {
    jump: &'static str,
    /// The word width: the larger offset change.
    width: i64,
    /// The length register as printed.
    len: &'static str,
    /// The return path's instruction, returning the source pointer or 0.
    ret_src: &'static str,
    ret_zero: &'static str,
}

fn syntax(arch: Arch) -> Syntax {
    match arch {
        Arch::X86_64 => Syntax {
            jump: "jmp",
            width: 8,
            len: "%rdx",
            ret_src: "\tmovq\t%rsi, %rax",
            ret_zero: "\txorl\t%eax, %eax",
        },
        Arch::I386 => Syntax {
            jump: "jmp",
            width: 4,
            len: "%ecx",
            ret_src: "\tmovl\t%esi, %eax",
            ret_zero: "\txorl\t%eax, %eax",
        },
        Arch::Armv6 => Syntax {
            jump: "b",
            width: 4,
            len: "r2",
            ret_src: "\tmov\tr0, r1",
            ret_zero: "\tmov\tr0, #0",
        },
        Arch::Aarch64 => Syntax {
            jump: "b",
            width: 8,
            len: "x2",
            ret_src: "\tmov\tx0, x1",
            ret_zero: "\tmov\tx0, #0",
        },
        Arch::Riscv64 => Syntax {
            jump: "j",
            width: 8,
            len: "a2",
            ret_src: "\tmv\ta0, a1",
            ret_zero: "\tli\ta0, 0",
        },
    }
}

/// One exception-table row: its line and the two labels.
struct Entry {
    line: usize,
    insn: String,
    fixup: String,
}

/// `function`'s lines in the emitted text: its body and its table.
struct Function {
    lines: Vec<String>,
    body: std::ops::Range<usize>,
    entries: Vec<Entry>,
    retry: usize,
    done: usize,
}

fn is_label(l: &str) -> bool {
    l.starts_with(".L") && l.ends_with(':')
}

fn label_of(l: &str) -> &str {
    l.trim_end_matches(':')
}

/// `.long A - ., B - .` (relative) or `.long A, B` (absolute).
fn entry_labels(l: &str) -> Option<(String, String)> {
    let rest = l.trim().strip_prefix(".long")?;
    let (a, b) = rest.split_once(',')?;
    let clean = |s: &str| s.trim().trim_end_matches("- .").trim().to_string();
    Some((clean(a), clean(b)))
}

fn function(text: &str, name: &str) -> Function {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let start = lines
        .iter()
        .position(|l| *l == format!("{name}:"))
        .unwrap_or_else(|| panic!("no function {name}"));
    let size = format!("\t.size\t{name},");
    let end = start
        + lines[start..]
            .iter()
            .position(|l| l.starts_with(&size))
            .unwrap_or_else(|| panic!("no .size of {name}"));
    let table = end
        + lines[end..]
            .iter()
            .position(|l| l.trim() == ".pushsection __ex_table, \"a\"")
            .unwrap_or_else(|| panic!("no table after {name}"));
    assert!(
        lines[end + 1..table].iter().all(|l| l.trim().is_empty()),
        "{name}: its table follows it"
    );
    let pop = table
        + lines[table..]
            .iter()
            .position(|l| l.trim() == ".popsection")
            .unwrap();
    let entries: Vec<Entry> = (table..pop)
        .filter_map(|i| {
            entry_labels(&lines[i]).map(|(insn, fixup)| Entry {
                line: i,
                insn,
                fixup,
            })
        })
        .collect();
    assert!(!entries.is_empty(), "{name}: no table entries");
    let find = |ends: &[&str]| {
        (start..end)
            .find(|&i| is_label(&lines[i]) && ends.iter().any(|e| label_of(&lines[i]).ends_with(e)))
            .unwrap_or_else(|| panic!("{name}: no label ending {ends:?}"))
    };
    let retry = find(&["_fixup_retry", "_fixup_step"]);
    let done = find(&["_fixup_done"]);
    Function {
        body: start..end,
        entries,
        retry,
        done,
        lines,
    }
}

impl Function {
    fn label(&self, i: usize) -> &str {
        label_of(&self.lines[i])
    }

    /// The `N` of a `_fixup_N_then_…` label.
    fn block_n(label: &str) -> Option<i64> {
        let (_, rest) = label.split_once("_fixup_")?;
        let (n, _) = rest.split_once("_then_")?;
        n.parse().ok()
    }

    /// The adjusting block with the largest `N`: its label line and the
    /// line of the next label.
    fn largest_block(&self) -> Option<(usize, usize, i64)> {
        self.body
            .clone()
            .filter(|&i| is_label(&self.lines[i]))
            .filter_map(|i| Some((i, Self::block_n(self.label(i))?)))
            .max_by_key(|&(_, n)| n)
            .map(|(i, n)| {
                let next = (i + 1..self.body.end)
                    .find(|&j| is_label(&self.lines[j]))
                    .unwrap_or(self.body.end);
                (i, next, n)
            })
    }

    fn with(&self, edits: &[(usize, Option<String>)], inserts: &[(usize, String)]) -> String {
        let mut out = String::new();
        for (i, l) in self.lines.iter().enumerate() {
            for (at, text) in inserts {
                if *at == i {
                    out.push_str(text);
                    out.push('\n');
                }
            }
            match edits.iter().find(|(at, _)| *at == i) {
                Some((_, Some(t))) => out.push_str(t),
                Some((_, None)) => continue,
                None => out.push_str(l),
            }
            out.push('\n');
        }
        out
    }
}

/// The line with its `$N`/`#N`/`N` operand of magnitude `n` moved `by`
/// away from 0 (None: no such operand, or it would not stay positive).
fn bump(line: &str, n: i64, by: i64) -> Option<String> {
    let (mnemonic, operands) = line.trim_start().split_once('\t')?;
    let mut found = false;
    let ops: Vec<String> = operands
        .split(", ")
        .map(|op| {
            let prefix: String = op.chars().take_while(|c| *c == '$' || *c == '#').collect();
            match op[prefix.len()..].parse::<i64>() {
                Ok(v) if v.abs() == n && !found && n + by > 0 => {
                    found = true;
                    format!("{prefix}{}", v.signum() * (n + by))
                }
                _ => op.to_string(),
            }
        })
        .collect();
    found.then(|| format!("\t{mnemonic}\t{}", ops.join(", ")))
}

/// Whether `line` writes register `reg` with an operand of magnitude `n`
/// (AT&T syntax writes its last operand, the others their first).
fn adjusts(line: &str, reg: &str, n: i64) -> bool {
    let Some((_, operands)) = line.trim_start().split_once('\t') else {
        return false;
    };
    let ops: Vec<&str> = operands.split(", ").collect();
    let dest = if reg.starts_with('%') {
        ops.last()
    } else {
        ops.first()
    };
    dest == Some(&reg)
        && ops.iter().any(|op| {
            op.trim_start_matches(['$', '#'])
                .parse::<i64>()
                .map(i64::abs)
                == Ok(n)
        })
}

/// The fixup mutants of `function` in the emitted standalone text.
pub fn fixup_mutants(arch: Arch, text: &str, function_name: &str) -> Vec<FixupMutant> {
    let syn = syntax(arch);
    let f = function(text, function_name);
    let retry = f.label(f.retry).to_string();
    let done = f.label(f.done).to_string();
    let mut out = Vec::new();
    let mut push = |kind, name: String, t: String| {
        assert_ne!(t, text, "{function_name}: {name} changes nothing");
        out.push(FixupMutant {
            kind,
            name,
            text: t,
        });
    };
    let short = |l: &str| l.trim_start_matches(".L").to_string();

    // (a) Swapped targets: entries into the retry loop itself (their
    // target is the return path) are left alone, a swap there loops.
    let movable: Vec<&Entry> = f.entries.iter().filter(|e| e.fixup != done).collect();
    let adjusting = |e: &&&Entry| Function::block_n(&e.fixup).is_some();
    let mut pairs: Vec<(&Entry, &Entry)> = Vec::new();
    let first_adj = movable.iter().find(adjusting);
    if let Some(a) = first_adj {
        if let Some(b) = movable.iter().find(|b| adjusting(b) && b.fixup != a.fixup) {
            pairs.push((a, b));
        }
        if let Some(r) = movable.iter().find(|e| e.fixup == retry) {
            pairs.push((r, a));
        }
    }
    for (a, b) in pairs {
        let swap = |e: &Entry, to: &str| {
            let (head, tail) = f.lines[e.line].split_once(',').unwrap();
            Some(format!("{head},{}", tail.replacen(&e.fixup, to, 1)))
        };
        push(
            Kind::Swap,
            format!(
                "swap the fixups of `{}` and `{}`",
                short(&a.insn),
                short(&b.insn)
            ),
            f.with(
                &[(a.line, swap(a, &b.fixup)), (b.line, swap(b, &a.fixup))],
                &[],
            ),
        );
    }

    // (b) Off-by-one and off-by-a-word adjustments in the adjusting block
    // with the largest N.
    let block = f.largest_block();
    if let Some((at, next, n)) = block {
        let name = short(f.label(at));
        let len_line = (at + 1..next)
            .find(|&i| adjusts(&f.lines[i], syn.len, n))
            .unwrap_or_else(|| panic!("{name}: no length adjustment"));
        for by in [1, -1, syn.width, -syn.width] {
            if let Some(l) = bump(&f.lines[len_line], n, by) {
                push(
                    Kind::Offset,
                    format!("`{name}`: length {}{by}", if by > 0 { "+" } else { "" }),
                    f.with(&[(len_line, Some(l))], &[]),
                );
            }
        }
    }

    // (c) The retry dropped: for every fault (the retry loop is gone, its
    // label now the return path's, and so are its table rows), and for
    // that block.
    assert!(
        f.retry < f.done,
        "{function_name}: the retry precedes the return path"
    );
    let gone: Vec<String> = (f.retry + 1..f.done)
        .filter(|&i| is_label(&f.lines[i]))
        .map(|i| f.label(i).to_string())
        .collect();
    let mut edits: Vec<(usize, Option<String>)> =
        (f.retry + 1..f.done).map(|i| (i, None)).collect();
    edits.extend(
        f.entries
            .iter()
            .filter(|e| gone.contains(&e.insn))
            .map(|e| (e.line, None)),
    );
    push(
        Kind::DroppedRetry,
        format!("no retry: `{}` is `{}`", short(&retry), short(&done)),
        f.with(&edits, &[]),
    );
    if let Some((at, next, _)) = block {
        let name = short(f.label(at));
        let jump = format!("\t{}\t{retry}", syn.jump);
        let to_done = format!("\t{}\t{done}", syn.jump);
        let t = match (at + 1..next).find(|&i| f.lines[i] == jump) {
            Some(i) => f.with(&[(i, Some(to_done))], &[]),
            // It falls through into the retry.
            None => f.with(&[], &[(next, to_done)]),
        };
        push(
            Kind::DroppedRetry,
            format!("`{name}` jumps to `{}`", short(&done)),
            t,
        );
    }

    // (d) The return path returns another value.
    let ret = (f.done + 1..f.body.end)
        .find(|&i| !f.lines[i].trim_start().starts_with("/*"))
        .unwrap();
    assert!(
        f.lines[ret].contains(syn.len),
        "{function_name}: the return path `{}` returns the length",
        f.lines[ret]
    );
    for (what, line) in [("the source pointer", syn.ret_src), ("0", syn.ret_zero)] {
        push(
            Kind::WrongReturn,
            format!("`{}` returns {what}", short(&done)),
            f.with(&[(ret, Some(line.to_string()))], &[]),
        );
    }
    out
}
