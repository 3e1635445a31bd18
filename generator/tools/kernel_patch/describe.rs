//! The commit message's account of the change, from the strategy: per size
//! class what runs, per variant the CPUs it serves, and what the tree's own
//! routine does at the same sizes.

use std::fmt::Write as _;

use crate::front::strategy::{
    AliasFirst, Align, AlignBy, AlignPointer, Arch, Condition, KernelVersion, Method, MethodKind,
    RepTail, SizeClass, Strategy, Tail,
};

/// `lo..=hi` in words: `0-7 bytes`, `64 bytes and up`.
fn sizes(c: &SizeClass) -> String {
    match c.hi {
        Some(hi) if hi == c.lo => format!("{} bytes", c.lo),
        Some(hi) => format!("{}-{hi} bytes", c.lo),
        None => format!("{} bytes and up", c.lo),
    }
}

fn pointer(p: AlignPointer) -> &'static str {
    match p {
        AlignPointer::Dst => "the destination",
        AlignPointer::Src => "the source",
        AlignPointer::Both => "both pointers",
        AlignPointer::Congruent => "the congruent pointers",
    }
}

/// `aligning the destination to 8 (one word where it lies)`.
fn aligning(a: &Align) -> String {
    format!(
        "aligning {} to {}{}",
        pointer(a.pointer),
        a.to,
        if a.by == AlignBy::Word {
            " (one word where it lies)"
        } else {
            ""
        }
    )
}

/// What a method does, in a phrase.
pub fn method(m: &Method) -> String {
    match &m.kind {
        MethodKind::Bytes => "a byte loop".into(),
        MethodKind::HeadTail { width, .. } => {
            format!("overlapping head and tail copies of up to {width}-byte words")
        }
        MethodKind::RepMovs { unit: 1, align, .. } => match align {
            Some(a) => format!("rep movsb after {}", aligning(a)),
            None => "rep movsb".into(),
        },
        MethodKind::RepMovs { unit, align, tail } => {
            let mut s = format!(
                "rep movs of {unit}-byte units, then {}",
                match tail {
                    RepTail::RepMovsb => "rep movsb",
                    RepTail::Bytes => "a byte loop",
                }
            );
            if let Some(a) = align {
                let _ = write!(s, ", after {}", aligning(a));
            }
            s
        }
        MethodKind::ShiftCombine { width, .. } => format!(
            "aligned {width}-byte loads of the source shifted into aligned stores \
             (a co-aligned source takes a word loop)"
        ),
        MethodKind::Unrolled(u) => {
            let mut s = format!("a {}-byte loop of {}-byte registers", u.block, u.width);
            if let Some(a) = &u.align {
                let _ = write!(s, " after {}", aligning(a));
            }
            if let Some(p) = &u.prefetch {
                let _ = write!(s, ", prefetching {} ahead", p.kind);
            }
            s.push_str(match u.tail {
                Tail::Bytes => ", then a byte tail",
                Tail::Words => ", then words and bytes",
                Tail::Overlap => ", then words and one overlapping last word",
                Tail::OverlapBlock => ", then one overlapping last block",
                Tail::RepMovsb => ", then rep movsb",
                Tail::RepMovs => ", then rep movs and rep movsb",
            });
            s
        }
    }
}

fn condition(c: &Condition) -> String {
    match c {
        Condition::Alias { lo, hi } => {
            format!("when (dst - src) mod 4096 is in {lo}..{hi}")
        }
        Condition::Aligned { pointer: p, to } => format!("when {} are {to}-aligned", pointer(*p))
            .replace("the destination are", "the destination is")
            .replace("the source are", "the source is"),
    }
}

/// One line per size class (and per guard, indented under it); then the
/// alias-first band's classes, indented under a line of their own.
fn dispatch(classes: &[SizeClass], alias_first: Option<&AliasFirst>, indent: &str) -> String {
    let mut out = size_classes(classes, indent);
    if let Some(a) = alias_first {
        let sizes = if a.from > 0 {
            format!("from {} bytes, ", a.from)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{indent}{sizes}{}, tested first:",
            condition(&a.condition())
        );
        out.push_str(&size_classes(&a.classes, &format!("{indent}  ")));
    }
    out
}

fn size_classes(classes: &[SizeClass], indent: &str) -> String {
    let mut out = String::new();
    for c in classes {
        let _ = writeln!(out, "{indent}{}: {}.", sizes(c), method(&c.method));
        for g in &c.guards {
            let _ = writeln!(
                out,
                "{indent}  {}: {} instead.",
                condition(&g.condition),
                method(&g.method)
            );
        }
    }
    out
}

/// What the strategy runs, per variant when it has variants.
pub fn strategy(t: &Strategy) -> String {
    if t.variants.is_empty() {
        return format!(
            "What the new routine does, by size:\n{}",
            dispatch(&t.classes, t.alias_first.as_ref(), "  ")
        );
    }
    let mut out = String::from(
        "What the new routine does, per CPU (the first variant whose features\n\
         the CPU has), by size:\n",
    );
    for v in &t.variants {
        let who = match &v.when {
            Some(c) => format!("CPUs with {}", c.kernel_text()),
            None => "every other CPU".into(),
        };
        let _ = writeln!(out, "  {} ({who}):", v.name);
        out.push_str(&dispatch(&v.classes, v.alias_first.as_ref(), "    "));
    }
    out
}

/// The tree's own routine at the same place, in words, as the stock
/// sources of Debian's 6.1 and 6.12 trees have it.
pub fn stock(
    arch: Arch,
    kernel: KernelVersion,
    replaces_rep_movs_alternative: bool,
) -> &'static str {
    match (arch, kernel) {
        (Arch::X86_64, KernelVersion::V6_12) if replaces_rep_movs_alternative => {
            "It replaces rep_movs_alternative (arch/x86/lib/copy_user_64.S), which\n\
             copy_user_generic() calls on CPUs without FSRM (FSRM CPUs run an\n\
             inline rep movsb): below 8 bytes a byte loop, below 64 bytes an\n\
             8-byte word loop then bytes, from 64 bytes rep movsb on ERMS CPUs,\n\
             otherwise one unaligned word, rep movsq on the aligned destination\n\
             and a byte tail."
        }
        (Arch::X86_64, KernelVersion::V6_12) => {
            "Stock 6.12 inlines copy_user_generic(): rep movsb on FSRM CPUs, else a\n\
             call of rep_movs_alternative (bytes below 8, 8-byte words below 64,\n\
             then rep movsb on ERMS CPUs or rep movsq)."
        }
        (Arch::X86_64, _) => {
            "Stock 6.1's copy_user_generic() picks one of three routines on\n\
             REP_GOOD and ERMS: copy_user_enhanced_fast_string (rep movsb),\n\
             copy_user_generic_string (rep movsq then rep movsb), or\n\
             copy_user_generic_unrolled (a 64-byte loop of 8-byte words)."
        }
        (Arch::I386, _) => {
            "Stock __copy_user_ll() copies with rep movsl and rep movsb (the\n\
             destination first aligned to 8 from 8 bytes on), or with the Intel\n\
             unrolled loop (__copy_user_intel) for copies of 64 bytes and more\n\
             whose pointers movsl_is_ok() finds misaligned to each other."
        }
        (Arch::Armv6, _) => {
            "Stock arm_copy_{from,to}_user (copy_template.S) align the\n\
             destination to 4, copy 32-byte blocks with ldm/stm (shifting when\n\
             the pointers are misaligned to each other), then words and bytes."
        }
        (Arch::Aarch64, _) => {
            "Stock __arch_copy_{from,to}_user (copy_template.S, removed here with\n\
             the two files that include it) align the source to 16, copy 64-byte\n\
             blocks with ldp/stp pairs on the kernel side and ldtr/sttr on the\n\
             user side, then 16-, 8-, 4-, 2- and 1-byte tails."
        }
        (Arch::Riscv64, _) => {
            "Stock __asm_copy_{to,from}_user (arch/riscv/lib/uaccess.S) align the\n\
             destination to 8, copy 8-byte words (unrolled by 8) when the source\n\
             is co-aligned, shift and combine words when it is not, then bytes."
        }
    }
}

/// A phrase for the subject: what the largest sizes run.
pub fn headline(t: &Strategy) -> String {
    if !t.variants.is_empty() {
        let names: Vec<&str> = t.variants.iter().map(|v| v.name.as_str()).collect();
        return format!("per-CPU variants ({})", names.join(", "));
    }
    let Some(top) = t.classes.last() else {
        return "a generated routine".into();
    };
    let short = match &top.method.kind {
        MethodKind::Bytes => "a byte loop".to_string(),
        MethodKind::HeadTail { .. } => "overlapping head and tail copies".into(),
        MethodKind::RepMovs { unit: 1, .. } => "rep movsb".into(),
        MethodKind::RepMovs { unit, .. } => format!("rep movs of {unit}-byte units"),
        MethodKind::ShiftCombine { .. } => "shifted word copies".into(),
        MethodKind::Unrolled(u) => format!("a {}-byte unrolled loop", u.block),
    };
    if top.lo == 0 {
        short
    } else {
        format!("{short} from {} bytes", top.lo)
    }
}
