//! Shift-and-combine, the misaligned-source copy of arch/riscv/lib/uaccess.S
//! (Akira Tsukamoto, "riscv: __asm_copy_to-from_user: Optimize unaligned
//! memory access and pipeline stall", 5.14): align `dst`, then build each
//! destination word from the two aligned source words around it, so no
//! access is misaligned (those trap on many RISC-V cores).
//!
//! Every pointer stays exact: `src`, `dst` and `len` advance only after a
//! word is stored, and the aligned source address is recomputed from
//! `src` at each load. So at a fault, on whichever side is user memory,
//! the state is right already (`Recover::None`) and the byte retry after
//! it stops at the very byte that faults: an aligned word lies in one
//! page; the first load faults only if the page holding `src` is gone, a
//! later one only if it starts a page (the word before it loaded), so
//! every byte before it is readable; a store faults only if the page
//! holding `dst` is gone.

use super::*;

impl Lowering<'_> {
    /// `align`: the prologue, None where it could not run.
    pub(super) fn shift_combine(&mut self, name: &str, width: u32, align: Option<Align>, lo: u64) {
        if let Some(a) = align {
            self.align_prologue(name, &a, lo);
        }
        let tail = self.label(&format!("{name}_tail"));
        let words = self.label(&format!("{name}_words"));
        let top = self.label(&format!("{name}_shift"));
        let second = self.label(&format!("{name}_shift_b"));
        let w = width as u64;
        // The prologue is skipped below min_size: only an aligned dst
        // takes the word paths.
        self.op(Op::JumpIfPtr {
            test: PtrTest::Dst,
            mask: width - 1,
            aligned: false,
            target: tail.clone(),
        });
        self.jump_len(Cond::Below, w, &tail);
        self.op(Op::JumpIfPtr {
            test: PtrTest::Src,
            mask: width - 1,
            aligned: true,
            target: words.clone(),
        });
        self.comment(format!(
            "here: dst {width}-byte aligned, src not, len >= {width}: aligned loads, shifted together"
        ));
        // Scratch: 0, 1 the shifts; 2 and 3 the source words in turn; 4 the result.
        let (sh_lo, sh_hi, wa, wb, out) = (0, 1, 2, 3, 4);
        self.op(Op::ShiftSetup {
            width,
            lo: sh_lo,
            hi: sh_hi,
        });
        let p = Progress {
            done: 0,
            dirty: false,
        };
        let user = self.site(self.user_loads, &format!("{name}_first_load"), p);
        self.op(Op::LoadAligned {
            width,
            reg: wa,
            at: 0,
            user,
        });
        // Two iterations per turn, so the words swap roles without a move.
        for (label, prev, next, half) in [(&top, wa, wb, "a"), (&second, wb, wa, "b")] {
            self.place(label);
            self.comment(format!(
                "here: len >= {width}, the aligned word at src in scratch {prev}"
            ));
            let user = self.site(self.user_loads, &format!("{name}_shift_load_{half}"), p);
            self.op(Op::LoadAligned {
                width,
                reg: next,
                at: width,
                user,
            });
            self.op(Op::Combine {
                out,
                prev,
                next,
                lo: sh_lo,
                hi: sh_hi,
            });
            let user = self.site(self.user_stores, &format!("{name}_shift_store_{half}"), p);
            self.op(Op::Store(Access {
                width,
                reg: out,
                mem: Mem {
                    base: Ptr::Dst,
                    at: At::Start(0),
                },
                user,
            }));
            self.op(Op::Advance(width));
            if half == "a" {
                self.jump_len(Cond::Below, w, &tail);
            } else {
                self.jump_len(Cond::AboveEq, w, &top);
                self.op(Op::Jump(tail.clone()));
            }
        }
        self.place(&words);
        self.comment(format!(
            "here: dst and src {width}-byte aligned: a word loop"
        ));
        self.jump_len(Cond::Below, w, &tail);
        self.copy_one(&format!("{name}_word"), width, 0, At::Start(0), p);
        self.op(Op::Advance(width));
        self.op(Op::Jump(words));
        self.place(&tail);
        self.comment(format!("here: len < {width}, or dst not aligned"));
        self.bytes(name);
    }
}
