//! The verdicts: one finding per problem at one instruction, one report per
//! checked function, one per file.

use std::fmt::{self, Write as _};
use std::path::PathBuf;

use crate::ir::{Arch, Direction, Flavor};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// One finding, at one instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// Offset in `section`.
    pub addr: u64,
    /// `.text`, or `.text.fixup` for ARM linux-flavour fixups.
    pub section: String,
    /// The instruction (x86: AT&T syntax; ARM: unified syntax).
    pub insn: String,
    /// Source line (from DWARF; `.S` inputs are assembled with `-g`).
    pub line: Option<u32>,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.section == ".text" {
            write!(f, "{} at {:#x}", self.severity, self.addr)?;
        } else {
            write!(f, "{} at {}+{:#x}", self.severity, self.section, self.addr)?;
        }
        if let Some(l) = self.line {
            write!(f, " (line {l})")?;
        }
        write!(f, " `{}`: {}", self.insn, self.message)
    }
}

#[derive(Debug, Clone)]
pub struct FunctionReport {
    pub name: String,
    pub direction: Direction,
    /// Constant size of a fixed-size entry point.
    pub fixed: Option<u64>,
    pub bytes: u64,
    pub instructions: usize,
    pub user_accesses: usize,
    pub entries: usize,
    pub findings: Vec<Finding>,
}

impl FunctionReport {
    pub fn passed(&self) -> bool {
        self.findings.iter().all(|f| f.severity != Severity::Error)
    }
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }
}

#[derive(Debug, Clone)]
pub struct Report {
    pub file: PathBuf,
    pub arch: Arch,
    pub flavor: Flavor,
    /// The convention the functions were checked against, in words.
    pub convention: String,
    pub functions: Vec<FunctionReport>,
    /// Problems outside any checked function (stray table entries).
    pub file_findings: Vec<String>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.file_findings.is_empty() && self.functions.iter().all(|f| f.passed())
    }

    /// Every finding of every function, for tests and summaries.
    pub fn findings(&self) -> impl Iterator<Item = (&str, &Finding)> {
        self.functions
            .iter()
            .flat_map(|f| f.findings.iter().map(move |x| (f.name.as_str(), x)))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {}, {} flavour, {}",
            self.file.display(),
            self.arch,
            self.flavor,
            self.convention
        )?;
        writeln!(
            f,
            "  {:<32} {:>6} {:>6} {:>5} {:>7}  verdict",
            "function", "bytes", "insns", "user", "entries"
        )?;
        for r in &self.functions {
            let verdict = if r.passed() { "ok" } else { "FAIL" };
            writeln!(
                f,
                "  {:<32} {:>6} {:>6} {:>5} {:>7}  {verdict}",
                r.name, r.bytes, r.instructions, r.user_accesses, r.entries
            )?;
            for x in &r.findings {
                writeln!(f, "    {x}")?;
            }
        }
        for x in &self.file_findings {
            writeln!(f, "  error: {x}")?;
        }
        if self.functions.is_empty() {
            writeln!(f, "  no *_from_user / *_to_user function found")?;
        }
        Ok(())
    }
}

/// Text of a report for several files, and whether all passed.
pub fn render_reports(reports: &[Report]) -> (String, bool) {
    let mut s = String::new();
    let mut ok = true;
    for r in reports {
        let _ = write!(s, "{r}");
        ok &= r.passed();
    }
    (s, ok)
}
