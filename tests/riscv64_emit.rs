//! RISC-V (rv64) output: every riscv64 preset's files assemble with
//! riscv64-linux-gnu-gcc (the linux flavour with the shims of the riscv
//! headers), with one exception-table entry per user access; the linux
//! flavour clears SR_SUM on every path that leaves the routine; and a
//! `shift_combine` method anywhere but riscv64 is refused with its place.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use copygen::checks::objfile::{assemble_text, Assemble};
use copygen::front::catalog::catalog;
use copygen::front::parse::parse;
use copygen::front::strategy::{Arch, Flavor, Strategy};

fn presets() -> Vec<Strategy> {
    let v: Vec<_> = catalog()
        .expect("catalog validates")
        .into_iter()
        .filter(|s| s.arch == Arch::Riscv64)
        .collect();
    let names: BTreeSet<&str> = v.iter().map(|s| s.name.as_str()).collect();
    for n in ["riscv-uaccess", "riscv-word-loop", "riscv-misaligned-fast"] {
        assert!(names.contains(n), "{n} is a preset: {names:?}");
    }
    v
}

#[test]
fn every_preset_assembles_in_both_flavors_with_one_entry_per_user_access() {
    for s in presets() {
        for flavor in Flavor::ALL {
            let text = copygen::output::render::render(&s, flavor);
            let obj = assemble_text(&text, "t.S", &Assemble::new(Arch::Riscv64, flavor))
                .unwrap_or_else(|e| panic!("{} {flavor}: {e:#}", s.name));
            assert_eq!(obj.arch, Arch::Riscv64);
            let printed: usize = copygen::backend::file_functions(&s, flavor)
                .iter()
                .map(|f| f.extable.len())
                .sum();
            assert!(printed > 0, "{} {flavor}: user accesses", s.name);
            assert_eq!(obj.extable.len(), printed, "{} {flavor}", s.name);
            // linux: the kernel's 12-byte entries with EX_TYPE_FIXUP (1),
            // standalone: two words.
            let want = (flavor == Flavor::Linux).then_some(1);
            for e in &obj.extable {
                assert_eq!(e.type_word, want, "{} {flavor}: {e:?}", s.name);
                assert_eq!(e.insn.section, ".text");
                assert_eq!(e.fixup.section, ".text");
            }
        }
    }
}

/// The linux flavour's functions: each one's body (instructions and
/// labels) and the fixup labels of its table entries.
fn functions(text: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim).peekable();
    while let Some(l) = lines.next() {
        if !l.starts_with("SYM_FUNC_START(") {
            continue;
        }
        let mut body = vec![l.to_string()];
        for l in lines.by_ref() {
            if l.starts_with("SYM_FUNC_END(") {
                break;
            }
            if !l.is_empty() && !l.starts_with("/*") {
                body.push(l.to_string());
            }
        }
        let mut fixups = Vec::new();
        while let Some(e) = lines.peek().and_then(|l| l.strip_prefix("_asm_extable\t")) {
            fixups.push(e.split(", ").nth(1).expect("fixup").to_string());
            lines.next();
        }
        out.push((body, fixups));
    }
    out
}

/// From every line reachable from the entry (and from every exception
/// table fixup), every `ret` is preceded by `li t6, SR_SUM; csrc
/// CSR_STATUS, t6` with no write of t6 between: a walk over the text's
/// control flow (fall through, `j`, conditional branches).
fn sum_cleared_before_every_ret(text: &str) -> Result<usize, String> {
    let fs = functions(text);
    if fs.is_empty() {
        return Err("no function".into());
    }
    let mut rets = 0;
    for (lines, fixups) in &fs {
        rets += function_clears_sum(lines, fixups)?;
    }
    Ok(rets)
}

fn function_clears_sum(lines: &[String], fixups: &[String]) -> Result<usize, String> {
    let labels: BTreeMap<&str, usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.strip_suffix(':').map(|n| (n, i)))
        .collect();
    if lines.get(1).map(String::as_str) != Some("li\tt6, SR_SUM")
        || lines.get(2).map(String::as_str) != Some("csrs\tCSR_STATUS, t6")
    {
        return Err(format!(
            "the routine does not open user access first: {:?}",
            &lines[..3.min(lines.len())]
        ));
    }
    let fixups: Vec<usize> = fixups.iter().map(|f| labels[f.as_str()]).collect();
    // State: is SR_SUM in t6 and cleared? (open, t6 holds SR_SUM, closed)
    let mut seen = BTreeSet::new();
    let mut work: Vec<(usize, bool, bool)> = vec![(3, true, false)];
    work.extend(fixups.iter().map(|&f| (f, false, false)));
    let mut rets = 0;
    while let Some((i, t6_sum, closed)) = work.pop() {
        if !seen.insert((i, t6_sum, closed)) {
            continue;
        }
        let Some(l) = lines.get(i) else {
            return Err(format!("falls off the end after line {i}"));
        };
        let (op, args) = l.split_once('\t').unwrap_or((l.as_str(), ""));
        let writes_t6 = args.starts_with("t6,");
        let next = |t6, c| (i + 1, t6, c);
        match op {
            "ret" => {
                if !closed {
                    return Err(format!("`ret` at body line {i} with user access open"));
                }
                rets += 1;
            }
            "j" => work.push((labels[args], t6_sum, closed)),
            "beqz" | "bnez" | "bltu" | "bgeu" | "beq" | "bne" => {
                let target = args.rsplit(", ").next().unwrap();
                work.push((labels[target], t6_sum, closed));
                work.push(next(t6_sum, closed));
            }
            "li" if args == "t6, SR_SUM" => work.push(next(true, closed)),
            "csrc" if args == "CSR_STATUS, t6" => {
                if !t6_sum {
                    return Err(format!("csrc at body line {i} without SR_SUM in t6"));
                }
                work.push(next(t6_sum, true));
            }
            "csrs" => return Err(format!("csrs again at body line {i}")),
            _ if writes_t6 => work.push(next(false, closed)),
            // Any user access after the clear would fault in the kernel.
            _ => work.push(next(t6_sum, closed)),
        }
    }
    Ok(rets)
}

#[test]
fn the_linux_flavor_clears_sr_sum_on_every_exit_path() {
    for s in presets() {
        let text = copygen::output::render::render(&s, Flavor::Linux);
        let rets =
            sum_cleared_before_every_ret(&text).unwrap_or_else(|e| panic!("{}: {e}", s.name));
        // The success returns and the fixups' one.
        assert!(rets >= 2, "{}: {rets} returns reached", s.name);
        // Only the linux flavour touches sstatus.
        let standalone = copygen::output::render::render(&s, Flavor::Standalone);
        assert!(!standalone.contains("CSR_STATUS") && !standalone.contains("SR_SUM"));
    }
}

#[test]
fn the_exit_check_sees_a_return_that_leaves_sum_set() {
    let s = presets().into_iter().next().unwrap();
    let text = copygen::output::render::render(&s, Flavor::Linux);
    let clear = "\tli\tt6, SR_SUM\n\tcsrc\tCSR_STATUS, t6\n\tli\ta0, 0\n\tret\n";
    assert!(text.contains(clear));
    let broken = text.replacen(clear, "\tli\ta0, 0\n\tret\n", 1);
    let e = sum_cleared_before_every_ret(&broken).expect_err("a return with SUM set");
    assert!(e.contains("user access open"), "{e}");
}

const X86_WITH_SHIFT: &str = r#"name = "t"
description = "test"
arch = "x86_64"

[methods.shift]
kind = "shift_combine"

[[dispatch]]
sizes = "0.."
use = "shift"
"#;

#[test]
fn shift_combine_is_refused_off_riscv_with_file_line_and_field() {
    let e = parse(Path::new("s.toml"), X86_WITH_SHIFT, None).expect_err("refused on x86_64");
    assert_eq!(e.field, "methods.shift.kind");
    assert_eq!(e.line, 6, "{e:?}");
    assert!(e.message.contains("RISC-V"), "{}", e.message);
    // The same method on riscv64 is accepted.
    let rv = X86_WITH_SHIFT.replace("x86_64", "riscv64");
    parse(Path::new("s.toml"), &rv, None).expect("riscv64 has it");
    for arch in [Arch::I386, Arch::Armv6, Arch::Aarch64] {
        let e = parse(Path::new("s.toml"), X86_WITH_SHIFT, Some(arch)).expect_err("refused");
        assert_eq!(e.field, "methods.shift.kind", "{arch}");
    }
    // The CLI: exit 2, the place named, nothing written.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, X86_WITH_SHIFT).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .arg("emit")
        .arg(&bad)
        .arg("-o")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.toml:6") && stderr.contains("methods.shift.kind"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0);
}

#[test]
fn shift_combine_fields_are_checked() {
    let rv = X86_WITH_SHIFT.replace("x86_64", "riscv64");
    for (line, field, msg) in [
        ("width = 4", "methods.shift.width", "SZREG"),
        (
            "align = { pointer = \"src\", to = 8, min_size = 8 }",
            "methods.shift.align.pointer",
            "aligns `dst`",
        ),
        (
            "align = { pointer = \"dst\", to = 16, min_size = 16 }",
            "methods.shift.align.to",
            "8 bytes",
        ),
        ("block = 64", "methods.shift.block", "means nothing"),
    ] {
        let text = rv.replace(
            "kind = \"shift_combine\"",
            &format!("kind = \"shift_combine\"\n{line}"),
        );
        let e = parse(Path::new("s.toml"), &text, None).expect_err(line);
        assert_eq!(e.field, field, "{line}: {e:?}");
        assert_eq!(e.line, 7, "{line}");
        assert!(e.message.contains(msg), "{line}: {}", e.message);
    }
}

#[test]
fn list_and_diff_show_riscv64() {
    let list = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .arg("list")
        .output()
        .unwrap();
    assert!(list.status.success());
    let list = String::from_utf8_lossy(&list.stdout);
    for n in ["riscv-uaccess", "riscv-word-loop", "riscv-misaligned-fast"] {
        assert!(
            list.lines()
                .any(|l| l.starts_with(n) && l.contains("riscv64")),
            "{list}"
        );
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("generator/strategies");
    let out = Command::new(env!("CARGO_BIN_EXE_copygen"))
        .args(["diff", "--no-color", "--flavor", "standalone"])
        .arg(dir.join("riscv-word-loop.toml"))
        .arg(dir.join("riscv-misaligned-fast.toml"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // riscv64-linux-gnu-objdump's listing, with the table entries marked.
    assert!(text.contains("riscv_misaligned_fast_from_user"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("+\tld a") && l.contains("user → fixup")),
        "{text}"
    );
    assert!(!text.contains("no riscv64 listings"), "{text}");
}

/// An alignment guard tests the low bits of the pointers: with `andi`
/// where its 12-bit immediate holds the mask (up to 2048), with `slli`
/// (the low bits moved to the top, zero alike) for 4096, whose mask 4095
/// it cannot hold. Both keep the contract under fault injection.
#[test]
fn an_alignment_guard_of_any_size_is_tested_and_keeps_the_contract() {
    for (to, test) in [(2048, "andi\tt5, a3, 2047"), (4096, "slli\tt5, a3, 52")] {
        let text = format!(
            "name = \"al{to}\"\ndescription = \"an alignment guard\"\narch = \"riscv64\"\n\
             [methods.b]\nkind = \"bytes\"\n\
             [methods.w]\nkind = \"unrolled\"\nblock = 16\nwidth = 8\nregisters = 2\ntail = \"words\"\n\
             [[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n\
             [[dispatch.guard]]\naligned = {{ pointer = \"both\", to = {to} }}\nuse = \"w\"\n"
        );
        let s = parse(Path::new("al.toml"), &text, None).unwrap();
        let asm = copygen::output::render::render(&s, Flavor::Standalone);
        let at = asm
            .find(&format!("or\ta3, a0, a1\n\t{test}\n\tbeqz\tt5, "))
            .unwrap_or_else(|| panic!("{to}: no `{test}` test of both pointers:\n{asm}"));
        assert!(at > 0);
        let r = copygen::checks::faultinject::run_strategy(&s).unwrap();
        for x in &r.routines {
            assert!(
                x.cases > 90_000 && x.violations == 0,
                "{to} {}: {:?}",
                x.symbol,
                r.details
            );
        }
    }
}
