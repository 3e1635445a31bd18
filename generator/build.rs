//! Embeds the built-in strategy catalog (`generator/strategies/*.toml`).
use std::{env, fs, path::Path};

fn main() {
    let dir = Path::new("generator/strategies");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = fs::read_dir(dir)
        .expect("generator/strategies exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let mut code = String::from("/// (path relative to the repository, text) of each built-in strategy.\npub const CATALOG: &[(&str, &str)] = &[\n");
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
        let rel = f.display().to_string();
        let abs = fs::canonicalize(f).expect("canonical path");
        code.push_str(&format!(
            "    ({rel:?}, include_str!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("catalog.rs");
    fs::write(out, code).expect("write catalog.rs");
}
