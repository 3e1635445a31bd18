//! The text of tracefs's `trace` and `trace_pipe` files, as the kprobe
//! events of [`super::definitions`] print it, into [`Row`]s:
//!
//! ```text
//! # tracer: nop
//!               dd-93      [000] d....    12.345678: copygen_any: (rep_movs_alternative+0x0/0x70) to_off=16 from_off=0 n=4096 to_kernel=0 from_kernel=1 caller=0xffffffff8114a2b1
//! ```
//!
//! Task names may hold spaces; the line is read from the event's
//! `NAME: (SYMBOL+OFF/SIZE)` on. Fields are decimal or `0x` hex. A probe
//! that records whole pointers (`to=`, `from=`) is read too: only their page
//! offsets are kept, and the arch's address split gives the direction.
//! Every error names the origin, the line, the column and what was wrong.

use std::collections::HashMap;

use anyhow::{bail, Result};

use super::kallsyms::Kallsyms;
use super::Row;
use crate::front::diagnostics::escape;
use crate::front::strategy::{Arch, Direction};
use crate::input::BadInput;
use crate::kernel::copy_symbols::{kernel_bits_of, probes, ArchProbes};
use crate::tools::trace::{MAX_CALLER, MAX_SIZE};

/// The marker line `copygen record --script` writes above the trace.
pub const SCRIPT_MARK: &str = "# copygen-record";

/// What one line was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceLine {
    /// A call.
    Call(Row),
    /// A comment, a blank line, or an event of another group.
    Skipped,
    /// `CPU:N [LOST K EVENTS]`: the ring buffer dropped K events.
    Lost(u64),
    /// A call where neither pointer (or both) is a user address.
    NoUserSide,
}

/// A parsed event line: the event name, the probed symbol, the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event<'a> {
    pub name: &'a str,
    pub symbol: &'a str,
    /// `(name, value, column)`.
    pub fields: Vec<(&'a str, u64, usize)>,
}

/// The 1-based column (in characters) of byte `byte` of `line`; a byte
/// inside a character counts as that character.
fn col(line: &str, byte: usize) -> usize {
    col_bytes(line.as_bytes(), byte)
}

fn col_bytes(bytes: &[u8], byte: usize) -> usize {
    let starts = |b: &u8| (*b as i8) >= -0x40;
    let byte = byte.min(bytes.len());
    let before = bytes[..byte].iter().filter(|b| starts(b)).count();
    before + usize::from(bytes.get(byte).is_none_or(starts))
}

/// Where `sub`, a slice of `line`, begins in it (bytes).
fn offset(line: &str, sub: &str) -> usize {
    sub.as_ptr() as usize - line.as_ptr() as usize
}

/// Columns of increasing byte offsets of one line, counted from the last
/// one asked for: linear in the line however many fields it holds.
struct Columns<'a> {
    line: &'a str,
    byte: usize,
    col: usize,
}

impl Columns<'_> {
    fn at(&mut self, byte: usize) -> usize {
        if byte < self.byte {
            return col(self.line, byte);
        }
        self.col += col_bytes(&self.line.as_bytes()[self.byte..], byte - self.byte) - 1;
        self.byte = byte;
        self.col
    }
}

fn number(t: &str) -> Option<u64> {
    match t.strip_prefix("0x") {
        Some(h) if !h.is_empty() => u64::from_str_radix(h, 16).ok(),
        Some(_) => None,
        None if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => t.parse().ok(),
        None => None,
    }
}

fn is_ident(t: &str) -> bool {
    !t.is_empty()
        && t.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'$')
}

/// One event line; `Err((column, message))` when it is not one.
pub fn event(line: &str) -> std::result::Result<Event<'_>, (usize, String)> {
    let Some(at) = line.find(": (") else {
        return Err((
            1,
            "not a trace event line: no `EVENT: (SYMBOL+OFFSET/SIZE)`".into(),
        ));
    };
    let head = &line[..at];
    let Some(cpu) = head.rfind("] ") else {
        return Err((1, "no `[CPU]` field before the event".into()));
    };
    let mut words = head[cpu + 2..].split_whitespace().rev();
    let name = words.next().unwrap_or("");
    let name_at = if name.is_empty() {
        at
    } else {
        offset(line, name)
    };
    if !is_ident(name) {
        return Err((
            col(line, name_at),
            format!("`{}` is not an event name", escape(name, false)),
        ));
    }
    let stamp = words.next().unwrap_or("");
    let ts_ok = stamp
        .strip_suffix(':')
        .is_some_and(|t| t.contains('.') && t.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
    if !ts_ok {
        let stamp_at = match stamp {
            "" => cpu + 2,
            s => offset(line, s),
        };
        return Err((
            col(line, stamp_at),
            format!(
                "`{}` is not a timestamp (seconds.micros:) before the event",
                escape(stamp, false)
            ),
        ));
    }
    let loc_at = at + 3;
    let Some(close) = line[loc_at..].find(')') else {
        return Err((col(line, loc_at), "the probe location has no `)`".into()));
    };
    let loc = &line[loc_at..loc_at + close];
    let symbol = loc.split('+').next().unwrap_or("");
    if !is_ident(symbol) {
        return Err((
            col(line, loc_at),
            format!(
                "`{}` is not a probe location (SYMBOL+OFFSET/SIZE)",
                escape(loc, false)
            ),
        ));
    }
    let mut fields = Vec::new();
    let mut pos = loc_at + close + 1;
    let mut cols = Columns {
        line,
        byte: 0,
        col: 1,
    };
    for word in line[pos..].split(' ') {
        let here = pos;
        pos += word.len() + 1;
        if word.is_empty() {
            continue;
        }
        let Some((k, v)) = word.split_once('=') else {
            return Err((
                cols.at(here),
                format!("`{}` is not a field (NAME=VALUE)", escape(word, false)),
            ));
        };
        let Some(v) = number(v) else {
            return Err((
                cols.at(here + k.len() + 1),
                format!(
                    "field `{}`: `{}` is not a number (decimal or 0x hex)",
                    escape(k, false),
                    escape(v, false)
                ),
            ));
        };
        fields.push((k, v, cols.at(here)));
    }
    Ok(Event {
        name,
        symbol,
        fields,
    })
}

/// Reads lines one by one (the live recorder feeds it `trace_pipe`).
pub struct Parser<'k> {
    origin: String,
    arch: Option<Arch>,
    kallsyms: Option<&'k Kallsyms>,
    /// Callers symbolised, by address.
    callers: HashMap<u64, Option<String>>,
    /// The probes' hits the marker line counted.
    hits: Option<u64>,
}

impl<'k> Parser<'k> {
    pub fn new(origin: &str, arch: Option<Arch>, kallsyms: Option<&'k Kallsyms>) -> Parser<'k> {
        Parser {
            origin: escape(origin, false).into_owned(),
            arch,
            kallsyms,
            callers: HashMap::new(),
            hits: None,
        }
    }

    pub fn arch(&self) -> Option<Arch> {
        self.arch
    }

    /// How many times the kernel hit the probes while they were enabled
    /// (any process's calls), as the `--script` marker line says.
    pub fn hits(&self) -> Option<u64> {
        self.hits
    }

    fn fail(&self, ln: usize, col: usize, msg: impl std::fmt::Display) -> anyhow::Error {
        // A line that is not what the probes print: bad input (exit 2).
        anyhow::Error::new(BadInput(format!(
            "{}:{ln}:{col}: error: {msg}",
            self.origin
        )))
    }

    /// The marker line of `--script` names the arch, and the probes' hit
    /// count where the kernel has `kprobe_profile` (the words before
    /// `command:`; what follows is the command's).
    fn mark(&mut self, ln: usize, line: &str) -> Result<()> {
        let head = line.split(" command:").next().unwrap_or(line);
        if let Some(h) = head
            .split_whitespace()
            .find_map(|w| w.strip_prefix("hits="))
        {
            let Some(n) = number(h) else {
                bail!(self.fail(ln, 1, format!("`hits={}`: not a number", escape(h, false))));
            };
            self.hits = Some(n);
        }
        let Some(arch) = head
            .split_whitespace()
            .find_map(|w| w.strip_prefix("arch="))
        else {
            return Ok(());
        };
        let Some(a) = Arch::parse(arch) else {
            bail!(self.fail(
                ln,
                1,
                format!("`{}` is not an architecture", escape(arch, false))
            ));
        };
        match self.arch {
            Some(given) if given != a => bail!(self.fail(
                ln,
                1,
                format!("the trace was recorded on {a}, --arch says {given}")
            )),
            _ => self.arch = Some(a),
        }
        Ok(())
    }

    /// One line (`ln` counts from 1).
    pub fn line(&mut self, ln: usize, line: &str) -> Result<TraceLine> {
        let t = line.trim();
        if t.starts_with(SCRIPT_MARK) {
            self.mark(ln, t)?;
            return Ok(TraceLine::Skipped);
        }
        if t.is_empty() || t.starts_with('#') {
            return Ok(TraceLine::Skipped);
        }
        if let Some(rest) = t.strip_prefix("CPU:") {
            if let Some(k) = rest
                .split_once("[LOST ")
                .and_then(|(_, r)| r.split_once(' '))
                .map(|(k, _)| k)
                .filter(|k| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
            {
                // A count past 2^64 - 1 is as many as a u64 says.
                return Ok(TraceLine::Lost(k.parse().unwrap_or(u64::MAX)));
            }
        }
        let ev = event(line).map_err(|(c, m)| self.fail(ln, c, m))?;
        let Some(dir) = super::event_direction(ev.name) else {
            return Ok(TraceLine::Skipped);
        };
        let field = |name: &str| ev.fields.iter().find(|f| f.0 == name).map(|f| (f.1, f.2));
        let end = line.chars().count() + 1;
        let need = |a: &str, b: &str| -> Result<(u64, bool, usize)> {
            if let Some((v, c)) = field(a) {
                return Ok((v, true, c));
            }
            if let Some((v, c)) = field(b) {
                return Ok((v, false, c));
            }
            bail!(self.fail(
                ln,
                end,
                format!("{} has no field `{a}` (or `{b}`)", ev.name)
            ))
        };
        let (to, to_is_off, to_col) = need("to_off", "to")?;
        let (from, from_is_off, from_col) = need("from_off", "from")?;
        let (n, _, n_col) = need("n", "n")?;
        for (v, is_off, c, f) in [
            (to, to_is_off, to_col, "to_off"),
            (from, from_is_off, from_col, "from_off"),
        ] {
            if is_off && v > 4095 {
                bail!(self.fail(
                    ln,
                    c,
                    format!("field `{f}`: {v} is not a page offset (0 to 4095)")
                ));
            }
        }
        if n > MAX_SIZE as u64 {
            bail!(self.fail(
                ln,
                n_col,
                format!("field `n`: {n} is larger than {MAX_SIZE}, the largest size a workload trace holds")
            ));
        }
        let dir = match dir {
            Some(d) => d,
            None => {
                let kernel = |flag: &str, v: u64, is_off: bool, c: usize| -> Result<bool> {
                    if let Some((k, kc)) = field(flag) {
                        // The pointer's top bits: a kernel address has all of them set.
                        let bits = match self.arch {
                            Some(arch) => table(arch).kernel_bits,
                            None => match kernel_bits_of(ev.symbol) {
                                Some(bits) => bits,
                                None => bail!(self.fail(
                                    ln,
                                    kc,
                                    format!(
                                        "field `{flag}`: the top bits of a pointer, and no arch: copygen's probes of `{}` do not keep the same number of them on every arch; name it (--arch)",
                                        escape(ev.symbol, false)
                                    )
                                )),
                            },
                        };
                        let all = (1u64 << bits) - 1;
                        if k > all {
                            bail!(self.fail(
                                ln,
                                kc,
                                format!("field `{flag}`: {k} is not the top {bits} bit(s) of a pointer (0 to {all})")
                            ));
                        }
                        return Ok(k == all);
                    }
                    if is_off {
                        bail!(self.fail(
                            ln,
                            end,
                            format!(
                                "{} has no field `{flag}`: which side is the user's is unknown",
                                ev.name
                            )
                        ));
                    }
                    let Some(arch) = self.arch else {
                        bail!(self.fail(
                            ln,
                            c,
                            "whole pointers and no arch: name it (--arch) to tell user addresses from kernel ones"
                        ));
                    };
                    Ok(table(arch).is_kernel(v))
                };
                let tk = kernel("to_kernel", to, to_is_off, to_col)?;
                let fk = kernel("from_kernel", from, from_is_off, from_col)?;
                match (tk, fk) {
                    (false, true) => Direction::ToUser,
                    (true, false) => Direction::FromUser,
                    _ => return Ok(TraceLine::NoUserSide),
                }
            }
        };
        let caller = match field("caller") {
            Some((addr, c)) => self.caller(addr).map_err(|m| self.fail(ln, c, m))?,
            None => None,
        };
        Ok(TraceLine::Call(Row {
            dir,
            n,
            dst_off: (to & 0xfff) as u16,
            src_off: (from & 0xfff) as u16,
            caller,
        }))
    }

    /// The function name of a return address; an error where the name
    /// cannot be a workload trace's `caller` field as it is written (a
    /// comma would split it, a quote or a leading `#` would be read
    /// otherwise), so every trace copygen writes reads back.
    fn caller(&mut self, addr: u64) -> std::result::Result<Option<String>, String> {
        let Some(k) = self.kallsyms else {
            return Ok(None);
        };
        let name = self
            .callers
            .entry(addr)
            .or_insert_with(|| {
                k.lookup(addr)
                    .filter(|s| s.chars().count() <= MAX_CALLER)
                    .map(str::to_string)
            })
            .clone();
        match name {
            Some(n) if !caller_writable(&n) => Err(format!(
                "field `caller`: {addr:#x} is `{}` in the symbol table, which a workload trace's caller column cannot hold (a comma, a quote, a `#` or a blank at either end)",
                escape(&n, false)
            )),
            n => Ok(n),
        }
    }
}

/// Whether a name can be a workload trace's `caller` field: what
/// [`super::to_csv`] writes of it is read back as the same name.
pub fn caller_writable(name: &str) -> bool {
    !name.starts_with('#') && name.trim() == name && !name.contains([',', '"', '\n', '\r'])
}

fn table(arch: Arch) -> &'static ArchProbes {
    probes(arch)
}

/// What a whole trace held.
#[derive(Debug, Default, Clone)]
pub struct Parsed {
    pub rows: Vec<Row>,
    /// Calls past the `limit`, not kept.
    pub dropped: usize,
    pub lost: u64,
    pub no_user_side: usize,
    pub arch: Option<Arch>,
    /// The probes' hits, from the marker line.
    pub hits: Option<u64>,
}

/// What to add to "no calls in the trace" when the marker line counted
/// hits: the kernel ran the probes and its ring buffer kept none of their
/// events. On riscv64 that is the kernel's doing: it takes a kprobe in
/// kernel mode as an NMI (`do_trap_break`), and its ring buffer refuses
/// events in NMI context on an arch without `ARCH_HAVE_NMI_SAFE_CMPXCHG`,
/// which riscv does not select (6.12).
pub fn no_calls_why(hits: Option<u64>, arch: Option<Arch>) -> String {
    let Some(h) = hits.filter(|&h| h > 0) else {
        return String::new();
    };
    let mut why = format!(
        "; yet the kernel hit the probes {h} times while they were enabled (any process's calls)"
    );
    if arch == Some(Arch::Riscv64) {
        why.push_str(
            ": riscv64 Linux (6.12) runs a kprobe as an NMI, and its ring buffer keeps no event in NMI context (riscv does not select ARCH_HAVE_NMI_SAFE_CMPXCHG), so kprobe events cannot record its copies",
        );
    }
    why
}

/// Every line of the bytes of a trace; rows past `limit` are counted, not
/// kept. A line that is not UTF-8 is read with its stray bytes replaced
/// (a task name may be Latin-1: the parser does not read task names);
/// where the line is not one the parser takes that way, the error names
/// the line and the column of the first byte that is not UTF-8.
pub fn parse_bytes(
    origin: &str,
    bytes: &[u8],
    arch: Option<Arch>,
    kallsyms: Option<&Kallsyms>,
    limit: usize,
) -> Result<Parsed> {
    let mut p = Parser::new(origin, arch, kallsyms);
    let mut out = Parsed::default();
    let mut lines = bytes.split(|&b| b == b'\n').peekable();
    let mut ln = 0;
    while let Some(raw) = lines.next() {
        if raw.is_empty() && lines.peek().is_none() {
            break;
        }
        ln += 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let got = match std::str::from_utf8(raw) {
            Ok(line) => p.line(ln, line)?,
            Err(e) => {
                let line = String::from_utf8_lossy(raw);
                match p.line(ln, &line) {
                    Ok(got) => got,
                    Err(_) => {
                        let at = e.valid_up_to();
                        let valid = std::str::from_utf8(&raw[..at]).unwrap_or("");
                        bail!(p.fail(
                            ln,
                            valid.chars().count() + 1,
                            format!(
                                "not UTF-8 text: byte 0x{:02x} does not begin a UTF-8 character",
                                raw[at]
                            )
                        ));
                    }
                }
            }
        };
        out.add(got, limit);
    }
    out.arch = p.arch();
    out.hits = p.hits();
    Ok(out)
}

impl Parsed {
    fn add(&mut self, line: TraceLine, limit: usize) {
        match line {
            TraceLine::Call(r) if self.rows.len() < limit => self.rows.push(r),
            TraceLine::Call(_) => self.dropped += 1,
            TraceLine::Lost(k) => self.lost = self.lost.saturating_add(k),
            TraceLine::NoUserSide => self.no_user_side += 1,
            TraceLine::Skipped => {}
        }
    }
}

/// Every line of `text`; rows past `limit` are counted, not kept.
pub fn parse_text(
    origin: &str,
    text: &str,
    arch: Option<Arch>,
    kallsyms: Option<&Kallsyms>,
    limit: usize,
) -> Result<Parsed> {
    parse_bytes(origin, text.as_bytes(), arch, kallsyms, limit)
}
