//! The bench's sweeps and outputs: the kernel threads' tables have the rows
//! the threads had, the JSON has Google Benchmark's shape, and the plot renders.

use copygen::tools::bench::{
    self, baseline, google_benchmark_json, parse_list, plot_svg, run, table, text_table,
};

#[test]
fn seed_tables_have_the_seeds_rows() {
    let abeni = table("abeni").unwrap();
    assert_eq!(abeni.rows.len(), 65);
    assert_eq!((abeni.rows[0].n, abeni.rows[64].n), (0, 64));
    let wilson: Vec<usize> = table("wilson").unwrap().rows.iter().map(|r| r.n).collect();
    assert_eq!(wilson, [1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128]);
    let morton = table("morton").unwrap();
    assert_eq!(morton.rows.len(), 33);
    assert!(morton.rows.iter().all(|r| r.n == 8192 && r.src_off == 0));
    assert_eq!(morton.rows[0x1f].dst_off, 0x1f);
    assert!(table("anand").unwrap().rows.iter().all(|r| r.n == 1448));
    for r in table("alias").unwrap().rows {
        assert_eq!(
            (r.dst_off + 4096 - r.src_off) % 4096,
            r.x as usize,
            "{}",
            r.label
        );
    }
    assert!(table("nope").is_err());
}

#[test]
fn lists_and_ranges_parse() {
    assert_eq!(parse_list("1,2,0x10").unwrap(), [1, 2, 16]);
    assert_eq!(parse_list("0..=3").unwrap(), [0, 1, 2, 3]);
    assert_eq!(parse_list("0..3").unwrap(), [0, 1, 2]);
    assert_eq!(parse_list("64..=256:64").unwrap(), [64, 128, 192, 256]);
    assert!(parse_list("1,x").is_err());
    assert!(parse_list("5..").is_err());
}

fn small_run() -> bench::Results {
    let sweep = bench::custom(&[8, 64, 512], &[0], &[0, 3]);
    let subjects = vec![baseline("rep_movsb").unwrap(), baseline("memcpy").unwrap()];
    run(&sweep, &subjects, 3, &|_, _| {})
}

#[test]
fn a_run_measures_every_pair_and_copies_correctly() {
    let res = small_run();
    assert_eq!(res.cells.len(), 6);
    assert!(res
        .cells
        .iter()
        .flatten()
        .all(|c| c.cycles > 0.0 && c.iterations >= 1));
    let text = text_table(&res);
    assert!(
        text.contains("not core cycles") && text.contains("vs rep_movsb") && text.contains("IQR"),
        "{text}"
    );
    // Every cell's spread brackets its median.
    assert!(res
        .cells
        .iter()
        .flatten()
        .all(|c| c.min <= c.q1 && c.q1 <= c.cycles && c.cycles <= c.q3 && c.q3 <= c.max));
    // The baselines really copy.
    let src: Vec<u8> = (0..300u32).map(|i| (i * 7) as u8).collect();
    for b in bench::BASELINES {
        let mut dst = vec![0u8; 300];
        // SAFETY: both buffers hold 300 bytes.
        let left = unsafe { (b.1)(dst.as_mut_ptr(), src.as_ptr(), 299) };
        assert_eq!(left, 0);
        assert_eq!(&dst[..299], &src[..299], "{}", b.0);
        assert_eq!(dst[299], 0, "{} wrote past n", b.0);
    }
}

#[test]
fn json_has_google_benchmark_shape() {
    let res = small_run();
    let j = google_benchmark_json(&res);
    assert!(j["context"]["mhz_per_cpu"].as_u64().unwrap() > 0);
    assert_eq!(j["context"]["executable"], "copygen bench");
    let b = j["benchmarks"].as_array().unwrap();
    assert_eq!(b.len(), 12);
    for e in b {
        for key in [
            "name",
            "run_name",
            "run_type",
            "repetitions",
            "iterations",
            "real_time",
            "cpu_time",
            "time_unit",
        ] {
            assert!(e.get(key).is_some(), "missing {key} in {e}");
        }
        assert_eq!(e["run_type"], "iteration");
        assert_eq!(e["time_unit"], "ns");
        assert!(e["real_time"].as_f64().unwrap() > 0.0);
    }
    let names: std::collections::BTreeSet<_> = b
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names.len(),
        12,
        "names are unique, so compare tools can pair them"
    );
}

#[test]
fn the_plot_renders_a_line_per_subject() {
    let res = small_run();
    let svg = plot_svg(&res).unwrap();
    assert!(svg.starts_with("<svg"));
    // Two subjects times two offset series.
    assert!(
        svg.matches("<polyline").count() >= 4,
        "{}",
        svg.matches("<polyline").count()
    );
    // One panel per offset series, each with a legend entry per subject.
    assert!(svg.contains("src+0 dst+3") && svg.contains("src+0 dst+0"));
    assert_eq!(svg.matches(">\nrep_movsb\n<").count(), 2, "{svg}");
    assert_eq!(svg.matches(">\nmemcpy\n<").count(), 2);
}

/// The text labels of an SVG written by plotters (`<text ...>\nLABEL\n</text>`).
fn svg_labels(svg: &str) -> Vec<String> {
    svg.split("</text>")
        .filter_map(|t| t.rsplit_once(">\n").map(|(_, l)| l.trim().to_string()))
        .collect()
}

/// The tick labels of the horizontal axis: centred below their ticks (the
/// vertical axis's are right-aligned beside theirs, and follow the measured
/// times, so a busy machine moves them).
fn x_tick_labels(svg: &str) -> Vec<String> {
    svg.split("</text>")
        .filter(|t| {
            t.rsplit_once("<text")
                .is_some_and(|(_, e)| e.contains("dy=\"0.76em\" text-anchor=\"middle\""))
        })
        .filter_map(|t| t.rsplit_once(">\n").map(|(_, l)| l.trim().to_string()))
        .collect()
}

fn plot_of(res: &bench::Results) -> String {
    plot_svg(res).unwrap()
}

#[test]
fn sizes_spanning_decades_get_a_log_axis_with_integer_ticks() {
    let sweep = bench::custom(&[0, 1, 8, 64, 512, 4096], &[0], &[0]);
    let mut res = run(&sweep, &[baseline("rep_movsb").unwrap()], 2, &|_, _| {});
    res.command = "copygen bench rep_movsb --sizes 0,1,8,64,512,4096".into();
    let svg = plot_of(&res);
    let labels = svg_labels(&svg);
    let ticks = x_tick_labels(&svg);
    // Powers of two along the size axis (a linear axis would show 0..4000
    // in steps of 500), never a decimal ".0".
    for l in ["0", "1", "64", "1024", "4096"] {
        assert!(ticks.iter().any(|x| x == l), "no tick {l}: {ticks:?}");
    }
    assert!(!labels.iter().any(|l| l.ends_with(".0")), "{labels:?}");
    assert!(!ticks.iter().any(|l| l == "500"), "{ticks:?}");
    // A marker per measured point, and the title says what ran.
    assert!(svg.matches("<circle").count() >= 6);
    assert!(labels
        .iter()
        .any(|l| l.contains("--sizes 0,1,8,64,512,4096")));
}

#[test]
fn the_alias_sweep_spaces_distances_evenly_and_shades_the_band() {
    let res = run(
        &bench::Sweep {
            name: "alias".into(),
            title: "alias".into(),
            x_label: "(dst - src) mod 4096".into(),
            rows: bench::alias_rows(&[256], &bench::alias_offsets()),
            ..bench::Sweep::default()
        },
        &[baseline("rep_movsb").unwrap()],
        1,
        &|_, _| {},
    );
    let svg = plot_of(&res);
    let labels = svg_labels(&svg);
    for l in ["0", "8", "16", "24", "32", "64", "128"] {
        assert!(labels.iter().any(|x| x == l), "no tick {l}: {labels:?}");
    }
    // Labels thinned, not one per distance 0..=72.
    for l in ["37", "65", "66"] {
        assert!(!labels.iter().any(|x| x == l), "{labels:?}");
    }
    // Both bands shaded.
    assert_eq!(svg.matches("fill=\"#E6501E\"").count(), 2, "band shading");
    // Tick x positions are evenly spaced: 15 and 16 as far apart as 0 and 1.
    let x_of = |label: &str| -> f64 {
        let t = svg
            .split("</text>")
            .find(|t| t.ends_with(&format!(">\n{label}\n")) && t.contains("text-anchor=\"middle\""))
            .unwrap();
        let x = t.rsplit_once("<text x=\"").unwrap().1;
        x[..x.find('"').unwrap()].parse().unwrap()
    };
    // Measured distances evenly spaced: 0..=72 one step apart, then 96 and
    // 128 (a linear axis would put 128 64 steps after 64, not 10).
    let step = (x_of("16") - x_of("0")) / 16.0;
    assert!(step > 5.0);
    assert!(((x_of("32") - x_of("16")) - 16.0 * step).abs() <= 2.0);
    assert!(((x_of("128") - x_of("64")) - 10.0 * step).abs() <= 2.0);
}

/// ARM code runs on this host only under qemu: the bench refuses to time
/// it, and says why, instead of printing emulator timings.
#[test]
fn the_bench_refuses_emulated_code_and_says_so() {
    for (name, arch) in [("arm64-template", "aarch64"), ("ldm-stm", "armv6")] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_copygen"))
            .args(["bench", name, "--sizes", "8"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("is {arch} code"))
                && err.contains("only under qemu emulation")
                && err.contains("does not time it"),
            "{name}: {err}"
        );
        assert!(out.stdout.is_empty(), "{name}: nothing measured");
    }
}

fn copygen(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

/// `--json` and `--plot` are written together or not at all, a path that
/// cannot be written is refused before the run (exit 2, naming the
/// option), and a write that fails is an error (exit 1), not "wrote".
#[test]
fn bench_outputs_are_checked_first_and_written_together() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("folder")).unwrap();
    let run = [
        "bench",
        "rep_movsb",
        "--sizes",
        "8",
        "--repeats",
        "1",
        "--calls",
        "1",
    ];
    let with = |extra: &[&str]| copygen(&[&run[..], extra].concat(), d);
    for (extra, why) in [
        (
            &["--json", "a.json", "--plot", "folder"][..],
            "error: --plot: folder is a folder, not a file",
        ),
        (
            &["--json", "a.json", "--plot", "a.json"][..],
            "error: a.json is written twice in one run",
        ),
    ] {
        let o = with(extra);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.starts_with(why), "{extra:?}: {err}");
        assert!(o.stdout.is_empty(), "{extra:?}: it ran");
        assert!(!d.join("a.json").exists(), "{extra:?}");
    }
    // A failed write of the plot is an error, and the JSON beside it is
    // not left behind.
    if std::path::Path::new("/dev/full").exists() {
        let o = with(&["--json", "a.json", "--plot", "/dev/full"]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert!(!err.contains("wrote"), "{err}");
        assert!(!d.join("a.json").exists());
    }
    // A new folder is made for the plot, as for the JSON.
    let o = with(&["--json", "new/a.json", "--plot", "new/p.svg"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let svg = std::fs::read_to_string(d.join("new/p.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(d.join("new/a.json").is_file());
}

/// Bytes that are not UTF-8 in a CSV input are reported at their line and
/// column, as in a strategy file.
#[test]
fn a_byte_that_is_not_utf8_is_reported_at_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("t.csv"),
        b"direction,size,dst_offset,src_offset\nfrom,8,0,0\nfrom,\xc3\xa9\xff8,0,0\n",
    )
    .unwrap();
    let o = copygen(&["bench", "--workload", "t.csv", "rep_movsb"], d);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // Line 3; `from,` and `é` (one character of two bytes) before it.
    assert!(
        err.contains("not UTF-8 text: byte 0xff at line 3, column 7 (offset 55)"),
        "{err}"
    );
}
