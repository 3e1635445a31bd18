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
    pub symbol: &'static str,
    pub line: String,
}

/// The event name of a symbol's probe: by what the probe records.
pub fn event_name(direction: SymbolDirection) -> &'static str {
    match direction {
        SymbolDirection::Fixed(Direction::FromUser) => "copygen_from",
        SymbolDirection::Fixed(Direction::ToUser) => "copygen_to",
        SymbolDirection::ByUserPointer => "copygen_any",
    }
}

/// The `kprobe_events` lines of a probe: page offsets (`b12@0/W`) of both
/// pointers, the size, the top bits of both pointers where the routine
/// serves both directions, and the return address.
pub fn definitions(table: &ArchProbes, probe: &CopyProbe) -> Vec<ProbeDef> {
    let w = table.ptr_bits;
    let k = table.kernel_bits;
    probe
        .symbols
        .iter()
        .map(|s| {
            let event = event_name(s.direction);
            let mut line = format!(
                "p:{GROUP}/{event} {} to_off={}:b12@0/{w} from_off={}:b12@0/{w} n={}:u{w}",
                s.symbol, s.to, s.from, s.n
            );
            if s.direction == SymbolDirection::ByUserPointer {
                let at = w - k;
                let _ = write!(
                    line,
                    " to_kernel={}:b{k}@{at}/{w} from_kernel={}:b{k}@{at}/{w}",
                    s.to, s.from
                );
            }
            let _ = write!(line, " caller={}", table.caller);
            ProbeDef {
                event: event.to_string(),
                symbol: s.symbol,
                line,
            }
        })
        .collect()
}

/// The probe `--symbol NAME` names on `arch`, or an error listing them.
pub fn pick(arch: Arch, name: &str) -> Result<&'static CopyProbe> {
    let table = probes(arch);
    match table.find(name) {
        Some(p) => Ok(p),
        None => bail!(
            "--symbol: `{}` is not a copy routine copygen knows on {arch}; it knows: {}",
            crate::front::diagnostics::escape(name, false),
            symbol_list(table)
        ),
    }
}

/// `name (symbols: note)` for each probe of a table.
pub fn symbol_list(table: &ArchProbes) -> String {
    table
        .probes
        .iter()
        .map(|p| {
            let syms: Vec<&str> = p.symbols.iter().map(|s| s.symbol).collect();
            if syms == [p.name] {
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
