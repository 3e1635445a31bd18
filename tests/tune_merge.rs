//! `copygen tune --merge` and the strategy → TOML renderer under it: a
//! rendered strategy parses back to itself (the catalog, and random merged
//! strategies), a merge orders its variants by CPU feature bits with one
//! default and is fault-checked, and bad inputs are located errors that
//! write nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use copygen::front::catalog::catalog;
use copygen::front::parse;
use copygen::front::strategy::{Precision, Strategy};
use copygen::front::to_toml::render;
use copygen::front::variant::CpuFeature;
use copygen::tools::bench::Rng;
use copygen::tools::tune::merge::{merge, Input};
use copygen::tools::tune::{Candidate, CandidateBase, CpuInfo};
use proptest::prelude::*;

fn copygen() -> Command {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
}

/// `b` as parsed from a file, compared with `a` built in memory: only the
/// fields naming the file may differ.
fn assert_same(a: &Strategy, b: &Strategy, text: &str) {
    let mut b = b.clone();
    b.source = a.source.clone();
    b.file = a.file.clone();
    b.text = a.text.clone();
    assert_eq!(*a, b, "rendered:\n{text}");
}

#[test]
fn every_catalog_strategy_renders_to_a_file_that_parses_back_to_it() {
    for s in catalog().unwrap() {
        let text = render(&s).unwrap();
        let back = parse::parse(Path::new("r.toml"), &text, None)
            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", s.name));
        assert_same(&s, &back, &text);
    }
}

fn cpu(vendor: &str, family: u32, model: u32, erms: bool, fsrm: bool) -> CpuInfo {
    CpuInfo {
        vendor: vendor.into(),
        family,
        model,
        stepping: 0,
        erms,
        fsrm,
        rep_good: true,
        name: String::new(),
    }
}

/// A tune result as `copygen tune` writes one: a candidate with comments
/// and the CPU in its `[tuned_on]` table.
fn tuned(c: &Candidate, cpu: &CpuInfo, file: &str) -> Input {
    tuned_with(c, cpu, file, Precision::Exact)
}

/// [`tuned`], for a strategy of `precision`.
fn tuned_with(c: &Candidate, cpu: &CpuInfo, file: &str, precision: Precision) -> Input {
    let mut h = CandidateBase::new("tuned");
    h.comments = vec!["Tuned for the test.".into()];
    h.tuned_on = Some(cpu.tuned_on());
    h.precision = precision;
    Input {
        path: PathBuf::from(file),
        text: c.toml(&h),
    }
}

fn random_candidate(seed: u64) -> Candidate {
    let mut rng = Rng::new(seed);
    let seeds = Candidate::seeds();
    let mut c = seeds[(seed % seeds.len() as u64) as usize].clone();
    for _ in 0..(seed % 7) {
        c = c.mutate(&mut rng);
    }
    c
}

const CPUS: &[(&str, u32, u32, bool, bool)] = &[
    ("AuthenticAMD", 0x19, 0x11, true, true),
    ("GenuineIntel", 0x6, 0xa7, true, true),
    ("AuthenticAMD", 0x17, 0x31, true, false),
    ("GenuineIntel", 0x6, 0x3f, true, false),
    ("GenuineIntel", 0x6, 0x0f, false, false),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn a_merge_of_random_tune_results_parses_back_to_itself(
        seeds in proptest::collection::vec(any::<u64>(), 2..=4),
        pick in any::<u64>(),
    ) {
        // Distinct CPUs with distinct feature sets: every CPUS entry differs
        // in its bits, so any subset merges.
        let n = seeds.len();
        let start = (pick % CPUS.len() as u64) as usize;
        let inputs: Vec<Input> = seeds
            .iter()
            .enumerate()
            .map(|(i, &seed)| {
                let (v, f, m, e, s) = CPUS[(start + i) % CPUS.len()];
                tuned(&random_candidate(seed), &cpu(v, f, m, e, s), &format!("t{i}.toml"))
            })
            .collect();
        let (merged, text) = merge(&inputs, None).unwrap();
        let back = parse::parse(Path::new("m.toml"), &text, None)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_same(&merged, &back, &text);
        prop_assert_eq!(back.variants.len(), n);
        // First match: required bits never grow down the list, one default.
        let bits: Vec<usize> = back.variants.iter().map(|v| v.when.as_ref().map_or(0, |c| c.any[0].require.len())).collect();
        prop_assert!(bits.windows(2).all(|w| w[0] >= w[1]), "{:?}", bits);
        prop_assert!(back.variants.last().unwrap().when.is_none());
        prop_assert!(back.variants[..n - 1].iter().all(|v| v.when.is_some()));
    }
}

#[test]
fn the_merge_gives_each_cpu_its_own_result_under_its_feature_bits() {
    let zen = cpu("AuthenticAMD", 0x19, 0x11, true, true);
    let intel = cpu("GenuineIntel", 0x6, 0xa7, true, true);
    let guarded = Candidate::bare_guarded();
    let plain = Candidate {
        narrow: 0,
        ..Candidate::bare_guarded()
    };
    // Given Intel first: the Zen result still comes first (more bits).
    let inputs = [
        tuned(&plain, &intel, "intel.toml"),
        tuned(&guarded, &zen, "zen.toml"),
    ];
    let (s, _) = merge(&inputs, Some("percpu")).unwrap();
    assert_eq!(s.name, "percpu");
    let zen_v = &s.variants[0];
    assert_eq!(zen_v.name, "amd_f19_m11");
    let when = zen_v.when.as_ref().unwrap();
    assert_eq!(when.any.len(), 1, "{when}");
    let when = &when.any[0];
    assert!(when.require.contains(&CpuFeature::Zen), "{when}");
    assert!(!zen_v.classes[0].guards.is_empty());
    assert_eq!(s.variants[1].name, "intel_f6_ma7");
    assert!(s.variants[1].when.is_none());
    assert!(s.variants[1].classes[0].guards.is_empty());
    // Without another input of the same zen/fsrm/erms bits, no generation bit.
    assert!(!when.require.contains(&CpuFeature::Zen4), "{when}");
}

#[test]
fn a_zen_3_and_a_zen_4_result_are_told_apart_by_the_generation_bit() {
    let zen4 = cpu("AuthenticAMD", 0x19, 0x11, true, true);
    let zen3 = cpu("AuthenticAMD", 0x19, 0x01, true, true);
    let intel = cpu("GenuineIntel", 0x6, 0xa7, true, true);
    let c = Candidate::bare_guarded();
    let inputs = [
        tuned(&c, &zen3, "zen3.toml"),
        tuned(&c, &zen4, "zen4.toml"),
        tuned(&c, &intel, "intel.toml"),
    ];
    let (s, text) = merge(&inputs, None).unwrap();
    let when = |i: usize| s.variants[i].when.as_ref().map(|c| c.to_string());
    assert_eq!(
        when(0).as_deref(),
        Some("zen && zen3 && fsrm && erms"),
        "{text}"
    );
    assert_eq!(
        when(1).as_deref(),
        Some("zen && zen4 && fsrm && erms"),
        "{text}"
    );
    assert_eq!(when(2), None);
    assert_eq!(merged_parses_back(&inputs).variants.len(), 3);
}

/// Writes the inputs into a fresh folder and runs `copygen tune --merge`.
fn run_merge(dir: &Path, inputs: &[(&str, String)]) -> (std::process::Output, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let out = dir.join("out.toml");
    let _ = std::fs::remove_file(&out);
    let mut cmd = copygen();
    cmd.arg("tune").arg("--merge");
    for (name, text) in inputs {
        std::fs::write(dir.join(name), text).unwrap();
        cmd.arg(dir.join(name));
    }
    let o = cmd.arg("-o").arg(&out).output().unwrap();
    (o, out)
}

#[test]
fn the_cli_writes_a_fault_checked_per_cpu_strategy() {
    let dir = std::env::temp_dir().join(format!("copygen-merge-ok-{}", std::process::id()));
    let zen = tuned(
        &Candidate::bare_guarded(),
        &cpu("AuthenticAMD", 0x19, 0x11, true, true),
        "a",
    );
    let intel = tuned(
        &Candidate {
            narrow: 0,
            ..Candidate::bare_guarded()
        },
        &cpu("GenuineIntel", 0x6, 0xa7, true, true),
        "b",
    );
    let (o, out) = run_merge(&dir, &[("zen.toml", zen.text), ("intel.toml", intel.text)]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("tuned__amd_f19_m11_from_user"), "{err}");
    let s = parse::load(&out, None).unwrap();
    assert_eq!(s.variants.len(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_merge_inputs_are_located_errors_and_write_nothing() {
    let dir = std::env::temp_dir().join(format!("copygen-merge-bad-{}", std::process::id()));
    let c = Candidate::bare_guarded();
    let zen = cpu("AuthenticAMD", 0x19, 0x11, true, true);
    // Another Zen 4 model: the same bits, the Zen generation included.
    let zen3 = cpu("AuthenticAMD", 0x19, 0x61, true, true);
    let intel = cpu("GenuineIntel", 0x6, 0xa7, true, true);
    let a = tuned(&c, &zen, "a").text;
    let i386 = a.replace("arch = \"x86_64\"", "arch = \"i386\"");
    let block = tuned_with(&c, &intel, "b", Precision::Block).text;
    let table_line = a.lines().position(|l| l == "[tuned_on]").unwrap() + 1;
    let same_cpu = format!("b.toml:{table_line}: error: ");
    let cases: Vec<(Vec<(&str, String)>, &str)> = vec![
        (
            vec![("a.toml", a.clone()), ("b.toml", a.clone())],
            &same_cpu,
        ),
        (
            vec![
                ("a.toml", a.clone()),
                ("b.toml", tuned(&c, &zen3, "b").text),
            ],
            "same feature bits",
        ),
        (vec![("a.toml", a.clone()), ("b.toml", i386)], "b.toml"),
        (
            vec![("a.toml", a.clone()), ("b.toml", block)],
            "`precision` differs",
        ),
        (
            vec![
                ("a.toml", a.clone()),
                ("b.toml", c.toml(&CandidateBase::new("tuned"))),
            ],
            "b.toml:1: error: no `[tuned_on]` table",
        ),
        (
            vec![
                ("a.toml", a.replace("\"fsrm\"", "\"maybe\"")),
                ("b.toml", tuned(&c, &intel, "b").text),
            ],
            "unknown CPU feature \"maybe\"",
        ),
        (vec![("a.toml", a.clone())], "at least two"),
    ];
    for (inputs, want) in cases {
        let (o, out) = run_merge(&dir, &inputs);
        let err = String::from_utf8_lossy(&o.stderr);
        if inputs.len() > 1 {
            assert_eq!(o.status.code(), Some(2), "{want}: {err}");
            assert!(err.contains(want), "want {want:?} in:\n{err}");
        } else {
            // clap refuses a single file (num_args = 2..).
            assert_eq!(o.status.code(), Some(2), "{err}");
        }
        assert!(!out.exists(), "{want}: something was written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The merge's text parsed back, compared with the strategy it stands for.
fn merged_parses_back(inputs: &[Input]) -> Strategy {
    let (s, text) = merge(inputs, None).unwrap();
    let back =
        parse::parse(Path::new("m.toml"), &text, None).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_same(&s, &back, &text);
    back
}

#[test]
fn a_file_name_cannot_inject_toml_into_the_merged_output() {
    let zen = cpu("AuthenticAMD", 0x19, 0x11, true, true);
    let intel = cpu("GenuineIntel", 0x6, 0xa7, true, true);
    let c = Candidate::bare_guarded();
    let plain = [tuned(&c, &zen, "a.toml"), tuned(&c, &intel, "b.toml")];
    let hostile_name = "a\n[linux]\nuaccess = \"caller\"\n#.toml";
    let hostile = [
        tuned(&c, &zen, hostile_name),
        tuned(&c, &intel, "b\r\n[fault]\n.toml"),
    ];
    let want = merged_parses_back(&plain);
    let mut got = merged_parses_back(&hostile);
    // The names are in the description, their control characters escaped.
    let shown = r#"a\n[linux]\nuaccess = "caller"\n#.toml"#;
    assert!(got.description.contains(shown), "{}", got.description);
    got.description = want.description.clone();
    got.text = want.text.clone();
    assert_eq!(got, want);
    assert_eq!(
        got.linux.uaccess,
        copygen::front::strategy::Uaccess::Routine
    );
    // Every line of the comment block is one comment.
    let (_, text) = merge(&hostile, None).unwrap();
    let head: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("name ="))
        .collect();
    assert!(
        head.iter().all(|l| l.is_empty() || l.starts_with('#')),
        "{text}"
    );
}

fn tuned_on_error(edit: impl Fn(&str) -> String) -> String {
    let c = Candidate::bare_guarded();
    let text = edit(&tuned(&c, &cpu("AuthenticAMD", 0x19, 0x11, true, true), "t.toml").text);
    match parse::parse(Path::new("t.toml"), &text, None) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_tuned_on_table_is_validated_with_located_errors() {
    let c = Candidate::bare_guarded();
    let text = tuned(&c, &cpu("AuthenticAMD", 0x19, 0x11, true, true), "t.toml").text;
    let line = |key: &str| text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
    let s = parse::parse(Path::new("t.toml"), &text, None).unwrap();
    let t = s.tuned_on.unwrap();
    assert_eq!(
        (t.vendor.as_str(), t.family, t.model),
        ("AuthenticAMD", 0x19, 0x11)
    );
    assert_eq!(
        t.features,
        [
            CpuFeature::Erms,
            CpuFeature::Fsrm,
            CpuFeature::Zen,
            CpuFeature::Zen4,
            CpuFeature::RepGood
        ]
    );
    let cases: Vec<(String, String, &str)> = vec![
        (
            tuned_on_error(|t| t.replace("\"AuthenticAMD\"", "\"Authentic\\nAMD\"")),
            format!("t.toml:{}", line("vendor")),
            "not a CPUID vendor string",
        ),
        (
            tuned_on_error(|t| t.replace("family = 0x19", "family = 0x200")),
            format!("t.toml:{}", line("family")),
            "the largest CPUID reports",
        ),
        (
            tuned_on_error(|t| t.replace("model = 0x11", "model = 0x100")),
            format!("t.toml:{}", line("model")),
            "the largest CPUID reports",
        ),
        (
            tuned_on_error(|t| t.replace("\"zen\", ", "")),
            format!("t.toml:{}", line("features")),
            "so list it",
        ),
        (
            tuned_on_error(|t| t.replace("\"zen4\"", "\"zen3\"")),
            format!("t.toml:{}", line("features")),
            "is `zen4`, so list it and no other",
        ),
        (
            tuned_on_error(|t| t.replace("\"erms\"", "\"fsrm\"")),
            format!("t.toml:{}", line("features")),
            "listed twice",
        ),
        (
            tuned_on_error(|t| t.replace("model = 0x11", "model = 0x11\nstepping = 1")),
            format!("t.toml:{}", line("model") + 1),
            "stepping",
        ),
        (
            tuned_on_error(|t| t.replace("arch = \"x86_64\"", "arch = \"aarch64\"")),
            "t.toml:".into(),
            "has no CPUID",
        ),
    ];
    for (err, at, what) in cases {
        assert!(
            err.contains(&at) && err.contains(what),
            "want {at} and {what:?} in:\n{err}"
        );
    }
}
