//! A strategy file arrives in somebody else's patch: nothing it says may
//! reach a generated file except through a validated, escaped channel, and
//! no absolute path of the machine that emitted it may leak into the file.

use std::path::Path;
use std::process::Command;

use copygen::front::parse::parse;
use copygen::front::strategy::Flavor;
use copygen::output::header::{comment_text, restated_strategy, uncomment_text};
use copygen::output::render::render;

/// Valid x86_64 strategy whose description is `description` (TOML source).
fn strategy_with_description(description: &str) -> String {
    format!(
        "name = \"t\"\ndescription = {description}\narch = \"x86_64\"\n\n\
         [methods.bytes]\nkind = \"bytes\"\n\n[[dispatch]]\nsizes = \"0..\"\nuse = \"bytes\"\n"
    )
}

/// Descriptions that tried to end the header comment and define a `ret`
/// that returns 0, or to splice lines.
const HOSTILE: &[&str] = &[
    r#""*/ .macro ret; xorl %eax,%eax; .byte 0xc3; .endm /*""#,
    "\"\"\"\nfine\n*/\n#define ret xorl %eax,%eax; .byte 0xc3\n/*\n\"\"\"",
    r#""a * / b */ c /*/ d **/ e""#,
    "\"\"\"\nline ending in a backslash \\\\\n*/ .macro ret; .endm\n\"\"\"",
    "'''\nliteral */ .macro ret; .endm /* \\\n'''",
];

/// Everything from the file's start to the end of its first comment: the
/// header must be that comment, and contain the whole strategy.
/// (A linux-flavour file's SPDX line comes first and is not the header.)
fn first_comment(text: &str) -> &str {
    let text = match text.strip_prefix("/* SPDX-License-Identifier: GPL-2.0-only */\n") {
        Some(rest) => rest,
        None => text,
    };
    assert!(text.starts_with("/*"), "{text}");
    let end = text.find("*/").expect("the header comment ends") + 2;
    &text[..end]
}

#[test]
fn a_description_cannot_end_the_header_comment() {
    let plain = parse(
        Path::new("t.toml"),
        &strategy_with_description("\"plain\""),
        None,
    )
    .unwrap();
    for d in HOSTILE {
        let toml = strategy_with_description(d);
        let s = parse(Path::new("t.toml"), &toml, None).unwrap_or_else(|e| panic!("{d}: {e}"));
        for flavor in Flavor::ALL {
            let out = render(&s, flavor);
            let header = first_comment(&out);
            // The comment ends where the header ends: right after the
            // restated strategy, on a line of its own.
            assert!(header.ends_with("\n */"), "{flavor} {d}:\n{header}");
            assert!(header.contains("The strategy, as written:"), "{header}");
            assert!(!header[2..].contains("/*"), "a nested comment:\n{header}");
            // After the header, the file is exactly what a plain
            // description gives: nothing of the description got out.
            let rest = &out[header.len()..];
            let plain = render(&plain, flavor);
            assert_eq!(rest, &plain[first_comment(&plain).len()..], "{flavor} {d}");
        }
    }
}

/// The standalone file through the C preprocessor and assembler: the
/// routine still has its own `ret`, no macro appeared.
#[test]
fn a_hostile_description_assembles_to_the_same_code() {
    let dir = tempfile::tempdir().unwrap();
    let plain = parse(
        Path::new("t.toml"),
        &strategy_with_description("\"x\""),
        None,
    )
    .unwrap();
    let code_of = |text: &str, name: &str| -> Vec<u8> {
        let src = dir.path().join(format!("{name}.S"));
        let obj = dir.path().join(format!("{name}.o"));
        std::fs::write(&src, text).unwrap();
        let out = Command::new("gcc")
            .args(["-c", "-Wall"])
            .arg(&src)
            .arg("-o")
            .arg(&obj)
            .output()
            .expect("gcc (Debian package gcc)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "cpp/as warn: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let o = Command::new("objcopy")
            .args(["-O", "binary", "-j", ".text"])
            .arg(&obj)
            .arg(dir.path().join(format!("{name}.bin")))
            .output()
            .unwrap();
        assert!(o.status.success());
        std::fs::read(dir.path().join(format!("{name}.bin"))).unwrap()
    };
    let want = code_of(&render(&plain, Flavor::Standalone), "plain");
    for (i, d) in HOSTILE.iter().enumerate() {
        let s = parse(Path::new("t.toml"), &strategy_with_description(d), None).unwrap();
        let got = code_of(&render(&s, Flavor::Standalone), &format!("hostile{i}"));
        assert_eq!(got, want, "{d}");
    }
}

/// What the header restates reads back as the very strategy (review
/// re-validates old revisions from it).
#[test]
fn the_restated_strategy_reads_back_exactly() {
    for d in HOSTILE {
        let toml = strategy_with_description(d);
        let s = parse(Path::new("t.toml"), &toml, None).unwrap();
        let back = restated_strategy(&render(&s, Flavor::Linux), None)
            .expect("a header")
            .expect("valid");
        assert_eq!(back.description, s.description, "{d}");
    }
    for line in ["*/", "* /", "/*", "/ *", "a*  /b", "*/*/", "**//", "/ */ *"] {
        let escaped = comment_text(line);
        assert!(
            !escaped.contains("*/") && !escaped.contains("/*"),
            "{escaped}"
        );
        assert_eq!(uncomment_text(&escaped), line);
    }
}

#[test]
fn the_header_records_no_absolute_path() {
    let dir = tempfile::tempdir().unwrap();
    let toml = strategy_with_description("\"x\"");
    // Inside a checkout: relative to it.
    let checkout = dir.path().join("work");
    std::fs::create_dir_all(checkout.join(".git")).unwrap();
    std::fs::create_dir_all(checkout.join("strategies")).unwrap();
    let inside = checkout.join("strategies/mine.toml");
    std::fs::write(&inside, &toml).unwrap();
    // Outside any: its file name.
    let outside = dir.path().join("loose.toml");
    std::fs::write(&outside, &toml).unwrap();
    for (file, want) in [(&inside, "strategies/mine.toml"), (&outside, "loose.toml")] {
        let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
            .args(["emit", "--flavor", "linux"])
            .arg(file)
            .current_dir("/")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(&format!(
                "Code generated by copygen from {want}. DO NOT EDIT."
            )),
            "{}",
            text.lines().next().unwrap()
        );
        assert!(
            !text.contains(&*dir.path().to_string_lossy()),
            "an absolute path leaked"
        );
    }
}
