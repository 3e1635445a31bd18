//! copygen: describe a user-copy strategy once (TOML), lower it to a
//! per-architecture instruction list whose user accesses carry their fault
//! labels, and print it as GNU as for a kernel tree or user space.
//!
//! The module tree follows the pipeline:
//!
//! | stage     | modules                                                        |
//! |-----------|----------------------------------------------------------------|
//! | front end | [`front`]: TOML → validated [`front::strategy::Strategy`]      |
//! | targets   | [`arch`]: what each architecture offers                        |
//! | lowering  | [`lower`]: strategy → [`lower::routine::Routine`] (ops, fixups) |
//! | backends  | [`backend`]: routine → per-arch instruction lines → GNU as; [`jit`]: the same x86 lines → dynasm |
//! | output    | [`output`]: file templates, the `emitted/` tree, and how any file is written (atomically, all or nothing) |
//! | checks    | [`checks`]: objects, fault injection on each CPU mode, the static verifier ([`checks::static_verify`]) |
//! | tools     | [`tools`]: `copygen diff` (review), `copygen bench`, `copygen tune`, `copygen kernel-patch` |
//!
//! [`toolchain`] names the outside programs (compilers, objdump, qemu) and
//! their Debian packages.

pub mod arch;
pub mod backend;
pub mod jit;
pub mod lower;
pub mod toolchain;
pub mod variants;

/// The front end: strategy files in, validated strategies out.
pub mod front {
    pub mod catalog;
    pub mod diagnostics;
    pub mod parse;
    mod schema;
    pub mod strategy;
    pub mod to_toml;
    mod validate;
}

/// Generated files: templates around the printed functions, the
/// `emitted/` tree, and writing files.
pub mod output {
    pub mod header;
    pub mod render;
    pub mod tree;
    pub mod write;
}

/// Checking routines: assembled objects, fault injection on real CPU modes,
/// the static verifier, `copygen verify`.
pub mod checks {
    pub mod faultinject;
    pub mod objfile;
    pub mod sandbox;
    pub mod static_verify;
    pub mod verify;
}

/// Tools over the stages: review diffs, benchmarks, tuning, kernel patches.
pub mod tools {
    pub mod bench;
    pub mod kernel_patch;
    pub mod review;
    pub mod tune;
}
