//! Tables in `scripts/bloat-o-meter`'s format.

use super::*;

/// One row: a function's figure on each side.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BloatRow {
    pub name: String,
    pub old: Option<u64>,
    pub new: Option<u64>,
    pub delta: i64,
}

/// bloat-o-meter's summary and rows (all of them; the text skips delta 0).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Table {
    pub add: usize,
    pub remove: usize,
    pub grow: usize,
    pub shrink: usize,
    pub up: u64,
    pub down: u64,
    pub net: i64,
    pub before: u64,
    pub after: u64,
    pub change_percent: f64,
    pub rows: Vec<BloatRow>,
}

/// bloat-o-meter's `calc`: rows sorted by (delta, name), descending.
pub fn table(old: &BTreeMap<String, u64>, new: &BTreeMap<String, u64>) -> Table {
    let (mut add, mut remove, mut grow, mut shrink, mut up, mut down) = (0, 0, 0, 0, 0u64, 0u64);
    let mut rows = Vec::new();
    for (name, &o) in old {
        match new.get(name) {
            None => {
                remove += 1;
                down += o;
            }
            Some(&n) if n > o => {
                grow += 1;
                up += n - o;
            }
            Some(&n) if n < o => {
                shrink += 1;
                down += o - n;
            }
            Some(_) => {}
        }
        let n = new.get(name).copied();
        rows.push(BloatRow {
            name: name.clone(),
            old: Some(o),
            new: n,
            delta: n.unwrap_or(0) as i64 - o as i64,
        });
    }
    for (name, &n) in new {
        if !old.contains_key(name) {
            add += 1;
            up += n;
            rows.push(BloatRow {
                name: name.clone(),
                old: None,
                new: Some(n),
                delta: n as i64,
            });
        }
    }
    rows.sort_by(|a, b| (b.delta, &b.name).cmp(&(a.delta, &a.name)));
    let before: u64 = old.values().sum();
    let after: u64 = new.values().sum();
    let change_percent = if before != 0 {
        (after as f64 - before as f64) * 100.0 / before as f64
    } else {
        0.0
    };
    Table {
        add,
        remove,
        grow,
        shrink,
        up,
        down,
        net: up as i64 - down as i64,
        before,
        after,
        change_percent,
        rows,
    }
}

/// The table exactly as `scripts/bloat-o-meter` prints it; `kind` is the
/// first column's heading (`Function`).
pub fn format_bloat(t: &Table, kind: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "add/remove: {}/{} grow/shrink: {}/{} up/down: {}/{} ({})",
        t.add,
        t.remove,
        t.grow,
        t.shrink,
        t.up,
        -(t.down as i64),
        t.net
    );
    // A name is one cell of one row, whatever it holds (a newline in a
    // file name would forge a row).
    let rows: Vec<(std::borrow::Cow<'_, str>, &BloatRow)> = t
        .rows
        .iter()
        .filter(|r| r.delta != 0)
        .map(|r| (crate::front::diagnostics::escape(&r.name, false), r))
        .collect();
    // bloat-o-meter's 40 columns, wider when a name needs it, so the
    // figures stay in columns.
    let w = rows
        .iter()
        .map(|(name, _)| name.chars().count())
        .chain([kind.chars().count(), 40])
        .max()
        .unwrap_or(40);
    let _ = writeln!(s, "{:<w$} {:>7} {:>7} {:>7}", kind, "old", "new", "delta");
    let dash = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
    for (name, r) in rows {
        let _ = writeln!(
            s,
            "{:<w$} {:>7} {:>7} {:>+7}",
            name,
            dash(r.old),
            dash(r.new),
            r.delta
        );
    }
    let _ = writeln!(
        s,
        "Total: Before={}, After={}, chg {:+.2}%",
        t.before, t.after, t.change_percent
    );
    s
}
