//! A mutation fuzzer over the TOML front end: the shipped strategy files,
//! mutated at random (a fixed seed, a bounded number of mutants), parsed
//! and validated in-process. No mutant may panic, every error must carry a
//! location (line and column) and print no control character, and every
//! mutant that is accepted must render in both flavours without panicking.
//! Inputs that once broke one of these are kept in
//! `tests/fixtures/hostile/toml/` and replayed by `hostile_toml_corpus`.
//!
//! A longer run, for hunting rather than checking:
//! `COPYGEN_FUZZ_MUTANTS=200000 COPYGEN_FUZZ_SEED=7 cargo test --release
//! --test suite hostile_toml_fuzz::` (the failing input is printed in full).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use copygen::front::diagnostics::{is_unsafe_to_show, StrategyError};
use copygen::front::parse::parse;
use copygen::front::strategy::Flavor;
use copygen::output::render::render;

/// Mutants per run (unless `COPYGEN_FUZZ_MUTANTS` says otherwise): enough
/// to reach every validator a few times over, few enough for a test run.
const MUTANTS: usize = 3000;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// xorshift64*: reproducible without a crate.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Tokens a mutation inserts or substitutes: TOML syntax, numbers at the
/// edges of every integer type, the schema's own words, hostile text.
const TOKENS: &[&str] = &[
    "[",
    "]",
    "[[",
    "]]",
    "{",
    "}",
    "=",
    ",",
    ".",
    "\"",
    "'",
    "\"\"\"",
    "\n",
    "#",
    " ",
    "..",
    "..=",
    "0..",
    "0..=0",
    "1..0",
    "0",
    "-1",
    "1",
    "7",
    "8",
    "64",
    "4095",
    "4096",
    "65536",
    "2147483647",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "1e300",
    "-0.0",
    "nan",
    "inf",
    "true",
    "false",
    "1979-05-27",
    "\"\\u001b]0;t\\u0007\"",
    "\"\\u202e\"",
    "\"\"",
    "x",
    "kind",
    "unit",
    "use",
    "sizes",
    "block",
    "width",
    "registers",
    "methods",
    "dispatch",
    "variants",
    "linux",
    "fault",
    "routine",
    "prefetch",
    "tail",
    "align",
    "when",
    "arch",
    "directions",
    "name",
    "description",
    "fixed_sizes",
    "precision",
    "exact",
    "block",
    "rep_movs",
    "unrolled",
    "x86_64",
    "i386",
    "armv6",
    "aarch64",
    "to_user",
    "from_user",
    "uaccess",
    "symbol",
    "[methods.m]",
    "[[dispatch]]",
    "[linux]",
    "[fault]",
    "[[variants]]",
];

/// One random mutation of `text` (always valid UTF-8: edits are made at
/// character boundaries).
fn mutate(rng: &mut Rng, text: &str, others: &[String]) -> String {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let at = |rng: &mut Rng| bounds[rng.below(bounds.len())];
    let span = |rng: &mut Rng| {
        let (a, b) = (at(rng), at(rng));
        (a.min(b), a.max(b))
    };
    let mut out = text.to_string();
    match rng.below(8) {
        // Insert a token.
        0 | 1 => out.insert_str(at(rng), TOKENS[rng.below(TOKENS.len())]),
        // Replace a short run with a token.
        2 | 3 => {
            let a = at(rng);
            let b = bounds
                .iter()
                .copied()
                .find(|&b| b >= a + 1 + rng.below(8))
                .unwrap_or(text.len());
            out.replace_range(a..b, TOKENS[rng.below(TOKENS.len())]);
        }
        // Delete a span.
        4 => {
            let (a, b) = span(rng);
            out.replace_range(a..b, "");
        }
        // Duplicate a span.
        5 => {
            let (a, b) = span(rng);
            let piece = text[a..b].to_string();
            out.insert_str(b, &piece);
        }
        // Splice in a line of another strategy.
        6 => {
            let other = &others[rng.below(others.len())];
            let lines: Vec<&str> = other.lines().collect();
            let line = lines[rng.below(lines.len())];
            let nl: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
            let pos = nl.get(rng.below(nl.len())).copied().unwrap_or(0);
            out.insert_str(pos, &format!("{line}\n"));
        }
        // Swap two lines.
        _ => {
            let mut lines: Vec<&str> = text.lines().collect();
            let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
            lines.swap(a, b);
            out = lines.join("\n");
        }
    }
    out
}

/// What must hold for any input: no panic, located and printable errors,
/// and an accepted strategy renders.
fn check(name: &str, text: &str) -> Result<(), String> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        match parse(Path::new("mutant.toml"), text, None) {
            Ok(s) => {
                for fl in Flavor::ALL {
                    render(&s, fl);
                }
                Ok(())
            }
            Err(e) => check_error(&e),
        }
    }));
    match outcome {
        Ok(r) => r.map_err(|m| format!("{name}: {m}")),
        Err(p) => Err(format!(
            "{name}: panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        )),
    }
}

fn check_error(e: &StrategyError) -> Result<(), String> {
    for one in e.all() {
        if one.line == 0 || one.column == 0 {
            return Err(format!("an error without a location: {one}"));
        }
    }
    let shown = e.to_string();
    if let Some(c) = shown
        .chars()
        .find(|&c| is_unsafe_to_show(c) && c != '\n' && c != '\t')
    {
        return Err(format!(
            "the message prints U+{:04X} raw: {shown:?}",
            c as u32
        ));
    }
    Ok(())
}

fn shipped() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/strategies");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the strategies folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("a shipped strategy"))
        .collect()
}

#[test]
fn hostile_toml_mutants_neither_panic_nor_lose_their_location() {
    let seeds = shipped();
    assert!(seeds.len() >= 4, "the shipped strategies are the corpus");
    let mutants = env_or("COPYGEN_FUZZ_MUTANTS", MUTANTS as u64) as usize;
    let mut rng = Rng(0x243f_6a88_85a3_08d3 ^ env_or("COPYGEN_FUZZ_SEED", 0) | 1);
    let mut failures = Vec::new();
    let mut rejected = 0;
    // Quiet the default hook: a caught panic is reported below.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for i in 0..mutants {
        let base = &seeds[i % seeds.len()];
        let mut text = mutate(&mut rng, base, &seeds);
        // Some mutants stack a few mutations.
        for _ in 0..rng.below(3) {
            text = mutate(&mut rng, &text, &seeds);
        }
        if parse(Path::new("m.toml"), &text, None).is_err() {
            rejected += 1;
        }
        if let Err(f) = check(&format!("mutant {i}"), &text) {
            failures.push((f, text));
        }
    }
    std::panic::set_hook(hook);
    // Both outcomes must be exercised for the fuzzer to mean anything.
    assert!(
        rejected > mutants / 10 && rejected < mutants,
        "{rejected} of {mutants} mutants rejected"
    );
    if let Some((f, text)) = failures.first() {
        panic!(
            "{} of {mutants} mutants broke the front end; the first: {f}\n--- input ---\n{text}",
            failures.len()
        );
    }
}

#[test]
fn hostile_toml_corpus() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile/toml");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("the corpus folder") {
        let p = e.expect("an entry").path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("a corpus file");
        if let Err(f) = check(&p.display().to_string(), &text) {
            panic!("{f}");
        }
        n += 1;
    }
    assert!(n > 0, "the corpus is empty");
}

/// The TOML reader says where arrays nest too deeply but not where a key
/// has too many dotted parts: such a key, or table header, is still
/// reported at its own line, not at the top of the file.
#[test]
fn a_key_too_deep_for_the_reader_is_reported_at_its_line() {
    let key = vec!["a"; 100].join(".");
    for (body, line) in [
        (format!("{key} = 1\n"), 4),
        (format!("\n[methods.m]\nkind = \"bytes\"\n\n[{key}]\n"), 8),
    ] {
        let text = format!("name = \"x\"\ndescription = \"d\"\narch = \"x86_64\"\n{body}");
        let e = copygen::front::parse::parse(Path::new("deep.toml"), &text, None)
            .expect_err("a key of 100 parts");
        assert_eq!((e.line, e.column), (line, 1), "{e}");
        assert!(e.message.contains("80 or more dotted parts"), "{e}");
        assert!(e.field.starts_with("a.a.a"), "{e}");
    }
}
