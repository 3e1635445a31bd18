//! The clock: the TSC (`rdtsc`), a constant-rate reference clock, not
//! core cycles (these VMs have no performance counters).

use std::time::{Duration, Instant};

/// The TSC at the start of a timed stretch (fenced: no earlier
/// instruction still in flight, no later one started).
#[inline(always)]
pub(super) fn tsc_start() -> u64 {
    // SAFETY: lfence and rdtsc exist on every x86_64 CPU.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    }
}

/// The TSC at the end of a timed stretch (after every earlier
/// instruction retired).
#[inline(always)]
pub(super) fn tsc_end() -> u64 {
    let mut aux = 0;
    // SAFETY: rdtscp exists on every x86_64 CPU this runs on.
    unsafe {
        let t = core::arch::x86_64::__rdtscp(&mut aux);
        core::arch::x86_64::_mm_lfence();
        t
    }
}

/// TSC ticks per second, measured against the monotonic clock.
pub fn tsc_hz() -> f64 {
    let t0 = Instant::now();
    let c0 = tsc_start();
    while t0.elapsed() < Duration::from_millis(50) {}
    let c1 = tsc_end();
    (c1 - c0) as f64 / t0.elapsed().as_secs_f64()
}
