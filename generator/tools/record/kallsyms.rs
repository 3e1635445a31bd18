//! Return addresses to function names, through `/proc/kallsyms` (or a
//! build's `System.map`: the same `ADDRESS TYPE NAME` lines).

use anyhow::{bail, Result};

use crate::front::diagnostics::escape;

/// Text symbols, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, String)>,
}

impl Kallsyms {
    /// Parse the text; `Ok(None)` when every address is zero (kptr_restrict
    /// hides them from this user). A line that is not `ADDRESS TYPE NAME`
    /// is an error naming the line.
    pub fn parse(origin: &str, text: &str) -> Result<Option<Kallsyms>> {
        Kallsyms::parse_bytes(origin, text.as_bytes())
    }

    /// [`Kallsyms::parse`] of bytes: a line that is not UTF-8 is an error
    /// naming its line and the column of the first stray byte.
    pub fn parse_bytes(origin: &str, bytes: &[u8]) -> Result<Option<Kallsyms>> {
        let mut syms = Vec::new();
        let mut any_nonzero = false;
        let text = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        for (i, raw) in text.split(|&b| b == b'\n').enumerate() {
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let line = match std::str::from_utf8(raw) {
                Ok(l) => l,
                Err(e) => {
                    let valid = std::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or("");
                    bail!(
                        "{}:{}:{}: error: not UTF-8 text: byte 0x{:02x} does not begin a UTF-8 character",
                        escape(origin, false),
                        i + 1,
                        valid.chars().count() + 1,
                        raw[e.valid_up_to()]
                    );
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let mut w = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (w.next(), w.next(), w.next()) else {
                bail!(
                    "{}:{}:1: error: `{}` is not `ADDRESS TYPE NAME`",
                    escape(origin, false),
                    i + 1,
                    escape(line, false)
                );
            };
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                bail!(
                    "{}:{}:1: error: `{}` is not a hex address",
                    escape(origin, false),
                    i + 1,
                    escape(addr, false)
                );
            };
            any_nonzero |= addr != 0;
            if matches!(kind, "t" | "T") {
                syms.push((addr, name.to_string()));
            }
        }
        if !any_nonzero {
            return Ok(None);
        }
        syms.sort();
        Ok(Some(Kallsyms { syms }))
    }

    /// The function `addr` is in: the text symbol at or below it.
    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        (i > 0).then(|| self.syms[i - 1].1.as_str())
    }

    /// Whether a function of this name is there.
    pub fn has(&self, name: &str) -> bool {
        self.syms.iter().any(|s| s.1 == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_the_enclosing_function() {
        let k = Kallsyms::parse(
            "k",
            "ffffffff81000000 T _stext\nffffffff81000100 t filemap_read\nffffffff81000400 D some_data\nffffffff81000200 T vfs_read\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(k.lookup(0xffffffff81000150), Some("filemap_read"));
        assert_eq!(k.lookup(0xffffffff81000200), Some("vfs_read"));
        assert_eq!(k.lookup(0xffffffff80000000), None);
        assert!(k.has("vfs_read") && !k.has("some_data"));
    }

    #[test]
    fn hidden_addresses_and_garbage() {
        assert!(
            Kallsyms::parse("k", "0000000000000000 T a\n0000000000000000 t b\n")
                .unwrap()
                .is_none()
        );
        let e = Kallsyms::parse("k", "ffff T a\nnonsense\n").unwrap_err();
        assert!(e.to_string().starts_with("k:2:1: error:"), "{e}");
    }
}
