//! copygen: describe a user-copy strategy once (TOML), lower it to a
//! per-architecture instruction list whose user accesses carry their fault
//! labels, and print it as GNU as for a kernel tree or user space.
//!
//! strategy file → [`strategy`] (validated [`ir`]) → [`lower`] ([`ops`]) →
//! [`backend`] (instruction selection and printing) → [`render`] (file
//! templates) → [`emit`] (the `emitted/` tree).

pub mod arch;
pub mod backend;
pub mod bench;
pub mod diagnostics;
pub mod emit;
pub mod faultinject;
pub mod ir;
pub mod lower;
pub mod objfile;
pub mod ops;
pub mod render;
pub mod static_verify;
pub mod strategy;
pub mod verify;
