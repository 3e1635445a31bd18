//! `verify/cpu-results`: one command measures this CPU's stock kernel sites
//! against the catalog's per-CPU strategies and writes a results page. Run
//! with the code of a CPU without ERMS or FSRM forced, so that both
//! kernels' patched sites call a routine on every machine: the page names
//! this CPU as CPUID does, each kernel's stock path and the variant its
//! patched site reaches (the one the resolver picks for those features),
//! summarises every kind of figure for both kernels, and the independent
//! harness times that very variant's standalone routine against the trees'
//! routines. Bad arguments write nothing. Behaviour only, never speed.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use copygen::arch::cpu::{host_features, Cpuid};
use copygen::front::strategy::KernelVersion;
use copygen::lower::variants::select;
use copygen::tools::bench::stock::StockFeatures;

use crate::common::site::stock_object;

fn script(args: &[&str]) -> Output {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("verify/cpu-results"))
        .args(args)
        .env("COPYGEN", env!("CARGO_BIN_EXE_copygen"))
        .output()
        .unwrap()
}

/// A folder to name as `--out` (not created), inside a temporary one.
fn out_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("page");
    (tmp, out)
}

/// The summary row `item`'s cells: the patched 6.12 site, its A/A
/// control (the stock site again), the patched 6.1 site, its control.
fn summary_row<'a>(page: &'a str, item: &str) -> [&'a str; 4] {
    let prefix = format!("| {item} | ");
    let line = page
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no summary row `{item}`:\n{page}"));
    let cells: Vec<&str> = line[prefix.len()..]
        .trim_end_matches(" |")
        .split(" | ")
        .collect();
    cells
        .try_into()
        .unwrap_or_else(|c| panic!("four cells: {c:?}"))
}

/// `0.87x` or `1.02x (248 B)`: a ratio, with where it was worst.
fn is_ratio(cell: &str) -> bool {
    let r = cell.split(' ').next().unwrap();
    r.strip_suffix('x')
        .and_then(|x| x.parse::<f64>().ok())
        .is_some_and(|x| x > 0.0 && x.is_finite())
}

#[test]
fn the_page_names_the_cpu_the_paths_the_variants_and_times_what_the_sites_reach() {
    if stock_object(KernelVersion::V6_1).is_none() || stock_object(KernelVersion::V6_12).is_none() {
        return;
    }
    let (_tmp, dir) = out_dir();
    let o = script(&[
        "--repeats",
        "2",
        "--stock-features=-erms,-fsrm",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let page = std::fs::read_to_string(dir.join("results.md")).unwrap();

    // The CPU as CPUID reports it, and the forced features said.
    let id = Cpuid::host().unwrap();
    let title = format!("family 0x{:x} model 0x{:x}", id.family(), id.model());
    assert!(page.lines().next().unwrap().contains(&title), "{page}");
    assert!(page.contains(&format!(
        "CPUID `{}` {title} stepping {}",
        id.vendor_string(),
        id.stepping()
    )));
    assert!(page.contains("**Features forced to `-erms,-fsrm`**"));

    // The stock paths of a CPU without ERMS or FSRM.
    let [p612, c612, p61, c61] = summary_row(&page, "stock path");
    assert!(p612.starts_with("rep_movs_alternative"), "{p612}");
    assert!(p612.contains("no X86_FEATURE_ERMS"), "{p612}");
    assert_eq!(p61, "copy_user_generic_string");
    // The controls are the stock sites themselves, timed again.
    assert_eq!([c612, c61], ["the stock site again"; 2]);
    for v in ["6.12", "6.1"] {
        let site = |name: &str| {
            page.lines()
                .filter_map(|l| l.strip_prefix(&format!("site {name}: ")))
                .collect::<Vec<_>>()
        };
        let (stock, again) = (
            site(&format!("stock {v}")),
            site(&format!("stock {v} again")),
        );
        assert!(!again.is_empty(), "{v}: no control");
        assert!(
            again.iter().all(|a| *a == stock[0]),
            "{v}: {again:?} vs {stock:?}"
        );
    }

    // Each patched site calls the variant the resolver picks for them.
    let f = StockFeatures::host()
        .with("-erms,-fsrm")
        .unwrap()
        .cpu_features(host_features());
    let [s612, _, s61, _] = summary_row(&page, "patched site");
    let mut reached = Vec::new();
    for (cell, strategy, symbol) in [
        (s612, "guarded-movsb-612", "guarded_movsb_612"),
        (s61, "guarded-movsb", "guarded_movsb"),
    ] {
        let strategy = crate::common::catalog_strategy(strategy);
        let want = select(&strategy, f).expect("a variant for every CPU");
        assert!(cell.contains("(call "), "{cell}");
        assert!(
            cell.ends_with(&format!("variant '{}'", want.name)),
            "{cell}"
        );
        reached.push(format!("{symbol}__{}_from_user", want.name));
    }

    // Every kind of figure, for both kernels.
    let traces: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/workloads/x86_64"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "csv"))
            .map(|p| format!("trace {}", p.file_stem().unwrap().to_string_lossy()))
            .collect();
    assert!(traces.len() >= 10, "{traces:?}");
    let mut items: Vec<String> = [
        "MemcpyGoogleQ",
        "MemcpyGoogleA",
        "MemcpyGoogleD",
        "Uniform384To4096",
    ]
    .map(String::from)
    .into();
    items.extend(traces.iter().cloned());
    items.extend(
        [
            "worst size, 0..8192 B",
            "worst size, 64..512 B",
            "worst at any distance, 4096 B",
        ]
        .map(String::from),
    );
    for n in [64, 1024, 4096, 8192] {
        items.push(format!("worst at distance 1..15, {n} B"));
    }
    for item in &items {
        // The patched sites and the controls alike.
        let cells = summary_row(&page, item);
        assert!(cells.iter().all(|c| is_ratio(c)), "{item}: {cells:?}");
    }
    // A worst cell says where it is: inside the band it summarises.
    let [worst, ..] = summary_row(&page, "worst at distance 1..15, 1024 B");
    let d: u32 = worst
        .split_once("(1024 B, ")
        .and_then(|(_, d)| d.strip_suffix(')')?.parse().ok())
        .unwrap_or_else(|| panic!("{worst}"));
    assert!((1..=15).contains(&d), "{worst}");

    // The targets of a CPU without ERMS or FSRM, each judged from the
    // summary's own figures: within its bound, within it times the
    // control's figure, or missed.
    let targets = &page[page.find("\n## Targets\n").expect("the targets")..];
    let targets = &targets[..targets[1..].find("\n## ").unwrap() + 1];
    let ratio = |cell: &str| -> f64 {
        let r = cell.split(' ').next().unwrap();
        r.strip_suffix('x').unwrap().parse().unwrap()
    };
    let mut judged = 0;
    for line in targets
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| target"))
    {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let [item, k612, v612, k61, v61] = cells[..] else {
            panic!("five cells: {line}")
        };
        for (col, (cell, verdict)) in [(k612, v612), (k61, v61)].into_iter().enumerate() {
            if cell == "-" {
                continue;
            }
            // `<= B: FIGURE, control C`
            let (bound, rest) = cell
                .strip_prefix("<= ")
                .and_then(|c| c.split_once(": "))
                .unwrap_or_else(|| panic!("{line}"));
            let (figure, control) = rest.rsplit_once(", control ").unwrap();
            let (bound, value, noise) = (ratio(bound), ratio(figure), ratio(control));
            let want = if value <= bound {
                "met"
            } else if value <= bound * noise.max(1.0) {
                "within noise"
            } else {
                "**MISSED**"
            };
            assert_eq!(verdict, want, "{line}");
            if item == "every trace" {
                // The worst trace, named.
                let (worst, name) = figure.split_once(" (").unwrap();
                let named = summary_row(&page, &format!("trace {}", name.trim_end_matches(')')));
                assert_eq!(worst, named[2 * col], "{line}");
                let most = traces
                    .iter()
                    .map(|t| ratio(summary_row(&page, t)[2 * col]))
                    .fold(0.0, f64::max);
                assert_eq!(value, most, "{line}");
            } else {
                let summary = summary_row(&page, item);
                assert_eq!(figure, summary[2 * col], "{line}");
                assert_eq!(noise, ratio(summary[2 * col + 1]), "{line}");
            }
            judged += 1;
        }
    }
    assert_eq!(judged, 29, "{targets}");
    assert!(targets.contains("(Features forced"), "{targets}");

    // The independent harness times the routines the sites reach, at every
    // size it was given, against the trees' routines of this class.
    let harness = &page[page
        .find("## Without copygen")
        .expect("the harness section")..];
    for r in &reached {
        assert!(harness.contains(&format!(" {r}")), "{r}:\n{harness}");
    }
    assert!(harness.contains("--stock 6.12,6.1 "), "{harness}");
    for n in [1, 15, 64, 512, 8192] {
        assert!(
            harness.contains(&format!("\n{n} B @0 ")),
            "{n} B:\n{harness}"
        );
    }
    assert!(harness.contains("\nMemcpyGoogleD "), "{harness}");

    // The figures kernel-patch takes, and the emitted files the harness ran.
    for v in ["6.12", "6.1"] {
        let figures = std::fs::read_to_string(dir.join(format!("figures-{v}.txt"))).unwrap();
        assert!(
            figures.starts_with(&format!("Call sites as a {v} kernel")),
            "{figures}"
        );
        assert!(dir.join(format!("standalone-{v}.S")).is_file());
    }
}

#[test]
fn bad_arguments_are_refused_and_write_nothing() {
    for (args, needle) in [
        (&["--strategy", "5.10=guarded-movsb"][..], "--strategy"),
        (&["--strategy", "6.12"][..], "--strategy"),
        (&["--tune", "soon"][..], "--tune"),
        (&["--repeats", "0"][..], "--repeats"),
        (&["--sizes", "8"][..], "--sizes"),
    ] {
        let (_tmp, dir) = out_dir();
        let mut all = args.to_vec();
        all.extend(["--out", dir.to_str().unwrap()]);
        let o = script(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!dir.exists(), "{args:?} wrote {}", dir.display());
    }
    // An unknown strategy is refused before anything is measured.
    let (_tmp, dir) = out_dir();
    let o = script(&[
        "--strategy",
        "6.1=no-such-strategy",
        "--repeats",
        "1",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("no-such-strategy"), "{err}");
    assert!(!err.contains("measuring"), "{err}");
    assert!(!dir.exists());
}

#[test]
fn a_strategy_file_replaces_the_catalogs_and_tune_writes_beside_the_page() {
    if stock_object(KernelVersion::V6_1).is_none() || stock_object(KernelVersion::V6_12).is_none() {
        return;
    }
    let (_tmp, dir) = out_dir();
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/strategies/movs-alternative.toml");
    let o = script(&[
        "--repeats",
        "1",
        "--stock-features=-erms,-fsrm",
        "--strategy",
        &format!("6.12={}", file.display()),
        "--tune",
        "2",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let page = std::fs::read_to_string(dir.join("results.md")).unwrap();
    assert!(
        page.contains("| | Linux 6.12: movs-alternative.toml | 6.12 A/A | Linux 6.1: guarded-movsb | 6.1 A/A |"),
        "{page}"
    );
    // A strategy in rep_movs_alternative's convention without variants is
    // called where the tree's routine was; the harness times its entry.
    let [site, ..] = summary_row(&page, "patched site");
    assert!(site.ends_with("(call rep_movs_alternative)"), "{site}");
    let harness = &page[page.find("## Without copygen").unwrap()..];
    assert!(harness.contains(" movs_alternative_from_user"), "{harness}");
    for v in ["6.12", "6.1"] {
        assert!(
            page.contains(&format!("### {v}: tune --site kernel, 2 s")),
            "{page}"
        );
        let tuned = dir.join(format!("tuned-{v}.toml"));
        let o = Command::new(env!("CARGO_BIN_EXE_copygen"))
            .args(["emit", tuned.to_str().unwrap(), "-o", "-"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}
