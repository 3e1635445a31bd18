//! The bench's sweeps and outputs: the seeds' tables have the rows the
//! seeds had, the JSON has Google Benchmark's shape, and the plot renders.

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
        text.contains("not core cycles") && text.contains("rep_movsb") && text.contains("ratio"),
        "{text}"
    );
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
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("p.svg");
    plot_svg(&res, &p).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
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
