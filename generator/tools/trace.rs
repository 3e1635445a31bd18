//! Workload traces: the calls a program made, one row per call, as
//! `copygen record` writes them and `copygen bench --workload` and `copygen
//! tune --workload` replay them (in the recorded order at the recorded page
//! offsets: `bench/replay.rs`). The format (documented in
//! `docs/benchmarking.md`):
//!
//! ```text
//! # comments and blank lines are skipped
//! direction,size,dst_offset,src_offset,caller
//! from,64,16,0,vfs_read
//! to,4096,0,0,
//! ```
//!
//! The `caller` column is optional (the header says whether it is there).
//! Every error names the file, the line, the column and the field.

use std::collections::HashMap;

use anyhow::{bail, Result};
use serde::Serialize;

use crate::front::diagnostics::escape;
use crate::front::strategy::Direction;

/// The largest size a trace may hold: the bench's own bound (`--sizes`).
pub const MAX_SIZE: usize = 256 << 20;
/// The most calls a trace may hold.
pub const MAX_CALLS: usize = 1 << 20;
/// The longest caller name.
pub const MAX_CALLER: usize = 256;
/// The columns, in order; `caller` may be left out of the header.
pub const COLUMNS: [&str; 5] = ["direction", "size", "dst_offset", "src_offset", "caller"];

/// One recorded call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceCall {
    pub dir: Direction,
    pub call: Call,
    /// Index into [`Trace::callers`].
    pub caller: Option<u32>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Trace {
    pub name: String,
    /// The file it was read from (as given).
    pub origin: String,
    #[serde(skip)]
    pub calls: Vec<TraceCall>,
    /// Distinct callers, in order of first appearance.
    #[serde(skip)]
    pub callers: Vec<String>,
}

impl Trace {
    /// Read a trace file through [`crate::input`].
    pub fn load(path: &std::path::Path) -> Result<Trace> {
        let origin = path.display().to_string();
        let text = crate::input::read_string(path)
            .map_err(|e| anyhow::anyhow!("{}: error: {e}", escape(&origin, false)))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| origin.clone());
        Trace::parse(&name, &origin, &text)
    }

    /// Parse the text of a trace; errors are `origin:line:column: error:
    /// field `name`: ...`.
    pub fn parse(name: &str, origin: &str, text: &str) -> Result<Trace> {
        let origin = escape(origin, false);
        let mut calls = Vec::new();
        let mut callers: Vec<String> = Vec::new();
        let mut caller_ix: HashMap<String, u32> = HashMap::new();
        let mut columns: Option<usize> = None;
        for (ln, line) in text.lines().enumerate() {
            let ln = ln + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let Some(ncols) = columns else {
                let names: Vec<&str> = line.split(',').map(str::trim).collect();
                let ok = (4..=5).contains(&names.len()) && names[..] == COLUMNS[..names.len()];
                if !ok {
                    bail!(
                        "{origin}:{ln}:1: error: the header is `{}`; a workload trace's header is `{}` (the caller column may be left out)",
                        escape(trimmed, false),
                        COLUMNS.join(",")
                    );
                }
                columns = Some(names.len());
                continue;
            };
            if calls.len() == MAX_CALLS {
                bail!("{origin}:{ln}:1: error: more than {MAX_CALLS} calls; a workload trace holds at most {MAX_CALLS}");
            }
            let fields: Vec<(usize, &str)> = csv_fields(line).collect();
            if fields.len() != ncols {
                let (col, what) = if fields.len() < ncols {
                    (
                        line.chars().count() + 1,
                        format!("field `{}` is missing", COLUMNS[fields.len()]),
                    )
                } else {
                    (
                        fields[ncols].0,
                        format!("{} fields; the header names {ncols}", fields.len()),
                    )
                };
                bail!("{origin}:{ln}:{col}: error: {what}");
            }
            let at = |i: usize| {
                format!(
                    "{origin}:{ln}:{}: error: field `{}`",
                    fields[i].0, COLUMNS[i]
                )
            };
            let text = |i: usize| fields[i].1.trim();
            let dir = match text(0) {
                "from" => Direction::FromUser,
                "to" => Direction::ToUser,
                t => bail!(
                    "{}: `{}` is not a direction: `from` (copy_from_user) or `to` (copy_to_user)",
                    at(0),
                    escape(t, false)
                ),
            };
            let number = |i: usize, max: usize, what: &str| -> Result<usize> {
                let t = text(i);
                if t.starts_with('-') && t[1..].bytes().all(|b| b.is_ascii_digit()) && t.len() > 1 {
                    bail!("{}: {} is negative; {what}", at(i), escape(t, false));
                }
                if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                    bail!(
                        "{}: `{}` is not a whole number; {what}",
                        at(i),
                        escape(t, false)
                    );
                }
                match t.parse::<u64>() {
                    Ok(v) if v <= max as u64 => Ok(v as usize),
                    _ => bail!("{}: {} is out of range; {what}", at(i), escape(t, false)),
                }
            };
            let n = number(
                1,
                MAX_SIZE,
                "a size is 0 to 268435456 (256 MiB), the bench's largest",
            )?;
            let offset = "a page offset is 0 to 4095";
            let dst_off = number(2, 4095, offset)? as u16;
            let src_off = number(3, 4095, offset)? as u16;
            let caller = match fields.get(4).map(|f| f.1.trim()) {
                None | Some("") => None,
                Some(c) if c.chars().count() > MAX_CALLER => {
                    bail!("{}: longer than {MAX_CALLER} characters", at(4))
                }
                Some(c) => Some(*caller_ix.entry(c.to_string()).or_insert_with(|| {
                    callers.push(c.to_string());
                    callers.len() as u32 - 1
                })),
            };
            calls.push(TraceCall {
                dir,
                call: Call {
                    n: n as u32,
                    src_off,
                    dst_off,
                },
                caller,
            });
        }
        if columns.is_none() {
            bail!(
                "{origin}: error: no header line; a workload trace begins with `{}`",
                COLUMNS.join(",")
            );
        }
        if calls.is_empty() {
            bail!("{origin}: error: the trace holds no calls");
        }
        Ok(Trace {
            name: name.to_string(),
            origin: origin.into_owned(),
            calls,
            callers,
        })
    }

    /// The largest size in the trace.
    pub fn max_size(&self) -> usize {
        self.calls
            .iter()
            .map(|c| c.call.n as usize)
            .max()
            .unwrap_or(0)
    }
}

// ---- one call ------------------------------------------------------------------

/// The comma-separated fields of one CSV line, each with the 1-based
/// column (in characters) where it begins: what located errors name.
pub fn csv_fields(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut col = 1;
    line.split(',').map(move |f| {
        let at = col;
        col += f.chars().count() + 1;
        (at, f)
    })
}

/// One copy call: `n` bytes from `src + src_off` to `dst + dst_off` (both
/// bases page-aligned, offsets below 4096): a trace's recorded call, or
/// one a size distribution draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    pub n: u32,
    pub src_off: u16,
    pub dst_off: u16,
}

impl Call {
    /// `(dst - src) mod 4096`.
    pub fn alias(&self) -> u32 {
        (self.dst_off as u32 + 4096 - self.src_off as u32) % 4096
    }
}

// ---- the size x distance table ----------------------------------------------

/// Size classes: `(label, lowest, highest)` bytes.
pub const SIZE_CLASSES: [(&str, usize, usize); 6] = [
    ("0-15", 0, 15),
    ("16-63", 16, 63),
    ("64-255", 64, 255),
    ("256-1023", 256, 1023),
    ("1K-4K", 1024, 4096),
    (">4K", 4097, usize::MAX),
];

/// Distance bands of `(dst - src) mod 4096`: `(label, lowest, highest)`.
pub const BANDS: [(&str, u32, u32); 5] = [
    ("0", 0, 0),
    ("1..15", 1, 15),
    ("16..31", 16, 31),
    ("32..63", 32, 63),
    ("64+", 64, 4095),
];

/// The (size class, band) cell of a call.
pub fn cell(c: &Call) -> (usize, usize) {
    let n = c.n as usize;
    let class = SIZE_CLASSES
        .iter()
        .position(|&(_, lo, hi)| (lo..=hi).contains(&n))
        .expect("the classes cover every size");
    let a = c.alias();
    let band = BANDS
        .iter()
        .position(|&(_, lo, hi)| (lo..=hi).contains(&a))
        .expect("the bands cover 0..4096");
    (class, band)
}

/// Calls per cell, `counts[class][band]`.
pub fn cell_counts<'a>(calls: impl IntoIterator<Item = &'a Call>) -> [[u32; 5]; 6] {
    let mut counts = [[0; 5]; 6];
    for c in calls {
        let (s, b) = cell(c);
        counts[s][b] += 1;
    }
    counts
}
