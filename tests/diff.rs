//! `copygen diff`: sizes agree with `nm --size-sort` of the objects it
//! assembled, the tables are scripts/bloat-o-meter's (checked against the
//! real script), renumbered labels are no diff, a dropped exception-table
//! entry shows in the entries table and as a lost `; user` mark, one knob
//! moves the sizes the way the lowering says, `--json` carries the same
//! figures, and the output is deterministic.
//!
//! Tools: gcc (assembling), nm (binutils), git (revision mode), python3 and
//! the Debian linux-source-6.1 tarball (the real bloat-o-meter),
//! arm-linux-gnueabi-gcc/objdump for the ARM case. A missing tool fails the
//! test naming its package.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use copygen::front::catalog::catalog;
use copygen::front::strategy::{Flavor, Strategy};
use copygen::output::render::render;
use copygen::output::tree::render_tree;
use copygen::tools::diff::{self, format_bloat, table, DiffOptions, DiffReport};

use crate::common::kernel_source::excerpt;

const BIN: &str = env!("CARGO_BIN_EXE_copygen");

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copygen(args: &[&str], cwd: &Path) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run copygen")
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "copygen failed ({:?}):\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn tool(name: &str, package: &str) -> Command {
    let probe = Command::new(name).arg("--version").output();
    assert!(
        probe.is_ok(),
        "`{name}` is missing: install the Debian package `{package}` (verify/install-deps does)"
    );
    Command::new(name)
}

fn git(repo: &Path, args: &[&str]) {
    let o = tool("git", "git")
        .current_dir(repo)
        .args([
            "-c",
            "user.name=copygen test",
            "-c",
            "user.email=test@copygen.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A catalog strategy file's text.
fn preset_text(name: &str) -> String {
    std::fs::read_to_string(manifest().join(format!("generator/strategies/{name}.toml"))).unwrap()
}

fn parse(name: &str, text: &str) -> Strategy {
    copygen::front::parse::parse(
        Path::new(&format!("generator/strategies/{name}.toml")),
        text,
        None,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn write_tree(dir: &Path, strategies: &[Strategy]) {
    let _ = std::fs::remove_dir_all(dir.join("emitted"));
    for (rel, text) in render_tree(strategies) {
        let p = dir.join("emitted").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// `nm --size-sort`: function (t/T) symbol → size.
fn nm_sizes(obj: &Path) -> BTreeMap<String, u64> {
    let o = tool("nm", "binutils")
        .arg("--size-sort")
        .arg(obj)
        .output()
        .unwrap();
    assert!(o.status.success(), "nm {}", obj.display());
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 3 && (f[1] == "t" || f[1] == "T") {
            m.insert(f[2].to_string(), u64::from_str_radix(f[0], 16).unwrap());
        }
    }
    m
}

/// The first bloat-o-meter block (`add/remove` … `Total:`) after `title`.
fn block<'a>(text: &'a str, title: &str) -> &'a str {
    let from = text.find(title).expect(title) + title.len();
    let rest = &text[from..];
    let start = rest.find("add/remove:").unwrap();
    let end = rest[start..].find("Total:").unwrap() + start;
    let end = end + rest[end..].find('\n').unwrap() + 1;
    &rest[start..end]
}

fn json_rows(
    v: &serde_json::Value,
    table: &str,
) -> BTreeMap<String, (Option<u64>, Option<u64>, i64)> {
    v[table]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (
                    r["old"].as_u64(),
                    r["new"].as_u64(),
                    r["delta"].as_i64().unwrap(),
                ),
            )
        })
        .collect()
}

#[test]
fn revisions_sizes_match_nm_of_the_assembled_objects() {
    let repo = tempfile::tempdir().unwrap();
    let repo = repo.path();
    git(repo, &["init", "-q"]);
    let base = catalog().unwrap();
    write_tree(repo, &base);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "catalog"]);
    // The next revision: one knob changed, one strategy dropped, one added.
    let mut next: Vec<Strategy> = base.iter().filter(|s| s.name != "movsl").cloned().collect();
    let two = preset_text("unrolled64").replace("registers = 4", "registers = 2");
    for s in next.iter_mut() {
        if s.name == "unrolled64" {
            *s = parse("unrolled64", &two);
        }
    }
    next.push(parse(
        "unrolled64-b",
        &preset_text("unrolled64").replace("name = \"unrolled64\"", "name = \"unrolled64-b\""),
    ));
    write_tree(repo, &next);
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "change"]);

    let objs = tempfile::tempdir().unwrap();
    let o = copygen(
        &[
            "diff",
            "HEAD~1",
            "HEAD",
            "--json",
            "--save-objects",
            objs.path().to_str().unwrap(),
        ],
        repo,
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = json_rows(&v, "text");
    let mut checked = 0;
    for f in v["files"].as_array().unwrap() {
        let q = format!(
            "{}/{}",
            f["arch"].as_str().unwrap(),
            f["flavor"].as_str().unwrap()
        );
        for (side, idx) in [("old", 0), ("new", 1)] {
            let Some(rel) = f[side].as_str() else {
                continue;
            };
            let obj = objs
                .path()
                .join(side)
                .join(Path::new(rel).with_extension("o"));
            let nm = nm_sizes(&obj);
            assert!(!nm.is_empty(), "{}: no functions", obj.display());
            for (sym, size) in &nm {
                let row = rows
                    .get(&format!("{q}:{sym}"))
                    .unwrap_or_else(|| panic!("{q}:{sym} missing from the table"));
                let mine = if idx == 0 { row.0 } else { row.1 };
                assert_eq!(mine, Some(*size), "{side} {q}:{sym}");
                checked += 1;
            }
        }
    }
    // Every row's figures came from some nm line and nothing else.
    let from_rows: usize = rows
        .values()
        .map(|r| r.0.is_some() as usize + r.1.is_some() as usize)
        .sum();
    assert_eq!(checked, from_rows);
    assert!(checked > 60, "only {checked} functions compared");

    // What changed, as the revisions say.
    let status: BTreeMap<String, String> = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["new"].as_str().or(f["old"].as_str()).unwrap().to_string(),
                f["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(status["i386/linux/movsl.S"], "removed");
    assert_eq!(status["x86_64/standalone/unrolled64-b.S"], "added");
    assert_eq!(status["x86_64/linux/unrolled64.S"], "modified");
    assert_eq!(status["x86_64/linux/rep-movsb.S"], "unchanged");
    assert_eq!(v["text"]["remove"], 4, "movsl: 2 functions x 2 flavours");
    assert_eq!(
        v["text"]["add"], 4,
        "unrolled64-b: 2 functions x 2 flavours"
    );
    assert!(rows["x86_64/linux:unrolled64_from_user"].2 > 0);
    assert_eq!(rows["x86_64/linux:rep_movsb_from_user"].2, 0);

    // The working tree as a side: an uncommitted change shows against HEAD.
    let p = repo.join("emitted/x86_64/standalone/rep-movsb.S");
    let text = std::fs::read_to_string(&p).unwrap();
    let edited = text.replacen("\tret\n", "\tnop\n\tret\n", 1);
    assert_ne!(text, edited, "rep-movsb.S has a `ret` line");
    std::fs::write(&p, edited).unwrap();
    let out = stdout(&copygen(&["diff", "HEAD", "WORKTREE"], repo));
    let t = block(&out, "# .text bytes per function");
    assert!(
        t.starts_with("add/remove: 0/0 grow/shrink: 1/0 up/down: 1/0 (1)\n"),
        "{t}"
    );
    assert!(t.contains("x86_64/standalone:rep_movsb_"), "{t}");
    assert!(out.contains("+\tnop\n"), "{out}");
    // The same through the folder.
    let out2 = stdout(&copygen(&["diff", "HEAD", "emitted"], repo));
    assert_eq!(
        out.lines().skip(1).collect::<Vec<_>>(),
        out2.lines().skip(1).collect::<Vec<_>>()
    );
}

/// Functions of the given sizes, one object's worth.
fn sized_functions(fns: &[(&str, u32)]) -> String {
    let mut s = String::from("\t.text\n");
    for (name, size) in fns {
        s.push_str(&format!(
            "\t.globl {name}\n\t.type {name}, @function\n{name}:\n\t.skip {size}, 0x90\n\t.size {name}, . - {name}\n"
        ));
    }
    s.push_str("\t.section .note.GNU-stack, \"\", @progbits\n");
    s
}

/// The real scripts/bloat-o-meter, from the Debian linux-source tarball (in
/// the folder returned, kept while the script runs).
fn bloat_o_meter() -> tempfile::TempDir {
    excerpt("6.1", &["scripts/bloat-o-meter"])
        .expect("the Debian package linux-source-6.1 (verify/install-deps installs it)")
}

#[test]
fn tables_are_bloat_o_meters_format() {
    // add (f, g), remove (d), grow (a), shrink (b, j: a tie on delta,
    // which bloat-o-meter breaks by name, descending), unchanged (c, e).
    let old = [
        ("a", 100),
        ("b", 50),
        ("c", 30),
        ("d", 20),
        ("e", 10),
        ("j", 20),
    ];
    let new = [
        ("a", 130),
        ("b", 40),
        ("c", 30),
        ("e", 10),
        ("f", 60),
        ("g", 8),
        ("j", 10),
    ];
    let dir = tempfile::tempdir().unwrap();
    let (os, ns) = (dir.path().join("old.S"), dir.path().join("new.S"));
    std::fs::write(&os, sized_functions(&old)).unwrap();
    std::fs::write(&ns, sized_functions(&new)).unwrap();
    let objs = dir.path().join("objs");
    let out = stdout(&copygen(
        &[
            "diff",
            "old.S",
            "new.S",
            "--arch",
            "x86_64",
            "--save-objects",
            objs.to_str().unwrap(),
        ],
        dir.path(),
    ));
    let mine = block(&out, "# .text bytes per function");
    let expected = "\
add/remove: 2/1 grow/shrink: 1/2 up/down: 98/-40 (58)
Function                                     old     new   delta
f                                              -      60     +60
a                                            100     130     +30
g                                              -       8      +8
j                                             20      10     -10
b                                             50      40     -10
d                                             20       -     -20
Total: Before=230, After=288, chg +25.22%
";
    assert_eq!(mine, expected);
    // The library's table agrees with the command.
    let m = |v: &[(&str, u64)]| v.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    let t = table(
        &m(&old.map(|(k, n)| (k, n as u64))),
        &m(&new.map(|(k, n)| (k, n as u64))),
    );
    assert_eq!(format_bloat(&t, "Function"), expected);

    // And the real script says the same of the same objects.
    let tree = bloat_o_meter();
    let o = tool("python3", "python3")
        .arg(tree.path().join("scripts/bloat-o-meter"))
        .arg("-t")
        .arg(objs.join("old/old.o"))
        .arg(objs.join("new/new.o"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout), expected);
}

/// Rename every `.L` label to `.Lq<n>`, numbered from the end of the file,
/// and add an unused label: same code, other names and numbering.
fn relabel(text: &str) -> String {
    let mut labels: Vec<String> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(p) = text[i..].find(".L") {
        let s = i + p;
        let mut e = s + 2;
        while e < bytes.len() && (bytes[e].is_ascii_alphanumeric() || bytes[e] == b'_') {
            e += 1;
        }
        if e > s + 2 && !labels.iter().any(|l| l == &text[s..e]) {
            labels.push(text[s..e].to_string());
        }
        i = e;
    }
    // Longest first, so `.Lfoo` never rewrites part of `.Lfoo_bar`.
    let mut order: Vec<(usize, &String)> = labels.iter().enumerate().collect();
    order.sort_by_key(|(_, l)| std::cmp::Reverse(l.len()));
    let mut out = text.to_string();
    for (n, l) in &order {
        out = out.replace(l.as_str(), &format!(".Lq{}X", labels.len() - n));
    }
    out.replacen("\t.text\n", "\t.text\n.Lunused_label:\n", 1)
}

fn report(old: &str, new: &str, dir: &Path, opts: &DiffOptions) -> DiffReport {
    let o = DiffOptions {
        cwd: Some(dir.to_path_buf()),
        ..opts.clone()
    };
    diff::run(old, new, &o).unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn relabelled_code_gives_no_instruction_diff() {
    let dir = tempfile::tempdir().unwrap();
    for s in catalog().unwrap() {
        if !["unrolled64", "intel-unrolled", "guarded-movsb"].contains(&s.name.as_str()) {
            continue;
        }
        for flavor in Flavor::ALL {
            let text = render(&s, flavor);
            let other = relabel(&text);
            assert_ne!(text, other);
            assert!(!other.contains(".Lfrom_"), "{other}");
            std::fs::write(dir.path().join("a.S"), &text).unwrap();
            std::fs::write(dir.path().join("b.S"), &other).unwrap();
            let r = report("a.S", "b.S", dir.path(), &DiffOptions::default());
            assert!(r.text.rows.len() >= 2, "{} {flavor}: no functions", s.name);
            assert!(r.text.rows.iter().all(|x| x.delta == 0), "{:?}", r.text);
            assert!(
                r.entries.rows.iter().all(|x| x.delta == 0),
                "{:?}",
                r.entries
            );
            assert!(
                r.changed.is_empty(),
                "{} {flavor}: {}",
                s.name,
                r.changed
                    .iter()
                    .map(|c| c.diff.as_str())
                    .collect::<String>()
            );
        }
    }
    // The control: a real change in the same file does show.
    let s = parse("unrolled64", &preset_text("unrolled64"));
    let text = render(&s, Flavor::Standalone);
    let changed = relabel(&text).replacen("\taddq\t$64, %rsi", "\taddq\t$64, %rsi\n\tnop", 1);
    std::fs::write(dir.path().join("a.S"), &text).unwrap();
    std::fs::write(dir.path().join("b.S"), &changed).unwrap();
    let r = report("a.S", "b.S", dir.path(), &DiffOptions::default());
    assert_eq!(r.changed.len(), 1, "{:?}", r.changed);
    assert!(
        r.changed[0].diff.contains("\n+\tnop\n"),
        "{}",
        r.changed[0].diff
    );
    // A branch that goes elsewhere is a change, though every line still
    // reads `jae L<n>` with the names abstracted.
    let jae = "\tjae\t.Lfrom_unrolled_loop\n";
    assert!(text.contains(jae));
    let retargeted = relabel(&text.replacen(jae, "\tjae\t.Lfrom_unrolled_tail\n", 1));
    std::fs::write(dir.path().join("b.S"), &retargeted).unwrap();
    let r = report("a.S", "b.S", dir.path(), &DiffOptions::default());
    assert_eq!(r.changed.len(), 1, "{:?}", r.changed);
    let d = &r.changed[0].diff;
    let minus: Vec<&str> = d.lines().filter(|l| l.starts_with("-\t")).collect();
    let plus: Vec<&str> = d.lines().filter(|l| l.starts_with("+\t")).collect();
    assert_eq!(minus.len(), 1, "{d}");
    assert_eq!(plus.len(), 1, "{d}");
    assert!(
        minus[0].starts_with("-\tjae L") && plus[0].starts_with("+\tjae L"),
        "{d}"
    );
    assert_ne!(minus[0][1..], plus[0][1..], "{d}");
}

#[test]
fn a_dropped_entry_shows_in_the_table_and_as_a_lost_user_mark() {
    let dir = tempfile::tempdir().unwrap();
    let s = parse("unrolled64", &preset_text("unrolled64"));
    for (flavor, line) in [
        (
            Flavor::Standalone,
            "\t.long\t.Lto_unrolled_loop_store3 - ., .Lto_fixup_24_then_retry - .\n",
        ),
        (
            Flavor::Linux,
            "\tCOPYGEN_EXTABLE(.Lto_unrolled_loop_store3, .Lto_fixup_24_then_retry)\n",
        ),
    ] {
        let text = render(&s, flavor);
        assert!(
            text.contains(line),
            "{flavor}: the entry line moved:\n{text}"
        );
        std::fs::write(dir.path().join("a.S"), &text).unwrap();
        std::fs::write(dir.path().join("b.S"), text.replacen(line, "", 1)).unwrap();
        let out = stdout(&copygen(&["diff", "a.S", "b.S"], dir.path()));
        let entries = block(&out, "# __ex_table entries per function");
        assert_eq!(
            entries,
            "add/remove: 0/0 grow/shrink: 0/1 up/down: 0/-1 (-1)\n\
             Function                                     old     new   delta\n\
             unrolled64_to_user                            13      12      -1\n\
             Total: Before=26, After=25, chg -3.85%\n",
            "{flavor}"
        );
        let text_table = block(&out, "# .text bytes per function");
        assert!(text_table.starts_with("add/remove: 0/0 grow/shrink: 0/0 up/down: 0/0 (0)\n"));
        // The fourth store of the unrolled loop loses its mark, nothing else.
        let minus: Vec<&str> = out.lines().filter(|l| l.starts_with("-\t")).collect();
        let plus: Vec<&str> = out.lines().filter(|l| l.starts_with("+\t")).collect();
        assert_eq!(minus.len(), 1, "{out}");
        assert_eq!(plus.len(), 1, "{out}");
        let (lost, kept) = minus[0]
            .split_once(" ; user \u{2192} fixup L")
            .expect("a user mark");
        assert_eq!(&lost[1..], &plus[0][1..], "{out}");
        assert!(kept.bytes().all(|b| b.is_ascii_digit()), "{kept}");
        assert!(plus[0].contains("0x18(%rdi)"), "{}", plus[0]);
    }
}

fn knob_pair(dir: &Path, from: &str, to: &str) {
    let text = preset_text("unrolled64");
    assert!(text.contains(from), "unrolled64.toml has no `{from}`");
    std::fs::write(dir.join("old.toml"), &text).unwrap();
    std::fs::write(dir.join("new.toml"), text.replace(from, to)).unwrap();
}

#[test]
fn one_knob_moves_the_sizes_as_the_lowering_says() {
    let dir = tempfile::tempdir().unwrap();
    // Two registers: the from_user loop fills and drains in four groups
    // (fixups at 0, 16, 32, 48 copied bytes) instead of two (0, 32), so it
    // gains two fixup stubs; to_user's stores already had one fixup each.
    knob_pair(dir.path(), "registers = 4", "registers = 2");
    let r = report("old.toml", "new.toml", dir.path(), &DiffOptions::default());
    assert_eq!(
        (r.text.grow, r.text.shrink, r.text.add, r.text.remove),
        (2, 0, 0, 0)
    );
    for row in &r.text.rows {
        if row.name.ends_with("unrolled64_from_user") {
            assert!(row.delta > 0, "{row:?}");
        } else {
            assert_eq!(row.delta, 0, "{row:?}");
        }
    }
    assert!(
        r.entries.rows.iter().all(|x| x.delta == 0),
        "{:?}",
        r.entries
    );
    for c in r.changed.iter().filter(|c| c.name.ends_with("from_user")) {
        let fixups = |sign: char| {
            let mut v: Vec<&str> = c
                .diff
                .lines()
                .filter(|l| l.starts_with(sign) || l.starts_with(' '))
                .filter_map(|l| l.split_once("fixup ").map(|x| x.1))
                .collect();
            v.sort();
            v.dedup();
            v.len()
        };
        assert_eq!(fixups('+'), fixups('-') + 2, "{}", c.diff);
    }
    // Half the block: half the unrolled loop in both directions, the same
    // number of entries per store in to_user, half the loads in from_user.
    knob_pair(dir.path(), "block = 64", "block = 32");
    let r = report("old.toml", "new.toml", dir.path(), &DiffOptions::default());
    assert_eq!((r.text.grow, r.text.shrink), (0, 4), "{:?}", r.text);
    assert_eq!(r.entries.before - r.entries.after, 16, "{:?}", r.entries);
    // Only one flavour.
    let r = report(
        "old.toml",
        "new.toml",
        dir.path(),
        &DiffOptions {
            flavor: Some(Flavor::Linux),
            ..DiffOptions::default()
        },
    );
    assert_eq!(r.files.len(), 1);
    assert!(
        r.text.rows.iter().all(|x| !x.name.contains(':')),
        "one pair: plain names"
    );
}

#[test]
fn json_has_the_texts_figures_and_runs_are_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    knob_pair(dir.path(), "registers = 4", "registers = 2");
    let args = ["diff", "old.toml", "new.toml"];
    let text = stdout(&copygen(&args, dir.path()));
    assert_eq!(
        text,
        stdout(&copygen(&args, dir.path())),
        "text differs between runs"
    );
    let jargs = ["diff", "old.toml", "new.toml", "--json"];
    let json = stdout(&copygen(&jargs, dir.path()));
    assert_eq!(
        json,
        stdout(&copygen(&jargs, dir.path())),
        "JSON differs between runs"
    );
    assert!(!text.contains('\x1b'), "colour on a pipe");
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    for (title, key) in [
        ("# .text bytes per function", "text"),
        ("# __ex_table entries per function", "entries"),
    ] {
        let b = block(&text, title);
        let t = &v[key];
        let first = format!(
            "add/remove: {}/{} grow/shrink: {}/{} up/down: {}/-{} ({})",
            t["add"], t["remove"], t["grow"], t["shrink"], t["up"], t["down"], t["net"]
        )
        .replace("/-0 ", "/0 ");
        assert_eq!(b.lines().next().unwrap(), first);
        let rows = json_rows(&v, key);
        let mut shown = 0;
        for line in b.lines().skip(2).take_while(|l| !l.starts_with("Total:")) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (o, n, d) = rows[f[0]];
            assert_eq!(f[1], o.map_or("-".into(), |x| x.to_string()));
            assert_eq!(f[2], n.map_or("-".into(), |x| x.to_string()));
            assert_eq!(f[3].parse::<i64>().unwrap(), d);
            shown += 1;
        }
        assert_eq!(shown, rows.values().filter(|r| r.2 != 0).count());
        assert!(b.contains(&format!(
            "Total: Before={}, After={},",
            t["before"], t["after"]
        )));
    }
    // The diffs in the JSON are the text's.
    for c in v["changed"].as_array().unwrap() {
        assert!(text.contains(c["diff"].as_str().unwrap()));
    }
}

#[test]
fn bad_input_exits_2_and_differences_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    knob_pair(d, "registers = 4", "registers = 2");
    let o = copygen(&["diff", "old.toml", "new.toml"], d);
    assert_eq!(o.status.code(), Some(0));
    // Neither a file nor a revision.
    let o = copygen(&["diff", "no-such-rev", "new.toml"], d);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`no-such-rev` is not a file"));
    // A strategy error names file, line and field.
    std::fs::write(
        d.join("bad.toml"),
        preset_text("unrolled64").replace("registers = 4", "registers = 0"),
    )
    .unwrap();
    let o = copygen(&["diff", "old.toml", "bad.toml"], d);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:") && err.contains("registers"),
        "{err}"
    );
    // A file GNU as rejects.
    std::fs::write(d.join("junk.S"), "\t.text\n\tnot_an_instruction %rax\n").unwrap();
    std::fs::write(d.join("ok.S"), sized_functions(&[("f", 4)])).unwrap();
    let o = copygen(&["diff", "ok.S", "junk.S", "--arch", "x86_64"], d);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("junk.S does not assemble"));
    // A foreign file whose architecture cannot be told.
    let o = copygen(&["diff", "ok.S", "ok.S"], d);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("give --arch"));
    // Unknown flavour.
    let o = copygen(&["diff", "old.toml", "new.toml", "--flavor", "kernel"], d);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn bench_times_old_and_new_of_each_changed_routine() {
    let dir = tempfile::tempdir().unwrap();
    knob_pair(dir.path(), "registers = 4", "registers = 2");
    let o = copygen(&["diff", "old.toml", "new.toml", "--bench"], dir.path());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    let bench = &out[out.find("# bench").expect("a bench section")..];
    // Both routines changed (from_user grew two fixup stubs, to_user reloads
    // registers); each is timed old and new, in a section of its own.
    for routine in ["unrolled64_from_user", "unrolled64_to_user"] {
        // bench's header: each subject with its IQR, the ratio named by its
        // baseline (the old routine).
        let header = bench
            .lines()
            .find(|l| l.contains(&format!("old:{routine}")))
            .unwrap_or_else(|| panic!("no header for {routine}:\n{bench}"));
        assert!(
            header.contains(&format!("new:{routine}"))
                && header.contains(&format!("vs old:{routine}")),
            "{bench}"
        );
    }
    let section = &bench[..bench.find("## unrolled64_to_user").expect("second section")];
    for size in diff::BENCH_SIZES {
        let row = section
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&size.to_string()))
            .unwrap_or_else(|| panic!("no row for {size}:\n{bench}"));
        let cols: Vec<f64> = row
            .split_whitespace()
            .skip(1)
            .filter_map(|c| c.trim_end_matches('x').parse().ok())
            .collect();
        assert!(cols.len() >= 3 && cols[0] > 0.0 && cols[1] > 0.0, "{row}");
    }
    // The hook finds the changed routines and their strategies, also from
    // emitted files (their header restates the strategy).
    let s = parse("unrolled64", &preset_text("unrolled64"));
    let text = render(&s, Flavor::Standalone);
    let back = copygen::output::header::restated_strategy(&text, None)
        .unwrap()
        .unwrap();
    assert_eq!(render(&back, Flavor::Standalone), text);
}

#[test]
fn arm_objects_diff_with_objdump_listings() {
    let arm = copygen::toolchain::toolchain(copygen::front::strategy::Arch::Armv6);
    tool(arm.cc.program, &arm.cc.package_list());
    tool(arm.objdump.program, &arm.objdump.package_list());
    // A hand-written A32 byte loop with one entry, as the armv6 standalone
    // flavour writes them (relative words).
    let arm = |extra: &str, entry: bool| {
        format!(
            "/*\n * bytes: armv6, standalone flavour, AAPCS.\n */\n\t.text\n\t.globl\tbytes_from_user\n\t.type\tbytes_from_user, %function\n\t.p2align 2\nbytes_from_user:\n.Lloop:\n\tcmp\tr2, #0\n\tbeq\t.Ldone\n{extra}.Lload:\n\tldrb\tr3, [r1]\n\tstrb\tr3, [r0]\n\tadd\tr1, r1, #1\n\tadd\tr0, r0, #1\n\tsub\tr2, r2, #1\n\tb\t.Lloop\n.Ldone:\n.Lfixup:\n\tmov\tr0, r2\n\tbx\tlr\n\t.size\tbytes_from_user, . - bytes_from_user\n{}\t.section .note.GNU-stack,\"\",%progbits\n",
            if entry {
                "\t.pushsection __ex_table, \"a\"\n\t.balign\t4\n\t.long\t.Lload - ., .Lfixup - .\n\t.popsection\n"
            } else {
                ""
            }
        )
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.S"), arm("", true)).unwrap();
    std::fs::write(dir.path().join("b.S"), arm("\tnop\n", false)).unwrap();
    let out = stdout(&copygen(&["diff", "a.S", "b.S"], dir.path()));
    assert!(
        block(&out, "# .text bytes")
            .contains("bytes_from_user                               40      44      +4"),
        "{out}"
    );
    assert!(
        block(&out, "# __ex_table")
            .contains("bytes_from_user                                1       0      -1"),
        "{out}"
    );
    assert!(
        out.contains("-\tldrb r3, [r1] ; user \u{2192} fixup L2\n"),
        "{out}"
    );
    assert!(out.contains("+\tldrb r3, [r1]\n"), "{out}");
    assert!(out.contains("+\tnop\n"), "{out}");
    assert!(out.contains("\tbeq L2\n"), "{out}");
}

#[test]
fn arm_strategy_files_diff_in_both_flavours() {
    let arm = copygen::toolchain::toolchain(copygen::front::strategy::Arch::Armv6);
    tool(arm.cc.program, &arm.cc.package_list());
    tool(arm.objdump.program, &arm.objdump.package_list());
    let dir = tempfile::tempdir().unwrap();
    let text = preset_text("word-loop");
    assert!(text.contains("registers = 8"));
    std::fs::write(dir.path().join("old.toml"), &text).unwrap();
    std::fs::write(
        dir.path().join("new.toml"),
        text.replace("registers = 8", "registers = 4"),
    )
    .unwrap();
    let r = report("old.toml", "new.toml", dir.path(), &DiffOptions::default());
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.files.len(), 2);
    // Same user accesses, so the same entries.
    assert_eq!(r.entries.before, r.entries.after);
    assert!(r.entries.before > 0);
    // Four loop registers: the routine saves r4-r6 instead of r4-r10, and
    // the linux flavour's fixups (in .text.fixup, outside any function)
    // show as F labels.
    for flavor in ["linux", "standalone"] {
        let c = r
            .changed
            .iter()
            .find(|c| c.name == format!("armv6/{flavor}:word_loop_from_user"))
            .unwrap_or_else(|| panic!("{flavor}: {:?}", r.changed));
        assert!(
            c.diff.contains("\n+\tpush {r4, r5, r6, lr}\n"),
            "{}",
            c.diff
        );
        assert!(
            c.diff
                .contains("\n-\tpush {r4, r5, r6, r7, r8, r9, sl, lr}\n"),
            "{}",
            c.diff
        );
        assert_eq!(c.diff.contains("fixup F"), flavor == "linux", "{}", c.diff);
    }
}

#[test]
fn aarch64_strategy_files_diff_in_both_flavours() {
    let a64 = copygen::toolchain::toolchain(copygen::front::strategy::Arch::Aarch64);
    tool(a64.cc.program, &a64.cc.package_list());
    tool(a64.objdump.program, &a64.objdump.package_list());
    let dir = tempfile::tempdir().unwrap();
    let text = preset_text("a64-overlap");
    assert!(text.contains("distance = [256]"));
    std::fs::write(dir.path().join("old.toml"), &text).unwrap();
    std::fs::write(
        dir.path().join("new.toml"),
        text.replace("distance = [256]", "distance = [512]"),
    )
    .unwrap();
    let r = report("old.toml", "new.toml", dir.path(), &DiffOptions::default());
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    assert_eq!(r.files.len(), 2);
    assert_eq!(r.entries.before, r.entries.after);
    assert!(r.entries.before > 0);
    // The prefetch and its guard move; the user accesses keep their marks.
    for flavor in ["linux", "standalone"] {
        let c = r
            .changed
            .iter()
            .find(|c| c.name == format!("aarch64/{flavor}:a64_overlap_from_user"))
            .unwrap_or_else(|| panic!("{flavor}: {:?}", r.changed));
        for line in [
            "-\tprfm pldl1strm, [x1, #256]",
            "+\tprfm pldl1strm, [x1, #512]",
            "-\tcmp x2, #0x101",
            "+\tcmp x2, #0x201",
        ] {
            assert!(c.diff.contains(line), "{line}:\n{}", c.diff);
        }
        assert!(c.diff.contains("; user → fixup L"), "{}", c.diff);
    }
}

/// `--flavor` filters the files of folders and revisions by their own
/// flavour (it used to re-label every file and keep them all).
#[test]
fn flavor_filters_trees_and_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    let pick = |names: &[&str]| -> Vec<Strategy> {
        catalog()
            .unwrap()
            .into_iter()
            .filter(|s| names.contains(&s.name.as_str()))
            .collect()
    };
    let base = pick(&["unrolled64", "word-loop"]);
    write_tree(d, &base);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "base"]);
    std::fs::rename(d.join("emitted"), d.join("old")).unwrap();
    let mut next = base.clone();
    next[0] = parse(
        "unrolled64",
        &preset_text("unrolled64").replace("registers = 4", "registers = 2"),
    );
    write_tree(d, &next);
    git(d, &["add", "-A"]);
    git(d, &["commit", "-qm", "next"]);
    for (old, new) in [("HEAD~1", "HEAD"), ("old", "emitted")] {
        for flavor in ["linux", "standalone"] {
            let o = copygen(&["diff", old, new, "--flavor", flavor, "--json"], d);
            let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
            let files = v["files"].as_array().unwrap();
            assert_eq!(files.len(), 2, "{old} {new} {flavor}: {files:?}");
            for f in files {
                assert_eq!(f["flavor"], flavor, "{old} {new}: {f}");
                let rel = f["new"].as_str().unwrap();
                assert!(rel.contains(&format!("/{flavor}/")), "{rel}");
            }
        }
    }
}

/// An emitted ARM linux file keeps its flavour under `--flavor standalone`
/// (it used to be assembled without the kernel shims and fail).
#[test]
fn an_arm_linux_file_diffs_under_any_flavor_option() {
    let arm = copygen::toolchain::toolchain(copygen::front::strategy::Arch::Armv6);
    tool(arm.cc.program, &arm.cc.package_list());
    let s = catalog()
        .unwrap()
        .into_iter()
        .find(|s| s.arch == copygen::front::strategy::Arch::Armv6)
        .expect("an armv6 preset");
    let dir = tempfile::tempdir().unwrap();
    let text = render(&s, Flavor::Linux);
    std::fs::write(dir.path().join("a.S"), &text).unwrap();
    std::fs::write(
        dir.path().join("b.S"),
        text.replace("\tbx\tlr\n", "\tnop\n\tbx\tlr\n"),
    )
    .unwrap();
    for flavor in ["standalone", "linux"] {
        let o = copygen(
            &["diff", "a.S", "b.S", "--flavor", flavor, "--json"],
            dir.path(),
        );
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(v["files"][0]["flavor"], "linux", "{flavor}");
    }
}

/// Names longer than bloat-o-meter's 40 columns widen the name column
/// instead of pushing their figures out of line.
#[test]
fn long_names_keep_the_columns_aligned() {
    let old = BTreeMap::from([
        (
            "x86_64/standalone:intel_unrolled_zeroing_from_user_16".to_string(),
            10u64,
        ),
        ("short".to_string(), 4),
    ]);
    let new = BTreeMap::from([
        (
            "x86_64/standalone:intel_unrolled_zeroing_from_user_16".to_string(),
            12u64,
        ),
        ("short".to_string(), 8),
    ]);
    let text = format_bloat(&table(&old, &new), "function");
    let lines: Vec<&str> = text.lines().skip(1).take(3).collect();
    assert_eq!(lines.len(), 3, "{text}");
    let ends: Vec<usize> = lines.iter().map(|l| l.len()).collect();
    assert!(ends.iter().all(|&e| e == ends[0]), "{text}");
    for l in &lines[1..] {
        assert!(l.split_whitespace().count() == 4, "{l}");
    }
}
