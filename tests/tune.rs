//! `copygen tune`: its candidates are valid strategies, its objective
//! enforces the grid bounds, and a run on a tiny budget writes a strategy
//! file that parses, names the CPU and passes the full JIT fault suite —
//! also when stopped by Ctrl-C.

use std::path::Path;
use std::process::Command;

use copygen::front::parse;
use copygen::front::strategy::{Condition, Precision};
use copygen::tools::bench::{self, Measurement, Results, Rng, Sweep};
use copygen::tools::tune::{self, Candidate, CandidateBase};

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

#[test]
fn every_candidate_of_the_search_space_is_a_valid_strategy() {
    let mut rng = Rng::new(3);
    let mut pool = Candidate::seeds();
    for i in 0..300 {
        let c = pool[i % pool.len()].mutate(&mut rng);
        pool.push(c);
    }
    // A base of block precision too: its aligned `rep movs` classes must
    // not align by one word, which that precision refuses.
    let headers = [Precision::Exact, Precision::Block].map(|precision| {
        let mut h = CandidateBase::new("t");
        h.precision = precision;
        h
    });
    for (c, header) in pool
        .iter()
        .flat_map(|c| headers.iter().map(move |h| (c, h)))
    {
        let text = c.toml(header);
        let s = parse::parse(Path::new("t.toml"), &text, None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        // Classes cover every size, and the guards are the bands asked for.
        assert_eq!(s.classes[0].lo, 0);
        assert_eq!(s.classes.last().unwrap().hi, None);
        for (i, class) in s.classes.iter().enumerate() {
            for g in &class.guards {
                let Condition::Alias { lo, hi } = g.condition else {
                    panic!("only alias guards")
                };
                assert_eq!(lo, 1);
                assert!([15, 16, 31, 63].contains(&hi), "{text}");
                assert!(
                    class.lo >= c.guard_from as u64,
                    "class {i} guarded below guard_from"
                );
            }
        }
        copygen::jit::compile(&s).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
}

#[test]
fn a_candidate_becomes_the_classes_it_describes() {
    let c = Candidate {
        short_max: 64,
        guard_from: 65,
        narrow: 15,
        wide: 31,
        wide_until: 1024,
        ..Candidate::bare_guarded()
    };
    let s = parse::parse(Path::new("t.toml"), &c.toml(&CandidateBase::new("t")), None).unwrap();
    let shape: Vec<(u64, Option<u64>, Vec<Condition>)> = s
        .classes
        .iter()
        .map(|k| {
            (
                k.lo,
                k.hi,
                k.guards.iter().map(|g| g.condition.clone()).collect(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (0, Some(64), vec![]),
            (65, Some(1023), vec![Condition::Alias { lo: 1, hi: 31 }]),
            (1024, None, vec![Condition::Alias { lo: 1, hi: 15 }]),
        ]
    );
}

/// Results of a grid where the second subject costs `ratio(n, d)` times the first.
fn synthetic(ratio: impl Fn(usize, usize) -> f64) -> Results {
    let sweep = Sweep {
        rows: bench::alias_rows(&[64, 1024], &[0, 8, 40]),
        ..Sweep::default()
    };
    let cells = sweep
        .rows
        .iter()
        .enumerate()
        .map(|(r, row)| {
            [1.0, ratio(row.n, row.x as usize)]
                .iter()
                .enumerate()
                .map(|(s, k)| {
                    let t = 100.0 * k;
                    Measurement {
                        row: r,
                        subject: s,
                        cycles: t,
                        q1: t,
                        q3: t,
                        min: t,
                        max: t,
                        iterations: 1,
                        rounds: vec![t; 3],
                    }
                })
                .collect()
        })
        .collect();
    Results {
        sweep,
        subjects: vec!["rep_movsb".into(), "x".into()],
        baseline: 0,
        repeats: 3,
        tsc_hz: 1e9,
        cpu: "test".into(),
        command: String::new(),
        cells,
    }
}

#[test]
fn the_objective_bounds_every_cell_and_the_band() {
    // Within 1.05x everywhere, 0.1x in the band from 1 KiB: feasible.
    let ok = tune::score(
        &synthetic(|n, d| if n >= 1024 && d == 8 { 0.1 } else { 1.04 }),
        1,
        0,
        true,
    );
    assert!(ok.feasible(), "{ok:?}");
    // One cell at 1.10x: infeasible, and named.
    let slow = tune::score(
        &synthetic(|n, d| match (n, d) {
            (64, 40) => 1.10,
            (1024, 8) => 0.1,
            _ => 1.0,
        }),
        1,
        0,
        true,
    );
    assert!(!slow.feasible());
    assert_eq!((slow.worst.1, slow.worst.2), (64, 40));
    // Only 0.5x inside the band: infeasible on a CPU with the cliff, fine
    // on one without.
    let band = synthetic(|n, d| if n >= 1024 && d == 8 { 0.5 } else { 1.0 });
    assert!(!tune::score(&band, 1, 0, true).feasible());
    assert!(tune::score(&band, 1, 0, false).feasible());
    assert!(tune::score(&band, 1, 0, true).objective > tune::score(&band, 1, 0, false).objective);
}

#[test]
fn one_bad_workload_is_not_averaged_away() {
    // Two distribution rows: the same mean ratio (1.0), but one subject
    // has a workload at 1.2x.
    let mut res = synthetic(|_, _| 1.0);
    let d = copygen::tools::bench::distribution::Distribution::parse("d", "d.csv", "1,1").unwrap();
    res.sweep.distributions = vec![d.clone(), d];
    let rows = bench::distribution_rows(&res.sweep.distributions);
    for (k, row) in rows.into_iter().enumerate() {
        res.sweep.rows.insert(k, row);
        let cell = |s: usize, t: f64| Measurement {
            row: k,
            subject: s,
            cycles: t,
            q1: t,
            q3: t,
            min: t,
            max: t,
            iterations: 1,
            rounds: vec![t; 3],
        };
        let t = if k == 0 { 120.0 } else { 80.0 };
        res.cells.insert(k, vec![cell(0, 100.0), cell(1, t)]);
    }
    let even = {
        let mut r = res.clone();
        for k in 0..2 {
            r.cells[k][1].rounds = vec![100.0; 3];
        }
        r
    };
    let uneven = tune::score(&res, 1, 2, false);
    let flat = tune::score(&even, 1, 2, false);
    assert_eq!(uneven.distributions.len(), 2);
    assert!((uneven.distributions[0] - 1.2).abs() < 1e-9);
    assert!(
        uneven.objective > flat.objective + 0.15,
        "{uneven:?} {flat:?}"
    );
}

#[test]
fn cpuid_names_the_cpu() {
    let cpu = tune::cpu_info();
    assert_eq!(cpu.vendor.len(), 12, "{cpu:?}");
    assert!(cpu.family > 0);
    let d = cpu.describe();
    assert!(d.contains(&cpu.vendor) && d.contains("family 0x"), "{d}");
}

/// The tuned file of a run: it parses, names the CPU and the
/// distributions, and `copygen jit` (the full fault suite) passes it.
fn check_output(out: &Path, dist: &str) {
    let text = std::fs::read_to_string(out).unwrap();
    let cpu = tune::cpu_info();
    assert!(text.starts_with("# Tuned by `copygen tune` on "), "{text}");
    assert!(text.contains(&cpu.vendor) && text.contains(dist), "{text}");
    assert!(
        text.contains("Worst cell of the fixed-size x alias grid"),
        "{text}"
    );
    parse::load(out, None).unwrap();
    let jit = copygen().arg("jit").arg(out).output().unwrap();
    assert!(
        jit.status.success(),
        "{}",
        String::from_utf8_lossy(&jit.stdout)
    );
}

#[test]
fn a_tiny_budget_writes_a_fault_checked_strategy_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let (out, json, plot) = (
        dir.path().join("t.toml"),
        dir.path().join("t.json"),
        dir.path().join("t.svg"),
    );
    let run = copygen()
        .args(["tune", "--distribution", "MemcpyGoogleQ", "--budget", "2"])
        .arg("-o")
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .arg("--plot")
        .arg(&plot)
        .arg("--require-targets")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    // --require-targets: exit 1 exactly when a target line says MISSED
    // (`within noise` is not a miss), after writing everything.
    let missed = stdout
        .lines()
        .skip_while(|l| !l.starts_with("Targets for"))
        .take_while(|l| !l.is_empty())
        .filter(|l| l.ends_with(": MISSED"))
        .count();
    if missed == 0 {
        assert!(run.status.success(), "{stdout}{stderr}");
    } else {
        assert_eq!(run.status.code(), Some(1), "{stdout}{stderr}");
        assert!(
            stderr.contains(&format!("{missed} target(s) missed")),
            "{stderr}"
        );
    }
    check_output(&out, "MemcpyGoogleQ");
    // The report: the CPU, each distribution (tuned on or not) against
    // rep movsb, rep movsq and the catalog, and the per-class tables.
    for want in [
        "CPU: ",
        "alias cliff",
        "passed the JIT fault suite",
        "MemcpyGoogleQ",
        "Uniform384To4096",
        "rep_movsq",
        "guarded-movsb",
        "1024..4096",
        "16..31",
    ] {
        assert!(stdout.contains(want), "no `{want}` in\n{stdout}");
    }
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(j["cpu"]["vendor"].is_string());
    let names: Vec<&str> = j["subjects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.len() >= 4, "{names:?}");
    // The final run times rep movsb twice: the second is the A/A control
    // every target is judged beside.
    assert_eq!(j["control"], "rep_movsb again");
    assert_eq!(names.iter().filter(|n| **n == "rep_movsb again").count(), 1);
    assert!(stdout.contains(", control "), "{stdout}");
    assert!(j["run"]["benchmarks"].as_array().unwrap().len() > 100);
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
}

#[test]
fn ctrl_c_returns_the_best_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.toml");
    let child = copygen()
        .args([
            "tune",
            "--distribution",
            "MemcpyGoogleA",
            "--budget",
            "600",
            "--name",
            "interrupted",
        ])
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(4));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("stopped by Ctrl-C"), "{stdout}");
    check_output(&out, "MemcpyGoogleA");
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("name = \"interrupted\""));
}

#[test]
fn a_catalog_name_is_a_base() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.toml");
    let run = copygen()
        .args(["tune", "tuned-zen4", "--distribution", "MemcpyGoogleQ"])
        .args(["--budget", "2", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    check_output(&out, "MemcpyGoogleQ");
    // The base's name is kept.
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("name = \"tuned-zen4\""));
}

#[test]
fn bad_tune_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().to_str().unwrap();
    let arm = dir.path().join("arm.toml");
    std::fs::write(
        &arm,
        std::fs::read_to_string("generator/strategies/word-loop.toml").unwrap(),
    )
    .unwrap();
    for args in [
        vec!["--distribution", "/nonexistent.csv"],
        vec!["--distribution", "MemcpyGoogleQ", "--budget", "0"],
        vec!["--distribution", "MemcpyGoogleQ", "--name", "a b"],
        vec![arm.to_str().unwrap(), "--distribution", "MemcpyGoogleQ"],
        // A catalog name that is not there, and a per-CPU strategy (tune
        // searches one CPU's strategy; --merge combines them).
        vec!["no-such-strategy", "--distribution", "MemcpyGoogleQ"],
        vec!["guarded-movsb", "--distribution", "MemcpyGoogleQ"],
        // An output that cannot be written, refused before the search.
        vec!["--distribution", "MemcpyGoogleQ", "--plot", folder],
    ] {
        let out = dir.path().join("never.toml");
        let run = copygen()
            .arg("tune")
            .args(&args)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(
            run.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(!out.exists(), "{args:?} wrote a file");
    }
}

/// A base `tune` cannot start from is refused at the field that says so,
/// before any search: another arch, per-CPU variants, and (for a kernel
/// site) what no tree can call.
#[test]
fn a_base_tune_cannot_start_from_is_refused_at_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.toml");
    std::fs::write(
        &one,
        "name = \"one\"\ndescription = \"d\"\narch = \"x86_64\"\ndirections = [\"to_user\"]\n\
         [methods.b]\nkind = \"bytes\"\n[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n",
    )
    .unwrap();
    let line_of = crate::common::source_lines::line_starting_with;
    let arm = "generator/strategies/word-loop.toml";
    let gm = "generator/strategies/guarded-movsb.toml";
    for (args, at) in [
        (
            vec![arm],
            format!("{arm}:{}:8: error in `arch`: ", line_of(arm, "arch = ")),
        ),
        (
            vec![gm],
            format!(
                "{gm}:{}:3: error in `variants`: ",
                line_of(gm, "[[variants]]")
            ),
        ),
        (
            vec![one.to_str().unwrap(), "--site", "kernel"],
            format!("{}:4:1: error in `directions`: ", one.display()),
        ),
    ] {
        let out = dir.path().join("never.toml");
        let run = copygen()
            .arg("tune")
            .args(&args)
            .args(["--distribution", "MemcpyGoogleQ", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(&at), "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote a file");
    }
}

// ---- the size classes: short, mid, large ------------------------------------------

/// What a strategy runs outside its guards, per class: (lo, hi, method
/// name, `rep movs` unit and whether it aligns, when it is one).
fn class_methods(s: &copygen::front::strategy::Strategy) -> Vec<(u64, Option<u64>, String)> {
    s.classes
        .iter()
        .map(|k| (k.lo, k.hi, k.method.name.clone()))
        .collect()
}

#[test]
fn every_choice_of_the_size_classes_is_a_valid_strategy() {
    use copygen::front::strategy::MethodKind;
    use copygen::tools::tune::space::{ALIGN, BLOCK, PREFETCH, REGS, SHORT_MAX};
    use copygen::tools::tune::{LARGE, MID_MAX};
    let header = CandidateBase::new("t");
    let mut i = 0usize;
    for &short_max in SHORT_MAX {
        for &mid_max in MID_MAX {
            for &large in LARGE {
                for &block in BLOCK {
                    for (overlap_tail, block_tail) in
                        [(false, false), (true, false), (false, true), (true, true)]
                    {
                        i += 1;
                        let mut c = Candidate {
                            short_max,
                            mid_max,
                            large,
                            // Half of them with a fixed guard over part of
                            // the mid class and the large class.
                            narrow: if i % 2 == 0 { 15 } else { 0 },
                            guard_from: 100,
                            ..Candidate::bare_guarded()
                        };
                        c.mid_loop.block = block;
                        c.mid_loop.overlap_tail = overlap_tail;
                        c.mid_loop.block_tail = block_tail;
                        c.mid_loop.registers = REGS[i % REGS.len()];
                        c.mid_loop.interleaved = i % 3 == 0;
                        c.mid_loop.align = ALIGN[i % ALIGN.len()];
                        c.mid_loop.prefetch = PREFETCH[i % PREFETCH.len()];
                        let text = c.toml(&header);
                        let s = parse::parse(Path::new("t.toml"), &text, None)
                            .unwrap_or_else(|e| panic!("{e}\n{text}"));
                        assert_eq!(s.classes[0].lo, 0);
                        assert_eq!(s.classes.last().unwrap().hi, None);
                        for w in s.classes.windows(2) {
                            assert_eq!(w[0].hi.map(|h| h + 1), Some(w[1].lo), "{text}");
                        }
                        let mid_end = c.mid_end();
                        for k in &s.classes {
                            let expected = if short_max > 0 && k.lo == 0 {
                                "small"
                            } else if mid_end.is_some_and(|m| k.lo <= m) {
                                "mid"
                            } else {
                                large.name()
                            };
                            assert_eq!(k.method.name, expected, "{text}");
                            if let MethodKind::RepMovs { unit, align, .. } = &k.method.kind {
                                assert_eq!(*unit, large.unit, "{text}");
                                assert_eq!(align.is_some(), large.align_dst, "{text}");
                            }
                            // A class is in one class of the candidate.
                            if let Some(m) = mid_end {
                                assert!(k.lo > m || k.hi.is_some_and(|h| h <= m), "{text}");
                            }
                        }
                        // The mid class is there exactly when it ends above
                        // the short class.
                        assert_eq!(
                            s.classes.iter().any(|k| k.method.name == "mid"),
                            mid_max > short_max,
                            "{text}"
                        );
                        // Guards come before the class's method, in the mid
                        // class as in the large one.
                        if c.narrow > 0 {
                            assert!(s
                                .classes
                                .iter()
                                .all(|k| k.guards.is_empty() == (k.lo < 100)));
                        }
                        // What the report says per class covers every size once.
                        let choices = c.class_choices();
                        assert_eq!(choices[0].lo, 0);
                        assert_eq!(choices.last().unwrap().hi, None);
                        copygen::jit::compile(&s).unwrap_or_else(|e| panic!("{e}\n{text}"));
                    }
                }
            }
        }
    }
}

#[test]
fn the_no_erms_seed_is_guarded_movsb_s_zen_without_erms_variant() {
    let seeds = Candidate::seeds();
    let no_erms = Candidate::no_erms();
    assert!(seeds.contains(&no_erms));
    let space = tune::BandSpace::default();
    assert!(Candidate::band_seeds(&space, &[]).contains(&no_erms));
    // Every seed, fixed-shape or over bands, validates.
    for c in seeds.iter().chain(&Candidate::band_seeds(&space, &[])) {
        let text = c.toml(&CandidateBase::new("t"));
        parse::parse(Path::new("t.toml"), &text, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    let s = parse::parse(
        Path::new("t.toml"),
        &no_erms.toml(&CandidateBase::new("t")),
        None,
    )
    .unwrap();
    assert_eq!(
        class_methods(&s),
        vec![
            (0, Some(64), "small".to_string()),
            (65, Some(512), "mid".to_string()),
            (513, None, "movsq_aligned".to_string()),
        ]
    );
    // The same methods, class by class, as the catalog's variant for Zen
    // without ERMS.
    let catalog = copygen::front::catalog::catalog().unwrap();
    let guarded = catalog.iter().find(|s| s.name == "guarded-movsb").unwrap();
    let zen_movsq = guarded
        .variants
        .iter()
        .find(|v| v.name == "zen_movsq")
        .unwrap();
    let shape = |classes: &[copygen::front::strategy::SizeClass]| {
        classes
            .iter()
            .map(|k| (k.lo, k.hi, k.method.kind.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(shape(&s.classes), shape(&zen_movsq.classes));
    // The aligned `rep movsq` and its `rep movsb` of the rest keep the
    // contract on every case.
    let (report, ok) = copygen::jit::contract::run_strategy(&s).unwrap();
    assert!(ok, "{report}");
}

#[test]
fn the_search_reaches_every_choice_of_the_mid_and_large_classes() {
    use std::collections::HashSet;
    use tune::{BandSpace, LARGE, MID_MAX};
    let with_bands = BandSpace {
        options: vec![(1, 15, 65, None), (16, 31, 0, Some(1024))],
    };
    let spaces = [None, Some(BandSpace::default()), Some(with_bands)];
    for space in &spaces {
        let mut rng = Rng::new(5);
        let mut pool = match space {
            None => Candidate::seeds(),
            Some(b) if b.options.is_empty() => Candidate::band_seeds(b, &[]),
            Some(b) => Candidate::band_seeds(b, &[vec![0], vec![0, 1]]),
        };
        for i in 0..600 {
            let parent = &pool[i % pool.len()];
            let c = match space {
                None => parent.mutate(&mut rng),
                Some(b) => parent.mutate_bands(&mut rng, b),
            };
            pool.push(c);
        }
        let mids: HashSet<u32> = pool.iter().map(|c| c.mid_max).collect();
        let larges: HashSet<_> = pool.iter().map(|c| c.large).collect();
        let blocks: HashSet<u32> = pool.iter().map(|c| c.mid_loop.block).collect();
        let tails: HashSet<bool> = pool.iter().map(|c| c.mid_loop.block_tail).collect();
        let shorts: HashSet<u32> = pool.iter().map(|c| c.short_max).collect();
        assert_eq!(mids, MID_MAX.iter().copied().collect(), "{space:?}");
        assert_eq!(larges, LARGE.iter().copied().collect(), "{space:?}");
        assert_eq!(blocks.len(), tune::space::BLOCK.len(), "{space:?}");
        assert_eq!(tails.len(), 2, "{space:?}");
        assert_eq!(shorts.len(), tune::space::SHORT_MAX.len(), "{space:?}");
        // The written strategies have the classes the candidates name.
        for c in pool.iter().step_by(7) {
            let text = c.toml(&CandidateBase::new("t"));
            let s = parse::parse(Path::new("t.toml"), &text, None)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
            let names: Vec<String> = class_methods(&s).into_iter().map(|k| k.2).collect();
            assert_eq!(names.contains(&"mid".to_string()), c.mid_end().is_some());
            assert_eq!(names.last().map(String::as_str), Some(c.large.name()));
        }
    }
}
