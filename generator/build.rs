//! Embeds the built-in strategy catalog (`generator/strategies/*.toml`)
//! and the git revision the binary is built from (`--version`).
use std::{env, fs, path::Path, process::Command};

fn main() {
    git_revision();
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

/// `COPYGEN_GIT_REVISION`: the commit checked out, or a note that there is
/// none (a tarball builds too). Rebuilt when HEAD or the branch moves.
fn git_revision() {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let revision = git(&["rev-parse", "--short=12", "HEAD"]);
    if revision.is_some() {
        let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(branch);
        }
        for name in watched {
            if let Some(path) = git(&["rev-parse", "--git-path", &name]) {
                if Path::new(&path).exists() {
                    println!("cargo:rerun-if-changed={path}");
                }
            }
        }
    }
    println!(
        "cargo:rustc-env=COPYGEN_GIT_REVISION={}",
        revision.as_deref().unwrap_or("no git revision")
    );
}
