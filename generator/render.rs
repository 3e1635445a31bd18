//! File structure: the tera templates in `templates/` (embedded in the
//! binary) wrap the printed functions with the header, the flavour's
//! macros and the exception table.

use std::sync::OnceLock;

use serde::Serialize;
use tera::{Context, Tera};

use crate::backend::{self, Function};
use crate::ir::{Arch, Convention, Flavor, Strategy};

const TEMPLATES: &[(&str, &str)] = &[
    ("header", include_str!("../templates/header.S.tera")),
    (
        "x86-standalone",
        include_str!("../templates/x86-standalone.S.tera"),
    ),
    ("x86-linux", include_str!("../templates/x86-linux.S.tera")),
    (
        "armv6-standalone",
        include_str!("../templates/armv6-standalone.S.tera"),
    ),
    (
        "armv6-linux",
        include_str!("../templates/armv6-linux.S.tera"),
    ),
];

fn tera() -> &'static Tera {
    static TERA: OnceLock<Tera> = OnceLock::new();
    TERA.get_or_init(|| {
        let mut t = Tera::default();
        t.add_raw_templates(TEMPLATES.iter().copied())
            .expect("embedded templates parse");
        t.autoescape_on(vec![]);
        t
    })
}

/// Where a generated file goes: `emitted/<arch>/<flavor>/<name>.S`.
pub fn emitted_path(s: &Strategy, flavor: Flavor) -> String {
    format!("{}/{}/{}.S", s.arch, flavor, s.name)
}

/// A one-line description of the calling convention of `s` in `flavor`.
pub fn abi_text(s: &Strategy, flavor: Flavor) -> &'static str {
    match (s.arch, flavor) {
        (Arch::X86_64, Flavor::Standalone) => "SysV: rdi=to rsi=from rdx=n -> rax",
        (Arch::X86_64, Flavor::Linux) => match s.linux.convention {
            Convention::C => "C convention: rdi=to rsi=from rdx=n -> rax",
            Convention::RepMovs => {
                "rep_movs convention: rdi=to rsi=from rcx=n -> rcx, clobbers rax"
            }
        },
        (Arch::I386, Flavor::Standalone) => "cdecl: to, from, n on the stack -> eax",
        (Arch::I386, Flavor::Linux) => "-mregparm=3: eax=to edx=from ecx=n -> eax",
        (Arch::Armv6, _) => "AAPCS: r0=to r1=from r2=n -> r0",
    }
}

#[derive(Serialize)]
struct FileContext<'a> {
    source: &'a str,
    name: &'a str,
    arch: &'a str,
    flavor: &'a str,
    abi: &'a str,
    description: Vec<&'a str>,
    params: Vec<String>,
    functions: Vec<Function>,
    extable: &'static str,
    /// The kernel the linux flavour is for: "6.1", "6.12", or "" for both.
    kernel: &'static str,
}

/// Render the whole `.S` file of `s` in `flavor`.
pub fn render(s: &Strategy, flavor: Flavor) -> String {
    let functions = backend::functions(s, flavor)
        .into_iter()
        .map(|(_, f)| f)
        .collect();
    render_functions(s, flavor, functions)
}

/// Render the file around functions already printed for `s` in `flavor`.
pub fn render_functions(s: &Strategy, flavor: Flavor, functions: Vec<Function>) -> String {
    let params = s
        .text
        .lines()
        .map(|l| l.replace("*/", "* /").trim_end().to_string())
        .collect();
    let ctx = FileContext {
        source: &s.source,
        name: &s.name,
        arch: s.arch.name(),
        flavor: flavor.name(),
        abi: abi_text(s, flavor),
        description: s.description.lines().map(str::trim).collect(),
        params,
        functions,
        extable: match s.linux.extable {
            crate::ir::ExtableFormat::Relative => "relative",
            crate::ir::ExtableFormat::Absolute => "absolute",
            crate::ir::ExtableFormat::Copy => "copy",
        },
        kernel: s.linux.kernel.map_or("", |k| k.name()),
    };
    let template = match s.arch {
        Arch::X86_64 | Arch::I386 => format!("x86-{}", flavor.name()),
        Arch::Armv6 => format!("armv6-{}", flavor.name()),
    };
    let ctx = Context::from_serialize(&ctx).expect("context serialises");
    let mut out = tera()
        .render(&template, &ctx)
        .unwrap_or_else(|e| panic!("template {template}: {e:?}"));
    // One trailing newline, no trailing blanks: byte-stable output.
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

/// Whether this build can render `s` (an arch without templates cannot).
pub fn has_template(s: &Strategy) -> bool {
    let prefix = match s.arch {
        Arch::X86_64 | Arch::I386 => "x86-",
        Arch::Armv6 => "armv6-",
    };
    TEMPLATES.iter().any(|(n, _)| n.starts_with(prefix))
}
