//! Text laid out for a patch mail: lines of at most the 75 columns
//! checkpatch accepts in a commit message. `kernel-patch` writes its
//! commit messages so, and `bench --site kernel` its figures (which
//! `kernel-patch --figures` takes into the mail as they are).

/// The longest line checkpatch accepts in a commit message
/// (COMMIT_LOG_LONG_LINE).
pub const MAX_COLUMNS: usize = 75;

/// `line` word-wrapped at [`MAX_COLUMNS`], continuation lines indented as
/// the first. A word longer than the line stays whole.
pub fn wrap_line(line: &str) -> String {
    let indent: String = line.chars().take_while(|c| *c == ' ').collect();
    let mut out = String::new();
    let mut cur = indent.clone();
    for w in line.split(' ').filter(|w| !w.is_empty()) {
        let len = cur.chars().count();
        if len > indent.len() && len + 1 + w.chars().count() > MAX_COLUMNS {
            out.push_str(&cur);
            out.push('\n');
            cur = indent.clone();
        }
        if cur.len() > indent.len() {
            cur.push(' ');
        }
        cur.push_str(w);
    }
    out.push_str(&cur);
    out.push('\n');
    out
}
