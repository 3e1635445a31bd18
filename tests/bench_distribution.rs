//! `copygen bench --distribution`: the distributions parse (and bad ones
//! are located errors), sequences follow them with independent page
//! offsets, every round draws a fresh sequence shared by all subjects, and
//! the output names its baseline and shows the rounds' spread.

use std::process::Command;
use std::sync::Mutex;

use copygen::tools::bench::distribution::{sequence, Distribution, BUILTIN};
use copygen::tools::bench::{self, Rng, Subject};

#[test]
fn builtin_distributions_parse_with_the_documented_means() {
    // Means from generator/distributions/README.md (llvm-libc's data).
    let expect = [
        ("MemcpyGoogleA", 175.0),
        ("MemcpyGoogleD", 675.0),
        ("MemcpyGoogleQ", 21.0),
        ("Uniform384To4096", 2240.0),
    ];
    assert_eq!(BUILTIN.len(), expect.len());
    for (name, mean) in expect {
        let d = Distribution::load(name).unwrap();
        assert!((d.mean - mean).abs() < 1.0, "{name}: mean {}", d.mean);
        assert!((d.probability.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
    let u = Distribution::load("Uniform384To4096").unwrap();
    assert_eq!(u.max_size, 4096);
    assert_eq!(u.size_at(0.0), 384);
}

#[test]
fn bad_distributions_are_located_errors() {
    let e = Distribution::parse("x", "x.csv", "0.5,0.25,abc,1").unwrap_err();
    let msg = format!("{e}");
    assert!(
        msg.starts_with("x.csv:1:10:") && msg.contains("size 2"),
        "{msg}"
    );
    let e = Distribution::parse("x", "x.csv", "0.5,-1").unwrap_err();
    assert!(format!("{e}").contains("x.csv:1:5:"), "{e}");
    assert!(Distribution::parse("x", "x.csv", "0,0,0").is_err());
    assert!(Distribution::parse("x", "x.csv", "1,2\n3").is_err());
    assert!(Distribution::parse("x", "x.csv", "").is_err());
    // Trailing newline and spaces are fine; weights are normalised.
    let d = Distribution::parse("x", "x.csv", " 1, 3 \n").unwrap();
    assert_eq!(d.probability, vec![0.25, 0.75]);
}

#[test]
fn sequences_follow_the_distribution_with_independent_offsets() {
    let d = Distribution::load("MemcpyGoogleA").unwrap();
    let mut rng = Rng::new(7);
    let calls = 200_000;
    let seq = sequence(&d, calls, 0.0, &mut rng);
    // Size classes drawn at their probability (within 1 percentage point).
    for (lo, hi) in [(0, 8), (9, 64), (65, 256), (257, 1024), (1025, 4096)] {
        let got = seq
            .iter()
            .filter(|c| (lo..=hi).contains(&(c.n as usize)))
            .count() as f64
            / calls as f64;
        let want = d.share(lo, hi);
        assert!((got - want).abs() < 0.01, "{lo}..={hi}: {got} vs {want}");
    }
    assert!(seq.iter().all(|c| c.src_off < 4096 && c.dst_off < 4096));
    // Independent uniform offsets: the band 1..=63 at its natural rate.
    let band = seq.iter().filter(|c| (1..=63).contains(&c.alias())).count() as f64 / calls as f64;
    assert!((band - 63.0 / 4096.0).abs() < 0.004, "{band}");
    // --alias-share sends that share (plus the natural rate) into the band.
    let seq = sequence(&d, calls, 0.2, &mut rng);
    let band = seq.iter().filter(|c| (1..=63).contains(&c.alias())).count() as f64 / calls as f64;
    assert!((band - (0.2 + 0.8 * 63.0 / 4096.0)).abs() < 0.01, "{band}");
}

// Two recording subjects: each logs the calls it gets.
static LOG_A: Mutex<Vec<(usize, usize, usize)>> = Mutex::new(Vec::new());
static LOG_B: Mutex<Vec<(usize, usize, usize)>> = Mutex::new(Vec::new());

unsafe extern "sysv64" fn record_a(to: *mut u8, from: *const u8, n: usize) -> usize {
    LOG_A.lock().unwrap().push((to as usize, from as usize, n));
    0
}
unsafe extern "sysv64" fn record_b(to: *mut u8, from: *const u8, n: usize) -> usize {
    LOG_B.lock().unwrap().push((to as usize, from as usize, n));
    0
}

#[test]
fn every_round_draws_a_fresh_sequence_shared_by_the_subjects() {
    let d = Distribution::load("MemcpyGoogleD").unwrap();
    let calls = 64;
    let sweep = bench::distribution_sweep(vec![d], calls, 0.0);
    let subjects = [
        Subject {
            name: "a".into(),
            f: record_a,
            _owner: None,
        },
        Subject {
            name: "b".into(),
            f: record_b,
            _owner: None,
        },
    ];
    let opts = bench::BenchOptions {
        repeats: 3,
        ..bench::BenchOptions::default()
    };
    let res = bench::run_with(&sweep, &subjects, &opts, &|_, _| {});
    assert_eq!(res.cells[0][0].rounds.len(), 3);
    let a = LOG_A.lock().unwrap().clone();
    let b = LOG_B.lock().unwrap().clone();
    // Per round: a warm-up sequence (a quarter as long), then the timed one.
    let warm = calls / 4 + 1;
    assert_eq!(a.len(), 3 * (warm + calls));
    let rounds = |log: &[(usize, usize, usize)]| -> Vec<(Vec<_>, Vec<_>)> {
        log.chunks(warm + calls)
            .map(|r| (r[..warm].to_vec(), r[warm..].to_vec()))
            .collect()
    };
    let (ra, rb) = (rounds(&a), rounds(&b));
    for i in 0..3 {
        assert_eq!(
            ra[i].1, rb[i].1,
            "round {i}: both subjects time the same calls"
        );
        assert_ne!(
            ra[i].0[..warm],
            ra[i].1[..warm],
            "the warm-up is a different sequence"
        );
        for j in 0..i {
            assert_ne!(
                ra[i].1, ra[j].1,
                "rounds {j} and {i} drew the same sequence"
            );
        }
    }
}

#[test]
fn the_table_names_its_baseline_and_shows_the_spread() {
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args([
            "bench",
            "memcpy",
            "rep_movsq",
            "--distribution",
            "MemcpyGoogleQ",
            "--calls",
            "256",
            "--repeats",
            "3",
            "--baseline",
            "rep_movsq",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let header = text.lines().nth(2).unwrap();
    assert!(
        header.contains("vs rep_movsq") && header.contains("IQR"),
        "{text}"
    );
    // Only memcpy has a ratio column: the baseline is not divided by itself.
    assert_eq!(header.matches("vs rep_movsq").count(), 1, "{header}");
    assert!(text.contains("MemcpyGoogleQ (mean 21 B)"), "{text}");
    assert!(text.contains("fresh sequence"), "{text}");

    // A baseline not listed is added; an unknown one is a bad argument.
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args([
            "bench",
            "memcpy",
            "--sizes",
            "8",
            "--repeats",
            "1",
            "--baseline",
            "rep_movsb",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("vs rep_movsb"), "{text}");
    for bad in [
        vec!["--baseline", "nosuch", "--sizes", "8"],
        vec!["--distribution", "/nonexistent.csv"],
        vec!["--distribution", "MemcpyGoogleQ", "--alias-share", "2"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
            .args(["bench", "memcpy"])
            .args(&bad)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{bad:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
