//! copygen: describe a user-copy strategy once (TOML), lower it to a
//! per-architecture instruction list whose user accesses carry their fault
//! labels, and print it as GNU as for a kernel tree or user space.
//!
//! strategy file → [`strategy`] (validated [`ir`]) → [`lower`] ([`ops`]) →
//! [`backend`] (instruction selection and printing) → [`render`] (file
//! templates) → [`emit`] (the `emitted/` tree).
//!
//! The same x86 instruction lines feed [`jit`] (dynasm, in-process fault
//! injection) and [`bench`]. Verification reads what was emitted:
//! [`objfile`] (assembled objects), [`static_verify`] (every user access
//! covered, registers, bounds), [`faultinject`] and [`verify`] (the C harness
//! on each CPU mode); [`review`] diffs two versions for review.

pub mod arch;
pub mod backend;
pub mod bench;
pub mod diagnostics;
pub mod emit;
pub mod faultinject;
pub mod ir;
pub mod jit;
pub mod kernel_patch;
pub mod lower;
pub mod objfile;
pub mod ops;
pub mod render;
pub mod review;
pub mod static_verify;
pub mod strategy;
pub mod verify;
