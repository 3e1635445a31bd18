//! `copygen record --summary FILE`: what a workload trace holds, as the
//! bench's tables class it: calls per direction, a size histogram (the
//! bench's size classes, then the most common sizes), a distance histogram
//! (`(dst - src) mod 4096`, the bench's bands) and the top callers
//! (escaped: a name from the trace prints no control or bidi character).

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::front::diagnostics::escape;
use crate::front::strategy::Direction;
use crate::tools::trace::{cell, Trace, BANDS, SIZE_CLASSES};

fn pct(k: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        100.0 * k as f64 / n as f64
    }
}

/// The summary as markdown (tables a README can hold).
pub fn summary(trace: &Trace) -> String {
    let calls = &trace.calls;
    let n = calls.len();
    let from = calls
        .iter()
        .filter(|c| c.dir == Direction::FromUser)
        .count();
    let bytes: u64 = calls.iter().map(|c| c.call.n as u64).sum();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}: {n} calls ({from} from user, {} to user), {bytes} bytes, mean {:.0} bytes per call\n",
        escape(&trace.name, false),
        n - from,
        bytes as f64 / n.max(1) as f64
    );
    let mut sizes = [0usize; 6];
    let mut bands = [0usize; 5];
    for c in calls {
        let (class, band) = cell(&c.call);
        sizes[class] += 1;
        bands[band] += 1;
    }
    s.push_str("| size | calls | share |\n|---|---:|---:|\n");
    for (i, (label, _, _)) in SIZE_CLASSES.iter().enumerate() {
        let _ = writeln!(s, "| {label} | {} | {:.1}% |", sizes[i], pct(sizes[i], n));
    }
    s.push_str("\n| distance | calls | share |\n|---|---:|---:|\n");
    for (i, (label, _, _)) in BANDS.iter().enumerate() {
        let _ = writeln!(s, "| {label} | {} | {:.1}% |", bands[i], pct(bands[i], n));
    }
    let mut by_size: HashMap<u32, usize> = HashMap::new();
    for c in calls {
        *by_size.entry(c.call.n).or_default() += 1;
    }
    let mut top: Vec<(u32, usize)> = by_size.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let list: Vec<String> = top
        .iter()
        .take(8)
        .map(|(size, k)| format!("{size} ({:.1}%)", pct(*k, n)))
        .collect();
    let _ = writeln!(s, "\nmost common sizes: {}", list.join(", "));
    let mut by_caller: HashMap<Option<u32>, usize> = HashMap::new();
    for c in calls {
        *by_caller.entry(c.caller).or_default() += 1;
    }
    let mut top: Vec<(Option<u32>, usize)> = by_caller.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let list: Vec<String> = top
        .iter()
        .take(6)
        .map(|(c, k)| {
            // A caller is the trace's text: escaped as messages are, so a
            // name cannot move the cursor or reorder the line.
            let name = c.map_or("(unknown)", |i| trace.callers[i as usize].as_str());
            format!("{} ({:.1}%)", escape(name, false), pct(*k, n))
        })
        .collect();
    let _ = writeln!(s, "top callers: {}", list.join(", "));
    s
}
