//! What makes the patch a mail a kernel developer sends: the author and
//! the `Signed-off-by:` trailers (validated: they go into mail headers), a
//! subject in the subsystem's style, the figures, and a commit message
//! whose lines `scripts/checkpatch.pl` accepts (at most 75 columns).

use std::fmt::Write as _;

/// The longest line checkpatch accepts in a commit message
/// (COMMIT_LOG_LONG_LINE).
pub const MAX_COLUMNS: usize = 75;

/// The longest subject summary (after `[PATCH] `), as for body lines.
pub const MAX_SUBJECT: usize = 75;

/// Who sends the patch, who signs it off, and what it measured.
#[derive(Debug, Clone)]
pub struct Mail {
    pub author: Identity,
    /// The `Signed-off-by:` trailers, in order; the author is among them.
    pub signed_off_by: Vec<Identity>,
    /// The figures (checked by [`figures`]) and the CPU they were measured
    /// on ([`cpu_line`]).
    pub figures: Option<(String, String)>,
}

/// A person, `Name <local@domain>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub name: String,
    pub email: String,
}

impl Identity {
    /// `Name <addr@host>`: a non-empty name of printable characters without
    /// `<`, `>`, `"` or `\`, and an address of RFC 5322 atoms. Anything that
    /// could end a mail header or start another (a newline, any control
    /// character) is refused.
    pub fn parse(text: &str) -> Result<Identity, String> {
        let t = text.trim();
        let (name, rest) = t
            .split_once('<')
            .ok_or_else(|| format!("`{}` is not `Name <addr@host>`", printable(t)))?;
        let email = rest
            .strip_suffix('>')
            .ok_or_else(|| format!("`{}` is not `Name <addr@host>`", printable(t)))?;
        Identity::new(name.trim(), email)
    }

    /// From a name and an address given apart (git config).
    pub fn new(name: &str, email: &str) -> Result<Identity, String> {
        check_name(name)?;
        check_email(email)?;
        Ok(Identity {
            name: name.to_string(),
            email: email.to_string(),
        })
    }

    /// As a trailer says it: `Name <addr@host>`.
    pub fn trailer(&self) -> String {
        format!("{} <{}>", self.name, self.email)
    }

    /// As the `From:` header says it: a name with RFC 5322 specials is
    /// quoted, a name with non-ASCII characters is RFC 2047 encoded (as
    /// `git format-patch` does; `git am` decodes both).
    pub fn header(&self) -> String {
        let name = &self.name;
        let shown = if !name.is_ascii() {
            let mut q = String::from("=?UTF-8?q?");
            for b in name.bytes() {
                match b {
                    b' ' => q.push('_'),
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
                        q.push(b as char)
                    }
                    _ => {
                        let _ = write!(q, "={b:02X}");
                    }
                }
            }
            q.push_str("?=");
            q
        } else if name.chars().any(|c| "()<>@,;:\\\".[]".contains(c)) {
            format!("\"{name}\"")
        } else {
            name.clone()
        };
        format!("{shown} <{}>", self.email)
    }
}

/// `s` with control characters shown as `?` (for error messages).
fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("the name is empty".into());
    }
    if name != name.trim() {
        return Err(format!(
            "the name `{}` begins or ends with white space",
            printable(name)
        ));
    }
    if name.chars().count() > 128 {
        return Err("the name is longer than 128 characters".into());
    }
    if let Some(c) = name
        .chars()
        .find(|&c| c.is_control() || matches!(c, '<' | '>' | '"' | '\\' | '\u{2028}' | '\u{2029}'))
    {
        return Err(format!(
            "the name `{}` holds {c:?}, which a mail header cannot carry",
            printable(name)
        ));
    }
    if name.starts_with("=?") {
        return Err("the name looks like an encoded word (`=?`)".into());
    }
    Ok(())
}

fn check_email(email: &str) -> Result<(), String> {
    let bad = || format!("`{}` is not an address `local@host`", printable(email));
    if email.len() > 254 {
        return Err(format!("{}: longer than 254 characters", bad()));
    }
    let (local, host) = email.split_once('@').ok_or_else(bad)?;
    let atom = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c);
    let dotted = |s: &str, ok: &dyn Fn(char) -> bool| {
        !s.is_empty() && s.split('.').all(|p| !p.is_empty() && p.chars().all(ok))
    };
    if !dotted(local, &atom) {
        return Err(bad());
    }
    let label = |c: char| c.is_ascii_alphanumeric() || c == '-';
    if !dotted(host, &label)
        || host
            .split('.')
            .any(|l| l.starts_with('-') || l.ends_with('-'))
    {
        return Err(bad());
    }
    Ok(())
}

/// The subject's summary, `prefix: Verb ...` (imperative, at most
/// [`MAX_SUBJECT`] characters): the long form names the strategy, the short
/// one is used when that does not fit or the name is not plain.
pub fn subject(prefix: &str, long: &str, short: &str, strategy: &str) -> String {
    let plain = !strategy.is_empty()
        && strategy
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let s = format!("{prefix}: {}", long.replace("{}", strategy));
    if plain && s.len() <= MAX_SUBJECT {
        s
    } else {
        format!("{prefix}: {short}")
    }
}

/// The figures of `--figures`, checked for the commit message: UTF-8 text
/// without control characters (tabs included: checkpatch counts columns),
/// no line that would end the commit message or split the mail, and no
/// table line wider than [`MAX_COLUMNS`] (a line of prose is wrapped).
/// Errors name the line.
pub fn figures(text: &str) -> Result<String, (usize, String)> {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        return Err((1, "no figures in the file".into()));
    }
    if lines.len() > 2000 {
        return Err((2001, "more than 2000 lines".into()));
    }
    for (i, raw) in lines.iter().enumerate() {
        let at = i + 1;
        let l = raw.trim_end();
        if let Some(c) = l
            .chars()
            .find(|&c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
        {
            let what = if c == '\t' {
                "a tab (expand it: checkpatch counts columns)".to_string()
            } else {
                format!("the control character {c:?}")
            };
            return Err((at, format!("holds {what}")));
        }
        for start in [
            "---",
            "diff ",
            "Index: ",
            "+++ ",
            "From ",
            ">From ",
            "Signed-off-by:",
        ] {
            if l.starts_with(start) {
                return Err((
                    at,
                    format!(
                        "begins with `{start}`, which would end the commit message or split the mail"
                    ),
                ));
            }
        }
        let width = l.chars().count();
        if width <= MAX_COLUMNS {
            out.push_str(l);
            out.push('\n');
        } else if l.trim_start().contains("  ") {
            return Err((
                at,
                format!(
                    "a table line of {width} columns; the commit message allows {MAX_COLUMNS} \
                     (bench fewer subjects at once)"
                ),
            ));
        } else {
            out.push_str(&wrap_line(l));
        }
    }
    Ok(out)
}

/// `line` word-wrapped at [`MAX_COLUMNS`], continuation lines indented as
/// the first. A word longer than the line stays whole.
pub fn wrap_line(line: &str) -> String {
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let mut out = String::new();
    let mut cur = indent.clone();
    for w in line.split(' ').filter(|w| !w.is_empty()) {
        let len = cur.chars().count();
        if len > indent.len() && len + 1 + w.chars().count() > MAX_COLUMNS {
            out.push_str(&cur);
            out.push('\n');
            cur = indent.clone();
        }
        if cur.len() > indent.len() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    out.push_str(&cur);
    out.push('\n');
    out
}

/// Every line of `body` longer than [`MAX_COLUMNS`] wrapped.
pub fn wrap_body(body: &str) -> String {
    let mut out = String::new();
    for l in body.lines() {
        if l.chars().count() > MAX_COLUMNS {
            out.push_str(&wrap_line(l));
        } else {
            out.push_str(l.trim_end());
            out.push('\n');
        }
    }
    out
}

/// The line naming the CPU the figures were measured on: its model name
/// (/proc/cpuinfo, as lscpu shows it) and, on x86, family and model.
pub fn cpu_line() -> String {
    let name = printable(&crate::tools::bench::cpu_name());
    match crate::arch::cpu::Cpuid::host() {
        Some(c) => format!("{name} (family {:#x}, model {:#x})", c.family(), c.model()),
        None => name,
    }
}

/// The diffstat `git format-patch` writes after `---`: a line per file
/// (path, changed lines, a bar of `+` and `-` scaled to 72 columns), then
/// the totals. checkpatch reads it (a `MAINTAINERS |` line says the patch
/// updates MAINTAINERS).
pub fn diffstat(files: &[(String, usize, usize)]) -> String {
    let name = files.iter().map(|f| f.0.len()).max().unwrap_or(0);
    let most = files.iter().map(|f| f.1 + f.2).max().unwrap_or(0);
    let digits = most.to_string().len();
    let room = 72usize.saturating_sub(name + digits + 5).max(10);
    let mut out = String::new();
    for (path, add, del) in files {
        let (a, d) = if most > room {
            let scale = |n: usize| {
                if n == 0 {
                    0
                } else {
                    (n * room / most).max(1)
                }
            };
            (scale(*add), scale(*del))
        } else {
            (*add, *del)
        };
        let _ = writeln!(
            out,
            " {path:<name$} | {:>digits$} {}{}",
            add + del,
            "+".repeat(a),
            "-".repeat(d)
        );
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let adds: usize = files.iter().map(|f| f.1).sum();
    let dels: usize = files.iter().map(|f| f.2).sum();
    let mut total = format!(" {} changed", plural(files.len(), "file", "files"));
    if adds > 0 {
        let _ = write!(total, ", {}(+)", plural(adds, "insertion", "insertions"));
    }
    if dels > 0 {
        let _ = write!(total, ", {}(-)", plural(dels, "deletion", "deletions"));
    }
    let _ = writeln!(out, "{total}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_that_could_inject_headers_are_refused() {
        for bad in [
            "A <a@b.c>\nBcc: x@y.z",
            "A\rB <a@b.c>",
            "A <a@b.c\n>",
            "A <a@b.c>>",
            "\"A\" <a@b.c>",
            "A <a b@c.d>",
            "A <@c.d>",
            "A <a@-c.d>",
            "A <a@c..d>",
            " <a@b.c>",
            "A a@b.c",
            "A\u{7f} <a@b.c>",
            "=?utf-8?q?x?= <a@b.c>",
        ] {
            assert!(Identity::parse(bad).is_err(), "{bad:?}");
        }
        let i = Identity::parse("  J. Random Hacker <jrh+lkml@example.org> ").unwrap();
        assert_eq!(i.trailer(), "J. Random Hacker <jrh+lkml@example.org>");
        assert_eq!(i.header(), "\"J. Random Hacker\" <jrh+lkml@example.org>");
        let u = Identity::parse("Jörg Rödel <j@example.org>").unwrap();
        assert_eq!(
            u.header(),
            "=?UTF-8?q?J=C3=B6rg_R=C3=B6del?= <j@example.org>"
        );
    }

    #[test]
    fn diffstat_is_git_s() {
        let s = diffstat(&[("MAINTAINERS".into(), 5, 0), ("a/b.S".into(), 100, 1)]);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0] == " MAINTAINERS |   5 ++", "{s}");
        assert!(lines[1].starts_with(" a/b.S       | 101 +"), "{s}");
        assert!(lines[1].ends_with('-') && lines[1].len() <= 72, "{s}");
        assert_eq!(
            lines[2],
            " 2 files changed, 105 insertions(+), 1 deletion(-)"
        );
    }

    #[test]
    fn subjects_fit_and_fall_back() {
        assert_eq!(
            subject(
                "x86/lib",
                "Generate it from copygen's {}",
                "Generate it",
                "abc"
            ),
            "x86/lib: Generate it from copygen's abc"
        );
        let long = "a".repeat(80);
        assert_eq!(
            subject(
                "x86/lib",
                "Generate it from copygen's {}",
                "Generate it",
                &long
            ),
            "x86/lib: Generate it"
        );
        assert_eq!(
            subject("x86/lib", "Generate it from {}", "Generate it", "a b"),
            "x86/lib: Generate it"
        );
    }

    #[test]
    fn figures_are_kept_wrapped_or_refused_by_line() {
        let ok = format!("bytes  a  b\n0      1  2   \n{}\n", "word ".repeat(20));
        let f = figures(&ok).unwrap();
        assert!(f.starts_with("bytes  a  b\n0      1  2\nword word"));
        assert!(f.lines().all(|l| l.chars().count() <= MAX_COLUMNS));
        let wide = format!("x\n{}  1\n", "y".repeat(80));
        assert_eq!(figures(&wide).unwrap_err().0, 2);
        assert_eq!(figures("a\n---\n").unwrap_err().0, 2);
        assert_eq!(figures("a\tb\n").unwrap_err().0, 1);
        assert_eq!(figures("a\n\nb\u{1b}[0m\n").unwrap_err().0, 3);
        assert!(figures("\n \n").is_err());
    }
}
