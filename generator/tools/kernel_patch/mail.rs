//! What makes the patch a mail a kernel developer sends: the author and
//! the `Signed-off-by:` trailers (validated: they go into mail headers), a
//! subject in the subsystem's style, the figures, and a commit message
//! whose lines `scripts/checkpatch.pl` accepts (at most 75 columns).

use std::fmt::Write as _;

use crate::tools::mail_text::{wrap_line, MAX_COLUMNS};

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

    /// As the `From:` header says it, folded as git folds it: a name that
    /// holds a non-ASCII character, an RFC 5322 special or `=?` is RFC 2047
    /// encoded (`git am` decodes it back to the name, never to another
    /// author); the header is folded at 78 columns, each encoded word at most
    /// 75 characters (RFC 2047), never splitting a UTF-8 character.
    pub fn header(&self) -> String {
        let name = &self.name;
        let plain = name.is_ascii()
            && !name.contains("=?")
            && !name.chars().any(|c| "()<>@,;:\\\".[]".contains(c));
        let mut words: Vec<String> = if plain {
            name.split(' ').map(str::to_string).collect()
        } else {
            encoded_words(name)
        };
        words.push(format!("<{}>", self.email));
        fold_words("From", &words)
    }
}

/// `text` as RFC 2047 `Q` encoded words of at most 72 characters each (75
/// is RFC 2047's limit; 72 lets the first follow `From: ` within 78
/// columns), split only between characters (RFC 2047 section 5: the
/// phrase form).
fn encoded_words(text: &str) -> Vec<String> {
    const OPEN: &str = "=?UTF-8?q?";
    const CLOSE: &str = "?=";
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        let mut enc = String::new();
        let mut buf = [0u8; 4];
        for &b in c.encode_utf8(&mut buf).as_bytes() {
            match b {
                b' ' => enc.push('_'),
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'!' | b'*' | b'+' | b'-' | b'/' => {
                    enc.push(b as char)
                }
                _ => {
                    let _ = write!(enc, "={b:02X}");
                }
            }
        }
        if OPEN.len() + cur.len() + enc.len() + CLOSE.len() > 72 {
            out.push(format!("{OPEN}{cur}{CLOSE}"));
            cur.clear();
        }
        cur.push_str(&enc);
    }
    out.push(format!("{OPEN}{cur}{CLOSE}"));
    out
}

/// The header `name: w1 w2 ...`, folded (a newline and a space before a
/// word) wherever the line would pass 78 columns, as git folds it. A word
/// longer than a line stays whole (RFC 5322 allows 998 octets a line; no
/// word copygen writes comes near it).
pub fn fold_words(name: &str, words: &[String]) -> String {
    let mut out = format!("{name}:");
    let mut col = out.len();
    for w in words.iter().filter(|w| !w.is_empty()) {
        if col + 1 + w.len() > 78 && col > name.len() + 1 {
            out.push_str("\n ");
            col = 1;
        } else {
            out.push(' ');
            col += 1;
        }
        out.push_str(w);
        col += w.len();
    }
    out
}

/// A header of plain ASCII text folded at its spaces (the `Subject:`).
pub fn fold_header(name: &str, value: &str) -> String {
    let words: Vec<String> = value.split(' ').map(str::to_string).collect();
    fold_words(name, &words)
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
/// [`MAX_SUBJECT`] characters): the long form says what the code does, the
/// short one is used when that does not fit or is not plain ASCII text.
pub fn subject(prefix: &str, long: &str, short: &str, what: &str) -> String {
    let plain = !what.trim().is_empty() && what.chars().all(|c| c == ' ' || c.is_ascii_graphic());
    let s = format!("{prefix}: {}", long.replace("{}", what));
    if plain && s.len() <= MAX_SUBJECT {
        s
    } else {
        format!("{prefix}: {short}")
    }
}

/// The indentation of every figure line in the commit message: no figure
/// line can then begin a line with `---`, `diff `, `+++ `, `@@` or `From `,
/// which `git mailinfo` or `git apply` would read as the end of the message
/// or as a hunk.
pub const FIGURE_INDENT: &str = "  ";

/// The figures of `--figures`, laid out for the commit message: UTF-8 text
/// without control characters (tabs included: checkpatch counts columns)
/// or the invisible ones that reorder or hide text (bidirectional
/// overrides, zero-width characters: a reviewer reads what is there);
/// each line indented by [`FIGURE_INDENT`] and at most [`MAX_COLUMNS`] wide:
/// a table too wide is split into tables of fewer columns (each repeating
/// the first column; a cell still too wide is abbreviated with `~`), a line
/// of prose is wrapped. Errors name the line.
pub fn figures(text: &str) -> Result<String, (usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    if lines.iter().all(|l| l.trim().is_empty()) {
        return Err((1, "no figures in the file".into()));
    }
    if lines.len() > 2000 {
        return Err((2001, "more than 2000 lines".into()));
    }
    for (i, raw) in lines.iter().enumerate() {
        if let Some(c) = raw
            .trim_end()
            .chars()
            .find(|&c| crate::front::diagnostics::is_unsafe_to_show(c))
        {
            let what = if c == '\t' {
                "a tab (expand it: checkpatch counts columns)".to_string()
            } else if c.is_control() {
                format!("the control character {c:?}")
            } else {
                format!("the invisible character {c:?}, which reorders or hides the text around it")
            };
            return Err((i + 1, format!("holds {what}")));
        }
    }
    let room = MAX_COLUMNS - FIGURE_INDENT.len();
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        // A table: a run of lines of two or more cells apart by two spaces.
        let start = i;
        while i < lines.len() && cells(lines[i]).len() >= 2 {
            i += 1;
        }
        if i - start >= 2 {
            let rows = &lines[start..i];
            // A table that fits is kept as laid out; a wider one is split.
            let laid = if rows.iter().all(|l| l.trim_end().chars().count() <= room) {
                rows.iter().map(|l| format!("{}\n", l.trim_end())).collect()
            } else {
                table(rows, room)
            };
            for l in laid.lines() {
                // (the blank line between split tables stays blank)
                if !l.is_empty() {
                    out.push_str(FIGURE_INDENT);
                    out.push_str(l);
                }
                out.push('\n');
            }
            continue;
        }
        i = start + 1;
        let l = lines[start].trim_end();
        if l.is_empty() {
            out.push('\n');
            continue;
        }
        let indented = format!("{FIGURE_INDENT}{l}");
        if indented.chars().count() <= MAX_COLUMNS {
            out.push_str(&indented);
            out.push('\n');
        } else {
            out.push_str(&wrap_line(&indented));
        }
    }
    Ok(out)
}

/// The cells of a table line: its text split at runs of two or more spaces.
fn cells(line: &str) -> Vec<String> {
    line.trim()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect()
}

/// The table `rows` laid out in at most `room` columns: the first column
/// left-aligned, the others right-aligned, two spaces apart; when the table
/// is wider, the columns after the first are split over several tables (a
/// blank line between them), and a cell wider than a table can hold is cut
/// to fit with a `~` at its end.
fn table(rows: &[&str], room: usize) -> String {
    let rows: Vec<Vec<String>> = rows.iter().map(|r| cells(r)).collect();
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width = |c: usize| {
        rows.iter()
            .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
            .max()
            .unwrap_or(0)
    };
    // The first column takes at most half the room.
    let first = width(0).min(room / 2);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut used = first;
    for c in 1..ncols {
        let w = width(c).min(room - first - 2);
        match groups.last_mut() {
            Some(g) if used + 2 + w <= room => g.push(c),
            _ => {
                groups.push(vec![c]);
                used = first;
            }
        }
        used += 2 + w;
    }
    let cut = |s: &str, w: usize| -> String {
        if s.chars().count() <= w {
            s.to_string()
        } else {
            let mut t: String = s.chars().take(w.saturating_sub(1)).collect();
            t.push('~');
            t
        }
    };
    let mut out = String::new();
    for (k, g) in groups.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        for r in &rows {
            let mut line = format!("{:<first$}", cut(r.first().map_or("", |s| s), first));
            for &c in g {
                let w = width(c).min(room - first - 2);
                let _ = write!(line, "  {:>w$}", cut(r.get(c).map_or("", |s| s), w));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// `body` with every line that `git mailinfo` or `git apply` could read as
/// the end of the commit message, a mail boundary or a part of a diff
/// (`---`, `diff `, `Index: `, `+++ `, `--- a/`, `@@`, `From `, a line
/// starting with `-` or `+` at all) indented by one space, so the message
/// always reaches the `Signed-off-by:` trailers and the patch holds only
/// the hunks copygen wrote.
pub fn guard_body(body: &str) -> String {
    let mut out = String::new();
    for l in body.lines() {
        let risky = l.starts_with(['-', '+', '@', '>'])
            || l.starts_with("diff")
            || l.starts_with("Index:")
            || l.starts_with("From ");
        if risky {
            out.push(' ');
        }
        out.push_str(l);
        out.push('\n');
    }
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

/// `secs` since 1970 (UTC) as an RFC 2822 date, `Wed, 2 Dec 2026 03:04:05 +0000`.
pub fn rfc2822(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let t = secs.rem_euclid(86_400);
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day} {} {year} {:02}:{:02}:{:02} +0000",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        t / 3600,
        t / 60 % 60,
        t % 60
    )
}

/// A mail's `Subject:` header, unfolded, without its `[PATCH ...]` tag.
fn subject_of(mail: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for l in mail.lines() {
        if let Some(v) = l.strip_prefix("Subject: ") {
            out.push_str(v);
            inside = true;
        } else if inside && l.starts_with(' ') {
            out.push_str(l);
        } else if inside {
            break;
        }
    }
    match out.split_once("] ") {
        Some((_, rest)) => rest.to_string(),
        None => out,
    }
}

/// The cover letter of a series (`[PATCH 0/N]`, as `git format-patch
/// --cover-letter` writes it, filled in): what the series does, its
/// patches one line each, and the base commit.
pub fn cover_letter(
    m: &Mail,
    series: &super::Series,
    kernel: crate::front::strategy::KernelVersion,
    strategies: &[String],
    patches: &[(String, String)],
) -> String {
    let mut body = format!(
        "One user copy routine, generated by copygen {} from one strategy, put\n\
         into Linux {} on each architecture, one patch per architecture (each\n\
         message says what its routine does and how it differs from the tree's\n\
         own): {}.\n\n",
        env!("CARGO_PKG_VERSION"),
        kernel.name(),
        strategies.join(", ")
    );
    let _ = writeln!(body, "{} ({}):", m.author.name, patches.len());
    for (_, p) in patches {
        let _ = writeln!(body, "  {}", subject_of(p));
    }
    let body = guard_body(&wrap_body(&body));
    let mut headers = format!("{}\n", m.author.header());
    if let Some(d) = &series.date {
        let _ = writeln!(headers, "Date: {d}");
    }
    let _ = writeln!(
        headers,
        "{}",
        fold_header(
            "Subject",
            &format!(
                "{} Generated user copy routines for Linux {}",
                series.tag(),
                kernel.name()
            )
        )
    );
    let mut base = String::new();
    if let Some(b) = &series.base {
        let _ = write!(base, "\nbase-commit: {b}\n");
    }
    format!(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n\
         {headers}\n{body}{base}-- \ncopygen {}\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The line naming the CPU the figures were measured on: its model name
/// (/proc/cpuinfo, as lscpu shows it) and, on x86, family and model.
pub fn cpu_line() -> String {
    crate::tools::host_cpu::HostCpu::read().mail_line()
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
        ] {
            assert!(Identity::parse(bad).is_err(), "{bad:?}");
        }
        let i = Identity::parse("  J. Random Hacker <jrh+lkml@example.org> ").unwrap();
        assert_eq!(i.trailer(), "J. Random Hacker <jrh+lkml@example.org>");
        assert_eq!(
            i.header(),
            "From: =?UTF-8?q?J=2E_Random_Hacker?= <jrh+lkml@example.org>"
        );
        let e = Identity::parse("=?utf-8?q?x?= <a@b.c>").unwrap();
        assert_eq!(
            e.header(),
            "From: =?UTF-8?q?=3D=3Futf-8=3Fq=3Fx=3F=3D?= <a@b.c>"
        );
        let p = Identity::parse("Plain Name <a@b.c>").unwrap();
        assert_eq!(p.header(), "From: Plain Name <a@b.c>");
        let u = Identity::parse("Jörg Rödel <j@example.org>").unwrap();
        assert_eq!(
            u.header(),
            "From: =?UTF-8?q?J=C3=B6rg_R=C3=B6del?= <j@example.org>"
        );
        // A long name: encoded words of at most 75 characters, the header
        // folded at 78 columns, no character split.
        let long = Identity::new(&"é".repeat(100), "a@b.c").unwrap();
        let h = long.header();
        assert!(h.lines().all(|l| l.len() <= 78), "{h}");
        for w in h.split_whitespace().filter(|w| w.starts_with("=?")) {
            assert!(w.len() <= 75 && w.ends_with("?="), "{w}");
            assert_eq!(w.matches("=C3=A9").count() * 6 + 12, w.len(), "{w}");
        }
    }

    #[test]
    fn dates_are_rfc_2822() {
        assert_eq!(rfc2822(0), "Thu, 1 Jan 1970 00:00:00 +0000");
        assert_eq!(rfc2822(951_782_400), "Tue, 29 Feb 2000 00:00:00 +0000");
        assert_eq!(rfc2822(1_764_644_645), "Tue, 2 Dec 2025 03:04:05 +0000");
        assert_eq!(rfc2822(253_402_300_799), "Fri, 31 Dec 9999 23:59:59 +0000");
    }

    #[test]
    fn body_lines_git_would_read_as_a_patch_are_indented() {
        let b = guard_body("ok\n---\ndiff --git a/x b/x\n+x\n-y\n@@ -1 +1 @@\nFrom x\nIndex: y\n");
        assert_eq!(
            b,
            "ok\n ---\n diff --git a/x b/x\n +x\n -y\n @@ -1 +1 @@\n From x\n Index: y\n"
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
            subject("x86/lib", "Generate it from {}", "Generate it", "a\u{e9}b"),
            "x86/lib: Generate it"
        );
    }

    #[test]
    fn figures_are_laid_out_indented_or_refused_by_line() {
        let ok = format!("bytes  a  b\n0      1  2   \n{}\n", "word ".repeat(20));
        let f = figures(&ok).unwrap();
        assert!(
            f.starts_with("  bytes  a  b\n  0      1  2\n  word word"),
            "{f}"
        );
        assert!(f.lines().all(|l| l.chars().count() <= MAX_COLUMNS));
        // A table wider than the message: split, the first column repeated;
        // a cell wider than any table is cut with `~`.
        let wide = format!(
            "bytes  {a}  {b}\n8  1.0  2.0\n",
            a = "a".repeat(40),
            b = "b".repeat(40)
        );
        let f = figures(&wide).unwrap();
        assert_eq!(
            f,
            format!(
                "  bytes  {a}\n  8      {p}1.0\n\n  bytes  {b}\n  8      {p}2.0\n",
                a = "a".repeat(40),
                b = "b".repeat(40),
                p = " ".repeat(37)
            )
        );
        let huge = format!("x  {}\n1  2\n", "y".repeat(200));
        let f = figures(&huge).unwrap();
        assert!(f.lines().all(|l| l.chars().count() <= MAX_COLUMNS), "{f}");
        assert!(f.contains("y~\n"), "{f}");
        // Nothing can start a line as a separator or hunk would.
        let f = figures("a\n---\n+++ b/x\n").unwrap();
        assert_eq!(f, "  a\n  ---\n  +++ b/x\n");
        assert_eq!(figures("a\tb\n").unwrap_err().0, 1);
        assert_eq!(figures("a\n\nb\u{1b}[0m\n").unwrap_err().0, 3);
        assert!(figures("\n \n").is_err());
    }
}
