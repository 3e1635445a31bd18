//! `kind = "shift_combine"`: RISC-V's copy of a source misaligned to the
//! destination (see [`MethodKind::ShiftCombine`]).

use super::*;

/// Scratch registers the lowering uses: the two shift counts, the two
/// source words it alternates between, and the combined word.
pub(crate) const SHIFT_COMBINE_REGISTERS: u32 = 5;

impl Validator<'_> {
    pub(super) fn shift_combine(
        &self,
        arch: Arch,
        caps: &crate::arch::Capabilities,
        budget: &Budget,
        path: &FieldPath,
        m: &RawMethod,
    ) -> R<MethodKind> {
        if !caps.shift_combine {
            return Err(self.err(
                &path.key("kind"),
                format!(
                    "`shift_combine` is a RISC-V method (aligned loads shifted together, for cores whose misaligned loads trap); {arch} has no such method: its loads take a misaligned source as it is (use `unrolled`)"
                ),
            ));
        }
        let width = m.width.unwrap_or(caps.register_bytes);
        if width != caps.register_bytes {
            return Err(self.err(
                &path.key("width"),
                format!(
                    "a shift_combine word is one {}-byte register (SZREG) on {arch}, not {width} bytes",
                    caps.register_bytes
                ),
            ));
        }
        if budget.registers < SHIFT_COMBINE_REGISTERS {
            return Err(self.err(
                &path.key("kind"),
                format!(
                    "shift_combine needs {SHIFT_COMBINE_REGISTERS} scratch registers, but {}",
                    budget.reason
                ),
            ));
        }
        let ap = path.key("align");
        let align = self.align(arch, &ap, m.align.as_ref())?.unwrap_or(Align {
            pointer: AlignPointer::Dst,
            to: width,
            min_size: 2 * width as u64,
            by: AlignBy::Bytes,
        });
        if align.pointer != AlignPointer::Dst {
            return Err(self.err(
                &ap.key("pointer"),
                "shift_combine stores aligned words: it aligns `dst` (the source stays misaligned)",
            ));
        }
        if align.to != width {
            return Err(self.err(
                &ap.key("to"),
                format!(
                    "shift_combine aligns dst to its word, {width} bytes, not {}",
                    align.to
                ),
            ));
        }
        Ok(MethodKind::ShiftCombine { width, align })
    }
}
