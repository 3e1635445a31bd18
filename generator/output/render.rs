//! File structure: the tera templates in `templates/` (embedded in the
//! binary) wrap the printed functions with the header ([`super::header`]),
//! the flavour's macros and the exception table.

use std::sync::OnceLock;

use serde::Serialize;
use tera::{Context, Tera};

use super::header::Header;
use crate::backend::{self, Function};
use crate::front::strategy::{Arch, Flavor, Strategy};
use crate::kernel::version;

const TEMPLATES: &[(&str, &str)] = &[
    ("header", include_str!("../../templates/header.S.tera")),
    (
        "x86-standalone",
        include_str!("../../templates/x86-standalone.S.tera"),
    ),
    (
        "x86-linux",
        include_str!("../../templates/x86-linux.S.tera"),
    ),
    (
        "armv6-standalone",
        include_str!("../../templates/armv6-standalone.S.tera"),
    ),
    (
        "armv6-linux",
        include_str!("../../templates/armv6-linux.S.tera"),
    ),
    (
        "aarch64-standalone",
        include_str!("../../templates/aarch64-standalone.S.tera"),
    ),
    (
        "aarch64-linux",
        include_str!("../../templates/aarch64-linux.S.tera"),
    ),
    (
        "riscv64-standalone",
        include_str!("../../templates/riscv64-standalone.S.tera"),
    ),
    (
        "riscv64-linux",
        include_str!("../../templates/riscv64-linux.S.tera"),
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

#[derive(Serialize)]
struct FileContext<'a> {
    #[serde(flatten)]
    header: Header<'a>,
    functions: Vec<Function>,
    extable: &'static str,
    /// The entry points pick a per-CPU variant with `ALTERNATIVE` (linux).
    alternatives: bool,
    /// The header of `EXPORT_SYMBOL` in the tree the linux flavour is for,
    /// or "" for a file for every tree (which picks it by version).
    export_header: &'static str,
    export_before_move: &'static str,
    /// `KERNEL_VERSION` arguments of the releases a file for every tree
    /// tests (`kernel/version.rs`): `EXPORT_SYMBOL`'s header moved, and
    /// `EX_TYPE_COPY` removed (also in prose, `6.4`).
    export_moved: String,
    export_moved_name: String,
    copy_removed: String,
    copy_removed_name: String,
}

/// Render the whole `.S` file of `s` in `flavor`.
pub fn render(s: &Strategy, flavor: Flavor) -> String {
    let functions = backend::file_functions(s, flavor);
    render_functions(s, flavor, functions)
}

/// Render the file around functions already printed for `s` in `flavor`.
pub fn render_functions(s: &Strategy, flavor: Flavor, functions: Vec<Function>) -> String {
    let ctx = FileContext {
        header: Header::new(s, flavor),
        functions,
        extable: match s.linux.extable {
            crate::front::strategy::ExtableFormat::Relative => "relative",
            crate::front::strategy::ExtableFormat::Absolute => "absolute",
            // A file for both kernels picks _ASM_EXTABLE_CPY by version.
            crate::front::strategy::ExtableFormat::Copy
                if version::extable_copy_only_before(s.linux.kernel).is_some() =>
            {
                "copy_by_version"
            }
            crate::front::strategy::ExtableFormat::Copy => "copy",
        },
        alternatives: !s.variants.is_empty(),
        export_header: s.linux.kernel.map_or("", |k| k.export_header(s.arch)),
        export_before_move: version::export_header_before_move(s.arch),
        export_moved: version::EXPORT_H_MOVED.c_args(),
        export_moved_name: version::EXPORT_H_MOVED.to_string(),
        copy_removed: version::EX_TYPE_COPY_REMOVED.c_args(),
        copy_removed_name: version::EX_TYPE_COPY_REMOVED.to_string(),
    };
    let template = match s.arch {
        Arch::X86_64 | Arch::I386 => format!("x86-{}", flavor.name()),
        Arch::Armv6 => format!("armv6-{}", flavor.name()),
        Arch::Aarch64 => format!("aarch64-{}", flavor.name()),
        Arch::Riscv64 => format!("riscv64-{}", flavor.name()),
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
