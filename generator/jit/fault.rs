//! In-process fault handling for JIT-compiled routines, done the way the
//! kernel does it: a SIGSEGV/SIGBUS handler looks the faulting RIP up in the
//! exception table of the module it lies in and resumes at the fixup by
//! rewriting RIP. Every other fault goes to the handler installed before.
//!
//! The registry is an append-only list of slot arrays (chunks, never
//! freed), each slot published under a sequence counter (a seqlock), so
//! the handler neither allocates nor locks: it reads
//! a slot, and trusts it only if the counter was even and unchanged. A slot
//! that matches the faulting RIP belongs to code running on this very
//! thread, so its table cannot be freed while the handler reads it.
//! A module clears its slot before its code is unmapped.

use std::cell::Cell;
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Returned (in rax) by a routine that faulted at an instruction with no
/// exception-table entry: a generator bug the contract checks report.
pub const STRAY: usize = usize::MAX;

/// One exception-table entry, as offsets from the module's first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ExtableOffsets {
    pub insn: u32,
    pub fixup: u32,
}

/// Slots per chunk; chunks are appended (and never freed) as needed.
const SLOTS: usize = 256;

struct Slot {
    /// Odd while the slot is being rewritten.
    seq: AtomicUsize,
    claimed: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    table: AtomicPtr<ExtableOffsets>,
    len: AtomicUsize,
    /// A `ret` in the module for faults with no entry (0: none).
    landing: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    seq: AtomicUsize::new(0),
    claimed: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    table: AtomicPtr::new(std::ptr::null_mut()),
    len: AtomicUsize::new(0),
    landing: AtomicUsize::new(0),
};

/// A block of slots; the registry is a lock-free append-only list of them.
struct Chunk {
    slots: [Slot; SLOTS],
    /// Slots at and above this index were never claimed.
    high: AtomicUsize,
    next: AtomicPtr<Chunk>,
}

impl Chunk {
    const fn new() -> Chunk {
        Chunk {
            slots: [EMPTY; SLOTS],
            high: AtomicUsize::new(0),
            next: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// This chunk and the ones after it.
    fn chain(&'static self) -> impl Iterator<Item = &'static Chunk> {
        // SAFETY: chunks are leaked once published, so 'static.
        std::iter::successors(Some(self), |c| unsafe {
            c.next.load(Ordering::Acquire).as_ref()
        })
    }
}

static REGISTRY: Chunk = Chunk::new();

thread_local! {
    /// (faulting RIP, fault address) of this thread's last stray fault.
    static LAST_STRAY: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// The RIP and data address of the calling thread's last fault that had
/// no exception-table entry.
pub fn last_stray() -> (usize, usize) {
    LAST_STRAY.with(Cell::get)
}

/// A module's place in the registry; clears it when dropped.
pub struct Registration {
    slot: &'static Slot,
    /// Owned here; the handler reads it through the slot's pointer.
    _table: Box<[ExtableOffsets]>,
}

/// Publish the code range `start..end` with its exception table (sorted
/// here) and an optional `ret` landing for stray faults.
pub fn register(
    start: usize,
    end: usize,
    mut table: Vec<ExtableOffsets>,
    landing: Option<usize>,
) -> Registration {
    install();
    table.sort_unstable();
    let mut table = table.into_boxed_slice();
    let slot = claim();
    write(
        slot,
        start,
        end,
        table.as_mut_ptr(),
        table.len(),
        landing.unwrap_or(0),
    );
    Registration {
        slot,
        _table: table,
    }
}

/// A free slot, appending a chunk when every one is taken.
fn claim() -> &'static Slot {
    let mut chunk: &'static Chunk = &REGISTRY;
    loop {
        for (i, slot) in chunk.slots.iter().enumerate() {
            if slot
                .claimed
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                chunk.high.fetch_max(i + 1, Ordering::AcqRel);
                return slot;
            }
        }
        let mut next = chunk.next.load(Ordering::Acquire);
        if next.is_null() {
            let fresh = Box::into_raw(Box::new(Chunk::new()));
            match chunk.next.compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => next = fresh,
                Err(theirs) => {
                    // SAFETY: never published.
                    drop(unsafe { Box::from_raw(fresh) });
                    next = theirs;
                }
            }
        }
        // SAFETY: published chunks are leaked, never freed.
        chunk = unsafe { &*next };
    }
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration")
            .field("entries", &self._table.len())
            .finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        write(self.slot, 0, 0, std::ptr::null_mut(), 0, 0);
        self.slot.claimed.store(false, Ordering::Release);
        // `_table` is freed after this, once the slot no longer points at it.
    }
}

/// Seqlock write: only the claiming thread writes a slot.
fn write(
    slot: &Slot,
    start: usize,
    end: usize,
    table: *mut ExtableOffsets,
    len: usize,
    landing: usize,
) {
    let s = slot.seq.load(Ordering::Relaxed);
    slot.seq.store(s.wrapping_add(1), Ordering::Relaxed);
    fence(Ordering::Release);
    slot.start.store(start, Ordering::Relaxed);
    slot.end.store(end, Ordering::Relaxed);
    slot.table.store(table, Ordering::Relaxed);
    slot.len.store(len, Ordering::Relaxed);
    slot.landing.store(landing, Ordering::Relaxed);
    slot.seq.store(s.wrapping_add(2), Ordering::Release);
}

/// Where to resume after a fault at `pc`: `(rip, Some(rax))` for a stray
/// fault in a registered module, `(fixup, None)` for a table hit.
fn lookup(pc: usize) -> Option<(usize, Option<usize>)> {
    let slots = REGISTRY
        .chain()
        .flat_map(|c| &c.slots[..c.high.load(Ordering::Acquire)]);
    for slot in slots {
        let s1 = slot.seq.load(Ordering::Acquire);
        if s1 & 1 == 1 {
            continue; // being rewritten: not the slot of code running here
        }
        let start = slot.start.load(Ordering::Relaxed);
        let end = slot.end.load(Ordering::Relaxed);
        let table = slot.table.load(Ordering::Relaxed);
        let len = slot.len.load(Ordering::Relaxed);
        let landing = slot.landing.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if slot.seq.load(Ordering::Relaxed) != s1 || pc < start || pc >= end {
            continue;
        }
        // SAFETY: pc lies in this module's code, which this thread is
        // running, so the module (and its table) is alive.
        let entries = unsafe { std::slice::from_raw_parts(table, len) };
        let off = (pc - start) as u32;
        return match entries.binary_search_by_key(&off, |e| e.insn) {
            Ok(i) => Some((start + entries[i].fixup as usize, None)),
            Err(_) if landing != 0 => Some((landing, Some(STRAY))),
            Err(_) => None,
        };
    }
    None
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod handler {
    use super::{lookup, LAST_STRAY};
    use std::cell::UnsafeCell;
    use std::mem::MaybeUninit;
    use std::sync::Once;

    static INSTALL: Once = Once::new();

    /// The actions installed before ours, for SIGSEGV and SIGBUS: written
    /// once, before our handler is installed, then only read.
    struct Previous(UnsafeCell<MaybeUninit<[libc::sigaction; 2]>>);
    // SAFETY: the one write (under `INSTALL`) precedes every read.
    unsafe impl Sync for Previous {}
    static PREVIOUS: Previous = Previous(UnsafeCell::new(MaybeUninit::uninit()));

    fn previous(sig: libc::c_int) -> *mut libc::sigaction {
        let i = usize::from(sig == libc::SIGBUS);
        // SAFETY: in bounds of the 2-element array.
        unsafe { PREVIOUS.0.get().cast::<libc::sigaction>().add(i) }
    }

    pub fn install() {
        INSTALL.call_once(|| unsafe {
            for sig in [libc::SIGSEGV, libc::SIGBUS] {
                assert_eq!(
                    libc::sigaction(sig, std::ptr::null(), previous(sig)),
                    0,
                    "sigaction query"
                );
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = handle as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_NODEFER;
                libc::sigemptyset(&mut act.sa_mask);
                assert_eq!(
                    libc::sigaction(sig, &act, std::ptr::null_mut()),
                    0,
                    "sigaction install"
                );
            }
        });
    }

    /// No allocation, locking or printing: only loads, a binary search and
    /// two register writes.
    extern "C" fn handle(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        unsafe {
            let uc = ctx as *mut libc::ucontext_t;
            let gregs = &mut (*uc).uc_mcontext.gregs;
            let pc = gregs[libc::REG_RIP as usize] as usize;
            if let Some((rip, rax)) = lookup(pc) {
                if let Some(rax) = rax {
                    LAST_STRAY.with(|c| c.set((pc, (*info).si_addr() as usize)));
                    gregs[libc::REG_RAX as usize] = rax as i64;
                }
                gregs[libc::REG_RIP as usize] = rip as i64;
                return;
            }
            chain(sig, info, ctx);
        }
    }

    /// Hand the fault to whoever was there before us.
    unsafe fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: written by `install` before this handler existed.
        let prev = unsafe { &*previous(sig) };
        let h = prev.sa_sigaction;
        if h == libc::SIG_DFL || h == libc::SIG_IGN {
            // Back to the default action; returning re-runs the faulting
            // instruction, which now kills the process as it would have.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(h) };
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
            f(sig);
        }
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
use handler::install;

/// Nothing to install where the JIT cannot run its code.
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn install() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_entries_and_ignores_cleared_slots() {
        let r = register(
            0x1000,
            0x1100,
            vec![
                ExtableOffsets {
                    insn: 0x20,
                    fixup: 0x80,
                },
                ExtableOffsets {
                    insn: 0x10,
                    fixup: 0x90,
                },
            ],
            Some(0x10ff),
        );
        assert_eq!(lookup(0x1010), Some((0x1090, None)));
        assert_eq!(lookup(0x1020), Some((0x1080, None)));
        assert_eq!(lookup(0x1011), Some((0x10ff, Some(STRAY))));
        assert_eq!(lookup(0x1100), None);
        drop(r);
        assert_eq!(lookup(0x1010), None);
    }

    #[test]
    fn more_modules_than_a_chunk_holds() {
        // Fake code ranges far from real code; more than two chunks' worth.
        let base = 0x7000_0000usize;
        let regs: Vec<_> = (0..2 * SLOTS + 10)
            .map(|i| {
                register(
                    base + i * 0x100,
                    base + i * 0x100 + 0x80,
                    vec![ExtableOffsets { insn: 4, fixup: 8 }],
                    None,
                )
            })
            .collect();
        for i in (0..regs.len()).step_by(37) {
            assert_eq!(
                lookup(base + i * 0x100 + 4),
                Some((base + i * 0x100 + 8, None))
            );
            assert_eq!(lookup(base + i * 0x100 + 5), None);
        }
        drop(regs);
        assert_eq!(lookup(base + 4), None);
    }
}
