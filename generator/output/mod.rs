//! Generated files: templates around the printed functions, the
//! `emitted/` tree, and writing files.

pub mod catalog_doc;
pub mod cleanup;
pub mod header;
pub mod render;
pub mod tree;
pub mod write;
