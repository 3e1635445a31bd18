//! The out-of-line fixup code: where every exception-table entry of a
//! routine lands, repairing the state and then retrying, stepping or
//! returning.

use super::*;

impl Lowering<'_> {
    /// Under 6.1's `_ASM_EXTABLE_CPY` (linux flavour), leave for `done`
    /// after a machine check instead of touching the user side again.
    /// Says whether it did.
    fn machine_check_exit(&mut self, done: &Label) -> bool {
        let copy = self.flavor == Flavor::Linux && self.s.linux.extable == ExtableFormat::Copy;
        if copy {
            self.op(Op::MachineCheckExit {
                target: done.clone(),
                only_before: crate::kernel::version::extable_copy_only_before(self.s.linux.kernel),
            });
        }
        copy
    }

    /// The out-of-line code every exception-table entry of this routine
    /// lands in: repair the state, then retry, step or return.
    pub(super) fn fixup_code(&mut self) {
        if self.fixups.is_empty() {
            return;
        }
        self.op(Op::BeginFixups);
        self.comment("fixups: each entry repairs dst/src/len to what is known copied");
        let zero_tail = self.dir == Direction::FromUser && self.s.zero_tail;
        let done_id = self.fixup(Recover::None, Then::Done);
        let need_retry = self.fixups.iter().any(|f| f.then == Then::Retry);
        let need_step = self.fixups.iter().any(|f| f.then == Then::Step);
        let mut loop_label = |then| {
            let id = self.fixup(Recover::None, then);
            self.fixups[id].label.clone()
        };
        let retry = if need_retry {
            loop_label(Then::Retry)
        } else {
            String::new()
        };
        let step = if need_step {
            loop_label(Then::Step)
        } else {
            String::new()
        };
        for f in self.fixups.clone() {
            if f.recover == Recover::None {
                continue; // the loop or the return itself
            }
            self.place(&f.label);
            match f.recover {
                Recover::None => unreachable!(),
                Recover::Advance(k) => {
                    self.comment(format!("the first {k} bytes from the pointers are copied"));
                    self.op(Op::Advance(k))
                }
                Recover::Rep { unit } => {
                    self.comment(format!(
                        "rep movs{} stopped early: recompute the bytes left",
                        unit_suffix(unit)
                    ));
                    self.op(Op::RepRecover { unit })
                }
            }
            let target = match f.then {
                Then::Retry => retry.clone(),
                Then::Step => step.clone(),
                Then::Done => self.fixups[done_id].label.clone(),
            };
            self.op(Op::Jump(target));
        }
        let done_label = self.fixups[done_id].label.clone();
        if need_retry {
            self.place(&retry);
            // (the loop starts after the check: its byte loads change eax)
            let again = if self.machine_check_exit(&done_label) {
                let again = self.label("retry_loop");
                self.place(&again);
                again
            } else {
                retry
            };
            self.comment("byte retry: copy until the next fault, for an exact count");
            self.jump_len(Cond::Eq, 0, &done_label);
            self.byte_landing_on("retry", done_id);
            self.op(Op::Jump(again));
        }
        if need_step {
            self.place(&step);
            self.machine_check_exit(&done_label);
            self.comment("one byte more, so a fault in the first block still copies something");
            self.jump_len(Cond::Eq, 0, &done_label);
            self.byte_landing_on("step", done_id);
        }
        self.place(&done_label);
        if zero_tail {
            self.comment("zero the kernel buffer's uncopied rest");
            self.op(Op::ZeroRest);
        }
        self.ret(false);
    }
}
