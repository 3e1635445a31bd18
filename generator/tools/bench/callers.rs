//! The loops that call a routine for a fixed-size measurement, JIT-compiled
//! in [`CONTEXTS`] shapes that differ only in how many one-byte `nop`s
//! lead the loop body.
//!
//! Why: the cost of a short `rep movsb` depends on the code around it, not
//! only on its own instructions. Measured on an AMD EPYC Zen 4 (family
//! 0x19 model 0x11), with the same guarded routine and the same bare `rep
//! movsb` called from eight such loops, the ratio of the two at one fixed
//! size moved between 0.93x and 1.10x with the padding (129 B: 0.93-1.04x;
//! 192 B: 0.97-1.10x; 8 B and 512 B: 1.00x in every loop), and a bare `rep
//! movsb` with four `nop`s in front of it was 6 % faster than one without
//! at 192 B. One fixed caller is one draw from that spread: it can make a
//! routine look 7 % better or worse than it is, at a size that no other
//! caller shares. So each round of a fixed-size measurement calls every
//! subject from the same loop, and the rounds cycle through the loops; the
//! median over rounds is then a median over calling contexts.

use dynasmrt::{
    dynasm, x64::Assembler, AssemblyOffset, DynasmApi, DynasmLabelApi, ExecutableBuffer,
};

use super::CopyFn;

/// How many loop shapes (0..CONTEXTS leading `nop`s).
pub const CONTEXTS: usize = 8;

/// `loop(to, from, n, iters, f)`: `iters` (>= 1) calls of `f(to, from, n)`.
type LoopFn = unsafe extern "sysv64" fn(*mut u8, *const u8, usize, u64, CopyFn);

/// The compiled loops.
pub struct Callers {
    code: ExecutableBuffer,
    entries: Vec<AssemblyOffset>,
}

impl Callers {
    pub fn new() -> std::io::Result<Callers> {
        let mut ops = Assembler::new()?;
        let mut entries = Vec::with_capacity(CONTEXTS);
        for pad in 0..CONTEXTS {
            ops.align(64, 0xcc);
            entries.push(ops.offset());
            // Arguments live in callee-saved registers across the calls
            // (rep movs moves rdi/rsi, and the callee may clobber the rest).
            dynasm!(ops
                ; .arch x64
                ; push rbx
                ; push r12
                ; push r13
                ; push r14
                ; push r15
                ; mov rbx, rdi
                ; mov r12, rsi
                ; mov r13, rdx
                ; mov r14, rcx
                ; mov r15, r8
                ; top:
            );
            for _ in 0..pad {
                dynasm!(ops; .arch x64; nop);
            }
            dynasm!(ops
                ; .arch x64
                ; mov rdi, rbx
                ; mov rsi, r12
                ; mov rdx, r13
                ; call r15
                ; sub r14, 1
                ; jnz <top
                ; pop r15
                ; pop r14
                ; pop r13
                ; pop r12
                ; pop rbx
                ; ret
            );
        }
        let code = ops
            .finalize()
            .map_err(|_| std::io::Error::other("the caller loops did not finalize"))?;
        Ok(Callers { code, entries })
    }

    /// `iters` (at least one) calls of `f(dst, src, n)` from loop `context`
    /// (taken modulo [`CONTEXTS`]).
    ///
    /// # Safety
    /// `f` must be a copy routine and `dst`/`src` valid for `n` bytes.
    pub unsafe fn call(
        &self,
        context: usize,
        f: CopyFn,
        dst: *mut u8,
        src: *const u8,
        n: usize,
        iters: u32,
    ) {
        let at = self.entries[context % CONTEXTS];
        // SAFETY: `at` is the start of a loop assembled above with the
        // LoopFn signature; the buffer lives as long as `self`.
        let run: LoopFn = unsafe { std::mem::transmute(self.code.ptr(at)) };
        // SAFETY: the caller's contract.
        unsafe { run(dst, src, n, u64::from(iters.max(1)), f) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);
    static LAST: AtomicUsize = AtomicUsize::new(0);

    /// Counts its calls and records `to + from + n` (so arguments that
    /// the loop failed to restore show up).
    unsafe extern "sysv64" fn count(to: *mut u8, from: *const u8, n: usize) -> usize {
        CALLS.fetch_add(1, Ordering::SeqCst);
        LAST.store(to as usize + from as usize + n, Ordering::SeqCst);
        0
    }

    /// Moves the argument registers as `rep movsb` does, and clobbers the
    /// caller-saved ones, before counting.
    #[unsafe(naked)]
    unsafe extern "sysv64" fn clobber(_to: *mut u8, _from: *const u8, _n: usize) -> usize {
        core::arch::naked_asm!(
            "add rdi, 7",
            "add rsi, 9",
            "xor edx, edx",
            "mov rcx, -1",
            "mov r8, -1",
            "mov r9, -1",
            "mov r10, -1",
            "mov r11, -1",
            "jmp {count}",
            count = sym count,
        )
    }

    #[test]
    fn every_loop_makes_exactly_the_calls_asked_with_the_same_arguments() {
        let callers = Callers::new().unwrap();
        // `count` sees the arguments as given; `clobber` moves them as rep
        // movs does first, so each call must see them restored.
        let cases: [(CopyFn, usize); 2] = [(count, 0x1023), (clobber, 0x1000 + 7 + 0x20 + 9)];
        for context in 0..CONTEXTS {
            for iters in [1, 2, 37] {
                for (f, last) in cases {
                    CALLS.store(0, Ordering::SeqCst);
                    // SAFETY: both routines read no memory.
                    unsafe {
                        callers.call(context, f, 0x1000 as *mut u8, 0x20 as *const u8, 3, iters)
                    };
                    assert_eq!(
                        CALLS.load(Ordering::SeqCst),
                        iters as usize,
                        "context {context}"
                    );
                    assert_eq!(LAST.load(Ordering::SeqCst), last, "context {context}");
                }
            }
        }
        // Zero iterations still make one call (the contract says at least one).
        CALLS.store(0, Ordering::SeqCst);
        // SAFETY: as above.
        unsafe { callers.call(3, count, std::ptr::null_mut(), std::ptr::null(), 0, 0) };
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }
}
