//! Malformed and contradictory strategies: each gets its own error, naming
//! the file, the line of the offending field, and the field.

use std::path::Path;
use std::process::Command;

use copygen::front::diagnostics::StrategyError;
use copygen::front::parse::parse;

/// A valid x86_64 strategy that each case breaks in one place.
const BASE: &str = r#"name = "t"
description = "test"
arch = "x86_64"

[methods.loop]
kind = "unrolled"
block = 64
width = 8
registers = 4

[methods.movsb]
kind = "rep_movs"

[[dispatch]]
sizes = "0..=64"
use = "loop"

[[dispatch]]
sizes = "65.."
use = "movsb"
"#;

fn error_of(text: &str) -> StrategyError {
    parse(Path::new("case.toml"), text, None).expect_err("the strategy must be rejected")
}

/// The 1-based number of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in the case text"))
        + 1
}

struct Case {
    what: &'static str,
    text: String,
    /// Text on the line the error must point at.
    line_with: &'static str,
    field: &'static str,
    message: &'static str,
}

fn replace(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "base lacks {from}");
    BASE.replacen(from, to, 1)
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            what: "syntax error",
            text: replace("description = \"test\"", "description = \"test"),
            line_with: "description",
            field: "description",
            message: "invalid basic string",
        },
        Case {
            what: "unknown top-level key",
            text: replace("arch = \"x86_64\"", "arch = \"x86_64\"\ncolour = \"blue\""),
            line_with: "colour",
            field: "colour",
            message: "unknown field `colour`",
        },
        Case {
            what: "unknown method key",
            text: replace("registers = 4", "registers = 4\nblok = 64"),
            line_with: "blok",
            field: "methods.loop.blok",
            message: "unknown field `blok`",
        },
        Case {
            what: "wrong type",
            text: replace("width = 8", "width = \"eight\""),
            line_with: "width",
            field: "methods.loop.width",
            message: "invalid type",
        },
        Case {
            what: "unknown architecture",
            text: replace("arch = \"x86_64\"", "arch = \"mips\""),
            line_with: "arch",
            field: "arch",
            message: "unknown architecture `mips`",
        },
        Case {
            what: "unroll not a multiple of the width",
            text: replace("block = 64", "block = 60"),
            line_with: "block = 60",
            field: "methods.loop.block",
            message: "not a positive multiple of the width 8",
        },
        Case {
            what: "width the arch lacks",
            text: replace("width = 8", "width = 16"),
            line_with: "width = 16",
            field: "methods.loop.width",
            message: "not a register width of x86_64",
        },
        Case {
            what: "more registers than the ABI allows",
            text: replace("registers = 4", "registers = 8"),
            line_with: "registers = 8",
            field: "methods.loop.registers",
            message: "clobber only 6 scratch register(s)",
        },
        Case {
            what: "registers beyond the rep_movs convention",
            text: replace("arch = \"x86_64\"", "arch = \"x86_64\"\n[linux]\nconvention = \"rep_movs\""),
            line_with: "registers = 4",
            field: "methods.loop.registers",
            message: "lets a routine clobber only 1 scratch register(s)",
        },
        Case {
            what: "registers that do not divide the block",
            text: replace("registers = 4", "registers = 3"),
            line_with: "registers = 3",
            field: "methods.loop.registers",
            message: "do not divide the 8 words",
        },
        Case {
            what: "gap between size classes",
            text: replace("sizes = \"65..\"", "sizes = \"70..\""),
            line_with: "70..",
            field: "dispatch[1].sizes",
            message: "gap: sizes 65..=69 are covered by no class",
        },
        Case {
            what: "overlapping size classes",
            text: replace("sizes = \"65..\"", "sizes = \"60..\""),
            line_with: "60..",
            field: "dispatch[1].sizes",
            message: "overlap: sizes 60..=64",
        },
        Case {
            what: "first class does not start at 0",
            text: replace("sizes = \"0..=64\"", "sizes = \"1..=64\""),
            line_with: "1..=64",
            field: "dispatch[0].sizes",
            message: "gap: sizes 0..=0",
        },
        Case {
            what: "last class bounded",
            text: replace("sizes = \"65..\"", "sizes = \"65..=4096\""),
            line_with: "65..=4096",
            field: "dispatch[1].sizes",
            message: "the last class must be open",
        },
        Case {
            what: "malformed range",
            text: replace("sizes = \"65..\"", "sizes = \"65 to 99\""),
            line_with: "65 to 99",
            field: "dispatch[1].sizes",
            message: "is not a size range",
        },
        Case {
            what: "unknown method",
            text: replace("use = \"movsb\"", "use = \"movsq\""),
            line_with: "use = \"movsq\"",
            field: "dispatch[1].use",
            message: "no method named `movsq` (defined: loop, movsb)",
        },
        Case {
            what: "field meaningless for the kind",
            text: replace("kind = \"rep_movs\"", "kind = \"rep_movs\"\nblock = 32"),
            line_with: "block = 32",
            field: "methods.movsb.block",
            message: "`block` means nothing to a method of kind `rep_movs`",
        },
        Case {
            what: "a rep_movs tail that is not a rest method",
            text: replace("kind = \"rep_movs\"", "kind = \"rep_movs\"\nunit = 8\ntail = \"overlap\""),
            line_with: "tail = \"overlap\"",
            field: "methods.movsb.tail",
            message: "a `rep_movs` method's tail is \"rep_movsb\" or \"bytes\", not \"overlap\"",
        },
        Case {
            what: "a word-aligning prologue off x86",
            text: replace("arch = \"x86_64\"", "arch = \"armv6\"")
                .replace("width = 8", "width = 4")
                .replace("kind = \"rep_movs\"", "kind = \"bytes\"")
                .replace(
                    "registers = 4",
                    "registers = 4\nalign = { pointer = \"dst\", to = 4, min_size = 64, by = \"word\" }",
                ),
            line_with: "by = \"word\"",
            field: "methods.loop.align.by",
            message: "`by = \"word\"` is x86 only, not armv6: use the byte loop",
        },
        Case {
            what: "a word-aligning prologue for both pointers",
            text: replace(
                "kind = \"rep_movs\"",
                "kind = \"rep_movs\"\nalign = { pointer = \"both\", to = 8, min_size = 64, by = \"word\" }",
            ),
            line_with: "by = \"word\"",
            field: "methods.movsb.align.by",
            message: "`by = \"word\"` aligns one pointer, `dst` or `src`, not both",
        },
        Case {
            what: "a word-aligning prologue under block precision",
            text: replace("arch = \"x86_64\"\n", "arch = \"x86_64\"\n[fault]\nprecision = \"block\"\n")
                .replace(
                    "kind = \"rep_movs\"",
                    "kind = \"rep_movs\"\nunit = 8\nalign = { pointer = \"dst\", to = 8, min_size = 64, by = \"word\" }",
                ),
            line_with: "by = \"word\"",
            field: "methods.movsb.align.by",
            message: "which only `precision = \"exact\"` reports after a later fault",
        },
        Case {
            what: "a word-aligning prologue wider than a register",
            text: replace(
                "kind = \"rep_movs\"",
                "kind = \"rep_movs\"\nalign = { pointer = \"dst\", to = 16, min_size = 64, by = \"word\" }",
            ),
            line_with: "by = \"word\"",
            field: "methods.movsb.align.by",
            message: "`by = \"word\"` copies one word of `to` bytes: at most 8 on x86_64, not 16",
        },
        Case {
            what: "a tail after rep movsb, which leaves none",
            text: replace("kind = \"rep_movs\"", "kind = \"rep_movs\"\ntail = \"bytes\""),
            line_with: "tail = \"bytes\"",
            field: "methods.movsb.tail",
            message: "`rep movsb` leaves no tail: `tail` needs a `unit` of 4 or 8",
        },
        Case {
            what: "rep movs on ARM",
            text: replace("arch = \"x86_64\"", "arch = \"armv6\"").replace("width = 8", "width = 4"),
            line_with: "kind = \"rep_movs\"",
            field: "methods.movsb.kind",
            message: "armv6 has no `rep movs`",
        },
        Case {
            what: "prefetch instruction the arch lacks",
            text: replace("registers = 4", "registers = 4\nprefetch = { kind = \"pld\", distance = 128 }"),
            line_with: "prefetch",
            field: "methods.loop.prefetch.kind",
            message: "prefetch `pld` does not exist on x86_64",
        },
        Case {
            what: "ldm/stm grouping on x86",
            text: replace("registers = 4", "registers = 4\ngrouping = \"multiple\""),
            line_with: "grouping",
            field: "methods.loop.grouping",
            message: "does not exist on x86_64",
        },
        Case {
            what: "zero_tail without from_user",
            text: replace("arch = \"x86_64\"", "arch = \"x86_64\"\ndirections = [\"to_user\"]\n[fault]\nzero_tail = true"),
            line_with: "zero_tail",
            field: "fault.zero_tail",
            message: "does not emit",
        },
        Case {
            what: "rep movsq's rest in rax under 6.1's _ASM_EXTABLE_CPY",
            text: replace(
                "arch = \"x86_64\"\n",
                "arch = \"x86_64\"\n[linux]\nconvention = \"rep_movs\"\n",
            )
            .replace("registers = 4", "registers = 1")
            .replace("kind = \"rep_movs\"", "kind = \"rep_movs\"\nunit = 8"),
            line_with: "unit = 8",
            field: "methods.movsb.unit",
            message: "6.1's _ASM_EXTABLE_CPY puts the trap number there",
        },
        Case {
            what: "_ASM_EXTABLE_CPY in a 6.12 file",
            text: replace(
                "arch = \"x86_64\"\n",
                "arch = \"x86_64\"\n[linux]\nkernel = \"6.12\"\nextable = \"copy\"\n",
            ),
            line_with: "extable",
            field: "linux.extable",
            message: "6.4 removed it",
        },
        Case {
            what: "convention on i386",
            text: replace("arch = \"x86_64\"", "arch = \"i386\"\n[linux]\nconvention = \"c\""),
            line_with: "convention",
            field: "linux.convention",
            message: "only x86_64 offers a choice of convention",
        },
        Case {
            what: "alignment prologue shorter than its alignment",
            text: replace("registers = 4", "registers = 4\nalign = { pointer = \"dst\", to = 16, min_size = 8 }"),
            line_with: "align",
            field: "methods.loop.align.min_size",
            message: "min_size 8 is below the alignment 16",
        },
        Case {
            what: "a tail the arch lacks, named as the file writes it",
            text: replace("arch = \"x86_64\"", "arch = \"armv6\"")
                .replace("width = 8", "width = 4\ntail = \"rep_movsb\"")
                .replace("kind = \"rep_movs\"", "kind = \"bytes\""),
            line_with: "tail",
            field: "methods.loop.tail",
            message: "tail `rep_movsb` does not exist on armv6",
        },
        Case {
            what: "a field its kind does not take, named as the file writes it",
            text: replace("kind = \"rep_movs\"", "kind = \"head_tail\"\nblock = 8"),
            line_with: "block = 8",
            field: "methods.movsb.block",
            message: "`block` means nothing to a method of kind `head_tail`",
        },
        Case {
            what: "overlapping tail needs a full word",
            text: replace("registers = 4", "registers = 4\ntail = \"overlap\""),
            line_with: "use = \"loop\"",
            field: "dispatch[0].use",
            message: "needs at least 8 bytes, but this class starts at 0",
        },
        Case {
            what: "head_tail for unbounded sizes",
            text: replace("kind = \"rep_movs\"", "kind = \"head_tail\""),
            line_with: "use = \"movsb\"",
            field: "dispatch[1].use",
            message: "serves small sizes only",
        },
        Case {
            what: "inverted alias band",
            text: format!("{BASE}[[dispatch.guard]]\nalias = [63, 1]\nuse = \"loop\"\n"),
            line_with: "alias = [63, 1]",
            field: "dispatch[1].guard[0].alias",
            message: "lo <= hi < 4096",
        },
        Case {
            what: "guard with two conditions",
            text: format!(
                "{BASE}[[dispatch.guard]]\nalias = [1, 63]\naligned = {{ pointer = \"dst\", to = 8 }}\nuse = \"loop\"\n"
            ),
            line_with: "[[dispatch.guard]]",
            field: "dispatch[1].guard[0]",
            message: "one condition",
        },
        Case {
            what: "fixed size out of range",
            text: replace("arch = \"x86_64\"", "arch = \"x86_64\"\nfixed_sizes = [8, 100]"),
            line_with: "fixed_sizes",
            field: "fixed_sizes[1]",
            message: "fixed size 100 is outside 1..=64",
        },
        Case {
            what: "alias band of three numbers",
            text: format!("{BASE}[[dispatch.guard]]\nalias = [1, 2, 3]\nuse = \"loop\"\n"),
            line_with: "alias = [1, 2, 3]",
            field: "dispatch[1].guard[0].alias",
            message: "two numbers [lo, hi]",
        },
        Case {
            what: "empty method name",
            text: replace("[methods.movsb]", "[methods.\"\"]").replace("use = \"movsb\"", "use = \"\""),
            line_with: "[methods.\"\"]",
            field: "methods.",
            message: "may not be empty",
        },
        Case {
            what: "method name that would break a label",
            text: replace("[methods.movsb]", "[methods.\"a */ b\"]").replace("use = \"movsb\"", "use = \"a */ b\""),
            line_with: "[methods.\"a */ b\"]",
            field: "methods.a */ b",
            message: "a name uses only letters, digits and `_`",
        },
        Case {
            what: "method name starting with a digit",
            text: replace("[methods.movsb]", "[methods.9movsb]").replace("use = \"movsb\"", "use = \"9movsb\""),
            line_with: "[methods.9movsb]",
            field: "methods.9movsb",
            message: "does not start with a letter",
        },
        Case {
            what: "strategy name starting with a digit",
            text: replace("name = \"t\"", "name = \"9t\""),
            line_with: "name = ",
            field: "name",
            message: "does not start with a letter",
        },
        Case {
            what: "strategy name too long",
            text: replace("name = \"t\"", &format!("name = \"{}\"", "t".repeat(65))),
            line_with: "name = ",
            field: "name",
            message: "at most 64 characters",
        },
        Case {
            what: "control character in the description",
            text: replace("description = \"test\"", "description = \"a\\u001b[2Jb\""),
            line_with: "description",
            field: "description",
            message: "contains character U+001B",
        },
        Case {
            what: "bidirectional override anywhere in the file",
            text: replace("description = \"test\"", "description = \"te\u{202E}st\""),
            line_with: "description",
            field: "description",
            message: "U+202E is not allowed",
        },
        Case {
            what: "size bound beyond x86_64 immediates",
            text: replace("sizes = \"0..=64\"", "sizes = \"0..=2147483648\"").replace("65..", "2147483649.."),
            line_with: "0..=2147483648",
            field: "dispatch[0].sizes",
            message: "at most 2147483647",
        },
        Case {
            what: "size bound u64::MAX (once wrapped to an accepted overlap)",
            text: replace("sizes = \"0..=64\"", "sizes = \"0..=18446744073709551615\"").replace("65..", "0.."),
            line_with: "0..=18446744073709551615",
            field: "dispatch[0].sizes",
            message: "is too large",
        },
        Case {
            what: "align.min_size beyond x86_64 immediates",
            text: replace("registers = 4", "registers = 4\nalign = { pointer = \"dst\", to = 8, min_size = 4294967296 }"),
            line_with: "align",
            field: "methods.loop.align.min_size",
            message: "at most 2147483647",
        },
        Case {
            what: "an i386 length beyond 32 bits",
            text: replace("arch = \"x86_64\"", "arch = \"i386\"")
                .replace("width = 8", "width = 4")
                .replace("registers = 4", "registers = 2")
                .replace("sizes = \"0..=64\"", "sizes = \"0..=4294967296\"")
                .replace("65..", "4294967297.."),
            line_with: "0..=4294967296",
            field: "dispatch[0].sizes",
            message: "lengths are 32-bit, so a bound is at most 4294967295",
        },
        Case {
            what: "name unfit for files and symbols",
            text: replace("name = \"t\"", "name = \"a b\""),
            line_with: "name = ",
            field: "name",
            message: "only letters, digits",
        },
    ]
}

#[test]
fn the_base_strategy_is_valid() {
    parse(Path::new("case.toml"), BASE, None)
        .expect("BASE must be valid for the cases to mean anything");
}

#[test]
fn each_malformed_strategy_gets_its_own_located_error() {
    let mut failures = Vec::new();
    for c in cases() {
        let e = error_of(&c.text);
        let want_line = line_of(&c.text, c.line_with);
        let ok = e.file == Path::new("case.toml")
            && e.line == want_line
            && e.field == c.field
            && e.message.contains(c.message);
        if !ok {
            failures.push(format!(
                "{}: got {}:{} field `{}`: {}\n   want line {want_line}, field `{}`, message containing {:?}",
                c.what, e.line, e.column, e.field, e.message, c.field, c.message
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_error_display_names_file_line_and_field() {
    let text = replace("block = 64", "block = 60");
    let shown = error_of(&text).to_string();
    let first = shown.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "case.toml:{}:9: error in `methods.loop.block`: block 60 is not a positive multiple of the width 8",
            line_of(&text, "block = 60")
        )
    );
    assert!(
        shown.contains("block = 60"),
        "the source line is quoted:\n{shown}"
    );
}

#[test]
fn the_cli_exits_2_and_writes_nothing_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&good, BASE).unwrap();
    std::fs::write(&bad, replace("sizes = \"65..\"", "sizes = \"70..\"")).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["emit"])
        .arg(&good)
        .arg(&bad)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml:") && stderr.contains("dispatch[1].sizes"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_dir(&out_dir).unwrap().count(),
        0,
        "nothing may be written"
    );

    // The good file alone goes through.
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["emit"])
        .arg(&good)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out_dir.join("x86_64/linux/t.S").is_file());
    assert!(out_dir.join("x86_64/standalone/t.S").is_file());
}

#[test]
fn unknown_arch_and_flavour_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(&good, BASE).unwrap();
    for (flag, value, msg) in [
        ("--arch", "mips", "unknown architecture `mips`"),
        ("--flavor", "bsd", "unknown flavor `bsd`"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
            .args(["emit", flag, value])
            .arg(&good)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains(msg));
    }
    // An arch override revalidates: 8-byte registers do not exist on i386.
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["emit", "--arch", "i386"])
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("methods.loop.width"));
}

/// The largest bounds each arch allows are accepted and emitted (no panic
/// in a backend); one more is a located error (above, in `cases`).
#[test]
fn the_largest_bounds_emit_on_every_arch() {
    for (arch, width, bound) in [
        ("x86_64", 8, i32::MAX as u64),
        ("i386", 4, u32::MAX as u64 - 1),
        ("armv6", 4, u32::MAX as u64 - 1),
    ] {
        let text = replace("arch = \"x86_64\"", &format!("arch = \"{arch}\""))
            .replace("width = 8", &format!("width = {width}"))
            .replace("kind = \"rep_movs\"", "kind = \"bytes\"")
            .replace("sizes = \"0..=64\"", &format!("sizes = \"0..={bound}\""))
            .replace("65..", &format!("{}..", bound + 1))
            .replace(
                "registers = 4",
                &format!(
                    "registers = 2\nalign = {{ pointer = \"dst\", to = 4, min_size = {bound} }}"
                ),
            );
        let s =
            parse(Path::new("case.toml"), &text, None).unwrap_or_else(|e| panic!("{arch}: {e}"));
        for flavor in copygen::front::strategy::Flavor::ALL {
            let out = copygen::output::render::render(&s, flavor);
            assert!(out.contains("class 1"), "{arch} {flavor}");
        }
    }
}

/// Every problem in a file is reported in one run, in file order: schema
/// errors (unknown keys) and validation errors in independent parts.
#[test]
fn every_error_in_a_file_is_reported() {
    let text = replace("registers = 4", "registers = 4\ngroupng = \"x\"")
        .replace("kind = \"rep_movs\"", "kind = \"rep_movs\"\nunt = 4");
    let e = error_of(&text);
    let fields: Vec<_> = e.all().iter().map(|e| e.field.clone()).collect();
    assert_eq!(fields, ["methods.loop.groupng", "methods.movsb.unt"], "{e}");
    assert!(e.to_string().ends_with("2 errors in case.toml"), "{e}");

    let text = replace("block = 64", "block = 60").replace("sizes = \"65..\"", "sizes = \"70..\"");
    let e = error_of(&text);
    let fields: Vec<_> = e.all().iter().map(|e| e.field.clone()).collect();
    assert_eq!(fields, ["methods.loop.block", "dispatch[1].sizes"], "{e}");
}

/// Schema errors do not stop reading: wrong types and missing keys in one
/// table leave every later table checked, each error is located once, and
/// no key is reported missing because an earlier error was read past.
#[test]
fn every_schema_error_in_a_file_is_reported() {
    let fields_of = |text: &str| -> Vec<String> {
        let e = error_of(text);
        e.all().iter().map(|e| e.field.clone()).collect()
    };
    // Two wrong types in different tables, the first a required key.
    let text = replace("kind = \"unrolled\"", "kind = 5")
        .replace("kind = \"rep_movs\"", "kind = \"rep_movs\"\nunit = \"x\"");
    assert_eq!(
        fields_of(&text),
        ["methods.loop.kind", "methods.movsb.unit"]
    );
    // A wrong type at the top level, then one in a table: no `missing`.
    let text = replace("arch = \"x86_64\"", "arch = 5").replace("block = 64", "block = \"x\"");
    let e = error_of(&text);
    assert!(!e.to_string().contains("missing"), "{e}");
    assert_eq!(fields_of(&text), ["arch", "methods.loop.block"]);
    // A missing key in an array of tables, then a wrong type after it.
    let text = replace("use = \"loop\"\n", "").replace("sizes = \"65..\"", "sizes = 65");
    let e = error_of(&text);
    assert_eq!(
        fields_of(&text),
        ["dispatch[0].use", "dispatch[1].sizes"],
        "{e}"
    );
    assert_eq!(e.line, line_of(&text, "[[dispatch]]"), "{e}");
    // Wrong types inside an inline table, each at its own column.
    let text = replace(
        "registers = 4",
        "registers = 4\nalign = { pointer = 5, to = \"x\", min_size = 8 }",
    );
    let e = error_of(&text);
    assert_eq!(
        fields_of(&text),
        ["methods.loop.align.pointer", "methods.loop.align.to"],
        "{e}"
    );
    let line = line_of(&text, "align = ");
    assert!(e.all().iter().all(|e| e.line == line), "{e}");
    assert!(e.all()[0].column < e.all()[1].column, "{e}");
}

/// The CLI reports both errors of a file with two wrong types in different
/// tables, exits 2 and writes nothing.
#[test]
fn the_cli_reports_every_schema_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        replace("block = 64", "block = \"x\"").replace("sizes = \"65..\"", "sizes = 65"),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .arg("emit")
        .arg(&bad)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error in `methods.loop.block`")
            && stderr.contains("error in `dispatch[1].sizes`")
            && stderr.contains("2 errors in"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("u32") && !stderr.contains("Raw"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0);
}

#[test]
fn messages_suggest_and_speak_the_file_s_language() {
    let e = error_of(&replace("registers = 4", "registers = 4\ngroupng = \"x\""));
    assert!(e.message.contains("did you mean `grouping`?"), "{e}");
    let e = error_of(&replace("kind = \"rep_movs\"", "kind = \"rep_mov\""));
    assert!(e.message.contains("did you mean `rep_movs`?"), "{e}");
    for (from, to) in [
        ("width = 8", "width = -1"),
        ("width = 8", "width = 1.5"),
        ("registers = 4", "registers = 4\nalign = 5"),
        (
            "registers = 4",
            "registers = 4\nprefetch = { kind = \"t0\", distance = \"x\" }",
        ),
        ("arch = \"x86_64\"", "arch = \"x86_64\"\ndirections = [1]"),
    ] {
        let e = error_of(&replace(from, to));
        for rust in [
            "u32",
            "u64",
            "struct",
            "enum",
            "Raw",
            "OneOrMany",
            "sequence",
        ] {
            assert!(!e.message.contains(rust), "`{rust}` in: {e}");
        }
    }
}

#[test]
fn an_error_caused_by_the_arch_override_says_so() {
    let e = parse(
        Path::new("case.toml"),
        BASE,
        Some(copygen::front::strategy::Arch::I386),
    )
    .expect_err("8-byte registers do not exist on i386");
    assert!(
        e.message.contains("`--arch i386`") && e.message.contains("for x86_64"),
        "{e}"
    );
    // An error of the file itself does not blame the override.
    let bad = replace("block = 64", "block = 60");
    let e = parse(
        Path::new("case.toml"),
        &bad,
        Some(copygen::front::strategy::Arch::I386),
    )
    .unwrap_err();
    assert!(!e.to_string().contains("--arch"), "{e}");
}

#[test]
fn a_rep_movs_register_limit_points_at_the_convention() {
    let text = replace(
        "arch = \"x86_64\"",
        "arch = \"x86_64\"\n[linux]\nconvention = \"rep_movs\"",
    );
    let e = error_of(&text);
    let line = line_of(&text, "convention = ");
    assert!(
        e.message.contains(&format!(
            "`rep_movs` convention (`linux.convention`, line {line})"
        )),
        "{e}"
    );
}

#[test]
fn a_prefetch_that_can_never_run_is_a_warning_naming_the_field() {
    let text = replace(
        "registers = 4",
        "registers = 4\nprefetch = { kind = \"t0\", distance = [32, 256] }",
    );
    let (_, warnings) =
        copygen::front::parse::parse_with_warnings(Path::new("case.toml"), &text, None)
            .expect("valid");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = warnings[0].to_string();
    assert!(
        w.contains("warning in `methods.loop.prefetch.distance`")
            && w.contains("+256 can never run"),
        "{w}"
    );
    // A distance the loop reaches is fine.
    let text = replace(
        "registers = 4",
        "registers = 4\nprefetch = { kind = \"t0\", distance = 32 }",
    );
    let (_, warnings) =
        copygen::front::parse::parse_with_warnings(Path::new("case.toml"), &text, None).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    // The CLI prints it and goes on.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("p.toml");
    std::fs::write(
        &f,
        replace(
            "registers = 4",
            "registers = 4\nprefetch = { kind = \"t0\", distance = 256 }",
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["emit", "--flavor", "linux"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("methods.loop.prefetch.distance"));
}

/// Missing, folder, not-UTF-8 and empty-named inputs: exit 2 with the file
/// (and for bad bytes, the line and column) named, in every command.
#[test]
fn unreadable_inputs_exit_2_with_a_location() {
    let dir = tempfile::tempdir().unwrap();
    let latin1 = dir.path().join("latin1.toml");
    std::fs::write(&latin1, b"name = \"t\"\ndescription = \"caf\xe9\"\n").unwrap();
    let missing = dir.path().join("missing.toml");
    let folder = dir.path().join("folder.toml");
    std::fs::create_dir(&folder).unwrap();
    for (file, shown) in [
        (&latin1, format!("{}:2:19:", latin1.display())),
        (
            &missing,
            format!("{}: error: cannot read", missing.display()),
        ),
        (&folder, format!("{}: error: is a folder", folder.display())),
    ] {
        for cmd in [
            &["emit"][..],
            &["jit"],
            &["verify", "--static"],
            &["bench", "--sizes", "8"],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
                .args(cmd)
                .arg(file)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "{cmd:?} {}: {stderr}",
                file.display()
            );
            assert!(
                stderr.contains(&shown),
                "{cmd:?}: want {shown:?} in {stderr}"
            );
        }
    }
}
