//! The validated strategy: what `front/parse.rs` produces from a TOML file and
//! what the lowering (`lower/`) consumes. Every value here has been checked
//! against the target architecture's capabilities (`arch/mod.rs`).

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    #[serde(rename = "x86_64")]
    X86_64,
    #[serde(rename = "i386")]
    I386,
    #[serde(rename = "armv6")]
    Armv6,
    #[serde(rename = "aarch64")]
    Aarch64,
    #[serde(rename = "riscv64")]
    Riscv64,
}

impl Arch {
    pub const ALL: [Arch; 5] = [
        Arch::I386,
        Arch::X86_64,
        Arch::Armv6,
        Arch::Aarch64,
        Arch::Riscv64,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I386 => "i386",
            Arch::Armv6 => "armv6",
            Arch::Aarch64 => "aarch64",
            Arch::Riscv64 => "riscv64",
        }
    }
    pub fn parse(s: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.name() == s)
    }
    /// i386 or x86_64: the arches with CPUID and the kernel's
    /// `ALTERNATIVE`s on `X86_FEATURE_*` bits.
    pub fn is_x86(self) -> bool {
        matches!(self, Arch::X86_64 | Arch::I386)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Flavor {
    Linux,
    Standalone,
}

impl Flavor {
    pub const ALL: [Flavor; 2] = [Flavor::Linux, Flavor::Standalone];
    pub fn name(self) -> &'static str {
        match self {
            Flavor::Linux => "linux",
            Flavor::Standalone => "standalone",
        }
    }
    pub fn parse(s: &str) -> Option<Flavor> {
        Flavor::ALL.into_iter().find(|f| f.name() == s)
    }
}

impl fmt::Display for Flavor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// Which side is user memory: loads fault for `from_user`, stores for `to_user`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    FromUser,
    ToUser,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::FromUser => "from_user",
            Direction::ToUser => "to_user",
        }
    }
    /// Short tag used in label names (`.Lfrom_loop_load3`).
    pub fn tag(self) -> &'static str {
        match self {
            Direction::FromUser => "from",
            Direction::ToUser => "to",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    /// Byte retry after every fault: the count returned is exact.
    Exact,
    /// Report from the start of the faulting block (plus a one-byte step so
    /// the progress rule holds); bytes beyond the count are never stored.
    Block,
}

/// Calling convention of the x86_64 linux flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Convention {
    /// `rdi, rsi, rdx` → `rax`, the C ABI.
    C,
    /// `rdi, rsi, rcx` → `rcx`, only `rax` clobbered: `rep_movs_alternative`'s.
    RepMovs,
}

impl Convention {
    /// The name a strategy file gives it (`[linux] convention`).
    pub fn name(self) -> &'static str {
        match self {
            Convention::C => "c",
            Convention::RepMovs => "rep_movs",
        }
    }
}

/// Who brackets user accesses with STAC/CLAC in the linux flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Uaccess {
    /// The caller (as for `rep_movs_alternative` since 6.4).
    Caller,
    /// The routine itself (as 6.1's `copy_user_*`).
    Routine,
}

/// What the call sites of a kernel whose x86_64 copy sites are inline
/// (6.12's `copy_user_generic()`) run on a CPU whose variant is not a bare
/// `rep movsb` (`[linux] site`; `kernel/variant_chain.rs` builds the site).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteKind {
    /// A 5-byte `call` of the variant's routine in the `rep_movs`
    /// convention: every site keeps the stock length.
    Call,
}

/// Exception-table format of the linux flavour on x86.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExtableFormat {
    /// `_ASM_EXTABLE_UA(insn, fixup)`: relative entries with a type word.
    Relative,
    /// The 2002 format: `.long insn, fixup` absolute pairs (i386).
    Absolute,
    /// `_ASM_EXTABLE_CPY(insn, fixup)`, 6.1's x86_64 copy routines: the
    /// handler puts the trap number in `rax`, and after a machine check
    /// (18) the fixup returns without a byte retry.
    Copy,
}

/// The kernel tree a linux-flavour file is written for (`[linux] kernel`);
/// the versions and what differs between them are `kernel::version`'s.
pub use crate::kernel::version::KernelVersion;

/// One routine per direction, or one serving both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutineShape {
    /// `<symbol>_from_user` and `<symbol>_to_user`, each with entries on
    /// its user side only.
    PerDirection,
    /// One body serving both directions, like `rep_movs_alternative`:
    /// every load and every store may fault and has an entry.
    Both,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinuxOptions {
    pub convention: Convention,
    pub uaccess: Uaccess,
    pub extable: ExtableFormat,
    /// The kernels the file is for: one, or (empty) both, with the export
    /// header picked by `LINUX_VERSION_CODE`.
    pub kernel: Option<KernelVersion>,
    /// The inline call site's form (`None`: not stated, `call`).
    pub site: Option<SiteKind>,
    /// Names the linux flavour defines, by direction; a routine serving both
    /// directions has one name (`both`).
    pub from_user: Option<String>,
    pub to_user: Option<String>,
    pub both: Option<String>,
    /// Entry points whose callers already chose among them by CPU
    /// features, set by the kernel wiring, never by a file: 6.1's x86_64
    /// call site, an `alternative_call_2` on REP_GOOD and ERMS as the
    /// tree's own `copy_user_generic()`. Each serves the CPUs its `given`
    /// condition describes; empty: the one entry point.
    pub feature_entries: Vec<FeatureEntry>,
}

/// One of [`LinuxOptions::feature_entries`]: its symbol, and what every
/// CPU its caller sends to it has and lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureEntry {
    pub symbol: String,
    pub given: crate::front::variant::CpuCondition,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Grouping {
    /// Load a group of registers, then store them.
    LoadsFirst,
    /// Store each register right after loading it.
    Interleaved,
    /// One load-multiple then one store-multiple per group (ARM `ldm`/`stm`).
    Multiple,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefetchKind {
    /// x86 `prefetchnta`.
    Nta,
    /// x86 `prefetcht0`.
    T0,
    /// ARM `pld`.
    Pld,
    /// AArch64 `prfm pldl1keep`: into L1, normal (temporal) use.
    Pldl1keep,
    /// AArch64 `prfm pldl1strm`: into L1, streaming (used once).
    Pldl1strm,
    /// A plain load into a scratch register (the 2002 i386 trick).
    Touch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefetch {
    pub kind: PrefetchKind,
    /// Bytes ahead of the source pointer, one access per distance.
    pub distances: Vec<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignPointer {
    Dst,
    Src,
    /// Both: for an alignment prologue, only when `dst` and `src` are
    /// congruent modulo `to`; for a guard, both are aligned.
    Both,
    /// Guards only: `dst` and `src` are congruent modulo `to` (`(dst ^ src)
    /// & (to - 1) == 0`), so aligning one aligns the other.
    Congruent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Align {
    pub pointer: AlignPointer,
    pub to: u32,
    pub min_size: u64,
    pub by: AlignBy,
}

/// How an alignment prologue reaches the boundary (`by = "..."`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignBy {
    /// A byte loop until the pointer is aligned: 0..to-1 iterations, a
    /// branch each.
    #[default]
    Bytes,
    /// One `to`-byte word copied where it lies, then the pointers and the
    /// length moved on to the pointer's next boundary (1..=to bytes, some
    /// copied twice), with no branch: 6.12's `.Llarge_movsq`. x86, `to` a
    /// register width.
    Word,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tail {
    /// Byte loop.
    Bytes,
    /// Loop of register-width words, then bytes.
    Words,
    /// Words, then one overlapping register-width copy ending at the end.
    Overlap,
    /// One overlapping block-sized copy ending at the end, no word loop:
    /// no branch after the loop (classes must start at >= the block).
    OverlapBlock,
    /// x86 `rep movsb`.
    RepMovsb,
    /// x86 `rep movs` of the loop's width, then `rep movsb` (the tail of
    /// Mala Anand, "efficient copy_to_user and copy_from_user routines in
    /// Linux Kernel" (2002)).
    RepMovs,
}

/// What copies the last `len mod unit` bytes after a `rep movs` of
/// `unit > 1` bytes (`tail = "..."` of a `rep_movs` method).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RepTail {
    /// A second `rep movsb`, as Linux 2.5.19's i386 copy and 6.1's
    /// `copy_user_generic_string` do: a second `rep` start-up.
    #[default]
    RepMovsb,
    /// A byte loop, as 6.12's `.Llarge_movsq` does: 0..7 bytes for the
    /// price of a loop, not of a `rep` start-up (several times dearer on a
    /// CPU without ERMS).
    Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unrolled {
    /// Bytes per iteration.
    pub block: u32,
    /// Register width in bytes.
    pub width: u32,
    /// Registers loaded before they are stored (group size).
    pub registers: u32,
    pub grouping: Grouping,
    pub prefetch: Option<Prefetch>,
    pub align: Option<Align>,
    pub tail: Tail,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MethodKind {
    /// One byte at a time.
    Bytes,
    /// Overlapping head and tail copies in power-of-two buckets.
    HeadTail { width: u32, registers: u32 },
    /// An unrolled loop.
    Unrolled(Unrolled),
    /// x86 `rep movs` of `unit` bytes, then (`unit > 1`) the rest by
    /// `tail`, optionally after an alignment prologue.
    RepMovs {
        unit: u32,
        align: Option<Align>,
        tail: RepTail,
    },
    /// RISC-V's copy of a source misaligned to the destination: align
    /// `dst` to `width` (`align`), then aligned `width`-byte loads of the
    /// source shifted and or-ed into aligned stores, then bytes (the
    /// `.Lshift_copy` of arch/riscv/lib/uaccess.S). A co-aligned source
    /// takes a plain word loop instead.
    ShiftCombine { width: u32, align: Align },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Method {
    pub name: String,
    pub kind: MethodKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// `(dst - src) mod 4096` in `lo..=hi`.
    Alias { lo: u32, hi: u32 },
    /// The pointer is aligned to `to` bytes (`Both`: dst and src both are).
    Aligned { pointer: AlignPointer, to: u32 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub condition: Condition,
    pub method: Method,
}

/// Sizes `lo..=hi` (`hi == None`: unbounded) use `method` unless a guard
/// matches first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeClass {
    pub lo: u64,
    pub hi: Option<u64>,
    pub guards: Vec<Guard>,
    pub method: Method,
}

impl SizeClass {
    /// Whether copies of `n` bytes are in this class.
    pub fn holds(&self, n: u64) -> bool {
        self.lo <= n && self.hi.is_none_or(|h| n <= h)
    }
}

/// The class of `classes` that copies of `n` bytes are in.
pub fn class_of(classes: &[SizeClass], n: u64) -> Option<&SizeClass> {
    classes.iter().find(|c| c.holds(n))
}

/// Whether a dispatch is one `rep movsb` for every size: one class from 0,
/// `rep movs` of unit 1 without alignment prologue or guards, and no
/// alias-first band.
pub fn is_bare_rep_movsb(classes: &[SizeClass], alias_first: Option<&AliasFirst>) -> bool {
    alias_first.is_none()
        && matches!(classes, [c] if c.lo == 0
            && c.hi.is_none()
            && c.guards.is_empty()
            && matches!(c.method.kind, MethodKind::RepMovs { unit: 1, align: None, .. }))
}

/// Alias-first dispatch: `(dst - src) mod 4096` in `lo..=hi` is tested
/// once, before the size classes from `from` bytes up (where a main class
/// starts; smaller copies never take the test). A copy of `from` bytes or
/// more in that band is dispatched by `classes` (every size from `from`,
/// guards allowed, as in the main dispatch); every other copy by the main
/// classes, which need no alias guard of their own for it, so the common
/// path pays one alias branch however many classes the band concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AliasFirst {
    pub lo: u32,
    pub hi: u32,
    pub from: u64,
    pub classes: Vec<SizeClass>,
}

impl AliasFirst {
    /// The test it makes, as a guard condition.
    pub fn condition(&self) -> Condition {
        Condition::Alias {
            lo: self.lo,
            hi: self.hi,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Strategy {
    pub name: String,
    /// `name` with every character outside `[A-Za-z0-9_]` turned into `_`.
    pub symbol: String,
    pub description: String,
    pub arch: Arch,
    pub directions: Vec<Direction>,
    /// One routine per direction or one for both (then `directions` is both).
    pub routine: RoutineShape,
    pub precision: Precision,
    /// from_user only: zero `to[n-N..n)` on a fault.
    pub zero_tail: bool,
    pub linux: LinuxOptions,
    /// The size classes; with variants, the default variant's.
    pub classes: Vec<SizeClass>,
    /// The alias band tested before `classes`, and the classes of the
    /// copies in it; with variants, the default variant's.
    pub alias_first: Option<AliasFirst>,
    /// Per-CPU variants, first match wins, the last one the default; empty
    /// for a strategy that runs the same code everywhere.
    pub variants: Vec<crate::front::variant::Variant>,
    /// Constant-size entry points (`<symbol>_<dir>_<n>`).
    pub fixed_sizes: Vec<u32>,
    /// The CPU `copygen tune` measured (`[tuned_on]`), if recorded.
    pub tuned_on: Option<crate::front::variant::TunedOn>,
    /// Path of the strategy file as generated headers record it (relative
    /// to its checkout, never a machine's absolute path).
    pub source: String,
    /// The path it was read from, as given: where an error found after
    /// validation points (a tree that cannot call it, a command for
    /// another arch), as validation's own errors do.
    pub file: std::path::PathBuf,
    /// The strategy file's text, restated in the generated file.
    pub text: String,
}

/// The TOML spelling of a unit variant (`rep_movsb`, `loads_first`), so
/// messages name values as the strategy file writes them.
pub fn toml_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

macro_rules! display_as_toml {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&toml_name(self))
            }
        }
    )*};
}

display_as_toml!(
    Tail,
    Grouping,
    PrefetchKind,
    AlignPointer,
    Convention,
    Uaccess,
    Precision
);

pub fn symbol_of(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
