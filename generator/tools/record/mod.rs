//! `copygen record`: the calls a running kernel makes to its copy routine,
//! recorded through tracefs kprobe events and written as a workload trace
//! (`tools::trace`'s format).
//!
//! Three ways in, one probe table ([`definitions`], from
//! [`crate::kernel::copy_symbols`]):
//! - live ([`live`]): adds the probes to `kprobe_events`, enables them,
//!   reads `trace_pipe`, removes them again on every way out;
//! - `--script` ([`script`]): the same probes as a POSIX sh script, for a
//!   machine copygen does not run on (an ARM guest), which runs a command
//!   and dumps the trace;
//! - `--from-trace` ([`parse`]): the text of `trace` or `trace_pipe`,
//!   turned into rows on the host.

pub mod kallsyms;
pub mod live;
pub mod parse;
pub mod script;
pub mod summary;

use std::fmt::Write as _;

use anyhow::{bail, Result};

use crate::front::strategy::{Arch, Direction};
use crate::kernel::copy_symbols::{probes, ArchProbes, CopyProbe, SymbolDirection};

/// The probe group: every event `copygen record` adds is `copygen/NAME`.
pub const GROUP: &str = "copygen";

/// One kprobe event: its name in [`GROUP`] and its `kprobe_events` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeDef {
    pub event: String,
    pub symbol: String,
    pub line: String,
}

/// The event of a probe's symbol, named by what it records:
/// `copygen_from`, `copygen_to`, and for a routine of both directions
/// `copygen_any`; where a probe has several of those (routines named at run
/// time), the second is `copygen_any2`, the third `copygen_any3`.
fn event_name(direction: SymbolDirection, both_ways_before: usize) -> String {
    match direction {
        SymbolDirection::Fixed(Direction::FromUser) => "copygen_from".into(),
        SymbolDirection::Fixed(Direction::ToUser) => "copygen_to".into(),
        SymbolDirection::ByUserPointer if both_ways_before == 0 => "copygen_any".into(),
        SymbolDirection::ByUserPointer => format!("copygen_any{}", both_ways_before + 1),
    }
}

/// What an event of copygen's records, from its name ([`event_name`]):
/// `Some(Some(direction))` for a one-way routine's, `Some(None)` for a
/// both-ways routine's, `None` for an event of no copygen probe.
pub fn event_direction(event: &str) -> Option<Option<Direction>> {
    match event {
        "copygen_from" => Some(Some(Direction::FromUser)),
        "copygen_to" => Some(Some(Direction::ToUser)),
        _ => {
            let k = event.strip_prefix("copygen_any")?;
            (k.is_empty() || (!k.starts_with('0') && k.bytes().all(|b| b.is_ascii_digit())))
                .then_some(None)
        }
    }
}

/// The `kprobe_events` lines of a probe: page offsets (`b12@0/W`) of both
/// pointers, the size, the top bits of both pointers where the routine
/// serves both directions, and the return address.
pub fn definitions(table: &ArchProbes, probe: &CopyProbe) -> Vec<ProbeDef> {
    let w = table.ptr_bits;
    let k = table.kernel_bits;
    let mut both_ways = 0;
    probe
        .symbols
        .iter()
        .map(|s| {
            let event = event_name(s.direction, both_ways);
            let mut line = format!(
                "p:{GROUP}/{event} {} to_off={}:b12@0/{w} from_off={}:b12@0/{w} n={}:u{w}",
                s.symbol, s.to, s.from, s.n
            );
            if s.direction == SymbolDirection::ByUserPointer {
                both_ways += 1;
                let at = w - k;
                let _ = write!(
                    line,
                    " to_kernel={}:b{k}@{at}/{w} from_kernel={}:b{k}@{at}/{w}",
                    s.to, s.from
                );
            }
            let _ = write!(line, " caller={}", table.caller);
            ProbeDef {
                event,
                symbol: s.symbol.to_string(),
                line,
            }
        })
        .collect()
}

/// The probe `--symbol NAME` names on `arch` (a probe of its table, or
/// routines named at run time, `NAME[,NAME...]:CONVENTION`), or an error
/// listing what it could name.
pub fn pick(arch: Arch, name: &str) -> Result<CopyProbe> {
    let table = probes(arch);
    let shown = crate::front::diagnostics::escape(name, false);
    match table.named(name) {
        Some(Ok(p)) => Ok(p),
        Some(Err(why)) => bail!("--symbol {shown}: {why}"),
        None => bail!(
            "--symbol: `{shown}` is not a copy routine copygen knows on {arch}; it knows: {}; or name a routine of both directions with its convention, NAME[,NAME...]:CONVENTION ({})",
            symbol_list(table),
            convention_list(table)
        ),
    }
}

/// `name (note)` for each convention a routine named at run time may have.
pub fn convention_list(table: &ArchProbes) -> String {
    table
        .conventions
        .iter()
        .map(|c| format!("{} ({})", c.name, c.note))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `name (symbols: note)` for each probe of a table.
pub fn symbol_list(table: &ArchProbes) -> String {
    table
        .probes
        .iter()
        .map(|p| {
            let syms: Vec<&str> = p.symbols.iter().map(|s| &*s.symbol).collect();
            if syms == [&*p.name] {
                format!("{} ({})", p.name, p.symbols[0].note)
            } else {
                format!("{} ({}: {})", p.name, syms.join(", "), p.symbols[0].note)
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// One recorded call, as a workload trace holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub dir: Direction,
    pub n: u64,
    pub dst_off: u16,
    pub src_off: u16,
    pub caller: Option<String>,
}

/// Rows as a workload trace: `comments` (each line gets `# `), the header,
/// one line per row.
pub fn to_csv(comments: &[String], rows: &[Row]) -> String {
    let mut out = String::new();
    for c in comments {
        for l in c.lines() {
            let _ = writeln!(out, "# {l}");
        }
    }
    out.push_str("direction,size,dst_offset,src_offset,caller\n");
    for r in rows {
        let dir = match r.dir {
            Direction::FromUser => "from",
            Direction::ToUser => "to",
        };
        let _ = writeln!(
            out,
            "{dir},{},{},{},{}",
            r.n,
            r.dst_off,
            r.src_off,
            r.caller.as_deref().unwrap_or("")
        );
    }
    out
}
