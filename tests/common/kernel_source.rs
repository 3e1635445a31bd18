//! Files of Debian's kernel source tarballs (`/usr/src/linux-source-<v>.tar.xz`,
//! which verify/install-deps installs), for the tests that apply, check or run
//! a tree's own files. Reading one member of a `.tar.xz` decompresses the whole
//! stream (some 10 s of CPU per tarball), and nextest runs every test in a
//! process of its own; so the files are extracted once into the test build's
//! scratch folder (`CARGO_TARGET_TMPDIR`), by whichever test gets there first,
//! and every test takes a private copy of the ones it asks for.

use std::path::{Path, PathBuf};
use std::process::Command;

use copygen::tools::bench::stock::Lock;

/// What the tests read of a tree: every file a patch edits, what checkpatch
/// and bloat-o-meter need. All of them exist in both trees, so the first
/// miss extracts them all and later asks cost no decompression.
const KNOWN: &[&str] = &[
    "MAINTAINERS",
    "arch/arm/lib/Makefile",
    "arch/arm64/lib/Makefile",
    "arch/arm64/lib/copy_from_user.S",
    "arch/arm64/lib/copy_template.S",
    "arch/arm64/lib/copy_to_user.S",
    "arch/riscv/lib/Makefile",
    "arch/riscv/lib/uaccess.S",
    "arch/x86/include/asm/uaccess_32.h",
    "arch/x86/include/asm/uaccess_64.h",
    "arch/x86/lib/Makefile",
    "scripts/bloat-o-meter",
    "scripts/checkpatch.pl",
    "scripts/const_structs.checkpatch",
    "scripts/spelling.txt",
    "tools/objtool/check.c",
];

/// The tarball of Linux `version`.
fn tarball(version: &str) -> PathBuf {
    PathBuf::from(format!("/usr/src/linux-source-{version}.tar.xz"))
}

/// A fresh folder holding `files` of the tree of `version` under their
/// paths in the tree; `None`, and a loud SKIPPED, without the tarball.
pub fn excerpt(version: &str, files: &[&str]) -> Option<tempfile::TempDir> {
    let shared = shared_excerpt(version, files)?;
    let dir = tempfile::tempdir().expect("tempdir");
    for f in files {
        let to = dir.path().join(f);
        std::fs::create_dir_all(to.parent().expect("a path in the tree")).expect("mkdir");
        std::fs::copy(shared.join(f), &to).expect("copy from the shared excerpt");
    }
    Some(dir)
}

/// The shared folder of `version` holding at least `files` (read only: the
/// tests copy out of it). Under a lock, so that one process extracts and the
/// others wait for it; each file is renamed into place whole.
fn shared_excerpt(version: &str, files: &[&str]) -> Option<PathBuf> {
    let tarball = tarball(version);
    let Ok(meta) = std::fs::metadata(&tarball) else {
        eprintln!(
            "SKIPPED: {} is absent (verify/install-deps installs it)",
            tarball.display()
        );
        return None;
    };
    // Keyed by the tarball's size and mtime: a new package is a new folder.
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("linux-source");
    std::fs::create_dir_all(&root).expect("mkdir");
    let dir = root.join(format!("{version}-{}-{mtime}", meta.len()));
    let _lock = Lock::take(&root.join(format!("{version}.lock"))).expect("lock");
    let missing: Vec<&str> = files
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    if !missing.is_empty() {
        extract(&tarball, version, &dir, &missing);
    }
    Some(dir)
}

/// Extract `missing` and every file of [`KNOWN`] not yet there into `dir`.
fn extract(tarball: &Path, version: &str, dir: &Path, missing: &[&str]) {
    let mut wanted: Vec<&str> = KNOWN
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect();
    for f in missing {
        if !wanted.contains(f) {
            wanted.push(f);
        }
    }
    let staging = tempfile::tempdir_in(dir.parent().expect("under the root")).expect("tempdir");
    let names: Vec<String> = wanted
        .iter()
        .map(|f| format!("linux-source-{version}/{f}"))
        .collect();
    let ok = Command::new("tar")
        .args(["-xJf"])
        .arg(tarball)
        .args(["--strip-components=1", "-C"])
        .arg(staging.path())
        .args(&names)
        .status()
        .expect("tar runs")
        .success();
    assert!(ok, "extracting {names:?} from {}", tarball.display());
    for f in &wanted {
        let to = dir.join(f);
        std::fs::create_dir_all(to.parent().expect("a path in the tree")).expect("mkdir");
        std::fs::rename(staging.path().join(f), &to).expect("rename into the shared excerpt");
    }
}
