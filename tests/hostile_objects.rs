//! Crafted and mutated objects: the object reader and the static verifier
//! give an error or a verdict, never a panic, and a function extent that
//! leaves its section is an error, not "0/0 instructions analysed, ok".

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use copygen::checks::objfile::{self, Assemble};
use copygen::checks::static_verify::{check_file, check_object, Options};
use copygen::front::strategy::{Arch, Convention, Flavor};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Read `data` and, if it reads, verify it; Err(message) on a panic.
fn survive(data: &[u8]) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| {
        if let Ok(obj) = objfile::read(data) {
            let _ = check_file(
                &obj,
                Path::new("mutant.o"),
                Flavor::Standalone,
                Convention::C,
                &Options::default(),
            );
        }
    }))
    .map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

/// The objects the mutations start from: real emitted files of each arch.
fn seeds() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    [
        (Arch::X86_64, "emitted/x86_64/standalone/guarded-movsb.S"),
        (Arch::I386, "emitted/i386/standalone/guarded-movsb-32.S"),
        (Arch::Armv6, "emitted/armv6/standalone/ldm-stm.S"),
        (Arch::Aarch64, "emitted/aarch64/standalone/a64-overlap.S"),
        (Arch::X86_64, "tests/fixtures/static/bytecopy.S"),
    ]
    .iter()
    .enumerate()
    .filter_map(|(k, (arch, rel))| {
        let src = root().join(rel);
        if !src.exists() {
            return None;
        }
        let out = dir.path().join(format!("{k}.o"));
        objfile::assemble(&src, &out, &Assemble::new(*arch, Flavor::Standalone))
            .unwrap_or_else(|e| panic!("{rel}: {e:#}"));
        Some(std::fs::read(out).unwrap())
    })
    .collect()
}

/// Bounded mutation fuzzing: a fixed sequence of byte mutations of real
/// objects (overwrites, small-integer writes at 4-byte alignment where ELF
/// keeps sizes and offsets, truncation), none may panic. Crashers found
/// this way are kept in tests/fixtures/hostile/.
#[test]
fn mutated_objects_never_panic() {
    let seeds = seeds();
    assert!(seeds.len() >= 4, "the seed objects are missing");
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut failures = Vec::new();
    for iteration in 0..3000 {
        let seed = &seeds[(next() % seeds.len() as u64) as usize];
        let mut data = seed.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % data.len() as u64) as usize;
            match next() % 4 {
                0 => data[at] = next() as u8,
                1 => data[at] ^= 1 << (next() % 8),
                2 => {
                    let at = at & !3;
                    let v =
                        [0u32, 1, 2, 0xff, 0x100, 0xffff_ffff, 0x7fff_ffff][(next() % 7) as usize];
                    if at + 4 <= data.len() {
                        data[at..at + 4].copy_from_slice(&v.to_le_bytes());
                    }
                }
                _ => data.truncate(at.max(1)),
            }
        }
        if let Err(msg) = survive(&data) {
            let path = std::env::temp_dir().join(format!("copygen-crasher-{iteration}.o"));
            std::fs::write(&path, &data).unwrap();
            failures.push(format!(
                "iteration {iteration}: {msg} (saved as {})",
                path.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Crashers the fuzzer found (a function that decodes to no instruction,
/// with an exception-table entry): kept as regression inputs.
#[test]
fn kept_crashers_do_not_panic() {
    let dir = root().join("tests/fixtures/hostile");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "o") {
            let data = std::fs::read(&p).unwrap();
            survive(&data).unwrap_or_else(|m| panic!("{}: {m}", p.display()));
            let _ = check_object(&p, &Options::default());
            n += 1;
        }
    }
    assert!(n >= 2, "the crasher corpus is missing");
}
