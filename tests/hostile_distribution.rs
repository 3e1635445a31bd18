//! Distribution weights whose sum overflows: refused where the sum leaves
//! the finite numbers, not read as probabilities of 0 and a mean of 0 B.

use copygen::tools::bench::distribution::Distribution;

#[test]
fn weights_summing_past_the_largest_number_are_located_errors() {
    let e = Distribution::parse("d", "d.csv", "0, 1e308, 1e308, 5\n").expect_err("overflows");
    let msg = format!("{e:#}");
    assert!(
        msg.starts_with("d.csv:1:10: error: weight of size 2 "),
        "{msg}"
    );
    // Each weight finite and the sum too: accepted, with its real mean.
    let d = Distribution::parse("d", "d.csv", "0, 1e307, 1e307").expect("finite");
    assert!((d.mean - 1.5).abs() < 1e-9, "{}", d.mean);
}

#[test]
fn bench_refuses_an_overflowing_distribution_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("inf.csv");
    std::fs::write(&csv, "1e308,1e308\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["bench", "rep-movsb", "--calls", "10", "--distribution"])
        .arg(&csv)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("inf.csv:1:7: error: weight of size 1"),
        "{err}"
    );
}
