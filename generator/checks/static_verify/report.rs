//! The verdicts: one finding per problem at one instruction, one report per
//! checked function, one per file.

use std::fmt::{self, Write as _};
use std::path::PathBuf;

use crate::front::strategy::{Arch, Direction, Flavor};

/// The argument pointer(s) that are user memory: one direction's, or both
/// (one body serving `copy_to_user` and `copy_from_user`, like the
/// kernel's `copy_user_generic` and `rep_movs_alternative`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserSide {
    FromUser,
    ToUser,
    Both,
}

impl UserSide {
    pub fn name(self) -> &'static str {
        match self {
            UserSide::FromUser => "from_user",
            UserSide::ToUser => "to_user",
            UserSide::Both => "both",
        }
    }
    pub fn parse(s: &str) -> Option<UserSide> {
        [UserSide::FromUser, UserSide::ToUser, UserSide::Both]
            .into_iter()
            .find(|u| u.name() == s)
    }
}

impl From<Direction> for UserSide {
    fn from(d: Direction) -> Self {
        match d {
            Direction::FromUser => UserSide::FromUser,
            Direction::ToUser => UserSide::ToUser,
        }
    }
}

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
    pub side: UserSide,
    /// The convention it was checked against, when not the file's.
    pub convention: Option<String>,
    /// Constant size of a fixed-size entry point.
    pub fixed: Option<u64>,
    pub bytes: u64,
    pub instructions: usize,
    /// Instructions the analysis reached (the rest are reported unless
    /// they are padding).
    pub analysed: usize,
    pub user_accesses: usize,
    /// User accesses whose count after a fault is proven (in every
    /// variant): the value returned is the number of bytes not stored.
    pub counts_proven: usize,
    pub entries: usize,
    /// Entries whose instruction the analysis reached.
    pub entries_analysed: usize,
    pub findings: Vec<Finding>,
    /// The functions its jumps through its own pointer enter (resolved
    /// from the object: each is checked for the same user side).
    pub dispatches: Vec<String>,
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
    /// Every function symbol of the object, checked or not.
    pub all_functions: Vec<String>,
    /// The global functions the default selection did not check, each with
    /// why and whether it touches memory through an argument.
    pub unchecked: Vec<Unchecked>,
}

/// A global function the default selection left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    pub name: String,
    /// It loads or stores through a pointer derived from an argument: it
    /// may be a copy routine, and the file's verdict cannot be "ok".
    pub touches_arguments: bool,
}

/// What a file's report says as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every checked function passes, and every function that touches
    /// memory through an argument was checked.
    Ok,
    /// A checked function fails, a table entry lies nowhere, or nothing
    /// was checked.
    Fail,
    /// Every checked function passes, but a global function that touches
    /// memory through an argument was not checked (exit status 3).
    Incomplete,
}

impl Report {
    /// The verdict is [`Verdict::Ok`].
    pub fn passed(&self) -> bool {
        self.verdict() == Verdict::Ok
    }

    pub fn verdict(&self) -> Verdict {
        // Nothing checked proves nothing.
        if self.functions.is_empty()
            || !self.file_findings.is_empty()
            || !self.functions.iter().all(|f| f.passed())
        {
            Verdict::Fail
        } else if self.unchecked.iter().any(|u| u.touches_arguments) {
            Verdict::Incomplete
        } else {
            Verdict::Ok
        }
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
            "{}: {}, {} flavor, {}",
            self.file.display(),
            self.arch,
            self.flavor,
            self.convention
        )?;
        // Analysed/total: what the verdict covers.
        // Counts: user accesses whose count after a fault is proven.
        writeln!(
            f,
            "  {:<32} {:<9} {:>6} {:>11} {:>5} {:>9} {:>9}  verdict",
            "function", "user side", "bytes", "insns", "user", "counts", "entries"
        )?;
        for r in &self.functions {
            let verdict = if r.passed() { "ok" } else { "FAIL" };
            writeln!(
                f,
                "  {:<32} {:<9} {:>6} {:>11} {:>5} {:>9} {:>9}  {verdict}",
                r.name,
                r.side.name(),
                r.bytes,
                format!("{}/{}", r.analysed, r.instructions),
                r.user_accesses,
                format!("{}/{}", r.counts_proven, r.user_accesses),
                format!("{}/{}", r.entries_analysed, r.entries)
            )?;
            if let Some(c) = &r.convention {
                writeln!(f, "    checked against the {c}")?;
            }
            for x in &r.findings {
                writeln!(f, "    {x}")?;
            }
        }
        for x in &self.file_findings {
            writeln!(f, "  error: {x}")?;
        }
        for u in &self.unchecked {
            let (verdict, why) = if u.touches_arguments {
                ("NOT CHECKED", "it loads or stores through an argument, but has no exception-table entry and is not named *_from_user / *_to_user")
            } else {
                ("not checked", "no exception-table entry, not named *_from_user / *_to_user, and no memory access through an argument")
            };
            writeln!(
                f,
                "  {:<32} {:<9} {:>6} {:>11} {:>5} {:>9} {:>9}  {verdict}",
                u.name, "-", "", "", "", "", ""
            )?;
            writeln!(
                f,
                "    {why}; check it with --function {}:from_user (or :to_user, :both)",
                u.name
            )?;
        }
        if self.verdict() == Verdict::Incomplete {
            writeln!(
                f,
                "  incomplete: the checked functions pass, but not every function that touches memory through an argument was checked"
            )?;
        }
        if self.functions.is_empty() {
            writeln!(
                f,
                "  no function to check: none has exception-table entries or is named *_from_user / *_to_user (use --function)"
            )?;
        }
        Ok(())
    }
}

/// Text of a report for several files, and the verdict of them all: a
/// failure anywhere fails, else an incomplete file makes it incomplete.
pub fn render_reports(reports: &[Report]) -> (String, Verdict) {
    let mut s = String::new();
    let mut all = Verdict::Ok;
    for r in reports {
        let _ = write!(s, "{r}");
        all = match (all, r.verdict()) {
            (Verdict::Fail, _) | (_, Verdict::Fail) => Verdict::Fail,
            (Verdict::Incomplete, _) | (_, Verdict::Incomplete) => Verdict::Incomplete,
            _ => Verdict::Ok,
        };
    }
    (s, all)
}
