//! `verify/kernel/lib.sh` against the one toolchain table
//! (`generator/toolchain.rs`): the compiler and flags that build the boot
//! test's init, and the binutils prefix, per arch.

use std::collections::BTreeMap;
use std::path::Path;

use copygen::front::strategy::Arch;
use copygen::toolchain::toolchain;

/// The `[key]="value"` rows of `declare -A <name>=(...)` in `text`.
fn bash_table(text: &str, name: &str) -> BTreeMap<String, String> {
    let open = format!("declare -A {name}=(");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("lib.sh has no `{open}`"));
    let body = &text[start + open.len()..];
    let body = &body[..body.find(')').expect("table closed")];
    let mut rows = BTreeMap::new();
    // Rows are `[key]="value"` or `[key]=value`, on one line or several.
    for part in body.split('[').skip(1) {
        let (key, rest) = part.split_once("]=").expect("a [key]=value row");
        let value = rest.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.split_once('"').map(|(v, _)| v))
            .unwrap_or_else(|| value.split_whitespace().next().unwrap_or(""));
        rows.insert(key.to_string(), value.to_string());
    }
    rows
}

fn lib_sh() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("verify/kernel/lib.sh");
    std::fs::read_to_string(p).unwrap()
}

const ARCHES: [(&str, Arch); 5] = [
    ("x86_64", Arch::X86_64),
    ("i386", Arch::I386),
    ("armv6", Arch::Armv6),
    ("aarch64", Arch::Aarch64),
    ("riscv64", Arch::Riscv64),
];

/// What lib.sh's `kernel_init_cc` must be for `arch`.
fn init_cc(arch: Arch) -> String {
    let t = toolchain(arch);
    let mut words = vec![t.cc.program];
    words.extend(t.arch_flags);
    words.push("-static");
    words.join(" ")
}

fn drift(text: &str) -> Vec<String> {
    let init = bash_table(text, "kernel_init_cc");
    let cross = bash_table(text, "kernel_cross");
    let mut out = Vec::new();
    for (name, arch) in ARCHES {
        let want = init_cc(arch);
        if init.get(name) != Some(&want) {
            out.push(format!(
                "kernel_init_cc[{name}] is {:?}, toolchain.rs gives {want:?}",
                init.get(name)
            ));
        }
        let objdump = toolchain(arch).objdump.program;
        let prefix = objdump.strip_suffix("objdump").expect("an objdump");
        if cross.get(name).map(String::as_str) != Some(prefix) {
            out.push(format!(
                "kernel_cross[{name}] is {:?}, toolchain.rs's objdump is {objdump}",
                cross.get(name)
            ));
        }
        let cc_prefix = toolchain(arch)
            .cc
            .program
            .strip_suffix("gcc")
            .expect("a gcc");
        if cc_prefix != prefix {
            out.push(format!("{name}: the compiler and objdump prefixes differ"));
        }
    }
    out
}

#[test]
fn lib_sh_uses_the_toolchain_table() {
    let d = drift(&lib_sh());
    assert!(
        d.is_empty(),
        "verify/kernel/lib.sh has drifted:\n{}",
        d.join("\n")
    );
}

#[test]
fn the_check_sees_a_dropped_flag_and_a_wrong_prefix() {
    let text = lib_sh();
    let no_marm = text.replace("-march=armv6 -marm -static", "-static -march=armv6");
    assert_ne!(no_marm, text);
    assert!(drift(&no_marm)
        .iter()
        .any(|d| d.contains("kernel_init_cc[armv6]")));
    let wrong = text.replace(
        "[aarch64]=\"aarch64-linux-gnu-\"",
        "[aarch64]=\"aarch64-linux-\"",
    );
    assert_ne!(wrong, text);
    assert!(drift(&wrong)
        .iter()
        .any(|d| d.contains("kernel_cross[aarch64]")));
}
