//! The built-in strategies and the checkout they live in.
//!
//! In a checkout (a folder above the working directory holding
//! `Cargo.toml` and `generator/strategies/`), the catalog is the strategy
//! files on disk, so an edit takes effect at once. The copy embedded at
//! build time serves only a binary run outside any checkout.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::front::parse;
use crate::front::strategy::{KernelVersion, Strategy};
use crate::input::BadInput;

include!(concat!(env!("OUT_DIR"), "/catalog.rs"));

/// Where the catalog's files are, relative to a checkout.
pub const STRATEGIES: &str = "generator/strategies";

/// The checkout around the working directory, if there is one.
pub fn checkout() -> Option<PathBuf> {
    let mut dir = std::env::current_dir().ok()?;
    loop {
        if dir.join(STRATEGIES).is_dir() && dir.join("Cargo.toml").is_file() {
            return Some(dir);
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// The repository's files (kernel-macro shims and the like): the checkout,
/// else the folder this binary was built from.
pub fn repo_root() -> PathBuf {
    checkout().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The catalog, validated: the checkout's files when there is a checkout,
/// else the embedded copy.
pub fn catalog() -> Result<Vec<Strategy>> {
    catalog_in(checkout().as_deref())
}

/// The catalog's form of `name` for `kernel`, if it has one: `NAME-612`
/// marked `[linux] kernel = "6.12"` (the same variants in the convention
/// 6.12's inline site needs). What `kernel-patch NAME --kernel 6.12`
/// patches and `bench --site kernel NAME` times.
pub fn kernel_form<'a>(
    all: &'a [Strategy],
    name: &str,
    kernel: KernelVersion,
) -> Option<&'a Strategy> {
    let form = format!("{name}-{}", kernel.name().replace('.', ""));
    all.iter()
        .find(|s| s.name == form && s.linux.kernel == Some(kernel))
}

/// The strategy files of the checkout at `root` (the embedded copy for
/// `None`), in file-name order. Paths are recorded relative to the
/// checkout, as the embedded copy records them.
pub fn catalog_in(root: Option<&Path>) -> Result<Vec<Strategy>> {
    let Some(root) = root else {
        return CATALOG
            .iter()
            .map(|(path, text)| {
                Ok(parse::parse(Path::new(path), text, None).map_err(BadInput::from)?)
            })
            .collect();
    };
    let dir = root.join(STRATEGIES);
    let mut rels = Vec::new();
    for e in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".toml") {
            rels.push(format!("{STRATEGIES}/{name}"));
        }
    }
    rels.sort();
    rels.iter()
        .map(|rel| {
            let text =
                crate::input::read_string_limited(&root.join(rel), crate::input::MAX_STRATEGY)
                    .with_context(|| format!("{rel}: cannot read strategy file"))?;
            Ok(parse::parse(Path::new(rel), &text, None).map_err(BadInput::from)?)
        })
        .collect()
}

/// A Linux kernel thread (a patch and its discussion) that a preset or a
/// benchmark table re-creates. Cited by author and subject wherever code,
/// strategy files or docs rely on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thread {
    /// Short key: `copygen bench --table KEY` re-runs its measurement.
    pub key: &'static str,
    pub author: &'static str,
    pub subject: &'static str,
    /// As precise as the thread itself dates it.
    pub date: &'static str,
    /// Where it was posted or merged.
    pub venue: &'static str,
}

impl Thread {
    /// `Author, "subject" (year)`.
    pub fn cite(&self) -> String {
        let year = self.date.rsplit(' ').next().unwrap_or(self.date);
        format!("{}, \"{}\" ({year})", self.author, self.subject)
    }
}

/// The six kernel threads copygen's catalog and benchmark tables grew from.
pub const THREADS: [Thread; 6] = [
    Thread {
        key: "anand",
        author: "Mala Anand",
        subject: "efficient copy_to_user and copy_from_user routines in Linux Kernel",
        date: "24 June 2002",
        venue: "LKML, a patch against Linux 2.5.19",
    },
    Thread {
        key: "morton",
        author: "Andrew Morton",
        subject: "faster copy_*_user for bad alignments on intel ia32",
        date: "2002",
        venue:
            "commit a792a27c in Linux 2.5.41, with an alignment enhancement by Hirokazu Takahashi",
    },
    Thread {
        key: "whitchurch",
        author: "Vincent Whitchurch",
        subject: "ARM: Optimise copy_{from/to}_user for !CPU_USE_DOMAINS",
        date: "11 October 2018",
        venue: "patch to the ARM kernel, reviewed by Nicolas Pitre",
    },
    Thread {
        key: "wilson",
        author: "Chris Wilson",
        subject: "x86: Static optimisations for copy_user",
        date: "1 June 2017",
        venue: "LKML",
    },
    Thread {
        key: "abeni",
        author: "Paolo Abeni",
        subject: "x86/uaccess: use unrolled string copy for short strings",
        date: "21 June 2017",
        venue: "LKML and x86@kernel.org",
    },
    Thread {
        key: "tsukamoto",
        author: "Akira Tsukamoto",
        subject:
            "riscv: __asm_copy_to-from_user: Optimize unaligned memory access and pipeline stall",
        date: "June 2021",
        venue: "linux-riscv, merged for Linux 5.14",
    },
];

/// The thread with this key. Panics on a key not in [`THREADS`]: every
/// caller names one of the six, and a test checks each is found.
pub fn thread(key: &str) -> &'static Thread {
    THREADS
        .iter()
        .find(|t| t.key == key)
        .unwrap_or_else(|| panic!("no kernel thread `{key}` in THREADS"))
}

/// Where a catalog strategy comes from: a kernel thread, or code that is
/// not from a thread (a kernel routine of today, or copygen's own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Provenance {
    /// The kernel thread it re-creates, by [`Thread::key`].
    pub thread: Option<&'static str>,
    /// What of it (markdown; links relative to `docs/`).
    pub note: &'static str,
}

/// The origin of every built-in strategy, by name; `copygen list
/// --markdown` prints it, and a test checks the table and the catalog
/// name the same strategies.
pub const ORIGINS: &[(&str, Provenance)] = &[
    ("a64-overlap", Provenance { thread: None, note: "copygen's own, measured against `arm64-template`" }),
    ("arm64-template", Provenance { thread: None, note: "arm64's `copy_template.S` (`arch/arm64/lib`, Linux 6.1 and 6.12)" }),
    ("fixed-size", Provenance { thread: Some("wilson"), note: "its constant-size copies" }),
    ("guarded-movsb", Provenance { thread: None, note: "copygen's own per-CPU choice; the `zen` variant's dispatch is `copygen tune`'s (`tuned-zen4`)" }),
    ("guarded-movsb-612", Provenance { thread: None, note: "copygen's own: `guarded-movsb` for Linux 6.12's inline call site (`kernel-patch guarded-movsb --kernel 6.12` patches it)" }),
    ("guarded-movsb-32", Provenance { thread: None, note: "copygen's own: `guarded-movsb` for i386 kernels" }),
    ("intel-aligned", Provenance { thread: Some("morton"), note: "use the unrolled loop only when the pointers are not congruent" }),
    ("intel-unrolled", Provenance { thread: Some("anand"), note: "the 64-byte integer loop with touch prefetch" }),
    ("intel-unrolled-zeroing", Provenance { thread: Some("anand"), note: "its zeroing `copy_from_user` (`__copy_user_zeroing`)" }),
    ("ldm-stm", Provenance { thread: Some("whitchurch"), note: "`ldm`/`stm` blocks with fixups" }),
    ("movs-alternative", Provenance { thread: None, note: "Linux 6.12's `rep_movs_alternative` (`arch/x86/lib/copy_user_64.S`)" }),
    ("movsl", Provenance { thread: Some("anand"), note: "the Linux 2.5.19 baseline it measured against" }),
    ("riscv-misaligned-fast", Provenance { thread: Some("tsukamoto"), note: "its word copy on any source alignment, for cores with fast misaligned loads" }),
    ("riscv-uaccess", Provenance { thread: Some("tsukamoto"), note: "`__asm_copy_{to,from}_user` (`arch/riscv/lib/uaccess.S`, Linux 6.1 and 6.12): unrolled words, shift-and-combine" }),
    ("riscv-word-loop", Provenance { thread: Some("tsukamoto"), note: "a plain word loop, the kind of code it replaced" }),
    ("rep-movsb", Provenance { thread: None, note: "the x86_64 kernel's FSRM path (`copy_user_generic()`)" }),
    ("short-unrolled", Provenance { thread: Some("abeni"), note: "unrolled moves up to 64 bytes" }),
    ("tuned-zen4", Provenance { thread: None, note: "`copygen tune` on an AMD EPYC Zen 4 ([figures](results/amd-epyc-zen4.md))" }),
    ("unrolled64", Provenance { thread: None, note: "Linux 6.1's `copy_user_generic_unrolled` (`arch/x86/lib/copy_user_64.S`)" }),
    ("word-loop", Provenance { thread: Some("whitchurch"), note: "the ARM code before that patch" }),
];

/// The origin recorded for a catalog strategy.
pub fn origin(name: &str) -> Option<&'static Provenance> {
    ORIGINS.iter().find(|(n, _)| *n == name).map(|(_, o)| o)
}
