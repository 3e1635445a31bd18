//! The lowering's table of user accesses, per architecture: for small
//! strategies, every user access with the bytes known copied at it and
//! what its fixup does. A change to the lowering fails here, by name,
//! before it shows as a diff of emitted/.

use std::path::Path;

use copygen::front::strategy::{Arch, Flavor};
use copygen::lower::routine::{Recover, Routine, Then};
use copygen::lower::{lower, Target};

/// (routine symbol, [(access label, recovery, then)]) for `text`.
/// Per routine: its symbol and its user accesses (label, recovery, then).
type Table = Vec<(String, Vec<(String, Recover, Then)>)>;

fn table(text: &str) -> Table {
    let s = copygen::front::parse::parse(Path::new("t.toml"), text, None)
        .unwrap_or_else(|e| panic!("{e}"));
    let routines: Vec<Routine> = lower(
        &s,
        Target {
            arch: s.arch,
            flavor: Flavor::Standalone,
        },
    );
    routines
        .iter()
        .map(|r| {
            let sites = r
                .user_sites()
                .into_iter()
                .map(|u| {
                    let f = &r.fixups[u.fixup];
                    (u.name.clone(), f.recover, f.then)
                })
                .collect();
            (r.symbol.clone(), sites)
        })
        .collect()
}

fn strategy(arch: Arch, body: &str) -> String {
    format!("name = \"t\"\ndescription = \"t\"\narch = \"{arch}\"\n{body}")
}

type Site = (&'static str, Recover, Then);

fn check(arch: Arch, body: &str, want: &[(&str, &[Site])]) {
    let got = table(&strategy(arch, body));
    let want: Table = want
        .iter()
        .map(|(sym, sites)| {
            let sites = sites
                .iter()
                .map(|&(l, r, t)| (l.to_string(), r, t))
                .collect();
            (sym.to_string(), sites)
        })
        .collect();
    assert_eq!(got, want, "{arch}");
}

const BYTES: &str = "[methods.b]\nkind = \"bytes\"\n";
use Recover::{Advance, None as Nothing, Rep};
use Then::{Done, Retry, Step};

/// A byte loop, exact: a faulting byte is not copied; the fixup retries
/// bytes, and the retry's own fault returns.
#[test]
fn x86_64_byte_loop() {
    let body = format!("{BYTES}[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n");
    check(
        Arch::X86_64,
        &body,
        &[
            (
                "t_from_user",
                &[
                    ("b_byte_load", Nothing, Retry),
                    ("retry_load", Nothing, Done),
                ],
            ),
            (
                "t_to_user",
                &[
                    ("b_byte_store", Nothing, Retry),
                    ("retry_store", Nothing, Done),
                ],
            ),
        ],
    );
}

/// Two words loaded first, then stored, block precision: a load fault has
/// stored nothing of the block; the second store's fault follows one
/// stored word (Advance 4); every fixup steps one byte and returns.
#[test]
fn i386_loads_first_word_loop() {
    let body = format!(
        "[fault]\nprecision = \"block\"\n[methods.w]\nkind = \"unrolled\"\nblock = 8\nwidth = 4\nregisters = 2\ntail = \"bytes\"\n{BYTES}[[dispatch]]\nsizes = \"0..=7\"\nuse = \"b\"\n[[dispatch]]\nsizes = \"8..\"\nuse = \"w\"\n"
    );
    check(
        Arch::I386,
        &body,
        &[
            (
                "t_from_user",
                &[
                    ("b_byte_load", Nothing, Step),
                    ("w_loop_load0", Nothing, Step),
                    ("w_loop_load1", Nothing, Step),
                    ("w_byte_load", Nothing, Step),
                    ("step_load", Nothing, Done),
                ],
            ),
            (
                "t_to_user",
                &[
                    ("b_byte_store", Nothing, Step),
                    ("w_loop_store0", Nothing, Step),
                    ("w_loop_store1", Advance(4), Step),
                    ("w_byte_store", Nothing, Step),
                    ("step_store", Nothing, Done),
                ],
            ),
        ],
    );
}

/// Interleaved words, exact: the second word's load or store faults after
/// the first word is stored (Advance 4, on both sides); every fixup
/// retries bytes.
#[test]
fn armv6_interleaved_word_loop() {
    let body = format!(
        "[fault]\nprecision = \"exact\"\n[methods.w]\nkind = \"unrolled\"\nblock = 8\nwidth = 4\nregisters = 2\ngrouping = \"interleaved\"\ntail = \"bytes\"\n{BYTES}[[dispatch]]\nsizes = \"0..=7\"\nuse = \"b\"\n[[dispatch]]\nsizes = \"8..\"\nuse = \"w\"\n"
    );
    check(
        Arch::Armv6,
        &body,
        &[
            (
                "t_from_user",
                &[
                    ("b_byte_load", Nothing, Retry),
                    ("w_loop0_load", Nothing, Retry),
                    ("w_loop1_load", Advance(4), Retry),
                    ("w_byte_load", Nothing, Retry),
                    ("retry_load", Nothing, Done),
                ],
            ),
            (
                "t_to_user",
                &[
                    ("b_byte_store", Nothing, Retry),
                    ("w_loop0_store", Nothing, Retry),
                    ("w_loop1_store", Advance(4), Retry),
                    ("w_byte_store", Nothing, Retry),
                    ("retry_store", Nothing, Done),
                ],
            ),
        ],
    );
}

/// `rep movsq` with its rest by a byte loop (`tail = "bytes"`, as 6.12's
/// `.Llarge_movsq`): no second `rep` start-up, so its user accesses are
/// the `rep movsq` (whose fixup recomputes the bytes left from rcx and
/// the rest) and the byte loop's; without `tail`, the rest is a second
/// `rep movsb` with a fixup of its own. Both exact: every fixup retries.
#[test]
fn x86_64_rep_movsq_rest_by_bytes_or_by_rep_movsb() {
    let body = |tail: &str| {
        format!("[methods.q]\nkind = \"rep_movs\"\nunit = 8\n{tail}[[dispatch]]\nsizes = \"0..\"\nuse = \"q\"\n")
    };
    check(
        Arch::X86_64,
        &body("tail = \"bytes\"\n"),
        &[
            (
                "t_from_user",
                &[
                    ("rep_movsq", Rep { unit: 8 }, Retry),
                    ("q_rest_byte_load", Nothing, Retry),
                    ("retry_load", Nothing, Done),
                ],
            ),
            (
                "t_to_user",
                &[
                    ("rep_movsq", Rep { unit: 8 }, Retry),
                    ("q_rest_byte_store", Nothing, Retry),
                    ("retry_store", Nothing, Done),
                ],
            ),
        ],
    );
    check(
        Arch::X86_64,
        &body(""),
        &[
            (
                "t_from_user",
                &[
                    ("rep_movsq", Rep { unit: 8 }, Retry),
                    ("rep_movsb_rest", Rep { unit: 1 }, Retry),
                    ("retry_load", Nothing, Done),
                ],
            ),
            (
                "t_to_user",
                &[
                    ("rep_movsq", Rep { unit: 8 }, Retry),
                    ("rep_movsb_rest", Rep { unit: 1 }, Retry),
                    ("retry_store", Nothing, Done),
                ],
            ),
        ],
    );
}

/// The destination aligned by one word where it lies (`by = "word"`, as
/// 6.12's `.Llarge_movsq`): a fault in that word has copied nothing past
/// the pointers, so its fixup retries byte by byte, as the rest's do.
#[test]
fn x86_64_word_aligning_prologue() {
    let body = "[methods.q]\nkind = \"rep_movs\"\nunit = 8\nalign = { pointer = \"dst\", to = 8, min_size = 64, by = \"word\" }\ntail = \"bytes\"\n[[dispatch]]\nsizes = \"0..\"\nuse = \"q\"\n";
    check(
        Arch::X86_64,
        body,
        &[
            (
                "t_from_user",
                &[
                    ("q_align_word_load", Nothing, Retry),
                    ("rep_movsq", Rep { unit: 8 }, Retry),
                    ("q_rest_byte_load", Nothing, Retry),
                    ("retry_load", Nothing, Done),
                ],
            ),
            (
                "t_to_user",
                &[
                    ("q_align_word_store", Nothing, Retry),
                    ("rep_movsq", Rep { unit: 8 }, Retry),
                    ("q_rest_byte_store", Nothing, Retry),
                    ("retry_store", Nothing, Done),
                ],
            ),
        ],
    );
}

/// Head/tail buckets: each length range the tree reaches, with the stores
/// of its copy (`to_user`). Below the widest access a bucket overlaps its
/// two copies; from it, a bucket ends where they meet, so a length of
/// twice a power of two is as many stores as a word loop makes (16 bytes:
/// two 8-byte copies, not four).
fn head_tail_buckets(arch: Arch, width: u32) -> Vec<(String, usize)> {
    use copygen::lower::routine::Op;
    let body = format!(
        "[methods.s]\nkind = \"head_tail\"\nwidth = {width}\nregisters = 1\n[[dispatch]]\nsizes = \"0..=64\"\nuse = \"s\"\n[[dispatch]]\nsizes = \"65..\"\nuse = \"s2\"\n[methods.s2]\nkind = \"bytes\"\n"
    );
    let s = copygen::front::parse::parse(Path::new("t.toml"), &strategy(arch, &body), None)
        .unwrap_or_else(|e| panic!("{e}"));
    let target = Target {
        arch: s.arch,
        flavor: Flavor::Standalone,
    };
    let to_user = lower(&s, target)
        .into_iter()
        .find(|r| r.symbol == "t_to_user")
        .expect("t_to_user");
    let mut buckets: Vec<(String, usize)> = Vec::new();
    let mut open = false;
    for op in &to_user.ops {
        match op {
            // The class's own range and the byte loop's class aside.
            Op::Comment(c)
                if c.starts_with("here: ")
                    && !["here: 0 <= len <= 64", "here: len >= 65"].contains(&c.as_str()) =>
            {
                buckets.push((c["here: ".len()..].to_string(), 0));
                open = true;
            }
            Op::Store(_) if open => buckets.last_mut().unwrap().1 += 1,
            Op::Return { .. } => open = false,
            _ => {}
        }
    }
    buckets
}

#[test]
fn head_tail_buckets_meet_at_twice_a_power_of_two_from_the_widest_access() {
    let owned = |v: &[(&str, usize)]| -> Vec<(String, usize)> {
        v.iter().map(|&(r, n)| (r.to_string(), n)).collect()
    };
    assert_eq!(
        head_tail_buckets(Arch::X86_64, 8),
        owned(&[
            ("len == 0", 0),
            ("len == 1", 1),
            ("2 <= len <= 3", 2),
            ("4 <= len <= 7", 2),
            ("8 <= len <= 16", 2),
            ("17 <= len <= 32", 4),
            ("33 <= len <= 64", 8),
        ])
    );
    assert_eq!(
        head_tail_buckets(Arch::I386, 4),
        owned(&[
            ("len == 0", 0),
            ("len == 1", 1),
            ("2 <= len <= 3", 2),
            ("4 <= len <= 8", 2),
            ("9 <= len <= 16", 4),
            ("17 <= len <= 32", 8),
            ("33 <= len <= 64", 16),
        ])
    );
}

/// The standalone text of a byte-loop strategy for `arch`.
fn byte_loop_text(arch: Arch) -> String {
    let body = format!("{BYTES}[[dispatch]]\nsizes = \"0..\"\nuse = \"b\"\n");
    let s = copygen::front::parse::parse(Path::new("t.toml"), &strategy(arch, &body), None)
        .unwrap_or_else(|e| panic!("{e}"));
    copygen::output::render::render(&s, Flavor::Standalone)
}

/// A byte loop tests the length once on entry and once a byte, at the
/// bottom (as 6.12's `.Lcopy_user_tail`): no jump back to a test at the
/// top. The bottom test is the advance's own `sub` (on ARM a `subs`).
#[test]
fn a_byte_loop_branches_once_a_byte() {
    let text = byte_loop_text(Arch::X86_64);
    let body: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != ".Lfrom_b_bytes:")
        .take_while(|l| *l != ".Lfrom_b_bytes_done:")
        .filter(|l| !l.ends_with(':'))
        .map(str::trim)
        .collect();
    assert_eq!(
        body,
        [
            "movb\t(%rsi), %al",
            "movb\t%al, (%rdi)",
            "addq\t$1, %rsi",
            "addq\t$1, %rdi",
            "subq\t$1, %rdx",
            "jne\t.Lfrom_b_bytes",
        ],
        "{text}"
    );
    let entry = text
        .lines()
        .position(|l| l == ".Lfrom_b_bytes:")
        .expect("the loop's label");
    assert_eq!(
        text.lines().nth(entry - 1).map(str::trim),
        Some("je\t.Lfrom_b_bytes_done"),
        "{text}"
    );
}

#[test]
fn an_arm_byte_loop_counts_down_with_subs() {
    for (arch, bottom) in [
        (Arch::Armv6, ["subs\tr2, r2, #1", "bne\t.Lfrom_b_bytes"]),
        (Arch::Aarch64, ["subs\tx2, x2, #1", "b.ne\t.Lfrom_b_bytes"]),
    ] {
        let text = byte_loop_text(arch);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let done = lines
            .iter()
            .position(|l| *l == ".Lfrom_b_bytes_done:")
            .expect("the loop's exit label");
        assert_eq!(lines[done - 2..done], bottom, "{arch}: {text}");
    }
}
