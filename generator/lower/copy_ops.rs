//! The copy operations a method lowers to: byte loop, `rep movs`,
//! head/tail buckets, the alignment prologue and the unrolled loop. Each
//! records at every user access how many bytes are done (its fixup).

use super::*;

impl Lowering<'_> {
    /// Byte loop to the end, then return 0: the length tested once on
    /// entry and then at the bottom, one branch a byte (as 6.12's
    /// `.Lcopy_user_tail`), not a test at the top and a jump back.
    pub(super) fn bytes(&mut self, name: &str) {
        let top = self.label(&format!("{name}_bytes"));
        let done = self.label(&format!("{name}_bytes_done"));
        self.jump_len(Cond::Eq, 0, &done);
        self.place(&top);
        let p = Progress {
            done: 0,
            dirty: false,
        };
        self.copy_one(&format!("{name}_byte"), 1, 0, At::Start(0), p);
        self.op(Op::Advance(1));
        self.jump_len(Cond::Ne, 0, &top);
        self.place(&done);
        self.ret(true);
    }

    /// `rep movs` of `unit` bytes to the end, then return 0; with `unit >
    /// 1` the last `len mod unit` bytes by `tail`: a second `rep movsb`, or
    /// the byte loop (6.12's `.Llarge_movsq`), which spares the second
    /// `rep` start-up.
    pub(super) fn rep_movs(&mut self, name: &str, unit: u32, tail: RepTail) {
        let user_site = |this: &mut Self, unit: u32, label: &str| {
            let fixup = this.fixup_for(Recover::Rep { unit }, false);
            Some(UserSite {
                name: this.label(label),
                fixup,
            })
        };
        let user = user_site(self, unit, &format!("rep_movs{}", unit_suffix(unit)));
        self.op(Op::RepMovs { unit, user });
        match tail {
            _ if unit == 1 => self.ret(true),
            RepTail::RepMovsb => {
                let rest = user_site(self, 1, "rep_movsb_rest");
                self.op(Op::RepMovs {
                    unit: 1,
                    user: rest,
                });
                self.ret(true);
            }
            RepTail::Bytes => self.bytes(&format!("{name}_rest")),
        }
    }

    /// Overlapping head/tail copies in power-of-two buckets: sizes from
    /// `N` are one `N`-byte copy from the start and one ending at the end.
    /// Below the widest access, a bucket ends at `2N - 1` (its two copies
    /// overlap by at least a byte); from it, at `2N`, where the two copies
    /// meet: 16 bytes are two 8-byte copies, not four, which is what a
    /// word loop does there too.
    pub(super) fn head_tail(&mut self, name: &str, width: u32, regs: u32, lo: u64, hi: u64) {
        let widest = self.widest_access(width, u32::MAX) as u64;
        // Buckets (first size, last size, N).
        let mut buckets = Vec::new();
        if lo == 0 {
            buckets.push((0, 0, 0));
        }
        if lo <= 1 && hi >= 1 {
            buckets.push((1, 1, 1));
        }
        let (mut first, mut n): (u64, u64) = (2, 2);
        while first <= hi {
            let last = if n >= widest { 2 * n } else { 2 * n - 1 }.min(hi);
            if last >= lo {
                buckets.push((first.max(lo), last, n));
            }
            (first, n) = (last + 1, 2 * n);
        }
        self.bucket_tree(name, width, regs, &buckets);
    }

    /// The widest access the architecture has of at most `width` and `n`
    /// bytes.
    fn widest_access(&self, width: u32, n: u32) -> u32 {
        *crate::arch::capabilities(self.s.arch)
            .widths
            .iter()
            .filter(|&&w| w <= width.min(n))
            .max()
            .expect("byte width")
    }

    /// A balanced tree of length tests over `buckets`.
    pub(super) fn bucket_tree(
        &mut self,
        name: &str,
        width: u32,
        regs: u32,
        buckets: &[(u64, u64, u64)],
    ) {
        if let [(first, last, n)] = buckets {
            self.comment(format!("here: {}", range_fact(*first, Some(*last))));
            let n = *n as u32;
            match n {
                0 => self.ret(true),
                1 => {
                    let p = Progress {
                        done: 0,
                        dirty: false,
                    };
                    self.copy_one(&format!("{name}_1"), 1, 0, At::Start(0), p);
                    self.ret(true);
                }
                _ => {
                    let w = self.widest_access(width, n);
                    let mut pieces: Vec<(u32, At)> =
                        (0..n / w).map(|i| (w, At::Start(i * w))).collect();
                    pieces.extend((0..n / w).map(|i| (w, At::End(n - i * w))));
                    let p = Progress {
                        done: 0,
                        dirty: false,
                    };
                    self.copy_group(&format!("{name}_{n}"), &pieces, regs, p);
                    self.ret(true);
                }
            }
            return;
        }
        let mid = buckets.len() / 2;
        let right = self.label(&format!("{name}_from{}", buckets[mid].0));
        self.jump_len(Cond::AboveEq, buckets[mid].0, &right);
        self.bucket_tree(name, width, regs, &buckets[..mid]);
        self.place(&right);
        self.bucket_tree(name, width, regs, &buckets[mid..]);
    }

    /// Align the chosen pointer when len >= min_size (and, for `Both`, the
    /// pointers are congruent): by a byte loop, or by one word and a jump
    /// to the boundary (`AlignBy`). Returns the smallest len possible
    /// afterwards.
    pub(super) fn align_prologue(&mut self, name: &str, a: &Align, lo: u64) -> u64 {
        let aligned = self.label(&format!("{name}_aligned"));
        if lo < a.min_size {
            self.jump_len(Cond::Below, a.min_size, &aligned);
        }
        let test = match a.pointer {
            AlignPointer::Both => {
                // Only congruent pointers can both be aligned.
                self.op(Op::JumpIfPtr {
                    test: PtrTest::Congruent,
                    mask: a.to - 1,
                    aligned: false,
                    target: aligned.clone(),
                });
                PtrTest::Dst
            }
            AlignPointer::Dst => PtrTest::Dst,
            AlignPointer::Src => PtrTest::Src,
            AlignPointer::Congruent => unreachable!("validated: not a prologue pointer"),
        };
        let p = Progress {
            done: 0,
            dirty: false,
        };
        // The byte loop tests the pointer every iteration; the word once
        // (an aligned pointer skips it: its `to` bytes would be copied
        // twice, and the length would wait on the arithmetic).
        let top = (a.by == AlignBy::Bytes).then(|| self.label(&format!("{name}_align")));
        if let Some(top) = &top {
            self.place(top);
        }
        self.op(Op::JumpIfPtr {
            test,
            mask: a.to - 1,
            aligned: true,
            target: aligned.clone(),
        });
        let lo_after = match top {
            Some(top) => {
                self.copy_one(&format!("{name}_align"), 1, 0, At::Start(0), p);
                self.op(Op::Advance(1));
                self.op(Op::Jump(top));
                lo.saturating_sub(a.to as u64 - 1)
            }
            None => {
                // One word where it lies (len >= min_size >= to: inside
                // the copy), then on to the boundary, 1..to-1 bytes, those
                // between the boundary and the word's end copied again. A
                // fault in the word has copied nothing past the pointers.
                self.copy_one(&format!("{name}_align_word"), a.to, 0, At::Start(0), p);
                self.op(Op::AdvanceToBoundary { test, to: a.to });
                lo.saturating_sub(a.to as u64)
            }
        };
        self.place(&aligned);
        self.comment(format!(
            "here: {} is {}-byte aligned if len was >= {} on entry",
            match a.pointer {
                AlignPointer::Both => "dst (and src, when congruent)",
                AlignPointer::Dst => "dst",
                _ => "src",
            },
            a.to,
            a.min_size
        ));
        lo_after
    }

    pub(super) fn unrolled(&mut self, name: &str, u: &Unrolled, lo: u64) {
        let lo_after_align = match u.align {
            Some(a) => self.align_prologue(name, &a, lo),
            None => lo,
        };

        let top = self.label(&format!("{name}_loop"));
        let tail = self.label(&format!("{name}_tail"));
        if lo_after_align < u.block as u64 {
            self.jump_len(Cond::Below, u.block as u64, &tail);
        }
        self.place(&top);
        self.comment(format!("here: len >= {}", u.block));

        // Prefetch: never beyond the end of the source.
        if let Some(pf) = &u.prefetch {
            let size = if pf.kind == PrefetchKind::Touch {
                u.width
            } else {
                1
            };
            let mut distances = pf.distances.clone();
            distances.sort_unstable();
            let skip = self.label(&format!("{name}_prefetched"));
            let mut guarded = false;
            for d in distances {
                if d + size > u.block {
                    self.comment(format!(
                        "prefetch at +{d} only while it stays inside the source (len >= {})",
                        d + size
                    ));
                    self.jump_len(Cond::Below, (d + size) as u64, &skip);
                    guarded = true;
                }
                if pf.kind == PrefetchKind::Touch {
                    let p = Progress {
                        done: 0,
                        dirty: false,
                    };
                    let site = self.site(self.user_loads, &format!("{name}_touch{d}"), p);
                    self.op(Op::Load(Access {
                        width: u.width,
                        reg: 0,
                        mem: Mem {
                            base: Ptr::Src,
                            at: At::Start(d),
                        },
                        user: site,
                    }));
                } else {
                    self.op(Op::Prefetch {
                        kind: pf.kind,
                        at: d,
                    });
                }
            }
            if guarded {
                self.place(&skip);
            } else {
                self.unlabel(&skip);
            }
        }

        let words = u.block / u.width;
        let p = Progress {
            done: 0,
            dirty: false,
        };
        match u.grouping {
            Grouping::LoadsFirst => {
                let pieces: Vec<_> = (0..words)
                    .map(|i| (u.width, At::Start(i * u.width)))
                    .collect();
                self.copy_group(&format!("{name}_loop"), &pieces, u.registers, p);
            }
            Grouping::Interleaved => {
                let mut p = p;
                let per = self.regs_per_piece(u.width);
                for i in 0..words {
                    p = self.copy_one(
                        &format!("{name}_loop{i}"),
                        u.width,
                        (i % u.registers) as u8 * per,
                        At::Start(i * u.width),
                        p,
                    );
                }
            }
            Grouping::Multiple => {
                let group = u.registers * 4;
                for g in 0..(u.block / group) {
                    let at = g * group;
                    let before = Progress {
                        done: at,
                        dirty: false,
                    };
                    let lsite = self.site(self.user_loads, &format!("{name}_ldm{g}"), before);
                    self.op(Op::LoadMultiple {
                        count: u.registers as u8,
                        at,
                        user: lsite,
                    });
                    // An stm that faults may have stored some of its words.
                    let ssite = self.site(
                        self.user_stores,
                        &format!("{name}_stm{g}"),
                        Progress {
                            done: at,
                            dirty: true,
                        },
                    );
                    self.op(Op::StoreMultiple {
                        count: u.registers as u8,
                        at,
                        user: ssite,
                    });
                }
            }
        }
        self.op(Op::Advance(u.block));
        self.jump_len(Cond::AboveEq, u.block as u64, &top);
        self.place(&tail);
        self.comment(format!("here: len < {}", u.block));

        match u.tail {
            Tail::Bytes => self.bytes(name),
            Tail::RepMovsb => self.rep_movs(name, 1, RepTail::RepMovsb),
            Tail::RepMovs => self.rep_movs(name, u.width, RepTail::RepMovsb),
            Tail::OverlapBlock => {
                // The class starts at >= block (validated), so the last
                // block lies inside the copy; with len == 0 it copies
                // bytes already copied again, which cannot fault.
                self.comment(format!(
                    "the last {} bytes in one overlapping block, no branch: at least {} were copied in all",
                    u.block, u.block
                ));
                let pieces: Vec<(u32, At)> = (0..words)
                    .map(|i| (u.width, At::End(u.block - i * u.width)))
                    .collect();
                let p = Progress {
                    done: 0,
                    dirty: false,
                };
                self.copy_group(&format!("{name}_block"), &pieces, u.registers, p);
                self.ret(true);
            }
            Tail::Words | Tail::Overlap => {
                // Tested on entry and at the bottom, as the byte loop.
                let wtop = self.label(&format!("{name}_words"));
                let wdone = self.label(&format!("{name}_words_done"));
                self.jump_len(Cond::Below, u.width as u64, &wdone);
                self.place(&wtop);
                let p = Progress {
                    done: 0,
                    dirty: false,
                };
                self.copy_one(&format!("{name}_word"), u.width, 0, At::Start(0), p);
                self.op(Op::Advance(u.width));
                self.jump_len(Cond::AboveEq, u.width as u64, &wtop);
                self.place(&wdone);
                self.comment(format!("here: len < {}", u.width));
                if u.tail == Tail::Words {
                    self.bytes(name);
                } else {
                    let ret = self.label(&format!("{name}_overlap_done"));
                    self.jump_len(Cond::Eq, 0, &ret);
                    self.comment(format!(
                        "the last {} bytes, overlapping bytes already copied: at least {} were copied in all",
                        u.width, u.width
                    ));
                    let p = Progress {
                        done: 0,
                        dirty: false,
                    };
                    self.copy_one(&format!("{name}_overlap"), u.width, 0, At::End(u.width), p);
                    self.place(&ret);
                    self.ret(true);
                }
            }
        }
    }
}
