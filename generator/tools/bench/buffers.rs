//! The memory the routines copy in: page-aligned source and destination
//! buffers, and cache flushes for cold rows.

use super::sweep::Sweep;

/// Page-aligned buffers big enough for every row: sources in the first
/// half, destinations in the second.
pub(super) struct Buffers {
    ptr: *mut u8,
    layout: std::alloc::Layout,
    half: usize,
}

impl Buffers {
    pub(super) fn new(sweep: &Sweep) -> Buffers {
        let need = sweep
            .rows
            .iter()
            .map(|r| match r.dist {
                // Offsets anywhere in the first page.
                Some(_) => r.n + 4095,
                None => r.n + r.src_off.max(r.dst_off),
            })
            .max()
            .unwrap_or(0);
        let half = need.div_ceil(4096) * 4096 + 4096;
        let layout = std::alloc::Layout::from_size_align(2 * half, 4096).expect("layout");
        // SAFETY: non-zero size; the memory is initialised right below.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null(), "out of memory");
        // SAFETY: ptr is valid for 2 * half bytes.
        unsafe { std::ptr::write_bytes(ptr, 0x5a, 2 * half) };
        Buffers { ptr, layout, half }
    }
    pub(super) fn src(&self, off: usize) -> *const u8 {
        // SAFETY: offsets are within the first half by construction.
        unsafe { self.ptr.add(off) }
    }
    pub(super) fn dst(&self, off: usize) -> *mut u8 {
        // SAFETY: offsets are within the second half by construction.
        unsafe { self.ptr.add(self.half + off) }
    }
}

impl Drop for Buffers {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Evict `n` bytes from `p` from every cache level.
pub(super) fn flush(p: *const u8, n: usize) {
    let mut a = (p as usize) & !63;
    while a < p as usize + n.max(1) {
        // SAFETY: a lies within a live buffer.
        unsafe { core::arch::x86_64::_mm_clflush(a as *const u8) };
        a += 64;
    }
    // SAFETY: mfence exists on every x86_64 CPU.
    unsafe { core::arch::x86_64::_mm_mfence() };
}
