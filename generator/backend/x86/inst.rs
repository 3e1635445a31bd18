//! The x86 instruction type: what selection produces, the GNU as printer
//! (`print.rs`) prints and the JIT (`jit/encode.rs`) encodes — routines,
//! and the per-CPU entry points and resolver (`entry.rs`).

use crate::arch::cpu::CpuFeatures;
use crate::front::strategy::PrefetchKind;
use crate::front::variant::CpuFeature;
use crate::kernel::version::Release;

/// General-purpose registers by hardware number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reg {
    Ax = 0,
    Cx = 1,
    Dx = 2,
    Bx = 3,
    Sp = 4,
    Bp = 5,
    Si = 6,
    Di = 7,
    R8 = 8,
    R9 = 9,
    R10 = 10,
    R11 = 11,
}

impl Reg {
    pub fn num(self) -> u8 {
        self as u8
    }

    /// The register with hardware number `n` (as the ABI tables give them).
    pub fn from_num(n: u8) -> Reg {
        const ALL: [Reg; 12] = [
            Reg::Ax,
            Reg::Cx,
            Reg::Dx,
            Reg::Bx,
            Reg::Sp,
            Reg::Bp,
            Reg::Si,
            Reg::Di,
            Reg::R8,
            Reg::R9,
            Reg::R10,
            Reg::R11,
        ];
        ALL[n as usize]
    }

    /// AT&T name of the register at `width` bytes.
    pub fn name(self, width: u32) -> String {
        const LEGACY: [&str; 8] = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
        let n = self.num() as usize;
        if n >= 8 {
            let suffix = match width {
                1 => "b",
                2 => "w",
                4 => "d",
                _ => "",
            };
            return format!("%r{n}{suffix}");
        }
        let base = LEGACY[n];
        match width {
            1 => {
                assert!(n < 4, "no byte form of %{base} on i386");
                format!("%{}l", &base[..1])
            }
            2 => format!("%{base}"),
            4 => format!("%e{base}"),
            _ => format!("%r{base}"),
        }
    }
}

/// A memory operand: `disp(base, index, scale)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemRef {
    pub base: Reg,
    pub index: Option<(Reg, u8)>,
    pub disp: i32,
}

impl MemRef {
    pub fn base(base: Reg, disp: i32) -> Self {
        MemRef {
            base,
            index: None,
            disp,
        }
    }
}

/// Condition codes after `cmp`/`test`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cc {
    E,
    /// `e` spelt `z` (after `test`): the same condition and encoding.
    Z,
    Ne,
    B,
    Be,
    A,
    Ae,
}

impl Cc {
    pub fn name(self) -> &'static str {
        match self {
            Cc::E => "e",
            Cc::Z => "z",
            Cc::Ne => "ne",
            Cc::B => "b",
            Cc::Be => "be",
            Cc::A => "a",
            Cc::Ae => "ae",
        }
    }
}

/// Arithmetic with an immediate or a register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alu {
    Add,
    Sub,
    And,
    Or,
    Xor,
    Cmp,
    Test,
}

impl Alu {
    pub fn name(self) -> &'static str {
        match self {
            Alu::Add => "add",
            Alu::Sub => "sub",
            Alu::And => "and",
            Alu::Or => "or",
            Alu::Xor => "xor",
            Alu::Cmp => "cmp",
            Alu::Test => "test",
        }
    }
}

/// A preprocessor conditional around a block of lines (linux flavour
/// only): the printer writes it, the JIT matches it by type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpp {
    /// `#if LINUX_VERSION_CODE < KERNEL_VERSION(..)`: the block is for
    /// kernels before `version` only.
    IfKernelBefore(Release),
    /// `#endif`
    Endif,
}

/// A symbol reached relative to the code: `sym(%rip)` on x86_64, or
/// `(sym - anchor)(%reg)` on i386, where `reg` holds the address of the
/// label `anchor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymRef {
    pub sym: String,
    pub base: SymBase,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymBase {
    Rip,
    Anchor { reg: Reg, anchor: String },
}

/// A CPU feature test of an [`Inst::AltJmp`]: the feature present
/// (`present`) or absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureTest {
    pub feature: CpuFeature,
    pub present: bool,
}

impl FeatureTest {
    pub fn holds(self, features: CpuFeatures) -> bool {
        features.has(self.feature) == self.present
    }
    /// The opposite test.
    pub fn negated(self) -> FeatureTest {
        FeatureTest {
            present: !self.present,
            ..self
        }
    }
}

/// Assembler directives of the standalone resolver's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    /// `.pushsection .data`
    PushData,
    PopSection,
    Balign(u32),
    Globl(String),
    Hidden(String),
    /// `.type sym, @object`
    TypeObject(String),
    Size(String, u32),
    /// A pointer-sized word holding the address of `label` (`.quad`/`.long`).
    Pointer {
        width: u32,
        label: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inst {
    Label(String),
    Comment(String),
    /// An empty line.
    Blank,
    /// A preprocessor conditional (linux flavour only).
    Cond(Cpp),
    Directive(Directive),
    /// `mov mem, reg`
    Load {
        width: u32,
        reg: Reg,
        mem: MemRef,
    },
    /// `mov reg, mem`
    Store {
        width: u32,
        reg: Reg,
        mem: MemRef,
    },
    /// `mov src, dst`
    Mov {
        width: u32,
        dst: Reg,
        src: Reg,
    },
    /// `mov $imm, dst`
    MovImm {
        width: u32,
        dst: Reg,
        imm: u32,
    },
    Lea {
        width: u32,
        dst: Reg,
        mem: MemRef,
    },
    AluImm {
        op: Alu,
        width: u32,
        reg: Reg,
        imm: i32,
        /// Printed as `0x..` (the resolver's CPUID constants); the same bytes.
        hex: bool,
    },
    AluReg {
        op: Alu,
        width: u32,
        dst: Reg,
        src: Reg,
    },
    Shr {
        width: u32,
        reg: Reg,
        imm: u8,
    },
    Jcc {
        cc: Cc,
        target: String,
    },
    Jmp {
        target: String,
    },
    /// `rep movs{b,l,q}`
    RepMovs {
        unit: u32,
    },
    RepStosb,
    Prefetch {
        kind: PrefetchKind,
        mem: MemRef,
    },
    Push(Reg),
    Pop(Reg),
    /// `push`/`pop` spelt without the size suffix (the resolver's); the
    /// same encoding as [`Inst::Push`]/[`Inst::Pop`].
    PushBare(Reg),
    PopBare(Reg),
    Cpuid,
    /// `call` a local label.
    Call {
        target: String,
    },
    /// `jmp *sym`: through a pointer in memory.
    JmpThrough(SymRef),
    /// `lea sym, dst`
    LeaSym {
        width: u32,
        dst: Reg,
        mem: SymRef,
    },
    /// `mov reg, sym`
    StoreSym {
        width: u32,
        reg: Reg,
        mem: SymRef,
    },
    /// One 5-byte slot the kernel patches at boot: `jmp target` on a CPU
    /// where `first` and `and` hold, NOPs on every other. One test is an
    /// `ALTERNATIVE` (`ALTERNATIVE "", "jmp t", F` or `ALTERNATIVE "jmp
    /// t", "", F`), two an `ALTERNATIVE_2` whose second entry, applied
    /// after the first, puts the NOPs back where the second test fails.
    AltJmp {
        target: String,
        first: FeatureTest,
        and: Option<FeatureTest>,
    },
    Stac,
    Clac,
    Ret,
}
