//! ARM instruction text as GNU as writes it (decimal immediates, `[rn]`,
//! register ranges), for the static checker's findings.

use std::fmt::Write as _;

use unarm::{AddrLdrStr, FormatIns, Ins, LdrStrOffset, RegList};

use super::arm::reg_name;

/// Instruction text as it is written for GNU as: decimal immediates.
struct Text<'a> {
    options: &'a unarm::Options,
    out: String,
}

impl std::fmt::Write for Text<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.out.push_str(s);
        Ok(())
    }
}

impl FormatIns for Text<'_> {
    fn options(&self) -> &unarm::Options {
        self.options
    }
    fn write_uimm(&mut self, uimm: u32) -> std::fmt::Result {
        write!(self, "{uimm}")
    }
    fn write_simm(&mut self, simm: i32) -> std::fmt::Result {
        write!(self, "{simm}")
    }
    /// `{r4-r10, lr}`: runs of three or more as ranges, as they are written.
    fn write_reg_list(&mut self, list: RegList) -> std::fmt::Result {
        let regs: Vec<usize> = list.iter().map(|r| r as usize).collect();
        let mut parts = Vec::new();
        let mut i = 0;
        while i < regs.len() {
            let mut j = i;
            while j + 1 < regs.len() && regs[j + 1] == regs[j] + 1 && regs[j + 1] <= 12 {
                j += 1;
            }
            match j - i {
                0 => parts.push(reg_name(regs[i]).to_string()),
                1 => parts.push(format!("{}, {}", reg_name(regs[i]), reg_name(regs[j]))),
                _ => parts.push(format!("{}-{}", reg_name(regs[i]), reg_name(regs[j]))),
            }
            i = j + 1;
        }
        write!(self, "{{{}}}", parts.join(", "))
    }
    /// `[rn]` for a zero offset, as it is written.
    fn write_addr_ldr_str(&mut self, addr: AddrLdrStr) -> std::fmt::Result {
        match addr {
            AddrLdrStr::Pre {
                rn,
                offset: LdrStrOffset::Imm(0),
                writeback: false,
            } => {
                self.write_str("[")?;
                self.write_reg(rn)?;
                self.write_str("]")
            }
            _ => unarm::FormatValue::write(&addr, self),
        }
    }
}

pub(super) fn text(ins: &Ins, options: &unarm::Options) -> String {
    let mut t = Text {
        options,
        out: String::new(),
    };
    let _ = t.write_ins(ins);
    t.out
}
