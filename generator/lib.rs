//! copygen: describe a user-copy strategy once (TOML), lower it to a
//! per-architecture instruction list whose user accesses carry their fault
//! labels, and print it as GNU as for a kernel tree or user space.
//!
//! The module tree follows the pipeline, and data flows one way: a module
//! names (`crate::…`) only its own stage and earlier ones. The table below
//! is the one list of stages: `tests/stage_order.rs` reads its rows (number,
//! name, the modules in backticks), checks every module against them, and
//! checks that ARCHITECTURE.md's `## Stages` table has the same rows.
//!
//! | # | stage     | modules                                                        |
//! |---|-----------|----------------------------------------------------------------|
//! | 0 | types     | [`front::strategy`], [`front::variant`]: the validated strategy every stage reads; [`kernel::version`]: the kernel trees a strategy names and what differs between them |
//! | 1 | targets   | [`arch`]: what each architecture offers (ABI tables, [`arch::cpu`] the x86 CPU-feature table, [`arch::symbols`] the one place symbol names and label prefixes are made and read back); [`kernel`]: what copygen knows about the Linux trees (copy-routine and glue names, the x86_64 call site per kernel and CPU, the `ALTERNATIVE` text, NOP forms); [`toolchain`]: the outside programs (compilers, objdump, qemu) and their Debian packages; [`input`]: the one bounded reader of input files |
//! | 2 | front end | [`front`]: TOML → validated [`front::strategy::Strategy`], and back ([`front::to_toml`]) |
//! | 3 | lowering  | [`lower`]: strategy → [`lower::routine::Routine`] (ops, fixups); per-CPU variants ([`lower::variants`]) |
//! | 4 | backends  | [`backend`]: routine → per-arch instruction lines → GNU as; the x86 per-CPU entry points and resolver ([`backend::x86::entry`]) |
//! | 5 | JIT, output | [`jit`]: the same x86 lines → dynasm; [`output`]: file templates, the `emitted/` tree, and how any file is written (atomically, all or nothing) |
//! | 6 | checks    | [`checks`]: objects, fault injection on each CPU mode, the static verifier ([`checks::static_verify`]) |
//! | 7 | tools     | [`tools`]: `copygen diff` ([`tools::diff`]), `copygen tune`, `copygen record`, `copygen kernel-patch`, over the shared [`tools::bench`] (`copygen bench`), [`tools::trace`], [`tools::host_cpu`], [`tools::mail_text`] |

pub mod arch;
pub mod backend;
pub mod checks;
pub mod front;
pub mod input;
pub mod jit;
pub mod kernel;
pub mod lower;
pub mod output;
pub mod toolchain;
pub mod tools;
