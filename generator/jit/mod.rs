//! The JIT: a strategy compiled in-process by dynasm from the *same* x86
//! instruction list the GNU as printer prints (`backend::x86::select`), with
//! one exception table per routine, registered with an in-process fault
//! handler that resumes at the fixup exactly as the kernel does.
//!
//! x86_64 routines run (the standalone SysV ABI); i386 is encode-only
//! ([`assemble`]), for comparison with GNU as.

pub mod a64;
pub mod contract;
pub mod encode;
pub mod fault;
pub mod gas_form;
pub mod site;

use dynasmrt::{DynasmApi, ExecutableBuffer};

use crate::backend::{self, x86};
use crate::front::strategy::{Arch, Direction, Flavor, Strategy};
use crate::lower::routine::Routine;
use encode::{EncodeError, Mode};

/// A compiled routine: `to, from, n` (SysV) → bytes not copied. Fixed-size
/// routines ignore `n`.
pub type CopyFn = unsafe extern "sysv64" fn(to: *mut u8, from: *const u8, n: usize) -> usize;

#[derive(Debug, thiserror::Error)]
pub enum JitError {
    #[error("the JIT runs x86_64 code only; {0} is encode-only (`copygen verify --arch {0}` fault-tests its GNU as build under qemu-user)")]
    NotExecutable(Arch),
    #[error("{0} has no x86 encoder")]
    NotX86(Arch),
    #[error("{symbol}: {source}")]
    Encode { symbol: String, source: EncodeError },
    #[error("{symbol}: {source}")]
    EncodeA64 {
        symbol: String,
        source: a64::A64Error,
    },
    #[error("executable memory: {0}")]
    Memory(#[from] std::io::Error),
}

/// One routine encoded without executing it (any x86 arch and flavour).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    pub symbol: String,
    pub direction: Direction,
    pub fixed: Option<u32>,
    pub code: Vec<u8>,
    /// (faulting instruction, fixup) offsets from the routine's first byte,
    /// in the order of the printed `__ex_table`.
    pub extable: Vec<(u32, u32)>,
}

fn mode(arch: Arch) -> Result<Mode, JitError> {
    match arch {
        Arch::X86_64 => Ok(Mode::X64),
        Arch::I386 => Ok(Mode::X86),
        Arch::Armv6 | Arch::Aarch64 | Arch::Riscv64 => Err(JitError::NotX86(arch)),
    }
}

/// The routine and x86 lines of a compiled x86 entry point.
fn x86_lines(c: backend::Compiled) -> (Routine, Vec<x86::Line>) {
    match c.lines {
        backend::Selected::X86 { lines, .. } => (c.routine, lines),
        backend::Selected::Armv6(_)
        | backend::Selected::Aarch64(_)
        | backend::Selected::Riscv64(_) => {
            unreachable!("checked: an x86 arch")
        }
    }
}

/// Select and encode every entry point of `s` for `flavor` into plain
/// bytes (dynasm's `VecAssembler`), one routine each.
pub fn assemble(s: &Strategy, flavor: Flavor) -> Result<Vec<Encoded>, JitError> {
    if s.arch == Arch::Aarch64 {
        return assemble_a64(s, flavor);
    }
    let mode = mode(s.arch)?;
    backend::compile(s, flavor)
        .into_iter()
        .map(|c| {
            let (r, lines) = x86_lines(c);
            let err = |source| JitError::Encode {
                symbol: r.symbol.clone(),
                source,
            };
            let (code, layout, plan) = encode::encode(&lines, mode).map_err(err)?;
            let extable = layout.extable(&plan);
            Ok(Encoded {
                symbol: r.symbol.clone(),
                direction: r.direction,
                fixed: r.fixed,
                code,
                extable,
            })
        })
        .collect()
}

/// [`assemble`] for AArch64: the lines of `backend::aarch64::select`
/// through dynasm's `.arch aarch64`.
fn assemble_a64(s: &Strategy, flavor: Flavor) -> Result<Vec<Encoded>, JitError> {
    backend::compile(s, flavor)
        .into_iter()
        .map(|c| {
            let (r, backend::Selected::Aarch64(lines)) = (c.routine, c.lines) else {
                unreachable!("checked: aarch64")
            };
            let (code, extable) = a64::encode(&lines).map_err(|source| JitError::EncodeA64 {
                symbol: r.symbol.clone(),
                source,
            })?;
            Ok(Encoded {
                symbol: r.symbol.clone(),
                direction: r.direction,
                fixed: r.fixed,
                code,
                extable,
            })
        })
        .collect()
}

/// A routine inside a [`JitModule`].
#[derive(Debug)]
pub struct JitRoutine {
    symbol: String,
    direction: Direction,
    fixed: Option<u32>,
    offset: usize,
    len: usize,
    entry: CopyFn,
    code: *const u8,
    extable: Vec<(u32, u32)>,
}

impl JitRoutine {
    pub fn symbol(&self) -> &str {
        &self.symbol
    }
    pub fn direction(&self) -> Direction {
        self.direction
    }
    /// `Some(n)` for a constant-size entry point.
    pub fn fixed(&self) -> Option<u32> {
        self.fixed
    }
    /// Offset of the routine in the module's code.
    pub fn offset(&self) -> usize {
        self.offset
    }
    /// The entry point. Calling it is unsafe: `to`/`from` must be valid
    /// for `n` bytes except where a fault is meant to happen.
    pub fn entry(&self) -> CopyFn {
        self.entry
    }
    pub fn code(&self) -> &[u8] {
        // SAFETY: a JitRoutine lives only inside its module, whose buffer
        // is immutable after finalize and outlives this borrow.
        unsafe { std::slice::from_raw_parts(self.code, self.len) }
    }
    /// (faulting instruction, fixup) offsets from the routine's first byte.
    pub fn extable(&self) -> &[(u32, u32)] {
        &self.extable
    }
}

// SAFETY: `code` points into the owning module's buffer, immutable after
// finalize; a JitRoutine cannot leave its module.
unsafe impl Send for JitRoutine {}
unsafe impl Sync for JitRoutine {}

/// Executable routines of one strategy, registered with the fault handler
/// for as long as the module lives.
#[derive(Debug)]
pub struct JitModule {
    routines: Vec<JitRoutine>,
    // Declared before `buf`: the registry forgets the code before it is unmapped.
    _registration: fault::Registration,
    buf: ExecutableBuffer,
}

impl JitModule {
    pub fn routines(&self) -> &[JitRoutine] {
        &self.routines
    }
    pub fn routine(&self, symbol: &str) -> Option<&JitRoutine> {
        self.routines.iter().find(|r| r.symbol == symbol)
    }
    /// All code, routines 16-byte aligned, then a `ret` for stray faults.
    pub fn code(&self) -> &[u8] {
        &self.buf
    }
}

/// Compile every entry point of an x86_64 strategy (standalone ABI) into
/// executable memory and register its exception tables.
pub fn compile(s: &Strategy) -> Result<JitModule, JitError> {
    compile_edited(s, |_, _| {})
}

/// [`compile`], with each routine's selected lines passed through `edit`
/// first: how the tests show that the contract checks catch broken code.
pub fn compile_edited(
    s: &Strategy,
    mut edit: impl FnMut(&Routine, &mut Vec<x86::Line>),
) -> Result<JitModule, JitError> {
    if s.arch != Arch::X86_64 {
        return Err(JitError::NotExecutable(s.arch));
    }
    let flavor = Flavor::Standalone;
    // The stray-fault landing is a bare `ret`: right only while no routine
    // moves the stack pointer, which holds for the x86_64 standalone ABI.
    assert!(backend::x86_abi(s, flavor).saves_nothing());
    let mut ops = dynasmrt::x64::Assembler::new()?;
    let mut placed = Vec::new();
    for c in backend::compile(s, flavor) {
        let (r, mut lines) = x86_lines(c);
        edit(&r, &mut lines);
        let err = |source| JitError::Encode {
            symbol: r.symbol.clone(),
            source,
        };
        let plan = encode::plan(&lines, Mode::X64).map_err(err)?;
        ops.align(16, 0xcc);
        let offset = ops.offset().0;
        let layout = encode::emit(&mut ops, &plan, Mode::X64).map_err(err)?;
        let extable = layout.extable(&plan);
        placed.push((r, offset, layout.len, extable));
    }
    let landing = ops.offset().0;
    dynasmrt::dynasm!(ops; .arch x64; ret);
    ops.commit().map_err(|e| JitError::Encode {
        symbol: s.symbol.clone(),
        source: e.into(),
    })?;
    let buf = ops
        .finalize()
        .expect("no executor exists, so finalize returns the buffer");
    let base = buf.ptr(dynasmrt::AssemblyOffset(0)) as usize;
    let table = placed
        .iter()
        .flat_map(|(_, off, _, ex)| {
            ex.iter().map(move |&(i, f)| fault::ExtableOffsets {
                insn: (off + i as usize) as u32,
                fixup: (off + f as usize) as u32,
            })
        })
        .collect();
    let registration = fault::register(base, base + buf.len(), table, Some(base + landing));
    let routines = placed
        .into_iter()
        .flat_map(|(r, offset, len, extable)| {
            let code = (base + offset) as *const u8;
            // SAFETY: `code` is the first byte of a routine encoded for the
            // SysV ABI with this signature.
            let entry: CopyFn = unsafe { std::mem::transmute::<*const u8, CopyFn>(code) };
            // A routine serving both directions runs once in each role.
            let fixed = r.fixed;
            std::iter::once((r.symbol, r.direction))
                .chain(r.aliases)
                .map(move |(symbol, direction)| JitRoutine {
                    symbol,
                    direction,
                    fixed,
                    offset,
                    len,
                    entry,
                    code,
                    extable: extable.clone(),
                })
        })
        .collect();
    Ok(JitModule {
        routines,
        _registration: registration,
        buf,
    })
}

/// The standalone resolver's feature detection ([`x86::entry::detection`]),
/// the instructions the emitted resolvers print, JIT-compiled and run on
/// this CPU: the feature mask the resolver of an emitted file computes here.
pub fn resolver_features() -> Result<crate::arch::cpu::CpuFeatures, JitError> {
    use x86::{Inst, Reg};
    let arch = Arch::X86_64;
    let saved = x86::entry::saved_registers(arch);
    let label = |name: &str| format!(".Lprobe_{name}");
    let insts: Vec<Inst> = saved
        .iter()
        .map(|&r| Inst::PushBare(r))
        .chain(x86::entry::detection(arch, &label))
        .chain([Inst::Mov {
            width: 4,
            dst: Reg::Ax,
            src: x86::entry::mask_register(arch),
        }])
        .chain(saved.iter().rev().map(|&r| Inst::PopBare(r)))
        .chain([Inst::Ret])
        .collect();
    let lines: Vec<x86::Line> = insts
        .into_iter()
        .map(|inst| x86::Line {
            inst,
            user: None,
            fixup_start: false,
        })
        .collect();
    let err = |source| JitError::Encode {
        symbol: "resolver".into(),
        source,
    };
    let plan = encode::plan(&lines, Mode::X64).map_err(err)?;
    let mut ops = dynasmrt::x64::Assembler::new()?;
    encode::emit(&mut ops, &plan, Mode::X64).map_err(err)?;
    let buf = ops
        .finalize()
        .expect("no executor exists, so finalize returns the buffer");
    // SAFETY: the code saves what it clobbers beyond the SysV caller-saved
    // registers (rbx; r8-r10 and rdx are caller-saved) and returns the mask
    // in eax.
    let probe: extern "sysv64" fn() -> u32 =
        unsafe { std::mem::transmute(buf.ptr(dynasmrt::AssemblyOffset(0))) };
    Ok(crate::arch::cpu::CpuFeatures::from_mask(probe()))
}
