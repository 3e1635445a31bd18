//! Where a replayed trace's calls go: the segment of the trace one round
//! replays, and each call's place in the buffers, at its recorded page
//! offsets ([`place`]).

use super::Rng;
use crate::tools::trace::{Call, TraceCall};

/// The calls one round replays: `len` consecutive calls of the trace (in
/// the recorded order) from `start`, wrapping at its end.
pub fn segment(trace: &[TraceCall], start: usize, len: usize) -> Vec<Call> {
    (0..len)
        .map(|i| trace[(start + i) % trace.len()].call)
        .collect()
}

/// A random segment start.
pub fn segment_start(trace_len: usize, rng: &mut Rng) -> usize {
    (rng.next_u64() % trace_len.max(1) as u64) as usize
}

/// Pages a call occupies on one side: from its page to the end of its bytes.
fn pages(off: u16, n: u32) -> usize {
    (off as usize + n as usize).div_ceil(4096).max(1)
}

/// Pages each side (source, destination) of the buffers spans for a
/// working set of `working_set` bytes (half each side), at least enough
/// for the largest call.
pub fn region_pages(calls: &[TraceCall], working_set: usize) -> usize {
    let largest = calls
        .iter()
        .map(|c| pages(c.call.src_off, c.call.n).max(pages(c.call.dst_off, c.call.n)))
        .max()
        .unwrap_or(1);
    (working_set / 2 / 4096).max(largest)
}

/// One placed call: byte positions from the page-aligned bases of the
/// destination and source regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub dst: usize,
    pub src: usize,
    pub n: usize,
}

/// Lay `calls` out in regions of `region_pages` pages each side: every call
/// takes the next free pages of each side (as many as its offset plus size
/// reach), its pointer at its recorded page offset in the first of them;
/// a call that would pass the end starts again at the first page. So the
/// calls rotate over the whole working set, each at its recorded offsets.
pub fn place(calls: &[Call], region_pages: usize) -> Vec<Placed> {
    let (mut dst_page, mut src_page) = (0, 0);
    let next = |cursor: &mut usize, off: u16, n: u32| {
        let need = pages(off, n);
        if *cursor + need > region_pages {
            *cursor = 0;
        }
        let at = *cursor * 4096 + off as usize;
        *cursor += need;
        at
    };
    calls
        .iter()
        .map(|c| Placed {
            dst: next(&mut dst_page, c.dst_off, c.n),
            src: next(&mut src_page, c.src_off, c.n),
            n: c.n as usize,
        })
        .collect()
}
