//! The ARM printers as tables, in the shape of Cranelift's
//! `isa/x64/inst/emit_tests.rs`.
//!
//! AArch64: each row is an [`a64::Inst`] of the backend, the word GNU as
//! makes of its text (little-endian hex, taken once from
//! `aarch64-linux-gnu-as` and `objdump -d` when the row was written) and
//! the printer's text; one loop prints every row and encodes it with the
//! JIT (`jit::a64`), and compares both: no assembler runs here. A branch
//! targets `.Lt`, placed right after it (`b .+4`).
//!
//! ARMv6: (instruction, text) only. The JIT has no A32 encoder (dynasm
//! has no A32 target), so there are no bytes to compare; the emitted
//! files are assembled by `tests/emitted_objects.rs` instead.

use copygen::backend::aarch64::{self as a64, Form, Prf};
use copygen::backend::armv6::{self as a32, Operand, Test};
use copygen::backend::Line;
use copygen::jit::a64::encode;

const TARGET: &str = ".Lt";

fn x(n: u8) -> a64::Reg {
    a64::Reg(n)
}

fn r(n: u8) -> a32::Reg {
    a32::Reg(n)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn jit_bytes(inst: &a64::Inst) -> Result<Vec<u8>, String> {
    let mut lines = vec![Line {
        inst: inst.clone(),
        user: None,
        fixup_start: false,
    }];
    if matches!(inst, a64::Inst::B { .. }) {
        lines.push(Line {
            inst: a64::Inst::Label(TARGET.into()),
            user: None,
            fixup_start: false,
        });
    }
    encode(&lines).map(|(b, _)| b).map_err(|e| e.to_string())
}

fn check_a64(rows: &[(a64::Inst, &str, &str)]) -> Vec<String> {
    let mut bad = Vec::new();
    for (inst, want_hex, want_text) in rows {
        let text = a64::print_inst(inst);
        if text != *want_text {
            bad.push(format!("{inst:?}: printed {text:?}, want {want_text:?}"));
        }
        match jit_bytes(inst) {
            Ok(b) if hex(&b) == *want_hex => {}
            Ok(b) => bad.push(format!(
                "{inst:?} ({want_text:?}): encoded {}, want {want_hex}",
                hex(&b)
            )),
            Err(e) => bad.push(format!("{inst:?} ({want_text:?}): {e}")),
        }
    }
    bad
}

fn ld(width: u32, form: Form, rt: u8, base: u8, off: i32) -> a64::Inst {
    a64::Inst::Load {
        width,
        form,
        rt: x(rt),
        base: x(base),
        off,
    }
}

fn st(width: u32, form: Form, rt: u8, base: u8, off: i32) -> a64::Inst {
    a64::Inst::Store {
        width,
        form,
        rt: x(rt),
        base: x(base),
        off,
    }
}

fn b(cc: Option<a32::Cc>) -> a64::Inst {
    a64::Inst::B {
        cc,
        target: TARGET.into(),
    }
}

fn a64_rows() -> Vec<(a64::Inst, &'static str, &'static str)> {
    use a64::Inst;
    let mut insns = Vec::new();
    let mut push = |inst, hex, text| insns.push((inst, hex, text));

    push(Inst::Label(".Lcopy_head".into()), "", ".Lcopy_head:");
    push(Inst::Comment("head".into()), "", "\t/* head */");

    // Unprivileged user accesses (signed 9-bit offset), each width.
    push(ld(1, Form::User, 3, 1, 0), "23084038", "\tldtrb\tw3, [x1]");
    push(
        ld(2, Form::User, 3, 1, 2),
        "23284078",
        "\tldtrh\tw3, [x1, #2]",
    );
    push(
        ld(4, Form::User, 4, 1, -4),
        "24c85fb8",
        "\tldtr\tw4, [x1, #-4]",
    );
    push(
        ld(8, Form::User, 5, 16, 255),
        "05fa4ff8",
        "\tldtr\tx5, [x16, #255]",
    );
    push(
        st(1, Form::User, 3, 0, -1),
        "03f81f38",
        "\tsttrb\tw3, [x0, #-1]",
    );
    push(
        st(2, Form::User, 3, 0, 6),
        "03680078",
        "\tsttrh\tw3, [x0, #6]",
    );
    push(st(4, Form::User, 4, 0, 0), "040800b8", "\tsttr\tw4, [x0]");
    push(
        st(8, Form::User, 5, 16, -256),
        "050a10f8",
        "\tsttr\tx5, [x16, #-256]",
    );

    // Kernel-side accesses: scaled unsigned and unscaled signed offsets.
    push(
        ld(1, Form::Scaled, 3, 1, 4095),
        "23fc7f39",
        "\tldrb\tw3, [x1, #4095]",
    );
    push(
        ld(2, Form::Scaled, 3, 1, 2),
        "23044079",
        "\tldrh\tw3, [x1, #2]",
    );
    push(
        ld(4, Form::Scaled, 4, 1, 16),
        "241040b9",
        "\tldr\tw4, [x1, #16]",
    );
    push(
        ld(8, Form::Scaled, 5, 1, 32760),
        "25fc7ff9",
        "\tldr\tx5, [x1, #32760]",
    );
    push(
        ld(1, Form::Unscaled, 3, 1, -1),
        "23f05f38",
        "\tldurb\tw3, [x1, #-1]",
    );
    push(
        ld(2, Form::Unscaled, 3, 1, 3),
        "23304078",
        "\tldurh\tw3, [x1, #3]",
    );
    push(
        ld(4, Form::Unscaled, 4, 16, -4),
        "04c25fb8",
        "\tldur\tw4, [x16, #-4]",
    );
    push(
        ld(8, Form::Unscaled, 5, 16, -8),
        "05825ff8",
        "\tldur\tx5, [x16, #-8]",
    );
    push(
        st(1, Form::Scaled, 3, 0, 1),
        "03040039",
        "\tstrb\tw3, [x0, #1]",
    );
    push(
        st(2, Form::Scaled, 3, 0, 8190),
        "03fc3f79",
        "\tstrh\tw3, [x0, #8190]",
    );
    push(
        st(4, Form::Scaled, 4, 0, 4),
        "040400b9",
        "\tstr\tw4, [x0, #4]",
    );
    push(st(8, Form::Scaled, 5, 0, 0), "050000f9", "\tstr\tx5, [x0]");
    push(
        st(1, Form::Unscaled, 3, 0, -3),
        "03d01f38",
        "\tsturb\tw3, [x0, #-3]",
    );
    push(
        st(2, Form::Unscaled, 3, 0, -2),
        "03e01f78",
        "\tsturh\tw3, [x0, #-2]",
    );
    push(
        st(4, Form::Unscaled, 4, 16, 1),
        "041200b8",
        "\tstur\tw4, [x16, #1]",
    );
    push(
        st(8, Form::Unscaled, 5, 16, -16),
        "05021ff8",
        "\tstur\tx5, [x16, #-16]",
    );
    // The zeroing loop stores the zero register.
    push(
        st(1, Form::Scaled, 31, 0, 0),
        "1f000039",
        "\tstrb\twzr, [x0]",
    );
    push(
        st(1, Form::Scaled, 31, 0, 7),
        "1f1c0039",
        "\tstrb\twzr, [x0, #7]",
    );

    // Pairs.
    push(
        Inst::Ldp {
            rt: x(3),
            rt2: x(4),
            base: x(1),
            off: 16,
        },
        "231041a9",
        "\tldp\tx3, x4, [x1, #16]",
    );
    push(
        Inst::Ldp {
            rt: x(6),
            rt2: x(7),
            base: x(16),
            off: -512,
        },
        "061e60a9",
        "\tldp\tx6, x7, [x16, #-512]",
    );
    push(
        Inst::Stp {
            rt: x(3),
            rt2: x(4),
            base: x(0),
            off: 0,
        },
        "031000a9",
        "\tstp\tx3, x4, [x0]",
    );
    push(
        Inst::Stp {
            rt: x(6),
            rt2: x(7),
            base: x(0),
            off: 504,
        },
        "069c1fa9",
        "\tstp\tx6, x7, [x0, #504]",
    );

    // Arithmetic: 12-bit immediates and those shifted by 12.
    push(
        Inst::AddImm {
            rd: x(0),
            rn: x(0),
            imm: 64,
        },
        "00000191",
        "\tadd\tx0, x0, #64",
    );
    push(
        Inst::AddImm {
            rd: x(16),
            rn: x(1),
            imm: 4096,
        },
        "30044091",
        "\tadd\tx16, x1, #1, lsl #12",
    );
    push(
        Inst::SubImm {
            rd: x(2),
            rn: x(2),
            imm: 4095,
        },
        "42fc3fd1",
        "\tsub\tx2, x2, #4095",
    );
    push(
        Inst::SubImm {
            rd: x(2),
            rn: x(2),
            imm: 8192,
        },
        "420840d1",
        "\tsub\tx2, x2, #2, lsl #12",
    );
    push(
        Inst::Alu {
            op: a64::Alu::Add,
            rd: x(16),
            rn: x(1),
            rm: x(2),
        },
        "3000028b",
        "\tadd\tx16, x1, x2",
    );
    push(
        Inst::Alu {
            op: a64::Alu::Sub,
            rd: x(17),
            rn: x(0),
            rm: x(1),
        },
        "110001cb",
        "\tsub\tx17, x0, x1",
    );
    push(
        Inst::Alu {
            op: a64::Alu::Orr,
            rd: x(16),
            rn: x(0),
            rm: x(1),
        },
        "100001aa",
        "\torr\tx16, x0, x1",
    );
    push(
        Inst::Alu {
            op: a64::Alu::Eor,
            rd: x(3),
            rn: x(3),
            rm: x(4),
        },
        "630004ca",
        "\teor\tx3, x3, x4",
    );
    push(
        Inst::AndImm {
            rd: x(16),
            rn: x(17),
            mask: 0xfff,
        },
        "302e4092",
        "\tand\tx16, x17, #0xfff",
    );
    push(
        Inst::AndImm {
            rd: x(16),
            rn: x(0),
            mask: 0x7,
        },
        "10084092",
        "\tand\tx16, x0, #0x7",
    );
    push(
        Inst::CmpImm { rn: x(2), imm: 64 },
        "5f0001f1",
        "\tcmp\tx2, #64",
    );
    push(
        Inst::CmpImm {
            rn: x(2),
            imm: 4096,
        },
        "5f0440f1",
        "\tcmp\tx2, #1, lsl #12",
    );
    push(
        Inst::CmpReg {
            rn: x(2),
            rm: x(17),
        },
        "5f0011eb",
        "\tcmp\tx2, x17",
    );
    push(
        Inst::TstImm {
            rn: x(0),
            mask: 0x7,
        },
        "1f0840f2",
        "\ttst\tx0, #0x7",
    );
    push(
        Inst::TstImm {
            rn: x(16),
            mask: 0xf,
        },
        "1f0e40f2",
        "\ttst\tx16, #0xf",
    );

    // Wide immediates, moves.
    push(
        Inst::Movz {
            rd: x(17),
            imm: 4096,
            shift: 0,
        },
        "110082d2",
        "\tmovz\tx17, #4096",
    );
    push(
        Inst::Movz {
            rd: x(17),
            imm: 1,
            shift: 16,
        },
        "3100a0d2",
        "\tmovz\tx17, #1, lsl #16",
    );
    push(
        Inst::Movk {
            rd: x(17),
            imm: 2,
            shift: 32,
        },
        "5100c0f2",
        "\tmovk\tx17, #2, lsl #32",
    );
    push(
        Inst::Movk {
            rd: x(17),
            imm: 65535,
            shift: 48,
        },
        "f1fffff2",
        "\tmovk\tx17, #65535, lsl #48",
    );
    push(
        Inst::Movk {
            rd: x(17),
            imm: 3,
            shift: 0,
        },
        "710080f2",
        "\tmovk\tx17, #3, lsl #0",
    );
    push(
        Inst::MovReg { rd: x(0), rm: x(2) },
        "e00302aa",
        "\tmov\tx0, x2",
    );

    // Branches to the next instruction.
    push(b(None), "01000014", "\tb\t.Lt");
    push(b(Some(a32::Cc::Eq)), "20000054", "\tb.eq\t.Lt");
    push(b(Some(a32::Cc::Ne)), "21000054", "\tb.ne\t.Lt");
    push(b(Some(a32::Cc::Lo)), "23000054", "\tb.lo\t.Lt");
    push(b(Some(a32::Cc::Ls)), "29000054", "\tb.ls\t.Lt");
    push(b(Some(a32::Cc::Hi)), "28000054", "\tb.hi\t.Lt");
    push(b(Some(a32::Cc::Hs)), "22000054", "\tb.hs\t.Lt");

    // Prefetch: prfm for a scaled offset, prfum otherwise.
    push(
        Inst::Prfm {
            op: Prf::Pldl1keep,
            base: x(1),
            off: 64,
        },
        "202080f9",
        "\tprfm\tpldl1keep, [x1, #64]",
    );
    push(
        Inst::Prfm {
            op: Prf::Pldl1strm,
            base: x(1),
            off: 32760,
        },
        "21fcbff9",
        "\tprfm\tpldl1strm, [x1, #32760]",
    );
    push(
        Inst::Prfm {
            op: Prf::Pldl1keep,
            base: x(1),
            off: -8,
        },
        "20809ff8",
        "\tprfum\tpldl1keep, [x1, #-8]",
    );
    push(
        Inst::Prfm {
            op: Prf::Pldl1strm,
            base: x(16),
            off: 3,
        },
        "013280f8",
        "\tprfum\tpldl1strm, [x16, #3]",
    );
    push(Inst::Ret, "c0035fd6", "\tret");
    insns
}

fn armv6_rows() -> Vec<(a32::Inst, &'static str)> {
    use a32::{Alu, Cc, Inst};
    let alu = |op, rd, rn, op2| Inst::Alu {
        op,
        rd: r(rd),
        rn: r(rn),
        op2,
    };
    let b = |cc| Inst::B {
        cc,
        target: TARGET.into(),
    };
    vec![
        (Inst::Label(".Lcopy_head".into()), ".Lcopy_head:"),
        (Inst::Comment("head".into()), "\t/* head */"),
        // User and kernel accesses: word and byte, positive and negative
        // offsets, none.
        (
            Inst::Load {
                width: 4,
                rt: r(3),
                base: r(1),
                off: 0,
            },
            "\tldr\tr3, [r1]",
        ),
        (
            Inst::Load {
                width: 4,
                rt: r(3),
                base: r(1),
                off: 4095,
            },
            "\tldr\tr3, [r1, #4095]",
        ),
        (
            Inst::Load {
                width: 1,
                rt: r(3),
                base: r(1),
                off: -1,
            },
            "\tldrb\tr3, [r1, #-1]",
        ),
        (
            Inst::Load {
                width: 4,
                rt: r(12),
                base: r(12),
                off: -4095,
            },
            "\tldr\tip, [ip, #-4095]",
        ),
        (
            Inst::Store {
                width: 4,
                rt: r(3),
                base: r(0),
                off: 8,
            },
            "\tstr\tr3, [r0, #8]",
        ),
        (
            Inst::Store {
                width: 1,
                rt: r(3),
                base: r(0),
                off: 0,
            },
            "\tstrb\tr3, [r0]",
        ),
        (
            Inst::Store {
                width: 1,
                rt: r(4),
                base: r(12),
                off: -3,
            },
            "\tstrb\tr4, [ip, #-3]",
        ),
        // Register lists: runs of three or more as ranges, pairs listed.
        (
            Inst::Ldm {
                base: r(1),
                regs: vec![r(3), r(4), r(5), r(6)],
            },
            "\tldmia\tr1, {r3-r6}",
        ),
        (
            Inst::Ldm {
                base: r(1),
                regs: vec![r(3), r(4)],
            },
            "\tldmia\tr1, {r3, r4}",
        ),
        (
            Inst::Stm {
                base: r(0),
                regs: vec![r(3), r(5), r(6), r(7), r(8)],
            },
            "\tstmia\tr0, {r3, r5-r8}",
        ),
        (
            Inst::Stm {
                base: r(12),
                regs: vec![r(3)],
            },
            "\tstmia\tip, {r3}",
        ),
        // Data processing with an immediate or a register.
        (alu(Alu::Add, 0, 0, Operand::Imm(32)), "\tadd\tr0, r0, #32"),
        (
            alu(Alu::Sub, 2, 2, Operand::Imm(1024)),
            "\tsub\tr2, r2, #1024",
        ),
        (
            alu(Alu::Add, 12, 1, Operand::Reg(r(2))),
            "\tadd\tip, r1, r2",
        ),
        (
            alu(Alu::Sub, 12, 0, Operand::Reg(r(1))),
            "\tsub\tip, r0, r1",
        ),
        (
            alu(Alu::And, 12, 12, Operand::Imm(255)),
            "\tand\tip, ip, #255",
        ),
        (
            alu(Alu::Orr, 12, 0, Operand::Reg(r(1))),
            "\torr\tip, r0, r1",
        ),
        (alu(Alu::Eor, 3, 3, Operand::Reg(r(3))), "\teor\tr3, r3, r3"),
        (
            alu(Alu::Lsl, 12, 12, Operand::Imm(20)),
            "\tlsl\tip, ip, #20",
        ),
        (alu(Alu::Lsr, 3, 2, Operand::Imm(2)), "\tlsr\tr3, r2, #2"),
        (
            Inst::Mov {
                rd: r(0),
                op2: Operand::Reg(r(2)),
            },
            "\tmov\tr0, r2",
        ),
        (
            Inst::Mov {
                rd: r(0),
                op2: Operand::Imm(0),
            },
            "\tmov\tr0, #0",
        ),
        (
            Inst::Test {
                op: Test::Cmp,
                rn: r(2),
                op2: Operand::Imm(64),
            },
            "\tcmp\tr2, #64",
        ),
        (
            Inst::Test {
                op: Test::Cmp,
                rn: r(2),
                op2: Operand::Reg(r(12)),
            },
            "\tcmp\tr2, ip",
        ),
        (
            Inst::Test {
                op: Test::Cmn,
                rn: r(12),
                op2: Operand::Imm(4096),
            },
            "\tcmn\tip, #4096",
        ),
        (
            Inst::Test {
                op: Test::Tst,
                rn: r(0),
                op2: Operand::Imm(3),
            },
            "\ttst\tr0, #3",
        ),
        // Branches.
        (b(None), "\tb\t.Lt"),
        (b(Some(Cc::Eq)), "\tbeq\t.Lt"),
        (b(Some(Cc::Ne)), "\tbne\t.Lt"),
        (b(Some(Cc::Lo)), "\tblo\t.Lt"),
        (b(Some(Cc::Ls)), "\tbls\t.Lt"),
        (b(Some(Cc::Hi)), "\tbhi\t.Lt"),
        (b(Some(Cc::Hs)), "\tbhs\t.Lt"),
        // Preload, saves, return.
        (
            Inst::Pld {
                base: r(1),
                off: 64,
            },
            "\tpld\t[r1, #64]",
        ),
        (Inst::Pld { base: r(1), off: 0 }, "\tpld\t[r1]"),
        (
            Inst::Push(vec![r(4), r(5), r(6), r(14)]),
            "\tpush\t{r4-r6, lr}",
        ),
        (
            Inst::Pop(vec![r(4), r(5), r(6), r(14)]),
            "\tpop\t{r4-r6, lr}",
        ),
        (Inst::Push(vec![r(4), r(5)]), "\tpush\t{r4, r5}"),
        (Inst::Bx(r(14)), "\tbx\tlr"),
    ]
}

fn check_armv6(rows: &[(a32::Inst, &str)]) -> Vec<String> {
    rows.iter()
        .filter_map(|(inst, want)| {
            let text = a32::print_inst(inst);
            (text != *want).then(|| format!("{inst:?}: printed {text:?}, want {want:?}"))
        })
        .collect()
}

fn assert_clean(what: &str, bad: Vec<String>) {
    assert!(bad.is_empty(), "{what}:\n{}", bad.join("\n"));
}

#[test]
fn aarch64_table() {
    assert_clean("aarch64", check_a64(&a64_rows()));
}

#[test]
fn armv6_text_table() {
    assert_clean("armv6", check_armv6(&armv6_rows()));
}

/// A wrong byte or a wrong character makes each table fail.
#[test]
fn a_wrong_row_fails() {
    let mut rows = a64_rows();
    let i = rows.iter().position(|r| r.2 == "\tret").unwrap();
    rows[i].1 = "c0035fd7";
    let bad = check_a64(&rows);
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(bad[0].contains("encoded c0035fd6"), "{bad:?}");

    let mut rows = armv6_rows();
    let i = rows.iter().position(|r| r.1 == "\tbx\tlr").unwrap();
    rows[i].1 = "\tbx\tr14";
    assert_eq!(check_armv6(&rows).len(), 1);
}
