//! What copygen knows about the Linux trees it targets, in one place: the
//! versions and what differs between them ([`version`], of the strategy
//! types' stage, as `[linux] kernel` names one), the names of the copy
//! routines and of the patch's glue ([`symbols`]), the copy routines as a
//! kprobe sees them ([`copy_symbols`]), the x86_64 call site per kernel and
//! CPU feature set and the chain a per-CPU strategy makes of it ([`site`],
//! [`variant_chain`]), the kernel's `ALTERNATIVE` macros and patch table
//! ([`alternative`]), the NOPs its `optimize_nops()` writes ([`nops`]),
//! the type word of its exception-table entries ([`extable`]) and what a
//! strategy must be, and is renamed to, for the call sites to reach it
//! ([`wiring`]).
//!
//! Lowering, the JIT, the static verifier and the tools take these facts
//! from here; none of them spells a kernel symbol, an x86 NOP or a line of
//! the kernel's C.

pub mod alternative;
pub mod copy_symbols;
pub mod extable;
pub mod nops;
pub mod site;
pub mod symbols;
pub mod variant_chain;
pub mod version;
pub mod wiring;
