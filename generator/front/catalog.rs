//! The built-in strategies and the checkout they live in.
//!
//! In a checkout (a folder above the working directory holding
//! `Cargo.toml` and `generator/strategies/`), the catalog is the strategy
//! files on disk, so an edit takes effect at once. The copy embedded at
//! build time serves only a binary run outside any checkout.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::front::parse;
use crate::front::strategy::Strategy;

include!(concat!(env!("OUT_DIR"), "/catalog.rs"));

/// Where the catalog's files are, relative to a checkout.
pub const STRATEGIES: &str = "generator/strategies";

/// The checkout around the working directory, if there is one.
pub fn checkout() -> Option<PathBuf> {
    let mut dir = std::env::current_dir().ok()?;
    loop {
        if dir.join(STRATEGIES).is_dir() && dir.join("Cargo.toml").is_file() {
            return Some(dir);
        }
        if !dir.pop() {
            return None;
        }
    }
}

/// The repository's files (kernel-macro shims and the like): the checkout,
/// else the folder this binary was built from.
pub fn repo_root() -> PathBuf {
    checkout().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The catalog, validated: the checkout's files when there is a checkout,
/// else the embedded copy.
pub fn catalog() -> Result<Vec<Strategy>> {
    catalog_in(checkout().as_deref())
}

/// The strategy files of the checkout at `root` (the embedded copy for
/// `None`), in file-name order. Paths are recorded relative to the
/// checkout, as the embedded copy records them.
pub fn catalog_in(root: Option<&Path>) -> Result<Vec<Strategy>> {
    let Some(root) = root else {
        return CATALOG
            .iter()
            .map(|(path, text)| Ok(parse::parse(Path::new(path), text, None)?))
            .collect();
    };
    let dir = root.join(STRATEGIES);
    let mut rels = Vec::new();
    for e in std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))? {
        let name = e?.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".toml") {
            rels.push(format!("{STRATEGIES}/{name}"));
        }
    }
    rels.sort();
    rels.iter()
        .map(|rel| {
            let text =
                crate::input::read_string_limited(&root.join(rel), crate::input::MAX_STRATEGY)
                    .with_context(|| format!("{rel}: cannot read strategy file"))?;
            Ok(parse::parse(Path::new(rel), &text, None)?)
        })
        .collect()
}
