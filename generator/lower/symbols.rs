//! Symbol names: the one module that makes them and reads them back
//! (CONTRACT §3). Entry points are `<symbol>_{from,to}_user` (or the names
//! a strategy gives its linux routines), constant-size ones
//! `<symbol>_<dir>_<n>`; a per-CPU variant's routines are those of the
//! strategy `<symbol>__<variant>`; the standalone resolver's pointers are
//! `<symbol>__<dir tag>_ptr`. The static verifier reads a name's role with
//! [`parse_entry`].

use crate::front::strategy::{Direction, Flavor, RoutineShape, Strategy};
use crate::front::variant::Variant;

/// Symbol of an entry point: `<symbol>_<dir>` or `<symbol>_<dir>_<n>`; in
/// the linux flavour, the names the strategy gives (`[linux] from_user`,
/// `to_user`, or `symbol` for a routine serving both directions, by default
/// `<symbol>_copy_user`).
pub fn entry(s: &Strategy, flavor: Flavor, dir: Direction, fixed: Option<u32>) -> String {
    match (fixed, flavor, s.routine) {
        (Some(n), _, _) => format!("{}_{}_{n}", s.symbol, dir.name()),
        (None, Flavor::Linux, RoutineShape::Both) => s
            .linux
            .both
            .clone()
            .unwrap_or_else(|| format!("{}_copy_user", s.symbol)),
        (None, Flavor::Linux, RoutineShape::PerDirection) => {
            let given = match dir {
                Direction::FromUser => &s.linux.from_user,
                Direction::ToUser => &s.linux.to_user,
            };
            given
                .clone()
                .unwrap_or_else(|| format!("{}_{}", s.symbol, dir.name()))
        }
        (None, Flavor::Standalone, _) => format!("{}_{}", s.symbol, dir.name()),
    }
}

/// The base symbol of variant `v` of `s`: `<symbol>__<variant>`.
pub fn variant_base(s: &Strategy, v: &Variant) -> String {
    format!("{}__{}", s.symbol, v.name)
}

/// The label prefix of a variant's routine of tag `tag`: `<variant>_<tag>`.
pub fn variant_tag(v: &Variant, tag: &str) -> String {
    format!("{}_{tag}", v.name)
}

/// The pointer a standalone entry point jumps through: a hidden global, so
/// a test linked with the object can see which variant the resolver chose.
pub fn pointer(s: &Strategy, dir: Direction) -> String {
    format!("{}__{}_ptr", s.symbol, dir.tag())
}

/// A file-local label of the strategy's entry code: `.L<symbol>_<name>`.
pub fn local(s: &Strategy, name: &str) -> String {
    format!(".L{}_{name}", s.symbol)
}

/// Direction and constant size from an entry point's name:
/// `x_from_user`, `x_to_user`, `x_from_user_16` (the inverse of [`entry`]
/// for the standalone names and the default linux ones).
pub fn parse_entry(name: &str) -> Option<(Direction, Option<u64>)> {
    for d in [Direction::FromUser, Direction::ToUser] {
        let suffix = format!("_{}", d.name());
        if name.ends_with(&suffix) {
            return Some((d, None));
        }
        if let Some((_, n)) = name.rsplit_once(&format!("{suffix}_")) {
            if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
                return Some((d, n.parse().ok()));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_entry_reads_back_what_entry_makes() {
        let s = &crate::front::catalog::catalog().unwrap()[0];
        for dir in [Direction::FromUser, Direction::ToUser] {
            for fixed in [None, Some(16)] {
                let name = entry(s, Flavor::Standalone, dir, fixed);
                assert_eq!(
                    parse_entry(&name),
                    Some((dir, fixed.map(u64::from))),
                    "{name}"
                );
            }
        }
        assert_eq!(parse_entry("x_from_user_"), None);
        assert_eq!(parse_entry("x_from_user_1a"), None);
        assert_eq!(parse_entry("memcpy"), None);
    }
}
