//! Where a line stands in a checked-in file, for tests that expect an
//! error located there without hard-coding its number.

/// The 1-based number of the first line of `file` (a path from the
/// checkout's root, or absolute) that starts with `start`.
pub fn line_starting_with(file: &str, start: &str) -> usize {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
    text.lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("{file} has no line starting with {start:?}"))
        + 1
}
