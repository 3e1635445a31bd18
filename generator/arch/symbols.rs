//! Symbol names: the one module that makes them and reads them back
//! (CONTRACT §3). Entry points are `<symbol>_{from,to}_user` (or the names
//! a strategy gives its linux routines), constant-size ones
//! `<symbol>_<dir>_<n>`; a per-CPU variant's routines are those of the
//! strategy `<symbol>__<variant>`; the standalone resolver's pointers are
//! `<symbol>__<dir tag>_ptr`; a routine's `.L` labels begin `.L<tag>_`
//! ([`routine_tag`]). The static verifier reads a name's role with
//! [`parse_entry`].

use crate::front::strategy::{Direction, Flavor, RoutineShape, Strategy};
use crate::front::variant::Variant;

/// Symbol of an entry point: `<symbol>_<dir>` or `<symbol>_<dir>_<n>`; in
/// the linux flavour, the names the strategy gives (`[linux] from_user`,
/// `to_user`, or `symbol` for a routine serving both directions, by default
/// `<symbol>_copy_user`).
pub fn entry(s: &Strategy, flavor: Flavor, dir: Direction, fixed: Option<u32>) -> String {
    let given = match (flavor, s.routine, dir) {
        (Flavor::Standalone, ..) => None,
        (Flavor::Linux, RoutineShape::Both, _) => s.linux.both.as_deref(),
        (Flavor::Linux, RoutineShape::PerDirection, Direction::FromUser) => {
            s.linux.from_user.as_deref()
        }
        (Flavor::Linux, RoutineShape::PerDirection, Direction::ToUser) => {
            s.linux.to_user.as_deref()
        }
    };
    entry_of(&s.symbol, given, s.routine, flavor, dir, fixed)
}

/// The entry point of variant `v`'s routine for `dir`: the variant is a
/// strategy of its own, `<symbol>__<variant>`, whose linux routines take
/// the default names (the names given in `[linux]` are the entry points').
pub fn variant_entry(s: &Strategy, v: &Variant, flavor: Flavor, dir: Direction) -> String {
    entry_of(&variant_base(s, v), None, s.routine, flavor, dir, None)
}

fn entry_of(
    symbol: &str,
    given: Option<&str>,
    routine: RoutineShape,
    flavor: Flavor,
    dir: Direction,
    fixed: Option<u32>,
) -> String {
    match (fixed, flavor, routine, given) {
        (Some(n), ..) => format!("{symbol}_{}_{n}", dir.name()),
        (None, Flavor::Linux, _, Some(given)) => given.to_string(),
        (None, Flavor::Linux, RoutineShape::Both, None) => format!("{symbol}_copy_user"),
        (None, ..) => format!("{symbol}_{}", dir.name()),
    }
}

/// The tag a routine's `.L` labels begin with (`.L<tag>_<name>`): `copy`
/// for one routine serving both directions, else the direction's tag, with
/// the size of a constant-size routine (`from8`). A variant's routines
/// prefix it with the variant's name ([`variant_tag`]).
pub fn routine_tag(s: &Strategy, dir: Direction, fixed: Option<u32>) -> String {
    match fixed {
        None if s.routine == RoutineShape::Both => "copy".to_string(),
        None => dir.tag().to_string(),
        Some(n) => format!("{}{n}", dir.tag()),
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
