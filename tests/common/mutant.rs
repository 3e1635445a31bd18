//! The static verifier's mutant table: a row edits the text the generator
//! emits for a preset and lists what the verifier must report on it
//! ([`Mutant::check`]); `tests/static_verify.rs` holds the rows.

use copygen::checks::static_verify::{Finding, Options, Severity};
use copygen::front::strategy::{Arch, Flavor};
use copygen::output::render::render;

use super::static_check::{check_text, findings_of, line_number, line_of_label, strategy};

/// A source line, found in the mutant's text.
#[derive(Clone, Copy)]
pub enum At {
    /// The first instruction at or after `label:`.
    Label(&'static str),
    /// The line that reads exactly this.
    Line(&'static str),
    /// The line after (or before) the one that reads exactly this.
    After(&'static str),
    Before(&'static str),
    /// One line past the first instruction after `label:`.
    PastLabel(&'static str),
}

impl At {
    pub fn line(self, text: &str) -> u32 {
        match self {
            At::Label(l) => line_of_label(text, l),
            At::Line(l) => line_number(text, l),
            At::After(l) => line_number(text, l) + 1,
            At::Before(l) => line_number(text, l) - 1,
            At::PastLabel(l) => line_of_label(text, l) + 1,
        }
    }
}

/// One edit of the emitted text; each asserts that what it edits is there.
pub enum Edit {
    /// Replace the first `from` with `to`.
    First(&'static str, String),
    /// Insert text after the first `anchor`.
    After(&'static str, String),
    /// Insert `label:` before the first (or the last) `at`.
    LabelBefore(&'static str, &'static str, bool),
    /// Replace every `from` before the first `marker` with `to`.
    AllBefore(&'static str, &'static str, &'static str),
}

impl Edit {
    pub fn apply(&self, text: &str) -> String {
        let present = |s: &str| assert!(text.contains(s), "{s:?} is not in the text");
        match self {
            Edit::First(from, to) => {
                present(from);
                text.replacen(from, to, 1)
            }
            Edit::After(anchor, t) => {
                present(anchor);
                text.replacen(anchor, &format!("{anchor}{t}"), 1)
            }
            Edit::LabelBefore(at, label, last) => {
                present(at);
                let i = if *last { text.rfind(at) } else { text.find(at) }.unwrap();
                format!("{}{label}:\n{}", &text[..i], &text[i..])
            }
            Edit::AllBefore(marker, from, to) => {
                let (head, tail) = text.split_at(text.find(marker).unwrap());
                assert!(head.contains(from), "{from:?} is not before {marker:?}");
                head.replace(from, to) + tail
            }
        }
    }
}

/// How many findings of the severity the file may have.
#[derive(Clone, Copy, PartialEq)]
pub enum Count {
    /// At least one matches.
    Some,
    /// It is the only one.
    Only,
    /// Every one matches, and there are this many (`None`: at least one).
    All(Option<usize>),
}

/// A finding the verifier must report.
pub struct Expect {
    pub severity: Severity,
    pub function: &'static str,
    /// Texts the message contains; a line adds ` (line N)` after its text.
    pub message: Vec<(&'static str, Option<At>)>,
    pub line: Option<At>,
    /// The source line of the finding reads this.
    pub line_text: Option<&'static str>,
    /// The instruction, exactly or (`true`) as a prefix.
    pub insn: Option<(&'static str, bool)>,
    pub section: Option<&'static str>,
    pub count: Count,
    /// No other function fails.
    pub only_failing: bool,
}

pub struct Mutant {
    pub arch: Arch,
    pub preset: &'static str,
    pub flavor: Flavor,
    pub what: &'static str,
    pub edits: Vec<Edit>,
    pub expect: Vec<Expect>,
    /// With the vector state allowed, the file passes.
    pub vector_allowed: bool,
}

pub fn mutant(arch: Arch, preset: &'static str, flavor: Flavor, what: &'static str) -> Mutant {
    Mutant {
        arch,
        preset,
        flavor,
        what,
        edits: Vec::new(),
        expect: Vec::new(),
        vector_allowed: false,
    }
}

impl Mutant {
    pub fn edit(mut self, e: Edit) -> Self {
        self.edits.push(e);
        self
    }
    pub fn first(self, from: &'static str, to: &str) -> Self {
        self.edit(Edit::First(from, to.to_string()))
    }
    pub fn after(self, anchor: &'static str, text: &str) -> Self {
        self.edit(Edit::After(anchor, text.to_string()))
    }
    pub fn finding(
        mut self,
        severity: Severity,
        function: &'static str,
        msg: &'static str,
    ) -> Self {
        self.expect.push(Expect {
            severity,
            function,
            message: vec![(msg, None)],
            line: None,
            line_text: None,
            insn: None,
            section: None,
            count: Count::Some,
            only_failing: false,
        });
        self
    }
    pub fn error(self, function: &'static str, msg: &'static str) -> Self {
        self.finding(Severity::Error, function, msg)
    }
    pub fn warning(self, function: &'static str, msg: &'static str) -> Self {
        self.finding(Severity::Warning, function, msg)
    }
    pub fn last(&mut self) -> &mut Expect {
        self.expect.last_mut().expect("a finding first")
    }
    pub fn at(mut self, at: At) -> Self {
        self.last().line = Some(at);
        self
    }
    pub fn insn(mut self, insn: &'static str) -> Self {
        self.last().insn = Some((insn, false));
        self
    }
    pub fn insn_prefix(mut self, insn: &'static str) -> Self {
        self.last().insn = Some((insn, true));
        self
    }
    pub fn msg(mut self, text: &'static str) -> Self {
        self.last().message.push((text, None));
        self
    }
    /// The message names source line `at` after `text`.
    pub fn msg_line(mut self, text: &'static str, at: At) -> Self {
        self.last().message.push((text, Some(at)));
        self
    }
    pub fn only(mut self) -> Self {
        self.last().count = Count::Only;
        self
    }
    pub fn all(mut self, n: Option<usize>) -> Self {
        self.last().count = Count::All(n);
        self
    }
    pub fn line_text(mut self, text: &'static str) -> Self {
        self.last().line_text = Some(text);
        self
    }
    pub fn section(mut self, s: &'static str) -> Self {
        self.last().section = Some(s);
        self
    }
    pub fn only_failing(mut self) -> Self {
        self.last().only_failing = true;
        self
    }
    pub fn vector_allowed_passes(mut self) -> Self {
        self.vector_allowed = true;
        self
    }

    /// The mutant's text, its report, and every way it falls short of the
    /// row.
    pub fn check(&self) -> Vec<String> {
        let s = strategy(self.preset);
        assert_eq!(s.arch, self.arch, "{}", self.preset);
        let text = render(&s, self.flavor);
        let m = self.edits.iter().fold(text.clone(), |t, e| e.apply(&t));
        assert_ne!(m, text);
        let file = format!("{}.S", self.preset);
        let r = check_text(&m, &file, &Options::default());
        let mut bad = Vec::new();
        for e in &self.expect {
            let all = findings_of(&r, e.severity);
            let message: Vec<String> = e
                .message
                .iter()
                .map(|(t, at)| match at {
                    Some(at) => format!("{t}(line {})", at.line(&m)),
                    None => t.to_string(),
                })
                .collect();
            let line = e.line.map(|a| a.line(&m));
            let ok = |(n, f): &(String, Finding)| {
                n == e.function
                    && !f.insn.is_empty()
                    && message.iter().all(|t| f.message.contains(t.as_str()))
                    && line.is_none_or(|l| f.line == Some(l))
                    && e.line_text.is_none_or(|t| {
                        f.line
                            .and_then(|l| m.lines().nth(l as usize - 1))
                            .is_some_and(|s| s == t)
                    })
                    && e.insn.is_none_or(|(i, prefix)| {
                        if prefix {
                            f.insn.starts_with(i)
                        } else {
                            f.insn == i
                        }
                    })
                    && e.section.is_none_or(|s| f.section == s)
            };
            let held = match e.count {
                Count::Some => all.iter().any(ok),
                Count::Only => all.len() == 1 && ok(&all[0]),
                Count::All(n) => {
                    n.is_none_or(|n| all.len() == n) && !all.is_empty() && all.iter().all(ok)
                }
            };
            let verdict = (e.severity == Severity::Error) != r.passed();
            let failing_ok = !e.only_failing
                || r.functions
                    .iter()
                    .filter(|f| !f.passed())
                    .all(|f| f.name == e.function);
            if !(held && verdict && failing_ok) {
                bad.push(format!(
                    "{:?} {} {}: {}: expected {:?} in {} ({message:?}, line {line:?}, {:?}); report:\n{r}",
                    self.arch, self.preset, self.flavor, self.what, e.severity, e.function, e.insn
                ));
            }
        }
        if self.vector_allowed {
            let allowed = Options {
                allow_vector: true,
                ..Options::default()
            };
            let r = check_text(&m, &file, &allowed);
            if !r.passed() {
                bad.push(format!("{}: fails with vectors allowed:\n{r}", self.what));
            }
        }
        bad
    }
}
