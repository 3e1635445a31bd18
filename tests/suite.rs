//! Every integration test, in one binary: each file beside this one is a
//! module of it, `common/` their shared helpers. One binary links the
//! crate and its dependencies once instead of once per file (66 links made
//! up half of a cold test build). `cargo nextest run` still runs each test
//! in a process of its own; `cargo nextest run -E 'test(/^diff::/)'` (or
//! `cargo test --test suite diff::`) runs one file's tests.

mod common;

mod alias_first;
mod alias_guard;
mod armv6;
mod bad_input;
mod bench_distribution;
mod bench_output;
mod bench_site;
mod bench_site_tune;
mod bench_workload;
mod call_site;
mod cli_extras;
mod cpu_classes;
mod cpu_results;
mod diff;
mod diff_extable;
mod diff_input;
mod docs;
mod emit_tree;
mod emitted_objects;
mod fault_injection;
mod hostile_distribution;
mod hostile_environment;
mod hostile_input;
mod hostile_merge;
mod hostile_names;
mod hostile_objects;
mod hostile_review;
mod hostile_toml_fuzz;
mod hostile_verify;
mod jit_cli;
mod jit_encoder;
mod jit_encoder_a64;
mod jit_fault;
mod jit_props;
mod jit_resolver;
mod kernel_patch;
mod kernel_patch_mail;
mod kernel_patch_riscv64;
mod lowering;
mod mutation_agreement;
mod output_files;
mod printer_table_arm;
mod printer_table_x86;
mod random_harness;
mod record;
mod record_hostile;
mod record_tracefs;
mod riscv64_emit;
mod riscv64_fault;
mod riscv64_random;
mod riscv64_static;
mod stage_order;
mod static_count;
mod static_soundness;
mod static_verify;
mod static_verify_alternatives;
mod stock_kernel;
mod toolchain_scripts;
mod tune;
mod tune_bands;
mod tune_merge;
mod untrusted_strategy;
mod variants;
mod verify_cli;
mod verify_dispatch;
mod verify_sandbox;
