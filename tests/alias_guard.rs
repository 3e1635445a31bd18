//! The x86 alias guard `(dst - src) mod 4096 in lo..=hi`: it jumps on
//! exactly the distances of its band (run as JIT code on every distance),
//! and on the path to `rep movsb` it is short, with the count register set
//! before it (see `Selector::count_early` for the measurement behind it).

use std::path::Path;

use copygen::backend::x86::{Alu, Inst, Line, Reg};
use copygen::backend::{compile, Selected};
use copygen::front::parse;
use copygen::front::strategy::{Flavor, Strategy};
use copygen::jit;

fn guarded(lo: u32, hi: u32) -> Strategy {
    let text = format!(
        "name = \"g\"\ndescription = \"a guard\"\narch = \"x86_64\"\n\
         [methods.movsb]\nkind = \"rep_movs\"\nunit = 1\n\
         [methods.band]\nkind = \"bytes\"\n\
         [[dispatch]]\nsizes = \"0..\"\nuse = \"movsb\"\n\
         [[dispatch.guard]]\nalias = [{lo}, {hi}]\nuse = \"band\"\n"
    );
    parse::parse(Path::new("g.toml"), &text, None).unwrap()
}

/// The routine's guard alone: `return 0` in place of `rep movsb` (the
/// path outside the band) and `return 1` at the guarded method's label;
/// the out-of-line narrowing of a band that is not 2^k wide is kept.
fn guard_only(lines: &mut Vec<Line>) {
    let line = |inst| Line {
        inst,
        user: None,
        fixup_start: false,
    };
    let ret = |v| {
        [
            line(Inst::MovImm {
                width: 4,
                dst: Reg::Ax,
                imm: v,
            }),
            line(Inst::Ret),
        ]
    };
    let movsb = lines
        .iter()
        .position(|l| matches!(l.inst, Inst::RepMovs { .. }))
        .expect("rep movsb");
    lines.splice(movsb..=movsb, ret(0));
    let band = lines
        .iter()
        .position(|l| matches!(&l.inst, Inst::Label(n) if n.ends_with("_band_guarded")))
        .expect("the guarded method's label");
    lines.splice(band + 1..band + 1, ret(1));
}

#[test]
fn the_guard_jumps_on_exactly_its_band() {
    let bands = [
        (1, 15),
        (1, 16),
        (0, 15),
        (16, 31),
        (1, 63),
        (5, 9),
        (32, 63),
        (4095, 4095),
        (4090, 4095),
        (100, 1000),
        (0, 4095),
        // Wider than half a page: no power of two below 4096 holds them.
        (1, 2048),
        (1, 2049),
        (16, 4079),
        (0, 4094),
        (1, 4095),
        (2000, 4095),
    ];
    for (lo, hi) in bands {
        let s = guarded(lo, hi);
        let m = jit::compile_edited(&s, |_, lines| guard_only(lines)).unwrap();
        let r = m.routine("g_from_user").unwrap();
        // High bits and page numbers that differ between the pointers must
        // not matter; only the distance mod 4096 does.
        for (src, high) in [(0x7f00_1000usize, 0), (0x1234_5ff8, 0x3_0000_7000)] {
            for d in 0..4096usize {
                let dst = src.wrapping_add(high).wrapping_add(d);
                // SAFETY: the edited routine reads no memory: it compares
                // the pointers and returns 0 or 1.
                let got = unsafe { (r.entry())(dst as *mut u8, src as *const u8, 0) };
                let want = usize::from((lo as usize..=hi as usize).contains(&d));
                assert_eq!(got, want, "band {lo}..={hi}, distance {d}, src {src:#x}");
            }
        }
    }
}

/// The instructions of `g_from_user` from its entry to `rep movsb`.
fn path_to_rep_movsb(lo: u32, hi: u32) -> Vec<Inst> {
    let c = compile(&guarded(lo, hi), Flavor::Standalone)
        .into_iter()
        .find(|c| c.routine.symbol == "g_from_user")
        .unwrap();
    let Selected::X86 { lines, .. } = c.lines else {
        panic!("x86")
    };
    lines
        .into_iter()
        .map(|l| l.inst)
        .filter(|i| !matches!(i, Inst::Label(_) | Inst::Comment(_)))
        .take_while(|i| !matches!(i, Inst::RepMovs { .. }))
        .collect()
}

#[test]
fn the_common_path_is_short_and_sets_the_count_first() {
    let count = Inst::Mov {
        width: 8,
        dst: Reg::Cx,
        src: Reg::Dx,
    };
    // A band 2^k wide: mov, sub, sub, test, jz (from 0: no second sub).
    let pow2 = path_to_rep_movsb(1, 16);
    assert_eq!(pow2.first(), Some(&count), "{pow2:?}");
    assert_eq!(pow2.len(), 6, "{pow2:?}");
    assert!(
        matches!(pow2[4], Inst::AluImm { op: Alu::Test, .. }),
        "{pow2:?}"
    );
    assert_eq!(path_to_rep_movsb(0, 15).len(), 5);
    // Any other band: the same test on the band widened to 2^k (1..=15
    // as 1..=16), narrowed out of line, so the same six instructions.
    let other = path_to_rep_movsb(1, 15);
    assert_eq!(other.first(), Some(&count), "{other:?}");
    assert_eq!(other.len(), 6, "{other:?}");
    assert!(
        matches!(
            other[4],
            Inst::AluImm {
                op: Alu::Test,
                imm: 4080,
                ..
            }
        ),
        "{other:?}"
    );
    assert_eq!(path_to_rep_movsb(5, 9).len(), 6);
    // The count is set once.
    assert_eq!(other.iter().filter(|i| **i == count).count(), 1);
}
