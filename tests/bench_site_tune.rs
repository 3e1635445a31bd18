//! `copygen tune --site kernel`: candidates are scored by their call site
//! against the stock kernel's site (not a called routine against a called
//! `rep movsb`), the report and the tuned file say so, and bad options are
//! located errors. Behaviour only, never speed.

use std::process::Command;

use copygen::front::strategy::KernelVersion;

fn copygen(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .output()
        .unwrap()
}

/// What a tune wrote: its report, its standard error, the tuned file's
/// text and path (the folder lives as long as this).
struct Tuned {
    report: String,
    err: String,
    file: String,
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// A two-second `tune --site kernel ARGS -o FILE` that must succeed.
fn tune_site(args: &[&str]) -> Tuned {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuned.toml");
    let mut all = vec!["tune", "--site", "kernel", "--budget", "2"];
    all.extend(args);
    all.extend(["-o", path.to_str().unwrap()]);
    let o = copygen(&all);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{args:?}: {err}");
    Tuned {
        report: String::from_utf8_lossy(&o.stdout).into_owned(),
        err,
        file: std::fs::read_to_string(&path).unwrap(),
        path,
        _dir: dir,
    }
}

#[test]
fn bad_tune_site_options_are_located_errors() {
    let cases: [(&[&str], &[&str]); 5] = [
        // As `bench --site kernel --stock-features`: a name the stock
        // kernel's copy does not test, and the option without --site.
        (
            &[
                "tune",
                "--site",
                "kernel",
                "--stock-features",
                "-erms,-avx",
                "--distribution",
                "MemcpyGoogleQ",
            ],
            &["--stock-features", "`-avx`", "erms, fsrm, rep_good"],
        ),
        (
            &[
                "tune",
                "--stock-features=-erms",
                "--distribution",
                "MemcpyGoogleQ",
            ],
            &["--site"],
        ),
        (
            &[
                "tune",
                "--site",
                "kernel",
                "--site-kernel",
                "4.19",
                "--distribution",
                "MemcpyGoogleQ",
            ],
            &["--site-kernel", "4.19", "6.1, 6.12"],
        ),
        (
            &[
                "tune",
                "--site-kernel",
                "6.12",
                "--distribution",
                "MemcpyGoogleQ",
            ],
            &["--site"],
        ),
        (
            &["tune", "--site", "user", "--distribution", "MemcpyGoogleQ"],
            &["--site"],
        ),
    ];
    for (args, needles) in cases {
        let o = copygen(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
        for n in needles {
            assert!(err.contains(n), "{args:?}: `{n}` not in {err}");
        }
    }
}

#[test]
fn a_kernel_tune_is_scored_and_reported_against_the_stock_site() {
    let Tuned {
        report: text,
        file,
        path,
        _dir: _keep_the_file,
        ..
    } = tune_site(&["--distribution", "MemcpyGoogleQ"]);
    assert!(
        text.contains("against stock 6.12 (median"),
        "the report's baseline is the stock site:\n{text}"
    );
    assert!(!text.contains("against rep_movsb"), "{text}");
    assert!(text.contains("<= 1.05x stock 6.12"), "{text}");
    // The stock site is timed again as the A/A control, and every target
    // is judged against its bound and against what the control reads.
    assert!(
        text.contains("(control: `stock 6.12 again`, the baseline's code timed again"),
        "{text}"
    );
    let targets: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Targets for"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(targets.len(), 2, "{text}");
    for t in targets {
        assert!(t.contains(", control "), "{t}");
        assert!(
            ["met", "within noise", "MISSED"]
                .iter()
                .any(|v| t.ends_with(&format!(": {v}"))),
            "{t}"
        );
    }
    assert!(file.contains("; the baseline timed again: "), "{file}");
    // The tuned strategy's column is its site; the catalog's come after.
    assert!(text.contains("tuned (tuned)"), "{text}");
    assert!(
        file.contains("# Cost per call vs the stock 6.12 call site"),
        "{file}"
    );
    // 6.12's site calls rep_movs_alternative's convention: rax is every
    // method's one scratch register, STAC/CLAC are the site's, and the
    // patch builds the routine as rep_movs_alternative.
    use copygen::front::strategy::{Convention, MethodKind, Uaccess};
    let s = copygen::front::parse::load(&path, None).unwrap();
    assert_eq!(s.linux.convention, Convention::RepMovs, "{file}");
    assert_eq!(s.linux.uaccess, Uaccess::Caller, "{file}");
    assert_eq!(s.linux.kernel, Some(KernelVersion::V6_12), "{file}");
    let alias_first = s.alias_first.iter().flat_map(|a| &a.classes);
    for c in s.classes.iter().chain(alias_first) {
        let methods = std::iter::once(&c.method).chain(c.guards.iter().map(|g| &g.method));
        for m in methods {
            let registers = match &m.kind {
                MethodKind::HeadTail { registers, .. } => *registers,
                MethodKind::Unrolled(u) => u.registers,
                _ => 1,
            };
            assert_eq!(registers, 1, "{}: {file}", m.name);
        }
    }
    let wired = copygen::tools::kernel_patch::wire(&s, KernelVersion::V6_12).unwrap();
    assert_eq!(
        wired.strategy.linux.both.as_deref(),
        Some("rep_movs_alternative")
    );
}

#[test]
fn a_kernel_tune_against_another_cpu_s_code_says_so_and_writes_the_6_1_convention() {
    let Tuned {
        report: text,
        err,
        file,
        path,
        _dir: _keep_the_file,
    } = tune_site(&[
        "--site-kernel",
        "6.1",
        "--stock-features=-erms,-fsrm",
        "--distribution",
        "MemcpyGoogleQ",
    ]);
    // Without ERMS and FSRM, 6.1 calls copy_user_generic_string.
    for want in [
        "stock path: 6.1: copy_user_generic_string",
        "(--stock-features): the code such a CPU runs, timed on this CPU",
        "against stock 6.1 (median",
        "Chosen per size class",
    ] {
        assert!(text.contains(want), "no `{want}` in\n{text}");
    }
    assert!(text.contains("\n  large "), "{text}");
    assert!(err.contains("--kernel 6.1`"), "{err}");
    for want in [
        "# stock path: 6.1: copy_user_generic_string",
        "timed on this CPU, not on a CPU without them",
        "# Cost per call vs the stock 6.1 call site",
        "# Size classes",
    ] {
        assert!(file.contains(want), "no `{want}` in\n{file}");
    }
    // 6.1's glue calls the routine in the C convention.
    let s = copygen::front::parse::load(&path, None).unwrap();
    assert_eq!(
        s.linux.convention,
        copygen::front::strategy::Convention::C,
        "{file}"
    );
}

/// `tune --site kernel` tunes on traces too: each candidate's site
/// replays them against the stock site, and the report and the file give
/// each trace's ratio to the stock site.
#[test]
fn a_kernel_tune_replays_its_traces_through_the_sites() {
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/generator/workloads/x86_64");
    let (cat, dd) = (format!("{traces}/cat.csv"), format!("{traces}/dd-512.csv"));
    let Tuned {
        report: text, file, ..
    } = tune_site(&["--workload", &cat, "--check-workload", &dd]);
    assert!(
        text.contains("Workload traces, `tuned` against stock 6.12 ("),
        "{text}"
    );
    let ratio_of = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.split(": ").nth(1))
            .and_then(|r| r.split('x').next())
            .and_then(|r| r.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no ratio of {name} in\n{text}"))
    };
    for name in [cat.as_str(), dd.as_str()] {
        let r = ratio_of(name);
        assert!(r > 0.0 && r.is_finite(), "{name}: {r}");
        // Each trace also gives the stock site's ratio to itself.
        let line = text.lines().find(|l| l.contains(name)).unwrap();
        let control: f64 = line
            .rsplit("; control ")
            .next()
            .and_then(|c| c.strip_suffix('x'))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no control ratio in {line}"));
        assert!(control > 0.0 && control.is_finite(), "{line}");
    }
    let (on, off) = (
        text.find("  tuned on:").unwrap(),
        text.find("  not tuned on (--check-workload):").unwrap(),
    );
    assert!(on < off, "{text}");
    assert!(file.contains("#   trace "), "{file}");
    assert!(file.contains("(not tuned on)"), "{file}");
}
