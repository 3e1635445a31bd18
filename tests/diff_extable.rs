//! `copygen diff`'s exception-table entries of changed functions: each
//! entry as `instruction → fixup` with its type, old paired with new, a
//! type change marked as one (a function whose only change is its entries'
//! type is a changed function), a swapped fixup as two changed entries, in
//! the text report and in `--json`; files that do not differ have no
//! entry section.
//!
//! Tools: gcc (assembling).

use std::path::Path;
use std::process::{Command, Output};

use copygen::front::strategy::Flavor;
use copygen::tools::diff::{self, Change, DiffOptions, DiffReport, ExtablePair};

const BIN: &str = env!("CARGO_BIN_EXE_copygen");
const SECTION: &str = "# __ex_table entries of changed functions";

fn repo(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn copygen(args: &[&str], cwd: &Path) -> String {
    let o: Output = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run copygen");
    assert!(
        o.status.success(),
        "copygen {args:?} failed ({:?}):\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn report(dir: &Path, old: &str, new: &str, flavor: Option<Flavor>) -> DiffReport {
    let opts = DiffOptions {
        cwd: Some(dir.to_path_buf()),
        flavor,
        ..DiffOptions::default()
    };
    diff::run(old, new, &opts).unwrap_or_else(|e| panic!("{e:#}"))
}

/// The entry section of a text report (its title to the next blank line).
fn section(out: &str) -> &str {
    let from = out
        .find(SECTION)
        .unwrap_or_else(|| panic!("no entry section:\n{out}"));
    let rest = &out[from..];
    &rest[..rest.find("\n\n").unwrap_or(rest.len())]
}

/// 6.1's `_ASM_EXTABLE_CPY` made `_ASM_EXTABLE_UA` in an emitted x86_64
/// linux file: the same code, only the entries' type word differs.
fn copy_to_uaccess(text: &str) -> String {
    let from = "#define COPYGEN_EXTABLE(insn, fixup)\t_ASM_EXTABLE_CPY(insn, fixup)\n";
    assert!(text.contains(from), "the entry macro moved");
    text.replacen(
        from,
        "#define COPYGEN_EXTABLE(insn, fixup)\t_ASM_EXTABLE_UA(insn, fixup)\n",
        1,
    )
}

fn assert_type_changes(pairs: &[ExtablePair], name: &str) {
    assert!(!pairs.is_empty(), "{name}: no entries");
    for p in pairs {
        let (o, n) = (p.old.as_ref().unwrap(), p.new.as_ref().unwrap());
        assert_eq!(p.status, Change::Modified, "{name}: {p:?}");
        assert_eq!(p.changed, ["type"], "{name}: {p:?}");
        assert_eq!(o.entry_type.as_deref(), Some("EX_TYPE_COPY"), "{name}");
        assert_eq!(n.entry_type.as_deref(), Some("EX_TYPE_UACCESS"), "{name}");
        assert_eq!((&o.insn, &o.fixup), (&n.insn, &n.fixup), "{name}");
    }
}

#[test]
fn a_type_only_change_is_a_changed_function_with_its_entries_marked() {
    let dir = tempfile::tempdir().unwrap();
    let text = repo("emitted/x86_64/linux/rep-movsb.S");
    std::fs::write(dir.path().join("a.S"), &text).unwrap();
    std::fs::write(dir.path().join("b.S"), copy_to_uaccess(&text)).unwrap();

    let r = report(dir.path(), "a.S", "b.S", None);
    let names: Vec<&str> = r.changed.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["rep_movsb_from_user", "rep_movsb_to_user"]);
    assert!(
        r.entries.rows.iter().all(|x| x.delta == 0),
        "{:?}",
        r.entries
    );
    for c in &r.changed {
        assert!(
            c.diff.is_empty(),
            "{}: the code changed:\n{}",
            c.name,
            c.diff
        );
        assert_eq!(c.extable.len() as u64, c.new_entries.unwrap());
        assert_type_changes(&c.extable, &c.name);
    }

    let out = copygen(&["diff", "a.S", "b.S"], dir.path());
    let s = section(&out);
    let marked: Vec<&str> = s.lines().filter(|l| l.starts_with("  ~ ")).collect();
    assert_eq!(marked.len(), 4, "{s}");
    for l in &marked {
        assert!(
            l.ends_with("; type changed: EX_TYPE_COPY \u{2192} EX_TYPE_UACCESS"),
            "{l}"
        );
        assert!(l.contains(" \u{2192} L"), "{l}: no fixup label");
    }
    assert!(s.contains("\nrep_movsb_from_user\n"), "{s}");
    // The new section sits between the two tables and the listings.
    let at = |t: &str| out.find(t).unwrap_or_else(|| panic!("{t}:\n{out}"));
    assert!(at("# __ex_table entries per function") < at(SECTION));
    assert!(at(SECTION) < at("# instructions of changed functions"));

    let v: serde_json::Value =
        serde_json::from_str(&copygen(&["diff", "a.S", "b.S", "--json"], dir.path())).unwrap();
    let changed = v["changed"].as_array().unwrap();
    assert_eq!(changed.len(), 2, "{v:#}");
    for c in changed {
        let pairs = c["extable"].as_array().unwrap();
        assert_eq!(pairs.len(), 2, "{c:#}");
        for p in pairs {
            assert_eq!(p["status"], "modified", "{p:#}");
            assert_eq!(p["changed"], serde_json::json!(["type"]), "{p:#}");
            assert_eq!(p["old"]["type"], "EX_TYPE_COPY", "{p:#}");
            assert_eq!(p["new"]["type"], "EX_TYPE_UACCESS", "{p:#}");
            assert_eq!(p["old"]["insn"], p["new"]["insn"], "{p:#}");
            assert_eq!(p["old"]["fixup"], p["new"]["fixup"], "{p:#}");
            assert_eq!(p["new"]["kind"], "relative", "{p:#}");
            assert!(p["new"]["data"].is_null(), "{p:#}");
        }
    }
}

#[test]
fn a_strategy_switched_to_relative_entries_shows_the_type_change() {
    let dir = tempfile::tempdir().unwrap();
    let text = repo("generator/strategies/rep-movsb.toml");
    let from = "uaccess = \"caller\"\n";
    assert!(text.contains(from), "rep-movsb.toml changed");
    std::fs::write(dir.path().join("old.toml"), &text).unwrap();
    std::fs::write(
        dir.path().join("new.toml"),
        text.replacen(from, "uaccess = \"caller\"\nextable = \"relative\"\n", 1),
    )
    .unwrap();
    let r = report(dir.path(), "old.toml", "new.toml", Some(Flavor::Linux));
    assert_eq!(r.changed.len(), 2, "{:?}", r.changed);
    for c in &r.changed {
        assert_type_changes(&c.extable, &c.name);
    }
    let out = copygen(
        &["diff", "old.toml", "new.toml", "--flavor", "linux"],
        dir.path(),
    );
    assert_eq!(
        section(&out)
            .matches("type changed: EX_TYPE_COPY \u{2192} EX_TYPE_UACCESS")
            .count(),
        4,
        "{out}"
    );
}

#[test]
fn swapped_fixups_are_two_changed_entries() {
    let dir = tempfile::tempdir().unwrap();
    let text = repo("emitted/x86_64/standalone/unrolled64.S");
    let (a, b) = (
        "\t.long\t.Lto_unrolled_loop_store1 - ., .Lto_fixup_8_then_retry - .\n",
        "\t.long\t.Lto_unrolled_loop_store2 - ., .Lto_fixup_16_then_retry - .\n",
    );
    let both = format!("{a}{b}");
    assert!(text.contains(&both), "the entry lines moved");
    let swapped = text.replacen(
        &both,
        "\t.long\t.Lto_unrolled_loop_store1 - ., .Lto_fixup_16_then_retry - .\n\
         \t.long\t.Lto_unrolled_loop_store2 - ., .Lto_fixup_8_then_retry - .\n",
        1,
    );
    std::fs::write(dir.path().join("a.S"), &text).unwrap();
    std::fs::write(dir.path().join("b.S"), &swapped).unwrap();

    let r = report(dir.path(), "a.S", "b.S", None);
    assert_eq!(r.changed.len(), 1, "{:?}", r.changed);
    let c = &r.changed[0];
    assert_eq!(c.name, "unrolled64_to_user");
    let modified: Vec<&ExtablePair> = c
        .extable
        .iter()
        .filter(|p| p.status != Change::Unchanged)
        .collect();
    assert_eq!(modified.len(), 2, "{:#?}", c.extable);
    for p in &modified {
        assert_eq!(p.status, Change::Modified, "{p:?}");
        assert_eq!(p.changed, ["fixup"], "{p:?}");
        assert_eq!(p.old.as_ref().unwrap().entry_type, None, "8-byte entries");
    }
    let (x, y) = (modified[0], modified[1]);
    let fixup = |p: Option<&copygen::tools::diff::ExtableRow>| p.unwrap().fixup.clone();
    // The fixups cross, under the same names on both sides.
    assert_ne!(fixup(x.old.as_ref()), fixup(y.old.as_ref()));
    assert_eq!(fixup(x.old.as_ref()), fixup(y.new.as_ref()));
    assert_eq!(fixup(y.old.as_ref()), fixup(x.new.as_ref()));
    // Every other entry of the function is there, unchanged.
    assert_eq!(c.extable.len() as u64, c.old_entries.unwrap());

    let out = copygen(&["diff", "a.S", "b.S"], dir.path());
    let s = section(&out);
    let marked: Vec<&str> = s.lines().filter(|l| l.starts_with("  ~ ")).collect();
    assert_eq!(marked.len(), 2, "{s}");
    let want = format!(
        "; fixup changed: {} \u{2192} {}",
        fixup(x.old.as_ref()),
        fixup(x.new.as_ref())
    );
    assert!(marked[0].ends_with(&want), "{}\nwant {want}", marked[0]);
    assert!(marked[0].contains(" 8(%rdi)"), "{}", marked[0]);
    assert_eq!(
        s.lines().filter(|l| l.starts_with("    ")).count() as u64,
        c.old_entries.unwrap() - 2,
        "{s}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&copygen(&["diff", "a.S", "b.S", "--json"], dir.path())).unwrap();
    let pairs = v["changed"][0]["extable"].as_array().unwrap();
    let marks: Vec<&str> = pairs
        .iter()
        .map(|p| p["status"].as_str().unwrap())
        .collect();
    assert_eq!(marks.iter().filter(|m| **m == "modified").count(), 2);
    assert_eq!(
        marks.iter().filter(|m| **m == "unchanged").count(),
        marks.len() - 2
    );
}

#[test]
fn unchanged_files_and_unchanged_entries_show_no_entry_section() {
    let dir = tempfile::tempdir().unwrap();
    let text = repo("emitted/x86_64/linux/rep-movsb.S");
    std::fs::write(dir.path().join("a.S"), &text).unwrap();
    std::fs::write(dir.path().join("b.S"), &text).unwrap();
    let out = copygen(&["diff", "a.S", "b.S"], dir.path());
    assert!(!out.contains(SECTION), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&copygen(&["diff", "a.S", "b.S", "--json"], dir.path())).unwrap();
    assert_eq!(v["changed"], serde_json::json!([]), "{v:#}");

    // Code that changes but keeps its entries: a changed function, no
    // entries listed for it.
    let xor = "\txorl\t%ecx, %ecx\n";
    let nop = text.replacen(xor, &format!("{xor}\tnop\n"), 1);
    assert_ne!(nop, text);
    std::fs::write(dir.path().join("b.S"), &nop).unwrap();
    let r = report(dir.path(), "a.S", "b.S", None);
    assert!(!r.changed.is_empty());
    assert!(
        r.changed.iter().all(|c| c.extable.is_empty()),
        "{:?}",
        r.changed
    );
    let out = copygen(&["diff", "a.S", "b.S"], dir.path());
    assert!(!out.contains(SECTION), "{out}");
    assert!(out.contains("\n+\tnop\n"), "{out}");
}
