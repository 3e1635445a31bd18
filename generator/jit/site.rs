//! A kernel call site, JIT-compiled as the CPU executes it: the site's
//! bytes after alternatives ([`SiteCode`], `kernel::site`) placed
//! verbatim inside a loop, each `call rel32` in them linked to a routine
//! JIT-compiled into the same buffer in the site's convention, or to
//! code placed as it is ([`PlacedCode`]: the stock kernel's own routine
//! from the tree's object).
//!
//! This is what `copygen bench --site kernel` times. A routine called from
//! a Rust loop pays a call and a return the kernel does not pay where 6.12
//! inlines `rep movsb` (FSRM CPUs), so a called routine measured against a
//! called `rep movsb` is not the comparison a kernel patch makes; a site
//! against a site is.
//!
//! The loop, per call: `rdi`, `rsi`, `rcx` loaded from the next
//! [`SiteArgs`], then the site's bytes, then the bytes left (`rcx`) summed.
//! Everything the loop keeps across the site lives in `rbx`, `r12`-`r14`,
//! which neither the site (`rax`, `rcx`, `rdi`, `rsi`, flags) nor a routine
//! in the `rep movs` convention may change. As in the kernel
//! (`copy_user_generic()`'s `_ASM_EXTABLE_UA(1b, 2b)`), a fault at the
//! site's first instruction resumes after the site with `rcx` as the
//! instruction left it. A site in the C convention (6.1's
//! `alternative_call_2`, the glue's call of a C-convention routine) gets `n`
//! in `rdx` and returns the bytes left in `rax`; the C convention lets the
//! callee change `rcx`, `rdx` and `r8`-`r11`, none of which the loop keeps.

use dynasmrt::{dynasm, AssemblyOffset, DynasmApi, DynasmLabelApi, ExecutableBuffer};

use super::encode::{self, Mode};
use super::{fault, x86_lines, JitError};
use crate::arch::cpu::CpuFeatures;
use crate::backend::x86::entry::{after_boot, feature_plans, linux_entry_after_boot, AfterBoot};
use crate::backend::{self, x86::Inst};
use crate::front::strategy::{Arch, Convention, ExtableFormat, Flavor, Strategy, Uaccess};
use crate::kernel::site::{SiteCode, SiteTarget};

/// How many loop shapes each site is compiled in (0.. leading one-byte
/// `nop`s, as the fixed-size caller loops of `copygen bench` do: the code
/// around a short `rep movsb` moves its cost).
pub const CONTEXTS: usize = 8;

/// One call's arguments, in the `rep movs` convention's registers.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct SiteArgs {
    /// `rdi`
    pub to: *mut u8,
    /// `rsi`
    pub from: *const u8,
    /// `rcx`
    pub n: usize,
}

/// `loop(args, count, stride)`: `count` calls, the k-th with the
/// [`SiteArgs`] at `args + k * stride` bytes; returns the sum of `rcx`
/// after each.
type LoopFn = unsafe extern "sysv64" fn(*const SiteArgs, u64, u64) -> u64;

#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    #[error(transparent)]
    Jit(#[from] JitError),
    #[error("the site calls `{0}`, which no routine given to the harness defines")]
    Unlinked(String),
    #[error("the site's call at byte {at} does not fit in its {len} bytes (or has no `call` opcode before it)")]
    BadCall { at: usize, len: usize },
    #[error("{0}: the routine brackets its accesses with STAC/CLAC, which user space cannot run")]
    Stac(String),
    #[error("{strategy}: a routine in the `{}` convention at a site in the `{}` convention (a kernel's glue calls a routine in its own)", routine.name(), site.name())]
    Convention {
        strategy: String,
        routine: Convention,
        site: Convention,
    },
}

/// Machine code placed as it is, beside the routines the JIT compiles:
/// position-independent (every relocation already resolved), with its
/// symbols and exception-table entries as offsets into `bytes`. The stock
/// kernel's own routine, taken from the tree's object
/// (`tools::bench::stock`), reaches the JIT this way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedCode {
    pub bytes: Vec<u8>,
    /// Symbol and offset; a site links to these by name.
    pub symbols: Vec<(String, usize)>,
    /// (faulting instruction, fixup) offsets.
    pub extable: Vec<(u32, u32)>,
}

/// `s` as a patched site calls it: the linux flavour in the strategy's
/// convention, STAC/CLAC done by the caller (as 6.12's
/// `copy_user_generic()` and the glue do around the site; user space
/// cannot run them), relative exception-table entries.
pub fn site_form(s: &Strategy) -> Strategy {
    let mut t = s.clone();
    t.linux.uaccess = Uaccess::Caller;
    t.linux.extable = ExtableFormat::Relative;
    t
}

/// A site and its loops in executable memory, with the routines it calls.
pub struct JitSite {
    // Declared before `buf`: the registry forgets the code before it is unmapped.
    _registration: fault::Registration,
    buf: ExecutableBuffer,
    /// Per context: the loop's entry, where the site's bytes start, and
    /// the loop's end.
    loops: Vec<(AssemblyOffset, usize, usize)>,
    /// Linked routines: symbol and offset.
    routines: Vec<(String, usize)>,
    site: SiteCode,
}

impl std::fmt::Debug for JitSite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitSite")
            .field("site", &self.site)
            .field("routines", &self.routines)
            .finish()
    }
}

// SAFETY: the buffer is immutable after finalize; running it needs the
// caller's buffers, which `run` takes by pointer under its own contract.
unsafe impl Send for JitSite {}
unsafe impl Sync for JitSite {}

impl JitSite {
    /// The site as placed.
    pub fn site(&self) -> &SiteCode {
        &self.site
    }
    /// All code: the routines, then the loops.
    pub fn code(&self) -> &[u8] {
        &self.buf
    }
    /// Loop `context`'s code (modulo [`CONTEXTS`]).
    pub fn loop_code(&self, context: usize) -> &[u8] {
        let (entry, _, end) = self.loops[context % CONTEXTS];
        &self.buf[entry.0..end]
    }
    /// The first byte of loop `context`, a `sysv64` function
    /// `(args: *const SiteArgs, count: u64, stride: u64) -> u64` (see [`Self::run`]).
    pub fn loop_entry(&self, context: usize) -> *const u8 {
        self.buf.ptr(self.loops[context % CONTEXTS].0)
    }
    /// Offset in [`Self::code`] of the site's first byte in loop `context`.
    pub fn site_offset(&self, context: usize) -> usize {
        self.loops[context % CONTEXTS].1
    }
    /// Offset in [`Self::code`] of a linked routine.
    pub fn routine_offset(&self, symbol: &str) -> Option<usize> {
        self.routines
            .iter()
            .find(|(s, _)| s == symbol)
            .map(|&(_, o)| o)
    }

    /// `count` executions of the site from loop `context`, the k-th with
    /// the arguments at `args + k * stride` bytes (`stride` 0: the same
    /// arguments every time); the sum of the bytes left (`rcx`) after each.
    ///
    /// # Safety
    /// Every [`SiteArgs`] read must be valid for its `n` bytes (or fault
    /// where the routine's exception table, or the site's, covers it), and
    /// `args` valid for `count` entries at `stride`.
    pub unsafe fn run(
        &self,
        context: usize,
        args: *const SiteArgs,
        count: u64,
        stride: u64,
    ) -> u64 {
        let (entry, _, _) = self.loops[context % CONTEXTS];
        // SAFETY: `entry` starts a loop assembled below with the LoopFn
        // signature; the buffer lives as long as `self`.
        let f: LoopFn = unsafe { std::mem::transmute(self.buf.ptr(entry)) };
        // SAFETY: the caller's contract.
        unsafe { f(args, count, stride) }
    }
}

/// The kernel's 5-byte NOP (`BYTES_NOP5`).
const NOP5: [u8; 5] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// Place a patched entry point (every piece 5 bytes) at the assembler's
/// offset, its jumps linked to its own labels or to `routines`.
fn place_entry(
    ops: &mut dynasmrt::x64::Assembler,
    pieces: &[AfterBoot],
    routines: &[(String, usize)],
) -> Result<(), SiteError> {
    let mut labels = Vec::new();
    let mut at = ops.offset().0;
    for p in pieces {
        match p {
            AfterBoot::Label(l) => labels.push((l.clone(), at)),
            AfterBoot::Jmp(_) | AfterBoot::Nops => at += NOP5.len(),
        }
    }
    for p in pieces {
        match p {
            AfterBoot::Label(_) => {}
            AfterBoot::Nops => ops.extend(NOP5),
            AfterBoot::Jmp(target) => {
                let &(_, to) = labels
                    .iter()
                    .chain(routines)
                    .find(|(n, _)| n == target)
                    .ok_or_else(|| SiteError::Unlinked(target.clone()))?;
                let next = ops.offset().0 + 5;
                let rel = i32::try_from(to as i64 - next as i64)
                    .expect("one buffer is far smaller than 2 GiB");
                ops.push(0xe9);
                ops.extend(rel.to_le_bytes());
            }
        }
    }
    Ok(())
}

/// Compile `site` with every routine of `code` (each already in the form
/// the site calls, see [`site_form`], and in the site's convention) in
/// the linux flavour, linking each of the site's calls to the routine of
/// its symbol ([`SiteTarget::symbol`]: [`SiteTarget::RepMovsAlternative`]
/// to `rep_movs_alternative`). The entry points of a per-CPU strategy are
/// placed as alternatives leave them on a CPU with `features`: NOPs for
/// the variants before the one that CPU picks, a `jmp` to it.
pub fn compile_site(
    site: &SiteCode,
    code: &[Strategy],
    features: CpuFeatures,
) -> Result<JitSite, SiteError> {
    compile_site_with(site, code, &[], features)
}

/// [`compile_site`] with code placed as it is (`placed`, after the
/// compiled routines), whose symbols the site may call. A site in the C
/// convention (`SiteCode::convention`) gets `rdx` = n and leaves the bytes
/// left in `rax`.
pub fn compile_site_with(
    site: &SiteCode,
    code: &[Strategy],
    placed: &[PlacedCode],
    features: CpuFeatures,
) -> Result<JitSite, SiteError> {
    for c in &site.calls {
        if c.at == 0 || c.at + 4 > site.bytes.len() || site.bytes[c.at - 1] != 0xe8 {
            return Err(SiteError::BadCall {
                at: c.at,
                len: site.bytes.len(),
            });
        }
    }
    let mut ops = dynasmrt::x64::Assembler::new().map_err(JitError::from)?;
    let mut routines: Vec<(String, usize)> = Vec::new();
    let mut table = Vec::new();
    for s in code {
        // Feature entries that fall into their variant's routine: placed
        // right before it, so those routines come after every other (the
        // slots jump only to those).
        let plans = feature_plans(s);
        let absorbing = |symbol: &str| plans.iter().find(|p| p.absorbed && p.enters == symbol);
        let mut compiled = backend::compile(s, Flavor::Linux);
        compiled.sort_by_key(|c| absorbing(&c.routine.symbol).is_some());
        if s.arch != Arch::X86_64 {
            return Err(JitError::NotExecutable(s.arch).into());
        }
        if s.linux.convention != site.convention {
            return Err(SiteError::Convention {
                strategy: s.name.clone(),
                routine: s.linux.convention,
                site: site.convention,
            });
        }
        for c in compiled {
            let (r, lines) = x86_lines(c);
            if lines
                .iter()
                .any(|l| matches!(l.inst, Inst::Stac | Inst::Clac))
            {
                return Err(SiteError::Stac(r.symbol));
            }
            let err = |source| JitError::Encode {
                symbol: r.symbol.clone(),
                source,
            };
            let plan = encode::plan(&lines, Mode::X64).map_err(err)?;
            ops.align(16, 0xcc);
            if let Some(p) = absorbing(&r.symbol) {
                routines.push((p.symbol.clone(), ops.offset().0));
                place_entry(&mut ops, &after_boot(p.slots.clone(), features), &routines)?;
            }
            let offset = ops.offset().0;
            let layout = encode::emit(&mut ops, &plan, Mode::X64).map_err(err)?;
            table.extend(
                layout
                    .extable(&plan)
                    .into_iter()
                    .map(|(i, f)| fault::ExtableOffsets {
                        insn: (offset + i as usize) as u32,
                        fixup: (offset + f as usize) as u32,
                    }),
            );
            routines.push((r.symbol.clone(), offset));
            for (alias, _) in &r.aliases {
                routines.push((alias.clone(), offset));
            }
            if s.variants.is_empty() && s.linux.both.as_ref() == Some(&r.symbol) {
                for e in &s.linux.feature_entries {
                    routines.push((e.symbol.clone(), offset));
                }
            }
        }
        for p in plans.iter().filter(|p| !p.absorbed) {
            ops.align(16, 0xcc);
            let base = ops.offset().0;
            let mut insts = p.slots.clone();
            insts.push(Inst::Jmp {
                target: p.enters.clone(),
            });
            place_entry(&mut ops, &after_boot(insts, features), &routines)?;
            routines.push((p.symbol.clone(), base));
        }
    }
    // A per-CPU strategy's entry points as `apply_alternatives()` leaves
    // them on this CPU: NOPs for the variants before its own, one jump.
    for s in code.iter().filter(|s| !s.variants.is_empty()) {
        for &dir in &s.directions {
            let entry = crate::arch::symbols::entry(s, Flavor::Linux, dir, None);
            if routines.iter().any(|(n, _)| *n == entry) {
                continue;
            }
            ops.align(16, 0xcc);
            let base = ops.offset().0;
            let pieces = linux_entry_after_boot(s, dir, features);
            place_entry(&mut ops, &pieces, &routines)?;
            routines.push((entry, base));
        }
    }
    for p in placed {
        ops.align(16, 0xcc);
        let base = ops.offset().0;
        ops.extend(p.bytes.iter().copied());
        for (name, at) in &p.symbols {
            routines.push((name.clone(), base + at));
        }
        table.extend(p.extable.iter().map(|&(i, f)| fault::ExtableOffsets {
            insn: base as u32 + i,
            fixup: base as u32 + f,
        }));
    }
    let c_site = site.convention == Convention::C;
    let target = |t: &SiteTarget| -> Result<usize, SiteError> {
        let name = t.symbol();
        routines
            .iter()
            .find(|(s, _)| s == name)
            .map(|&(_, o)| o)
            .ok_or_else(|| SiteError::Unlinked(name.to_string()))
    };
    let mut loops = Vec::with_capacity(CONTEXTS);
    for pad in 0..CONTEXTS {
        ops.align(64, 0xcc);
        let entry = ops.offset();
        dynasm!(ops
            ; .arch x64
            ; push rbx
            ; push r12
            ; push r13
            ; push r14
            ; mov rbx, rdi
            ; mov r12, rsi
            ; mov r13, rdx
            ; xor r14d, r14d
            ; test r12, r12
            ; jz >done
            ; top:
        );
        for _ in 0..pad {
            dynasm!(ops; .arch x64; nop);
        }
        dynasm!(ops
            ; .arch x64
            ; mov rdi, [rbx]
            ; mov rsi, [rbx + 8]
        );
        if c_site {
            dynasm!(ops; .arch x64; mov rdx, [rbx + 16]);
        } else {
            dynasm!(ops; .arch x64; mov rcx, [rbx + 16]);
        }
        let at = ops.offset().0;
        let mut bytes = site.bytes.clone();
        for c in &site.calls {
            let to = target(&c.target)? as i64;
            let next = (at + c.at + 4) as i64;
            let rel = i32::try_from(to - next).expect("one buffer is far smaller than 2 GiB");
            bytes[c.at..c.at + 4].copy_from_slice(&rel.to_le_bytes());
        }
        ops.extend(bytes.iter().copied());
        let after = ops.offset().0;
        if !site.bytes.is_empty() && !c_site {
            table.push(fault::ExtableOffsets {
                insn: at as u32,
                fixup: after as u32,
            });
        }
        if c_site {
            dynasm!(ops; .arch x64; add r14, rax);
        } else {
            dynasm!(ops; .arch x64; add r14, rcx);
        }
        dynasm!(ops
            ; .arch x64
            ; add rbx, r13
            ; sub r12, 1
            ; jnz <top
            ; done:
            ; mov rax, r14
            ; pop r14
            ; pop r13
            ; pop r12
            ; pop rbx
            ; ret
        );
        loops.push((entry, at, ops.offset().0));
    }
    ops.commit().map_err(|e| JitError::Encode {
        symbol: "site".into(),
        source: e.into(),
    })?;
    let buf = ops
        .finalize()
        .expect("no executor exists, so finalize returns the buffer");
    let base = buf.ptr(AssemblyOffset(0)) as usize;
    // No landing for stray faults: a bare `ret` is right only while
    // nothing moved the stack, and the loops (and routines that save
    // registers) do. A fault with no entry is a generator bug and crashes.
    let registration = fault::register(base, base + buf.len(), table, None);
    Ok(JitSite {
        _registration: registration,
        buf,
        loops,
        routines,
        site: site.clone(),
    })
}
