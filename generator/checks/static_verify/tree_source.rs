//! A `.S` of a Linux tree is not checked from its text: its macros
//! (`ALTERNATIVE`, `_ASM_EXTABLE_*`, `SYM_FUNC_START`) and its
//! `.altinstructions` come from the tree's headers and configuration, which
//! copygen's shim headers only approximate (they drop `.altinstructions`,
//! and an entry on an `ALTERNATIVE` site then looks stray). Such a file is
//! refused with the one command that checks it: kbuild builds the object in
//! the tree, and `verify --static` reads the object.

use std::path::{Path, PathBuf};

/// The Linux tree `source` lies in, and its version (`6.12`): the nearest
/// folder above it whose `Makefile` sets `VERSION` and `PATCHLEVEL` and
/// which holds `Kbuild` and `arch/`.
pub fn linux_tree_of(source: &Path) -> Option<(PathBuf, String)> {
    let abs = std::fs::canonicalize(source).ok()?;
    for dir in abs.ancestors().skip(1) {
        if !dir.join("Kbuild").is_file() || !dir.join("arch").is_dir() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(dir.join("Makefile")) else {
            continue;
        };
        let field = |name: &str| {
            text.lines().find_map(|l| {
                let v = l.strip_prefix(name)?.trim_start().strip_prefix('=')?;
                Some(v.trim().to_string())
            })
        };
        if let (Some(v), Some(p)) = (field("VERSION"), field("PATCHLEVEL")) {
            return Some((dir.to_path_buf(), format!("{v}.{p}")));
        }
    }
    None
}

/// kbuild's `ARCH=` (and `CROSS_COMPILE=`) and the configuration copygen's
/// kernel checks use for a file under `arch/<dir>/`; `i386` picks x86's
/// 32-bit build.
fn make_arch(rel: &Path, i386: bool) -> Option<(&'static str, &'static str)> {
    let dir = rel.strip_prefix("arch").ok()?.iter().next()?.to_str()?;
    Some(match dir {
        "x86" if i386 => ("ARCH=i386", "defconfig"),
        "x86" => ("ARCH=x86_64", "defconfig"),
        "arm" => (
            "ARCH=arm CROSS_COMPILE=arm-linux-gnueabi-",
            "bcm2835_defconfig",
        ),
        "arm64" => ("ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-", "defconfig"),
        "riscv" => ("ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu-", "defconfig"),
        _ => return None,
    })
}

/// The refusal for `source`, a file of the tree at `tree` (Linux
/// `version`): one line naming the command that checks it.
pub fn refusal(source: &Path, tree: &Path, version: &str, i386: bool) -> String {
    let abs = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    let rel = abs.strip_prefix(tree).unwrap_or(&abs);
    let object = rel.with_extension("o");
    let build = match make_arch(rel, i386) {
        Some((arch, config)) => format!(
            "make -C {} {arch} {config} prepare {}",
            tree.display(),
            object.display()
        ),
        None => format!(
            "make -C {} <config> prepare {}",
            tree.display(),
            object.display()
        ),
    };
    format!(
        "error: {}: a source of the Linux {version} tree {}; its macros and .altinstructions are the tree's, \
         which copygen's shim headers do not reproduce, so it is checked as the tree builds it: \
         `{build}`, then `copygen verify --static {}` (verify/kernel-routines does this for every copy routine of 6.1 and 6.12)",
        source.display(),
        tree.display(),
        tree.join(&object).display()
    )
}
