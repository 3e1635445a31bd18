//! `copygen diff --bench`: time the changed routines in both versions.

use super::*;

/// A changed routine `--bench` times in both versions.
pub struct BenchPair {
    /// The row name in the report.
    pub name: String,
    /// The symbol on each side (they differ when two differently named
    /// strategy files were compared).
    pub old_symbol: String,
    pub new_symbol: String,
    pub old: Strategy,
    pub new: Strategy,
}

/// The changed x86_64 routines present on both sides, with their
/// strategies (strategy files as given; emitted files through the strategy
/// their header restates). The JIT runs the standalone (SysV) ABI, so each
/// routine is timed once, from the standalone file if both flavours changed.
pub fn bench_pairs(r: &DiffReport, old: &Side, new: &Side) -> Result<Vec<BenchPair>> {
    let strategy_of = |side: &Side, rel: &str| -> Result<Option<Strategy>> {
        if let Some(s) = &side.strategy {
            return Ok(Some(s.clone()));
        }
        let Some(src) = side.files.iter().find(|f| f.rel == rel) else {
            return Ok(None);
        };
        crate::output::header::restated_strategy(&src.text, Some(src.arch)).transpose()
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut changed: Vec<&FnChange> = r
        .changed
        .iter()
        .filter(|c| c.status == Change::Modified)
        .collect();
    // Standalone first: that is the ABI the JIT runs.
    changed.sort_by_key(|c| !c.new_file.as_deref().unwrap_or("").contains("/standalone/"));
    for c in changed {
        let (Some(of), Some(nf)) = (&c.old_file, &c.new_file) else {
            continue;
        };
        let (Some(os), Some(ns)) = (strategy_of(old, of)?, strategy_of(new, nf)?) else {
            continue;
        };
        if os.arch != Arch::X86_64 || ns.arch != Arch::X86_64 || !seen.insert(c.symbol.clone()) {
            continue;
        }
        let old_symbol = if os.symbol != ns.symbol {
            c.symbol.replacen(&ns.symbol, &os.symbol, 1)
        } else {
            c.symbol.clone()
        };
        out.push(BenchPair {
            name: c.symbol.clone(),
            old_symbol,
            new_symbol: c.symbol.clone(),
            old: os,
            new: ns,
        });
    }
    Ok(out)
}

/// The old and new routine of `pair`, JIT-compiled and ready to call,
/// named `old:<sym>`/`new:<sym>`.
pub fn bench_subjects(pair: &BenchPair) -> Result<Vec<crate::tools::bench::Subject>> {
    [
        ("old", &pair.old, &pair.old_symbol),
        ("new", &pair.new, &pair.new_symbol),
    ]
    .into_iter()
    .map(|(tag, s, sym)| crate::tools::bench::jit_subject(s, sym, format!("{tag}:{sym}")))
    .collect()
}

/// Sizes `--bench` times each changed routine at (bytes, page-aligned).
pub const BENCH_SIZES: &[usize] = &[1, 7, 8, 63, 64, 256, 1024, 4096];

/// Time the old and new version of every changed routine: a text table of
/// median cycles per call (bench's format), or why it cannot.
pub fn bench_changed(r: &DiffReport, old: &Side, new: &Side) -> Result<String> {
    let pairs = bench_pairs(r, old, new)?;
    if pairs.is_empty() {
        return Ok("\n# bench\n(no changed x86_64 routine on both sides to time)\n".into());
    }
    // One sweep per routine, old first: bench's ratio column is new/old.
    let mut subjects = Vec::new();
    for p in &pairs {
        subjects.push(bench_subjects(p)?);
    }
    let sweep = crate::tools::bench::custom(BENCH_SIZES, &[0], &[0]);
    let mut out = String::from("\n# bench: old and new version of each changed routine\n");
    for (p, subjects) in pairs.iter().zip(&subjects) {
        let results = crate::tools::bench::run(&sweep, subjects, 15, &|_, _| {});
        let _ = writeln!(out, "## {}", p.name);
        out.push_str(&crate::tools::bench::text_table(&results));
    }
    Ok(out)
}
