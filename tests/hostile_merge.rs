//! `copygen tune --merge` given inputs and options that cannot merge: the
//! error names the option or the inputs that caused it, never a line of an
//! output file that is not written; a table of the wrong kind
//! (`[[tuned_on]]`) names its own keys, not the previous table's.

use std::path::Path;
use std::process::{Command, Output};

/// A tune result as `copygen tune` writes one, for a CPU of `vendor`.
fn tuned(vendor: &str, model: u32, features: &str, header: &str) -> String {
    format!(
        r#"name = "tuned"
arch = "x86_64"
description = "t"

[fault]
precision = "exact"

{header}
vendor = "{vendor}"
family = 6
model = {model}
features = [{features}]

[methods.movsb]
kind = "rep_movs"
unit = 1

[[dispatch]]
sizes = "0.."
use = "movsb"
"#
    )
}

fn merge(dir: &Path, files: &[(&str, String)], extra: &[&str]) -> Output {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["tune", "--merge"])
        .args(files.iter().map(|f| f.0))
        .args(extra)
        .args(["-o", "out.toml"])
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn a_bad_name_option_is_reported_at_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("a.toml", tuned("GenuineIntel", 1, "\"erms\"", "[tuned_on]")),
        (
            "b.toml",
            tuned("AuthenticAMD", 2, "\"erms\", \"fsrm\"", "[tuned_on]"),
        ),
    ];
    for name in ["per cpu", "", "x\u{1b}y"] {
        let out = merge(dir.path(), &files, &["--name", name]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name:?}: {err}");
        assert!(err.starts_with("error: --name `"), "{name:?}: {err}");
        assert!(
            !err.contains("out.toml") && !err.contains("merged.toml"),
            "{err}"
        );
        assert!(!dir.path().join("out.toml").exists());
    }
}

#[test]
fn two_unknown_vendors_of_one_family_and_model_are_reported_at_the_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("a.toml", tuned("VendorA", 1, "\"erms\"", "[tuned_on]")),
        (
            "b.toml",
            tuned("VendorB", 1, "\"erms\", \"fsrm\"", "[tuned_on]"),
        ),
    ];
    let out = merge(dir.path(), &files, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("b.toml:8: error: a.toml and this file"),
        "{err}"
    );
    assert!(err.contains("`VendorA` and `VendorB`"), "{err}");
    assert!(
        !err.contains("out.toml") && !err.contains("merged.toml"),
        "{err}"
    );
    assert!(!dir.path().join("out.toml").exists());
}

#[test]
fn keys_of_an_array_of_tables_where_one_table_is_wanted_keep_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "a.toml",
            tuned("GenuineIntel", 1, "\"erms\"", "[[tuned_on]]"),
        ),
        ("b.toml", tuned("AuthenticAMD", 2, "\"erms\"", "[tuned_on]")),
    ];
    let out = merge(dir.path(), &files, &[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("a.toml:8:1: error in `tuned_on"), "{err}");
    assert!(err.contains("`[tuned_on]`"), "{err}");
    // Its keys are not another table's unknown fields.
    assert!(
        !err.contains("fault.vendor") && !err.contains("`vendor`"),
        "{err}"
    );
    // The same for emit: a `[dispatch]` table where `[[dispatch]]` is wanted.
    let text =
        tuned("GenuineIntel", 1, "\"erms\"", "[tuned_on]").replace("[[dispatch]]", "[dispatch]");
    std::fs::write(dir.path().join("c.toml"), text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["emit", "c.toml"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`[[dispatch]]`"), "{err}");
    assert!(!err.contains("methods.movsb.sizes"), "{err}");
    assert_eq!(err.matches(": error in ").count(), 1, "{err}");
}
