//! Per-band tuning: the band detection as a function of a measured table
//! (synthetic tables here, no timing), the guard space it gives the
//! search, the branch-light band loop (`tail = "overlap_block"`), and
//! `tune --workload` / `--check-workload`.

use std::path::Path;
use std::process::Command;

use copygen::front::parse;
use copygen::front::strategy::{Condition, MethodKind, Tail};
use copygen::tools::bench::{Measurement, Results, Rng};
use copygen::tools::tune::bands::{band_distances, detect_bands, BandTable, SizeBands, BAND_SIZES};
use copygen::tools::tune::{self, BandSpace, Candidate, CandidateBase};

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/workloads/small.csv"
);

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

/// A table: `movsb(size, distance)` and `register_loop(size, distance)`
/// in ticks.
fn table(movsb: impl Fn(usize, usize) -> f64, regs: impl Fn(usize, usize) -> f64) -> BandTable {
    let distances = band_distances();
    let grid = |f: &dyn Fn(usize, usize) -> f64| -> Vec<Vec<f64>> {
        BAND_SIZES
            .iter()
            .map(|&n| distances.iter().map(|&d| f(n, d)).collect())
            .collect()
    };
    BandTable {
        sizes: BAND_SIZES.to_vec(),
        movsb: grid(&movsb),
        register_loop: grid(&regs),
        distances,
    }
}

/// Like a Zen: from 256 B, 1..15 at 20-30x its cost at 0 and 16..31 at
/// 2-6x; below, nothing; a register loop at 1.5x rep movsb's best.
fn amd_like() -> BandTable {
    let base = |n: usize| 10.0 + n as f64 / 32.0;
    table(
        |n, d| {
            let b = base(n);
            if n < 256 {
                b
            } else if (1..=15).contains(&d) {
                b * (20.0 + (d % 11) as f64)
            } else if (16..=31).contains(&d) {
                b * (2.0 + (d % 5) as f64)
            } else {
                b * (1.0 + (d % 3) as f64 * 0.02)
            }
        },
        |n, _| base(n) * 1.5,
    )
}

fn bands_of(per: &[SizeBands]) -> Vec<(usize, Vec<(u32, u32)>)> {
    per.iter()
        .map(|s| (s.size, s.bands.iter().map(|b| (b.lo, b.hi)).collect()))
        .collect()
}

#[test]
fn an_amd_like_table_has_two_bands_from_256_bytes() {
    let per = detect_bands(&amd_like());
    assert_eq!(
        bands_of(&per),
        vec![
            (16, vec![]),
            (64, vec![]),
            (256, vec![(1, 15), (16, 31)]),
            (1024, vec![(1, 15), (16, 31)]),
            (4096, vec![(1, 15), (16, 31)]),
        ]
    );
    let b = &per[2].bands;
    assert!(b[0].least >= 20.0 && b[0].most <= 30.0, "{b:?}");
    assert!(b[1].least >= 2.0 && b[1].most <= 6.0, "{b:?}");
    assert!(b[0].vs_loop > 13.0, "{b:?}");
}

#[test]
fn a_flat_table_has_no_band() {
    let per = detect_bands(&table(
        |n, _| 10.0 + n as f64 / 32.0,
        |n, _| 40.0 + n as f64,
    ));
    assert!(
        per.iter().all(|s| s.bands.is_empty() && s.far.is_empty()),
        "{per:?}"
    );
    let space = BandSpace::from_detected(&per);
    assert!(space.options.is_empty());
}

#[test]
fn a_best_distance_zero_is_not_a_band() {
    // Every distance but 0 at 1.65x (mutual alignment, as on this Xeon at
    // 4 KiB), even with a register loop that is faster: no band, since
    // distances 1..64 are no slower than the far ones.
    let per = detect_bands(&table(
        |_, d| if d == 0 { 100.0 } else { 165.0 },
        |_, _| 120.0,
    ));
    assert!(per.iter().all(|s| s.bands.is_empty()), "{per:?}");
}

#[test]
fn a_cliff_the_register_loop_cannot_beat_is_no_band() {
    let per = detect_bands(&table(
        |_, d| if (1..=15).contains(&d) { 300.0 } else { 100.0 },
        |_, _| 400.0,
    ));
    assert!(per.iter().all(|s| s.bands.is_empty()), "{per:?}");
}

#[test]
fn one_slow_distance_is_noise_and_levels_split_bands() {
    let per = detect_bands(&table(
        |_, d| match d {
            9 => 500.0,
            // One run 33..48 at two levels: 33..40 at 30x, 41..48 at 3x.
            33..=40 => 3000.0,
            41..=48 => 300.0,
            _ => 100.0,
        },
        |_, _| 120.0,
    ));
    for s in &per {
        assert_eq!(
            s.bands.iter().map(|b| (b.lo, b.hi)).collect::<Vec<_>>(),
            vec![(33, 40), (41, 48)],
            "{per:?}"
        );
    }
}

#[test]
fn far_distances_in_a_cliff_are_reported_not_banded() {
    let per = detect_bands(&table(
        |_, d| if d == 2061 { 900.0 } else { 100.0 },
        |_, _| 120.0,
    ));
    assert!(
        per.iter()
            .all(|s| s.bands.is_empty() && s.far == vec![2061]),
        "{per:?}"
    );
}

/// Parse a candidate's file and JIT-compile it.
fn strategy_of(c: &Candidate) -> copygen::front::strategy::Strategy {
    let text = c.toml(&CandidateBase::new("t"));
    let s =
        parse::parse(Path::new("t.toml"), &text, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    copygen::jit::compile(&s).unwrap_or_else(|e| panic!("{e}\n{text}"));
    s
}

/// Every size class: the main ones, then the alias-first band's.
fn all_classes(
    s: &copygen::front::strategy::Strategy,
) -> impl Iterator<Item = &copygen::front::strategy::SizeClass> {
    s.classes
        .iter()
        .chain(s.alias_first.iter().flat_map(|a| &a.classes))
}

fn alias_guards(s: &copygen::front::strategy::Strategy) -> Vec<(u64, u32, u32)> {
    all_classes(s)
        .flat_map(|k| {
            k.guards.iter().map(move |g| match g.condition {
                Condition::Alias { lo, hi } => (k.lo, lo, hi),
                ref c => panic!("not an alias guard: {c:?}"),
            })
        })
        .collect()
}

#[test]
fn the_search_over_measured_bands_uses_only_them() {
    let per = detect_bands(&amd_like());
    let space = BandSpace::from_detected(&per);
    assert_eq!(space.options, vec![(1, 15, 65, None), (16, 31, 65, None)]);
    let seeds = Candidate::band_seeds(&space, &space.size_sets(&per));
    // A seed guards both bands from just above the size below the first
    // that showed them, with the branch-light loop.
    let both = seeds
        .iter()
        .find(|c| c.bands.len() == 2 && c.bands[0].method.block_tail && !c.alias_first)
        .expect("a seed with both bands");
    let s = strategy_of(both);
    assert_eq!(
        alias_guards(&s),
        vec![(65, 1, 15), (65, 16, 31)],
        "{}",
        both.toml(&CandidateBase::new("t"))
    );
    let mut rng = Rng::new(7);
    let mut pool = seeds.clone();
    for i in 0..300 {
        let c = pool[i % pool.len()].mutate_bands(&mut rng, &space);
        pool.push(c);
    }
    let mut block_tails = 0;
    // Candidates with their bands tested first are in the space too.
    assert!(pool.iter().any(|c| c.alias_first && !c.bands.is_empty()));
    for c in &pool {
        let s = strategy_of(c);
        let mut guards = alias_guards(&s);
        for &(class_lo, lo, hi) in &guards {
            assert!([(1, 15), (16, 31)].contains(&(lo, hi)), "{lo}..{hi}");
            let g = c.bands.iter().find(|g| g.lo == lo).unwrap();
            assert!(class_lo >= g.from as u64);
        }
        guards.sort();
        guards.dedup_by_key(|g| (g.0, g.1));
        // Disjoint: one guard per band per class.
        assert_eq!(guards.len(), alias_guards(&s).len());
        for k in all_classes(&s) {
            for g in &k.guards {
                if let MethodKind::Unrolled(u) = &g.method.kind {
                    if u.tail == Tail::OverlapBlock {
                        assert!(k.lo >= u.block as u64);
                        block_tails += 1;
                    }
                }
            }
        }
    }
    assert!(block_tails > 0, "the branch-light loop is in the space");
}

/// Like an AMD EPYC of family 0x1a (Zen 5): 1..63 at about 5x up to
/// 256 B, and no band from 1 KiB; a register loop at 1.2x rep movsb's best.
fn zen5_like() -> BandTable {
    let base = |n: usize| 8.0 + n as f64 / 32.0;
    table(
        |n, d| {
            if n <= 256 && (1..=63).contains(&d) {
                base(n) * 4.8
            } else {
                base(n)
            }
        },
        |n, _| base(n) * 1.2,
    )
}

#[test]
fn a_band_only_at_short_sizes_is_guarded_only_there() {
    let per = detect_bands(&zen5_like());
    assert_eq!(
        bands_of(&per),
        vec![
            (16, vec![(1, 63)]),
            (64, vec![(1, 63)]),
            (256, vec![(1, 63)]),
            (1024, vec![]),
            (4096, vec![]),
        ]
    );
    // The seed guards from the smallest size up to the first measured
    // size that no longer shows the band.
    let space = BandSpace::from_detected(&per);
    assert_eq!(space.options, vec![(1, 63, 0, Some(1024))]);
    let seeds = Candidate::band_seeds(&space, &space.size_sets(&per));
    let seed = seeds.iter().find(|c| !c.bands.is_empty()).unwrap();
    let s = strategy_of(seed);
    let guarded: Vec<(u64, Option<u64>)> = s
        .classes
        .iter()
        .filter(|k| !k.guards.is_empty())
        .map(|k| (k.lo, k.hi))
        .collect();
    assert_eq!(
        guarded,
        vec![(0, Some(1023))],
        "{}",
        seed.toml(&CandidateBase::new("t"))
    );
    assert!(s
        .classes
        .iter()
        .any(|k| k.lo == 1024 && k.guards.is_empty()));
    // Every neighbour keeps each guard inside its from..until.
    let mut rng = Rng::new(3);
    let mut pool = seeds.clone();
    let mut bounded = 0;
    for i in 0..300 {
        let c = pool[i % pool.len()].mutate_bands(&mut rng, &space);
        pool.push(c);
    }
    for c in &pool {
        let s = strategy_of(c);
        for k in &s.classes {
            for g in &k.guards {
                let Condition::Alias { lo, .. } = g.condition else {
                    panic!("not an alias guard")
                };
                let band = c.bands.iter().find(|b| b.lo == lo).unwrap();
                assert!(k.lo >= band.from as u64, "{c:?}");
                if let Some(u) = band.until {
                    assert!(k.hi.is_some_and(|h| h < u as u64), "{c:?}");
                    bounded += 1;
                }
            }
        }
    }
    assert!(bounded > 0, "bounded guards are in the space");
}

#[test]
fn with_no_band_no_candidate_has_an_alias_guard() {
    let per = detect_bands(&table(|_, _| 100.0, |_, _| 300.0));
    let space = BandSpace::from_detected(&per);
    let mut pool = Candidate::band_seeds(&space, &space.size_sets(&per));
    let mut rng = Rng::new(11);
    for i in 0..200 {
        let c = pool[i % pool.len()].mutate_bands(&mut rng, &space);
        pool.push(c);
    }
    for c in &pool {
        assert!(alias_guards(&strategy_of(c)).is_empty(), "{c:?}");
    }
}

// ---- the branch-light band loop -------------------------------------------------

fn block_tail_strategy(class_lo: u64, grouping: &str) -> String {
    format!(
        r#"name = "blocktail"
description = "An unrolled loop whose tail is one overlapping block."
arch = "x86_64"

[linux]
uaccess = "routine"

[fault]
precision = "exact"

[methods.small]
kind = "head_tail"
width = 8
registers = 4

[methods.loop]
kind = "unrolled"
block = 32
width = 8
registers = 2
grouping = "{grouping}"
align = {{ pointer = "dst", to = 8, min_size = 32 }}
tail = "overlap_block"

[[dispatch]]
sizes = "0..={}"
use = "small"

[[dispatch]]
sizes = "{class_lo}.."
use = "loop"
"#,
        class_lo - 1
    )
}

#[test]
fn an_overlapping_block_tail_keeps_exact_counts() {
    for grouping in ["loads_first", "interleaved"] {
        let s = parse::parse(
            Path::new("b.toml"),
            &block_tail_strategy(32, grouping),
            None,
        )
        .unwrap();
        let (report, ok) = copygen::jit::contract::run_strategy(&s).unwrap();
        assert!(ok, "{report}");
        assert!(report.contains("violations"), "{report}");
    }
}

#[test]
fn an_overlapping_block_tail_passes_copygen_verify() {
    // The assembled routines (GNU as), fault-injected on the real CPU, and
    // the static verifier's exception-table coverage.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("blocktail.toml");
    std::fs::write(&file, block_tail_strategy(32, "loads_first")).unwrap();
    let out = copygen().arg("verify").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("blocktail "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    for cols in rows {
        assert!(cols[3].parse::<u64>().unwrap() > 10_000, "{cols:?}");
        assert_eq!(cols[4], "0", "{cols:?}");
    }
}

#[test]
fn an_overlapping_block_tail_below_the_block_is_a_located_error() {
    let text = block_tail_strategy(16, "loads_first");
    let e = parse::parse(Path::new("b.toml"), &text, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("b.toml:"), "{e}");
    assert!(
        e.contains("overlapping 32-byte block") && e.contains("starts at 16"),
        "{e}"
    );
}

// ---- tune --workload ------------------------------------------------------------

#[test]
fn a_bad_workload_is_a_located_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "direction,size,dst_offset,src_offset\nfrom,64,0,0\nto,12x,0,0\n",
    )
    .unwrap();
    for flag in ["--workload", "--check-workload"] {
        let out = dir.path().join("never.toml");
        let run = copygen()
            .args([
                "tune",
                "--distribution",
                "MemcpyGoogleQ",
                "--budget",
                "2",
                flag,
            ])
            .arg(&bad)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{flag}: {stderr}");
        assert!(
            stderr.contains("bad.csv:3:4:") && stderr.contains("`size`"),
            "{stderr}"
        );
        assert!(!out.exists(), "{flag} wrote a file");
    }
    let run = copygen()
        .args(["tune", "--workload", "/nonexistent/trace.csv"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&run.stderr).contains("/nonexistent/trace.csv"));
}

#[test]
fn a_tiny_budget_tune_on_a_trace_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let (out, json) = (dir.path().join("t.toml"), dir.path().join("t.json"));
    let check = dir.path().join("other.csv");
    std::fs::copy(TRACE, &check).unwrap();
    let run = copygen()
        .args(["tune", "--workload", TRACE, "--check-workload"])
        .arg(&check)
        .args(["--budget", "3", "-o"])
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The trace tuned on and the one checked, each with its ratio.
    let tuned_on = stdout.split("  tuned on:\n").nth(1).expect(&stdout);
    assert!(tuned_on.trim_start().starts_with(TRACE), "{stdout}");
    let checked = stdout
        .split("  not tuned on (--check-workload):\n")
        .nth(1)
        .expect(&stdout);
    assert!(
        checked.trim_start().starts_with(check.to_str().unwrap()),
        "{stdout}"
    );
    // The band measurement, per size.
    for n in ["16 B:", "64 B:", "256 B:", "1024 B:", "4096 B:"] {
        assert!(stdout.contains(n), "no `{n}` in\n{stdout}");
    }
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains(&format!("Tuned on: {TRACE}")), "{text}");
    assert!(text.contains("(not tuned on)"), "{text}");
    let s = parse::load(&out, None).unwrap();
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["traces"].as_array().unwrap().len(), 2);
    assert_eq!(j["traces"][0]["tuned_on"], true);
    assert!(j["traces"][0]["ratio"].as_f64().unwrap() > 0.0);
    // No band measured: the report says so and the strategy has no guard.
    let no_band = j["bands"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["bands"].as_array().unwrap().is_empty());
    if no_band {
        assert!(stdout.contains("no band on this CPU"), "{stdout}");
        assert!(s.classes.iter().all(|k| k.guards.is_empty()), "{text}");
    } else {
        assert!(stdout.contains("Chosen per band"), "{stdout}");
    }
}

// ---- the objective ---------------------------------------------------------------

/// A run of one distribution row, subject 1 at `ratio` x subject 0.
fn one_row(ratio: f64) -> Results {
    let d = copygen::tools::bench::distribution::Distribution::load("MemcpyGoogleQ").unwrap();
    let sweep = tune::tune_sweep(&[d], &[], &[], 16);
    let m = |s: usize, t: f64| Measurement {
        row: 0,
        subject: s,
        cycles: t,
        q1: t,
        q3: t,
        min: t,
        max: t,
        iterations: 1,
        rounds: vec![t; 3],
    };
    Results {
        sweep,
        subjects: vec!["rep_movsb".into(), "x".into()],
        baseline: 0,
        repeats: 3,
        tsc_hz: 1e9,
        cpu: String::new(),
        command: String::new(),
        cells: vec![vec![m(0, 10.0), m(1, 10.0 * ratio)]],
    }
}

#[test]
fn a_trace_counts_in_the_objective_beside_the_distributions() {
    let res = one_row(1.0);
    let plain = tune::score_with(&res, 1, 1, false, &[]);
    let good = tune::score_with(&res, 1, 1, false, &[0.8]);
    let bad = tune::score_with(&res, 1, 1, false, &[1.3]);
    assert!((plain.objective - 1.0).abs() < 1e-9, "{plain:?}");
    // Mean of 1.0 and 0.8; worst 1.0.
    assert!((good.objective - 0.9).abs() < 1e-9, "{good:?}");
    // Mean 1.15 plus the worst's excess 0.3: a bad trace is not averaged away.
    assert!((bad.objective - 1.45).abs() < 1e-9, "{bad:?}");
    assert_eq!(bad.traces, vec![1.3]);
}
