//! Names checked against what the preprocessor and the assembler will make
//! of them: `[linux]` symbols that are macros where the file is assembled,
//! two fields giving one symbol, `.L` labels of two variants that meet, and
//! the files of one `emit` that would overwrite each other or export one
//! symbol. Each is a located error (file, line, field), exit 2.

use std::path::Path;
use std::process::Command;

use copygen::checks::objfile::{self, Assemble};
use copygen::front::diagnostics::StrategyError;
use copygen::front::parse::parse;
use copygen::front::strategy::{Arch, Flavor};
use copygen::output::render::render;

/// A minimal strategy for `arch` with `linux` as its `[linux]` table body.
fn strategy(name: &str, arch: &str, linux: &str) -> String {
    format!(
        "name = \"{name}\"\ndescription = \"t\"\narch = \"{arch}\"\n\n[linux]\n{linux}\n\n[methods.b]\nkind = \"bytes\"\n\n[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n"
    )
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in {text}"))
        + 1
}

fn rejected(text: &str) -> StrategyError {
    parse(Path::new("case.toml"), text, None).expect_err("must be rejected")
}

#[test]
fn linux_symbols_that_are_macros_of_the_tree_are_refused() {
    let cases: &[(&str, &str)] = &[
        ("x86_64", "RET"),
        ("x86_64", "ASM_STAC"),
        ("x86_64", "ASM_CLAC"),
        ("x86_64", "SYM_FUNC_START"),
        ("x86_64", "_ASM_EXTABLE_UA"),
        ("x86_64", "EXPORT_SYMBOL"),
        ("x86_64", "ENTRY"),
        ("x86_64", "ENDPROC"),
        ("x86_64", "linux"),
        ("x86_64", "unix"),
        ("x86_64", "COPYGEN_EXTABLE"),
        ("x86_64", "X86_FEATURE_ERMS"),
        ("x86_64", "CONFIG_X86_64"),
        ("i386", "i386"),
        ("i386", "RET"),
        ("armv6", "USER"),
        ("armv6", "ENTRY"),
        ("aarch64", "USER"),
        ("aarch64", "SYM_FUNC_END"),
    ];
    for &(arch, name) in cases {
        for key in ["from_user", "to_user"] {
            let text = strategy("t", arch, &format!("{key} = \"{name}\""));
            let e = rejected(&text);
            assert_eq!(e.line, line_of(&text, key), "{arch} {name}: {e}");
            assert_eq!(e.field, format!("linux.{key}"), "{arch} {name}: {e}");
            assert!(e.message.contains(name), "{arch} {name}: {e}");
            assert!(
                e.message.contains("macro") || e.message.contains("CONFIG_"),
                "{arch} {name}: {e}"
            );
        }
    }
    // `i386` is gcc's predefined macro on i386 only.
    parse(
        Path::new("ok.toml"),
        &strategy("t", "x86_64", "from_user = \"i386\""),
        None,
    )
    .expect("`i386` is no macro on x86_64");
    // `symbol`, for a routine serving both directions, too.
    let text = strategy("t", "x86_64", "symbol = \"RET\"").replace(
        "arch = \"x86_64\"\n",
        "arch = \"x86_64\"\nroutine = \"both\"\n",
    );
    let e = rejected(&text);
    assert_eq!(
        (e.field.as_str(), e.line),
        ("linux.symbol", line_of(&text, "symbol ="))
    );
}

/// Names next to the refused ones are fine, and come out of the kernel
/// flavour's preprocessing as themselves.
#[test]
fn unusual_but_fine_names_assemble_as_themselves() {
    for (from, to) in [("RET_", "asm_stac"), ("Linux", "ENTRY2")] {
        let text = strategy(
            "t",
            "x86_64",
            &format!("from_user = \"{from}\"\nto_user = \"{to}\""),
        );
        let s = parse(Path::new("ok.toml"), &text, None).expect("accepted");
        let obj = objfile::assemble_text(
            &render(&s, Flavor::Linux),
            "ok.S",
            &Assemble::new(Arch::X86_64, Flavor::Linux),
        )
        .expect("assembles");
        for name in [from, to] {
            let f = obj
                .function(name)
                .unwrap_or_else(|| panic!("no function `{name}` in the object"));
            assert!(f.global && f.end > f.start, "{name}: {f:?}");
        }
    }
}

#[test]
fn two_fields_giving_one_symbol_are_refused() {
    // to_user is named after the default from_user entry point.
    let text = strategy("t", "x86_64", "to_user = \"t_from_user\"");
    let e = rejected(&text);
    assert_eq!(e.field, "linux.to_user", "{e}");
    assert_eq!(e.line, line_of(&text, "to_user ="), "{e}");
    assert!(
        e.message.contains("t_from_user") && e.message.contains("case.toml:1 (`name`)"),
        "{e}"
    );
    // A constant-size entry point's name.
    let text = strategy("t", "x86_64", "from_user = \"t_to_user_8\"")
        .replace("[linux]", "fixed_sizes = [8]\n\n[linux]");
    let e = rejected(&text);
    assert_eq!(e.field, "linux.from_user", "{e}");
    // A variant routine's name.
    let text = variants("zen", "[\"zen\"]", "m", "fsrm", "m2").replace(
        "[fault]",
        "[linux]\nfrom_user = \"t__zen_to_user\"\n\n[fault]",
    );
    let e = rejected(&text);
    assert!(e.all().iter().any(|e| e.field == "linux.from_user"), "{e}");
}

/// An x86_64 strategy with two variants: `first` (when `cond`, its class
/// guarded by method `guard1`) and the default `second` (guarded by
/// `guard2`).
fn variants(first: &str, cond: &str, guard1: &str, second: &str, guard2: &str) -> String {
    format!(
        r#"name = "t"
description = "t"
arch = "x86_64"

[fault]
precision = "exact"

[methods.b]
kind = "bytes"

[methods.{guard1}]
kind = "rep_movs"

[methods.{guard2}]
kind = "rep_movs"

[[variants]]
name = "{first}"
when = {cond}
[[variants.dispatch]]
sizes = "0.."
use = "b"
[[variants.dispatch.guard]]
alias = [1, 15]
use = "{guard1}"

[[variants]]
name = "{second}"
default = true
[[variants.dispatch]]
sizes = "0.."
use = "b"
[[variants.dispatch.guard]]
alias = [1, 15]
use = "{guard2}"
"#
    )
}

#[test]
fn variant_labels_that_meet_are_refused() {
    // `.Lzen_from_` + `from_m_guarded` and `.Lzen_from_from_` + `m_guarded`:
    // every label of `zen_from`'s routines begins with `zen`'s prefix.
    let text = variants("zen", "[\"zen\"]", "from_m", "zen_from", "m");
    let e = rejected(&text);
    assert_eq!(e.field, "variants[1].name", "{e}");
    assert_eq!(e.line, line_of(&text, "name = \"zen_from\""), "{e}");
    assert!(
        e.message.contains("`.Lzen_from_from_...`")
            && e.message.contains("`.Lzen_from_`")
            && e.message.contains(&format!(
                "case.toml:{} (`variants[0].name`)",
                line_of(&text, "name = \"zen\"")
            )),
        "{e}"
    );
    // The same names apart: accepted.
    parse(
        Path::new("ok.toml"),
        &variants("zen", "[\"zen\"]", "from_m", "other", "m"),
        None,
    )
    .expect("no two labels meet");
}

#[test]
fn variants_that_can_never_be_chosen_are_refused() {
    // The same condition twice, and a weaker one first.
    for cond in ["[\"zen\"]", "[\"zen\", \"erms\"]"] {
        let text = variants("zen", "[\"zen\"]", "m", "loop", "m2").replace(
            "[[variants]]\nname = \"loop\"",
            &format!("[[variants]]\nname = \"again\"\nwhen = {cond}\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n\n[[variants]]\nname = \"loop\""),
        );
        let e = rejected(&text);
        assert_eq!(e.field, "variants[1].when", "{cond}: {e}");
        assert_eq!(e.line, line_of(&text, "name = \"again\"") + 1, "{e}");
        assert!(
            e.message.contains("`again`") && e.message.contains("`zen` (line"),
            "{e}"
        );
    }
    // A stronger condition first is fine.
    let text = variants("zen", "[\"zen\", \"erms\"]", "m", "loop", "m2").replace(
        "[[variants]]\nname = \"loop\"",
        "[[variants]]\nname = \"zen_only\"\nwhen = [\"zen\"]\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n\n[[variants]]\nname = \"loop\"",
    );
    parse(Path::new("ok.toml"), &text, None).expect("each variant is chosen somewhere");
    // Covered by two earlier ones together: `erms` then `!erms` leave no
    // CPU for the default.
    let text = variants("a", "[\"erms\"]", "m", "loop", "m2").replace(
        "[[variants]]\nname = \"loop\"",
        "[[variants]]\nname = \"b\"\nwhen = [\"!erms\"]\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n\n[[variants]]\nname = \"loop\"",
    );
    let e = rejected(&text);
    assert_eq!(e.field, "variants[2].default", "{e}");
    assert!(
        e.message.contains("`a`") && e.message.contains("`b`"),
        "{e}"
    );
    // A thousand variants of one condition: every one after the first.
    let mut text = variants("v0", "[\"fsrm\"]", "m", "loop", "m2");
    let more: String = (1..1000)
        .map(|i| format!("[[variants]]\nname = \"v{i}\"\nwhen = [\"fsrm\"]\n[[variants.dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n\n"))
        .collect();
    text = text.replace(
        "[[variants]]\nname = \"loop\"",
        &format!("{more}[[variants]]\nname = \"loop\""),
    );
    let e = rejected(&text);
    let all = e.all();
    assert_eq!(all.len(), 999, "{}", all[0]);
    assert!(all.iter().all(|e| e.message.contains("`v0`")), "{}", all[1]);
}

#[test]
fn guards_that_can_never_be_taken_are_refused() {
    let base = variants("zen", "[\"zen\"]", "m", "loop", "m2");
    let extra = |g: &str| {
        base.replacen(
            "alias = [1, 15]\nuse = \"m\"\n",
            &format!(
                "alias = [1, 15]\nuse = \"m\"\n[[variants.dispatch.guard]]\n{g}\nuse = \"b\"\n"
            ),
            1,
        )
    };
    for g in ["alias = [2, 10]", "alias = [1, 15]", "alias = [4, 4]"] {
        let text = extra(g);
        let e = rejected(&text);
        assert_eq!(e.field, "variants[0].dispatch[0].guard[1]", "{g}: {e}");
        assert!(e.message.contains("guard 0 (line"), "{e}");
    }
    // Alignment: 16 implies 8, and both pointers imply one.
    for (first, second) in [
        (
            "aligned = { pointer = \"dst\", to = 8 }",
            "aligned = { pointer = \"dst\", to = 16 }",
        ),
        (
            "aligned = { pointer = \"src\", to = 8 }",
            "aligned = { pointer = \"both\", to = 8 }",
        ),
    ] {
        let text = extra(second).replacen("alias = [1, 15]", first, 1);
        let e = rejected(&text);
        assert_eq!(
            e.field, "variants[0].dispatch[0].guard[1]",
            "{first} {second}: {e}"
        );
    }
    // Reachable: a wider band after a narrower one, 8 after 16.
    for g in ["alias = [0, 31]", "aligned = { pointer = \"dst\", to = 8 }"] {
        let text = extra(g).replacen(
            "alias = [1, 15]",
            if g.starts_with("alias") {
                "alias = [1, 15]"
            } else {
                "aligned = { pointer = \"dst\", to = 16 }"
            },
            1,
        );
        parse(Path::new("ok.toml"), &text, None).unwrap_or_else(|e| panic!("{g}: {e}"));
    }
}

fn copygen(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("runs")
}

#[test]
fn files_of_one_emit_that_collide_are_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let a = strategy("a-b", "x86_64", "");
    let b = strategy("a_b", "x86_64", "");
    std::fs::write(dir.path().join("a.toml"), &a).unwrap();
    std::fs::write(dir.path().join("b.toml"), &b).unwrap();
    // Two names, one symbol: `a_b_from_user`.
    let out = copygen(&["emit", "a.toml", "b.toml", "-o", "out"], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("b.toml:1:8: error in `name`"), "{err}");
    assert!(
        err.contains("a_b_from_user") && err.contains("a.toml:1 (`name`)"),
        "{err}"
    );
    assert!(!dir.path().join("out").exists(), "something was written");
    // A `[linux]` name equal to another file's generated symbol.
    let c = strategy("c", "x86_64", "to_user = \"a_b_from_user\"");
    std::fs::write(dir.path().join("c.toml"), &c).unwrap();
    let out = copygen(&["emit", "a.toml", "c.toml", "-o", "out"], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("c.toml:{}:", line_of(&c, "to_user")))
            && err.contains("`linux.to_user`")
            && err.contains("a.toml:1 (`name`)"),
        "{err}"
    );
    assert!(!dir.path().join("out").exists(), "something was written");
    // Different architectures never link together.
    let d = strategy("a_b", "i386", "");
    std::fs::write(dir.path().join("d.toml"), &d).unwrap();
    let out = copygen(&["emit", "a.toml", "d.toml", "-o", "out"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn two_strategies_of_one_name_name_both_name_lines() {
    let dir = tempfile::tempdir().unwrap();
    let a = strategy("same", "x86_64", "");
    let b = format!(
        "# another\n{}",
        strategy(
            "same",
            "x86_64",
            "from_user = \"other_from\"\nto_user = \"other_to\""
        )
    );
    std::fs::write(dir.path().join("a.toml"), &a).unwrap();
    std::fs::write(dir.path().join("b.toml"), &b).unwrap();
    let out = copygen(&["emit", "a.toml", "b.toml", "-o", "out"], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("b.toml:2:8: error in `name`"), "{err}");
    assert!(err.contains("a.toml:1 (`name`)"), "{err}");
    assert!(!dir.path().join("out").exists());
    // The same file twice, to stdout.
    let out = copygen(&["emit", "a.toml", "a.toml"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}
