//! The front end: strategy files in, validated strategies out.

pub mod catalog;
pub mod diagnostics;
pub mod parse;
mod schema;
pub mod strategy;
pub mod symbol_clashes;
pub mod to_toml;
mod validate;
pub mod variant;
