//! The GNU as (AT&T) printer of x86 [`Inst`]s (`RET`/`ASM_STAC` in the
//! linux flavour).

use super::inst::{Cpp, Directive, FeatureTest, Inst, MemRef, SymBase, SymRef};
use super::Line;
use crate::front::strategy::{Flavor, PrefetchKind};

fn mem_text(m: &MemRef, ptr_width: u32) -> String {
    let disp = if m.disp == 0 {
        String::new()
    } else {
        m.disp.to_string()
    };
    match m.index {
        None => format!("{disp}({})", m.base.name(ptr_width)),
        Some((i, 1)) => format!("{disp}({},{})", m.base.name(ptr_width), i.name(ptr_width)),
        Some((i, s)) => format!(
            "{disp}({},{},{s})",
            m.base.name(ptr_width),
            i.name(ptr_width)
        ),
    }
}

fn suffix(width: u32) -> &'static str {
    match width {
        1 => "b",
        2 => "w",
        4 => "l",
        _ => "q",
    }
}

/// The AT&T text of one instruction (`RET`/`ASM_STAC` in the linux flavour).
pub fn print_inst(inst: &Inst, ptr_width: u32, flavor: Flavor) -> String {
    let pw = ptr_width;
    match inst {
        Inst::Label(l) => format!("{l}:"),
        Inst::Comment(c) => format!("\t/* {c} */"),
        Inst::Blank => String::new(),
        Inst::Cond(Cpp::IfKernelBefore(r)) => format!(
            "#if LINUX_VERSION_CODE < KERNEL_VERSION({}, {}, 0)",
            r.major, r.minor
        ),
        Inst::Cond(Cpp::Endif) => "#endif".to_string(),
        Inst::Directive(d) => directive(d),
        Inst::Load { width, reg, mem } => {
            format!(
                "\tmov{}\t{}, {}",
                suffix(*width),
                mem_text(mem, pw),
                reg.name(*width)
            )
        }
        Inst::Store { width, reg, mem } => {
            format!(
                "\tmov{}\t{}, {}",
                suffix(*width),
                reg.name(*width),
                mem_text(mem, pw)
            )
        }
        Inst::Mov { width, dst, src } => {
            format!(
                "\tmov{}\t{}, {}",
                suffix(*width),
                src.name(*width),
                dst.name(*width)
            )
        }
        Inst::MovImm { width, dst, imm } => {
            format!("\tmov{}\t${imm}, {}", suffix(*width), dst.name(*width))
        }
        Inst::Lea { width, dst, mem } => {
            format!(
                "\tlea{}\t{}, {}",
                suffix(*width),
                mem_text(mem, pw),
                dst.name(*width)
            )
        }
        Inst::AluImm {
            op,
            width,
            reg,
            imm,
            hex,
        } => {
            let imm = if *hex {
                format!("{imm:#x}")
            } else {
                imm.to_string()
            };
            format!(
                "\t{}{}\t${imm}, {}",
                op.name(),
                suffix(*width),
                reg.name(*width)
            )
        }
        Inst::AluReg {
            op,
            width,
            dst,
            src,
        } => {
            format!(
                "\t{}{}\t{}, {}",
                op.name(),
                suffix(*width),
                src.name(*width),
                dst.name(*width)
            )
        }
        Inst::Shr { width, reg, imm } => {
            format!("\tshr{}\t${imm}, {}", suffix(*width), reg.name(*width))
        }
        Inst::Jcc { cc, target } => format!("\tj{}\t{target}", cc.name()),
        Inst::Jmp { target } => format!("\tjmp\t{target}"),
        Inst::RepMovs { unit } => format!("\trep movs{}", suffix(*unit)),
        Inst::RepStosb => "\trep stosb".to_string(),
        Inst::Prefetch { kind, mem } => {
            let name = match kind {
                PrefetchKind::Nta => "prefetchnta",
                PrefetchKind::T0 => "prefetcht0",
                PrefetchKind::Pld
                | PrefetchKind::Pldl1keep
                | PrefetchKind::Pldl1strm
                | PrefetchKind::Touch => unreachable!("not an x86 prefetch"),
            };
            format!("\t{name}\t{}", mem_text(mem, pw))
        }
        Inst::Push(r) => format!("\tpush{}\t{}", suffix(pw), r.name(pw)),
        Inst::Pop(r) => format!("\tpop{}\t{}", suffix(pw), r.name(pw)),
        Inst::PushBare(r) => format!("\tpush\t{}", r.name(pw)),
        Inst::PopBare(r) => format!("\tpop\t{}", r.name(pw)),
        Inst::Cpuid => "\tcpuid".to_string(),
        Inst::Call { target } => format!("\tcall\t{target}"),
        Inst::JmpThrough(m) => format!("\tjmp\t*{}", sym_text(m, pw)),
        Inst::LeaSym { width, dst, mem } => format!(
            "\tlea{}\t{}, {}",
            suffix(*width),
            sym_text(mem, pw),
            dst.name(*width)
        ),
        Inst::StoreSym { width, reg, mem } => format!(
            "\tmov{}\t{}, {}",
            suffix(*width),
            reg.name(*width),
            sym_text(mem, pw)
        ),
        // NOPs in the object, the jump patched in where the test holds (so
        // the code after the slot is reached in the object too); the
        // second entry wins where both apply: NOPs where its test fails.
        Inst::AltJmp { target, first, and } => {
            let holds = alt_condition(*first);
            match and {
                None => format!("\tALTERNATIVE \"\", \"jmp {target}\", {holds}"),
                Some(t) => {
                    let fails = alt_condition(t.negated());
                    format!("\tALTERNATIVE_2 \"\", \"jmp {target}\", {holds}, \"\", {fails}")
                }
            }
        }
        Inst::Stac => "\tASM_STAC".to_string(),
        Inst::Clac => "\tASM_CLAC".to_string(),
        Inst::Ret => match flavor {
            Flavor::Linux => "\tRET".to_string(),
            Flavor::Standalone => "\tret".to_string(),
        },
    }
}

/// An `ALTERNATIVE`'s feature argument that applies where `t` holds.
fn alt_condition(t: FeatureTest) -> String {
    let name = t.feature.kernel_macro();
    if t.present {
        name.to_string()
    } else {
        format!("ALT_NOT({name})")
    }
}

/// Print one routine for GNU as.
pub fn print(lines: &[Line], ptr_width: u32, flavor: Flavor) -> crate::backend::Function {
    crate::backend::print_lines(lines, |i| print_inst(i, ptr_width, flavor))
}

fn sym_text(m: &SymRef, ptr_width: u32) -> String {
    match &m.base {
        SymBase::Rip => format!("{}(%rip)", m.sym),
        SymBase::Anchor { reg, anchor } => {
            format!("({} - {anchor})({})", m.sym, reg.name(ptr_width))
        }
    }
}

fn directive(d: &Directive) -> String {
    match d {
        Directive::PushData => "\t.pushsection .data".into(),
        Directive::PopSection => "\t.popsection".into(),
        Directive::Balign(n) => format!("\t.balign\t{n}"),
        Directive::Globl(s) => format!("\t.globl\t{s}"),
        Directive::Hidden(s) => format!("\t.hidden\t{s}"),
        Directive::TypeObject(s) => format!("\t.type\t{s}, @object"),
        Directive::Size(s, n) => format!("\t.size\t{s}, {n}"),
        Directive::Pointer { width, label } => {
            format!("\t{}\t{label}", if *width == 8 { ".quad" } else { ".long" })
        }
    }
}
